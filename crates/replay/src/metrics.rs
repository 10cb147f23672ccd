//! What a player would have seen, folded into a fixed-size summary.
//!
//! Quantiles come from a [`LogHistogram`] whose memory does not grow with the trace.

use serde::{Deserialize, Serialize};

use crate::buffer::{Counters, HoldReason, Mode};

/// A histogram of non-negative values with ~0.8 % relative precision from 2⁻²⁰ (~1e-6) to
/// 2³¹ (~2e9) in any unit; smaller values count as 0 and larger ones in the top bucket (the
/// exact mean and maximum are kept apart).
///
/// A positive f64's bit pattern grows with its value, so its exponent and first 7 mantissa
/// bits make a monotone bucket index into a fixed array of ~6,500 counters: adding is an index
/// and an increment, and memory does not depend on how many values are added. Until its
/// values fall in more than a few dozen buckets, a histogram keeps (bucket, count) pairs
/// instead (a streaming pass over 100,000 short streams holds two histograms per stream and
/// configuration).
#[derive(Clone, Debug, Default)]
pub struct LogHistogram {
    /// Allocated when the values fill more buckets than `few` keeps.
    counts: Option<Box<[u64; Self::BUCKETS]>>,
    /// (bucket, count) while `counts` is not allocated, in no order.
    few: Vec<(u16, u64)>,
    count: u64,
    sum: f64,
    /// 0 while empty: every value counted is at least 0.
    max: f64,
}

impl LogHistogram {
    const SHIFT: u32 = 52 - 7;
    /// Biased exponent of 2⁻²⁰ and 2³¹.
    const LO: u64 = (1023 - 20) << 7;
    const HI: u64 = (1023 + 31) << 7;
    const BUCKETS: usize = (Self::HI - Self::LO) as usize + 2;

    /// The bucket of a value that is not negative (−0 included).
    #[inline]
    fn bucket(v: f64) -> usize {
        let key = (v.to_bits() & !(1 << 63)) >> Self::SHIFT;
        if key < Self::LO {
            0
        } else {
            ((key - Self::LO) as usize + 1).min(Self::BUCKETS - 1)
        }
    }

    fn bucket_mid(b: usize) -> f64 {
        if b == 0 {
            return 0.0;
        }
        let key = (b - 1) as u64 + Self::LO;
        let lo = f64::from_bits(key << Self::SHIFT);
        let hi = f64::from_bits((key + 1) << Self::SHIFT);
        (lo + hi) / 2.0
    }

    /// Adds a value; negative values count as 0, NaN is ignored.
    #[inline]
    pub fn add(&mut self, value: f64) {
        match &mut self.counts {
            Some(counts) if value >= 0.0 => {
                counts[Self::bucket(value)] += 1;
                self.count += 1;
                self.sum += value;
                if value > self.max {
                    self.max = value;
                }
            }
            _ => self.add_first_or_negative(value),
        }
    }

    /// Distinct buckets kept as pairs before the array is allocated.
    const FEW: usize = 32;
    /// Values kept as pairs at most: a histogram that keeps growing gets its array (and the
    /// one-branch `add`) whatever its spread.
    const FEW_VALUES: u64 = 256;

    /// Adds `n` to bucket `b`.
    fn bump(&mut self, b: usize, n: u64) {
        if let Some(counts) = &mut self.counts {
            counts[b] += n;
            return;
        }
        if self.count < Self::FEW_VALUES {
            if let Some(slot) = self.few.iter_mut().find(|(k, _)| *k as usize == b) {
                slot.1 += n;
                return;
            }
            if self.few.len() < Self::FEW {
                self.few.push((b as u16, n));
                return;
            }
        }
        let mut counts = Box::new([0; Self::BUCKETS]);
        for &(k, c) in &self.few {
            counts[k as usize] += c;
        }
        counts[b] += n;
        self.counts = Some(counts);
        self.few = Vec::new();
    }

