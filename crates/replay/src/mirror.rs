//! Mirror's Snapshot Interpolation V2 (anchors.md §1), ported to be faithful to Mirror's own
//! code and unit tests (`SnapshotInterpolation.cs`, `ExponentialMovingAverage.cs`).
//!
//! Mirror keeps a timeline in the sender's time (seconds), starts it one buffer time behind the
//! first snapshot, and moves it each frame by the frame's delta time × a timescale of 0.96, 1
//! or 1.02 chosen from the drift between the newest snapshot and the timeline (averaged by an
//! EMA). With dynamic adjustment the buffer time follows the standard deviation of snapshot
//! delivery intervals. A full buffer refuses new snapshots; a snapshot with a remote time already
//! held overwrites it but counts as "not inserted". Sampling holds the oldest before the buffer,
//! the newest after it (no extrapolation) and never looks at a gap budget. Arrival times are
//! rounded to the start of the frame that processes them, as `NetworkTime.localTime` is.
//!
//! Unlike jitterlab's own policies, Mirror's timeline can step backwards (the clamp pulls it
//! toward a late snapshot's time): replays count those steps instead of hiding them.

/// Mirror's `ExponentialMovingAverage`: `alpha = 2/(n+1)`; the first value sets the average.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ema {
    alpha: f64,
    initialized: bool,
    /// The average.
    pub value: f64,
    /// The variance estimate.
    pub variance: f64,
}

impl Ema {
    /// An EMA over `n` samples. (`Ema::default()` is Mirror's `default(struct)`: alpha 0, so
    /// after its first value it never changes, which Mirror's unit tests rely on.)
    pub fn new(n: f64) -> Self {
        Self {
            alpha: 2.0 / (n + 1.0),
            ..Self::default()
        }
    }

    /// Adds a value: `d = x − value; value += alpha·d; variance = (1−alpha)(variance + alpha·d²)`.
    pub fn add(&mut self, x: f64) {
        if self.initialized {
            let d = x - self.value;
            self.value += self.alpha * d;
            self.variance = (1.0 - self.alpha) * (self.variance + self.alpha * d * d);
        } else {
            self.value = x;
            self.variance = 0.0;
            self.initialized = true;
        }
    }

    /// The standard deviation.
    pub fn std(&self) -> f64 {
        self.variance.sqrt()
    }
}

/// `SnapshotInterpolation.Timescale`: catch up above the positive threshold, slow down below
/// the negative one (both absolute, in seconds).
pub fn timescale(drift: f64, catchup: f64, slowdown: f64, negative: f64, positive: f64) -> f64 {
    if drift > positive {
        1.0 + catchup
    } else if drift < negative {
        1.0 - slowdown
    } else {
        1.0
    }
}

/// `SnapshotInterpolation.TimelineClamp`: keep the timeline within one buffer time of where it
/// should be behind `latest`.
pub fn timeline_clamp(timeline: f64, buffer_time: f64, latest: f64) -> f64 {
    let target = latest - buffer_time;
    timeline.clamp(target - buffer_time, target + buffer_time)
}

/// `SnapshotInterpolation.DynamicAdjustment`: the buffer multiplier from delivery jitter.
pub fn dynamic_adjustment(send_interval: f64, delivery_std: f64, tolerance: f64) -> f64 {
    (send_interval + delivery_std) / send_interval + tolerance
}

/// `SnapshotInterpolationSettings` plus the send rate, with Mirror's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct MirrorConfig {
    /// `NetworkManager.sendRate`, Hz (60).
    pub send_rate: f64,
    /// `bufferTimeMultiplier` (2), the starting multiplier when dynamic adjustment is on.
    pub buffer_multiplier: f64,
    /// `bufferLimit` (32): a full buffer refuses new snapshots.
    pub buffer_limit: usize,
    /// `catchupNegativeThreshold` (−1), in send intervals.
    pub catchup_negative_threshold: f64,
    /// `catchupPositiveThreshold` (+1), in send intervals.
    pub catchup_positive_threshold: f64,
    /// `catchupSpeed` (0.02).
    pub catchup_speed: f64,
    /// `slowdownSpeed` (0.04).
    pub slowdown_speed: f64,
    /// `driftEmaDuration` (1 s).
    pub drift_ema_duration: f64,
    /// `dynamicAdjustment` (true).
    pub dynamic_adjustment: bool,
    /// `dynamicAdjustmentTolerance` (1).
    pub dynamic_adjustment_tolerance: f64,
    /// `deliveryTimeEmaDuration` (2 s).
    pub delivery_time_ema_duration: f64,
}

