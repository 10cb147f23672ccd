//! The deterministic replay driver: arrivals and a frame clock in, per-frame samples and
//! metrics out. Time is always an argument; nothing here reads a file or the OS clock.
//!
//! The driver is split by job: `frames` (when frames render, the clock offset at each),
//! `prepare` (a stream prepared once: arrival order, duplicates, offset, reference),
//! `reference` (the error reference and correction distances), `lane` (one replay's state
//! in the loop) and `trace` (every stream of a decoded trace). [`Replay`] is the one door in
//! front of them.

mod frames;
mod lane;
mod prepare;
mod reference;
mod streaming;
mod trace;

pub use frames::{FrameClock, FramePlan};
pub use lane::{Frame, LoggedFrame};
pub use prepare::{Prepared, Stream};
pub use streaming::{HORIZON, StreamedStream, StreamingReplay, Unstreamable};
pub use trace::{StreamPlayout, TracePlayout, TraceReplay};
use trace::{playout_trace, replay_trace};

use jitterlab_capture::Nanos;

use crate::Error;
use crate::clock::ClockMapping;
use crate::engine::Engine;
use crate::metrics::Metrics;
use crate::policy::{Built, Policy};
use frames::{FrameSource, LiveFrames, PlannedFrames};
use lane::Lane;

/// The one door to a replay: how frames are rendered and how the sender's clock maps to the
/// local one, then what to run: one stream with a per-frame callback ([`Replay::frames`]) or
/// metrics only ([`Replay::metrics`], the fast path), a batch of configurations over a plan
/// computed once ([`Replay::plan`], then [`FramePlan::batch`]), every stream of a decoded trace
/// ([`Replay::trace`]) or its discrete playout ([`Replay::playout`]). Whether a policy runs
/// on jitterlab's snapshot buffer, an engine of its own or its own playout logic is the
/// policy's choice ([`crate::Preset`]), never the caller's.
///
/// ```
/// use jitterlab_capture::{Nanos, Sample};
/// use jitterlab_replay::{ClockMapping, FrameClock, Policy, Prepared, Replay, Stream};
///
/// let samples: Vec<Sample> = (0..100)
///     .map(|i| Sample::new(0, i, Nanos::from_millis(50 * i), Nanos::from_millis(50 * i + 20)))
///     .collect();
/// let prepared = Prepared::new(&Stream::new(&samples));
/// let replay = Replay::new(FrameClock::Fps(60.0)).clock(ClockMapping::Hindsight);
/// let policies: Vec<Policy> = ["fixed:delay=50ms", "fixed:delay=100ms"]
///     .iter()
///     .map(|p| p.parse())
///     .collect::<Result<_, _>>()?;
/// let plan = replay.plan(&prepared, Nanos::from_millis(100))?;
/// let batch = plan.batch(&prepared, &policies)?;
/// assert_eq!(batch[1].summary(), replay.metrics(&prepared, &policies[1])?.summary());
/// # Ok::<(), jitterlab_replay::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    frames: FrameClock,
    clock: ClockMapping,
    quality: crate::playout::QualityOptions,
}

impl Replay {
    /// Replays rendering frames by `frames`, with the online clock estimate.
    pub fn new(frames: FrameClock) -> Self {
        Self {
            frames,
            clock: ClockMapping::Estimated,
            quality: crate::playout::QualityOptions::default(),
        }
    }

    /// What discrete playout's quality figures assume (the codec, the network delay).
    pub fn quality(mut self, options: crate::playout::QualityOptions) -> Self {
        self.quality = options;
        self
    }

    /// The clock mapping to use.
    pub fn clock(mut self, clock: ClockMapping) -> Self {
        self.clock = clock;
        self
    }

    /// The frame clock.
    pub fn frame_clock(&self) -> &FrameClock {
        &self.frames
    }

    /// The clock mapping.
    pub fn clock_mapping(&self) -> ClockMapping {
        self.clock
    }