    /// Every bucket's count, in bucket order (empty buckets included once the array is
    /// allocated, left out before).
    fn buckets(&self) -> Vec<(usize, u64)> {
        match &self.counts {
            Some(counts) => counts.iter().copied().enumerate().collect(),
            None => {
                let mut few: Vec<(usize, u64)> =
                    self.few.iter().map(|&(k, c)| (k as usize, c)).collect();
                few.sort_unstable();
                few
            }
        }
    }

    /// [`Self::add`] of a value while the array is not allocated, of a negative one or of NaN.
    #[cold]
    fn add_first_or_negative(&mut self, value: f64) {
        if value.is_nan() {
            return;
        }
        self.bump(Self::bucket(value.max(0.0)), 1);
        self.count += 1;
        self.sum += value;
        self.max = self.max.max(value);
    }

    /// Adds `value` `n` times (negative values count as 0, NaN is ignored).
    pub fn add_n(&mut self, value: f64, n: u64) {
        if n == 0 || value.is_nan() {
            return;
        }
        let value = value.max(0.0);
        self.bump(Self::bucket(value), n);
        self.count += n;
        self.sum += value * n as f64;
        self.max = self.max.max(value);
    }

    /// Adds `n` zeros.
    pub fn add_zeros(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        self.bump(0, n);
        self.count += n;
    }

    /// Adds every value of another histogram.
    pub fn merge(&mut self, other: &Self) {
        if other.count == 0 && other.counts.is_none() && other.few.is_empty() {
            return;
        }
        match (&mut self.counts, &other.counts) {
            (Some(ours), Some(theirs)) => {
                for (a, b) in ours.iter_mut().zip(theirs.iter()) {
                    *a += b;
                }
            }
            (None, Some(theirs)) => {
                let mut counts = theirs.clone();
                for &(k, c) in &self.few {
                    counts[k as usize] += c;
                }
                self.counts = Some(counts);
                self.few = Vec::new();
            }
            (_, None) => {
                for &(k, c) in &other.few {
                    self.bump(k as usize, c);
                }
            }
        }
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum += other.sum;
    }

    /// How many values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The exact mean (of the values as given), or `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// The exact maximum, or `None` when empty.
    pub fn max(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }

    /// The `q` quantile (0..=1), within the bucket precision; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let found = match &self.counts {
            Some(counts) => Self::bucket_of_rank(counts.iter().copied().enumerate(), rank),
            None => Self::bucket_of_rank(self.buckets().into_iter(), rank),
        };
        Some(found.map_or(self.max, |b| Self::bucket_mid(b).min(self.max)))
    }

    /// The bucket where the counts, in bucket order, reach `rank`.
    fn bucket_of_rank(counts: impl Iterator<Item = (usize, u64)>, rank: u64) -> Option<usize> {
        let mut seen = 0u64;
        for (b, n) in counts {
            seen += n;
            if seen >= rank {
                return Some(b);
            }
        }
        None
    }
}

impl PartialEq for LogHistogram {
    /// The same values in every bucket, however each histogram keeps them.
    fn eq(&self, other: &Self) -> bool {
        let nonzero = |h: &Self| -> Vec<(usize, u64)> {
            h.buckets().into_iter().filter(|&(_, c)| c > 0).collect()
        };
        self.count == other.count
            && self.sum.to_bits() == other.sum.to_bits()
            && self.max.to_bits() == other.max.to_bits()
            && nonzero(self) == nonzero(other)
    }
}

/// Count, sum, minimum and maximum: for per-frame values whose quantiles nobody asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moments {
    count: u64,
    sum: f64,
    /// +∞ and −∞ while empty, so that adding needs no test for the first value.
    min: f64,
    max: f64,
}

