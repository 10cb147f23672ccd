//! When frames are rendered and the clock offset at each: a frame clock computed as the replay
//! goes, or a plan computed once per stream for many policies.

use jitterlab_capture::Nanos;

use super::prepare::Prepared;
use crate::Error;
use crate::clock::ClockMapping;

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
    /// A list shared with a streaming replay's other streams: the times, the next one.
    Shared(std::sync::Arc<[Nanos]>, usize),
    Hitchy {
        at: Nanos,
        end: Nanos,
        period: Nanos,
        chance: f64,
        hitch: Nanos,
        rng: jitterlab_capture::rng::Rng,
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
            Self::Shared(times, next) => {
                let at = times.get(*next).copied();
                *next += 1;
                at
            }
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
    /// Recorded frame times: one local time in ms per line (blank lines and `#` comments
    /// ignored), not decreasing.
    ///
    /// # Errors
    /// A line that is not a finite time in ms (its number given), no times at all, or times
    /// that decrease.
    pub fn parse_times(text: &str) -> Result<Self, Error> {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match line.parse::<f64>() {
                Ok(ms) if ms.is_finite() => out.push(Nanos::from_millis_f64(ms)),
                _ => {
                    return Err(Error::FrameTimeLine {
                        line: i + 1,
                        text: line.to_owned(),
                    });
                }
            }
        }
        if out.is_empty() {
            return Err(Error::NoFrameTimes);
        }
        let clock = Self::At(out);
        clock.validate()?;
        Ok(clock)
    }

    /// A frame rate with hitches from `CHANCE:LENGTH`, e.g. `2%:50ms` (a frame takes 50 ms
    /// longer with probability 2 %), seeded by `seed`.
    ///
    /// # Errors
    /// Not of that form, or out of range.
    pub fn parse_hitches(fps: f64, text: &str, seed: u64) -> Result<Self, Error> {
        let bad = |reason: String| Error::Hitches {
            text: text.to_owned(),
            reason,
        };
        let (chance, length) = text
            .split_once(':')
            .ok_or_else(|| bad("expected CHANCE:LENGTH, e.g. 2%:50ms".to_owned()))?;
        let chance =
            jitterlab_capture::spec::parse_share(chance).map_err(|e| bad(e.to_string()))?;
        let hitch = jitterlab_capture::time::parse_duration(length).map_err(bad)?;
        let clock = Self::Hitches {
            fps,
            chance,
            hitch,
            seed,
        };
        clock.validate()?;
        Ok(clock)
    }

    /// Checks the frame rate or the times.
    ///
    /// # Errors
    /// A rate that is not finite and positive (at most 10 000 fps), or times that decrease.
    pub fn validate(&self) -> Result<(), Error> {
        match self {
            Self::Fps(fps) if !(fps.is_finite() && *fps > 0.0 && *fps <= 10_000.0) => {
                Err(Error::FrameRate { fps: *fps })
            }
            Self::At(times) => match times.windows(2).position(|w| w[1] < w[0]) {
                Some(i) => Err(Error::FrameTimesDecrease {
                    earlier_ms: times[i].as_millis_f64(),
                    later_ms: times[i + 1].as_millis_f64(),
                }),
                None => Ok(()),
            },
            Self::Hitches {
                fps, chance, hitch, ..
            } => {
                Self::Fps(*fps).validate()?;
                if !(0.0..1.0).contains(chance) {
                    return Err(Error::HitchChance { chance: *chance });
                }
                if *hitch < Nanos::ZERO {
                    return Err(Error::HitchLength);
                }
                Ok(())
            }
            Self::Fps(_) => Ok(()),
        }
    }
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
        FrameClock::Hitches { fps, .. } => hitchy(frames, first, hitchy_end(last, max_delay, *fps)),
    }
}

/// Frames at a rate with hitches (`frames` is [`FrameClock::Hitches`]) from `first` until
/// `end`.
fn hitchy(frames: &FrameClock, first: Nanos, end: Nanos) -> FrameTimes<'static> {
    let FrameClock::Hitches {
        fps,
        chance,
        hitch,
        seed,
    } = frames
    else {
        unreachable!("only called for a rate with hitches")
    };
    FrameTimes::Hitchy {
        at: first,
        end,
        period: Nanos::from_secs_f64(1.0 / fps),
        chance: *chance,
        hitch: *hitch,
        rng: jitterlab_capture::rng::Rng::new(*seed),
    }
}

/// Frames of a stream still being read (its last arrival unknown): they go on until the
/// stream ends, and [`renders`] says which of them a policy renders once it has.
pub(super) struct OpenFrames {
    times: FrameTimes<'static>,
    /// The next frame, and its number.
    next: Option<Nanos>,
    k: u64,
}

