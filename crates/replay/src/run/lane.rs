//! One replay's state in the replay loop: its engine and what it has measured so far, and the
//! frame it reports.

use std::collections::VecDeque;

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

use super::prepare::Prepared;
use super::reference::{Fixed, Recent, ReferenceTrack, Ring, Shown, correction};
use crate::buffer::{HoldReason, Mode, Packet};
use crate::engine::Engine;
use crate::metrics::Metrics;
use crate::recovery::Spike;

/// What a lane reads of its stream: a whole [`Prepared`] stream, or the window of one that a
/// streaming replay keeps ([`super::streaming`]), where a frame's error and recovery wait
/// until the reference and the spikes around it are final.
pub(super) trait Source {
    /// Error and recovery are deferred ([`Lane::settle`]); there are no per-frame callbacks.
    const STREAMING: bool;
    /// Sample `idx` of the stream (still held, for a window).
    fn sample(&self, idx: u32) -> &Sample;
    /// The error reference.
    fn reference(&self) -> &ReferenceTrack;
    /// The first rotation channel, if any.
    fn rotation(&self) -> Option<usize>;
    /// Whether samples `from` and `to` are neighbours in the reference, as themselves (the
    /// zero-error shortcut; never for a stream still being read).
    fn adjacent_in_reference(&self, from: u32, to: u32) -> bool;
    /// Whether samples `from` and `to` are two consecutive points of the reference, asked
    /// once both are final ([`ReferenceTrack::consecutive`], `cursor` its hint).
    fn consecutive(&self, cursor: &mut usize, from: u32, to: u32) -> bool {
        self.reference()
            .consecutive(cursor, self.sample(from), self.sample(to))
    }
    /// The stream's spikes (those closed so far, for a stream still being read).
    fn spikes(&self) -> &[Spike];
}

impl Source for Prepared<'_> {
    const STREAMING: bool = false;

    #[inline(always)]
    fn sample(&self, idx: u32) -> &Sample {
        &self.samples[idx as usize]
    }

    #[inline(always)]
    fn reference(&self) -> &ReferenceTrack {
        &self.reference
    }

    #[inline(always)]
    fn rotation(&self) -> Option<usize> {
        self.rotation
    }

    #[inline(always)]
    fn adjacent_in_reference(&self, from: u32, to: u32) -> bool {
        let at = self.ref_pos[from as usize];
        at != u32::MAX && self.ref_pos[to as usize] == at + 1
    }

    #[inline(always)]
    fn spikes(&self) -> &[Spike] {
        &self.spikes
    }
}

/// A streaming lane's frames whose error or recovery is not yet known, in frame order.
#[derive(Default)]
pub(super) struct Deferred {
    /// Per frame with something shown: what it showed.
    errors: VecDeque<Pending>,
    /// (local time, display delay, held) per frame after startup.
    recovery: VecDeque<(Nanos, Option<Nanos>, bool)>,
}

/// What a frame showed, to measure its error once the reference is final around its target:
/// the samples it showed (kept in the window until then) rather than the values.
#[derive(Clone, Copy)]
struct Pending {
    target: Nanos,
    from: u32,
    /// `u32::MAX` for none.
    to: u32,
    alpha: f64,
    /// Not a startup frame: its error counts.
    counted: bool,
    /// Interpolated strictly between `from` and `to` at a factor computed as the reference's
    /// is: when the two are consecutive points of the reference, its error is exactly 0.
    inside: bool,
}

/// A frame as a streaming pass logs it ([`super::StreamingReplay::log_frames`]): what
/// [`Frame`] says of it, its error (and shown values, when asked for) once the reference
/// around its target is final. [`LoggedFrame::frame`] lends it as a [`Frame`].
#[derive(Clone, Debug, PartialEq)]
pub struct LoggedFrame {
    /// Local render time.
    pub at: Nanos,
    /// Target time on the sender's clock.
    pub target: Nanos,
    /// How the frame was shown.
    pub mode: Mode,
    /// Why it was held.
    pub hold: Option<HoldReason>,
    /// Interpolation factor, when interpolating.
    pub alpha: Option<f64>,
    /// The left (or held) sample: its index among the stream's received samples.
    pub from: Option<u32>,
    /// The right sample, when interpolating.
    pub to: Option<u32>,
    /// The shown values: empty unless the pass logs values, or when nothing is shown.
    pub value: Vec<f64>,
    /// The shown discrete state.
    pub state: Option<u32>,
    /// Sender time of what is shown.
    pub shown: Option<Nanos>,
    /// Display delay: mapped now − shown.
    pub delay: Option<Nanos>,
    /// Samples buffered at or after the target.
    pub depth: usize,
    /// The policy's playout delay in force.
    pub buffer_delay: Nanos,
    /// The timeline stood still rather than step backwards.
    pub frozen: bool,
    /// Time buffered ahead of the target.
    pub ahead: Option<Nanos>,
    /// Distance from the reference at the target time.
    pub error: Option<f64>,
    /// Before playback started.
    pub startup: bool,
}

