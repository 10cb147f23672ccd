//! Arrival timing of a flow that carries no sequence numbers or send times (or of any
//! stream): rate, inter-arrival percentiles and gaps. What `info` shows for a plain UDP flow.
//!
//! [`timing`] takes every arrival at once; [`TimingAccumulator`] takes them one by one in
//! bounded memory. Its figures are exact up to [`EXACT_INTERVALS`] intervals; beyond, the
//! percentiles and the gap count come from a histogram of [`HISTOGRAM_BITS`]-bit buckets
//! (see [`TimingEstimate::approximate`]) until a second pass over the same arrivals
//! ([`Refinement`]) makes them exact again.

use std::collections::BTreeMap;

use crate::time::Nanos;

/// A gap is an inter-arrival time longer than this many median intervals.
pub const GAP_MEDIANS: f64 = 3.0;

/// Inter-arrival times, ms, in the order packets were captured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Intervals {
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Longest.
    pub max_ms: f64,
}

/// What the arrivals of one flow or stream say.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timing {
    /// Packets.
    pub packets: u64,
    /// First to last arrival, seconds.
    pub duration_s: f64,
    /// Packets per second over that span (0 for fewer than two packets).
    pub rate_pps: f64,
    /// Inter-arrival times (`None` for fewer than two packets).
    pub intervals: Option<Intervals>,
    /// Inter-arrival times longer than [`GAP_MEDIANS`] median intervals.
    pub gaps: u64,
    /// The longest of them, ms (0 when there is none).
    pub longest_gap_ms: f64,
}

/// The `q` quantile (0..=1) of sorted values: the value at rank ⌊q·n⌋ (0-based, the last one
/// for `q = 1`), the nearest-rank definition the team's tshark reference tables
/// (`*.tshark.txt`) were computed with.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n => sorted[((q.clamp(0.0, 1.0) * n as f64) as usize).min(n - 1)],
    }
}

/// The timing of packets arriving at `arrivals`, in capture order.
pub fn timing(arrivals: impl IntoIterator<Item = Nanos>) -> Timing {
    let mut packets = 0u64;
    let (mut first, mut last) = (Nanos::MAX, Nanos::MIN);
    let mut prev: Option<Nanos> = None;
    let mut gaps: Vec<f64> = Vec::new();
    for at in arrivals {
        packets += 1;
        first = first.min(at);
        last = last.max(at);
        if let Some(p) = prev {
            gaps.push((at.0 - p.0) as f64 / 1e6);
        }
        prev = Some(at);
    }
    from_gaps(packets, first, last, gaps)
}

/// The figures of [`timing`] from the intervals, in capture order.
fn from_gaps(packets: u64, first: Nanos, last: Nanos, mut gaps: Vec<f64>) -> Timing {
    let mut t = spans(packets, first, last);
    if gaps.is_empty() {
        return t;
    }
    let n = gaps.len();
    let mean_ms = gaps.iter().sum::<f64>() / n as f64;
    // Each quantile by selection, not a sort: the ranks ascend, so each search runs on the
    // part above the last (O(n) each, where a sort of a million intervals would dominate).
    let rank = |q: f64| ((q * n as f64) as usize).min(n - 1);
    let mut at = |r: usize, from: usize| -> f64 {
        let (_, v, _) = gaps[from..].select_nth_unstable_by(r - from, f64::total_cmp);
        *v
    };
    let (r50, r95, r99) = (rank(0.5), rank(0.95), rank(0.99));
    let p50_ms = at(r50, 0);
    let p95_ms = at(r95, r50);
    let p99_ms = at(r99, r95);
    let max_ms = gaps[r99..]
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    t.intervals = Some(Intervals {
        mean_ms,
        p50_ms,
        p95_ms,
        p99_ms,
        max_ms,
    });
    let threshold = GAP_MEDIANS * p50_ms;
    for &g in gaps.iter().filter(|&&g| g > threshold) {
        t.gaps += 1;
        t.longest_gap_ms = t.longest_gap_ms.max(g);
    }
    t
}

