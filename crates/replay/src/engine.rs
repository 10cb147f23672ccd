//! The playout engines behind one per-frame interface ([`Playout`]): jitterlab's snapshot
//! buffer driven by a delay controller (fixed, jitter, quantile, source, neteq), Mirror's own
//! timeline (mirror) and Netcode for GameObjects' interpolator (ngo).

use jitterlab_capture::{Nanos, Sample};

use crate::adapt::{Applied, Applier, Controller};
use crate::buffer::{Counters, HoldReason, Packet, Pick, Push, SnapshotBuffer};
use crate::mirror::{Inserted, Mirror, Snap};
use crate::policy::Policy;

pub(crate) struct SnapshotEngine {
    buffer: SnapshotBuffer,
    controller: Controller,
    applier: Applier,
    fixed_delay: Option<Nanos>,
}

pub(crate) struct MirrorEngine {
    mirror: Mirror,
    last_at: Option<Nanos>,
    counters: Counters,
}

pub(crate) struct NgoEngine {
    interp: crate::ngo::Interpolator,
    delay: f64,
    counters: Counters,
}

fn secs(t: Nanos) -> f64 {
    t.as_secs_f64()
}

/// One playout engine, advanced frame by frame. The replay loop is generic over it, so each
/// engine's per-packet and per-frame steps inline into the loop.
pub(crate) trait Playout {
    /// Offers packet `p` (sample `p.idx` of `samples`), processed in the frame at local time
    /// `at`; returns whether it was a duplicate.
    fn push(&mut self, samples: &[Sample], p: Packet, at: Nanos) -> bool;

    /// Advances to the frame at local time `at` (`now` on the sender's clock) and picks what
    /// is shown.
    fn frame(&mut self, at: Nanos, now: Nanos) -> (Applied, Pick);

    /// What became of the packets so far.
    fn counters(&self) -> Counters;

    /// Send time of the newest sample held.
    fn newest_send(&self) -> Option<Nanos>;
}

impl SnapshotEngine {
    pub(crate) fn new(policy: &Policy) -> Self {
        Self {
            buffer: SnapshotBuffer::new(policy.buffer().cloned().unwrap_or_default()),
            controller: Controller::new(policy),
            applier: Applier::new(policy),
            fixed_delay: match policy {
                Policy::Fixed(c) => Some(c.delay),
                Policy::Source(c) => Some(c.lerp()),
                _ => None,
            },
        }
    }
}

// `inline(always)`: the replay loop has a copy per frame source, and with more than one
// caller LLVM stopped inlining these on its own (588 instead of 477 instructions per frame of
// a fixed-delay replay, callgrind).
impl Playout for SnapshotEngine {
    #[inline(always)]
    fn push(&mut self, samples: &[Sample], p: Packet, _at: Nanos) -> bool {
        let duplicate = self.buffer.offer(p) == Push::Duplicate;
        // A fixed delay has no controller to feed.
        if !duplicate && self.fixed_delay.is_none() {
            self.controller.on_arrival(&samples[p.idx as usize]);
        }
        duplicate
    }

    #[inline(always)]
    fn frame(&mut self, at: Nanos, now: Nanos) -> (Applied, Pick) {
        let applied = match self.fixed_delay {
            // A fixed delay needs no controller: frame times never decrease, so neither does
            // the target.
            Some(delay) => Applied {
                delay,
                target: now - delay,
                frozen: false,
                scaled: false,
            },
            None => self.applier.step(at, now, self.controller.target(at)),
        };
        (applied, self.buffer.sample(applied.target))
    }

    fn counters(&self) -> Counters {
        self.buffer.counters()
    }

    #[inline]
    fn newest_send(&self) -> Option<Nanos> {
        self.buffer.newest_send()
    }
}

impl NgoEngine {
    pub(crate) fn new(c: &crate::ngo::NgoConfig) -> Self {
        Self {
            interp: crate::ngo::Interpolator::default(),
            delay: c.delay_secs(),
            counters: Counters::default(),
        }
    }
}

impl Playout for NgoEngine {
    fn push(&mut self, _samples: &[Sample], p: Packet, _at: Nanos) -> bool {
        let item = crate::ngo::Item {
            idx: p.idx,
            sent: secs(p.send),
        };
        match self.interp.add(item) {
            crate::ngo::Added::Queued => self.counters.inserted += 1,
            crate::ngo::Added::Dropped => self.counters.late += 1,
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

    fn counters(&self) -> Counters {
        self.counters
    }

    fn newest_send(&self) -> Option<Nanos> {
        self.interp.newest().map(Nanos::from_secs_f64)
    }
}

impl MirrorEngine {
    pub(crate) fn new(c: &crate::mirror::MirrorConfig) -> Self {
        Self {
            mirror: Mirror::new(c.clone()),
            last_at: None,
            counters: Counters::default(),
        }
    }
}

impl Playout for MirrorEngine {
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
