//! Periodic senders: the send period, drift and send slot of every packet of a flow from its
//! arrival times alone, for flows whose payload carries nothing usable.
//!
//! Game servers send on a tick: packet `k` leaves at `offset + k·P` on the receiver's clock,
//! where `P` is the tick period as the receiver sees it (the sender's nominal period changed by
//! the two clocks' drift). It arrives after a delay `d ≥ d_min`; packets are lost, duplicated,
//! delayed into bursts by a stall (a Wi-Fi scan, a handover, a descheduled receiver) and
//! overtaken. [`estimate`] recovers `P`, the drift and the slot `k` of each packet;
//! [`assign`] writes the slots into [`Sample`]s so that replay, sweep and tune can run on them.
//!
//! # Method
//! 1. **Coarse period.** The median inter-arrival time `m` (right under loss and bursts as long
//!    as most packets arrive one period after the one before) bounds the search; the period
//!    is the one in `[0.4·m, 2.5·m]` whose comb best fits the first 256 arrivals: the largest
//!    coherence `R(P) = |Σ exp(2πi·tₙ/P)| / N` (a periodogram of the arrival instants,
//!    the Rayleigh statistic of circular statistics), refined by golden-section search.
//! 2. **Tracking.** Over windows that double in length, the arrivals are split into blocks; each
//!    block's circular mean phase against the current line is unwrapped from block to block,
//!    and a Theil–Sen line (the median of pairwise slopes: blocks a delay spike spoiled do not
//!    move it) through the block phases corrects the period and the phase. Doubling keeps the
//!    extrapolation error below a quarter period, so no slot is miscounted; the cost is O(n)
//!    per round and O(n log n) in all.
//! 3. **Slots.** A delayed packet only arrives later, never earlier, so the lower envelope of
//!    the delays is the sender's clock (the reasoning of Moon, Skelly and Towsley, *Estimation
//!    and removal of clock skew from network delay measurements*, INFOCOM 1999). With the
//!    envelope placed at the 1 % quantile of the phases, each packet has a latest plausible
//!    slot `K` and a *lag* `j ≥ 0` (its slot is `K − j`: it was delayed by more than `j`
//!    periods). A Viterbi pass over the packets in arrival order chooses the lags that
//!    minimise a negative log-likelihood:
//!    - each packet's excess delay `e` over the envelope costs `(α+1)·ln(1 + e/s)`, the
//!      log-density of a Lomax (Pareto II) law fitted to the median and 90th percentile of
//!      the excess delays, with a shape `α ≤ 2` so that the tail stays heavy: a spike or a
//!      stall delays many packets together, which an independent light-tailed law would call
//!      impossible and explain away with duplicates;
//!    - each slot left empty between two packets costs `ln 100` (loss is rare);
//!    - two packets in one slot (a duplicate) cost 20 (about e⁻²⁰) and are allowed only when they
//!      arrive within an eighth of a period of each other: a duplicate is only believed when
//!      the alternative is to push a long run of on-time packets a period back;
//!    - slots never go backwards along arrival order here (a packet that arrives first was
//!      sent first: the assignment a convex delay cost would choose).
//!
//!    So a burst after a stall is spread backwards over the slots before it, each packet
//!    one period earlier than the next, however tightly the packets arrived; a lost packet
//!    leaves its slot empty. A second pass then lets one packet jump back over up to
//!    [`MAX_OVERTAKEN`] packets that arrived before it (it was overtaken: network reordering)
//!    when that lowers the cost by more than 1, which happens when the packets it overtook
//!    look on time in their own slots and it alone was late.
//! 4. **Refit.** With the slots known, the envelope is refitted (Theil–Sen through the 10 %
//!    quantile of each block's excess delays, then shifted to their 1 % quantile) and the
//!    slots are chosen once more against it.
//!
//! The period reported is the receiver's view of the sender's tick. When it lies within
//! [`NOMINAL_TOLERANCE_PPM`] of a whole number of hertz (1–1000 Hz) or of milliseconds, that
//! is taken as the sender's nominal period and the drift is measured against it, positive
//! when the sender's clock runs fast (it ticks more often than the receiver expects), as
//! `jitterlab synth`'s `drift=` key means it. Send times are `slot × period` on an inferred
//! sender clock that runs at the sender's rate as the receiver sees it (drift folded in), so
//! `arrival − send` is the delay plus a constant.
//!
//! # Confidence
//! The confidence is the coherence `R` (0..1) of the arrivals with the fitted slots' phases: 1
//! for a strictly periodic flow, falling as the jitter grows towards the period. A fit is
//! returned only with at least [`MIN_PACKETS`] packets, `R ≥` [`MIN_COHERENCE`], and
//! `N·R² ≥` [`MIN_RAYLEIGH`] (the Rayleigh test: for arrivals with no period, `N·R²` is about
//! exponential with mean 1, so 30 leaves a chance below e⁻³⁰ even across the period search).
//! Poisson or bursty arrivals give `None`, never a guess presented as fact.
//!
//! # Limits
//! - Delay shifts the envelope cannot see are taken as loss: a route change that adds a whole
//!   period of delay reads as one lost packet, and a stall longer than its burst (packets lost
//!   *and* delayed) puts the burst's first packets in slots that are a little late.
//! - Reordering deeper than [`MAX_OVERTAKEN`] packets, or in a flow whose delays are spread
//!   over several periods (a bottleneck's queue at 60 Hz), is assigned in arrival order.
//! - The drift is one constant over the flow: a clock that wanders is followed only as well as
//!   a straight line follows it.
//! - A sender whose tick changes during the flow, or that sends several packets per tick, is
//!   not periodic in this sense (low coherence: `None`).

