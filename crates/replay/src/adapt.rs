//! Adaptive delay: a [`Controller`] (one per adaptive preset, in `policy/`) proposes a target
//! delay from what has arrived; the applier moves the playout delay toward it, at once or by time-scaling, and keeps the rendered
//! timeline from ever stepping backwards (C3, C18).

use jitterlab_capture::{Nanos, Sample};

use crate::engine::Applied;
use crate::policy::Apply;

/// The send interval assumed before two samples have arrived (20 Hz, the seeds' typical rate).
pub(crate) const DEFAULT_INTERVAL: Nanos = Nanos::from_millis(50);

/// Estimates the send interval as the median per-tick send-time step of the first samples.
#[derive(Clone, Debug)]
pub(crate) struct IntervalEstimate {
    given: Option<Nanos>,
    last: Option<(i64, Nanos)>,
    steps: Vec<i64>,
    value: Option<Nanos>,
}

impl IntervalEstimate {
    const SAMPLES: usize = 31;

    pub(crate) fn new(given: Option<Nanos>) -> Self {
        Self {
            given,
            last: None,
            steps: Vec::new(),
            value: None,
        }
    }

    pub(crate) fn observe(&mut self, s: &Sample) {
        if self.given.is_some() || self.steps.len() >= Self::SAMPLES {
            return;
        }
        if let Some((seq, send)) = self.last
            && s.seq > seq
            && s.send > send
        {
            self.steps.push((s.send - send).as_nanos() / (s.seq - seq));
            let mut sorted = self.steps.clone();
            sorted.sort_unstable();
            self.value = Some(Nanos(sorted[sorted.len() / 2]));
        }
        if self.last.is_none_or(|(seq, _)| s.seq > seq) {
            self.last = Some((s.seq, s.send));
        }
    }

    pub(crate) fn get(&self) -> Nanos {
        self.given.or(self.value).unwrap_or(DEFAULT_INTERVAL)
    }
}

/// Moves the playout delay toward the wanted one and keeps the timeline monotone.
#[derive(Clone, Debug)]
pub(crate) struct Applier {
    apply: Apply,
    delay: Option<Nanos>,
    last_at: Option<Nanos>,
    last_target: Option<Nanos>,
}

impl Applier {
    pub(crate) fn new(apply: Apply) -> Self {
        Self {
            apply,
            delay: None,
            last_at: None,
            last_target: None,
        }
    }