impl Default for Moments {
    fn default() -> Self {
        Self {
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

impl Moments {
    /// Adds a value.
    #[inline]
    pub fn add(&mut self, v: f64) {
        if v < self.min {
            self.min = v;
        }
        if v > self.max {
            self.max = v;
        }
        self.count += 1;
        self.sum += v;
    }

    /// Adds every value of another.
    pub fn merge(&mut self, other: &Self) {
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// The mean, or `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// How many values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The minimum, or `None` when empty.
    pub fn min(&self) -> Option<f64> {
        (self.count > 0).then_some(self.min)
    }

    /// The maximum, or `None` when empty.
    pub fn max(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }
}

/// [`Moments`] of whole numbers (nanoseconds, sample counts), summed exactly: adding is
/// integer arithmetic, with no conversion or division per frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntMoments {
    count: u64,
    sum: i128,
    /// `i64::MAX` and `i64::MIN` while empty.
    min: i64,
    max: i64,
}

impl Default for IntMoments {
    fn default() -> Self {
        Self {
            count: 0,
            sum: 0,
            min: i64::MAX,
            max: i64::MIN,
        }
    }
}

impl IntMoments {
    /// Adds a value.
    #[inline]
    pub fn add(&mut self, v: i64) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.count += 1;
        self.sum += i128::from(v);
    }

    /// Adds every value of another.
    pub fn merge(&mut self, other: &Self) {
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// The mean divided by `unit` (1e6 turns nanoseconds into milliseconds), or `None` when
    /// empty.
    pub fn mean_in(&self, unit: f64) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64 / unit)
    }

    /// The minimum, or `None` when empty.
    pub fn min(&self) -> Option<i64> {
        (self.count > 0).then_some(self.min)
    }

    /// The maximum, or `None` when empty.
    pub fn max(&self) -> Option<i64> {
        (self.count > 0).then_some(self.max)
    }
}

/// Nanoseconds to milliseconds.
const NS_PER_MS: f64 = 1e6;

/// Where the error reference came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reference {
    /// The sender's ground truth, including samples the network lost.
    Truth,
    /// Every sample that ever arrived, in hindsight.
    Hindsight,
}

/// Accumulates per-frame and per-packet outcomes of one replay.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    /// Frames after playback started (the target reached the first sample).
    pub frames: u64,
    /// Frames before playback started.
    pub startup_frames: u64,
    /// Frames interpolated.
    pub interpolated: u64,
    /// Frames extrapolated within the miss policy's horizon (C13).
    pub extrapolated: u64,
    /// Frames held (after startup): the buffer had no usable pair (C12).
    pub holds: u64,
    /// Of those, holds across a gap (C8) or lifecycle event.
    pub gap_holds: u64,
    /// Of those, holds after the newest sample: underruns (C9).
    pub underruns: u64,
    /// Frames with nothing to show (after startup).
    pub empty: u64,
    /// The longest run of consecutive holds (C12).
    pub max_consecutive_holds: u64,
    run_of_holds: u64,
    /// Packets offered to the buffer.
    pub packets: u64,
    /// What became of them.
    pub counters: Counters,
    /// Packets that arrived after the last frame (never offered).
    pub pending: u64,
    /// Display delay: sender-clock now − sender time of what is shown, in ms.
    pub delay_ms: LogHistogram,
    /// Samples buffered ahead of the target, per frame.
    pub depth: IntMoments,
    /// Frames with no sample ahead of the target.
    pub zero_depth_frames: u64,
    /// Distance between what is shown and the reference at the target time.
    pub error: LogHistogram,
    /// Where the error reference came from, if there is one.
    pub reference: Option<Reference>,
    /// The policy's playout delay per frame, in ns.
    pub buffer_delay: IntMoments,
    /// Frames where the display stood still because the delay jumped up.
    pub timeline_freezes: u64,
    /// Frames played faster or slower than real time (stretch).
    pub scaled_frames: u64,
    /// Frames whose render target was earlier than the previous frame's (Mirror can do this).
    pub backward_steps: u64,
    /// Sample age per frame: sender-clock now − send time of the newest sample received, ns.
    pub sample_age: IntMoments,
    /// Correction distances: per sample that arrived for a moment already displayed, the
    /// distance between what was shown then and the sample.
    pub correction: Moments,
    /// Recovery after the stream's network spikes ([`crate::recovery`]).
    pub recovery: crate::recovery::Recovery,
}