use crate::decode::Sample;
use crate::time::Nanos;

/// The fewest packets a period is estimated from.
pub const MIN_PACKETS: usize = 32;
/// The lowest coherence (confidence) a fit is returned with.
pub const MIN_COHERENCE: f64 = 0.25;
/// The lowest Rayleigh statistic `N·R²` a fit is returned with.
pub const MIN_RAYLEIGH: f64 = 30.0;
/// How far (ppm) a measured period may be from a whole number of hertz or milliseconds for
/// that to be taken as the sender's nominal period.
pub const NOMINAL_TOLERANCE_PPM: f64 = 500.0;
/// How many earlier arrivals one late packet may be put before (reordering).
pub const MAX_OVERTAKEN: usize = 6;

/// What the arrivals say about a periodic sender.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// The send period on the receiver's clock, ns (the sender's tick, drift included).
    pub period_ns: f64,
    /// The sender's nominal period (a whole number of hertz or of milliseconds within
    /// [`NOMINAL_TOLERANCE_PPM`]), if one fits.
    pub nominal_period_ns: Option<f64>,
    /// The sender's clock rate against the receiver's, ppm (positive: the sender's runs fast),
    /// measured against the nominal period; 0 when there is none.
    pub drift_ppm: f64,
    /// Receiver time (ns, the arrivals' clock) at which a packet of slot 0 arrives when it
    /// meets the least delay seen: the line `offset_ns + slot·period_ns` is the lower envelope.
    pub offset_ns: f64,
    /// Packets.
    pub packets: usize,
    /// Slots spanned, first to last.
    pub slots: i64,
    /// Slots with no packet.
    pub missing: usize,
    /// Packets that share a slot with an earlier one (taken as duplicates).
    pub duplicates: usize,
    /// Packets delayed by more than a period (put in a slot before their latest plausible one).
    pub late: usize,
    /// Runs of at least two consecutive late arrivals: packets released together after a stall.
    pub bursts: usize,
    /// Packets put before packets that arrived earlier (they were overtaken).
    pub reordered: usize,
    /// Median delay above the envelope, ns.
    pub residual_p50_ns: f64,
    /// 99th percentile of the delay above the envelope, ns.
    pub residual_p99_ns: f64,
    /// The coherence `R` of the arrivals with the fitted slots, 0..1.
    pub confidence: f64,
}

