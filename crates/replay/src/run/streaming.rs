//! One streaming pass: a trace's samples replayed as they are read, every stream through
//! every policy side by side, holding per stream only its window and not the stream.
//!
//! A replay of a whole prepared stream ([`super::Prepared`]) reads three things a reader in
//! arrival order does not have yet: the error reference around a frame's target (samples
//! still in flight, or ground truth not yet read), the spikes of the network delay series
//! (a spike starts at the packet *before* the one that shows it, and its end is known when
//! it closes), and how long the frames go on (until the last arrival plus the delay). So:
//!
//! - the engines and every figure but error and recovery run as the samples come;
//! - a frame's error waits (the samples it showed are kept) until the reference is final
//!   around its target: some point after the target was sent well before the newest point read
//!   (the *horizon*, at least [`HORIZON`], or twice the most a point was overtaken by one
//!   sent after it, whichever is more); a frame's recovery inputs wait until the spike
//!   detector has seen a packet after the frame and no spike is open that started before it;
//! - the samples a pick may still name are kept (the engine's oldest held one and the recent
//!   frames a correction distance looks back at); the rest are dropped;
//! - at the end of the trace every stream renders its remaining frames, per policy as far as
//!   that policy's delay reaches.
//!
//! The `hindsight` clock mapping needs each stream's largest `send − arrival` before its first
//! frame: a first pass finds it ([`crate::HindsightOffsets`], a [`SampleSink`]) and
//! [`StreamingReplay::with_hindsight`] replays the second with it.
//!
//! The figures are the in-memory path's, bit for bit. Where a trace breaks an assumption the
//! pass relies on (records of a stream out of arrival order, a point read later than the
//! horizon allows, ground truth that starts after errors were measured without it), the
//! pass says so ([`Unstreamable`]) instead of giving other figures, and the caller replays
//! the trace in memory.

use std::collections::VecDeque;
use std::sync::Arc;

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{Sample, SampleSink, StreamInfo};

use super::frames::{OpenFrames, renders};
use super::lane::{Lane, LoggedFrame, Source};
use super::reference::{Growing, Placed, ReferenceTrack};
use super::{FrameClock, Stream};
use crate::bound::NeedsSketch;
use crate::buffer::{Packet, SeqWindow};
use crate::clock::{ClockMapping, HindsightOffsets, OnlineClock};
use crate::engine::{Engine, SnapshotEngine};
use crate::metrics::{Metrics, Reference};
use crate::policy::{Built, Policy};
use crate::recovery::{Detector, Spike, SpikeRule};
use crate::sweep::StreamNeeds;

/// Runs `$body` with `$lane` (and its policy index and delay) for every lane of `$lanes`.
macro_rules! each_lane {
    ($lanes:expr, |$i:pat_param, $delay:pat_param, $lane:ident| $body:expr) => {{
        for ($i, $delay, $lane) in $lanes.snapshot.iter_mut() {
            $body
        }
        for ($i, $delay, $lane) in $lanes.own.iter_mut() {
            $body
        }
    }};
}

/// The least horizon (sender clock) a frame's error waits for: a point sent this much before
/// the newest point read is final.
pub const HORIZON: Nanos = Nanos::from_millis(2000);

/// Samples read between two trims of a stream's window.
const TRIM_EVERY: u64 = 1024;

/// Samples read between two measurements of what waits (tests trim, and measure, at every
/// sample).
const SETTLE_EVERY: u64 = 32;

/// Why a trace cannot be replayed in one pass with the in-memory path's figures.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unstreamable {
    /// The frame clock or clock mapping needs the whole stream.
    #[error(
        "the clock mapping `hindsight` needs every stream whole (a first pass gives it: \
         StreamingReplay::with_hindsight)"
    )]
    Hindsight,
    /// A policy cannot run in a streaming pass.
    #[error("policy {policy} {why}")]
    Policy {
        /// The policy.
        policy: String,
        /// Why not.
        why: &'static str,
    },
    /// The trace broke an assumption the pass relies on.
    #[error("stream {stream}: {why}")]
    Trace {
        /// The stream, as the reader numbered it.
        stream: u32,
        /// What happened.
        why: String,
    },
}

