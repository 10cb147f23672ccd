//! `mirror`: Mirror's Snapshot Interpolation V2 on its own timeline (the model is in
//! [`crate::mirror`]).

use std::sync::OnceLock;

use jitterlab_capture::spec::format_duration;
use jitterlab_capture::{Nanos, Sample};

use super::keys::{boolean, capacity, key, number, print};
use super::{Built, DelayModel, Key, Preset, duration_key};
use crate::buffer::{Counters, HoldReason, Packet, Pick};
use crate::engine::{Applied, Engine};
pub use crate::mirror::MirrorConfig;
use crate::mirror::{Inserted, Mirror, Snap};

/// A seconds field printed and parsed as a duration.
fn secs_key(v: &str) -> Result<f64, String> {
    duration_key(v, Nanos(1)).map(Nanos::as_secs_f64)
}

fn print_secs(s: &f64) -> String {
    format_duration(Nanos::from_secs_f64(*s))
}

/// A speed factor in [0, 1).
fn below_one(v: &str) -> Result<f64, String> {
    number(v, |x| (0.0..1.0).contains(&x), "0 to below 1")
}

impl Preset for MirrorConfig {
    const NAME: &'static str = "mirror";
    const RATE_KEY: Option<&'static str> = Some("send_rate");
    const TUNE_AXES: &'static str =
        "buffer_multiplier = [1, 2, 3, 4]\ndynamic_adjustment = [true, false]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<MirrorConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "send_rate", |c| c.send_rate, print, |v| {
                    number(v, |x| x > 0.0 && x <= 10_000.0, ">0 to 10000 Hz")
                }),
                key!(Self, "buffer_multiplier", |c| c.buffer_multiplier, print, |v| {
                    number(v, |x| (0.0..=1000.0).contains(&x), "0 to 1000")
                }),
                key!(Self, "buffer_limit", |c| c.buffer_limit, print, capacity),
                key!(
                    Self,
                    "catchup_negative_threshold",
                    |c| c.catchup_negative_threshold,
                    print,
                    |v| number(v, |x| (-1000.0..=0.0).contains(&x), "-1000 to 0 send intervals")
                ),
                key!(
                    Self,
                    "catchup_positive_threshold",
                    |c| c.catchup_positive_threshold,
                    print,
                    |v| number(v, |x| (0.0..=1000.0).contains(&x), "0 to 1000 send intervals")
                ),
                key!(Self, "catchup_speed", |c| c.catchup_speed, print, below_one),
                key!(Self, "slowdown_speed", |c| c.slowdown_speed, print, below_one),
                key!(Self, "drift_ema_duration", |c| c.drift_ema_duration, print_secs, secs_key),
                key!(Self, "dynamic_adjustment", |c| c.dynamic_adjustment, print, boolean),
                key!(
                    Self,
                    "dynamic_adjustment_tolerance",
                    |c| c.dynamic_adjustment_tolerance,
                    print,
                    |v| number(v, |x| (0.0..=1000.0).contains(&x), "0 to 1000")
                ),
                key!(
                    Self,
                    "delivery_time_ema_duration",
                    |c| c.delivery_time_ema_duration,
                    print_secs,
                    secs_key
                ),
            ]
        })
    }

    /// A full buffer's span: the most a Mirror timeline can trail the newest snapshot.
    fn max_delay(&self) -> Nanos {
        Nanos::from_secs_f64(self.send_interval() * self.buffer_limit as f64)
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn engine(&self) -> Built {
        Built::Own(Box::new(MirrorEngine::new(self)))
    }
}

/// Mirror's timeline as a replay engine.
struct MirrorEngine {
    mirror: Mirror,
    last_at: Option<Nanos>,
    counters: Counters,
}

fn secs(t: Nanos) -> f64 {
    t.as_secs_f64()
}

impl MirrorEngine {
    fn new(c: &MirrorConfig) -> Self {
        Self {
            mirror: Mirror::new(c.clone()),
            last_at: None,
            counters: Counters::default(),
        }
    }
}

impl Engine for MirrorEngine {
    fn push(&mut self, _sample: &Sample, p: Packet, at: Nanos) -> bool {
        // Mirror stamps a snapshot with the start of the frame that processes it.
        let snap = Snap {
            remote: secs(p.send),
            local: secs(at),
            idx: p.idx,
        };
        let c = &mut self.counters;
        let inserted = self.mirror.on_snapshot(snap);
        match inserted {
            Inserted::Yes => c.inserted += 1,
            Inserted::Overwrote => c.duplicates += 1,
            Inserted::Refused => c.refused += 1,
        }
        inserted == Inserted::Overwrote
    }

    fn frame(&mut self, at: Nanos, now: Nanos) -> (Applied, Pick) {
        let e = self;
        let dt = e.last_at.map_or(0.0, |last| secs(at - last));
        e.last_at = Some(at);
        let step = e.mirror.step(dt);
        let target = Nanos::from_secs_f64(e.mirror.timeline);
        let applied = Applied {
            delay: now - target,
            target,
            frozen: false,
            scaled: e.mirror.timescale != 1.0,
        };
        let depth = e
            .mirror
            .buffer
            .iter()
            .filter(|s| s.remote >= e.mirror.timeline)
            .count();
        let pick = match step {
            None => Pick::empty(depth),
            Some((a, b, _)) if a.idx == b.idx => Pick::held(
                a.idx,
                Nanos::from_secs_f64(a.remote),
                if e.mirror.timeline < a.remote {
                    HoldReason::BeforeOldest
                } else {
                    HoldReason::AfterNewest
                },
                depth,
            ),
            Some((a, b, t)) => Pick::between(
                a.idx,
                b.idx,
                t,
                target
                    .max(Nanos::from_secs_f64(a.remote))
                    .min(Nanos::from_secs_f64(b.remote)),
                depth,
            ),
        };
        (applied, pick)
    }

    fn oldest_idx(&self) -> Option<u32> {
        self.mirror.buffer.iter().map(|s| s.idx).min()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn newest_send(&self) -> Option<Nanos> {
        self.mirror
            .buffer
            .last()
            .map(|s| Nanos::from_secs_f64(s.remote))
    }
}