/// Estimates the period of `arrivals` (one flow, in capture order; need not be sorted).
///
/// `None` when fewer than [`MIN_PACKETS`] packets or no period fits with the confidence the
/// module docs describe.
pub fn estimate(arrivals: &[Nanos]) -> Option<Estimate> {
    fit(arrivals).map(|f| f.estimate)
}

/// Infers the send slots of one stream's samples (in arrival order): sets each sample's `seq`
/// to its slot (the first slot is 0) and `send` to `slot × period` on the inferred sender
/// clock; `arrival` and everything else stay. Returns the estimate, or `None` (and changes
/// nothing) when [`estimate`] would.
pub fn assign(samples: &mut [Sample]) -> Option<Estimate> {
    let arrivals: Vec<Nanos> = samples.iter().map(|s| s.arrival).collect();
    let fit = fit(&arrivals)?;
    let p = fit.estimate.period_ns;
    for (sample, &slot) in samples.iter_mut().zip(&fit.slots) {
        sample.seq = slot;
        sample.send = Nanos((slot as f64 * p).round() as i64);
    }
    Some(fit.estimate)
}

/// An estimate and each packet's slot, in input order.
struct Fit {
    estimate: Estimate,
    slots: Vec<i64>,
}

fn fit(arrivals: &[Nanos]) -> Option<Fit> {
    let n = arrivals.len();
    if n < MIN_PACKETS {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| arrivals[i]);
    let first = arrivals[order[0]];
    // Relative to the first arrival: f64 keeps sub-nanosecond precision for months.
    let t: Vec<f64> = order
        .iter()
        .map(|&i| (arrivals[i] - first).as_nanos() as f64)
        .collect();
    if t[n - 1] <= 0.0 {
        return None;
    }
    let p0 = coarse_period(&t)?;
    let (c, p) = track(&t, p0)?;
    if coherence(&t, c, p) < MIN_COHERENCE {
        return None;
    }
    // The envelope: the 1 % quantile of the phases around the mean phase.
    let mut psi: Vec<f64> = t.iter().map(|&x| wrap((x - c) / p)).collect();
    let c_env = c + p * quantile(&mut psi, 0.01);
    let first_pass = slots_for(&t, c_env, p);
    let (c_env, p) = refit(&t, &first_pass.slots, c_env, p);
    let a = slots_for(&t, c_env, p);
    let r = coherence(&t, c_env, p);
    if r < MIN_COHERENCE || (n as f64) * r * r < MIN_RAYLEIGH {
        return None;
    }
    let k0 = a.slots.iter().copied().min().unwrap_or(0);
    let k1 = a.slots.iter().copied().max().unwrap_or(0);
    let mut distinct = a.slots.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let mut excess: Vec<f64> = t
        .iter()
        .zip(&a.slots)
        .map(|(&x, &k)| x - c_env - k as f64 * p)
        .collect();
    let nominal = nominal_period(p);
    let estimate = Estimate {
        period_ns: p,
        nominal_period_ns: nominal,
        drift_ppm: nominal.map_or(0.0, |q| (q / p - 1.0) * 1e6),
        offset_ns: first.as_nanos() as f64 + c_env + k0 as f64 * p,
        packets: n,
        slots: k1 - k0 + 1,
        missing: (k1 - k0 + 1) as usize - distinct.len(),
        duplicates: n - distinct.len(),
        late: a.late,
        bursts: a.bursts,
        reordered: a.reordered,
        residual_p50_ns: quantile(&mut excess, 0.5),
        residual_p99_ns: quantile(&mut excess, 0.99),
        confidence: r,
    };
    let mut slots = vec![0; n];
    for (&i, &k) in order.iter().zip(&a.slots) {
        slots[i] = k - k0;
    }
    Some(Fit { estimate, slots })
}

/// `x` minus the nearest integer, in `[-0.5, 0.5]`.
fn wrap(x: f64) -> f64 {
    x - x.round()
}

/// The `q` quantile (nearest rank) of `v`, reordering it; 0 for none.
fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    *v.select_nth_unstable_by(i, f64::total_cmp).1
}

/// The median of `v`, reordering it.
fn median(v: &mut [f64]) -> f64 {
    quantile(v, 0.5)
}