impl Default for MirrorConfig {
    fn default() -> Self {
        Self {
            send_rate: 60.0,
            buffer_multiplier: 2.0,
            buffer_limit: 32,
            catchup_negative_threshold: -1.0,
            catchup_positive_threshold: 1.0,
            catchup_speed: 0.02,
            slowdown_speed: 0.04,
            drift_ema_duration: 1.0,
            dynamic_adjustment: true,
            dynamic_adjustment_tolerance: 1.0,
            delivery_time_ema_duration: 2.0,
        }
    }
}

impl MirrorConfig {
    /// `1 / send_rate`, seconds.
    pub fn send_interval(&self) -> f64 {
        1.0 / self.send_rate
    }
}

/// One snapshot in Mirror's buffer (times in seconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Snap {
    /// The sender's time (`remoteTime`).
    pub remote: f64,
    /// The receiver's frame time when it was processed (`localTime`).
    pub local: f64,
    /// The caller's sample index.
    pub idx: u32,
}

/// What `insert` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    /// Inserted.
    Yes,
    /// The remote time was already held: its value was overwritten, "not inserted".
    Overwrote,
    /// The buffer was full: refused.
    Refused,
}

/// Mirror's interpolation state for one connection.
#[derive(Clone, Debug)]
pub struct Mirror {
    config: MirrorConfig,
    /// Sorted by remote time (Mirror's `SortedList`).
    pub buffer: Vec<Snap>,
    /// `localTimeline`, seconds on the sender's clock.
    pub timeline: f64,
    /// `localTimescale`.
    pub timescale: f64,
    /// `driftEma`.
    pub drift_ema: Ema,
    /// `deliveryTimeEma`.
    pub delivery_ema: Ema,
    /// `bufferTimeMultiplier`, adjusted dynamically.
    pub multiplier: f64,
}

impl Mirror {
    /// A connection's state with Mirror's EMAs (n = send rate × duration).
    pub fn new(config: MirrorConfig) -> Self {
        Self {
            drift_ema: Ema::new(config.send_rate * config.drift_ema_duration),
            delivery_ema: Ema::new(config.send_rate * config.delivery_time_ema_duration),
            multiplier: config.buffer_multiplier,
            timeline: 0.0,
            timescale: 1.0,
            buffer: Vec::new(),
            config,
        }
    }

    /// `bufferTime = sendInterval · bufferTimeMultiplier`.
    pub fn buffer_time(&self) -> f64 {
        self.config.send_interval() * self.multiplier
    }

    /// `InsertIfNotExists`.
    pub fn insert_if_not_exists(&mut self, snap: Snap) -> Inserted {
        if self.buffer.len() >= self.config.buffer_limit {
            return Inserted::Refused;
        }
        match self
            .buffer
            .binary_search_by(|s| s.remote.total_cmp(&snap.remote))
        {
            Ok(i) => {
                self.buffer[i] = snap;
                Inserted::Overwrote
            }
            Err(i) => {
                self.buffer.insert(i, snap);
                Inserted::Yes
            }
        }
    }