/// What a streaming replay gives per stream (as the reader numbered it): its received
/// samples and, per policy in order, the metrics.
#[derive(Clone, Debug)]
pub struct StreamedStream {
    /// The stream's number as the reader gave it ([`Sample::stream`] before renumbering).
    pub stream: u32,
    /// Its value channel names, as they were when its first sample was read.
    pub channels: Vec<String>,
    /// Received samples.
    pub packets: u64,
    /// Per policy, the metrics.
    pub metrics: Vec<Metrics>,
    /// With [`StreamingReplay::needs`]: each frame's `(local time, need ms)` from the first
    /// arrival to the last, as [`crate::FramePlan`] computes them for the bounds, listed, or
    /// sketched when the trace had more frames than the cap; `None` without.
    pub needs: Option<StreamNeeds>,
    /// With [`StreamingReplay::log_frames`], for the stream logged: per policy, the frames
    /// not yet handed out by [`StreamingReplay::drain_frames`] (the last ones); empty
    /// otherwise.
    pub logged: Vec<Vec<LoggedFrame>>,
}

/// Replays every stream of a trace through several policies in one pass, as the trace is
/// read ([`SampleSink`]): see the module documentation.
pub struct StreamingReplay {
    ctx: Ctx,
    policies: Vec<Policy>,
    /// By the reader's stream number.
    streams: Vec<Option<Box<Live>>>,
    broken: Option<Unstreamable>,
    needs_kept: usize,
    /// The stream whose frames are logged (reader's numbering), and whether with values.
    logged: Option<(u32, bool)>,
}

impl std::fmt::Debug for StreamingReplay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamingReplay")
            .field("frames", &self.ctx.frames)
            .field("policies", &self.policies.len())
            .field("streams", &self.streams.len())
            .field("broken", &self.broken)
            .finish()
    }
}

impl StreamingReplay {
    /// A pass replaying through each of `policies`, rendering frames by `frames` with the
    /// clock mapping `clock`.
    ///
    /// # Errors
    /// [`Unstreamable`] for what needs the whole stream: the `hindsight` mapping, a policy
    /// that answers in batches over the whole replay (`exec:`), or one that only plays
    /// discrete frames; [`crate::Error`] for an invalid frame clock (given as the
    /// `Unstreamable::Policy` of no policy).
    pub fn new(
        frames: &FrameClock,
        clock: ClockMapping,
        policies: &[Policy],
    ) -> Result<Self, Unstreamable> {
        let constant_offset = match clock {
            ClockMapping::Hindsight => return Err(Unstreamable::Hindsight),
            ClockMapping::Fixed(o) => Some(o),
            ClockMapping::Estimated => None,
        };
        for policy in policies {
            Self::check(policy)?;
        }
        let list: Arc<[Nanos]> = match frames {
            FrameClock::At(times) => times.as_slice().into(),
            _ => Arc::from(Vec::new()),
        };
        Ok(Self {
            ctx: Ctx {
                frames: frames.clone(),
                list,
                constant_offset,
                offsets: None,
                horizon: HORIZON,
                trim_every: TRIM_EVERY,
                needs_cap: 0,
                sketch_needs: false,
            },
            policies: policies.to_vec(),
            streams: Vec::new(),
            broken: None,
            needs_kept: 0,
            logged: None,
        })
    }

    /// As [`Self::new`] under the `hindsight` clock mapping, with every stream's offset known
    /// from a first pass over the same trace (`offsets`): each stream's frames are mapped by
    /// its own constant offset, as the in-memory replay maps them. A stream the first pass did
    /// not see stops the pass ([`Self::broken`]).
    ///
    /// # Errors
    /// As [`Self::new`], for the policies and the frame clock.
    pub fn with_hindsight(
        frames: &FrameClock,
        offsets: &HindsightOffsets,
        policies: &[Policy],
    ) -> Result<Self, Unstreamable> {
        let mut pass = Self::new(frames, ClockMapping::Estimated, policies)?;
        pass.ctx.offsets = Some(
            (0..offsets.streams() as u32)
                .map(|id| offsets.offset(id).unwrap_or(Nanos::ZERO))
                .collect(),
        );
        Ok(pass)
    }

    /// Also keeps, per stream, every frame's need from the first arrival to the last (what
    /// [`crate::FramePlan`] gives [`crate::bound`]), listed up to `cap` frames over all
    /// streams; once a trace has more, every stream's needs are sketched instead
    /// ([`crate::bound::NeedsSketch`]: bounded memory, bounds within its stated error).
    pub fn needs(mut self, cap: usize) -> Self {
        self.ctx.needs_cap = cap;
        self
    }

    /// Logs every frame of stream `stream` (the reader's number, [`Sample::stream`]) through
    /// every policy, startup frames included, each once its error is final (with the values
    /// it showed when `values`): [`StreamingReplay::drain_frames`] hands them out as the pass
    /// goes, [`StreamedStream::logged`] the last ones. Frames wait at most as long as their
    /// error does, so the log holds a few seconds of frames.
    pub fn log_frames(mut self, stream: u32, values: bool) -> Self {
        self.logged = Some((stream, values));
        self
    }