impl LoggedFrame {
    /// The frame as [`Frame`] of stream `stream`.
    pub fn frame(&self, stream: u32) -> Frame<'_> {
        Frame {
            stream,
            at: self.at,
            target: self.target,
            mode: self.mode,
            hold: self.hold,
            alpha: self.alpha,
            from: self.from,
            to: self.to,
            value: &self.value,
            state: self.state,
            shown: self.shown,
            delay: self.delay,
            depth: self.depth,
            buffer_delay: self.buffer_delay,
            frozen: self.frozen,
            ahead: self.ahead,
            error: self.error,
            startup: self.startup,
        }
    }
}

/// A streaming lane's logged frames, in frame order: those at the front that are final are
/// handed out; `waiting` marks those whose error (and values) are still to be measured.
#[derive(Default)]
struct FrameTap {
    frames: VecDeque<(LoggedFrame, bool)>,
    /// Index of the first frame still waiting (or past the last).
    fill: usize,
    /// Measure the shown values too.
    values: bool,
}

/// The values (into `value`) and state a frame showed: sample `from`, or `from` and `to`
/// blended by `alpha` (C7, rotation by slerp, C14).
#[inline(always)]
fn shown_value<S: Source>(
    source: &S,
    from: u32,
    to: Option<u32>,
    alpha: f64,
    value: &mut Vec<f64>,
) -> Option<u32> {
    let a = source.sample(from);
    match to {
        Some(to) => {
            let b = source.sample(to);
            // C7: value = a + (b − a)·alpha, per channel.
            value.extend(
                a.values
                    .iter()
                    .zip(&b.values)
                    .map(|(x, y)| x + (y - x) * alpha),
            );
            // C14: rotation by slerp, not by a linear blend.
            if let Some(r) = source.rotation()
                && r + 4 <= value.len()
            {
                let q = |v: &[f64]| [v[r], v[r + 1], v[r + 2], v[r + 3]];
                let s = crate::values::slerp(q(&a.values), q(&b.values), alpha);
                value[r..r + 4].copy_from_slice(&s);
            }
            if alpha >= 1.0 { b.state } else { a.state }
        }
        None => {
            value.extend_from_slice(&a.values);
            a.state
        }
    }
}

/// One rendered frame: what the player saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame<'a> {
    /// The stream (entity).
    pub stream: u32,
    /// Local render time (C1: render time decides when to sample).
    pub at: Nanos,
    /// Target time on the sender's clock: mapped now − delay (C6).
    pub target: Nanos,
    /// How the frame was shown.
    pub mode: Mode,
    /// Why it was held.
    pub hold: Option<HoldReason>,
    /// Interpolation factor, when interpolating.
    pub alpha: Option<f64>,
    /// The left (or held) sample: an index into the replayed slice.
    pub from: Option<u32>,
    /// The right sample, when interpolating.
    pub to: Option<u32>,
    /// The shown values (empty when nothing is shown or the stream has none).
    pub value: &'a [f64],
    /// The shown discrete state: switched at the sample's send time, never averaged (C14).
    pub state: Option<u32>,
    /// Sender time of what is shown.
    pub shown: Option<Nanos>,
    /// Display delay: mapped now − shown.
    pub delay: Option<Nanos>,
    /// Samples buffered at or after the target.
    pub depth: usize,
    /// The policy's playout delay in force at this frame.
    pub buffer_delay: Nanos,
    /// The timeline stood still at this frame rather than step backwards (a jump to a longer
    /// delay).
    pub frozen: bool,
    /// Time buffered ahead of the target: newest held send time − target (negative while
    /// the player starves).
    pub ahead: Option<Nanos>,
    /// Distance from the reference at the target time.
    pub error: Option<f64>,
    /// Before playback started (the target has not yet reached the first sample).
    pub startup: bool,
}