/// Packets, duration and rate, with no intervals.
fn spans(packets: u64, first: Nanos, last: Nanos) -> Timing {
    let duration_s = if packets >= 2 {
        (last.0 - first.0) as f64 / 1e9
    } else {
        0.0
    };
    Timing {
        packets,
        duration_s,
        rate_pps: if duration_s > 0.0 {
            packets as f64 / duration_s
        } else {
            0.0
        },
        ..Timing::default()
    }
}

/// Intervals kept one by one (exact figures) before the histogram takes over: 512 KiB a
/// stream at most.
pub const EXACT_INTERVALS: usize = 1 << 16;

/// The significant bits of a histogram bucket: a bucket spans at most 1/2048 of its values.
pub const HISTOGRAM_BITS: u32 = 12;

/// The percentiles [`Timing`] reports.
const QUANTILES: [f64; 3] = [0.5, 0.95, 0.99];

/// The histogram bucket of an interval (ns): order-preserving, one value per bucket below
/// 4,096 ns, and at most 1/2048 of its values wide above.
pub fn bucket(v: i64) -> i64 {
    fn pos(m: u64) -> i64 {
        let top = 63 - m.max(1).leading_zeros();
        if top < HISTOGRAM_BITS {
            return m as i64;
        }
        let shift = top + 1 - HISTOGRAM_BITS;
        (i64::from(shift) << (HISTOGRAM_BITS - 1)) + (m >> shift) as i64
    }
    if v >= 0 {
        pos(v as u64)
    } else {
        -pos(v.unsigned_abs()) - 1
    }
}

/// The lowest and highest interval (ns) of a [`bucket`].
pub fn bucket_range(key: i64) -> (i64, i64) {
    fn pos(key: i64) -> (i128, i128) {
        let half = 1i64 << (HISTOGRAM_BITS - 1);
        if key < 2 * half {
            return (i128::from(key), i128::from(key));
        }
        let shift = (key >> (HISTOGRAM_BITS - 1)) - 1;
        let mant = key - (shift << (HISTOGRAM_BITS - 1));
        let lo = i128::from(mant) << shift;
        (lo, lo + (1i128 << shift) - 1)
    }
    let clamp = |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    if key >= 0 {
        let (lo, hi) = pos(key);
        (clamp(lo), clamp(hi))
    } else {
        let (lo, hi) = pos(-key - 1);
        (clamp(-hi), clamp(-lo))
    }
}

/// An interval (ns) in ms, as [`timing`] computes it.
fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// The 0-based rank of the `q` quantile of `n` values, as [`quantile`] takes it.
fn rank(q: f64, n: u64) -> u64 {
    ((q * n as f64) as u64).min(n.saturating_sub(1))
}

/// The [`Timing`] of arrivals fed one by one (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct TimingAccumulator {
    packets: u64,
    first: Nanos,
    last: Nanos,
    prev: Option<Nanos>,
    /// The intervals' sum, ms, in capture order (as [`timing`] sums them).
    sum_ms: f64,
    max_ns: i64,
    intervals: u64,
    /// Every interval (ns) while there are at most [`EXACT_INTERVALS`].
    exact: Vec<i64>,
    /// Beyond: intervals per [`bucket`].
    histogram: BTreeMap<i64, u64>,
}

/// The figures of a [`TimingAccumulator`]: its [`Timing`], and whether the percentiles and
/// gaps are the histogram's (then [`TimingAccumulator::refinement`] makes them exact).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimingEstimate {
    /// The figures.
    pub timing: Timing,
    /// Whether the percentiles and the gap count are estimates: each percentile the middle
    /// of the bucket holding it (within 1/2048 of the exact value, see
    /// [`HISTOGRAM_BITS`]), the gap count exact but for the intervals in the bucket of three
    /// medians. Packets, duration, rate, mean, maximum and longest gap stay exact.
    pub approximate: bool,
}