    /// Hands `f` the logged frames that are final, per policy (its index) in frame order,
    /// and forgets them.
    pub fn drain_frames(&mut self, mut f: impl FnMut(usize, LoggedFrame)) {
        let Some(live) = self
            .logged
            .and_then(|(id, _)| self.streams.get_mut(id as usize))
            .and_then(Option::as_mut)
        else {
            return;
        };
        each_lane!(live.lanes, |i, _, lane| lane
            .drain_log(|frame| f(*i, frame)));
    }

    /// The least horizon a frame's error waits for (default [`HORIZON`]): shorter holds
    /// fewer frames, and gives up ([`Unstreamable`]) on more traces.
    pub fn horizon(mut self, horizon: Nanos) -> Self {
        self.ctx.horizon = horizon.max(Nanos::ZERO);
        self
    }

    /// Samples read between two trims of a stream's window (default 1,024); tests trim at
    /// every sample.
    #[doc(hidden)]
    pub fn trim_every(mut self, samples: u64) -> Self {
        self.ctx.trim_every = samples.max(1);
        self
    }

    /// Whether `policy` can run in a streaming pass.
    ///
    /// # Errors
    /// It cannot, and why.
    pub fn check(policy: &Policy) -> Result<(), Unstreamable> {
        let refuse = |why| {
            Err(Unstreamable::Policy {
                policy: policy.to_string(),
                why,
            })
        };
        if policy.playout_only() {
            return refuse("only plays discrete frames");
        }
        if let Built::Own(engine) = policy.engine()
            && engine.needs_script()
        {
            return refuse("answers in batches over the whole replay");
        }
        Ok(())
    }

    /// The next received (`truth` false) or ground-truth sample, in the trace's order;
    /// `channels` are its stream's value channel names as known so far (read at the stream's
    /// first sample only).
    pub fn push(&mut self, sample: Sample, truth: bool, channels: Option<&[String]>) {
        if self.broken.is_some() {
            return;
        }
        let id = sample.stream as usize;
        if self.streams.len() <= id {
            self.streams.resize_with(id + 1, || None);
        }
        let logged = self
            .logged
            .and_then(|(id, values)| (id == sample.stream).then_some(values));
        let offset = match &self.ctx.offsets {
            None => self.ctx.constant_offset,
            Some(offsets) => match offsets.get(id) {
                Some(&o) => Some(o),
                None => {
                    self.broken = Some(Unstreamable::Trace {
                        stream: sample.stream,
                        why: "the first pass over the trace did not see this stream".into(),
                    });
                    return;
                }
            },
        };
        let live = self.streams[id].get_or_insert_with(|| {
            let mut live = Box::new(Live::new(
                sample.stream,
                channels.map(<[String]>::to_vec).unwrap_or_default(),
                &self.policies,
            ));
            if let Some(values) = logged {
                each_lane!(live.lanes, |_, _, lane| lane.log_frames(values));
            }
            live.offset = offset;
            if self.ctx.sketch_needs {
                live.needs.sketch();
            }
            live
        });
        let ctx = &self.ctx;
        let before = live.needs.listed();
        let result = if truth {
            live.truth(sample, ctx)
        } else {
            live.receive(sample, ctx)
        };
        if self.ctx.needs_cap > 0 {
            let after = live.needs.listed();
            self.needs_kept += after - before;
            if self.needs_kept > self.ctx.needs_cap {
                // Too many frames to list: every stream's are sketched from now on.
                self.ctx.needs_cap = 0;
                self.ctx.sketch_needs = true;
                for live in self.streams.iter_mut().flatten() {
                    live.needs.sketch();
                }
            }
        }
        if let Err(why) = result {
            self.broken = Some(Unstreamable::Trace {
                stream: id as u32,
                why,
            });
        }
    }

    /// The problem met so far, if any: every figure from then on would be wrong, so the
    /// caller may stop reading.
    pub fn broken(&self) -> Option<&Unstreamable> {
        self.broken.as_ref()
    }

    /// How many samples the streams hold now, over all of them (windows, references and
    /// frames waiting for their error): what the pass's memory grows with.
    pub fn held(&self) -> usize {
        self.streams
            .iter()
            .flatten()
            .map(|l| l.window.samples.len() + l.window.reference.len() + l.pending_truth.len())
            .sum()
    }