/// One replay's state in the replay loop: its engine and what it has measured so far; `R`
/// keeps its recent frames (see [`Recent`]).
pub(super) struct Lane<E, R = Fixed> {
    engine: E,
    metrics: Metrics,
    recent: Recent<R>,
    /// Where the error reference was last read.
    cursor: usize,
    prev_target: Option<Nanos>,
    started: bool,
    /// Frames whose error is exactly 0, added to the histogram at the end.
    zero_errors: u64,
    /// The zero-error shortcut needs the factor computed from the same nanosecond expression
    /// as the reference's; Mirror and NGO compute their own in seconds.
    exact_alpha: bool,
    stream_id: u32,
    deferred: Deferred,
    /// Streaming, when the pass logs this lane's frames.
    tap: Option<Box<FrameTap>>,
}

impl<E: Engine> Lane<E> {
    pub(super) fn new(prepared: &Prepared<'_>, exact_alpha: bool, engine: E) -> Self {
        Self::of_stream(
            prepared.samples[0].stream,
            prepared.reference_kind,
            exact_alpha,
            engine,
        )
    }
}

impl<E: Engine, R: Ring> Lane<E, R> {
    /// A lane for stream `stream_id`, its error measured against `reference`.
    pub(super) fn of_stream(
        stream_id: u32,
        reference: Option<crate::metrics::Reference>,
        exact_alpha: bool,
        engine: E,
    ) -> Self {
        let mut metrics = Metrics::default();
        metrics.reference = reference;
        Self {
            engine,
            metrics,
            recent: Recent::new(),
            cursor: 0,
            prev_target: None,
            started: false,
            zero_errors: 0,
            exact_alpha,
            stream_id,
            deferred: Deferred::default(),
            tap: None,
        }
    }

    /// A packet, processed in the frame at local time `at`.
    #[inline(always)]
    pub(super) fn packet<S: Source>(&mut self, source: &S, packet: Packet, at: Nanos) {
        let duplicate = self.engine.push(source.sample(packet.idx), packet, at);
        self.metrics.packets += 1;
        // A sample for a moment already displayed: how far off was what was shown then?
        if !duplicate
            && let Some(last) = self.prev_target
            && packet.send < last
            && let Some(d) = correction(
                |i| source.sample(i),
                &self.recent,
                source.reference(),
                packet.idx,
            )
        {
            self.metrics.correction.add(d);
        }
    }