impl Metrics {
    /// Records one frame.
    pub fn frame(&mut self, mode: Mode, hold: Option<HoldReason>, startup: bool) {
        if startup {
            self.startup_frames += 1;
            return;
        }
        self.frames += 1;
        match mode {
            Mode::Interpolate => {
                self.interpolated += 1;
                self.run_of_holds = 0;
            }
            Mode::Extrapolate => {
                self.extrapolated += 1;
                self.run_of_holds = 0;
            }
            Mode::Hold | Mode::Empty => {
                if mode == Mode::Empty {
                    self.empty += 1;
                } else {
                    self.holds += 1;
                }
                match hold {
                    Some(HoldReason::Gap) => self.gap_holds += 1,
                    Some(HoldReason::AfterNewest) => self.underruns += 1,
                    _ => {}
                }
                if mode == Mode::Hold {
                    self.run_of_holds += 1;
                    self.max_consecutive_holds = self.max_consecutive_holds.max(self.run_of_holds);
                }
            }
        }
    }

    /// Records how the timeline moved at one frame.
    pub fn timeline(&mut self, delay: jitterlab_capture::Nanos, frozen: bool, scaled: bool) {
        self.buffer_delay.add(delay.as_nanos());
        self.timeline_freezes += u64::from(frozen);
        self.scaled_frames += u64::from(scaled);
    }

    /// Records the depth at one frame.
    pub fn depth(&mut self, depth: usize) {
        self.depth.add(depth as i64);
        self.zero_depth_frames += u64::from(depth == 0);
    }

    /// Adds another stream's metrics to these.
    pub fn merge(&mut self, other: &Self) {
        self.frames += other.frames;
        self.startup_frames += other.startup_frames;
        self.interpolated += other.interpolated;
        self.extrapolated += other.extrapolated;
        self.holds += other.holds;
        self.gap_holds += other.gap_holds;
        self.underruns += other.underruns;
        self.empty += other.empty;
        self.max_consecutive_holds = self.max_consecutive_holds.max(other.max_consecutive_holds);
        self.packets += other.packets;
        self.counters.inserted += other.counters.inserted;
        self.counters.duplicates += other.counters.duplicates;
        self.counters.late += other.counters.late;
        self.counters.stale += other.counters.stale;
        self.counters.evicted += other.counters.evicted;
        self.pending += other.pending;
        self.delay_ms.merge(&other.delay_ms);
        self.depth.merge(&other.depth);
        self.zero_depth_frames += other.zero_depth_frames;
        self.error.merge(&other.error);
        self.buffer_delay.merge(&other.buffer_delay);
        self.timeline_freezes += other.timeline_freezes;
        self.scaled_frames += other.scaled_frames;
        self.backward_steps += other.backward_steps;
        self.sample_age.merge(&other.sample_age);
        self.correction.merge(&other.correction);
        self.recovery.merge(&other.recovery);
        self.counters.refused += other.counters.refused;
        self.reference = match (self.reference, other.reference) {
            (Some(Reference::Hindsight), _) | (_, Some(Reference::Hindsight)) => {
                Some(Reference::Hindsight)
            }
            (a, b) => a.or(b),
        };
    }