    /// Ends the trace: every stream renders its remaining frames.
    ///
    /// # Errors
    /// The trace broke an assumption of the pass (see the module documentation).
    pub fn finish(self) -> Result<Vec<StreamedStream>, Unstreamable> {
        if let Some(broken) = self.broken {
            return Err(broken);
        }
        let mut out = Vec::new();
        for live in self.streams.into_iter().flatten() {
            let stream = live.stream;
            out.push(
                live.finish(&self.ctx, &self.policies)
                    .map_err(|why| Unstreamable::Trace { stream, why })?,
            );
        }
        Ok(out)
    }
}

impl SampleSink for StreamingReplay {
    fn samples(&mut self, samples: &mut Vec<Sample>, truth: bool, streams: &[StreamInfo]) {
        for s in samples.drain(..) {
            let info = streams.get(s.stream as usize);
            self.push(s, truth, info.map(|i| i.channels.as_slice()));
        }
    }
}

/// What every stream shares: the frame clock (its times, when it lists them), the clock
/// offset when it is constant, and the pass's settings.
struct Ctx {
    frames: FrameClock,
    list: Arc<[Nanos]>,
    constant_offset: Option<Nanos>,
    /// Under the `hindsight` mapping, each stream's offset (by the reader's number).
    offsets: Option<Arc<[Nanos]>>,
    horizon: Nanos,
    trim_every: u64,
    /// Keep every frame's need for the bounds, up to this many frames over all streams (0:
    /// none).
    needs_cap: usize,
    /// More frames than `needs_cap` came: their needs are sketched.
    sketch_needs: bool,
}

impl Ctx {
    /// Whether frames' needs are kept.
    fn needs(&self) -> bool {
        self.needs_cap > 0 || self.sketch_needs
    }
}

/// The samples of a stream still being read that a lane may read.
struct Window {
    /// Samples `base..`, by index.
    samples: VecDeque<Sample>,
    base: u32,
    reference: ReferenceTrack,
    rotation: Option<usize>,
    /// Per sample, the answer of [`Source::consecutive`] for it and the sample it was asked
    /// with (`(to + 1) << 1 | answer`; 0: not asked): the same for every lane, asked by each.
    pairs: VecDeque<std::cell::Cell<u64>>,
}

impl Source for Window {
    const STREAMING: bool = true;

    #[inline(always)]
    fn sample(&self, idx: u32) -> &Sample {
        &self.samples[(idx - self.base) as usize]
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
    fn adjacent_in_reference(&self, _from: u32, _to: u32) -> bool {
        false
    }

    #[inline]
    fn consecutive(&self, cursor: &mut usize, from: u32, to: u32) -> bool {
        // Asked once both are final, so the answer stands: the first lane to ask finds it.
        let memo = &self.pairs[(from - self.base) as usize];
        let known = memo.get();
        if known >> 1 == u64::from(to) + 1 {
            return known & 1 == 1;
        }
        let answer = self
            .reference
            .consecutive(cursor, self.sample(from), self.sample(to));
        memo.set(((u64::from(to) + 1) << 1) | u64::from(answer));
        answer
    }

    #[inline(always)]
    fn spikes(&self) -> &[Spike] {
        &[]
    }
}

/// Which points the error reference is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Not known before the first sample.
    Unknown,
    /// Every received sample (the stream has no ground truth, so far).
    Hindsight,
    /// The ground truth.
    Truth,
}

/// One stream's lanes: per policy, its lane and longest delay; jitterlab's snapshot buffer
/// in one vector (its steps inline), the engines of presets' own in the other.
struct Lanes {
    snapshot: Vec<Slot<SnapshotEngine>>,
    own: Vec<Slot<Box<dyn Engine>>>,
}

/// A lane with its policy's index and longest delay (its recent frames kept as a stream of a
/// few frames needs).
type Slot<E> = (usize, Nanos, Lane<E, Growing>);

/// Frames rendered but not yet run through the lanes ([`Live::flush`]), with the packets
/// each offers first.
#[derive(Default)]
struct Batch {
    frames: Vec<BatchFrame>,
    packets: Vec<Packet>,
}

impl Batch {
    /// Runs the batched frames through `lane`, each after the packets it offers.
    #[inline(always)]
    fn run<E: Engine>(&self, lane: &mut Lane<E, Growing>, window: &Window, value: &mut Vec<f64>) {
        for frame in &self.frames {
            for &packet in &self.packets[frame.packets.clone()] {
                lane.packet(window, packet, frame.at);
            }
            lane.frame::<false, _>(window, frame.at, frame.offset, value, &mut |_| {});
        }
    }
}