    /// The frame at local time `at`, whose clock offset is `offset`.
    #[inline(always)]
    pub(super) fn frame<const FRAMES: bool, S: Source>(
        &mut self,
        source: &S,
        at: Nanos,
        offset: Nanos,
        value: &mut Vec<f64>,
        on_frame: &mut impl FnMut(&Frame<'_>),
    ) {
        let reference = source.reference();
        let metrics = &mut self.metrics;
        let (applied, pick) = self.engine.frame(at, at + offset);
        let target = applied.target;
        if !reference.channels.is_empty() {
            self.recent.push(Shown::new(
                target,
                pick.from.unwrap_or(u32::MAX),
                pick.to.unwrap_or(u32::MAX),
                pick.factor,
            ));
        }
        if self.prev_target.is_some_and(|p| target < p) {
            metrics.backward_steps += 1;
        }
        self.prev_target = Some(target);
        let startup = !self.started
            && (pick.mode == Mode::Empty || pick.hold == Some(HoldReason::BeforeOldest));
        self.started |= !startup;
        let mut state = None;
        let error = if FRAMES {
            value.clear();
            if let Some(from) = pick.from {
                state = shown_value(source, from, pick.to, pick.alpha(), value);
                reference.error_at(&mut self.cursor, target, value, None)
            } else {
                None
            }
        } else if S::STREAMING {
            // Deferred: `settle` measures it once the reference around the target is final.
            None
        } else {
            match (pick.from, pick.to) {
                // Interpolating strictly inside a pair that is adjacent in the reference: the
                // reference interpolates the same two points with the same factor, so the error
                // is exactly 0 (the frame-by-frame path computes it; a property test checks both
                // agree bit for bit).
                (Some(from), Some(to))
                    if self.exact_alpha
                        && pick.factor.below_one()
                        && source.adjacent_in_reference(from, to) =>
                {
                    // Counted in bulk at the end (interpolated frames are never startup
                    // frames, and adding zeros in any order leaves the sum as it is).
                    self.zero_errors += 1;
                    None
                }
                (Some(from), Some(to)) => reference.error_at(
                    &mut self.cursor,
                    target,
                    &source.sample(from).values,
                    Some((&source.sample(to).values, pick.alpha())),
                ),
                (Some(from), None) => {
                    reference.error_at(&mut self.cursor, target, &source.sample(from).values, None)
                }
                _ => None,
            }
        };
        if S::STREAMING
            && let Some(from) = pick.from
        {
            // Measured once the reference is final around the target, from the samples shown
            // (kept in the window until then). Startup frames too: measuring moves the
            // reference cursor, as in the frame-by-frame replay.
            self.deferred.errors.push_back(Pending {
                target,
                from,
                to: pick.to.unwrap_or(u32::MAX),
                alpha: pick.alpha(),
                counted: !startup,
                inside: self.exact_alpha && pick.to.is_some() && pick.factor.below_one(),
            });
        }
        let shown_delay = pick.shown.map(|s| at + offset - s);
        metrics.frame(pick.mode, pick.hold, startup);
        if !startup {
            metrics.timeline(applied.delay, applied.frozen, applied.scaled);
            if let Some(newest) = self.engine.newest_send() {
                metrics.sample_age.add((at + offset - newest).as_nanos());
            }
            metrics.depth(pick.depth);
            if let Some(d) = shown_delay {
                // A multiplication, not `as_millis_f64`'s division: the histogram's buckets
                // are 0.8 % wide, and a division per frame is a long stall.
                metrics.delay_ms.add(d.as_nanos() as f64 * 1e-6);
            }
            let held = pick.mode == Mode::Hold;
            if S::STREAMING {
                self.deferred.recovery.push_back((at, shown_delay, held));
            } else {
                if let Some(e) = error {
                    metrics.error.add(e);
                }
                metrics
                    .recovery
                    .frame(source.spikes(), at, shown_delay, held);
            }
        }
        if S::STREAMING
            && let Some(tap) = &mut self.tap
        {
            let logged = LoggedFrame {
                at,
                target,
                mode: pick.mode,
                hold: pick.hold,
                alpha: pick.from.and(pick.to).map(|_| pick.alpha()),
                from: pick.from,
                to: pick.to,
                value: Vec::new(),
                state: None,
                shown: pick.shown,
                delay: shown_delay,
                depth: pick.depth,
                buffer_delay: applied.delay,
                frozen: applied.frozen,
                ahead: self.engine.newest_send().map(|n| n - target),
                error: None,
                startup,
            };
            tap.frames.push_back((logged, pick.from.is_some()));
        }
        if FRAMES {
            on_frame(&Frame {
                stream: self.stream_id,
                at,
                target,
                mode: pick.mode,
                hold: pick.hold,
                alpha: pick.from.and(pick.to).map(|_| pick.alpha()),
                from: pick.from,
                to: pick.to,
                value,
                state,
                shown: pick.shown,
                delay: shown_delay,
                depth: pick.depth,
                ahead: self.engine.newest_send().map(|n| n - target),
                buffer_delay: applied.delay,
                frozen: applied.frozen,
                error,
                startup,
            });
        }
    }

    /// The metrics, once the frames are over.
    pub(super) fn finish(self, prepared: &Prepared<'_>) -> Metrics {
        self.finish_with(prepared.arrivals.len() as u64)
    }

    /// The metrics, once the frames are over, of a stream of `arrivals` packets.
    pub(super) fn finish_with(mut self, arrivals: u64) -> Metrics {
        self.metrics.error.add_zeros(self.zero_errors);
        self.metrics.recovery.finish();
        self.metrics.counters = self.engine.counters();
        self.metrics.pending = arrivals - self.metrics.packets;
        self.metrics
    }

    /// Streaming: measures the deferred errors of frames whose target is before `errors_before`
    /// against `source`'s reference (final that far), and the deferred recovery of frames
    /// rendered before `recovery_before` against `spikes` (every spike that starts by then,
    /// closed), in frame order. `false` when a frame's target lies before the points the
    /// reference still holds (it forgot one the frame needs): its error cannot be measured.
    pub(super) fn settle<S: Source>(
        &mut self,
        source: &S,
        errors_before: Nanos,
        spikes: &[Spike],
        recovery_before: Nanos,
    ) -> bool {
        let reference = source.reference();
        while let Some(&p) = self.deferred.errors.front()
            && p.target < errors_before
        {
            let a = source.sample(p.from);
            // Between two consecutive points of the reference, both final: exactly 0, as the
            // in-memory replay counts it (without measuring).
            let zero = p.inside && {
                let b = source.sample(p.to);
                b.send < errors_before && source.consecutive(&mut self.cursor, p.from, p.to)
            };
            if !zero && !reference.holds_floor(p.target) {
                return false;
            }
            self.deferred.errors.pop_front();
            let error = if zero {
                if p.counted {
                    self.zero_errors += 1;
                }
                Some(0.0)
            } else {
                let b = (p.to != u32::MAX).then(|| (&source.sample(p.to).values[..], p.alpha));
                let error = reference.error_at(&mut self.cursor, p.target, &a.values, b);
                if p.counted
                    && let Some(e) = error
                {
                    self.metrics.error.add(e);
                }
                error
            };
            if let Some(tap) = &mut self.tap {
                // The next frame that showed something: this one.
                while let Some((_, false)) = tap.frames.get(tap.fill) {
                    tap.fill += 1;
                }
                if let Some((f, waiting)) = tap.frames.get_mut(tap.fill) {
                    let to = (p.to != u32::MAX).then_some(p.to);
                    f.state = if tap.values {
                        shown_value(source, p.from, to, p.alpha, &mut f.value)
                    } else {
                        match to {
                            Some(to) if p.alpha >= 1.0 => source.sample(to).state,
                            _ => source.sample(p.from).state,
                        }
                    };
                    f.error = error;
                    *waiting = false;
                    tap.fill += 1;
                }
            }
        }
        while let Some(&(at, delay, held)) = self.deferred.recovery.front()
            && at < recovery_before
        {
            self.deferred.recovery.pop_front();
            self.metrics.recovery.frame(spikes, at, delay, held);
        }
        true
    }

    /// Streaming: logs this lane's frames ([`Lane::drain_log`]), with their shown values
    /// when `values`.
    pub(super) fn log_frames(&mut self, values: bool) {
        self.tap.get_or_insert_with(Box::default).values = values;
    }

    /// Whether this lane logs its frames.
    pub(super) fn logs(&self) -> bool {
        self.tap.is_some()
    }

    /// Hands `f` the logged frames that are final, in frame order.
    pub(super) fn drain_log(&mut self, mut f: impl FnMut(LoggedFrame)) {
        let Some(tap) = &mut self.tap else {
            return;
        };
        let mut taken = 0;
        while let Some((_, false)) = tap.frames.front() {
            if let Some((frame, _)) = tap.frames.pop_front() {
                f(frame);
            }
            taken += 1;
        }
        tap.fill = tap.fill.saturating_sub(taken);
    }

    /// The lowest sample index a frame waiting for its error shows.
    pub(super) fn oldest_pending(&self) -> Option<u32> {
        self.deferred.errors.iter().map(|p| p.from.min(p.to)).min()
    }

    /// The earliest target whose error this lane may still measure, for a policy whose delay
    /// is at most `max_delay`: its frames waiting for their error, and the frames to come,
    /// whose targets follow the mapped local time less at most `max_delay` (`margin` more, to
    /// spare). `None`: no frame yet.
    pub(super) fn lowest_target(&self, max_delay: Nanos, margin: Nanos) -> Option<Nanos> {
        let ahead = Nanos(
            self.prev_target?
                .0
                .saturating_sub(max_delay.0.max(0))
                .saturating_sub(margin.0),
        );
        Some(
            self.deferred
                .errors
                .iter()
                .map(|p| p.target)
                .fold(ahead, Nanos::min),
        )
    }

    /// The first `count` reference entries were dropped.
    pub(super) fn forget_reference(&mut self, count: usize) {
        self.cursor = self.cursor.saturating_sub(count);
    }

    /// How many spikes this lane's recovery has reached.
    pub(super) fn spikes_reached(&self) -> usize {
        self.metrics.recovery.spikes_reached()
    }

    /// The first `count` spikes were dropped.
    pub(super) fn forget_spikes(&mut self, count: usize) {
        self.metrics.recovery.forget_spikes(count);
    }

    /// The lowest sample index this lane may still read: its engine's oldest held sample and
    /// the recent frames a correction distance looks back to.
    pub(super) fn oldest_idx(&self) -> Option<u32> {
        let held = self.engine.oldest_idx();
        let recent = self.recent.oldest_idx();
        match (held, recent) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether every deferred frame is settled.
    pub(super) fn settled(&self) -> bool {
        self.deferred.errors.is_empty() && self.deferred.recovery.is_empty()
    }
}