/// `|mean exp(2πi·(t − c)/p)|`: 1 when every arrival is on the comb.
fn coherence(t: &[f64], c: f64, p: f64) -> f64 {
    let (mut re, mut im) = (0.0, 0.0);
    for &x in t {
        let (s, co) = (std::f64::consts::TAU * wrap((x - c) / p)).sin_cos();
        re += co;
        im += s;
    }
    re.hypot(im) / t.len() as f64
}

/// Packets of the first window the period is searched on.
const SEARCH_PACKETS: usize = 256;

/// The period whose comb best fits the first arrivals, searched around the median interval.
fn coarse_period(t: &[f64]) -> Option<f64> {
    let mut gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    let m = median(&mut gaps);
    if m <= 0.0 {
        return None;
    }
    let w = &t[..t.len().min(SEARCH_PACKETS)];
    let r = |p: f64| coherence(w, 0.0, p);
    // The comb's peak is about p²/span wide: step a quarter of that, geometrically.
    let periods = (w[w.len() - 1] / m).max(1.0);
    let step = 1.0 + 1.0 / (4.0 * periods);
    let (lo, hi) = (0.4 * m, 2.5 * m);
    let mut best = (0.0, lo);
    let mut p = lo;
    while p <= hi {
        let v = r(p);
        if v > best.0 {
            best = (v, p);
        }
        p *= step;
    }
    let refine = |p: f64| golden_max(&r, p / step, p * step);
    let mut p = refine(best.1);
    // A sub-multiple fits as well as the period itself only if every slot of the multiple
    // is used; take the largest multiple that fits nearly as well (a sender at P/2 whose odd
    // packets all vanish is a sender at P).
    let base = r(p);
    for k in [3.0, 2.0] {
        let q = refine(k * p);
        if r(q) >= 0.9 * base && q <= hi {
            p = q;
            break;
        }
    }
    Some(p)
}

/// The maximum of `f` on `[a, b]` by golden-section search (f unimodal there).
fn golden_max(f: &impl Fn(f64) -> f64, mut a: f64, mut b: f64) -> f64 {
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let mut x1 = b - g * (b - a);
    let mut x2 = a + g * (b - a);
    let (mut f1, mut f2) = (f(x1), f(x2));
    for _ in 0..40 {
        if f1 < f2 {
            a = x1;
            x1 = x2;
            f1 = f2;
            x2 = a + g * (b - a);
            f2 = f(x2);
        } else {
            b = x2;
            x2 = x1;
            f2 = f1;
            x1 = b - g * (b - a);
            f1 = f(x1);
        }
    }
    (a + b) / 2.0
}

/// Refines the period `p0` over windows that double until they hold every arrival; returns
/// the mean-phase line `(c, p)`: slot `k`'s packets arrive around `c + k·p`.
fn track(t: &[f64], p0: f64) -> Option<(f64, f64)> {
    let n = t.len();
    let first = n.min(SEARCH_PACKETS);
    let mut c = 0.0;
    let mut p = p0;
    let mut span = t[first - 1].max(p0);
    loop {
        let end = t.partition_point(|&x| x <= span);
        (c, p) = line_through_blocks(&t[..end], c, p)?;
        if end == n {
            // Once more over everything, from the refined line.
            return line_through_blocks(t, c, p);
        }
        span *= 2.0;
    }
}

/// The line through the circular mean phases of blocks of `t` against `(c, p)`.
fn line_through_blocks(t: &[f64], c: f64, p: f64) -> Option<(f64, f64)> {
    let blocks = (t.len() / 16).clamp(4, 64);
    let per = t.len().div_ceil(blocks);
    // (mean slot coordinate, unwrapped phase in slots)
    let mut points: Vec<(f64, f64)> = Vec::with_capacity(blocks);
    let mut prev: Option<f64> = None;
    for block in t.chunks(per) {
        let (mut re, mut im, mut u_sum) = (0.0, 0.0, 0.0);
        for &x in block {
            let u = (x - c) / p;
            let (s, co) = (std::f64::consts::TAU * wrap(u)).sin_cos();
            re += co;
            im += s;
            u_sum += u;
        }
        // A block with no clear phase (a spike, a burst) says nothing.
        if re.hypot(im) < 0.1 * block.len() as f64 {
            continue;
        }
        let mut phi = im.atan2(re) / std::f64::consts::TAU;
        if let Some(q) = prev {
            phi += (q - phi).round();
        }
        prev = Some(phi);
        points.push((u_sum / block.len() as f64, phi));
    }
    if points.len() < 3 {
        return None;
    }
    let (alpha, beta) = theil_sen(&points);
    Some((c + p * alpha, p * (1.0 + beta)))
}

