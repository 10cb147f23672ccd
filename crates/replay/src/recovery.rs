//! Recovery after network spikes: does a buffer come back down once the network does?
//!
//! Users complain about buffers that ratchet up after a bad moment and never come back
//! (GStreamer under clock skew, Mumble's buffer growing to seconds). This module finds the
//! bad moments in a trace's network delay series and measures, per replay, how display delay
//! behaves after each.
//!
//! # Detecting spikes ([`SpikeRule`], [`detect`])
//! Packets are read in arrival order. Each packet's *transit* is its arrival time minus its
//! send time (the clock offset cancels: only rises matter). The *baseline* is a running mean
//! of the transit of normal packets (gain 1/16, as RFC 3550's jitter estimate; it starts at the
//! first packet's transit and is frozen during a spike). A spike **starts** at the arrival of
//! the last normal packet when the next packet either
//! - arrives with a transit more than [`SpikeRule::rise`] (default 50 ms) above the baseline, or
//! - arrives more than [`SpikeRule::gap`] (default 200 ms) after it (an outage),
//!
//! and **ends** at the arrival of the first packet (the one after the gap included) whose
//! transit is back within half the rise of the baseline. A spike still open at the end of the
//! trace ends at the last arrival.
//!
//! # Measuring recovery ([`Recovery`])
//! Per spike, the *level before* is the display delay of the last displayed frame rendered
//! before the spike started (a spike before the first displayed frame is not counted). The
//! *recovery time* is the time from the spike's end to the first frame, at or after the end,
//! whose display delay is at most the level before plus [`RECOVERED_WITHIN`] (5 ms): a buffer
//! that comes back lower than before has recovered too. A spike whose display delay is not
//! back by the start of the next spike (or the end of the replay) is *unrecovered*. The
//! *worst hold run after a spike* is the longest run of consecutive held frames from a spike's
//! start to its recovery (or to the next spike, or the end). *Inflation* is the mean display
//! delay of the last 10 % of displayed frames minus that of the first 10 % (at least one
//! frame each). It is kept in bounded memory: the delays are summed in blocks of consecutive
//! frames, one frame per block (exact) up to 16,384 displayed frames; beyond, adjacent
//! blocks merge (at most 16,384 blocks) and the block cut by a 10 % boundary counts by its
//! share of the block's sum, an error of at most 10/8,192 (0.12 %) of the block's delay
//! range.

use jitterlab_capture::Nanos;
use serde::{Deserialize, Serialize};

/// How far above its level before a spike display delay may be and count as recovered.
pub const RECOVERED_WITHIN: Nanos = Nanos::from_millis(5);

/// What counts as a spike or an outage in the network delay series (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpikeRule {
    /// A transit this far above the running baseline starts a spike.
    pub rise: Nanos,
    /// An arrival gap longer than this starts a spike (an outage).
    pub gap: Nanos,
}

impl Default for SpikeRule {
    fn default() -> Self {
        Self {
            rise: Nanos::from_millis(50),
            gap: Nanos::from_millis(200),
        }
    }
}

/// One spike or outage, on the local (arrival) clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spike {
    /// When it started: the arrival of the last normal packet before it.
    pub start: Nanos,
    /// When it ended: the arrival of the first packet back within half the rise of the
    /// baseline.
    pub end: Nanos,
    /// The largest transit above the baseline during the spike.
    pub peak: Nanos,
}

/// The spikes of a series of `(arrival, send)` times in arrival order, by `rule`.
pub fn detect(packets: impl IntoIterator<Item = (Nanos, Nanos)>, rule: &SpikeRule) -> Vec<Spike> {
    let mut detector = Detector::new(*rule);
    let mut spikes: Vec<Spike> = packets
        .into_iter()
        .filter_map(|(at, send)| detector.push(at, send))
        .collect();
    spikes.extend(detector.open());
    spikes
}

/// [`detect`] one packet at a time, for a reader that never holds the whole series: each
/// packet may close a spike, and one may be open at the end.
#[derive(Clone, Debug)]
pub struct Detector {
    rule: SpikeRule,
    rise: f64,
    baseline: Option<f64>,
    prev_at: Option<Nanos>,
    open: Option<Spike>,
}

impl Detector {
    /// A detector by `rule`, before any packet.
    pub fn new(rule: SpikeRule) -> Self {
        Self {
            rise: rule.rise.as_nanos() as f64,
            rule,
            baseline: None,
            prev_at: None,
            open: None,
        }
    }

