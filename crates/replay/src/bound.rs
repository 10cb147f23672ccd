//! The best possible: an offline-optimal lower bound on the mean display delay.
//!
//! In the spirit of Moon, Kurose and Towsley (Multimedia Systems 6, 1998), who bounded the
//! minimum average playout delay for a given number of late losses with an offline
//! algorithm that sees the whole trace: every frame (snapshot mode) or slot (playout mode) has
//! a **need**, the least delay at which it is not starved (snapshot: the frame's sender-clock
//! time less the newest send time arrived by then, the delay below which it cannot
//! interpolate; playout: the slot's network delay, arrival less send after the clock mapping).
//! A policy shows a frame at its delay `d`; the frame is starved (held, extrapolated, empty,
//! or late) when `d` is below its need. Given a budget of starved frames, the bound is the
//! least mean `d` any policy could reach when its delay
//!
//! - is constant within each **segment** (N-second windows, [`Segments::windows`], or
//!   talkspurts, [`Segments::talkspurts`]) and changes only between segments: [`Segments`], exact. Per segment the only
//!   useful delays are its sorted needs (starving its `k` largest needs costs `n · need(k+1)`),
//!   and the allocation of the budget over segments is a knapsack solved exactly by dynamic
//!   programming over the budget ([`Segments::curve`]); beyond [`EXACT_WORK`] steps the
//!   larger budgets come from the Lagrangian (convex-hull) relaxation instead, which is a
//!   valid but looser lower bound ([`Curve::exact_up_to`] says where the switch is);
//! - or changes at most `rate · Δt` between consecutive frames (C18's stretch limit):
//!   [`stretch`], a Lagrangian dual over a delay grid. The grid is a relaxation (a frame's
//!   delay counts at the grid point below it, a move may be one grid step longer, a frame is
//!   starved only when a whole step below its need), so the result stays a lower bound; it is
//!   low by at most one grid step plus the duality gap.
//!
//! With one frame per segment ([`Segments::windows`] with a zero window) the first is the
//! bound for any policy at all, the one sweep rows' `bound_ms` and `regret_ms` use; rows also
//! carry the one-second window bound (`window_bound_ms`). The bound is a floor, not a policy:
//! no built-in policy goes below the any-policy bound except by the documented slack (frames
//! counted differently at the ends of a trace). See `docs/bound.md`.

use jitterlab_capture::Nanos;

/// Budget-times-frame steps the exact dynamic programme may take before larger budgets fall
/// back to the Lagrangian relaxation (about a second of work).
pub const EXACT_WORK: u64 = 200_000_000;

/// The default segment length for the per-window bound rows and `tune` compare against.
pub const DEFAULT_WINDOW: Nanos = Nanos::from_millis(1000);

/// Frames grouped into segments of constant delay: each segment's needs, ms.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Segments {
    /// Each segment's needs in ms (any order). When every segment holds one frame, a negative
    /// need is kept (the frame may be shown at that delay); in longer segments, whose one delay
    /// is never negative, negative needs count as zero.
    pub needs: Vec<Vec<f64>>,
}

impl Segments {
    /// Cuts `frames` (local time, need in ms), in time order, into windows of `window`
    /// starting at the first frame; a non-positive window makes one segment per frame.
    pub fn windows(frames: &[(Nanos, f64)], window: Nanos) -> Self {
        let mut needs: Vec<Vec<f64>> = Vec::new();
        let Some(&(first, _)) = frames.first() else {
            return Self { needs };
        };
        let w = window.as_nanos();
        let mut current = None;
        for (i, &(at, need)) in frames.iter().enumerate() {
            let k = if w > 0 {
                (at - first).as_nanos().div_euclid(w)
            } else {
                i as i64
            };
            if current != Some(k) {
                needs.push(Vec::new());
                current = Some(k);
            }
            if let Some(last) = needs.last_mut() {
                last.push(need);
            }
        }
        Self { needs }
    }

    /// Cuts `frames` (local time, need in ms), in order, into talkspurts: a new segment at
    /// every frame whose `starts` entry is true (and at the first frame). Moon, Kurose and
    /// Towsley's class: the delay changes only at the start of a talkspurt.
    pub fn talkspurts(frames: &[(Nanos, f64)], starts: &[bool]) -> Self {
        let mut needs: Vec<Vec<f64>> = Vec::new();
        for (i, &(_, need)) in frames.iter().enumerate() {
            if needs.is_empty() || starts.get(i).copied().unwrap_or(false) {
                needs.push(Vec::new());
            }
            if let Some(last) = needs.last_mut() {
                last.push(need);
            }
        }
        Self { needs }
    }

    /// Adds another stream's segments (the budget is shared over all of them).
    pub fn extend(&mut self, other: Self) {
        self.needs.extend(other.needs);
    }