/// Theil–Sen line `y = α + β·x` through `points`: β the median of pairwise slopes, α the median
/// intercept.
fn theil_sen(points: &[(f64, f64)]) -> (f64, f64) {
    let mut slopes = Vec::with_capacity(points.len() * points.len() / 2);
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            if b.0 != a.0 {
                slopes.push((b.1 - a.1) / (b.0 - a.0));
            }
        }
    }
    let beta = if slopes.is_empty() {
        0.0
    } else {
        median(&mut slopes)
    };
    let mut intercepts: Vec<f64> = points.iter().map(|&(x, y)| y - beta * x).collect();
    (median(&mut intercepts), beta)
}

/// The envelope refitted through slots already chosen: Theil–Sen through each block's 10 %
/// quantile of excess delay, then moved to the 1 % quantile of all of them.
fn refit(t: &[f64], slots: &[i64], c: f64, p: f64) -> (f64, f64) {
    let blocks = (t.len() / 32).clamp(2, 64);
    let per = t.len().div_ceil(blocks);
    let mut points = Vec::with_capacity(blocks);
    for (tb, kb) in t.chunks(per).zip(slots.chunks(per)) {
        let mut e: Vec<f64> = tb
            .iter()
            .zip(kb)
            .map(|(&x, &k)| x - c - k as f64 * p)
            .collect();
        let k_mean = kb.iter().map(|&k| k as f64).sum::<f64>() / kb.len() as f64;
        points.push((k_mean, quantile(&mut e, 0.1)));
    }
    let (alpha, beta) = theil_sen(&points);
    let (c, p) = (c + alpha, p + beta);
    let mut e: Vec<f64> = t
        .iter()
        .zip(slots)
        .map(|(&x, &k)| x - c - k as f64 * p)
        .collect();
    (c + quantile(&mut e, 0.01), p)
}

/// Most lags a packet may take in the Viterbi pass.
const LAGS: usize = 12;
/// Cost of a slot left empty: loss taken to be about 1 %.
const LOSS_COST: f64 = 4.605_170_185_988_091;
/// Cost of two packets in one slot.
const DUPLICATE_COST: f64 = 20.0;
/// How much cheaper a reordering must make the assignment to be believed.
const REORDER_COST: f64 = 1.0;

/// The slots chosen for the sorted arrivals `t` against the envelope `c + k·p`.
struct Assignment {
    slots: Vec<i64>,
    late: usize,
    bursts: usize,
    reordered: usize,
}

/// The per-packet cost of an excess delay (see the module docs).
#[derive(Clone, Copy, Debug)]
struct DelayCost {
    /// Lomax scale, ns.
    scale: f64,
    /// Shape + 1.
    weight: f64,
}

