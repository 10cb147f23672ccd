//! The deterministic replay driver: arrivals and a frame clock in, per-frame samples and
//! metrics out. Time is always an argument; nothing here reads a file or the OS clock.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{Decoded, Sample};

use crate::Error;
use crate::adapt::{Applier, Controller};
use crate::buffer::{HoldReason, Mode, Push, SnapshotBuffer};
use crate::clock::ClockMapping;
use crate::metrics::{Metrics, Reference};
use crate::policy::Policy;

/// When frames are rendered, on the local clock.
#[derive(Clone, Debug, PartialEq)]
pub enum FrameClock {
    /// A fixed rate from the first arrival until the last arrival plus the delay.
    Fps(f64),
    /// The given local times, which must not decrease.
    At(Vec<Nanos>),
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

/// Reference values over send time, for error: ground truth, else hindsight.
struct ReferenceTrack<'a> {
    points: Vec<&'a Sample>,
    cursor: usize,
    channels: Vec<usize>,
}

impl<'a> ReferenceTrack<'a> {
    fn new(samples: &'a [Sample], channels: Vec<usize>) -> Self {
        let mut points: Vec<&Sample> = samples.iter().filter(|s| !s.values.is_empty()).collect();
        points.sort_by_key(|s| (s.send, s.seq));
        points.dedup_by_key(|s| s.seq);
        Self {
            points,
            cursor: 0,
            channels,
        }
    }

    /// Distance between `shown` and the reference at `target` (targets must not decrease).
    fn error(&mut self, target: Nanos, shown: &[f64]) -> Option<f64> {
        let p = &self.points;
        if p.is_empty() || shown.is_empty() {
            return None;
        }
        while self.cursor + 1 < p.len() && p[self.cursor + 1].send <= target {
            self.cursor += 1;
        }
        let a = p[self.cursor];
        let at = |i: usize| -> f64 {
            let av = a.values.get(i).copied().unwrap_or(0.0);
            match p.get(self.cursor + 1) {
                Some(b) if target > a.send && b.send > a.send => {
                    let t =
                        (target - a.send).as_nanos() as f64 / (b.send - a.send).as_nanos() as f64;
                    av + (b.values.get(i).copied().unwrap_or(0.0) - av) * t
                }
                _ => av,
            }
        };
        let sq: f64 = self
            .channels
            .iter()
            .filter_map(|&i| shown.get(i).map(|v| (v - at(i)).powi(2)))
            .sum();
        Some(sq.sqrt())
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
    mut on_frame: impl FnMut(&Frame<'_>),
) -> Result<Metrics, Error> {
    frames.validate()?;
    let (samples, truth) = (stream.samples, stream.truth);
    let mut buffer = SnapshotBuffer::new(policy.buffer().clone());
    let mut controller = Controller::new(policy);
    let mut applier = Applier::new(policy);
    let mut metrics = Metrics::default();
    if samples.is_empty() {
        return Ok(metrics);
    }
    // C1: a policy sees packets by arrival time; sort stably in case the file is not in order.
    let mut order: Vec<u32> = (0..samples.len() as u32).collect();
    if samples.windows(2).any(|w| w[1].arrival < w[0].arrival) {
        order.sort_by_key(|&i| samples[i as usize].arrival);
    }
    let offset = clock.offset(samples);
    let mut reference = ReferenceTrack::new(
        if truth.is_empty() { samples } else { truth },
        stream.error_channels(),
    );
    if !reference.points.is_empty() {
        metrics.reference = Some(if truth.is_empty() {
            Reference::Hindsight
        } else {
            Reference::Truth
        });
    }
    let stream_id = samples[0].stream;
    let first = samples[order[0] as usize].arrival;
    let last = samples[order[order.len() - 1] as usize].arrival;
    let times: Box<dyn Iterator<Item = Nanos>> = match frames {
        FrameClock::Fps(fps) => {
            let period = 1e9 / fps;
            let end = last + policy.max_delay() + Nanos(period.ceil() as i64);
            let count = ((end - first).as_nanos() as f64 / period).floor() as i64 + 1;
            Box::new((0..count).map(move |k| first + Nanos((k as f64 * period).round() as i64)))
        }
        FrameClock::At(times) => Box::new(times.iter().copied()),
    };

    let mut next = 0usize;
    let mut started = false;
    let mut value = Vec::new();
    for at in times {
        while next < order.len() && samples[order[next] as usize].arrival <= at {
            let idx = order[next];
            if buffer.push(samples, idx) != Push::Duplicate {
                controller.on_arrival(&samples[idx as usize]);
            }
            metrics.packets += 1;
            next += 1;
        }
        let applied = applier.step(at, at + offset, controller.target(at));
        let target = applied.target;
        let pick = buffer.sample(target);
        let startup =
            !started && (pick.mode == Mode::Empty || pick.hold == Some(HoldReason::BeforeOldest));
        started |= !startup;
        value.clear();
        let mut state = None;
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
                            .map(|(x, y)| x + (y - x) * pick.alpha),
                    );
                    state = if pick.alpha >= 1.0 { b.state } else { a.state };
                }
                None => {
                    value.extend_from_slice(&a.values);
                    state = a.state;
                }
            }
        }
        let depth = buffer.depth_after(target);
        let shown_delay = pick.shown.map(|s| at + offset - s);
        let error = if pick.from.is_some() {
            reference.error(target, &value)
        } else {
            None
        };
        metrics.frame(pick.mode, pick.hold, startup);
        if !startup {
            metrics.timeline(applied.delay, applied.frozen, applied.scaled);
            metrics.depth(depth);
            if let Some(d) = shown_delay {
                metrics.delay_ms.add(d.as_millis_f64());
            }
            if let Some(e) = error {
                metrics.error.add(e);
            }
        }
        on_frame(&Frame {
            stream: stream_id,
            at,
            target,
            mode: pick.mode,
            hold: pick.hold,
            alpha: pick.from.and(pick.to).map(|_| pick.alpha),
            from: pick.from,
            to: pick.to,
            value: &value,
            state,
            shown: pick.shown,
            delay: shown_delay,
            depth,
            ahead: buffer.newest_send().map(|n| n - target),
            buffer_delay: applied.delay,
            frozen: applied.frozen,
            error,
            startup,
        });
    }
    metrics.counters = buffer.counters();
    metrics.pending = (order.len() - next) as u64;
    Ok(metrics)
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
        let samples: Vec<Sample> = decoded.stream_samples(info.id).cloned().collect();
        let truth: Vec<Sample> = decoded.stream_truth(info.id).cloned().collect();
        let input = Stream::new(&samples)
            .with_truth(&truth)
            .with_channels(&info.channels);
        let m = replay_stream(&input, policy, frames, clock, &mut on_frame)?;
        out.total.merge(&m);
        out.streams.push((info.id, m));
    }
    Ok(out)
}