    /// The flat, serialisable summary (the `metrics` object of `replay --json`).
    pub fn summary(&self) -> Summary {
        let ratio = |n: u64| {
            if self.frames > 0 {
                n as f64 / self.frames as f64
            } else {
                0.0
            }
        };
        let c = &self.counters;
        Summary {
            frames: self.frames,
            holds: self.holds,
            hold_ratio: ratio(self.holds),
            starved_ratio: ratio(self.holds + self.extrapolated + self.empty),
            extrapolated_ratio: ratio(self.extrapolated),
            recovery: self.recovery.summary(),
            max_consecutive_holds: self.max_consecutive_holds,
            duplicates_dropped: c.duplicates,
            mean_delay_ms: self.delay_ms.mean(),
            p50_delay_ms: self.delay_ms.quantile(0.50),
            p95_delay_ms: self.delay_ms.quantile(0.95),
            p99_delay_ms: self.delay_ms.quantile(0.99),
            max_delay_ms: self.delay_ms.max(),
            startup_frames: self.startup_frames,
            interpolated: self.interpolated,
            extrapolated: self.extrapolated,
            gap_holds: self.gap_holds,
            underruns: self.underruns,
            empty: self.empty,
            packets: self.packets,
            inserted: c.inserted,
            late: c.late,
            stale_dropped: c.stale,
            evicted: c.evicted,
            pending: self.pending,
            mean_depth: self.depth.mean_in(1.0),
            min_depth: self.depth.min().map(|d| d as u64),
            zero_depth_ratio: ratio(self.zero_depth_frames),
            error_reference: self.reference,
            mean_error: self.error.mean(),
            p95_error: self.error.quantile(0.95),
            p99_error: self.error.quantile(0.99),
            max_error: self.error.max(),
            mean_buffer_delay_ms: self.buffer_delay.mean_in(NS_PER_MS),
            max_buffer_delay_ms: self.buffer_delay.max().map(|d| d as f64 / NS_PER_MS),
            timeline_freezes: self.timeline_freezes,
            scaled_frames: self.scaled_frames,
            backward_steps: self.backward_steps,
            refused: c.refused,
            mean_sample_age_ms: self.sample_age.mean_in(NS_PER_MS),
            max_sample_age_ms: self.sample_age.max().map(|d| d as f64 / NS_PER_MS),
            corrections: self.correction.count(),
            mean_correction: self.correction.mean(),
            max_correction: self.correction.max(),
        }
    }
}