    /// The next packet in arrival order; returns the spike it closes, if any.
    pub fn push(&mut self, at: Nanos, send: Nanos) -> Option<Spike> {
        let rise = self.rise;
        let transit = (at - send).as_nanos() as f64;
        let base = *self.baseline.get_or_insert(transit);
        let above = Nanos((transit - base).max(0.0) as i64);
        if self.open.is_none()
            && let Some(prev) = self.prev_at
            && (transit - base > rise || at - prev > self.rule.gap)
        {
            self.open = Some(Spike {
                start: prev,
                end: at,
                peak: Nanos::ZERO,
            });
        }
        self.prev_at = Some(at);
        match &mut self.open {
            Some(spike) => {
                spike.peak = spike.peak.max(above);
                spike.end = at;
                if transit - base <= rise / 2.0 {
                    return self.open.take();
                }
                None
            }
            None => {
                self.baseline = Some(base + (transit - base) / 16.0);
                None
            }
        }
    }

    /// The spike still open (it ends at the last arrival so far), if any.
    pub fn open(&self) -> Option<Spike> {
        self.open
    }

    /// The arrival of the last packet pushed.
    pub fn last_arrival(&self) -> Option<Nanos> {
        self.prev_at
    }
}

/// One spike being followed through a replay.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Episode {
    end: Nanos,
    before: Nanos,
    run: u64,
}

/// Accumulates the recovery figures of one replay, frame by frame (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recovery {
    /// The next spike of the stream not yet reached.
    next: usize,
    open: Option<Episode>,
    last_delay: Option<Nanos>,
    /// Display delays of the displayed frames, ms, for inflation (dropped by
    /// [`Self::finish`]).
    delays: Blocks,
    /// Spikes counted (a level before them was known).
    pub spikes: u64,
    /// Spikes whose display delay was not back before the next spike or the end.
    pub unrecovered: u64,
    /// Recovery times of the recovered spikes, ms.
    pub recovery_ms: crate::metrics::Moments,
    /// The longest run of consecutive holds after a spike.
    pub worst_hold_run_after_spike: u64,
    /// Inflation of each finished stream, weighted by its displayed frames: (Σ w·x, Σ w).
    inflation: (f64, u64),
}

impl Recovery {
    /// Records one frame after startup, rendered at local time `at`, showing something with
    /// display delay `delay` (or nothing), `held` or not; `spikes` are the stream's spikes.
    #[inline]
    pub fn frame(&mut self, spikes: &[Spike], at: Nanos, delay: Option<Nanos>, held: bool) {
        while let Some(spike) = spikes.get(self.next)
            && at >= spike.start
        {
            self.next += 1;
            if self.open.take().is_some() {
                self.unrecovered += 1;
            }
            if let Some(before) = self.last_delay {
                self.spikes += 1;
                self.open = Some(Episode {
                    end: spike.end,
                    before,
                    run: 0,
                });
            }
        }
        if let Some(ep) = &mut self.open {
            if held {
                ep.run += 1;
                self.worst_hold_run_after_spike = self.worst_hold_run_after_spike.max(ep.run);
            } else {
                ep.run = 0;
            }
            if at >= ep.end
                && let Some(d) = delay
                && d <= ep.before + RECOVERED_WITHIN
            {
                self.recovery_ms.add((at - ep.end).as_nanos() as f64 * 1e-6);
                self.open = None;
            }
        }
        if let Some(d) = delay {
            self.last_delay = Some(d);
            self.delays.push(f64::from(d.as_nanos() as f32 * 1e-6));
        }
    }

    /// How many of the stream's spikes this replay has reached.
    pub(crate) fn spikes_reached(&self) -> usize {
        self.next
    }

    /// The first `count` spikes (all reached) were dropped from the front of the list.
    pub(crate) fn forget_spikes(&mut self, count: usize) {
        self.next -= count;
    }

    /// Closes the replay: a spike still open is unrecovered; inflation is computed.
    pub fn finish(&mut self) {
        if self.open.take().is_some() {
            self.unrecovered += 1;
        }
        let n = self.delays.frames;
        if n > 0 {
            let k = n.div_ceil(10);
            // Two means, as they always were computed (the figures stay bit for bit).
            let x = self.delays.sum_from(n - k) / k as f64 - self.delays.sum_first(k) / k as f64;
            self.inflation.0 += x * n as f64;
            self.inflation.1 += n;
        }
        self.delays = Blocks::default();
    }