impl DelayCost {
    /// Fitted to excess delays: the Lomax law through their median and 90th percentile.
    fn fit(excess: &mut [f64], p: f64) -> Self {
        let floor = (p * 1e-3).max(1_000.0);
        let q50 = quantile(excess, 0.5).max(floor);
        let q90 = quantile(excess, 0.9).max(q50 * 3.4);
        // Q(q) = s·((1−q)^(−1/α) − 1); the ratio Q90/Q50 fixes α (bisection: the ratio
        // falls as α grows, to ln 10 / ln 2 for the exponential).
        let ratio = |a: f64| (10f64.powf(1.0 / a) - 1.0) / (2f64.powf(1.0 / a) - 1.0);
        let target = q90 / q50;
        let (mut lo, mut hi) = (0.5f64, 2.0f64);
        if ratio(hi) > target {
            lo = hi;
        } else {
            for _ in 0..50 {
                let mid = (lo + hi) / 2.0;
                if ratio(mid) > target {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
        let alpha = lo;
        Self {
            scale: q50 / (2f64.powf(1.0 / alpha) - 1.0),
            weight: alpha + 1.0,
        }
    }

    fn of(self, e: f64) -> f64 {
        if e >= 0.0 {
            self.weight * (e / self.scale).ln_1p()
        } else {
            // Below the envelope: only the envelope's own error puts a packet there.
            self.weight * 4.0 * (-e / self.scale)
        }
    }
}

/// The lags packet `i` may take: around the greedy lag that spreads every burst (`spread`)
/// and around the one that takes every close pair for a duplicate (`collapse`), and 0.
fn candidates(spread: i64, collapse: i64) -> ([i64; LAGS], usize) {
    let mut out = [0i64; LAGS];
    let mut len = 0;
    let mut add = |x: i64| {
        if x >= 0 && len < LAGS && !out[..len].contains(&x) {
            out[len] = x;
            len += 1;
        }
    };
    add(spread);
    add(collapse);
    for d in 1..=3 {
        add(spread - d);
        add(collapse + d);
    }
    add(spread + 1);
    add(collapse - 1);
    add(0);
    add(1);
    out[..len].sort_unstable();
    (out, len)
}

/// Chooses the slots (module docs, step 3).
fn slots_for(t: &[f64], c: f64, p: f64) -> Assignment {
    let n = t.len();
    let latest: Vec<i64> = t.iter().map(|&x| ((x - c) / p).round() as i64).collect();
    let rho: Vec<f64> = t
        .iter()
        .zip(&latest)
        .map(|(&x, &k)| x - c - k as f64 * p)
        .collect();
    let dup_window = p / 8.0;
    let close = |i: usize| i + 1 < n && t[i + 1] - t[i] <= dup_window;
    // Greedy, from the last packet back: the latest slot before the next packet's (spread),
    // or at the next packet's when it is close enough to be a copy (collapse).
    let mut spread = vec![0i64; n];
    let mut collapse = vec![0i64; n];
    let (mut next_s, mut next_c) = (i64::MAX, i64::MAX);
    for i in (0..n).rev() {
        let ks = latest[i].min(next_s.saturating_sub(1));
        let kc = latest[i].min(if close(i) {
            next_c
        } else {
            next_c.saturating_sub(1)
        });
        spread[i] = latest[i] - ks;
        collapse[i] = latest[i] - kc;
        (next_s, next_c) = (ks, kc);
    }
    // The delay law from each packet's delay past its latest plausible slot: not from the
    // greedy lags, which an unrecognised duplicate inflates for a long run of packets.
    let mut excess: Vec<f64> = rho.iter().map(|&r| r.max(0.0)).collect();
    let cost = DelayCost::fit(&mut excess, p);
    // Viterbi: v[x] is the least cost of packets 0..=i with packet i at lag lags[x].
    let mut back: Vec<[u8; LAGS]> = vec![[u8::MAX; LAGS]; n];
    let (mut lags, mut len) = candidates(spread[0], collapse[0]);
    let mut v = [f64::INFINITY; LAGS];
    for x in 0..len {
        v[x] = cost.of(rho[0] + lags[x] as f64 * p);
    }
    for i in 1..n {
        let (prev, prev_len) = (lags, len);
        (lags, len) = candidates(spread[i], collapse[i]);
        let delta = latest[i] - latest[i - 1];
        let dup_ok = t[i] - t[i - 1] <= dup_window;
        let mut next_v = [f64::INFINITY; LAGS];
        for x in 0..len {
            let mut best = (f64::INFINITY, u8::MAX);
            for y in 0..prev_len {
                // Slots from the previous packet's to this one's.
                let gap = delta + prev[y] - lags[x];
                let step = match gap {
                    1.. => LOSS_COST * (gap - 1) as f64,
                    0 if dup_ok => DUPLICATE_COST,
                    _ => continue,
                };
                let w = v[y] + step;
                if w < best.0 {
                    best = (w, y as u8);
                }
            }
            if best.0.is_finite() {
                next_v[x] = best.0 + cost.of(rho[i] + lags[x] as f64 * p);
                back[i][x] = best.1;
            }
        }
        // Keep the values small: only differences matter.
        let m = next_v.iter().copied().fold(f64::INFINITY, f64::min);
        for w in &mut next_v {
            *w -= m;
        }
        v = next_v;
    }
    let mut x = (0..len).min_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap_or(0);
    let mut slots = vec![0i64; n];
    for i in (0..n).rev() {
        let (lags, _) = candidates(spread[i], collapse[i]);
        slots[i] = latest[i] - lags[x];
        x = back[i][x] as usize;
    }
    let reordered = reorder(t, &mut slots, c, p, cost);
    let late_at = |i: usize| slots[i] < latest[i];
    let late = (0..n).filter(|&i| late_at(i)).count();
    let bursts = (1..n)
        .filter(|&i| late_at(i) && late_at(i - 1) && (i < 2 || !late_at(i - 2)))
        .count();
    Assignment {
        slots,
        late,
        bursts,
        reordered,
    }
}

/// Lets a packet take the slot of a packet up to [`MAX_OVERTAKEN`] arrivals before it, each of
/// those moving one slot on (each of them then within half a period of its slot's envelope),
/// when that is cheaper by more than [`REORDER_COST`]; returns how
/// many packets moved back. Moves are weighed on the Viterbi slots and taken best first, none
/// overlapping another.
fn reorder(t: &[f64], slots: &mut [i64], c: f64, p: f64, cost: DelayCost) -> usize {
    let f = |i: usize, k: i64| cost.of(t[i] - c - k as f64 * p);
    // (gain, i, m): packet i takes the slot of packet i − m.
    let mut moves: Vec<(f64, usize, usize)> = Vec::new();
    for i in 1..t.len() {
        let mut best = (REORDER_COST, 0);
        let mut before = f(i, slots[i]);
        let mut shifted = 0.0;
        for m in 1..=MAX_OVERTAKEN.min(i) {
            let j = i - m;
            // Only across strictly increasing slots (no duplicate), and only over packets
            // that are on time in the slot they move to: a packet was overtaken by packets
            // that were not late themselves. (Behind a delay spike, every packet is late and
            // the spike decays: pushing its last packet far back would be cheaper for a
            // heavy-tailed law, and wrong.)
            if slots[j] >= slots[j + 1] || t[j] - c - slots[j + 1] as f64 * p > p / 2.0 {
                break;
            }
            before += f(j, slots[j]);
            shifted += f(j, slots[j + 1]);
            let gain = before - (shifted + f(i, slots[j]));
            if gain > best.0 {
                best = (gain, m);
            }
        }
        if best.1 > 0 {
            moves.push((best.0, i, best.1));
        }
    }
    moves.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut taken = vec![false; t.len()];
    let mut moved = 0;
    for (_, i, m) in moves {
        if taken[i - m..=i].iter().any(|&x| x) {
            continue;
        }
        taken[i - m..=i].fill(true);
        let k = slots[i - m];
        for j in i - m..i {
            slots[j] = slots[j + 1];
        }
        slots[i] = k;
        moved += 1;
    }
    moved
}

/// A whole number of hertz (1–1000) or milliseconds within [`NOMINAL_TOLERANCE_PPM`] of `p` ns.
fn nominal_period(p: f64) -> Option<f64> {
    let hz = 1e9 / p;
    let candidates = [1e9 / hz.round().clamp(1.0, 1000.0), 1e6 * (p / 1e6).round()];
    candidates
        .into_iter()
        .filter(|&q| q > 0.0)
        .map(|q| (q, (p / q - 1.0).abs() * 1e6))
        .filter(|&(_, ppm)| ppm <= NOMINAL_TOLERANCE_PPM)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(q, _)| q)
}

#[cfg(test)]
mod tests;
