//! WebRTC NetEq's delay estimation (anchors.md §4), ported with NetEq's fixed-point arithmetic
//! and checked against its unit-test vectors: the relative-arrival-delay history, the Q30
//! histogram with its start-up forget factor, the underrun optimizer (0.95 quantile of
//! 500 ms maxima, 20 ms buckets), the reorder optimizer and the delay manager that combines them.
//!
//! Time is an argument (`now_ms`, what NetEq's 10 ms `TickTimer` would read). NetEq's playout
//! decisions (accelerate, preemptive expand, expand, merge) for discrete frames are in
//! [`crate::decision`]; for snapshots the `neteq` policy applies the target delay by
//! time-stretching.

use std::collections::VecDeque;

/// NetEq's `Histogram`: probabilities in Q30, forget factor in Q15.
#[derive(Clone, Debug)]
pub struct Histogram {
    buckets: Vec<i32>,
    forget_factor: i32,
    base_forget_factor: i32,
    add_count: i32,
    start_forget_weight: Option<f64>,
}

impl Histogram {
    /// `num_buckets` buckets, steady-state forget factor `forget_factor` (Q15).
    pub fn new(num_buckets: usize, forget_factor: i32, start_forget_weight: Option<f64>) -> Self {
        let mut h = Self {
            buckets: vec![0; num_buckets],
            forget_factor: 0,
            base_forget_factor: forget_factor,
            add_count: 0,
            start_forget_weight,
        };
        h.reset();
        h
    }

    /// `Reset`: an exponentially decaying distribution, `buckets[i] ≈ 0.5^(i+1)` in Q30, and
    /// a forget factor of 0 so the first samples adapt fast.
    pub fn reset(&mut self) {
        let mut temp_prob: u16 = 0x4002;
        for b in &mut self.buckets {
            temp_prob >>= 1;
            *b = i32::from(temp_prob) << 16;
        }
        self.forget_factor = 0;
        self.add_count = 0;
    }

    /// The bucket probabilities (Q30).
    pub fn buckets(&self) -> &[i32] {
        &self.buckets
    }

    /// `Add`: forget, add `1 − f` at `value`, correct rounding on the first buckets, then move
    /// the forget factor toward its steady state.
    pub fn add(&mut self, value: usize) {
        let mut sum: i64 = 0;
        for b in &mut self.buckets {
            *b = ((i64::from(*b) * i64::from(self.forget_factor)) >> 15) as i32;
            sum += i64::from(*b);
        }
        let inc = (32768 - self.forget_factor) << 15;
        self.buckets[value] += inc;
        sum += i64::from(inc);
        sum -= 1 << 30;
        if sum != 0 {
            let flip: i64 = if sum > 0 { -1 } else { 1 };
            for b in &mut self.buckets {
                let correction = flip * sum.abs().min(i64::from(*b >> 4));
                *b += correction as i32;
                sum += correction;
                if sum == 0 {
                    break;
                }
            }
        }
        self.add_count += 1;
        match self.start_forget_weight {
            Some(w) => {
                if self.forget_factor != self.base_forget_factor {
                    let f = (f64::from(1 << 15) * (1.0 - w / f64::from(self.add_count + 1))) as i32;
                    self.forget_factor = f.clamp(0, self.base_forget_factor);
                }
            }
            None => {
                self.forget_factor += (self.base_forget_factor - self.forget_factor + 3) >> 2;
            }
        }
    }

    /// `Quantile`: the first bucket where the probability of the tail beyond it drops to
    /// `1 − probability` (Q30).
    pub fn quantile(&self, probability: i32) -> usize {
        let inverse = (1i64 << 30) - i64::from(probability);
        let mut index = 0;
        let mut sum: i64 = (1 << 30) - i64::from(self.buckets[0]);
        while sum > inverse && index < self.buckets.len() - 1 {
            index += 1;
            sum -= i64::from(self.buckets[index]);
        }
        index
    }
}

const BUCKET_MS: i32 = 20;
const DELAY_BUCKETS: usize = 100;

/// `UnderrunOptimizer`: every `resample_interval_ms`, the largest relative delay seen in the
/// interval goes into the histogram; the optimal delay is `(1 + quantile bucket) · 20 ms`.
#[derive(Clone, Debug)]
pub struct UnderrunOptimizer {
    histogram: Histogram,
    quantile: i32,
    resample_interval_ms: Option<i64>,
    stopwatch_start: Option<i64>,
    max_in_interval: i32,
    optimal: Option<i32>,
}