    /// Adds another finished stream's figures.
    pub fn merge(&mut self, other: &Self) {
        self.spikes += other.spikes;
        self.unrecovered += other.unrecovered;
        self.recovery_ms.merge(&other.recovery_ms);
        self.worst_hold_run_after_spike = self
            .worst_hold_run_after_spike
            .max(other.worst_hold_run_after_spike);
        self.inflation.0 += other.inflation.0;
        self.inflation.1 += other.inflation.1;
    }

    /// The serialisable figures.
    pub fn summary(&self) -> RecoverySummary {
        RecoverySummary {
            spikes: self.spikes,
            mean_recovery_ms: self.recovery_ms.mean(),
            max_recovery_ms: self.recovery_ms.max(),
            unrecovered: self.unrecovered,
            inflation_ms: (self.inflation.1 > 0)
                .then(|| self.inflation.0 / self.inflation.1 as f64),
            worst_hold_run_after_spike: self.worst_hold_run_after_spike,
        }
    }
}

/// Values summed in blocks of consecutive frames, in bounded memory (see the module
/// documentation, "Inflation").
#[derive(Clone, Debug, Default, PartialEq)]
struct Blocks {
    /// Sums of the closed blocks, each of `size` values.
    sums: Vec<f64>,
    size: u64,
    /// The open block: its sum and how many values.
    open: (f64, u64),
    frames: u64,
}

impl Blocks {
    /// Closed blocks at which adjacent pairs merge.
    const MAX: usize = 16_384;

    fn push(&mut self, v: f64) {
        self.size = self.size.max(1);
        self.open.0 += v;
        self.open.1 += 1;
        self.frames += 1;
        if self.open.1 == self.size {
            self.sums.push(self.open.0);
            self.open = (0.0, 0);
            if self.sums.len() == Self::MAX {
                self.sums = self.sums.chunks(2).map(|p| p[0] + p[1]).collect();
                self.size *= 2;
            }
        }
    }

    /// The blocks in order, with how many values each holds.
    fn blocks(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        self.sums
            .iter()
            .map(|&s| (s, self.size))
            .chain((self.open.1 > 0).then_some(self.open))
    }

    /// The sum of the first `k` values (a cut block by its share).
    fn sum_first(&self, k: u64) -> f64 {
        let (mut total, mut left) = (0.0, k);
        for (sum, n) in self.blocks() {
            if left == 0 {
                break;
            }
            if n <= left {
                total += sum;
                left -= n;
            } else {
                total += sum * left as f64 / n as f64;
                left = 0;
            }
        }
        total
    }

    /// The sum of the values from the `from`-th on, added in order (a cut block by its share).
    fn sum_from(&self, from: u64) -> f64 {
        let (mut total, mut at) = (0.0, 0u64);
        for (sum, n) in self.blocks() {
            if at >= from {
                total += sum;
            } else if at + n > from {
                total += sum * (at + n - from) as f64 / n as f64;
            }
            at += n;
        }
        total
    }
}

#[cfg(test)]
mod block_tests {
    use super::*;

    #[test]
    fn blocks_sum_exactly_while_small_and_closely_once_merged() {
        // Exact, in the same order as a plain sum, up to MAX values.
        let v: Vec<f64> = (0..1000).map(|i| f64::from(i as f32 * 0.1f32)).collect();
        let mut b = Blocks::default();
        v.iter().for_each(|&x| b.push(x));
        assert_eq!(b.sum_first(100), v[..100].iter().sum::<f64>());
        assert_eq!(b.sum_from(900), v[900..].iter().sum::<f64>());
        // A million values: bounded, and within 0.12 % of the range per mean.
        let n = 1_000_000u64;
        let v: Vec<f64> = (0..n).map(|i| (i % 977) as f64).collect();
        let mut b = Blocks::default();
        v.iter().for_each(|&x| b.push(x));
        assert!(b.sums.len() < Blocks::MAX);
        let k = n.div_ceil(10);
        let first = b.sum_first(k) / k as f64;
        let last = b.sum_from(n - k) / k as f64;
        let exact_first = v[..k as usize].iter().sum::<f64>() / k as f64;
        let exact_last = v[(n - k) as usize..].iter().sum::<f64>() / k as f64;
        assert!(
            (first - exact_first).abs() <= 976.0 * 10.0 / 8192.0,
            "{first} {exact_first}"
        );
        assert!(
            (last - exact_last).abs() <= 976.0 * 10.0 / 8192.0,
            "{last} {exact_last}"
        );
    }
}