/// Every metric of one replay, under the names `replay --json` and sweep tables use.
// `default`: a results file from a version with fewer metrics still reads back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// Frames after playback started.
    pub frames: u64,
    /// Held frames (C12).
    pub holds: u64,
    /// `holds / frames`.
    pub hold_ratio: f64,
    /// Starved frames over frames: `(holds + extrapolated + empty) / frames` (what `tune`
    /// limits by default).
    pub starved_ratio: f64,
    /// `extrapolated / frames`.
    pub extrapolated_ratio: f64,
    /// How display delay recovered after the network's spikes ([`crate::recovery`]).
    pub recovery: crate::recovery::RecoverySummary,
    /// Longest run of consecutive holds (C12).
    pub max_consecutive_holds: u64,
    /// Duplicate packets rejected (C5, C12).
    pub duplicates_dropped: u64,
    /// Mean display delay in ms.
    pub mean_delay_ms: Option<f64>,
    /// Median display delay in ms.
    pub p50_delay_ms: Option<f64>,
    /// 95th percentile display delay in ms.
    pub p95_delay_ms: Option<f64>,
    /// 99th percentile display delay in ms.
    pub p99_delay_ms: Option<f64>,
    /// Largest display delay in ms.
    pub max_delay_ms: Option<f64>,
    /// Frames before playback started.
    pub startup_frames: u64,
    /// Interpolated frames.
    pub interpolated: u64,
    /// Extrapolated frames (C13).
    pub extrapolated: u64,
    /// Holds across a gap or lifecycle event (C8, C14).
    pub gap_holds: u64,
    /// Holds after the newest sample (C9).
    pub underruns: u64,
    /// Frames with nothing to show.
    pub empty: u64,
    /// Packets offered to the buffer.
    pub packets: u64,
    /// Packets inserted.
    pub inserted: u64,
    /// Packets that arrived behind the playout point.
    pub late: u64,
    /// Packets dropped as stale on arrival.
    pub stale_dropped: u64,
    /// Samples evicted by capacity.
    pub evicted: u64,
    /// Packets that arrived after the last frame.
    pub pending: u64,
    /// Mean samples buffered ahead of the target.
    pub mean_depth: Option<f64>,
    /// Fewest samples buffered ahead of the target.
    pub min_depth: Option<u64>,
    /// Share of frames with nothing buffered ahead.
    pub zero_depth_ratio: f64,
    /// `truth` or `hindsight`; `null` when the stream has no values.
    pub error_reference: Option<Reference>,
    /// Mean distance between shown and reference values.
    pub mean_error: Option<f64>,
    /// 95th percentile error.
    pub p95_error: Option<f64>,
    /// 99th percentile error.
    pub p99_error: Option<f64>,
    /// Largest error.
    pub max_error: Option<f64>,
    /// Mean playout delay the policy chose, in ms.
    pub mean_buffer_delay_ms: Option<f64>,
    /// Largest playout delay the policy chose, in ms.
    pub max_buffer_delay_ms: Option<f64>,
    /// Frames where the display stood still rather than step backwards (jumps to a longer delay).
    pub timeline_freezes: u64,
    /// Frames played faster or slower than real time (stretch, Mirror's timescale).
    pub scaled_frames: u64,
    /// Render-target steps backwards (0 for jitterlab's policies; Mirror's clamp can cause them).
    pub backward_steps: u64,
    /// Packets refused by a full buffer (Mirror).
    pub refused: u64,
    /// Mean age of the newest sample received, ms (how fresh the freshest data is).
    pub mean_sample_age_ms: Option<f64>,
    /// Largest age of the newest sample received, ms.
    pub max_sample_age_ms: Option<f64>,
    /// Samples that arrived for a moment already displayed.
    pub corrections: u64,
    /// Mean distance by which they corrected what had been shown.
    pub mean_correction: Option<f64>,
    /// Largest such correction.
    pub max_correction: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kept as a few pairs or in the array, merged from either, a histogram gives the same
    /// figures: small histograms merged into one equal one of every value added.
    #[test]
    fn few_buckets_and_the_array_give_the_same_figures() {
        let values: Vec<f64> = (0..3000)
            .map(|i| ((i * 7919) % 1000) as f64 * 0.37)
            .collect();
        let mut whole = LogHistogram::default();
        for &v in &values {
            whole.add(v);
        }
        assert!(whole.counts.is_some());
        let mut merged = LogHistogram::default();
        for chunk in values.chunks(3) {
            let mut small = LogHistogram::default();
            for &v in chunk {
                small.add(v);
            }
            assert!(small.counts.is_none() && small.few.len() <= 3);
            merged.merge(&small);
        }
        assert_eq!(merged, whole);
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(merged.quantile(q), whole.quantile(q), "q {q}");
        }
        // A few values: the pairs alone, their quantile the bucket's middle.
        let mut few = LogHistogram::default();
        few.add(10.0);
        few.add(0.0);
        few.add_zeros(2);
        few.add_n(10.0, 3);
        assert!(few.counts.is_none());
        assert_eq!(few.count(), 7);
        assert_eq!(few.quantile(0.4), Some(0.0));
        let mid = LogHistogram::bucket_mid(LogHistogram::bucket(10.0)).min(10.0);
        assert_eq!(few.quantile(0.9), Some(mid));
    }

    #[test]
    fn histogram_quantiles_are_within_a_percent() {
        let mut h = LogHistogram::default();
        for i in 1..=10_000 {
            h.add(f64::from(i));
        }
        for (q, want) in [(0.5, 5000.0), (0.95, 9500.0), (0.99, 9900.0)] {
            let got = h.quantile(q).unwrap();
            assert!((got - want).abs() / want < 0.01, "q{q}: {got}");
        }
        assert_eq!(h.max(), Some(10_000.0));
        assert_eq!(h.mean(), Some(5000.5));
        assert_eq!(LogHistogram::default().quantile(0.5), None);
    }

    #[test]
    fn c12_consecutive_holds_are_counted() {
        let mut m = Metrics::default();
        let hold = Some(HoldReason::AfterNewest);
        for mode in [
            Mode::Interpolate,
            Mode::Hold,
            Mode::Hold,
            Mode::Interpolate,
            Mode::Hold,
        ] {
            m.frame(mode, if mode == Mode::Hold { hold } else { None }, false);
        }
        assert_eq!(
            (m.frames, m.holds, m.max_consecutive_holds, m.underruns),
            (5, 3, 2, 3)
        );
        assert_eq!(m.summary().hold_ratio, 0.6);
    }
}