impl UnderrunOptimizer {
    /// A new optimizer (quantile Q30, forget factor Q15).
    pub fn new(
        quantile: i32,
        forget_factor: i32,
        start_forget_weight: Option<f64>,
        resample_interval_ms: Option<i64>,
    ) -> Self {
        Self {
            histogram: Histogram::new(DELAY_BUCKETS, forget_factor, start_forget_weight),
            quantile,
            resample_interval_ms,
            stopwatch_start: None,
            max_in_interval: 0,
            optimal: None,
        }
    }

    /// `Update` with a packet's relative delay at time `now_ms`.
    pub fn update(&mut self, relative_delay_ms: i32, now_ms: i64) {
        let sample = match self.resample_interval_ms {
            Some(interval) => {
                let start = *self.stopwatch_start.get_or_insert(now_ms);
                let mut out = None;
                if now_ms - start > interval {
                    out = Some(self.max_in_interval);
                    self.stopwatch_start = Some(now_ms);
                    self.max_in_interval = 0;
                }
                self.max_in_interval = self.max_in_interval.max(relative_delay_ms);
                out
            }
            None => Some(relative_delay_ms),
        };
        let Some(sample) = sample else { return };
        let index = (sample / BUCKET_MS) as usize;
        if index < DELAY_BUCKETS {
            self.histogram.add(index);
        }
        self.optimal = Some((1 + self.histogram.quantile(self.quantile) as i32) * BUCKET_MS);
    }

    /// The optimal delay in ms, once the histogram has been updated.
    pub fn optimal_delay_ms(&self) -> Option<i32> {
        self.optimal
    }
}

/// `ReorderOptimizer`: the delay that minimises `delay cost + loss cost` for reordered packets.
#[derive(Clone, Debug)]
pub struct ReorderOptimizer {
    histogram: Histogram,
    ms_per_loss_percent: i64,
    optimal: Option<i32>,
}

impl ReorderOptimizer {
    /// A new optimizer (forget factor Q15).
    pub fn new(
        forget_factor: i32,
        ms_per_loss_percent: i64,
        start_forget_weight: Option<f64>,
    ) -> Self {
        Self {
            histogram: Histogram::new(DELAY_BUCKETS, forget_factor, start_forget_weight),
            ms_per_loss_percent,
            optimal: None,
        }
    }

    /// `Update`: reordered packets add their delay bucket, in-order ones bucket 0.
    pub fn update(&mut self, relative_delay_ms: i32, reordered: bool, base_delay_ms: i32) {
        let index = if reordered {
            (relative_delay_ms / BUCKET_MS) as usize
        } else {
            0
        };
        if index < DELAY_BUCKETS {
            self.histogram.add(index);
        }
        let mut loss: i64 = 1 << 30;
        let mut min_cost = i64::MAX;
        let mut best = 0;
        for (i, &b) in self.histogram.buckets().iter().enumerate() {
            loss -= i64::from(b);
            let delay = i64::from((i as i32 * BUCKET_MS - base_delay_ms).max(0)) << 30;
            let cost = delay + 100 * self.ms_per_loss_percent * loss;
            if cost < min_cost {
                min_cost = cost;
                best = i as i32;
            }
            if loss == 0 {
                break;
            }
        }
        self.optimal = Some((1 + best) * BUCKET_MS);
    }

    /// The optimal delay in ms.
    pub fn optimal_delay_ms(&self) -> Option<i32> {
        self.optimal
    }
}

/// `DelayManager::Config` defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct DelayConfig {
    /// 0.95.
    pub quantile: f64,
    /// 0.983.
    pub forget_factor: f64,
    /// 2.
    pub start_forget_weight: Option<f64>,
    /// 500 ms.
    pub resample_interval_ms: Option<i64>,
    /// true.
    pub use_reorder_optimizer: bool,
    /// 0.9993.
    pub reorder_forget_factor: f64,
    /// 20.
    pub ms_per_loss_percent: i64,
}

impl Default for DelayConfig {
    fn default() -> Self {
        Self {
            quantile: 0.95,
            forget_factor: 0.983,
            start_forget_weight: Some(2.0),
            resample_interval_ms: Some(500),
            use_reorder_optimizer: true,
            reorder_forget_factor: 0.9993,
            ms_per_loss_percent: 20,
        }
    }
}

/// NetEq's starting target, before any estimate: 80 ms.
pub const START_DELAY_MS: i32 = 80;

/// `DelayManager`: the underrun optimizer's target, raised by the reorder optimizer's.
#[derive(Clone, Debug)]
pub struct DelayManager {
    underrun: UnderrunOptimizer,
    reorder: Option<ReorderOptimizer>,
    target_ms: i32,
}

