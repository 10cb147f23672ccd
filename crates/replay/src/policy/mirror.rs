//! `mirror`: Mirror's Snapshot Interpolation V2 on its own timeline (the model is in
//! [`crate::mirror`]).

use std::sync::OnceLock;

use jitterlab_capture::spec::format_duration;
use jitterlab_capture::{Nanos, Sample};

use super::keys::{boolean, number};
use super::{Built, DelayModel, Key, MAX_CAPACITY, Preset, duration_key};
use crate::buffer::{Counters, HoldReason, Packet, Pick};
use crate::engine::{Applied, Engine};
pub use crate::mirror::MirrorConfig;
use crate::mirror::{Inserted, Mirror, Snap};

/// A seconds field printed and parsed as a duration.
fn secs_key(v: &str) -> Result<f64, String> {
    duration_key(v, Nanos(1)).map(Nanos::as_secs_f64)
}

fn print_secs(s: f64) -> String {
    format_duration(Nanos::from_secs_f64(s))
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
                Key {
                    name: "send_rate",
                    get: Some(|c: &Self| c.send_rate.to_string()),
                    set: |c, v| {
                        c.send_rate = number(v, |x| x > 0.0 && x <= 10_000.0, ">0 to 10000 Hz")?;
                        Ok(())
                    },
                },
                Key {
                    name: "buffer_multiplier",
                    get: Some(|c: &Self| c.buffer_multiplier.to_string()),
                    set: |c, v| {
                        c.buffer_multiplier = number(v, |x| (0.0..=1000.0).contains(&x), "0 to 1000")?;
                        Ok(())
                    },
                },
                Key {
                    name: "buffer_limit",
                    get: Some(|c: &Self| c.buffer_limit.to_string()),
                    set: |c, v| {
                        c.buffer_limit = match v.parse::<usize>() {
                            Ok(n) if (1..=MAX_CAPACITY).contains(&n) => n,
                            _ => {
                                return Err(format!(
                                    "{v} is out of range (allowed: 1..={MAX_CAPACITY})"
                                ));
                            }
                        };
                        Ok(())
                    },
                },
                Key {
                    name: "catchup_negative_threshold",
                    get: Some(|c: &Self| c.catchup_negative_threshold.to_string()),
                    set: |c, v| {
                        c.catchup_negative_threshold = number(
                            v,
                            |x| (-1000.0..=0.0).contains(&x),
                            "-1000 to 0 send intervals",
                        )?;
                        Ok(())
                    },
                },
                Key {
                    name: "catchup_positive_threshold",
                    get: Some(|c: &Self| c.catchup_positive_threshold.to_string()),
                    set: |c, v| {
                        c.catchup_positive_threshold = number(
                            v,
                            |x| (0.0..=1000.0).contains(&x),
                            "0 to 1000 send intervals",
                        )?;
                        Ok(())
                    },
                },
                Key {
                    name: "catchup_speed",
                    get: Some(|c: &Self| c.catchup_speed.to_string()),
                    set: |c, v| {
                        c.catchup_speed = number(v, |x| (0.0..1.0).contains(&x), "0 to below 1")?;
                        Ok(())
                    },
                },
                Key {
                    name: "slowdown_speed",
                    get: Some(|c: &Self| c.slowdown_speed.to_string()),
                    set: |c, v| {
                        c.slowdown_speed = number(v, |x| (0.0..1.0).contains(&x), "0 to below 1")?;
                        Ok(())
                    },
                },
                Key {
                    name: "drift_ema_duration",
                    get: Some(|c: &Self| print_secs(c.drift_ema_duration)),
                    set: |c, v| {
                        c.drift_ema_duration = secs_key(v)?;
                        Ok(())
                    },
                },
                Key {
                    name: "dynamic_adjustment",
                    get: Some(|c: &Self| c.dynamic_adjustment.to_string()),
                    set: |c, v| {
                        c.dynamic_adjustment = boolean(v)?;
                        Ok(())
                    },
                },
                Key {
                    name: "dynamic_adjustment_tolerance",
                    get: Some(|c: &Self| c.dynamic_adjustment_tolerance.to_string()),
                    set: |c, v| {
                        c.dynamic_adjustment_tolerance =
                            number(v, |x| (0.0..=1000.0).contains(&x), "0 to 1000")?;
                        Ok(())
                    },
                },
                Key {
                    name: "delivery_time_ema_duration",
                    get: Some(|c: &Self| print_secs(c.delivery_time_ema_duration)),
                    set: |c, v| {
                        c.delivery_time_ema_duration = secs_key(v)?;
                        Ok(())
                    },
                },
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
    fn push(&mut self, _samples: &[Sample], p: Packet, at: Nanos) -> bool {
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