    /// How many frames.
    pub fn frames(&self) -> usize {
        self.needs.iter().map(Vec::len).sum()
    }

    /// The bound for every budget (see the module documentation).
    pub fn curve(&self) -> Curve {
        // One frame per segment: the frame's own need, negative or not (a policy may show the
        // newest sample at a negative display delay under the online clock estimate), and a
        // starved frame counted at no more than zero. Longer segments hold one delay, never
        // negative, so their needs count as at least zero.
        let singles = self.needs.iter().all(|s| s.len() <= 1);
        let sorted: Vec<Vec<f64>> = self
            .needs
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| {
                let mut s: Vec<f64> = if singles {
                    s.clone()
                } else {
                    s.iter().map(|n| n.max(0.0)).collect()
                };
                s.sort_by(|a, b| b.total_cmp(a));
                s
            })
            .collect();
        let frames: usize = sorted.iter().map(Vec::len).sum();
        // Cost of segment `s` with `k` starved: its size times its (k+1)-th largest need; all
        // starved, zero (or the frame's own negative need: starving it saves nothing).
        let cost = |s: &[f64], k: usize| match s.get(k) {
            Some(&n) => n * s.len() as f64,
            None if singles => s[0].min(0.0),
            None => 0.0,
        };
        // The total with every frame starved: the floor of every budget.
        let floor: f64 = sorted.iter().map(|s| cost(s, s.len())).sum();
        // The largest budget the exact programme covers within EXACT_WORK.
        let work = |b: usize| -> u64 {
            sorted
                .iter()
                .map(|s| (s.len().min(b) as u64 + 1) * (b as u64 + 1))
                .sum()
        };
        let (mut lo, mut hi) = (0usize, frames);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if work(mid) <= EXACT_WORK {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        // One frame per segment: each segment's cost is linear in k (its need, then at most 0),
        // so the relaxation below is exact and the programme is not needed.
        let limit = if singles { 0 } else { lo };
        let mut dp = vec![0.0f64; limit + 1];
        for s in &sorted {
            let mut next = vec![f64::INFINITY; limit + 1];
            for (b, slot) in next.iter_mut().enumerate() {
                for k in 0..=b.min(s.len()) {
                    let v = dp[b - k] + cost(s, k);
                    if v < *slot {
                        *slot = v;
                    }
                }
            }
            dp = next;
        }
        // "At most b starved": never worse with a larger budget.
        for b in 1..dp.len() {
            dp[b] = dp[b].min(dp[b - 1]);
        }
        // The relaxation for budgets beyond: every segment's lower convex hull of
        // (k, cost), its pieces taken by decreasing saving per starved frame.
        let mut pieces: Vec<(f64, usize)> = Vec::new();
        let mut start = 0.0;
        let mut hull: Vec<(usize, f64)> = Vec::new();
        for s in &sorted {
            start += cost(s, 0);
            hull_pieces(
                (0..=s.len()).map(|k| (k, cost(s, k))),
                &mut hull,
                |saving, len| {
                    pieces.push((saving, len));
                },
            );
        }
        pieces.sort_by(|a, b| b.0.total_cmp(&a.0));
        Curve {
            frames,
            exact: dp,
            start,
            floor,
            pieces,
            hull_exact: singles,
            sketched: None,
        }
    }
}

