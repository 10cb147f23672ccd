//! The deterministic replay driver: arrivals and a frame clock in, per-frame samples and
//! metrics out. Time is always an argument; nothing here reads a file or the OS clock.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{Decoded, Sample};

use crate::Error;
use crate::buffer::{Factor, HoldReason, Mode, Packet};
use crate::clock::ClockMapping;
use crate::engine::{MirrorEngine, NgoEngine, Playout, SnapshotEngine};
use crate::metrics::{Metrics, Reference};
use crate::policy::Policy;

/// When frames are rendered, on the local clock.
#[derive(Clone, Debug, PartialEq)]
pub enum FrameClock {
    /// A fixed rate from the first arrival until the last arrival plus the delay.
    Fps(f64),
    /// The given local times, which must not decrease (`--at`, or a recorded frame-time list).
    At(Vec<Nanos>),
    /// A frame rate with hitches: each frame, with probability `chance`, takes `hitch` longer
    /// (a GC pause, a shader compile, a slow disk), from a seeded generator.
    Hitches {
        /// Nominal frames per second.
        fps: f64,
        /// Probability per frame of a hitch, in [0, 1).
        chance: f64,
        /// Extra time a hitched frame takes.
        hitch: Nanos,
        /// Seed of the hitch generator.
        seed: u64,
    },
}

/// Frame times as they are rendered.
enum FrameTimes<'a> {
    Regular {
        first: Nanos,
        period: f64,
        k: u64,
        count: u64,
    },
    List(std::slice::Iter<'a, Nanos>),
    Hitchy {
        at: Nanos,
        end: Nanos,
        period: Nanos,
        chance: f64,
        hitch: Nanos,
        rng: jitterlab_capture::synth::Rng,
    },
}

impl Iterator for FrameTimes<'_> {
    type Item = Nanos;

    fn next(&mut self) -> Option<Nanos> {
        match self {
            Self::Regular {
                first,
                period,
                k,
                count,
            } => {
                if *k >= *count {
                    return None;
                }
                // `k` fits in i64 (and f64's 53 bits): a signed conversion is one instruction.
                let at = *first + Nanos((*k as i64 as f64 * *period + 0.5) as i64);
                *k += 1;
                Some(at)
            }
            Self::List(it) => it.next().copied(),
            Self::Hitchy {
                at,
                end,
                period,
                chance,
                hitch,
                rng,
            } => {
                if *at > *end {
                    return None;
                }
                let now = *at;
                *at += *period;
                if rng.chance(*chance) {
                    *at += *hitch;
                }
                Some(now)
            }
        }
    }
}