impl TimingAccumulator {
    /// Feeds one arrival, in capture order.
    pub fn push(&mut self, at: Nanos) {
        if self.packets == 0 {
            self.first = at;
            self.last = at;
        }
        self.packets += 1;
        self.first = self.first.min(at);
        self.last = self.last.max(at);
        if let Some(p) = self.prev {
            let ns = at.0 - p.0;
            self.sum_ms += ms(ns);
            self.max_ns = if self.intervals == 0 {
                ns
            } else {
                self.max_ns.max(ns)
            };
            self.intervals += 1;
            if self.histogram.is_empty() && self.exact.len() < EXACT_INTERVALS {
                self.exact.push(ns);
            } else {
                for v in std::mem::take(&mut self.exact) {
                    *self.histogram.entry(bucket(v)).or_default() += 1;
                }
                *self.histogram.entry(bucket(ns)).or_default() += 1;
            }
        }
        self.prev = Some(at);
    }

    /// The figures so far.
    pub fn finish(&self) -> TimingEstimate {
        if self.histogram.is_empty() {
            let gaps = self.exact.iter().map(|&v| ms(v)).collect();
            return TimingEstimate {
                timing: from_gaps(self.packets, self.first, self.last, gaps),
                approximate: false,
            };
        }
        let n = self.intervals;
        let mut t = spans(self.packets, self.first, self.last);
        let mid = |key: i64| {
            let (lo, hi) = bucket_range(key);
            ms(lo + (hi - lo) / 2)
        };
        let [p50, p95, p99] = QUANTILES.map(|q| mid(self.bucket_of(rank(q, n)).0));
        t.intervals = Some(Intervals {
            mean_ms: self.sum_ms / n as f64,
            p50_ms: p50,
            p95_ms: p95,
            p99_ms: p99,
            max_ms: ms(self.max_ns),
        });
        let threshold = GAP_MEDIANS * p50;
        t.gaps = self
            .histogram
            .iter()
            .filter(|&(&k, _)| mid(k) > threshold)
            .map(|(_, &c)| c)
            .sum();
        if t.gaps > 0 {
            t.longest_gap_ms = ms(self.max_ns);
        }
        TimingEstimate {
            timing: t,
            approximate: true,
        }
    }

    /// The bucket holding the interval of rank `r` (0-based, ascending), and how many
    /// intervals lie in the buckets below it.
    fn bucket_of(&self, r: u64) -> (i64, u64) {
        let mut below = 0;
        for (&k, &c) in &self.histogram {
            if r < below + c {
                return (k, below);
            }
            below += c;
        }
        (self.histogram.keys().last().copied().unwrap_or(0), below)
    }

    /// What a second pass over the same arrivals needs to make the figures exact, or `None`
    /// when they already are.
    pub fn refinement(&self) -> Option<Refinement> {
        if self.histogram.is_empty() {
            return None;
        }
        let n = self.intervals;
        let targets = QUANTILES.map(|q| {
            let r = rank(q, n);
            let (key, below) = self.bucket_of(r);
            (key, r - below)
        });
        // The median is somewhere in its bucket, so three times it is somewhere in this range
        // (widened by a few ns against rounding): there the gap test waits for the median.
        let (lo, hi) = bucket_range(targets[0].0);
        let open = (
            lo.saturating_mul(3).saturating_sub(4),
            hi.saturating_mul(3).saturating_add(4),
        );
        Some(Refinement {
            base: Self {
                exact: Vec::new(),
                histogram: BTreeMap::new(),
                ..self.clone()
            },
            targets,
            open,
            values: BTreeMap::new(),
            above: 0,
            prev: None,
        })
    }
}