/// The pieces of the lower convex hull of `points` (`(k, cost)` by increasing `k`), each
/// handed to `piece` as (saving per starved frame, frames), from the first; `hull` is
/// scratch space.
fn hull_pieces(
    points: impl IntoIterator<Item = (usize, f64)>,
    hull: &mut Vec<(usize, f64)>,
    mut piece: impl FnMut(f64, usize),
) {
    hull.clear();
    for p in points {
        while hull.len() >= 2 {
            let (a, b) = (hull[hull.len() - 2], hull[hull.len() - 1]);
            // Drop b when it lies on or above the segment a–p.
            let cross = (b.0 - a.0) as f64 * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0) as f64;
            if cross <= 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    for w in hull.windows(2) {
        let len = w[1].0 - w[0].0;
        piece((w[0].1 - w[1].1) / len as f64, len);
    }
}

impl Curve {
    /// [`Segments::curve`] of one frame per segment, straight from the frames' needs (ms, in
    /// order) and exactly as it computes it, without a segment per frame: what the any-policy
    /// bound of a trace of millions of frames takes.
    pub fn of_singles(needs: impl IntoIterator<Item = f64>) -> Self {
        // `floor` starts where `Iterator::sum` of floats starts: at −0.
        let (mut frames, mut start, mut floor) = (0usize, 0.0f64, -0.0f64);
        let mut pieces: Vec<(f64, usize)> = Vec::new();
        for n in needs {
            frames += 1;
            // Its cost with nothing starved, and starved (no more than zero).
            let (kept, starved) = (n * 1.0, n.min(0.0));
            start += kept;
            floor += starved;
            pieces.push(((kept - starved) / 1.0, 1));
        }
        // Pieces of one frame each: two that compare equal are the same bits, so an unstable
        // sort gives the stable sort's order without its scratch copy (16 bytes a frame).
        pieces.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
        Self {
            frames,
            exact: vec![start],
            start,
            floor,
            pieces,
            hull_exact: true,
            sketched: None,
        }
    }

    /// The curve of a [`Sketch`]: the relaxation with the savings of each bucket taken
    /// together (see [`Sketch`] for how far it may be below the exact curve).
    pub fn of_sketch(mut sketch: Sketch) -> Self {
        sketch.settle();
        let mut buckets: Vec<(u64, Bucket)> = sketch.buckets.into_iter().collect();
        buckets.sort_unstable_by_key(|b| std::cmp::Reverse(b.0));
        Self {
            frames: sketch.frames,
            exact: vec![sketch.start],
            start: sketch.start,
            floor: sketch.floor,
            pieces: Vec::new(),
            hull_exact: false,
            sketched: Some(buckets.into_iter().map(|(_, b)| b).collect()),
        }
    }

    /// Whether the curve comes from a [`Sketch`] (every budget but 0 within its stated
    /// error, not exact).
    pub fn sketched(&self) -> bool {
        self.sketched.is_some()
    }
}

/// The segment bound as a function of the budget: exact up to [`Curve::exact_up_to`],
/// the Lagrangian relaxation beyond.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Curve {
    frames: usize,
    /// Least total delay (ms · frames) with at most `b` starved, per `b`.
    exact: Vec<f64>,
    /// Total delay with nothing starved.
    start: f64,
    /// Total delay with everything starved: 0, less the negative needs of single frames.
    floor: f64,
    /// (saving per starved frame, frames) of every hull piece, by decreasing saving.
    pieces: Vec<(f64, usize)>,
    /// The relaxation is exact at every budget (one frame per segment).
    hull_exact: bool,
    /// From a [`Sketch`]: its buckets by decreasing saving (and no `pieces`).
    sketched: Option<Vec<Bucket>>,
}

impl Curve {
    /// Frames the bound covers.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The largest budget whose value is exact (beyond: the relaxation).
    pub fn exact_up_to(&self) -> usize {
        if self.sketched.is_some() {
            0
        } else if self.hull_exact {
            self.frames
        } else {
            self.exact.len().saturating_sub(1)
        }
    }

    /// The least total delay (ms summed over frames) with at most `budget` starved frames.
    pub fn total(&self, budget: usize) -> f64 {
        if let Some(&v) = self.exact.get(budget) {
            return v;
        }
        if budget >= self.frames {
            // Everything starved (exactly, not up to the sum's rounding).
            return self.floor;
        }
        if let Some(buckets) = &self.sketched {
            // Whole buckets by their sums; of the last one taken in part, its largest saving
            // for each frame (never less than the exact saving: the total stays a floor).
            let (mut total, mut left) = (self.start, budget as u64);
            for b in buckets {
                if left == 0 {
                    break;
                }
                if b.frames <= left {
                    total -= b.sum;
                    left -= b.frames;
                } else {
                    total -= (left as f64 * b.max).min(b.sum);
                    left = 0;
                }
            }
            return total.max(self.floor);
        }
        let (mut total, mut left) = (self.start, budget as f64);
        for &(saving, len) in &self.pieces {
            let take = left.min(len as f64);
            total -= saving * take;
            left -= take;
            if left <= 0.0 {
                break;
            }
        }
        total.max(self.floor)
    }

    /// The least mean delay (ms) with at most `budget` starved frames; `None` without frames.
    pub fn mean(&self, budget: usize) -> Option<f64> {
        (self.frames > 0).then(|| self.total(budget) / self.frames as f64)
    }

    /// The least mean delay (ms) when at most `share` (0..1) of the frames may be starved.
    pub fn at_share(&self, share: f64) -> Option<f64> {
        self.mean(budget_for(share, self.frames))
    }
}

/// How a [`Sketch`] buckets savings: a positive saving's bits shifted right by this much keep
/// its exponent and the top 11 bits of its mantissa, so the savings of one bucket are within
/// 2⁻¹¹ of each other, relatively.
const SKETCH_SHIFT: u32 = 52 - 11;

/// One bucket of a [`Sketch`]: how many starved frames its savings stand for, their sum
/// (saving × frames) and the largest saving.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Bucket {
    frames: u64,
    sum: f64,
    max: f64,
}

impl Bucket {
    fn add(&mut self, other: Self) {
        self.frames += other.frames;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }
}