impl DelayManager {
    /// A delay manager with `config`.
    pub fn new(config: &DelayConfig) -> Self {
        Self {
            underrun: UnderrunOptimizer::new(
                (f64::from(1 << 30) * config.quantile) as i32,
                (f64::from(1 << 15) * config.forget_factor) as i32,
                config.start_forget_weight,
                config.resample_interval_ms,
            ),
            reorder: config.use_reorder_optimizer.then(|| {
                ReorderOptimizer::new(
                    (f64::from(1 << 15) * config.reorder_forget_factor) as i32,
                    config.ms_per_loss_percent,
                    config.start_forget_weight,
                )
            }),
            target_ms: START_DELAY_MS,
        }
    }

    /// `Update` with a packet's relative arrival delay, whether it was reordered, at `now_ms`.
    pub fn update(&mut self, arrival_delay_ms: i32, reordered: bool, now_ms: i64) {
        if self.reorder.is_none() || !reordered {
            self.underrun.update(arrival_delay_ms, now_ms);
        }
        self.target_ms = self.underrun.optimal_delay_ms().unwrap_or(START_DELAY_MS);
        if let Some(r) = self.reorder.as_mut() {
            r.update(arrival_delay_ms, reordered, self.target_ms);
            self.target_ms = self.target_ms.max(r.optimal_delay_ms().unwrap_or(0));
        }
    }

    /// `TargetDelayMs`.
    pub fn target_delay_ms(&self) -> i32 {
        self.target_ms
    }
}

#[derive(Clone, Copy, Debug)]
struct Arrival {
    rtp_ms: i64,
    length_ms: i64,
}

/// `PacketArrivalHistory`: relative arrival delay against the in-order packet with the
/// smallest `arrival − rtp` in a window of send time. Times in ms.
#[derive(Clone, Debug)]
pub struct ArrivalHistory {
    window_ms: i64,
    history: VecDeque<Arrival>,
    newest_rtp_ms: Option<i64>,
    /// In-order packets' `arrival − rtp`, as monotonic deques of (rtp_ms, value).
    min: VecDeque<(i64, i64)>,
    max: VecDeque<(i64, i64)>,
}

impl ArrivalHistory {
    /// A history over `window_ms` of send time (NetEq uses 2000 ms).
    pub fn new(window_ms: i64) -> Self {
        Self {
            window_ms,
            history: VecDeque::new(),
            newest_rtp_ms: None,
            min: VecDeque::new(),
            max: VecDeque::new(),
        }
    }

    /// Inserts a packet sent at `rtp_ms` (media time) covering `length_ms`, arriving at
    /// `arrival_ms`. Refused (false) when older than the window or overlapping one held.
    pub fn insert(&mut self, rtp_ms: i64, length_ms: i64, arrival_ms: i64) -> bool {
        if let Some(newest) = self.newest_rtp_ms
            && rtp_ms + self.window_ms < newest
        {
            return false;
        }
        let end = rtp_ms + length_ms.max(1);
        if self
            .history
            .iter()
            .any(|p| rtp_ms < p.rtp_ms + p.length_ms.max(1) && p.rtp_ms < end)
        {
            return false;
        }
        let newest = self.newest_rtp_ms.is_none_or(|n| rtp_ms >= n);
        self.history.push_back(Arrival { rtp_ms, length_ms });
        if newest {
            self.newest_rtp_ms = Some(rtp_ms);
            let v = arrival_ms - rtp_ms;
            while self.min.back().is_some_and(|&(_, m)| m >= v) {
                self.min.pop_back();
            }
            self.min.push_back((rtp_ms, v));
            while self.max.back().is_some_and(|&(_, m)| m <= v) {
                self.max.pop_back();
            }
            self.max.push_back((rtp_ms, v));
        }
        let newest = self.newest_rtp_ms.unwrap_or(rtp_ms);
        let cut = newest - self.window_ms;
        while self.history.front().is_some_and(|p| p.rtp_ms < cut) {
            self.history.pop_front();
        }
        while self.min.front().is_some_and(|&(r, _)| r < cut) {
            self.min.pop_front();
        }
        while self.max.front().is_some_and(|&(r, _)| r < cut) {
            self.max.pop_front();
        }
        true
    }

    /// Whether `rtp_ms` is the newest send time inserted.
    pub fn is_newest(&self, rtp_ms: i64) -> bool {
        self.newest_rtp_ms.is_none_or(|n| rtp_ms >= n)
    }

    /// The relative delay of a packet sent at `rtp_ms` seen at `now_ms`:
    /// `max(0, (arr − arr_ref) − (rtp − rtp_ref))`.
    pub fn delay_ms(&self, rtp_ms: i64, now_ms: i64) -> i64 {
        match self.min.front() {
            Some(&(_, reference)) => ((now_ms - rtp_ms) - reference).max(0),
            None => 0,
        }
    }