/// One batched frame: its local time, clock offset and packets (a range of
/// [`Batch::packets`]).
struct BatchFrame {
    at: Nanos,
    offset: Nanos,
    packets: std::ops::Range<usize>,
}

/// One stream being read.
struct Live {
    stream: u32,
    channels: Vec<String>,
    window: Window,
    lanes: Lanes,
    mode: Mode,
    /// Ground truth read before the first received sample (which names the error channels).
    pending_truth: Vec<Sample>,
    seen: SeqWindow,
    /// Received samples.
    count: u64,
    first: Option<Nanos>,
    last: Nanos,
    frames: Option<OpenFrames>,
    /// The last frame rendered while the stream was read: (number, time).
    rendered: Option<(u64, Nanos)>,
    /// Samples (by index) that arrived after the last frame rendered: the next frame offers
    /// them to the lanes that render it, as the in-memory loop does.
    queued: Vec<u32>,
    /// Frames rendered while the stream is read, not yet run through the lanes.
    batch: Batch,
    /// The stream's constant clock offset (a fixed mapping, or its hindsight offset), else
    /// the online estimate is used.
    offset: Option<Nanos>,
    online: OnlineClock,
    /// The newest send time among the reference's points read, and the most a point was
    /// overtaken by one sent after it.
    newest_point: Nanos,
    overtaken: Nanos,
    /// Errors have been measured against reference points sent up to this time: a point
    /// placed at or before it would change them.
    measured_to: Nanos,
    /// A point left out as a repeat of another with a different send time: placing a point
    /// between the two later would keep both in the in-memory reference.
    repeat_moved: bool,
    detector: Detector,
    spikes: Vec<Spike>,
    ever_referenced: bool,
    /// The newest send time offered to the lanes, and the frames' needs (for the bounds).
    newest_offered: Option<Nanos>,
    needs: KeptNeeds,
}

/// A stream's frames' needs (for the bounds), while its pass keeps them.
enum KeptNeeds {
    Listed(Vec<(Nanos, f64)>),
    Sketched(Box<NeedsSketch>),
}

impl KeptNeeds {
    /// How many are listed.
    fn listed(&self) -> usize {
        match self {
            Self::Listed(l) => l.len(),
            Self::Sketched(_) => 0,
        }
    }

    fn push(&mut self, at: Nanos, need: f64) {
        match self {
            Self::Listed(l) => l.push((at, need)),
            Self::Sketched(s) => s.push(at, need),
        }
    }

    /// Sketches the needs listed, and those to come.
    fn sketch(&mut self) {
        if let Self::Listed(l) = self {
            *self = Self::Sketched(Box::new(NeedsSketch::of(l)));
        }
    }

    fn into_needs(self) -> StreamNeeds {
        match self {
            Self::Listed(l) => StreamNeeds::Listed(l),
            Self::Sketched(s) => StreamNeeds::Sketched(s),
        }
    }
}

impl Live {
    fn new(stream: u32, channels: Vec<String>, policies: &[Policy]) -> Self {
        let mut lanes = Lanes {
            snapshot: Vec::new(),
            own: Vec::new(),
        };
        for (i, policy) in policies.iter().enumerate() {
            let delay = policy.max_delay();
            match policy.engine() {
                Built::Snapshot(engine) => {
                    lanes
                        .snapshot
                        .push((i, delay, Lane::of_stream(stream, None, true, *engine)));
                }
                Built::Own(engine) => {
                    lanes
                        .own
                        .push((i, delay, Lane::of_stream(stream, None, false, engine)));
                }
            }
        }
        Self {
            stream,
            window: Window {
                samples: VecDeque::new(),
                base: 0,
                reference: ReferenceTrack::empty(Vec::new()),
                rotation: crate::values::rotation_channels(&channels),
                pairs: VecDeque::new(),
            },
            channels,
            lanes,
            mode: Mode::Unknown,
            pending_truth: Vec::new(),
            seen: SeqWindow::new(),
            count: 0,
            first: None,
            last: Nanos::MIN,
            frames: None,
            rendered: None,
            queued: Vec::new(),
            batch: Batch::default(),
            offset: None,
            online: OnlineClock::new(),
            newest_point: Nanos::MIN,
            overtaken: Nanos::ZERO,
            measured_to: Nanos::MIN,
            repeat_moved: false,
            detector: Detector::new(SpikeRule::default()),
            spikes: Vec::new(),
            ever_referenced: false,
            newest_offered: None,
            needs: KeptNeeds::Listed(Vec::new()),
        }
    }