/// A curve's relaxation in bounded memory, for traces of more frames than their needs can be
/// kept: every hull piece (saving per starved frame, frames) counted into a bucket of
/// savings within 2⁻¹¹ of each other ([`Curve::of_sketch`] turns it into a curve).
///
/// The curve takes a budget's largest savings bucket by bucket, and of the last bucket, taken
/// in part, counts each starved frame at the bucket's largest saving. So its total is never
/// above the exact relaxation's (the bound stays a floor), and below it by at most the frames
/// taken from that one bucket times the spread of its savings: a mean bound low by at most
/// `share × (largest saving) / 2048` ms, and exact when that bucket's savings are equal. The
/// sums are also added in another order than the exact curve's (a difference in the last bits).
/// Memory: one bucket per distinct 2⁻¹¹ step of the savings seen, about 2,048 per power of two.
#[derive(Clone, Debug, Default)]
pub struct Sketch {
    frames: usize,
    start: f64,
    floor: f64,
    buckets: std::collections::HashMap<u64, Bucket>,
    /// The bucket being added to (consecutive savings tend to share one), not yet in `buckets`.
    run: Option<(u64, Bucket)>,
}

impl Sketch {
    /// Adds a frame of its own segment (the any-policy bound): its need, negative or not.
    pub fn single(&mut self, need: f64) {
        let (kept, starved) = (need * 1.0, need.min(0.0));
        self.frames += 1;
        self.start += kept;
        self.floor += starved;
        self.piece(kept - starved, 1);
    }

    /// Adds a segment of several frames (one delay, never negative): its needs, in any order
    /// (left sorted, largest first, with negative needs as zero); `hull` is scratch space.
    pub fn segment(&mut self, needs: &mut [f64], hull: &mut Vec<(usize, f64)>) {
        if needs.is_empty() {
            return;
        }
        for n in needs.iter_mut() {
            *n = n.max(0.0);
        }
        needs.sort_by(|a, b| b.total_cmp(a));
        let n = needs.len();
        let cost = |k: usize| needs.get(k).map_or(0.0, |&need| need * n as f64);
        self.frames += n;
        self.start += cost(0);
        hull_pieces((0..=n).map(|k| (k, cost(k))), hull, |saving, len| {
            self.piece(saving, len);
        });
    }

    /// Adds `frames` starved frames that save `saving` each.
    fn piece(&mut self, saving: f64, frames: usize) {
        let key = if saving > 0.0 {
            saving.to_bits() >> SKETCH_SHIFT
        } else {
            0
        };
        let add = Bucket {
            frames: frames as u64,
            sum: saving * frames as f64,
            max: saving.max(0.0),
        };
        match &mut self.run {
            Some((k, run)) if *k == key => run.add(add),
            run => {
                if let Some((k, b)) = run.replace((key, add)) {
                    self.buckets.entry(k).or_default().add(b);
                }
            }
        }
    }

    /// Moves the current run into the buckets.
    fn settle(&mut self) {
        if let Some((k, b)) = self.run.take() {
            self.buckets.entry(k).or_default().add(b);
        }
    }

    /// Adds every frame of `other`.
    pub fn merge(&mut self, mut other: Self) {
        other.settle();
        self.settle();
        self.frames += other.frames;
        self.start += other.start;
        self.floor += other.floor;
        for (k, b) in other.buckets {
            self.buckets.entry(k).or_default().add(b);
        }
    }

    /// Frames added.
    pub fn frames(&self) -> usize {
        self.frames
    }
}

/// One stream's frames, `(local time, need ms)` in time order, kept as the sketches of the
/// any-policy bound and of the per-window bound ([`DEFAULT_WINDOW`] windows from the first
/// frame, as [`Segments::windows`] cuts them): what a sweep of more frames than it keeps
/// bounds with.
#[derive(Clone, Debug)]
pub struct NeedsSketch {
    any: Sketch,
    window: Sketch,
    first: Option<Nanos>,
    /// The current window's number and needs.
    index: i64,
    current: Vec<f64>,
    /// Every window so far held at most one frame.
    singles: bool,
    hull: Vec<(usize, f64)>,
}

impl Default for NeedsSketch {
    fn default() -> Self {
        Self {
            any: Sketch::default(),
            window: Sketch::default(),
            first: None,
            index: 0,
            current: Vec::new(),
            singles: true,
            hull: Vec::new(),
        }
    }
}

impl NeedsSketch {
    /// The sketch of frames already listed.
    pub fn of(frames: &[(Nanos, f64)]) -> Self {
        let mut sketch = Self::default();
        for &(at, need) in frames {
            sketch.push(at, need);
        }
        sketch
    }

    /// Adds the next frame.
    pub fn push(&mut self, at: Nanos, need: f64) {
        self.any.single(need);
        let first = *self.first.get_or_insert(at);
        let index = (at - first)
            .as_nanos()
            .div_euclid(DEFAULT_WINDOW.as_nanos());
        if index != self.index {
            self.close();
            self.index = index;
        }
        self.current.push(need);
    }