    /// One stream through `policy`, calling `on_frame` for every frame; returns the metrics.
    /// Error is measured against the stream's ground truth if it has one, else against
    /// hindsight (every sample that ever arrived).
    ///
    /// # Errors
    /// An invalid frame clock.
    pub fn stream(
        &self,
        stream: &Stream<'_>,
        policy: &Policy,
        on_frame: impl FnMut(&Frame<'_>),
    ) -> Result<Metrics, Error> {
        self.frames(&Prepared::new(stream), policy, on_frame)
    }

    /// A prepared stream through `policy`, calling `on_frame` for every frame.
    ///
    /// # Errors
    /// An invalid frame clock.
    pub fn frames(
        &self,
        prepared: &Prepared<'_>,
        policy: &Policy,
        mut on_frame: impl FnMut(&Frame<'_>),
    ) -> Result<Metrics, Error> {
        run::<true>(prepared, policy, &self.frames, self.clock, &mut on_frame)
    }

    /// The metrics of a prepared stream through `policy`, without per-frame output (the shown
    /// values are never materialised; error is computed straight from the bracketing samples).
    ///
    /// # Errors
    /// An invalid frame clock.
    pub fn metrics(&self, prepared: &Prepared<'_>, policy: &Policy) -> Result<Metrics, Error> {
        run::<false>(prepared, policy, &self.frames, self.clock, &mut |_| {})
    }

    /// The frame times and clock offsets of `prepared`, computed once for every policy whose
    /// delay is at most `max_delay` (a longer one replays without the plan, to the same
    /// result).
    ///
    /// # Errors
    /// An invalid frame clock.
    pub fn plan(&self, prepared: &Prepared<'_>, max_delay: Nanos) -> Result<FramePlan, Error> {
        FramePlan::new(prepared, &self.frames, self.clock, max_delay)
    }

    /// Every stream of a decoded trace (or only `only`) through `policy`.
    ///
    /// # Errors
    /// An invalid frame clock, or a stream that cannot be replayed (an RTP clock rate unknown).
    pub fn trace(
        &self,
        decoded: &jitterlab_capture::Decoded,
        only: Option<u32>,
        policy: &Policy,
        on_frame: impl FnMut(&Frame<'_>),
    ) -> Result<TraceReplay, Error> {
        replay_trace(decoded, only, policy, &self.frames, self.clock, on_frame)
    }

    /// The discrete playout of every stream of a decoded trace (or only `only`): frames played
    /// at send time + delay, as the policy plays them (the frame clock is not used).
    ///
    /// # Errors
    /// A policy that only interpolates snapshots, or a stream that cannot be replayed.
    pub fn playout(
        &self,
        decoded: &jitterlab_capture::Decoded,
        only: Option<u32>,
        policy: &Policy,
    ) -> Result<TracePlayout, Error> {
        playout_trace(decoded, only, policy, self.clock, self.quality)
    }
}

/// Replays one stream through `policy`, calling `on_frame` for every frame, and returns the
/// metrics.
///
/// Error is measured against the stream's ground truth if it has one, else against hindsight
/// (every sample that ever arrived).
///
/// # Errors
/// An invalid frame clock.
pub(crate) fn replay_stream(
    stream: &Stream<'_>,
    policy: &Policy,
    frames: &FrameClock,
    clock: ClockMapping,
    on_frame: impl FnMut(&Frame<'_>),
) -> Result<Metrics, Error> {
    replay_prepared(&Prepared::new(stream), policy, frames, clock, on_frame)
}

/// [`replay_stream`] over a stream prepared once with [`Prepared::new`].
///
/// # Errors
/// An invalid frame clock.
pub(crate) fn replay_prepared(
    prepared: &Prepared<'_>,
    policy: &Policy,
    frames: &FrameClock,
    clock: ClockMapping,
    mut on_frame: impl FnMut(&Frame<'_>),
) -> Result<Metrics, Error> {
    run::<true>(prepared, policy, frames, clock, &mut on_frame)
}

/// The metrics of replaying a prepared stream through `policy`, without per-frame output:
/// the fast path for sweeps (the shown values are never materialised; error is computed
/// straight from the bracketing samples).
///
/// # Errors
/// An invalid frame clock.
pub(crate) fn replay_metrics(
    prepared: &Prepared<'_>,
    policy: &Policy,
    frames: &FrameClock,
    clock: ClockMapping,
) -> Result<Metrics, Error> {
    run::<false>(prepared, policy, frames, clock, &mut |_| {})
}

/// A media buffer's policy cannot interpolate snapshots.
fn refuse_playout_only(policy: &Policy) -> Result<(), Error> {
    if policy.playout_only() {
        return Err(Error::PlayoutOnly {
            policy: policy.name(),
        });
    }
    Ok(())
}

fn run<const FRAMES: bool>(
    prepared: &Prepared<'_>,
    policy: &Policy,
    frames: &FrameClock,
    clock: ClockMapping,
    on_frame: &mut impl FnMut(&Frame<'_>),
) -> Result<Metrics, Error> {
    frames.validate()?;
    refuse_playout_only(policy)?;
    if prepared.is_empty() {
        return Ok(Metrics::default());
    }
    let max_delay = policy.max_delay();
    dispatch::<FRAMES, _>(
        prepared,
        policy.engine(),
        || LiveFrames::new(prepared, frames, clock, max_delay),
        on_frame,
    )
}

/// Runs the replay loop with `engine`: one copy of the loop per engine type, so each engine's
/// steps inline into it.
fn dispatch<const FRAMES: bool, F: FrameSource>(
    prepared: &Prepared<'_>,
    engine: Built,
    source: impl Fn() -> F,
    on_frame: &mut impl FnMut(&Frame<'_>),
) -> Result<Metrics, Error> {
    // Only jitterlab's own snapshot buffer computes its interpolation factor from the same
    // nanosecond expression as the reference (the zero-error shortcut needs that).
    match engine {
        Built::Snapshot(engine) => Ok(run_engine::<FRAMES, _, _>(
            prepared,
            true,
            *engine,
            source(),
            on_frame,
        )),
        Built::Own(mut engine) => {
            if engine.needs_script() {
                // An external policy answers in batches: it is given the whole replay first
                // (frames and arrivals do not depend on what an engine picks).
                engine.load_script(prepared.samples, &record(prepared, source()))?;
            }
            Ok(run_engine::<FRAMES, _, _>(
                prepared,
                false,
                engine,
                source(),
                on_frame,
            ))
        }
    }
}

/// The packets and frames a replay over `source` goes through, in the replay loop's order.
fn record<F: FrameSource>(prepared: &Prepared<'_>, mut source: F) -> crate::external::Script {
    let arrivals = &prepared.arrivals;
    let mut script = crate::external::Script::default();
    let mut next = 0usize;
    while let Some(at) = source.next_frame() {
        while let Some(arrival) = arrivals.get(next)
            && arrival.at <= at
        {
            source.observe(arrival.packet.send, arrival.at);
            script.packets.push((arrival.packet, arrival.at));
            next += 1;
        }
        let now = at + source.offset(at);
        script.frames.push(crate::external::ScriptFrame {
            at,
            now,
            pushed: script.packets.len(),
        });
    }
    script
}

/// [`replay_metrics`] with the frames and clock offsets read from `plan`, which must have been
/// made for the same prepared stream: the sweep's path.
///
/// # Errors
/// None at present beyond those of `replay_metrics`.
pub(crate) fn replay_planned(
    prepared: &Prepared<'_>,
    plan: &FramePlan,
    policy: &Policy,
) -> Result<Metrics, Error> {
    refuse_playout_only(policy)?;
    if prepared.is_empty() {
        return Ok(Metrics::default());
    }
    match plan.frames_for(policy.max_delay()) {
        Some(count) => dispatch::<false, _>(
            prepared,
            policy.engine(),
            || plan.source(count),
            &mut |_| {},
        ),
        None => replay_metrics(prepared, policy, &plan.frames, plan.clock),
    }
}

impl FramePlan {
    /// The plan's first `count` frames as a frame source.
    fn source(&self, count: usize) -> PlannedFrames<'_> {
        PlannedFrames {
            times: self.times[..count].iter(),
            offset: Nanos::ZERO,
        }
    }

    /// The metrics of `policy` over `prepared` (the stream this plan was made for), exactly as
    /// [`Replay::metrics`] gives them, with the frames and clock offsets read from the plan.
    ///
    /// # Errors
    /// None at present beyond those of [`Replay::metrics`].
    pub fn metrics(&self, prepared: &Prepared<'_>, policy: &Policy) -> Result<Metrics, Error> {
        replay_planned(prepared, self, policy)
    }

    /// The metrics of each of `policies` over `prepared` (the stream this plan was made for),
    /// exactly as [`FramePlan::metrics`] gives them: policies on jitterlab's snapshot buffer
    /// whose delay the plan covers run side by side in one pass, the rest one at a time.
    ///
    /// # Errors
    /// None at present beyond those of [`Replay::metrics`].
    pub fn batch(
        &self,
        prepared: &Prepared<'_>,
        policies: &[Policy],
    ) -> Result<Vec<Metrics>, Error> {
        replay_planned_batch(prepared, self, policies)
    }
}

/// `replay_planned` of several policies in one pass over the stream (the sweep's path): the
/// metrics of each, in order, exactly as `replay_planned` gives them. Policies on jitterlab's
/// snapshot buffer whose delay the plan covers run side by side; the rest one at a time.
pub(crate) fn replay_planned_batch(
    prepared: &Prepared<'_>,
    plan: &FramePlan,
    policies: &[Policy],
) -> Result<Vec<Metrics>, Error> {
    for policy in policies {
        refuse_playout_only(policy)?;
    }
    let mut out = vec![Metrics::default(); policies.len()];
    if prepared.is_empty() {
        return Ok(out);
    }
    let mut lanes = Vec::new();
    let mut which = Vec::new();
    for (i, policy) in policies.iter().enumerate() {
        // Each configuration's engine is built once, whichever way it runs.
        match (policy.engine(), plan.frames_for(policy.max_delay())) {
            (Built::Snapshot(engine), Some(frames)) => {
                lanes.push((Lane::new(prepared, true, *engine), frames));
                which.push(i);
            }
            (engine, Some(count)) => {
                out[i] =
                    dispatch::<false, _>(prepared, engine, || plan.source(count), &mut |_| {})?;
            }
            (_, None) => out[i] = replay_metrics(prepared, policy, &plan.frames, plan.clock)?,
        }
    }
    for (i, m) in which.into_iter().zip(run_lanes(prepared, plan, lanes)) {
        out[i] = m;
    }
    Ok(out)
}

fn run_engine<const FRAMES: bool, E: Engine, F: FrameSource>(
    prepared: &Prepared<'_>,
    exact_alpha: bool,
    engine: E,
    mut source: F,
    on_frame: &mut impl FnMut(&Frame<'_>),
) -> Metrics {
    let arrivals = &prepared.arrivals;
    let mut lane = Lane::new(prepared, exact_alpha, engine);
    let mut next = 0usize;
    let mut value = Vec::new();
    while let Some(at) = source.next_frame() {
        while let Some(arrival) = arrivals.get(next)
            && arrival.at <= at
        {
            source.observe(arrival.packet.send, arrival.at);
            lane.packet(prepared, arrival.packet, at);
            next += 1;
        }
        let offset = source.offset(at);
        lane.frame::<FRAMES, _>(prepared, at, offset, &mut value, on_frame);
    }
    lane.finish(prepared)
}

/// Replays one prepared stream through several policies that share an engine type in one pass
/// over the planned frames and the arrivals: each packet is offered to every lane in turn and
/// each frame rendered by every lane that still renders. Lanes are independent, so each gets
/// exactly what its own replay would; sharing the pass shares its loop and its hard-to-predict
/// "how many packets arrived before this frame" branch.
fn run_lanes<E: Engine>(
    prepared: &Prepared<'_>,
    plan: &FramePlan,
    mut lanes: Vec<(Lane<E>, usize)>,
) -> Vec<Metrics> {
    let arrivals = &prepared.arrivals;
    let frames = lanes.iter().map(|&(_, n)| n).max().unwrap_or(0);
    let mut next = 0usize;
    let mut value = Vec::new();
    for (i, &(at, offset)) in plan.times[..frames].iter().enumerate() {
        while let Some(arrival) = arrivals.get(next)
            && arrival.at <= at
        {
            for (lane, n) in &mut lanes {
                if i < *n {
                    lane.packet(prepared, arrival.packet, at);
                }
            }
            next += 1;
        }
        for (lane, n) in &mut lanes {
            if i < *n {
                lane.frame::<false, _>(prepared, at, offset, &mut value, &mut |_| {});
            }
        }
    }
    lanes
        .into_iter()
        .map(|(lane, _)| lane.finish(prepared))
        .collect()
}
