//! `neteq`: WebRTC NetEq's delay manager as a policy (anchors.md §4).

use std::sync::OnceLock;

use jitterlab_capture::{Nanos, Sample};

use super::keys::{apply, boolean, buffer_keys, key, number, print, print_duration};
use super::{Apply, BufferConfig, DelayModel, Key, Preset, duration_key};
use crate::adapt::IntervalEstimate;
use crate::engine::Controller;
use crate::neteq::{ArrivalHistory, DelayConfig, DelayManager};
use crate::playout::{PlayoutDetail, PlayoutRun, PlayoutStream};

/// WebRTC NetEq's delay manager as a policy: relative arrival delay over a 2 s window, the
/// 0.95 quantile of 500 ms maxima (20 ms buckets), raised for reordering, applied by
/// time-stretching (anchors.md §4).
#[derive(Clone, Debug, PartialEq)]
pub struct NetEqConfig {
    /// NetEq's delay-manager settings.
    pub delay: DelayConfig,
    /// The arrival-history window.
    pub window: Nanos,
    /// Upper clamp on the target.
    pub max: Nanos,
    /// How delay changes are applied (NetEq accelerates and preemptively expands).
    pub apply: Apply,
    /// The sample store.
    pub buffer: BufferConfig,
}

impl Default for NetEqConfig {
    fn default() -> Self {
        Self {
            delay: DelayConfig::default(),
            window: Nanos::from_secs(2),
            max: Nanos::from_secs(2),
            apply: Apply::Stretch { max_rate: 0.1 },
            buffer: BufferConfig::default(),
        }
    }
}

impl Preset for NetEqConfig {
    const NAME: &'static str = "neteq";
    const TUNE_AXES: &'static str = "quantile = [0.9, 0.95, 0.99]\n";
    const MEDIA: Option<jitterlab_capture::decode::MediaKind> =
        Some(jitterlab_capture::decode::MediaKind::Audio);
    const PLAYOUT_AXES: &'static str = "quantile = [0.9, 0.95, 0.97, 0.99]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<NetEqConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            let mut keys = vec![
                key!(Self, "quantile", |c| c.delay.quantile, print, |v| {
                    number(v, |x| x > 0.0 && x < 1.0, "strictly between 0 and 1")
                }),
                key!(Self, "forget_factor", |c| c.delay.forget_factor, print, |v| {
                    number(v, |x| (0.0..1.0).contains(&x), "0 to below 1")
                }),
                key!(
                    Self,
                    "resample_interval",
                    |c| c.delay.resample_interval_ms,
                    print_resample,
                    resample
                ),
                key!(Self, "reorder", |c| c.delay.use_reorder_optimizer, print, boolean),
                key!(Self, "window", |c| c.window, print_duration, |v| {
                    duration_key(v, Nanos::from_millis(1))
                }),
                key!(Self, "max", |c| c.max, print_duration, |v| {
                    duration_key(v, Nanos::ZERO)
                }),
                key!(Self, "apply", |c| c.apply, print, apply),
            ];
            keys.extend(buffer_keys!(Self, |c| c.buffer));
            keys
        })
    }

    fn max_delay(&self) -> Nanos {
        self.max
    }

    fn buffer(&self) -> Option<&BufferConfig> {
        Some(&self.buffer)
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Adaptive {
            controller: Box::new(NetEqController {
                history: ArrivalHistory::new(self.window.as_nanos() / 1_000_000),
                manager: DelayManager::new(&self.delay),
                interval: IntervalEstimate::new(None),
                max: self.max,
            }),
            apply: self.apply,
        }
    }

    /// NetEq's own decisions: accelerate, preemptive expand, expand, merge.
    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        let run = crate::decision::playout_neteq(stream.units(), self);
        Some(PlayoutRun {
            events: run.events,
            detail: Some(PlayoutDetail::NetEq(run.stats)),
            targets: crate::playout::Targets::PerEvent(run.targets),
            inserted: run.inserted,
            removed: run.removed,
        })
    }
}

/// `off`, or whole milliseconds of at least 1 ms.
fn resample(v: &str) -> Result<Option<i64>, String> {
    match v {
        "off" => Ok(None),
        _ => Ok(Some(
            duration_key(v, Nanos::from_millis(1))?.as_nanos() / 1_000_000,
        )),
    }
}

fn print_resample(ms: &Option<i64>) -> String {
    ms.map_or_else(|| "off".to_owned(), |ms| format!("{ms}ms"))
}

/// NetEq's delay manager fed with whole milliseconds of media and arrival time.
struct NetEqController {
    history: ArrivalHistory,
    manager: DelayManager,
    interval: IntervalEstimate,
    max: Nanos,
}

impl Controller for NetEqController {
    fn on_arrival(&mut self, s: &Sample) {
        // NetEq works in whole milliseconds of media time and arrival time.
        self.interval.observe(s);
        let (rtp, now) = (
            s.send.as_nanos() / 1_000_000,
            s.arrival.as_nanos() / 1_000_000,
        );
        let length = self.interval.get().as_nanos() / 1_000_000;
        if self.history.insert(rtp, length, now) {
            let reordered = !self.history.is_newest(rtp);
            let delay = self.history.delay_ms(rtp, now) as i32;
            self.manager.update(delay, reordered, now);
        }
    }

    fn target(&mut self, _now: Nanos) -> Nanos {
        Nanos::from_millis(i64::from(self.manager.target_delay_ms())).min(self.max)
    }
}