impl FrameClock {
    /// Checks the frame rate or the times.
    ///
    /// # Errors
    /// A rate that is not finite and positive (at most 10 000 fps), or times that decrease.
    pub fn validate(&self) -> Result<(), Error> {
        match self {
            Self::Fps(fps) if !(fps.is_finite() && *fps > 0.0 && *fps <= 10_000.0) => {
                Err(Error::Invalid(format!(
                    "--fps {fps} is out of range (allowed: >0 to 10000)"
                )))
            }
            Self::At(times) => match times.windows(2).position(|w| w[1] < w[0]) {
                Some(i) => Err(Error::Invalid(format!(
                    "--at times must not decrease ({} ms comes after {} ms)",
                    times[i + 1].as_millis_f64(),
                    times[i].as_millis_f64()
                ))),
                None => Ok(()),
            },
            Self::Hitches {
                fps, chance, hitch, ..
            } => {
                Self::Fps(*fps).validate()?;
                if !(0.0..1.0).contains(chance) {
                    return Err(Error::Invalid(format!(
                        "hitch chance {chance} is out of range (allowed: 0 to below 1)"
                    )));
                }
                if *hitch < Nanos::ZERO {
                    return Err(Error::Invalid("hitch length must not be negative".into()));
                }
                Ok(())
            }
            Self::Fps(_) => Ok(()),
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

/// One stream to replay: its received samples in arrival order, its ground truth if any, and
/// the names of its value channels.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stream<'a> {
    /// Received samples, in arrival order.
    pub samples: &'a [Sample],
    /// Ground-truth samples (as sent), if the trace has them.
    pub truth: &'a [Sample],
    /// Value channel names; rotation channels (`qx`, `qy`, `qz`, `qw`) are left out of the
    /// position error.
    pub channels: &'a [String],
}

impl<'a> Stream<'a> {
    /// A stream of received samples with no ground truth and unnamed channels.
    pub fn new(samples: &'a [Sample]) -> Self {
        Self {
            samples,
            truth: &[],
            channels: &[],
        }
    }

    /// The same stream with ground truth.
    pub fn with_truth(mut self, truth: &'a [Sample]) -> Self {
        self.truth = truth;
        self
    }

    /// The same stream with channel names.
    pub fn with_channels(mut self, channels: &'a [String]) -> Self {
        self.channels = channels;
        self
    }

    /// Indices of the channels that make up the position error.
    fn error_channels(&self) -> Vec<usize> {
        let rotation = |n: &str| matches!(n, "qx" | "qy" | "qz" | "qw");
        let width = self.samples.first().map_or(0, |s| s.values.len());
        (0..width)
            .filter(|&i| !self.channels.get(i).is_some_and(|n| rotation(n)))
            .collect()
    }
}

/// Reference values over send time, for error: ground truth, else hindsight. Flat arrays of
/// the error channels only, sorted by send time, one entry per sequence number.
#[derive(Clone, Debug, Default)]
struct ReferenceTrack {
    sends: Vec<Nanos>,
    seqs: Vec<i64>,
    /// `width` values per entry.
    values: Vec<f64>,
    width: usize,
    channels: Vec<usize>,
    /// `channels` is `0..width`.
    contiguous: bool,
}

impl ReferenceTrack {
    fn new(samples: &[Sample], channels: Vec<usize>) -> Self {
        let mut points: Vec<&Sample> = samples.iter().filter(|s| !s.values.is_empty()).collect();
        points.sort_by_key(|s| (s.send, s.seq));
        points.dedup_by_key(|s| s.seq);
        let width = channels.len();
        let mut values = Vec::with_capacity(points.len() * width);
        for p in &points {
            values.extend(
                channels
                    .iter()
                    .map(|&i| p.values.get(i).copied().unwrap_or(0.0)),
            );
        }
        Self {
            sends: points.iter().map(|p| p.send).collect(),
            seqs: points.iter().map(|p| p.seq).collect(),
            values,
            width,
            contiguous: channels.iter().enumerate().all(|(k, &c)| k == c),
            channels,
        }
    }

    fn is_empty(&self) -> bool {
        self.sends.is_empty()
    }

    /// For each sample, its index in the reference when the reference holds exactly it (same
    /// sequence number, send time and error-channel values), else `u32::MAX`.
    fn positions(&self, samples: &[Sample]) -> Vec<u32> {
        // Sequence numbers almost always rise with send time: then a binary search finds each
        // one; otherwise a map (the last of equal sequence numbers wins either way).
        let index: Option<std::collections::HashMap<i64, u32>> =
            (!self.seqs.windows(2).all(|w| w[0] < w[1])).then(|| {
                self.seqs
                    .iter()
                    .enumerate()
                    .map(|(i, &q)| (q, i as u32))
                    .collect()
            });
        let find = |seq: i64| match &index {
            None => self.seqs.binary_search(&seq).ok().map(|i| i as u32),
            Some(index) => index.get(&seq).copied(),
        };
        let w = self.width;
        samples
            .iter()
            .map(|s| {
                let Some(i) = find(s.seq) else {
                    return u32::MAX;
                };
                let at = i as usize;
                let same = self.sends[at] == s.send
                    && self.channels.iter().enumerate().all(|(k, &c)| {
                        s.values
                            .get(c)
                            .is_some_and(|v| v.to_bits() == self.values[at * w + k].to_bits())
                    });
                if same { i } else { u32::MAX }
            })
            .collect()
    }

    /// Distance between what is shown (`a`, or `a + (b − a)·alpha` when `b` is given) and the
    /// reference at `target`, over the error channels. `cursor` remembers where the previous
    /// (not later) target was found.
    fn error_at(
        &self,
        cursor: &mut usize,
        target: Nanos,
        a: &[f64],
        b: Option<(&[f64], f64)>,
    ) -> Option<f64> {
        if self.sends.is_empty() || a.is_empty() {
            return None;
        }
        let n = self.sends.len();
        while *cursor + 1 < n && self.sends[*cursor + 1] <= target {
            *cursor += 1;
        }
        let (i, w) = (*cursor, self.width);
        let ra = &self.values[i * w..(i + 1) * w];
        let (rb, t) = match self.sends.get(i + 1) {
            Some(&next) if target > self.sends[i] && next > self.sends[i] => (
                &self.values[(i + 1) * w..(i + 2) * w],
                (target - self.sends[i]).as_nanos() as f64
                    / (next - self.sends[i]).as_nanos() as f64,
            ),
            _ => (ra, 0.0),
        };
        // Fast path: the error channels are the first `w` values (no rotation channels named).
        if self.contiguous && a.len() >= w && b.is_none_or(|(b, _)| b.len() >= w) {
            let refs = ra.iter().zip(rb);
            let mut sq = 0.0;
            match b {
                Some((b, alpha)) => {
                    for ((&x, &y), (&ra, &rb)) in a.iter().zip(b).zip(refs) {
                        let v = x + (y - x) * alpha;
                        let want = ra + (rb - ra) * t;
                        sq += (v - want) * (v - want);
                    }
                }
                None => {
                    for (&x, (&ra, &rb)) in a.iter().zip(refs) {
                        let want = ra + (rb - ra) * t;
                        sq += (x - want) * (x - want);
                    }
                }
            }
            return (w > 0).then(|| sq.sqrt());
        }
        let shown = |ch: usize| -> Option<f64> {
            let x = *a.get(ch)?;
            match b {
                Some((b, alpha)) => Some(x + (b.get(ch)? - x) * alpha),
                None => Some(x),
            }
        };
        let mut sq = 0.0;
        let mut any = false;
        for (k, &ch) in self.channels.iter().enumerate() {
            let Some(v) = shown(ch) else { continue };
            any = true;
            let want = ra[k] + (rb[k] - ra[k]) * t;
            sq += (v - want) * (v - want);
        }
        any.then(|| sq.sqrt())
    }
}

/// What one recent frame showed: enough to recompute its value for a correction distance.
#[derive(Clone, Copy, Debug, Default)]
struct Shown {
    target: Nanos,
    /// `u32::MAX` for none.
    from: u32,
    /// `u32::MAX` for none.
    to: u32,
    factor: Factor,
}

/// The last frames shown, in a fixed ring written once per frame (~8 s at 60 fps): cheap
/// enough for the replay loop, read only when a sample arrives late.
struct Recent {
    frames: Box<[Shown; RECENT_LEN]>,
    written: usize,
}

/// Frames kept for correction distances.
const RECENT_LEN: usize = 512;

impl Recent {
    fn new() -> Self {
        Self {
            frames: Box::new([Shown::default(); RECENT_LEN]),
            written: 0,
        }
    }

    #[inline]
    fn push(&mut self, f: Shown) {
        self.frames[self.written % RECENT_LEN] = f;
        self.written += 1;
    }

    /// The newest frame whose target is at or before `t`.
    fn at_or_before(&self, t: Nanos) -> Option<Shown> {
        let oldest = self.written.saturating_sub(RECENT_LEN);
        let mut i = self.written;
        while i > oldest {
            i -= 1;
            let f = &self.frames[i % RECENT_LEN];
            if f.target <= t {
                return Some(*f);
            }
        }
        None
    }
}

/// The distance between what the last frame at or before sample `idx`'s send time showed and
/// the sample itself, over the error channels: how far a late sample corrects the display.
fn correction(
    samples: &[Sample],
    recent: &Recent,
    reference: &ReferenceTrack,
    idx: u32,
) -> Option<f64> {
    let s = &samples[idx as usize];
    let f = recent.at_or_before(s.send)?;
    let (from, to, alpha) = (f.from, f.to, f.factor.get());
    if from == u32::MAX {
        return None;
    }
    let a = &samples[from as usize].values;
    let b = (to != u32::MAX).then(|| &samples[to as usize].values);
    let (channels, w) = (&reference.channels, reference.width);
    // Fast path: the error channels are the first `w` values of all three (the same sum in
    // the same order as below).
    if reference.contiguous
        && w > 0
        && a.len() >= w
        && s.values.len() >= w
        && b.is_none_or(|b| b.len() >= w)
    {
        let truth = &s.values[..w];
        let mut sq = 0.0;
        match b {
            Some(b) => {
                for ((&x, &y), &truth) in a.iter().zip(b).zip(truth) {
                    let shown = x + (y - x) * alpha;
                    sq += (shown - truth) * (shown - truth);
                }
            }
            None => {
                for (&x, &truth) in a.iter().zip(truth) {
                    sq += (x - truth) * (x - truth);
                }
            }
        }
        return Some(sq.sqrt());
    }
    let mut sq = 0.0;
    let mut any = false;
    for &ch in channels {
        let (Some(&x), Some(&truth)) = (a.get(ch), s.values.get(ch)) else {
            continue;
        };
        let shown = match b.and_then(|b| b.get(ch)) {
            Some(&y) => x + (y - x) * alpha,
            None => x,
        };
        sq += (shown - truth) * (shown - truth);
        any = true;
    }
    any.then(|| sq.sqrt())
}

/// One sample as the replay loop reads it, in arrival order.
#[derive(Clone, Copy, Debug)]
struct Arrival {
    /// Arrival time on the local clock.
    at: Nanos,
    packet: Packet,
}

/// A stream with what every replay of it needs computed once: its arrival order (with the
/// duplicates in it), the minimum-transit clock offset and the error reference. Sweeps prepare a stream once and
/// replay it through many policies.
#[derive(Clone, Debug)]
pub struct Prepared<'a> {
    samples: &'a [Sample],
    /// The samples by arrival time (stable), with what the replay loop reads of each: a
    /// compact array read front to back, instead of scattered reads of whole samples.
    arrivals: Vec<Arrival>,
    offset_estimate: Nanos,
    reference: ReferenceTrack,
    reference_kind: Option<Reference>,
    /// Each sample's index in the reference (see `ReferenceTrack::positions`).
    ref_pos: Vec<u32>,
    /// The first of the `qx, qy, qz, qw` channels, interpolated by slerp (C14).
    rotation: Option<usize>,
}

impl<'a> Prepared<'a> {
    /// Prepares `stream` for replay.
    pub fn new(stream: &Stream<'a>) -> Self {
        let samples = stream.samples;
        // C1: a policy sees packets by arrival time; sort stably in case the file is not in order.
        let mut order: Vec<u32> = (0..samples.len() as u32).collect();
        if samples.windows(2).any(|w| w[1].arrival < w[0].arrival) {
            order.sort_by_key(|&i| samples[i as usize].arrival);
        }
        // Duplicates are a property of the arrival order, the same for every policy: found
        // once here, with the window a buffer would keep.
        let mut seen = crate::buffer::SeqWindow::new();
        let arrivals = order
            .iter()
            .map(|&i| {
                let mut packet = Packet::of(samples, i);
                packet.repeat = Some(!seen.insert(packet.seq));
                Arrival {
                    at: samples[i as usize].arrival,
                    packet,
                }
            })
            .collect();
        let truth = stream.truth;
        let reference = ReferenceTrack::new(
            if truth.is_empty() { samples } else { truth },
            stream.error_channels(),
        );
        let reference_kind = (!reference.is_empty()).then_some(if truth.is_empty() {
            Reference::Hindsight
        } else {
            Reference::Truth
        });
        Self {
            samples,
            arrivals,
            offset_estimate: crate::clock::estimate_offset(samples),
            ref_pos: reference.positions(samples),
            rotation: crate::values::rotation_channels(stream.channels),
            reference,
            reference_kind,
        }
    }