impl OpenFrames {
    /// The frames of `frames` (its times in `list` when it lists them) for a stream whose
    /// first arrival is `first`.
    pub(super) fn new(frames: &FrameClock, list: &std::sync::Arc<[Nanos]>, first: Nanos) -> Self {
        let mut times = match frames {
            FrameClock::Fps(fps) => FrameTimes::Regular {
                first,
                period: 1e9 / fps,
                k: 0,
                count: u64::MAX,
            },
            FrameClock::At(_) => FrameTimes::Shared(list.clone(), 0),
            FrameClock::Hitches { .. } => hitchy(frames, first, Nanos::MAX),
        };
        let next = times.next();
        Self { times, next, k: 0 }
    }

    /// The next frame's time and number, if any.
    #[inline]
    pub(super) fn peek(&self) -> Option<(Nanos, u64)> {
        self.next.map(|at| (at, self.k))
    }

    /// Moves to the frame after the one [`Self::peek`] gave.
    #[inline]
    pub(super) fn advance(&mut self) {
        self.next = self.times.next();
        self.k += 1;
    }
}

/// Whether frame `k`, at local time `at`, is among the frames `frames` renders for a policy
/// whose delay is at most `max_delay` over arrivals from `first` to `last` (what
/// [`LiveFrames`] renders, frame for frame).
pub(super) fn renders(
    frames: &FrameClock,
    (first, last): (Nanos, Nanos),
    max_delay: Nanos,
    k: u64,
    at: Nanos,
) -> bool {
    match frames {
        FrameClock::Fps(fps) => k < regular_count(first, last, max_delay, 1e9 / fps),
        FrameClock::At(times) => (k as usize) < times.len(),
        FrameClock::Hitches { fps, .. } => at <= hitchy_end(last, max_delay, *fps),
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
pub(super) trait FrameSource {
    /// The next frame's local time, or `None` after the last.
    fn next_frame(&mut self) -> Option<Nanos>;

    /// A packet that arrived at `arrival`, sent at `send`, is processed in this frame.
    fn observe(&mut self, send: Nanos, arrival: Nanos);

    /// The clock offset at this frame, at local time `at`, after its packets were observed.
    fn offset(&mut self, at: Nanos) -> Nanos;
}

/// Frames computed as the replay goes, and the clock mapping with them.
pub(super) struct LiveFrames<'f> {
    times: FrameTimes<'f>,
    /// The offset when it is constant, else the online estimate.
    constant: Option<Nanos>,
    online: crate::clock::OnlineClock,
}

impl<'f> LiveFrames<'f> {
    /// Frames for a non-empty `prepared` and a policy whose delay is at most `max_delay`.
    pub(super) fn new(
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
/// of a fixed-delay replay's work. [`FramePlan::metrics`] gives exactly what [`crate::Replay::metrics`]
/// gives.
#[derive(Clone, Debug)]
pub struct FramePlan {
    pub(super) frames: FrameClock,
    pub(super) clock: ClockMapping,
    /// The longest policy delay the plan covers.
    pub(super) max_delay: Nanos,
    /// The first and last arrival.
    pub(super) span: (Nanos, Nanos),
    /// (local time, clock offset) per frame.
    pub(super) times: Vec<(Nanos, Nanos)>,
}

impl FramePlan {
    /// The frames of `prepared` under `frames` and `clock`, for policies whose delay is at
    /// most `max_delay` (a longer one replays without the plan, to the same result).
    ///
    /// # Errors
    /// An invalid frame clock.
    pub(crate) fn new(
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
    pub(super) fn frames_for(&self, max_delay: Nanos) -> Option<usize> {
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
pub(super) struct PlannedFrames<'p> {
    pub(super) times: std::slice::Iter<'p, (Nanos, Nanos)>,
    pub(super) offset: Nanos,
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

impl FramePlan {
    /// For each planned frame from the first arrival to the last (`(local time, ms)`), the
    /// least display delay at which it could interpolate: its sender-clock time less the
    /// newest send time arrived by then (negative when the clock mapping puts that sample in the
    /// future). What [`crate::bound`] optimises over.
    pub(crate) fn needs_ms(&self, prepared: &Prepared<'_>) -> Vec<(Nanos, f64)> {
        let arrivals = &prepared.arrivals;
        let mut out = Vec::with_capacity(self.times.len());
        let (mut next, mut newest) = (0, None::<Nanos>);
        for &(at, offset) in &self.times {
            if at > self.span.1 {
                break;
            }
            while let Some(a) = arrivals.get(next)
                && a.at <= at
            {
                newest = Some(newest.map_or(a.packet.send, |n: Nanos| n.max(a.packet.send)));
                next += 1;
            }
            if let Some(n) = newest {
                let need = (at + offset - n).as_nanos() as f64 * 1e-6;
                out.push((at, need));
            }
        }
        out
    }
}
