//! Adaptive delay: a controller proposes a target delay from what has arrived; the applier
//! moves the playout delay toward it, at once or by time-scaling, and keeps the rendered
//! timeline from ever stepping backwards (C3, C18).

use std::collections::VecDeque;

use jitterlab_capture::stats::Jitter;
use jitterlab_capture::{Nanos, Sample};

use crate::policy::{Apply, JitterConfig, Policy, QuantileConfig};

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

    fn new(given: Option<Nanos>) -> Self {
        Self {
            given,
            last: None,
            steps: Vec::new(),
            value: None,
        }
    }

    fn observe(&mut self, s: &Sample) {
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

    fn get(&self) -> Nanos {
        self.given.or(self.value).unwrap_or(DEFAULT_INTERVAL)
    }
}

fn clamp(d: Nanos, min: Option<Nanos>, max: Nanos, interval: Nanos) -> Nanos {
    let lo = min.unwrap_or(interval).min(max);
    d.max(lo).min(max)
}

/// Chooses the delay a policy wants, from the packets that have arrived.
#[derive(Clone, Debug)]
pub(crate) enum Controller {
    Fixed(Nanos),
    Jitter {
        config: JitterConfig,
        jitter: Jitter,
        interval: IntervalEstimate,
    },
    NetEq {
        history: crate::neteq::ArrivalHistory,
        manager: crate::neteq::DelayManager,
        interval: IntervalEstimate,
        max: Nanos,
    },
    Quantile {
        config: QuantileConfig,
        interval: IntervalEstimate,
        /// (arrival, transit) of the arrivals in the window, oldest first.
        window: VecDeque<(Nanos, Nanos)>,
        next_eval: Option<Nanos>,
        target: Option<Nanos>,
    },
}

impl Controller {
    pub(crate) fn new(policy: &Policy) -> Self {
        match policy {
            Policy::Fixed(c) => Self::Fixed(c.delay),
            Policy::Source(c) => Self::Fixed(c.lerp()),
            Policy::Mirror(_) | Policy::Ngo(_) => Self::Fixed(Nanos::ZERO),
            Policy::NetEq(c) => Self::NetEq {
                history: crate::neteq::ArrivalHistory::new(c.window.as_nanos() / 1_000_000),
                manager: crate::neteq::DelayManager::new(&c.delay),
                interval: IntervalEstimate::new(None),
                max: c.max,
            },
            Policy::Jitter(c) => Self::Jitter {
                interval: IntervalEstimate::new(c.interval),
                config: c.clone(),
                jitter: Jitter::default(),
            },
            Policy::Quantile(c) => Self::Quantile {
                interval: IntervalEstimate::new(c.interval),
                config: c.clone(),
                window: VecDeque::new(),
                next_eval: None,
                target: None,
            },
        }
    }

    /// A packet arrived (duplicates excluded).
    pub(crate) fn on_arrival(&mut self, s: &Sample) {
        match self {
            Self::Fixed(_) => {}
            Self::NetEq {
                history,
                manager,
                interval,
                ..
            } => {
                // NetEq works in whole milliseconds of media time and arrival time.
                interval.observe(s);
                let (rtp, now) = (
                    s.send.as_nanos() / 1_000_000,
                    s.arrival.as_nanos() / 1_000_000,
                );
                let length = interval.get().as_nanos() / 1_000_000;
                if history.insert(rtp, length, now) {
                    let reordered = !history.is_newest(rtp);
                    let delay = history.delay_ms(rtp, now) as i32;
                    manager.update(delay, reordered, now);
                }
            }
            Self::Jitter {
                jitter, interval, ..
            } => {
                // C16: J += (|D| − J)/16 over transit differences; clock offset cancels.
                jitter.push(s.send, s.arrival, true);
                interval.observe(s);
            }
            Self::Quantile {
                config,
                interval,
                window,
                ..
            } => {
                interval.observe(s);
                window.push_back((s.arrival, s.arrival - s.send));
                while window
                    .front()
                    .is_some_and(|&(a, _)| a < s.arrival - config.window)
                {
                    window.pop_front();
                }
            }
        }
    }

    /// The delay wanted at local time `now`.
    pub(crate) fn target(&mut self, now: Nanos) -> Nanos {
        match self {
            Self::Fixed(d) => *d,
            Self::NetEq { manager, max, .. } => {
                Nanos::from_millis(i64::from(manager.target_delay_ms())).min(*max)
            }
            Self::Jitter {
                config,
                jitter,
                interval,
            } => {
                // C17: delay = a·interval + k·J, clamped (seed 003: 2·I + 3·J in [I, 300 ms]).
                let i = interval.get();
                let j = Nanos::from_millis_f64(jitter.current_ms());
                let want =
                    Nanos::from_secs_f64(config.a * i.as_secs_f64() + config.k * j.as_secs_f64());
                clamp(want, config.min, config.max, i)
            }
            Self::Quantile {
                config,
                interval,
                window,
                next_eval,
                target,
            } => {
                // C18: re-evaluated at a low rate, not per packet.
                let due = next_eval.is_none_or(|t| now >= t);
                if due && window.len() >= 2 {
                    let floor = window.iter().map(|&(_, t)| t).min().unwrap_or_default();
                    let mut v: Vec<i64> = window
                        .iter()
                        .map(|&(_, t)| (t - floor).as_nanos())
                        .collect();
                    v.sort_unstable();
                    let rank = ((config.q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
                    let i = interval.get();
                    *target = Some(clamp(i + Nanos(v[rank]), config.min, config.max, i));
                    *next_eval = Some(now + config.every);
                }
                target.unwrap_or_else(|| {
                    let i = interval.get();
                    clamp(i + i, config.min, config.max, i)
                })
            }
        }
    }
}

/// What the applier did at one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The playout delay in force.
    pub(crate) delay: Nanos,
    /// The render target on the sender's clock.
    pub(crate) target: Nanos,
    /// The display stood still because the delay grew faster than time passed (jump mode).
    pub(crate) frozen: bool,
    /// Playback ran faster or slower than real time at this frame (stretch mode).
    pub(crate) scaled: bool,
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
    pub(crate) fn new(policy: &Policy) -> Self {
        let apply = match policy {
            Policy::Fixed(_) | Policy::Source(_) | Policy::Mirror(_) | Policy::Ngo(_) => {
                Apply::Jump
            }
            Policy::Jitter(c) => c.apply,
            Policy::Quantile(c) => c.apply,
            Policy::NetEq(c) => c.apply,
        };
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
        let mut c = Controller::new(&policy);
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
        let mut c = Controller::new(&policy);
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
        let mut a = Applier::new(&policy);
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
        let mut j = Applier::new(&"jitter:apply=jump".parse().unwrap());
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
