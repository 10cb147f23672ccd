//! The player that drives a VoIP media buffer (the `speex`, `pjsip` and `baresip` presets):
//! an audio device asks for one frame every frame period, and the slot events it hears.
//!
//! These buffers do not know a play time per frame: a player calls their `get` every
//! *ptime* (the frame period) and plays whatever comes back. jitterlab models that player as
//! a clock on the receiver's side: its `k`-th call is at `first arrival + phase·ptime +
//! k·ptime`, local time. `phase` (0 to below 1) is where the free-running device clock falls
//! relative to the first packet; packets that arrive at the same instant as a call are put
//! before it. The clock does not drift against the receiver's clock (the capture's own
//! arrival times carry any drift between sender and receiver).
//!
//! [`Emitter`] turns what a buffer hands out into one [`PlayoutEvent`] per slot, in sequence
//! order: a slot is `Played` when the listener hears its frame, and `Concealed` otherwise:
//! missing when its turn came, dropped by the buffer (too late, discarded to shrink the
//! buffer, skipped by a jump), or passed over. `arrived_late` says whether the frame arrived
//! at all (as NetEq's playout reports flushed and discarded frames). Media time the buffer
//! skipped and silence it inserted are counted by each preset in the run's `removed` and
//! `inserted`.

use jitterlab_capture::Nanos;

use super::{PlayoutEvent, PlayoutRun, PlayoutStream, Slot, Targets};

/// The frame period a preset plays at: `ptime` when set, else the stream's usual slot
/// duration ([`PlayoutStream::frame_duration`]), at least 1 ms.
pub fn ptime(stream: &PlayoutStream<'_>, ptime: Option<Nanos>) -> Nanos {
    ptime
        .unwrap_or_else(|| stream.frame_duration())
        .max(Nanos::from_millis(1))
}

/// The local time of the player's first call: the first arrival plus `phase` of a period.
pub fn first_call(stream: &PlayoutStream<'_>, period: Nanos, phase: f64) -> Option<Nanos> {
    let first = stream.units().iter().map(|u| u.arrival).min()?;
    Some(first + Nanos((period.as_nanos() as f64 * phase) as i64))
}

/// Each unit's slot index, in arrival order (units outside the slots are left out).
pub fn arrivals(stream: &PlayoutStream<'_>) -> Vec<(Nanos, usize)> {
    let slots = stream.slots();
    let Some(first) = slots.first().map(|s| s.seq) else {
        return Vec::new();
    };
    let mut out: Vec<(Nanos, usize)> = stream
        .units()
        .iter()
        .filter_map(|u| {
            let i = usize::try_from(u.seq - first).ok()?;
            (i < slots.len()).then_some((u.arrival, i))
        })
        .collect();
    // Units are in arrival order already; a stable sort keeps ties in capture order.
    out.sort_by_key(|a| a.0);
    out
}

/// Emits one event per slot, in sequence order, as a buffer hands frames out.
#[derive(Debug)]
pub struct Emitter<'s> {
    slots: &'s [Slot],
    cursor: usize,
    events: Vec<PlayoutEvent>,
    targets: Vec<Nanos>,
}

impl<'s> Emitter<'s> {
    /// An emitter for `slots`, with room for every event.
    pub fn new(slots: &'s [Slot]) -> Self {
        Self {
            slots,
            cursor: 0,
            events: Vec::with_capacity(slots.len()),
            targets: Vec::with_capacity(slots.len()),
        }
    }

    /// The first slot without an event.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Whether every slot has its event.
    pub fn done(&self) -> bool {
        self.cursor >= self.slots.len()
    }

    fn concealed_one(&mut self, i: usize, at: Nanos, target: Nanos) {
        self.events.push(PlayoutEvent::Concealed {
            seq: self.slots[i].seq,
            at,
            arrived_late: self.slots[i].arrival.is_some(),
        });
        self.targets.push(target);
    }

    /// Slots before `i` not yet emitted were passed over: concealed at `at`. Returns how many.
    pub fn pass_before(&mut self, i: usize, at: Nanos, target: Nanos) -> usize {
        let end = i.min(self.slots.len());
        let n = end.saturating_sub(self.cursor);
        for j in self.cursor..end {
            self.concealed_one(j, at, target);
        }
        self.cursor = self.cursor.max(end);
        n
    }

    /// Slot `i` is heard at `at` (slots before it not yet emitted were passed over). Returns
    /// `false` if `i` already had its event (the buffer played it a second time).
    pub fn played(&mut self, i: usize, at: Nanos, target: Nanos) -> bool {
        if i < self.cursor || i >= self.slots.len() {
            return false;
        }
        self.pass_before(i, at, target);
        self.events.push(PlayoutEvent::Played {
            seq: self.slots[i].seq,
            at,
        });
        self.targets.push(target);
        self.cursor = i + 1;
        true
    }

    /// Slot `i` (and any before it not yet emitted) is not heard at `at`. Returns `false` if
    /// `i` already had its event.
    pub fn concealed(&mut self, i: usize, at: Nanos, target: Nanos) -> bool {
        if i < self.cursor || i >= self.slots.len() {
            return false;
        }
        self.pass_before(i, at, target);
        self.concealed_one(i, at, target);
        self.cursor = i + 1;
        true
    }

    /// The run: slots left without an event are concealed at `at` (the stream ended first).
    pub fn finish(
        mut self,
        at: Nanos,
        target: Nanos,
        inserted: Nanos,
        removed: Nanos,
    ) -> PlayoutRun {
        self.pass_before(self.slots.len(), at, target);
        PlayoutRun {
            events: self.events,
            detail: None,
            targets: Targets::PerEvent(self.targets),
            inserted,
            removed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(seq: i64, arrived: bool) -> Slot {
        Slot {
            seq,
            send: Nanos::from_millis(seq * 20),
            arrival: arrived.then(|| Nanos::from_millis(seq * 20 + 5)),
            duration: Nanos::from_millis(20),
            size: 160,
            silent: false,
            talkspurt: seq == 0,
        }
    }

    #[test]
    fn one_event_per_slot_in_order_and_none_twice() {
        let slots = [slot(0, true), slot(1, false), slot(2, true), slot(3, true)];
        let mut e = Emitter::new(&slots);
        let t = Nanos::from_millis(40);
        assert!(e.played(0, Nanos::from_millis(20), t));
        // Slot 1 passed over when 2 plays.
        assert!(e.played(2, Nanos::from_millis(40), t));
        assert!(!e.played(1, Nanos::from_millis(60), t));
        assert!(!e.played(2, Nanos::from_millis(60), t));
        let run = e.finish(Nanos::from_millis(80), t, Nanos::ZERO, Nanos::ZERO);
        let seqs: Vec<(i64, bool)> = run
            .events
            .iter()
            .map(|e| match *e {
                PlayoutEvent::Played { seq, .. } => (seq, true),
                PlayoutEvent::Concealed { seq, .. } => (seq, false),
            })
            .collect();
        assert_eq!(seqs, [(0, true), (1, false), (2, true), (3, false)]);
        assert_eq!(run.target(3), Some(t));
    }
}