    /// `OnTimeSnapshot`: dynamic adjustment, then `InsertAndAdjust`.
    pub fn on_snapshot(&mut self, snap: Snap) -> Inserted {
        let interval = self.config.send_interval();
        if self.config.dynamic_adjustment {
            // Before the insert: uses the standard deviation of earlier snapshots.
            self.multiplier = dynamic_adjustment(
                interval,
                self.delivery_ema.std(),
                self.config.dynamic_adjustment_tolerance,
            );
        }
        let buffer_time = self.buffer_time();
        if self.buffer.is_empty() {
            self.timeline = snap.remote - buffer_time;
        }
        let inserted = self.insert_if_not_exists(snap);
        if inserted != Inserted::Yes {
            return inserted;
        }
        let n = self.buffer.len();
        if n >= 2 {
            // The last two by remote order, as Mirror does (inaccurate when out of order).
            self.delivery_ema
                .add(self.buffer[n - 1].local - self.buffer[n - 2].local);
        }
        // `latest` is the snapshot just inserted, not the newest held.
        let latest = snap.remote;
        self.timeline = timeline_clamp(self.timeline, buffer_time, latest);
        self.drift_ema.add(latest - self.timeline);
        let drift = self.drift_ema.value - buffer_time;
        self.timescale = timescale(
            drift,
            self.config.catchup_speed,
            self.config.slowdown_speed,
            interval * self.config.catchup_negative_threshold,
            interval * self.config.catchup_positive_threshold,
        );
        Inserted::Yes
    }

    /// `Sample`: `(from, to, t)` indices into the buffer and the factor, holding the oldest
    /// before the buffer and the newest after it.
    pub fn sample(&self, timeline: f64) -> (usize, usize, f64) {
        let b = &self.buffer;
        for i in 0..b.len().saturating_sub(1) {
            let (a, c) = (b[i].remote, b[i + 1].remote);
            if a <= timeline && timeline <= c {
                let t = if c > a {
                    ((timeline - a) / (c - a)).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                return (i, i + 1, t);
            }
        }
        match b.first() {
            Some(first) if timeline < first.remote => (0, 0, 0.0),
            Some(_) => (b.len() - 1, b.len() - 1, 0.0),
            None => (0, 0, 0.0),
        }
    }

    /// `StepInterpolation` for a frame of `dt` seconds: advance the timeline (only with
    /// something buffered), sample, and remove what lies before `from`. Returns the snapshots
    /// shown and the factor, or `None` for an empty buffer.
    pub fn step(&mut self, dt: f64) -> Option<(Snap, Snap, f64)> {
        if self.buffer.is_empty() {
            return None;
        }
        self.timeline += dt * self.timescale;
        let (from, to, t) = self.sample(self.timeline);
        let (a, b) = (self.buffer[from], self.buffer[to]);
        self.buffer.drain(..from);
        Some((a, b, t))
    }
}

#[cfg(test)]
mod tests {
    //! Mirror's own test vectors (anchors.md §1, `SnapshotInterpolationTests.cs`,
    //! `ExponentialMovingAverageTests.cs`).

    use super::*;

    fn near(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-4, "{a} vs {b}");
    }

    #[test]
    fn mirror_vector_1_timescale() {
        let ts = |d| timescale(d, 0.02, 0.04, -0.10, 0.10);
        assert_eq!(
            [ts(0.0), ts(-0.09), ts(0.09), ts(-0.11), ts(0.11)],
            [1.0, 1.0, 1.0, 0.96, 1.02]
        );
    }

    #[test]
    fn mirror_vector_2_timeline_clamp() {
        let c = |tl| timeline_clamp(tl, 0.5, 1.0);
        assert_eq!(
            [c(0.0), c(0.5), c(1.0), c(-1.0), c(2.0)],
            [0.0, 0.5, 1.0, 0.0, 1.0]
        );
    }

    #[test]
    fn mirror_vector_3_dynamic_adjustment() {
        near(dynamic_adjustment(0.100, 0.000, 0.5), 1.5);
        near(dynamic_adjustment(0.100, 0.010, 0.5), 1.6);
    }

    #[test]
    fn mirror_vector_4_insert_if_not_exists() {
        let mut m = Mirror::new(MirrorConfig::default());
        for i in 0..64 {
            m.insert_if_not_exists(Snap {
                remote: f64::from(i),
                local: 0.0,
                idx: 0,
            });
        }
        assert_eq!(m.buffer.len(), 32);
        let mut m = Mirror::new(MirrorConfig::default());
        let s = Snap {
            remote: 1.0,
            local: 0.0,
            idx: 0,
        };
        assert_eq!(m.insert_if_not_exists(s), Inserted::Yes);
        assert_eq!(m.insert_if_not_exists(s), Inserted::Overwrote);
    }