/// The second pass of a [`TimingAccumulator`] past [`EXACT_INTERVALS`]: fed the same
/// arrivals again, it keeps only the intervals in the buckets that hold the percentiles and
/// around the gap threshold (memory bounded by those buckets' widths, not by the stream's
/// length), and gives the exact figures [`timing`] would.
#[derive(Clone, Debug)]
pub struct Refinement {
    base: TimingAccumulator,
    /// Per percentile: its bucket and its rank within the bucket.
    targets: [(i64, u64); 3],
    /// The intervals (ns) whose gap test waits for the exact median.
    open: (i64, i64),
    /// Intervals kept, with their counts.
    values: BTreeMap<i64, u64>,
    /// Intervals above `open`: gaps whatever the exact median.
    above: u64,
    prev: Option<Nanos>,
}

impl Refinement {
    /// Feeds one arrival, in the order of the first pass.
    pub fn push(&mut self, at: Nanos) {
        if let Some(p) = self.prev {
            let v = at.0 - p.0;
            let k = bucket(v);
            if self.targets.iter().any(|t| t.0 == k) || (self.open.0..=self.open.1).contains(&v) {
                *self.values.entry(v).or_default() += 1;
            } else if v > self.open.1 {
                self.above += 1;
            }
        }
        self.prev = Some(at);
    }