    /// Frames added.
    pub fn frames(&self) -> usize {
        self.any.frames
    }

    fn close(&mut self) {
        self.singles &= self.current.len() <= 1;
        self.window.segment(&mut self.current, &mut self.hull);
        self.current.clear();
    }

    /// The any-policy and per-window curves of every stream's sketch, as [`Bounds::of`]
    /// gives them from the listed frames (within [`Sketch`]'s error).
    ///
    /// [`Bounds::of`]: crate::sweep::Bounds::of
    pub fn curves(streams: impl IntoIterator<Item = Self>) -> (Curve, Curve) {
        let (mut any, mut window, mut singles) = (Sketch::default(), Sketch::default(), true);
        for mut s in streams {
            s.close();
            singles &= s.singles;
            any.merge(s.any);
            window.merge(s.window);
        }
        let any = Curve::of_sketch(any);
        // Windows of one frame each keep negative needs, as in memory: the any-policy curve.
        let window = if singles {
            any.clone()
        } else {
            Curve::of_sketch(window)
        };
        (any, window)
    }
}

/// The starved frames a share of `frames` allows: rounded up (with a little slack for the
/// ratio's own rounding), so that the bound stays a floor for a row whose share was counted
/// over slightly fewer frames than the bound's (a replay's first and last frames; on a short
/// trace one frame of budget moves the bound by milliseconds: the property test found one).
pub fn budget_for(share: f64, frames: usize) -> usize {
    if share.is_nan() || share <= 0.0 {
        return 0;
    }
    ((share * frames as f64) - 1e-6)
        .ceil()
        .clamp(0.0, frames as f64) as usize
}

/// The stretch-limited bound: the least mean delay (ms) with at most `budget` starved frames
/// when the delay moves by at most `rate` (e.g. 0.05) times the time between consecutive
/// frames, over a delay grid of `step_ms`. Each stream is a path of `(local time, need ms)`
/// frames, in time order; the budget is shared. `None` without frames.
pub fn stretch(
    streams: &[Vec<(Nanos, f64)>],
    budget: usize,
    rate: f64,
    step_ms: f64,
) -> Option<f64> {
    let frames: usize = streams.iter().map(Vec::len).sum();
    if frames == 0 || step_ms <= 0.0 {
        return None;
    }
    let top = streams.iter().flatten().map(|f| f.1).fold(0.0f64, f64::max);
    let grid = (top / step_ms).ceil() as usize + 1;
    // L(λ) = min over paths of Σ delay + λ·starved, and how many it starved.
    let lagrangian = |lambda: f64| -> (f64, usize) {
        let (mut total, mut starved) = (0.0, 0usize);
        for path in streams {
            let (v, s) = stretch_path(path, lambda, rate, step_ms, grid);
            total += v;
            starved += s;
        }
        (total, starved)
    };
    // Weak duality: for every λ ≥ 0, L(λ) − λ·budget is a lower bound. The dual is concave
    // in λ: golden-section search, keeping the best value seen.
    let dual = |lambda: f64| lagrangian(lambda).0 - lambda * budget as f64;
    let mut best = dual(0.0);
    let (mut a, mut b) = (0.0f64, top * (frames as f64).max(1.0) + step_ms);
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - phi * (b - a), a + phi * (b - a));
    let (mut fc, mut fd) = (dual(c), dual(d));
    for _ in 0..60 {
        best = best.max(fc).max(fd);
        if fc < fd {
            a = c;
            c = d;
            fc = fd;
            d = a + phi * (b - a);
            fd = dual(d);
        } else {
            b = d;
            d = c;
            fd = fc;
            c = b - phi * (b - a);
            fc = dual(c);
        }
    }
    best = best.max(fc).max(fd);
    Some(best.max(0.0) / frames as f64)
}

/// One path's Lagrangian over the grid: (least Σ cost, starved frames on that path).
fn stretch_path(
    path: &[(Nanos, f64)],
    lambda: f64,
    rate: f64,
    step_ms: f64,
    grid: usize,
) -> (f64, usize) {
    if path.is_empty() {
        return (0.0, 0);
    }
    // Per grid point: (cost so far, starved so far).
    let frame_cost = |j: usize, need: f64| -> (f64, usize) {
        let g = j as f64 * step_ms;
        let starved = g + step_ms <= need;
        (g + if starved { lambda } else { 0.0 }, usize::from(starved))
    };
    let mut prev: Vec<(f64, usize)> = (0..grid).map(|j| frame_cost(j, path[0].1)).collect();
    let mut next = vec![(0.0, 0usize); grid];
    for w in path.windows(2) {
        let dt_ms = (w[1].0 - w[0].0).as_nanos().max(0) as f64 * 1e-6;
        let reach = ((rate * dt_ms / step_ms).floor() as usize + 1).min(grid);
        let window = sliding_min(&prev, reach);
        for (j, slot) in next.iter_mut().enumerate() {
            let (c, s) = frame_cost(j, w[1].1);
            let (bc, bs) = window[j];
            *slot = (bc + c, bs + s);
        }
        std::mem::swap(&mut prev, &mut next);
    }
    prev.into_iter()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap_or((0.0, 0))
}