    /// How many received samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
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
pub fn replay_stream(
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
pub fn replay_prepared(
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
pub fn replay_metrics(
    prepared: &Prepared<'_>,
    policy: &Policy,
    frames: &FrameClock,
    clock: ClockMapping,
) -> Result<Metrics, Error> {
    run::<false>(prepared, policy, frames, clock, &mut |_| {})
}

fn run<const FRAMES: bool>(
    prepared: &Prepared<'_>,
    policy: &Policy,
    frames: &FrameClock,
    clock: ClockMapping,
    on_frame: &mut impl FnMut(&Frame<'_>),
) -> Result<Metrics, Error> {
    frames.validate()?;
    if prepared.is_empty() {
        return Ok(Metrics::default());
    }
    let source = LiveFrames::new(prepared, frames, clock, policy.max_delay());
    dispatch::<FRAMES, _>(prepared, policy, source, on_frame)
}

/// Runs the replay loop with the engine `policy` needs: one copy of the loop per engine, so
/// each engine's steps inline into it.
fn dispatch<const FRAMES: bool, F: FrameSource>(
    prepared: &Prepared<'_>,
    policy: &Policy,
    source: F,
    on_frame: &mut impl FnMut(&Frame<'_>),
) -> Result<Metrics, Error> {
    Ok(match policy {
        Policy::Mirror(c) => {
            run_engine::<FRAMES, _, _>(prepared, policy, MirrorEngine::new(c), source, on_frame)
        }
        Policy::Ngo(c) => {
            run_engine::<FRAMES, _, _>(prepared, policy, NgoEngine::new(c), source, on_frame)
        }
        _ => run_engine::<FRAMES, _, _>(
            prepared,
            policy,
            SnapshotEngine::new(policy),
            source,
            on_frame,
        ),
    })
}

/// Frame times for `frames` over arrivals from `first` to `last`, for a policy whose delay
/// is at most `max_delay`.
fn frame_times<'f>(
    frames: &'f FrameClock,
    first: Nanos,
    last: Nanos,
    max_delay: Nanos,
) -> FrameTimes<'f> {
    match frames {
        FrameClock::Fps(fps) => {
            let period = 1e9 / fps;
            FrameTimes::Regular {
                first,
                period,
                k: 0,
                count: regular_count(first, last, max_delay, period),
            }
        }
        FrameClock::At(times) => FrameTimes::List(times.iter()),
        FrameClock::Hitches {
            fps,
            chance,
            hitch,
            seed,
        } => FrameTimes::Hitchy {
            at: first,
            end: hitchy_end(last, max_delay, *fps),
            period: Nanos::from_secs_f64(1.0 / fps),
            chance: *chance,
            hitch: *hitch,
            rng: jitterlab_capture::synth::Rng::new(*seed),
        },
    }
}

/// How many frames a fixed frame rate renders: until the last arrival plus the delay and one
/// period.
fn regular_count(first: Nanos, last: Nanos, max_delay: Nanos, period: f64) -> u64 {
    let end = last + max_delay + Nanos(period.ceil() as i64);
    ((end - first).as_nanos() as f64 / period).floor() as u64 + 1
}

/// When a frame rate with hitches stops rendering.
fn hitchy_end(last: Nanos, max_delay: Nanos, fps: f64) -> Nanos {
    last + max_delay + Nanos::from_secs_f64(1.0 / fps)
}

/// Where a replay's frames and clock offsets come from: computed as the replay goes
/// ([`LiveFrames`]), or read from a [`FramePlan`] computed once for many policies.
trait FrameSource {
    /// The next frame's local time, or `None` after the last.
    fn next_frame(&mut self) -> Option<Nanos>;

    /// A packet that arrived at `arrival`, sent at `send`, is processed in this frame.
    fn observe(&mut self, send: Nanos, arrival: Nanos);

    /// The clock offset at this frame, at local time `at`, after its packets were observed.
    fn offset(&mut self, at: Nanos) -> Nanos;
}

/// Frames computed as the replay goes, and the clock mapping with them.
struct LiveFrames<'f> {
    times: FrameTimes<'f>,
    /// The offset when it is constant, else the online estimate.
    constant: Option<Nanos>,
    online: crate::clock::OnlineClock,
}

impl<'f> LiveFrames<'f> {
    /// Frames for a non-empty `prepared` and a policy whose delay is at most `max_delay`.
    fn new(
        prepared: &Prepared<'_>,
        frames: &'f FrameClock,
        clock: ClockMapping,
        max_delay: Nanos,
    ) -> Self {
        let arrivals = &prepared.arrivals;
        let (first, last) = (arrivals[0].at, arrivals[arrivals.len() - 1].at);
        Self {
            times: frame_times(frames, first, last, max_delay),
            constant: match clock {
                ClockMapping::Fixed(o) => Some(o),
                ClockMapping::Hindsight => Some(prepared.offset_estimate),
                ClockMapping::Estimated => None,
            },
            online: crate::clock::OnlineClock::new(),
        }
    }
}

impl FrameSource for LiveFrames<'_> {
    #[inline]
    fn next_frame(&mut self) -> Option<Nanos> {
        self.times.next()
    }

    #[inline]
    fn observe(&mut self, send: Nanos, arrival: Nanos) {
        if self.constant.is_none() {
            self.online.observe(send, arrival);
        }
    }

    #[inline]
    fn offset(&mut self, at: Nanos) -> Nanos {
        match self.constant {
            Some(o) => o,
            None => self.online.offset_at(at),
        }
    }
}

/// Frame times and the clock offset at each, for one prepared stream, a frame clock and a
/// clock mapping. Neither depends on the policy (only how long frames go on does, through its
/// longest delay), so a sweep computes them once per stream and every configuration reads
/// them instead of recomputing them: with the online clock estimate that is about an eighth
/// of a fixed-delay replay's work. [`replay_planned`] gives exactly what [`replay_metrics`]
/// gives.
#[derive(Clone, Debug)]
pub struct FramePlan {
    frames: FrameClock,
    clock: ClockMapping,
    /// The longest policy delay the plan covers.
    max_delay: Nanos,
    /// The first and last arrival.
    span: (Nanos, Nanos),
    /// (local time, clock offset) per frame.
    times: Vec<(Nanos, Nanos)>,
}

impl FramePlan {
    /// The frames of `prepared` under `frames` and `clock`, for policies whose delay is at
    /// most `max_delay` (a longer one replays without the plan, to the same result).
    ///
    /// # Errors
    /// An invalid frame clock.
    pub fn new(
        prepared: &Prepared<'_>,
        frames: &FrameClock,
        clock: ClockMapping,
        max_delay: Nanos,
    ) -> Result<Self, Error> {
        frames.validate()?;
        let mut plan = Self {
            frames: frames.clone(),
            clock,
            max_delay,
            span: (Nanos::ZERO, Nanos::ZERO),
            times: Vec::new(),
        };
        let arrivals = &prepared.arrivals;
        if arrivals.is_empty() {
            return Ok(plan);
        }
        plan.span = (arrivals[0].at, arrivals[arrivals.len() - 1].at);
        // The replay loop's order exactly: a frame's arrivals observed, then its offset.
        let mut source = LiveFrames::new(prepared, frames, clock, max_delay);
        let mut next = 0;
        while let Some(at) = source.next_frame() {
            while let Some(a) = arrivals.get(next)
                && a.at <= at
            {
                source.observe(a.packet.send, a.at);
                next += 1;
            }
            plan.times.push((at, source.offset(at)));
        }
        Ok(plan)
    }

