//! `jitter`: RFC 3550 adaptive delay (C16, C17), seed 003's Unity sample.

use std::sync::OnceLock;

use jitterlab_capture::stats::Jitter;
use jitterlab_capture::{Nanos, Sample};

use super::keys::{adaptive_keys, buffer_keys, key, number, print};
use super::{AdaptiveConfig, Apply, BufferConfig, DelayModel, Key, KeyError, Preset};
use crate::adapt::IntervalEstimate;
use crate::engine::Controller;

/// RFC 3550 adaptive delay (C16, C17): `delay = a·interval + k·J`, clamped to [min, max].
#[derive(Clone, Debug, PartialEq)]
pub struct JitterConfig {
    /// Intervals of delay before jitter is added.
    pub a: f64,
    /// Multiples of the jitter estimate J (2…4 is usual, C17).
    pub k: f64,
    /// Interval, clamps, how changes apply, the sample store.
    pub adaptive: AdaptiveConfig,
}

impl Default for JitterConfig {
    /// Seed 003's Unity sample: `2·interval + 3·J`, clamped to [interval, 300 ms], applied at once.
    fn default() -> Self {
        Self {
            a: 2.0,
            k: 3.0,
            adaptive: AdaptiveConfig {
                interval: None,
                min: None,
                max: Nanos::from_millis(300),
                apply: Apply::Jump,
                buffer: BufferConfig::default(),
            },
        }
    }
}

impl Preset for JitterConfig {
    const NAME: &'static str = "jitter";
    const TUNE_AXES: &'static str = "a = [1, 2, 3]\nk = [1, 2, 3, 4, 6]\n";
    const PLAYOUT_AXES: &'static str = "a = [1, 2, 3]\nk = [1, 2, 3, 4, 6]\napply = [\"jump\", \"stretch:max_rate=5%\"]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<JitterConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            let mut keys = vec![
                key!(Self, "a", |c| c.a, print, ratio),
                key!(Self, "k", |c| c.k, print, ratio),
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
            controller: Box::new(JitterController {
                interval: IntervalEstimate::new(self.adaptive.interval),
                config: self.clone(),
                jitter: Jitter::default(),
            }),
            apply: self.adaptive.apply,
        }
    }
}

/// `a` and `k`: 0 to 100.
fn ratio(v: &str) -> Result<f64, String> {
    number(v, |x| (0.0..=100.0).contains(&x), "0 to 100")
}

/// `a·interval + k·J` from the RFC 3550 jitter estimate of the arrivals.
struct JitterController {
    config: JitterConfig,
    jitter: Jitter,
    interval: IntervalEstimate,
}

impl Controller for JitterController {
    fn on_arrival(&mut self, s: &Sample) {
        // C16: J += (|D| − J)/16 over transit differences; clock offset cancels.
        self.jitter.push(s.send, s.arrival, true);
        self.interval.observe(s);
    }

    fn target(&mut self, _now: Nanos) -> Nanos {
        // C17: delay = a·interval + k·J, clamped (seed 003: 2·I + 3·J in [I, 300 ms]).
        let c = &self.config;
        let i = self.interval.get();
        let j = Nanos::from_millis_f64(self.jitter.current_ms());
        let want = Nanos::from_secs_f64(c.a * i.as_secs_f64() + c.k * j.as_secs_f64());
        c.adaptive.clamp(want, i)
    }
}