    /// A ground-truth sample.
    fn truth(&mut self, s: Sample, ctx: &Ctx) -> Result<(), String> {
        match self.mode {
            Mode::Truth => self.place(&s, ctx),
            Mode::Unknown => {
                self.pending_truth.push(s);
                Ok(())
            }
            Mode::Hindsight if self.measured_to == Nanos::MIN => {
                // Nothing measured yet: the reference becomes the ground truth from here.
                let channels = self.window.reference.channels.clone();
                self.window.reference = ReferenceTrack::empty(channels);
                self.newest_point = Nanos::MIN;
                self.overtaken = Nanos::ZERO;
                self.repeat_moved = false;
                self.ever_referenced = false;
                self.mode = Mode::Truth;
                self.place(&s, ctx)
            }
            Mode::Hindsight => Err(format!(
                "ground truth starts at {} ms, after errors were measured against hindsight",
                s.send.as_millis_f64()
            )),
        }
    }

    /// Adds a point to the error reference.
    fn place(&mut self, s: &Sample, ctx: &Ctx) -> Result<(), String> {
        if s.values.is_empty() {
            return Ok(());
        }
        if s.send > self.newest_point {
            self.newest_point = s.send;
        } else {
            self.overtaken = self.overtaken.max(self.newest_point - s.send);
        }
        let last = self.window.reference.len();
        let at = match self.window.reference.insert(s) {
            Placed::At(at) => at,
            Placed::Replaced(at) => {
                // A point sent before its sequence number's earlier one: in memory, a point
                // placed between the two later would keep both.
                self.repeat_moved = true;
                at
            }
            Placed::Repeat { same_send } => {
                self.repeat_moved |= !same_send;
                return Ok(());
            }
            Placed::NoValues => return Ok(()),
        };
        self.ever_referenced = true;
        if s.send <= self.measured_to {
            return Err(format!(
                "a sample sent at {} ms was read after errors up to {} ms were measured \
                 (more than the {} ms horizon late)",
                s.send.as_millis_f64(),
                self.measured_to.as_millis_f64(),
                self.horizon(ctx).as_millis_f64()
            ));
        }
        if self.repeat_moved && at < last {
            return Err(
                "a point placed between two copies of one sequence number sent at different \
                 times"
                    .to_owned(),
            );
        }
        Ok(())
    }

    /// How far behind the newest point a point is taken as final.
    fn horizon(&self, ctx: &Ctx) -> Nanos {
        ctx.horizon.max(self.overtaken + self.overtaken)
    }

    /// The first received sample: it names the error channels.
    fn start(&mut self, s: &Sample, ctx: &Ctx) -> Result<(), String> {
        let channels = Stream {
            samples: std::slice::from_ref(s),
            truth: &[],
            channels: &self.channels,
        }
        .error_channels();
        self.window.reference = ReferenceTrack::empty(channels);
        self.first = Some(s.arrival);
        self.frames = Some(OpenFrames::new(&ctx.frames, &ctx.list, s.arrival));
        if self.pending_truth.is_empty() {
            self.mode = Mode::Hindsight;
        } else {
            self.mode = Mode::Truth;
            for t in std::mem::take(&mut self.pending_truth) {
                self.place(&t, ctx)?;
            }
        }
        Ok(())
    }

    /// A received sample.
    fn receive(&mut self, s: Sample, ctx: &Ctx) -> Result<(), String> {
        if self.first.is_none() {
            self.start(&s, ctx)?;
        } else if s.arrival < self.last {
            return Err(format!(
                "a record arrived at {} ms after one at {} ms (not in arrival order)",
                s.arrival.as_millis_f64(),
                self.last.as_millis_f64()
            ));
        }
        // The frames before it.
        while let Some((at, k)) = self.frames.as_ref().and_then(OpenFrames::peek)
            && at < s.arrival
        {
            self.render(at, k, ctx, false, |_| true);
            if let Some(f) = &mut self.frames {
                f.advance();
            }
        }
        // The sample itself, in the next frame.
        let idx = u32::try_from(self.count).map_err(|_| "more than 2^32 samples".to_owned())?;
        self.count += 1;
        self.last = s.arrival;
        if self.mode == Mode::Hindsight {
            self.place(&s, ctx)?;
        }
        let (arrival, send) = (s.arrival, s.send);
        self.window.samples.push_back(s);
        self.window.pairs.push_back(std::cell::Cell::new(0));
        // After the last frame (a list of frame times run out), a sample is never offered.
        if self.frames.as_ref().and_then(OpenFrames::peek).is_some() {
            self.queued.push(idx);
        }
        if let Some(spike) = self.detector.push(arrival, send) {
            self.spikes.push(spike);
        }
        // Measured in bursts: what waits is measured in order whenever it is, so later is the
        // same, only held a little longer.
        if self.count.is_multiple_of(SETTLE_EVERY.min(ctx.trim_every)) {
            self.settle(false, ctx)?;
        }
        if self.count.is_multiple_of(ctx.trim_every) {
            self.trim(ctx.trim_every);
        }
        Ok(())
    }