    /// How many planned frames a policy whose delay is at most `max_delay` renders, or
    /// `None` when the plan does not reach that far.
    fn frames_for(&self, max_delay: Nanos) -> Option<usize> {
        if max_delay > self.max_delay {
            return None;
        }
        let (first, last) = self.span;
        Some(match &self.frames {
            FrameClock::Fps(fps) => {
                let count = regular_count(first, last, max_delay, 1e9 / fps);
                usize::try_from(count).map_or(self.times.len(), |c| c.min(self.times.len()))
            }
            FrameClock::At(_) => self.times.len(),
            FrameClock::Hitches { fps, .. } => {
                let end = hitchy_end(last, max_delay, *fps);
                self.times.partition_point(|&(at, _)| at <= end)
            }
        })
    }
}

/// Frames read from a [`FramePlan`].
struct PlannedFrames<'p> {
    times: std::slice::Iter<'p, (Nanos, Nanos)>,
    offset: Nanos,
}

impl FrameSource for PlannedFrames<'_> {
    #[inline]
    fn next_frame(&mut self) -> Option<Nanos> {
        let &(at, offset) = self.times.next()?;
        self.offset = offset;
        Some(at)
    }

    #[inline]
    fn observe(&mut self, _send: Nanos, _arrival: Nanos) {}

