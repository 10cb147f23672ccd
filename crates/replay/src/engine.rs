//! The two kinds of playout engine behind one per-frame interface: jitterlab's snapshot
//! buffer driven by a delay controller (fixed, jitter, quantile, source), and Mirror's own
//! timeline (mirror).

use jitterlab_capture::{Nanos, Sample};

use crate::adapt::{Applied, Applier, Controller};
use crate::buffer::{Counters, HoldReason, Pick, Push, SnapshotBuffer};
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

// One engine per replay, on the stack: boxing the hot variant would cost an indirection per
// frame, and the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Engine {
    Snapshot(SnapshotEngine),
    Mirror(MirrorEngine),
    Ngo(NgoEngine),
}

pub(crate) struct NgoEngine {
    interp: crate::ngo::Interpolator,
    delay: f64,
    counters: Counters,
}

fn secs(t: Nanos) -> f64 {
    t.as_secs_f64()
}

impl Engine {
    pub(crate) fn new(policy: &Policy) -> Self {
        match policy {
            Policy::Mirror(c) => Self::Mirror(MirrorEngine {
                mirror: Mirror::new(c.clone()),
                last_at: None,
                counters: Counters::default(),
            }),
            Policy::Ngo(c) => Self::Ngo(NgoEngine {
                interp: crate::ngo::Interpolator::default(),
                delay: c.delay_secs(),
                counters: Counters::default(),
            }),
            _ => Self::Snapshot(SnapshotEngine {
                buffer: SnapshotBuffer::new(policy.buffer().cloned().unwrap_or_default()),
                controller: Controller::new(policy),
                applier: Applier::new(policy),
                fixed_delay: match policy {
                    Policy::Fixed(c) => Some(c.delay),
                    Policy::Source(c) => Some(c.lerp()),
                    _ => None,
                },
            }),
        }
    }

    /// Offers sample `idx`, processed in the frame at local time `at`.
    /// Offers sample `idx`, processed in the frame at local time `at`; returns whether it was a
    /// duplicate.
    pub(crate) fn push(&mut self, samples: &[Sample], idx: u32, at: Nanos) -> bool {
        match self {
            Self::Snapshot(e) => {
                let duplicate = e.buffer.push(samples, idx) == Push::Duplicate;
                // A fixed delay has no controller to feed.
                if !duplicate && e.fixed_delay.is_none() {
                    e.controller.on_arrival(&samples[idx as usize]);
                }
                duplicate
            }
            Self::Ngo(e) => {
                let item = crate::ngo::Item {
                    idx,
                    sent: secs(samples[idx as usize].send),
                };
                match e.interp.add(item) {
                    crate::ngo::Added::Queued => e.counters.inserted += 1,
                    crate::ngo::Added::Dropped => e.counters.late += 1,
                }
                false
            }
            Self::Mirror(e) => {
                // Mirror stamps a snapshot with the start of the frame that processes it.
                let s = &samples[idx as usize];
                let snap = Snap {
                    remote: secs(s.send),
                    local: secs(at),
                    idx,
                };
                let c = &mut e.counters;
                let inserted = e.mirror.on_snapshot(snap);
                match inserted {
                    Inserted::Yes => c.inserted += 1,
                    Inserted::Overwrote => c.duplicates += 1,
                    Inserted::Refused => c.refused += 1,
                }
                inserted == Inserted::Overwrote
            }
        }
    }

    /// Advances to the frame at local time `at` (`now` on the sender's clock) and picks what
    /// is shown.
    pub(crate) fn frame(&mut self, at: Nanos, now: Nanos) -> (Applied, Pick) {
        match self {
            Self::Snapshot(e) => {
                let applied = match e.fixed_delay {
                    // A fixed delay needs no controller: frame times never decrease, so neither
                    // does the target.
                    Some(delay) => Applied {
                        delay,
                        target: now - delay,
                        frozen: false,
                        scaled: false,
                    },
                    None => e.applier.step(at, now, e.controller.target(at)),
                };
                (applied, e.buffer.sample(applied.target))
            }
            Self::Ngo(e) => {
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
            Self::Mirror(e) => {
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
        }
    }

    pub(crate) fn counters(&self) -> Counters {
        match self {
            Self::Snapshot(e) => e.buffer.counters(),
            Self::Mirror(e) => e.counters,
            Self::Ngo(e) => e.counters,
        }
    }

    pub(crate) fn newest_send(&self) -> Option<Nanos> {
        match self {
            Self::Snapshot(e) => e.buffer.newest_send(),
            Self::Mirror(e) => e
                .mirror
                .buffer
                .last()
                .map(|s| Nanos::from_secs_f64(s.remote)),
            Self::Ngo(e) => e.interp.newest().map(Nanos::from_secs_f64),
        }
    }
}