    /// Renders frame `k` at `at` in the lanes whose delay `wanted` picks.
    /// `end`: after the stream's last arrival. Frames before it are batched ([`Batch`]):
    /// they reach the lanes at the next [`Self::flush`].
    fn render(&mut self, at: Nanos, k: u64, ctx: &Ctx, end: bool, wanted: impl Fn(Nanos) -> bool) {
        if end {
            self.flush();
        }
        let window = &self.window;
        let first_packet = self.batch.packets.len();
        for idx in self.queued.drain(..) {
            let sample = window.sample(idx);
            let mut packet = Packet::from_sample(sample, idx);
            packet.repeat = Some(!self.seen.insert(packet.seq));
            if self.offset.is_none() {
                self.online.observe(packet.send, sample.arrival);
            }
            if end {
                each_lane!(self.lanes, |_, delay, lane| if wanted(*delay) {
                    lane.packet(window, packet, at);
                });
            } else {
                self.batch.packets.push(packet);
            }
            let newest = self.newest_offered.get_or_insert(packet.send);
            *newest = (*newest).max(packet.send);
        }
        let offset = match self.offset {
            Some(o) => o,
            None => self.online.offset_at(at),
        };
        // The frames from the first arrival to the last (`FramePlan::needs_ms`): every frame
        // rendered while the stream is read, and those at the end up to its last arrival.
        if ctx.needs()
            && (!end || at <= self.last)
            && let Some(newest) = self.newest_offered
        {
            self.needs
                .push(at, (at + offset - newest).as_nanos() as f64 * 1e-6);
        }
        if end {
            let mut value = Vec::new();
            each_lane!(self.lanes, |_, delay, lane| if wanted(*delay) {
                lane.frame::<false, _>(window, at, offset, &mut value, &mut |_| {});
            });
        } else {
            self.batch.frames.push(BatchFrame {
                at,
                offset,
                packets: first_packet..self.batch.packets.len(),
            });
        }
        self.rendered = Some((k, at));
    }

    /// Runs the frames batched since the last flush through every lane, lane by lane: one
    /// lane's buffer, recent frames and metrics stay in the cache over the whole batch, where
    /// frame by frame every lane's would be read again at each frame (a pass of 100 lanes
    /// holds megabytes of them). Each lane sees the same packets and frames in the same order
    /// as frame by frame: lanes share nothing but the window, which holds every sample a
    /// batched frame names until the flush (nothing trims it in between).
    fn flush(&mut self) {
        if self.batch.frames.is_empty() {
            return;
        }
        let (window, batch) = (&self.window, &self.batch);
        let mut value = Vec::new();
        each_lane!(self.lanes, |_, _, lane| batch.run(lane, window, &mut value));
        self.batch.frames.clear();
        self.batch.packets.clear();
    }

    /// Measures what is final: errors of targets before a reference point inside the
    /// horizon, recovery of frames the spike detector has passed (all of it at the end).
    /// The frames batched run first, lane by lane, each lane measured right after its own (its
    /// state read once for both).
    fn settle(&mut self, end: bool, ctx: &Ctx) -> Result<(), String> {
        let (errors_before, recovery_before) = if end {
            (Nanos::MAX, Nanos::MAX)
        } else {
            let final_to = self.window.reference.last_before(Nanos(
                self.newest_point.0.saturating_sub(self.horizon(ctx).0),
            ));
            let errors = final_to.unwrap_or(Nanos::MIN);
            let mut recovery = self.detector.last_arrival().unwrap_or(Nanos::MIN);
            if let Some(open) = self.detector.open() {
                recovery = recovery.min(open.start);
            }
            (errors, recovery)
        };
        if errors_before > self.measured_to {
            self.measured_to = errors_before;
        }
        let (window, spikes, batch) = (&self.window, &self.spikes, &self.batch);
        let mut held = true;
        let mut value = Vec::new();
        each_lane!(self.lanes, |_, _, lane| {
            batch.run(lane, window, &mut value);
            held &= lane.settle(window, errors_before, spikes, recovery_before);
        });
        self.batch.frames.clear();
        self.batch.packets.clear();
        if held {
            Ok(())
        } else {
            Err("a frame's target stepped back behind the reference points the pass keeps".into())
        }
    }