    #[inline]
    fn offset(&mut self, _at: Nanos) -> Nanos {
        self.offset
    }
}

/// [`replay_metrics`] with the frames and clock offsets read from `plan`, which must have been
/// made for the same prepared stream: the sweep's path.
///
/// # Errors
/// None at present beyond those of [`replay_metrics`].
pub fn replay_planned(
    prepared: &Prepared<'_>,
    plan: &FramePlan,
    policy: &Policy,
) -> Result<Metrics, Error> {
    if prepared.is_empty() {
        return Ok(Metrics::default());
    }
    match plan.frames_for(policy.max_delay()) {
        Some(count) => {
            let source = PlannedFrames {
                times: plan.times[..count].iter(),
                offset: Nanos::ZERO,
            };
            dispatch::<false, _>(prepared, policy, source, &mut |_| {})
        }
        None => replay_metrics(prepared, policy, &plan.frames, plan.clock),
    }
}

/// [`replay_planned`] of several policies in one pass over the stream (the sweep's path):
/// the metrics of each, in order, exactly as [`replay_planned`] gives them. Policies that
/// share jitterlab's snapshot engine (all but `mirror` and `ngo`) and whose delay the plan
/// covers run side by side; the rest one at a time.
///
/// # Errors
/// None at present beyond those of [`replay_metrics`].
pub fn replay_planned_batch(
    prepared: &Prepared<'_>,
    plan: &FramePlan,
    policies: &[Policy],
) -> Result<Vec<Metrics>, Error> {
    let mut out = vec![Metrics::default(); policies.len()];
    if prepared.is_empty() {
        return Ok(out);
    }
    let mut lanes = Vec::new();
    let mut which = Vec::new();
    for (i, policy) in policies.iter().enumerate() {
        match (policy, plan.frames_for(policy.max_delay())) {
            (Policy::Mirror(_) | Policy::Ngo(_), _) | (_, None) => {
                out[i] = replay_planned(prepared, plan, policy)?;
            }
            (_, Some(frames)) => {
                let engine = SnapshotEngine::new(policy);
                lanes.push((Lane::new(prepared, policy, engine), frames));
                which.push(i);
            }
        }
    }
    for (i, m) in which.into_iter().zip(run_lanes(prepared, plan, lanes)) {
        out[i] = m;
    }
    Ok(out)
}