/// For each `j`, the least of `v[j - r ..= j + r]` (monotone deque).
fn sliding_min(v: &[(f64, usize)], r: usize) -> Vec<(f64, usize)> {
    let n = v.len();
    let mut out = Vec::with_capacity(n);
    let mut deque: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    let mut pushed = 0;
    for j in 0..n {
        while pushed < n && pushed <= j + r {
            while deque.back().is_some_and(|&b| v[b].0 >= v[pushed].0) {
                deque.pop_back();
            }
            deque.push_back(pushed);
            pushed += 1;
        }
        while deque.front().is_some_and(|&f| f + r < j) {
            deque.pop_front();
        }
        out.push(deque.front().map_or((f64::INFINITY, 0), |&f| v[f]));
    }
    out
}

/// The starved share of a snapshot row: held, extrapolated and empty frames over frames (a
/// frame a policy extrapolates is as far from its need as a held one).
pub fn starved_share(s: &crate::Summary) -> f64 {
    if s.frames == 0 {
        0.0
    } else {
        (s.holds + s.extrapolated + s.empty) as f64 / s.frames as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The any-policy curve straight from the needs is the one-frame-per-segment curve, bit
    /// for bit (negative needs, ties and zeros included).
    #[test]
    fn singles_straight_from_the_needs_are_the_segment_curve() {
        for len in [0usize, 1, 2, 7, 1000] {
            let frames: Vec<(Nanos, f64)> = (0..len)
                .map(|i| {
                    let need =
                        ((i * 7919) % 61) as f64 * 1.7 - 20.0 + if i % 5 == 0 { 0.1 } else { 0.0 };
                    (Nanos::from_millis(i as i64 * 16), need)
                })
                .collect();
            let segments = Segments::windows(&frames, Nanos::ZERO).curve();
            let straight = Curve::of_singles(frames.iter().map(|f| f.1));
            assert_eq!(
                format!("{straight:?}"),
                format!("{segments:?}"),
                "{len} frames"
            );
        }
    }

    fn ms(v: i64) -> Nanos {
        Nanos::from_millis(v)
    }

    /// Every per-segment choice among its needs (and zero), enumerated. With one frame per
    /// segment the frame's need is kept even when negative (see [`Segments::needs`]).
    fn brute(segments: &[Vec<f64>], budget: usize) -> f64 {
        let singles = segments.iter().all(|s| s.len() == 1);
        let options: Vec<Vec<f64>> = segments
            .iter()
            .map(|s| {
                let mut o: Vec<f64> = if singles {
                    s.clone()
                } else {
                    s.iter().map(|n| n.max(0.0)).collect()
                };
                o.push(if singles { s[0].min(0.0) } else { 0.0 });
                o
            })
            .collect();
        let mut best = f64::INFINITY;
        let mut pick = vec![0usize; segments.len()];
        loop {
            let (mut total, mut starved) = (0.0, 0);
            for (s, (&p, opts)) in segments.iter().zip(pick.iter().zip(&options)) {
                let d = opts[p];
                total += d * s.len() as f64;
                starved += s.iter().filter(|&&n| n > d).count();
            }
            if starved <= budget {
                best = best.min(total);
            }
            let mut i = 0;
            loop {
                if i == pick.len() {
                    return best;
                }
                pick[i] += 1;
                if pick[i] < options[i].len() {
                    break;
                }
                pick[i] = 0;
                i += 1;
            }
        }
    }

    #[test]
    fn the_segment_bound_equals_brute_force() {
        let mut rng = jitterlab_capture::rng::Rng::new(18);
        for case in 0..300 {
            let segments: Vec<Vec<f64>> = (0..1 + case % 4)
                .map(|_| {
                    (0..1 + (rng.next_u64() % 4) as usize)
                        .map(|_| (rng.next_u64() % 60) as f64 - 5.0)
                        .collect()
                })
                .collect();
            // Every fourth case one frame per segment (the any-policy bound, no programme).
            let segments: Vec<Vec<f64>> = if case % 4 == 3 {
                segments
                    .into_iter()
                    .flatten()
                    .take(8)
                    .map(|n| vec![n])
                    .collect()
            } else {
                segments
            };
            let curve = Segments {
                needs: segments.clone(),
            }
            .curve();
            let n = curve.frames();
            assert_eq!(curve.exact_up_to(), n);
            for budget in 0..=n {
                let want = brute(&segments, budget);
                assert!(
                    (curve.total(budget) - want).abs() < 1e-9,
                    "case {case} {segments:?} budget {budget}: {} vs {want}",
                    curve.total(budget)
                );
            }
        }
    }

    #[test]
    fn a_worked_example() {
        // Two segments: needs 10, 20, 90 and 30, 30. No budget: 3·90 + 2·30 = 330.
        // One starved: the 90 (3·20 + 60 = 120). Two: still the best is 120 or 3·10+60=90.
        let s = Segments {
            needs: vec![vec![10.0, 20.0, 90.0], vec![30.0, 30.0]],
        };
        let c = s.curve();
        assert_eq!(c.total(0), 330.0);
        assert_eq!(c.total(1), 120.0);
        assert_eq!(c.total(2), 90.0);
        assert_eq!(c.mean(2), Some(18.0));
        assert_eq!(c.total(5), 0.0);
        assert_eq!(c.at_share(0.2), Some(24.0));
    }

    #[test]
    fn the_relaxation_is_below_the_exact_value() {
        let s = Segments {
            needs: vec![vec![10.0, 20.0, 90.0], vec![30.0, 30.0], vec![5.0, 70.0]],
        };
        let c = s.curve();
        let relaxed = Curve {
            exact: vec![c.total(0)],
            ..c.clone()
        };
        for b in 0..=c.frames() {
            assert!(relaxed.total(b) <= c.total(b) + 1e-9, "budget {b}");
        }
        // At the hull's corners the relaxation is exact: nothing starved, and everything.
        assert_eq!(relaxed.total(c.frames()), 0.0);
    }

    #[test]
    fn windows_cut_by_time() {
        let frames = [
            (ms(0), 1.0),
            (ms(400), 2.0),
            (ms(1000), 3.0),
            (ms(2500), 4.0),
        ];
        let s = Segments::windows(&frames, ms(1000));
        assert_eq!(s.needs, vec![vec![1.0, 2.0], vec![3.0], vec![4.0]]);
        assert_eq!(Segments::windows(&[], ms(1000)).frames(), 0);
        let each = Segments::windows(&[(ms(0), 1.0), (ms(0), 2.0)], Nanos::ZERO);
        assert_eq!(each.needs, vec![vec![1.0], vec![2.0]]);
    }

    #[test]
    fn the_stretch_bound_lies_between_free_and_constant_delay() {
        // A spike: needs 20 ms, then 100 ms for 5 frames, then 20 ms; 10 ms frames.
        let path: Vec<(Nanos, f64)> = (0..60)
            .map(|k| (ms(10 * k), if (20..25).contains(&k) { 100.0 } else { 20.0 }))
            .collect();
        let n = path.len() as f64;
        let one = Segments {
            needs: vec![path.iter().map(|f| f.1).collect()],
        }
        .curve();
        // Free per-frame delay (a huge rate): every frame at its need.
        let free = stretch(std::slice::from_ref(&path), 0, 1e6, 1.0).unwrap();
        assert!(
            (free - (55.0 * 20.0 + 5.0 * 100.0) / n).abs() <= 1.0 + 1e-6,
            "{free}"
        );
        // A slow rate: must rise before the spike and fall after: above free, below constant.
        let slow = stretch(std::slice::from_ref(&path), 0, 0.5, 1.0).unwrap();
        assert!(slow > free + 1.0, "{slow} vs {free}");
        assert!(slow <= one.mean(0).unwrap() + 1e-9, "{slow}");
        // A budget of the five spike frames: back to 20 ms everywhere, within a grid step.
        let spent = stretch(std::slice::from_ref(&path), 5, 0.5, 1.0).unwrap();
        assert!((19.0 - 1e-6..=20.0 + 1e-6).contains(&spent), "{spent}");
    }

    /// The stretch bound against every integer-millisecond path on small traces: never above
    /// the best path (the paths are policies within the limit), and with no budget (where the
    /// dual is exact) at most one grid step per frame below it: the documented
    /// discretisation error.
    #[test]
    fn the_stretch_bound_against_brute_force_paths() {
        let mut rng = jitterlab_capture::rng::Rng::new(1998);
        for case in 0..40 {
            let n = 2 + case % 3;
            let path: Vec<(Nanos, f64)> = (0..n)
                .map(|k| (ms(10 * k as i64), (rng.next_u64() % 9) as f64))
                .collect();
            // 20 % of 10 ms: 2 ms per frame.
            let rate = 0.2;
            let best = |budget: usize| -> f64 {
                let mut best = f64::INFINITY;
                let mut d = vec![0i64; n];
                loop {
                    let ok = d.windows(2).all(|w| (w[1] - w[0]).abs() <= 2);
                    let starved = d
                        .iter()
                        .zip(&path)
                        .filter(|(d, f)| (**d as f64) < f.1)
                        .count();
                    if ok && starved <= budget {
                        best = best.min(d.iter().sum::<i64>() as f64 / n as f64);
                    }
                    let mut i = 0;
                    loop {
                        if i == n {
                            return best;
                        }
                        d[i] += 1;
                        if d[i] <= 9 {
                            break;
                        }
                        d[i] = 0;
                        i += 1;
                    }
                }
            };
            for budget in 0..=n {
                let exact = best(budget);
                let bound = stretch(std::slice::from_ref(&path), budget, rate, 1.0).unwrap();
                assert!(
                    bound <= exact + 1e-9,
                    "case {case} budget {budget}: {bound} > {exact}"
                );
                if budget == 0 {
                    assert!(
                        bound >= exact - 1.0 - 1e-9,
                        "case {case}: {bound} vs {exact}"
                    );
                }
            }
        }
    }

    /// Frames of three streams at 60 fps, their needs mixing repeated values (a 20 Hz sender
    /// seen at 60 fps), a continuum and spikes, a few negative.
    fn mixed_streams() -> Vec<Vec<(Nanos, f64)>> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..3)
            .map(|s| {
                (0..20_000 + 3_000 * s)
                    .map(|i| {
                        let at = Nanos(i as i64 * 16_666_667 + s as i64 * 5_000_000);
                        let r = next();
                        let need = if r < 0.4 {
                            [16.7, 33.3, 50.0][i % 3]
                        } else if r < 0.95 {
                            next() * 120.0 - 10.0
                        } else {
                            200.0 + next() * 800.0
                        };
                        (at, need)
                    })
                    .collect()
            })
            .collect()
    }

    /// The sketched curves never go above the exact ones (they stay floors), and below the
    /// Lagrangian relaxation by at most 1/2047 of what the starved frames save.
    #[test]
    fn the_sketch_is_a_floor_within_its_stated_error() {
        let streams = mixed_streams();
        let exact = crate::sweep::Bounds::of(&streams);
        let (any, window) = NeedsSketch::curves(streams.iter().map(|f| NeedsSketch::of(f)));
        assert!(any.sketched() && window.sketched());
        let frames: usize = streams.iter().map(Vec::len).sum();
        assert_eq!((any.frames(), window.frames()), (frames, frames));
        for (name, sketch, exact) in [
            ("any", &any, &exact.any),
            ("window", &window, &exact.window),
        ] {
            let start = exact.total(0);
            let tol = 1e-9 * (start.abs() + 1.0);
            assert!(
                (sketch.total(0) - start).abs() <= tol,
                "{name}: nothing starved"
            );
            let mut budgets: Vec<usize> = (0..=frames).step_by(frames / 97).collect();
            budgets.extend([1, 2, 3, frames - 1, frames, frames + 5]);
            for b in budgets {
                let (s, e) = (sketch.total(b), exact.total(b));
                assert!(
                    s <= e + tol,
                    "{name} budget {b}: sketch {s} above exact {e}"
                );
                if b > exact.exact_up_to() || name == "any" {
                    assert!(
                        e - s <= (start - e) / 2047.0 + tol,
                        "{name} budget {b}: sketch {s}, exact {e}, nothing starved {start}"
                    );
                }
            }
        }
        // The any-policy sketch is exact where the last bucket's savings are all equal (the
        // repeated needs), and far tighter than the stated error elsewhere on this data.
        let b = streams.iter().flatten().filter(|f| f.1 >= 200.0).count();
        assert!((any.total(b) - exact.any.total(b)).abs() <= 1e-6 * exact.any.total(0));
    }

    /// Windows of one frame keep negative needs, as in memory: the window curve is then the
    /// any-policy curve; and sketches merge as one sketch of every frame.
    #[test]
    fn sketches_of_single_frame_windows_and_of_parts() {
        let frames: Vec<(Nanos, f64)> = (0..500)
            .map(|i| (Nanos::from_millis(i * 1500), (i % 17) as f64 * 3.0 - 12.0))
            .collect();
        let exact = crate::sweep::Bounds::of(std::slice::from_ref(&frames));
        let (any, window) = NeedsSketch::curves([NeedsSketch::of(&frames)]);
        assert_eq!(any, window);
        for b in [0, 1, 40, 250, 499, 500] {
            let (s, e) = (window.total(b), exact.window.total(b));
            assert!((s - e).abs() <= 1e-9, "budget {b}: {s} against {e}");
        }
        let mut whole = Sketch::default();
        let mut parts = [Sketch::default(), Sketch::default()];
        for (i, f) in frames.iter().enumerate() {
            whole.single(f.1);
            parts[i % 2].single(f.1);
        }
        let [a, b] = parts;
        let mut merged = a;
        merged.merge(b);
        let (whole, merged) = (Curve::of_sketch(whole), Curve::of_sketch(merged));
        for b in [0, 3, 77, 300, 500] {
            assert!(
                (whole.total(b) - merged.total(b)).abs() <= 1e-9,
                "budget {b}"
            );
        }
    }
}