/// The recovery figures of one replay (the `recovery` object of `replay --json`, the
/// `recovery.*` columns of sweep results).
// `default`: a results file from a version without them still reads back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecoverySummary {
    /// Spikes and outages found in the network delay series (after the first displayed frame).
    pub spikes: u64,
    /// Mean time from a spike's end until display delay was back within 5 ms of its level
    /// before, over the recovered spikes, ms.
    pub mean_recovery_ms: Option<f64>,
    /// The longest such time, ms.
    pub max_recovery_ms: Option<f64>,
    /// Spikes whose display delay was not back before the next spike or the end.
    pub unrecovered: u64,
    /// Mean display delay of the last 10 % of frames minus the first 10 %, ms (streams
    /// weighted by their frames).
    pub inflation_ms: Option<f64>,
    /// The longest run of consecutive holds from a spike's start to its recovery.
    pub worst_hold_run_after_spike: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: i64) -> Nanos {
        Nanos::from_millis(v)
    }

    /// Packets every 50 ms with a 20 ms transit, except `extra(i)` more for packet `i`.
    fn series(n: i64, extra: impl Fn(i64) -> i64) -> Vec<(Nanos, Nanos)> {
        (0..n)
            .map(|i| (ms(50 * i + 20 + extra(i)), ms(50 * i)))
            .collect()
    }

    #[test]
    fn a_delay_spike_is_found_from_its_start_to_its_end() {
        // Packets 10..=13 delayed by 200, 150, 100, 20 ms (a queue draining).
        let extra = |i| match i {
            10 => 200,
            11 => 150,
            12 => 100,
            13 => 20,
            _ => 0,
        };
        let spikes = detect(series(40, extra), &SpikeRule::default());
        assert_eq!(
            spikes,
            vec![Spike {
                start: ms(9 * 50 + 20),
                end: ms(13 * 50 + 20 + 20),
                peak: ms(200),
            }]
        );
    }

    #[test]
    fn an_outage_is_a_gap_and_jitter_is_not_a_spike() {
        // Packets 10..=15 lost: a 350 ms gap; ±30 ms jitter elsewhere.
        let series: Vec<_> = series(40, |i| if i % 2 == 0 { 30 } else { 0 })
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !(10..=15).contains(i))
            .map(|(_, p)| p)
            .collect();
        let spikes = detect(series, &SpikeRule::default());
        assert_eq!(spikes.len(), 1, "{spikes:?}");
        assert_eq!(
            (spikes[0].start, spikes[0].end),
            (ms(9 * 50 + 20), ms(16 * 50 + 20 + 30))
        );
    }

    #[test]
    fn recovery_is_the_time_back_within_5_ms() {
        let spikes = [Spike {
            start: ms(100),
            end: ms(300),
            peak: ms(200),
        }];
        let mut r = Recovery::default();
        // Delay 100 ms, then 300 during the spike, decaying by 10 ms per 10 ms frame after it:
        // 110 ms at 490 (not yet within 5 ms), 100 ms at 500: recovered 200 ms after the end.
        for f in 0..100 {
            let at = ms(10 * f);
            let d = if at < ms(100) {
                100
            } else if at <= ms(300) {
                300
            } else {
                (300 - (10 * f - 300)).max(100)
            };
            r.frame(&spikes, at, Some(ms(d)), (150..250).contains(&(10 * f)));
        }
        r.finish();
        let s = r.summary();
        assert_eq!((s.spikes, s.unrecovered), (1, 0));
        assert_eq!(s.mean_recovery_ms, Some(200.0));
        assert_eq!(s.worst_hold_run_after_spike, 10);
        // First 10 frames at 100 ms, last 10 at 100 ms.
        assert_eq!(s.inflation_ms, Some(0.0));
    }

    #[test]
    fn a_buffer_that_stays_up_is_unrecovered_and_inflated() {
        let spikes = [Spike {
            start: ms(100),
            end: ms(200),
            peak: ms(200),
        }];
        let mut r = Recovery::default();
        for f in 0..100 {
            let at = ms(10 * f);
            r.frame(
                &spikes,
                at,
                Some(ms(if at < ms(100) { 50 } else { 250 })),
                false,
            );
        }
        r.finish();
        let s = r.summary();
        assert_eq!((s.spikes, s.unrecovered, s.mean_recovery_ms), (1, 1, None));
        assert_eq!(s.inflation_ms, Some(200.0));
    }
}