fn run_engine<const FRAMES: bool, E: Playout, F: FrameSource>(
    prepared: &Prepared<'_>,
    policy: &Policy,
    engine: E,
    mut source: F,
    on_frame: &mut impl FnMut(&Frame<'_>),
) -> Metrics {
    let arrivals = &prepared.arrivals;
    let mut lane = Lane::new(prepared, policy, engine);
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
        lane.frame::<FRAMES>(prepared, at, offset, &mut value, on_frame);
    }
    lane.finish(prepared)
}

/// Replays one prepared stream through several policies that share an engine type in one pass
/// over the planned frames and the arrivals: each packet is offered to every lane in turn and
/// each frame rendered by every lane that still renders. Lanes are independent, so each gets
/// exactly what its own replay would; sharing the pass shares its loop and its hard-to-predict
/// "how many packets arrived before this frame" branch.
fn run_lanes<E: Playout>(
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
                lane.frame::<false>(prepared, at, offset, &mut value, &mut |_| {});
            }
        }
    }
    lanes
        .into_iter()
        .map(|(lane, _)| lane.finish(prepared))
        .collect()
}

/// One replay's state in the replay loop: its engine and what it has measured so far.
struct Lane<E> {
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

impl<E: Playout> Lane<E> {
    fn new(prepared: &Prepared<'_>, policy: &Policy, engine: E) -> Self {
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
            exact_alpha: !matches!(policy, Policy::Mirror(_) | Policy::Ngo(_)),
            stream_id: prepared.samples[0].stream,
        }
    }