    /// The exact figures.
    pub fn finish(&self) -> Timing {
        let b = &self.base;
        let mut t = spans(b.packets, b.first, b.last);
        let at_rank = |(key, r): (i64, u64)| {
            let (lo, hi) = bucket_range(key);
            let mut below = 0;
            for (&v, &c) in self.values.range(lo..=hi) {
                if r < below + c {
                    return ms(v);
                }
                below += c;
            }
            f64::NAN
        };
        let [p50, p95, p99] = self.targets.map(at_rank);
        t.intervals = Some(Intervals {
            mean_ms: b.sum_ms / b.intervals as f64,
            p50_ms: p50,
            p95_ms: p95,
            p99_ms: p99,
            max_ms: ms(b.max_ns),
        });
        let threshold = GAP_MEDIANS * p50;
        // Kept intervals outside `open` are clearly on one side of the threshold; the test
        // tells them all.
        t.gaps = self.above
            + self
                .values
                .iter()
                .filter(|&(&v, _)| ms(v) > threshold)
                .map(|(_, &c)| c)
                .sum::<u64>();
        if t.gaps > 0 {
            t.longest_gap_ms = ms(b.max_ns);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_take_the_nearest_rank_above() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 0.74), 3.0);
        assert_eq!(quantile(&v, 0.75), 4.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn a_tick_with_one_stall_has_one_gap() {
        // 20 ms ticks, one 100 ms stall between packets 50 and 51.
        let mut at = Vec::new();
        let mut t = 0;
        for i in 0..101 {
            at.push(Nanos::from_millis(t));
            t += if i == 50 { 100 } else { 20 };
        }
        let timing = timing(at);
        assert_eq!(timing.packets, 101);
        let iv = timing.intervals.unwrap();
        assert_eq!(iv.p50_ms, 20.0);
        assert_eq!(iv.max_ms, 100.0);
        assert_eq!((timing.gaps, timing.longest_gap_ms), (1, 100.0));
        assert!((timing.duration_s - 2.08).abs() < 1e-9);
        assert!((timing.rate_pps - 101.0 / 2.08).abs() < 1e-9);
    }

    #[test]
    fn selection_gives_the_quantiles_a_sort_gives() {
        let mut rng = crate::rng::Rng::new(5);
        let mut t = 0i64;
        let at: Vec<Nanos> = (0..1001)
            .map(|_| {
                t += (rng.exponential(20.0) * 1e6) as i64;
                Nanos(t)
            })
            .collect();
        let mut sorted: Vec<f64> = at
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) as f64 / 1e6)
            .collect();
        sorted.sort_unstable_by(f64::total_cmp);
        let iv = timing(at).intervals.unwrap();
        assert_eq!(iv.p50_ms, quantile(&sorted, 0.5));
        assert_eq!(iv.p95_ms, quantile(&sorted, 0.95));
        assert_eq!(iv.p99_ms, quantile(&sorted, 0.99));
        assert_eq!(iv.max_ms, sorted[999]);
    }

    /// Arrivals with ties, negative steps (capture order is not time order) and a stall.
    fn arrivals(n: usize, seed: u64) -> Vec<Nanos> {
        let mut rng = crate::rng::Rng::new(seed);
        let mut t = 0i64;
        (0..n)
            .map(|i| {
                t += match i % 997 {
                    0 => 400_000_000,
                    5 => -2_000_000,
                    _ if rng.uniform() < 0.2 => 20_000_000,
                    _ => (rng.exponential(20.0) * 1e6) as i64,
                };
                Nanos(t)
            })
            .collect()
    }

    #[test]
    fn the_accumulator_is_exact_up_to_its_limit() {
        for n in [0, 1, 2, 3, 1000, EXACT_INTERVALS + 1] {
            let at = arrivals(n, n as u64);
            let mut acc = TimingAccumulator::default();
            at.iter().for_each(|&a| acc.push(a));
            let got = acc.finish();
            assert!(!got.approximate, "{n}");
            assert!(acc.refinement().is_none());
            assert_eq!(got.timing, timing(at), "{n}");
        }
    }

    /// Past the limit: the histogram's percentiles within 1/2048 of the exact ones, and the
    /// second pass exactly them.
    #[test]
    fn past_its_limit_the_sketch_is_bounded_and_the_second_pass_exact() {
        let at = arrivals(3 * EXACT_INTERVALS, 9);
        let mut acc = TimingAccumulator::default();
        at.iter().for_each(|&a| acc.push(a));
        let want = timing(at.iter().copied());
        let got = acc.finish();
        assert!(got.approximate);
        let (g, w) = (got.timing.intervals.unwrap(), want.intervals.unwrap());
        for (a, b) in [
            (g.p50_ms, w.p50_ms),
            (g.p95_ms, w.p95_ms),
            (g.p99_ms, w.p99_ms),
        ] {
            assert!((a - b).abs() <= b.abs() / 2048.0, "{a} vs {b}");
        }
        assert_eq!((g.mean_ms, g.max_ms), (w.mean_ms, w.max_ms));
        assert!(
            got.timing.gaps.abs_diff(want.gaps) * 100 <= want.gaps,
            "{got:?} {want:?}"
        );
        let mut second = acc.refinement().unwrap();
        at.iter().for_each(|&a| second.push(a));
        assert_eq!(second.finish(), want);
    }

    #[test]
    fn buckets_keep_order_and_hold_their_values() {
        let mut rng = crate::rng::Rng::new(3);
        let mut vs: Vec<i64> = (0..20_000)
            .map(|i| {
                let m = (rng.uniform() * 2f64.powi(i % 62)) as i64;
                if i % 3 == 0 { -m } else { m }
            })
            .chain([0, 1, -1, 4095, 4096, 4097, i64::MAX, i64::MIN, -4096, -4097])
            .collect();
        vs.sort_unstable();
        for w in vs.windows(2) {
            assert!(bucket(w[0]) <= bucket(w[1]), "{w:?}");
        }
        for &v in &vs {
            let (lo, hi) = bucket_range(bucket(v));
            assert!(lo <= v && v <= hi, "{v}: {lo}..={hi}");
            assert!(
                (hi - lo) as f64 <= (v.unsigned_abs() as f64 / 2048.0).max(0.0) + 1.0,
                "{v}"
            );
        }
    }

    #[test]
    fn one_packet_has_no_intervals() {
        let t = timing([Nanos::from_millis(5)]);
        assert_eq!((t.packets, t.rate_pps, t.intervals), (1, 0.0, None));
    }
}