    /// At local time `at` with sender-clock `now`, applies `wanted` and returns the result.
    pub(crate) fn step(&mut self, at: Nanos, now: Nanos, wanted: Nanos) -> Applied {
        let mut scaled = false;
        let delay = match (self.apply, self.delay, self.last_at) {
            (Apply::Stretch { max_rate }, Some(d), Some(last)) => {
                let room = Nanos::from_secs_f64((at - last).as_secs_f64() * max_rate);
                let change = (wanted - d).max(-room).min(room);
                scaled = change != Nanos::ZERO;
                d + change
            }
            _ => wanted,
        };
        self.delay = Some(delay);
        self.last_at = Some(at);
        let mut target = now - delay;
        let mut frozen = false;
        if let Some(prev) = self.last_target
            && target < prev
        {
            // Never step backwards: hold the timeline until real time catches up.
            target = prev;
            frozen = true;
        }
        self.last_target = Some(target);
        Applied {
            delay,
            target,
            frozen,
            scaled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Controller;
    use crate::policy::{DelayModel, Policy};

    /// The policy's controller and how it applies targets.
    fn adaptive(policy: &Policy) -> (Box<dyn Controller>, Apply) {
        match policy.delay_model() {
            DelayModel::Adaptive { controller, apply } => (controller, apply),
            _ => panic!("{policy} is not adaptive"),
        }
    }

    fn sample(seq: i64, send_ms: i64, arr_ms: i64) -> Sample {
        Sample::new(
            0,
            seq,
            Nanos::from_millis(send_ms),
            Nanos::from_millis(arr_ms),
        )
    }

    /// C16, C17 with seed 003's numbers: 20 Hz, delay = 2·50 ms + 3·J, clamped to [50, 300] ms.
    #[test]
    fn c17_jitter_policy_is_a_interval_plus_k_j() {
        let policy: Policy = "jitter".parse().unwrap();
        let mut c = adaptive(&policy).0;
        assert_eq!(
            c.target(Nanos::ZERO),
            Nanos::from_millis(100),
            "2·I with J = 0"
        );
        // Arrivals 0/20/45/60 ms for sends 0/20/40/60: J = 0.3125, then 0.60546875 ms.
        for (i, arr) in [0, 20, 45, 60].into_iter().enumerate() {
            c.on_arrival(&sample(i as i64, i as i64 * 20, arr));
        }
        // The interval is estimated from the sends: 20 ms.
        let want = 2.0 * 20.0 + 3.0 * 0.60546875;
        assert!((c.target(Nanos::ZERO).as_millis_f64() - want).abs() < 1e-6);
        // Huge jitter clamps at 300 ms.
        for i in 4..200 {
            c.on_arrival(&sample(
                i,
                i * 20,
                i * 20 + if i % 2 == 0 { 0 } else { 500 },
            ));
        }
        assert_eq!(c.target(Nanos::ZERO), Nanos::from_millis(300));
    }

    /// C18: the quantile policy re-evaluates only every `every`, and its delay covers the q
    /// quantile of recent delay variation plus one interval.
    #[test]
    fn c18_quantile_policy_evaluates_at_a_low_rate() {
        let policy: Policy = "quantile:q=0.9,every=500ms,window=10s,interval=50ms"
            .parse()
            .unwrap();
        let mut c = adaptive(&policy).0;
        // Variation 0..=9 ms cycling: the 90 % quantile is 8 ms (10 values, rank 9).
        for i in 0..40 {
            c.on_arrival(&sample(i, i * 50, i * 50 + (i % 10)));
        }
        let first = c.target(Nanos::from_millis(2000));
        assert_eq!(first, Nanos::from_millis(50 + 8));
        // Larger variation arrives, but before `every` has passed nothing changes.
        for i in 40..80 {
            c.on_arrival(&sample(i, i * 50, i * 50 + 10 * (i % 10)));
        }
        assert_eq!(c.target(Nanos::from_millis(2100)), first);
        // All 80 in the window: 0 ×8, 1..9 ×4, 10..90 ×4; the 72nd smallest is 70 ms.
        assert_eq!(
            c.target(Nanos::from_millis(2500)),
            Nanos::from_millis(50 + 70)
        );
    }

    /// C18: stretching changes the delay by at most max_rate·dt, so the timeline advances at a
    /// speed within [1 − r, 1 + r] and never steps back; jumping freezes instead of stepping back.
    #[test]
    fn c18_stretch_limits_the_rate_and_jump_never_steps_back() {
        let policy: Policy = "jitter:apply=stretch:max_rate=5%".parse().unwrap();
        let mut a = Applier::new(adaptive(&policy).1);
        let frame = Nanos::from_millis(10);
        let mut prev = a.step(Nanos::ZERO, Nanos::ZERO, Nanos::from_millis(100));
        for k in 1..200 {
            let at = frame * k;
            let wanted = if k < 100 {
                Nanos::from_millis(200)
            } else {
                Nanos::from_millis(50)
            };
            let now = at;
            let got = a.step(at, now, wanted);
            let speed = (got.target - prev.target).as_secs_f64() / frame.as_secs_f64();
            assert!(
                (0.95 - 1e-9..=1.05 + 1e-9).contains(&speed),
                "speed {speed} at frame {k}"
            );
            assert!(!got.frozen);
            prev = got;
        }
        let mut j = Applier::new(adaptive(&"jitter:apply=jump".parse().unwrap()).1);
        j.step(Nanos::ZERO, Nanos::ZERO, Nanos::from_millis(50));
        let grown = j.step(frame, frame, Nanos::from_millis(100));
        assert!(grown.frozen);
        assert_eq!(
            grown.target,
            Nanos::from_millis(-50),
            "held at the previous target"
        );
        let shrunk = j.step(frame * 2, frame * 2, Nanos::from_millis(20));
        assert_eq!(shrunk.target, Nanos::ZERO, "a shorter delay skips forward");
    }
}