    /// The largest relative delay among the in-order packets in the window.
    pub fn max_delay_ms(&self) -> i64 {
        match (self.max.front(), self.min.front()) {
            (Some(&(_, hi)), Some(&(_, lo))) => (hi - lo).max(0),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    //! NetEq's own unit-test vectors (anchors.md §4).

    use super::*;

    /// `delay_manager_unittest.cc`: 50 updates of 0 ms, 20 ms apart → target 20 ms.
    #[test]
    fn neteq_delay_manager_updates_of_zero_give_20ms() {
        let mut dm = DelayManager::new(&DelayConfig::default());
        assert_eq!(dm.target_delay_ms(), START_DELAY_MS);
        for i in 0..50 {
            dm.update(0, false, i * 20);
        }
        assert_eq!(dm.target_delay_ms(), 20);
    }

    /// `underrun_optimizer_unittest.cc` ResamplePacketDelays: q 0.95 (Q30 1020054733), forget
    /// 0.9993 (Q15 32745), no start weight, 500 ms resampling.
    #[test]
    fn neteq_underrun_optimizer_resamples_the_interval_maximum() {
        let mut u = UnderrunOptimizer::new(1_020_054_733, 32_745, None, Some(500));
        for d in (0..500).step_by(20) {
            u.update(d, 0);
            assert_eq!(u.optimal_delay_ms(), None);
        }
        u.update(0, 510);
        assert_eq!(u.optimal_delay_ms(), Some(500));
    }

    /// `histogram_unittest.cc`-style check: the sum stays 1 in Q30 and the start-up forget
    /// factor sequence is 0, 0, 1/3, 1/2, … → base (start weight 2).
    #[test]
    fn neteq_histogram_keeps_unit_mass() {
        let mut h = Histogram::new(100, 32_211, Some(2.0));
        for v in [0, 3, 3, 7, 1, 0, 99] {
            h.add(v);
            assert_eq!(
                h.buckets().iter().map(|&b| i64::from(b)).sum::<i64>(),
                1 << 30
            );
        }
        let mut h = Histogram::new(10, 32_211, Some(2.0));
        h.add(3);
        assert_eq!(
            h.quantile(1 << 29),
            3,
            "the first add replaces the reset distribution"
        );
    }

    fn history_run(steps: &[(i64, i64)]) -> (ArrivalHistory, Vec<i64>) {
        // (time step ms, timestamp delta ms); timestamps advance only with positive deltas.
        let mut h = ArrivalHistory::new(1000);
        let (mut now, mut ts) = (0i64, 1_000_000i64);
        let mut out = Vec::new();
        for &(dt, dts) in steps {
            now += dt;
            let t = ts + dts;
            if dts > 0 {
                ts = t;
            }
            assert!(h.insert(t, 20, now));
            assert_eq!(h.is_newest(t), dts >= 0);
            out.push(h.delay_ms(t, now));
        }
        (h, out)
    }

    /// `packet_arrival_history_unittest.cc` RelativeArrivalDelay.
    #[test]
    fn neteq_arrival_history_relative_delay() {
        let (h, d) = history_run(&[
            (0, 0),
            (20, 20),
            (40, 20),
            (0, -60),
            (40, 20),
            (0, 80),
            (40, 20),
        ]);
        assert_eq!(d, vec![0, 0, 20, 80, 40, 0, 20]);
        assert_eq!(h.max_delay_ms(), 80);
    }

    /// `packet_arrival_history_unittest.cc` ReorderedPackets.
    #[test]
    fn neteq_arrival_history_reordered_packets() {
        let (h, d) = history_run(&[(0, 0), (0, -80), (0, -20), (80, 20)]);
        assert_eq!(d, vec![0, 80, 20, 60]);
        assert_eq!(h.max_delay_ms(), 60);
    }

    /// `packet_arrival_history_unittest.cc` MaxHistorySize, OldPacket, Duplicate, Overlapping.
    #[test]
    fn neteq_arrival_history_window_and_refusals() {
        let (h, d) = history_run(&[(0, 0), (40, 20), (1020, 1020)]);
        assert_eq!(d, vec![0, 20, 0]);
        assert_eq!(h.max_delay_ms(), 0);
        let mut h = ArrivalHistory::new(1000);
        assert!(h.insert(5000, 20, 0));
        assert!(!h.insert(5000 - 1000 - 1, 20, 0), "older than the window");
        assert!(h.insert(5020, 20, 20));
        assert!(!h.insert(5000, 20, 40), "duplicate");
        assert!(!h.insert(5030, 10, 40), "overlapping");
    }
}