    /// A Mirror whose buffer time is fixed at 3 s, thresholds 0, and drift EMA over `n`.
    fn fixed_three(drift_n: f64) -> Mirror {
        let config = MirrorConfig {
            send_rate: 1.0,
            buffer_multiplier: 3.0,
            dynamic_adjustment: false,
            catchup_negative_threshold: 0.0,
            catchup_positive_threshold: 0.0,
            ..MirrorConfig::default()
        };
        let mut m = Mirror::new(config);
        m.drift_ema = Ema::new(drift_n);
        m
    }

    #[test]
    fn mirror_vector_5_average_drift() {
        for (order, want) in [([2.0, 3.0, 5.0], 4.75), ([2.0, 5.0, 3.0], 4.25)] {
            let mut m = fixed_three(3.0);
            for r in order {
                m.on_snapshot(Snap {
                    remote: r,
                    local: 0.0,
                    idx: 0,
                });
            }
            near(m.timeline, -1.0);
            near(m.drift_ema.value, want);
        }
    }

    #[test]
    fn mirror_vector_6_drift_ema_value_and_std() {
        let mut m = fixed_three(2.0);
        for (r, l) in [(2.0, 3.0), (3.0, 4.0), (5.0, 6.0)] {
            m.on_snapshot(Snap {
                remote: r,
                local: l,
                idx: 0,
            });
        }
        near(m.drift_ema.value, 3.0 + 2.2222);
        near(m.drift_ema.std(), 1.1331);
    }

    #[test]
    fn mirror_vector_7_sample() {
        let mut m = Mirror::new(MirrorConfig::default());
        for r in [10.0, 20.0, 30.0] {
            m.insert_if_not_exists(Snap {
                remote: r,
                local: 0.0,
                idx: 0,
            });
        }
        assert_eq!(m.sample(9.0), (0, 0, 0.0));
        assert_eq!(m.sample(22.5), (1, 2, 0.25));
        assert_eq!(m.sample(31.0), (2, 2, 0.0));
    }

    #[test]
    fn mirror_vector_8_step() {
        // bufferTime 30 (timeline starts at −20), default (alpha 0) EMAs.
        let build = || {
            let config = MirrorConfig {
                send_rate: 1.0,
                buffer_multiplier: 30.0,
                dynamic_adjustment: false,
                ..MirrorConfig::default()
            };
            let mut m = Mirror::new(config);
            m.drift_ema = Ema::default();
            m.delivery_ema = Ema::default();
            for (i, r) in [10.0, 20.0, 30.0].into_iter().enumerate() {
                m.on_snapshot(Snap {
                    remote: r,
                    local: 0.0,
                    idx: i as u32,
                });
            }
            m
        };
        let values = [42.0, 43.0, 44.0];
        let value = |(a, b, t): (Snap, Snap, f64)| {
            let (va, vb) = (values[a.idx as usize], values[b.idx as usize]);
            va + (vb - va) * t
        };
        let mut m = build();
        near(m.timeline, -20.0);
        near(value(m.step(35.0).unwrap()), 42.5);
        let mut m = build();
        near(value(m.step(45.0).unwrap()), 43.5);
        let remotes: Vec<f64> = m.buffer.iter().map(|s| s.remote).collect();
        assert_eq!(remotes, vec![20.0, 30.0]);
    }

    #[test]
    fn mirror_vector_9_ema() {
        let mut e = Ema::new(10.0);
        e.add(5.0);
        e.add(6.0);
        near(e.value, 5.1818);
        near(e.variance, 0.1487);
        e.add(7.0);
        near(e.variance, 0.6134);
        let mut e = Ema::new(10.0);
        for x in [5.0, 600.0, 70.0] {
            e.add(x);
        }
        near(e.std(), 208.2470);
    }
}