    /// Drops the samples, reference points and spikes no lane will read again.
    fn trim(&mut self, every: u64) {
        self.flush();
        let mut oldest = self.queued.first().copied().unwrap_or(self.count as u32);
        let (mut lowest, mut spikes) = (Some(Nanos::MAX), usize::MAX);
        each_lane!(self.lanes, |_, delay, lane| {
            if let Some(i) = lane.oldest_idx() {
                oldest = oldest.min(i);
            }
            // The samples of frames waiting for their error stay.
            if let Some(i) = lane.oldest_pending() {
                oldest = oldest.min(i);
            }
            // And the reference points from the last at or before any target still to be
            // measured (a frame before any has none to keep).
            lowest = lowest
                .zip(lane.lowest_target(*delay, HORIZON))
                .map(|(a, b)| a.min(b));
            spikes = spikes.min(lane.spikes_reached());
        });
        let window = &mut self.window;
        let drop = (oldest - window.base) as usize;
        window.samples.drain(..drop.min(window.samples.len()));
        window.pairs.drain(..drop.min(window.pairs.len()));
        window.base += drop as u32;
        let keep = lowest.map_or(0, |t| {
            window
                .reference
                .sends
                .partition_point(|&s| s <= t)
                .saturating_sub(1)
        });
        if keep as u64 >= every {
            window.reference.forget(keep);
            each_lane!(self.lanes, |_, _, lane| lane.forget_reference(keep));
        }
        if spikes as u64 >= every.div_ceil(16) && spikes != usize::MAX {
            self.spikes.drain(..spikes);
            each_lane!(self.lanes, |_, _, lane| lane.forget_spikes(spikes));
        }
    }

    /// The end of the trace: the remaining frames, per policy as far as its delay reaches.
    fn finish(mut self, ctx: &Ctx, policies: &[Policy]) -> Result<StreamedStream, String> {
        let mut metrics = vec![Metrics::default(); policies.len()];
        let Some(first) = self.first else {
            // Ground truth only: nothing to replay, as in memory.
            return Ok(StreamedStream {
                stream: self.stream,
                channels: self.channels,
                packets: 0,
                metrics,
                needs: ctx.needs().then(|| self.needs.into_needs()),
                logged: Vec::new(),
            });
        };
        self.flush();
        let span = (first, self.last);
        let frames = &ctx.frames;
        // Every frame rendered while the stream was read must be one each policy renders
        // (true of every frame before the last arrival; checked).
        let mut short = false;
        each_lane!(self.lanes, |_, delay, _lane| {
            if let Some((k, at)) = self.rendered {
                short |= !renders(frames, span, *delay, k, at);
            }
        });
        if short {
            return Err("a policy's frames end before the stream's last arrival".to_owned());
        }
        while let Some((at, k)) = self.frames.as_ref().and_then(OpenFrames::peek) {
            let any = self
                .lanes
                .snapshot
                .iter()
                .map(|l| l.1)
                .chain(self.lanes.own.iter().map(|l| l.1))
                .any(|delay| renders(frames, span, delay, k, at));
            if !any {
                break;
            }
            self.render(at, k, ctx, true, |delay| {
                renders(frames, span, delay, k, at)
            });
            if let Some(f) = &mut self.frames {
                f.advance();
            }
        }
        if let Some(open) = self.detector.open() {
            self.spikes.push(open);
        }
        self.settle(true, ctx)?;
        let kind = self.ever_referenced.then_some(match self.mode {
            Mode::Truth => Reference::Truth,
            _ => Reference::Hindsight,
        });
        let count = self.count;
        let mut logged = Vec::new();
        each_lane!(self.lanes, |i, _, lane| {
            if lane.logs() {
                logged.resize_with(policies.len(), Vec::new);
                lane.drain_log(|f| logged[*i].push(f));
            }
        });
        for (i, _, lane) in self.lanes.snapshot {
            debug_assert!(lane.settled());
            metrics[i] = lane.finish_with(count);
            metrics[i].reference = kind;
        }
        for (i, _, lane) in self.lanes.own {
            debug_assert!(lane.settled());
            metrics[i] = lane.finish_with(count);
            metrics[i].reference = kind;
        }
        Ok(StreamedStream {
            stream: self.stream,
            channels: self.channels,
            packets: count,
            metrics,
            needs: ctx.needs().then(|| self.needs.into_needs()),
            logged,
        })
    }
}
