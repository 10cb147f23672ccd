//! `ngo`: Unity Netcode for GameObjects' buffered linear interpolator (legacy lerp), on its
//! own engine (the model is in [`crate::ngo`]).

use std::sync::OnceLock;

use jitterlab_capture::{Nanos, Sample};

use super::keys::{key, number, print};
use super::{Built, DelayModel, Key, Preset};
use crate::buffer::{Counters, HoldReason, Packet, Pick};
use crate::engine::{Applied, Engine};
pub use crate::ngo::NgoConfig;
use crate::ngo::{Added, Interpolator, Item};

impl Preset for NgoConfig {
    const NAME: &'static str = "ngo";
    const RATE_KEY: Option<&'static str> = Some("tick_rate");
    const TUNE_AXES: &'static str = "ticks_ago = [1, 2, 3, 4]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<NgoConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "tick_rate", |c| c.tick_rate, print, |v| {
                    number(v, |x| x > 0.0 && x <= 10_000.0, ">0 to 10000 per second")
                }),
                key!(Self, "ticks_ago", |c| c.ticks_ago, print, |v| {
                    number(v, |x| (0.0..=1000.0).contains(&x), "0 to 1000 ticks")
                }),
            ]
        })
    }

    fn max_delay(&self) -> Nanos {
        Nanos::from_secs_f64(self.delay_secs())
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn engine(&self) -> Built {
        Built::Own(Box::new(NgoEngine::new(self)))
    }
}

/// NGO's interpolator as a replay engine: render time trails the server time by a fixed delay.
struct NgoEngine {
    interp: Interpolator,
    delay: f64,
    counters: Counters,
}

fn secs(t: Nanos) -> f64 {
    t.as_secs_f64()
}

impl NgoEngine {
    fn new(c: &NgoConfig) -> Self {
        Self {
            interp: Interpolator::default(),
            delay: c.delay_secs(),
            counters: Counters::default(),
        }
    }
}

impl Engine for NgoEngine {
    fn push(&mut self, _sample: &Sample, p: Packet, _at: Nanos) -> bool {
        let item = Item {
            idx: p.idx,
            sent: secs(p.send),
        };
        match self.interp.add(item) {
            Added::Queued => self.counters.inserted += 1,
            Added::Dropped => self.counters.late += 1,
        }
        false
    }

    fn frame(&mut self, _at: Nanos, now: Nanos) -> (Applied, Pick) {
        let e = self;
        let server = secs(now);
        let render = server - e.delay;
        let target = Nanos::from_secs_f64(render);
        let applied = Applied {
            delay: now - target,
            target,
            frozen: false,
            scaled: false,
        };
        let depth = e.interp.pending_after(render);
        let pick = match e.interp.update(server, render) {
            None => Pick::empty(depth),
            Some((a, b, t)) if a.idx == b.idx || t >= 1.0 || t <= 0.0 => {
                // Nothing to interpolate: the target reached (underrun) or not yet begun.
                let (held, reason) = if t <= 0.0 && render < a.sent {
                    (a, HoldReason::BeforeOldest)
                } else {
                    (b, HoldReason::AfterNewest)
                };
                Pick::held(held.idx, Nanos::from_secs_f64(held.sent), reason, depth)
            }
            Some((a, b, t)) => Pick::between(
                a.idx,
                b.idx,
                t,
                Nanos::from_secs_f64(a.sent + (b.sent - a.sent) * t),
                depth,
            ),
        };
        (applied, pick)
    }

    fn oldest_idx(&self) -> Option<u32> {
        self.interp.oldest_idx()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn newest_send(&self) -> Option<Nanos> {
        self.interp.newest().map(Nanos::from_secs_f64)
    }
}