    /// A packet, processed in the frame at local time `at`.
    #[inline(always)]
    fn packet(&mut self, prepared: &Prepared<'_>, packet: Packet, at: Nanos) {
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
    fn frame<const FRAMES: bool>(
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
    fn finish(mut self, prepared: &Prepared<'_>) -> Metrics {
        self.metrics.error.add_zeros(self.zero_errors);
        self.metrics.counters = self.engine.counters();
        self.metrics.pending = prepared.arrivals.len() as u64 - self.metrics.packets;
        self.metrics
    }
}

/// The result of replaying every stream of a trace.
#[derive(Clone, Debug, Default)]
pub struct TraceReplay {
    /// Per stream, in the trace's stream order.
    pub streams: Vec<(u32, Metrics)>,
    /// All streams together.
    pub total: Metrics,
}

/// Replays every stream of a decoded trace (or only `only`) through `policy`.
///
/// # Errors
/// An invalid frame clock, or an RTP stream whose clock rate is unknown (its send times are).
pub fn replay_trace(
    decoded: &Decoded,
    only: Option<u32>,
    policy: &Policy,
    frames: &FrameClock,
    clock: ClockMapping,
    mut on_frame: impl FnMut(&Frame<'_>),
) -> Result<TraceReplay, Error> {
    let mut out = TraceReplay::default();
    for info in &decoded.streams {
        if only.is_some_and(|id| id != info.id) {
            continue;
        }
        if !info.has_send_times() {
            return Err(Error::Invalid(format!(
                "{}: RTP clock rate for payload type {} is unknown; pass --clock-rate {}=HZ",
                info.label(),
                info.payload_type.unwrap_or(0),
                info.payload_type.unwrap_or(0)
            )));
        }
        // Borrowed, not copied, when the trace holds this stream only.
        let (samples, truth) = (decoded.samples_of(info.id), decoded.truth_of(info.id));
        let input = Stream::new(&samples)
            .with_truth(&truth)
            .with_channels(&info.channels);
        let m = replay_stream(&input, policy, frames, clock, &mut on_frame)?;
        out.total.merge(&m);
        out.streams.push((info.id, m));
    }
    Ok(out)
}
