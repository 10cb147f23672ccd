//! The engines a replay runs, behind one per-frame interface ([`Engine`]): jitterlab's
//! snapshot buffer driven by a delay model ([`SnapshotEngine`]), or an engine of a preset's own
//! (Mirror's timeline, Netcode for GameObjects' interpolator, a user's buffer).

use jitterlab_capture::{Nanos, Sample};

use crate::adapt::Applier;
use crate::buffer::{Counters, Packet, Pick, Push, SnapshotBuffer};
pub use crate::external::{Script, ScriptFrame};
use crate::policy::{Apply, BufferConfig, DelayModel};

/// What an engine did with its timeline at one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The playout delay in force.
    pub delay: Nanos,
    /// The render target on the sender's clock.
    pub target: Nanos,
    /// The display stood still because the delay grew faster than time passed (jump mode).
    pub frozen: bool,
    /// Playback ran faster or slower than real time at this frame (stretch mode).
    pub scaled: bool,
}

/// Chooses the delay an adaptive policy wants, from the packets that have arrived.
pub trait Controller: Send {
    /// A packet arrived (duplicates excluded).
    fn on_arrival(&mut self, s: &Sample);

    /// The delay wanted at local time `now`.
    fn target(&mut self, now: Nanos) -> Nanos;
}

/// One playout engine, advanced frame by frame. The replay loop is generic over it, so each
/// engine's per-packet and per-frame steps inline into the loop.
pub trait Engine: Send {
    /// Offers packet `p` (its sample is `sample`, number `p.idx` of the stream), processed in
    /// the frame at local time `at`; returns whether it was a duplicate. The sample is lent for
    /// the call only: a streaming replay keeps only the samples a pick can still name.
    fn push(&mut self, sample: &Sample, p: Packet, at: Nanos) -> bool;

    /// Advances to the frame at local time `at` (`now` on the sender's clock) and picks what
    /// is shown.
    fn frame(&mut self, at: Nanos, now: Nanos) -> (Applied, Pick);

    /// What became of the packets so far.
    fn counters(&self) -> Counters;

    /// Send time of the newest sample held.
    fn newest_send(&self) -> Option<Nanos>;

    /// The lowest sample index (`Packet::idx`) any later pick may name: a streaming replay
    /// drops the samples below it. `None`: none held. The default keeps every sample (0), right
    /// for any engine and bounded for none.
    fn oldest_idx(&self) -> Option<u32> {
        Some(0)
    }

    /// Whether the engine must see the whole replay's inputs ([`Script`]) before its first
    /// frame (an external policy answers frames in batches; `docs/external-policy.md`).
    fn needs_script(&self) -> bool {
        false
    }

    /// Gives the engine every packet and frame of the replay to come, in order, before the
    /// replay loop runs; called once, only when [`Engine::needs_script`] says so.
    ///
    /// # Errors
    /// The engine cannot answer them (an external policy's child failed).
    fn load_script(&mut self, samples: &[Sample], script: &Script) -> Result<(), crate::Error> {
        let _ = (samples, script);
        Ok(())
    }
}

impl Engine for Box<dyn Engine> {
    #[inline]
    fn push(&mut self, sample: &Sample, p: Packet, at: Nanos) -> bool {
        (**self).push(sample, p, at)
    }

    #[inline]
    fn frame(&mut self, at: Nanos, now: Nanos) -> (Applied, Pick) {
        (**self).frame(at, now)
    }

    fn counters(&self) -> Counters {
        (**self).counters()
    }

    #[inline]
    fn newest_send(&self) -> Option<Nanos> {
        (**self).newest_send()
    }

    fn oldest_idx(&self) -> Option<u32> {
        (**self).oldest_idx()
    }

    fn needs_script(&self) -> bool {
        (**self).needs_script()
    }

    fn load_script(&mut self, samples: &[Sample], script: &Script) -> Result<(), crate::Error> {
        (**self).load_script(samples, script)
    }
}

/// jitterlab's snapshot buffer (C4–C11) with a fixed delay or an adaptive controller.
pub struct SnapshotEngine {
    buffer: SnapshotBuffer,
    /// The delay, when fixed: no controller runs.
    fixed_delay: Option<Nanos>,
    /// The controller, for an adaptive delay.
    controller: Option<Box<dyn Controller>>,
    /// How the controller's targets are applied.
    applier: Applier,
}

impl SnapshotEngine {
    /// A snapshot buffer configured by `buffer`, its delay chosen by `delay` (an
    /// [`DelayModel::Own`] model is taken as a zero fixed delay).
    pub fn new(buffer: BufferConfig, delay: DelayModel) -> Self {
        let (fixed_delay, controller, apply) = match delay {
            DelayModel::Fixed(d) => (Some(d), None, Apply::Jump),
            DelayModel::Adaptive { controller, apply } => (None, Some(controller), apply),
            DelayModel::Own => (Some(Nanos::ZERO), None, Apply::Jump),
        };
        Self {
            buffer: SnapshotBuffer::new(buffer),
            fixed_delay,
            controller,
            applier: Applier::new(apply),
        }
    }
}

// `inline(always)`: the replay loop has a copy per frame source, and with more than one
// caller LLVM stopped inlining these on its own (588 instead of 477 instructions per frame of
// a fixed-delay replay, callgrind).
impl Engine for SnapshotEngine {
    #[inline(always)]
    fn push(&mut self, sample: &Sample, p: Packet, _at: Nanos) -> bool {
        let duplicate = self.buffer.offer(p) == Push::Duplicate;
        // A fixed delay has no controller to feed.
        if !duplicate
            && self.fixed_delay.is_none()
            && let Some(controller) = &mut self.controller
        {
            controller.on_arrival(sample);
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
            None => {
                let wanted = self
                    .controller
                    .as_mut()
                    .map_or(Nanos::ZERO, |c| c.target(at));
                self.applier.step(at, now, wanted)
            }
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

    fn oldest_idx(&self) -> Option<u32> {
        self.buffer.oldest_idx()
    }
}
