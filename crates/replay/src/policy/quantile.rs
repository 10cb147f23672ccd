//! `quantile`: delay from a quantile of recent delay variation, re-evaluated at a low rate
//! (C18, seed 000's adaptive upgrade).

use std::collections::VecDeque;
use std::sync::OnceLock;

use jitterlab_capture::{Nanos, Sample};

use super::keys::{adaptive_keys, buffer_keys, key, number, print, print_duration};
use super::{AdaptiveConfig, Apply, BufferConfig, DelayModel, Key, KeyError, Preset, duration_key};
use crate::adapt::IntervalEstimate;
use crate::engine::Controller;

/// Delay from a quantile of recent delay variation, re-evaluated at a low rate (C18, seed
/// 000's adaptive upgrade): `delay = interval + quantile_q(transit − min transit)` over the
/// last `window` of arrivals, every `every`, clamped to [min, max].
#[derive(Clone, Debug, PartialEq)]
pub struct QuantileConfig {
    /// The quantile, in (0, 1).
    pub q: f64,
    /// How far back arrivals count.
    pub window: Nanos,
    /// How often the target is re-evaluated.
    pub every: Nanos,
    /// Interval, clamps, how changes apply, the sample store.
    pub adaptive: AdaptiveConfig,
}

impl Default for QuantileConfig {
    /// The 95th percentile over 2 s, every 500 ms (NetEq's quantile and resample interval),
    /// stretched at up to 5 %.
    fn default() -> Self {
        Self {
            q: 0.95,
            window: Nanos::from_secs(2),
            every: Nanos::from_millis(500),
            adaptive: AdaptiveConfig {
                interval: None,
                min: None,
                max: Nanos::from_millis(1000),
                apply: Apply::Stretch { max_rate: 0.05 },
                buffer: BufferConfig::default(),
            },
        }
    }
}

impl Preset for QuantileConfig {
    const NAME: &'static str = "quantile";
    const TUNE_AXES: &'static str = "q = [0.9, 0.95, 0.99, 0.999]\nwindow = [\"2s\", \"10s\"]\n";
    const PLAYOUT_AXES: &'static str = "q = [0.9, 0.95, 0.99, 0.999]\nwindow = [\"2s\", \"10s\"]\napply = [\"jump\", \"stretch:max_rate=5%\"]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<QuantileConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            let mut keys = vec![
                key!(Self, "q", |c| c.q, print, |v| {
                    number(v, |x| x > 0.0 && x < 1.0, "strictly between 0 and 1")
                }),
                key!(Self, "window", |c| c.window, print_duration, |v| {
                    duration_key(v, Nanos(1))
                }),
                key!(Self, "every", |c| c.every, print_duration, |v| {
                    duration_key(v, Nanos(1))
                }),
            ];
            keys.extend(adaptive_keys!(Self, |c| c.adaptive));
            keys.extend(buffer_keys!(Self, |c| c.adaptive.buffer));
            keys
        })
    }

    fn validate(&self) -> Result<(), KeyError> {
        self.adaptive.validate()
    }

    fn max_delay(&self) -> Nanos {
        self.adaptive.max
    }

    fn buffer(&self) -> Option<&BufferConfig> {
        Some(&self.adaptive.buffer)
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Adaptive {
            controller: Box::new(QuantileController {
                interval: IntervalEstimate::new(self.adaptive.interval),
                config: self.clone(),
                window: VecDeque::new(),
                next_eval: None,
                target: None,
            }),
            apply: self.adaptive.apply,
        }
    }
}

/// One interval plus the q quantile of transit variation over a sliding window.
struct QuantileController {
    config: QuantileConfig,
    interval: IntervalEstimate,
    /// (arrival, transit) of the arrivals in the window, oldest first.
    window: VecDeque<(Nanos, Nanos)>,
    next_eval: Option<Nanos>,
    target: Option<Nanos>,
}

impl Controller for QuantileController {
    fn on_arrival(&mut self, s: &Sample) {
        self.interval.observe(s);
        self.window.push_back((s.arrival, s.arrival - s.send));
        while self
            .window
            .front()
            .is_some_and(|&(a, _)| a < s.arrival - self.config.window)
        {
            self.window.pop_front();
        }
    }

    fn target(&mut self, now: Nanos) -> Nanos {
        let config = &self.config;
        // C18: re-evaluated at a low rate, not per packet.
        let due = self.next_eval.is_none_or(|t| now >= t);
        if due && self.window.len() >= 2 {
            let floor = self.window.iter().map(|&(_, t)| t).min().unwrap_or_default();
            let mut v: Vec<i64> = self
                .window
                .iter()
                .map(|&(_, t)| (t - floor).as_nanos())
                .collect();
            v.sort_unstable();
            let rank = ((config.q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
            let i = self.interval.get();
            self.target = Some(config.adaptive.clamp(i + Nanos(v[rank]), i));
            self.next_eval = Some(now + config.every);
        }
        self.target.unwrap_or_else(|| {
            let i = self.interval.get();
            config.adaptive.clamp(i + i, i)
        })
    }
}
