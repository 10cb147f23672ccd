//! One replay's state in the replay loop: its engine and what it has measured so far, and the
//! frame it reports.

use jitterlab_capture::Nanos;

use super::prepare::Prepared;
use super::reference::{Recent, Shown, correction};
use crate::buffer::{HoldReason, Mode, Packet};
use crate::engine::Engine;
use crate::metrics::Metrics;

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

/// One replay's state in the replay loop: its engine and what it has measured so far.
pub(super) struct Lane<E> {
    engine: E,
    metrics: Metrics,
    recent: Recent,
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
}

impl<E: Engine> Lane<E> {
    pub(super) fn new(prepared: &Prepared<'_>, exact_alpha: bool, engine: E) -> Self {
        let mut metrics = Metrics::default();
        metrics.reference = prepared.reference_kind;
        Self {
            engine,
            metrics,
            recent: Recent::new(),
            cursor: 0,
            prev_target: None,
            started: false,
            zero_errors: 0,
            exact_alpha,
            stream_id: prepared.samples[0].stream,
        }
    }

    /// A packet, processed in the frame at local time `at`.
    #[inline(always)]
    pub(super) fn packet(&mut self, prepared: &Prepared<'_>, packet: Packet, at: Nanos) {
        let samples = prepared.samples;
        let duplicate = self.engine.push(samples, packet, at);
        self.metrics.packets += 1;
        // A sample for a moment already displayed: how far off was what was shown then?
        if !duplicate
            && let Some(last) = self.prev_target
            && packet.send < last
            && let Some(d) = correction(samples, &self.recent, &prepared.reference, packet.idx)
        {
            self.metrics.correction.add(d);
        }
    }

    /// The frame at local time `at`, whose clock offset is `offset`.
    #[inline(always)]
    pub(super) fn frame<const FRAMES: bool>(
        &mut self,
        prepared: &Prepared<'_>,
        at: Nanos,
        offset: Nanos,
        value: &mut Vec<f64>,
        on_frame: &mut impl FnMut(&Frame<'_>),
    ) {
        let samples = prepared.samples;
        let reference = &prepared.reference;
        let metrics = &mut self.metrics;
        let (applied, pick) = self.engine.frame(at, at + offset);
        let target = applied.target;
        if !reference.channels.is_empty() {
            self.recent.push(Shown {
                target,
                from: pick.from.unwrap_or(u32::MAX),
                to: pick.to.unwrap_or(u32::MAX),
                factor: pick.factor,
            });
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
            let alpha = pick.alpha();
            value.clear();
            if let Some(from) = pick.from {
                let a = &samples[from as usize];
                match pick.to {
                    Some(to) => {
                        let b = &samples[to as usize];
                        // C7: value = a + (b − a)·alpha, per channel.
                        value.extend(
                            a.values
                                .iter()
                                .zip(&b.values)
                                .map(|(x, y)| x + (y - x) * alpha),
                        );
                        // C14: rotation by slerp, not by a linear blend.
                        if let Some(r) = prepared.rotation
                            && r + 4 <= value.len()
                        {
                            let q = |v: &[f64]| [v[r], v[r + 1], v[r + 2], v[r + 3]];
                            let s = crate::values::slerp(q(&a.values), q(&b.values), alpha);
                            value[r..r + 4].copy_from_slice(&s);
                        }
                        state = if alpha >= 1.0 { b.state } else { a.state };
                    }
                    None => {
                        value.extend_from_slice(&a.values);
                        state = a.state;
                    }
                }
                reference.error_at(&mut self.cursor, target, value, None)
            } else {
                None
            }
        } else {
            match (pick.from, pick.to) {
                // Interpolating strictly inside a pair that is adjacent in the reference: the
                // reference interpolates the same two points with the same factor, so the error
                // is exactly 0 (the frame-by-frame path computes it; a property test checks both
                // agree bit for bit).
                (Some(from), Some(to))
                    if self.exact_alpha
                        && pick.factor.below_one()
                        && prepared.ref_pos[from as usize] != u32::MAX
                        && prepared.ref_pos[to as usize] == prepared.ref_pos[from as usize] + 1 =>
                {
                    // Counted in bulk at the end (interpolated frames are never startup
                    // frames, and adding zeros in any order leaves the sum as it is).
                    self.zero_errors += 1;
                    None
                }
                (Some(from), Some(to)) => reference.error_at(
                    &mut self.cursor,
                    target,
                    &samples[from as usize].values,
                    Some((&samples[to as usize].values, pick.alpha())),
                ),
                (Some(from), None) => reference.error_at(
                    &mut self.cursor,
                    target,
                    &samples[from as usize].values,
                    None,
                ),
                _ => None,
            }
        };
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
            if let Some(e) = error {
                metrics.error.add(e);
            }
            metrics
                .recovery
                .frame(&prepared.spikes, at, shown_delay, pick.mode == Mode::Hold);
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
    pub(super) fn finish(mut self, prepared: &Prepared<'_>) -> Metrics {
        self.metrics.error.add_zeros(self.zero_errors);
        self.metrics.recovery.finish();
        self.metrics.counters = self.engine.counters();
        self.metrics.pending = prepared.arrivals.len() as u64 - self.metrics.packets;
        self.metrics
    }
}
