//! Replaying one stream through several configurations, keeping per-frame logs for figures.

use jitterlab_capture::decode::Decoded;
use jitterlab_capture::{Nanos, Sample};
use jitterlab_replay::playout::{PlayoutEvent, PlayoutMetrics, PlayoutReport, QualityOptions};
use jitterlab_replay::{
    ClockMapping, FrameClock, LoggedFrame, Media, Mode, PlayoutStream, Policy, Replay, StreamView,
    StreamingReplay, Summary, Unstreamable, streams,
};

use rayon::prelude::*;

use crate::Error;
use crate::envelope::{Envelope, Sketch};

/// Per-frame values of one replay, for plotting, reduced while recorded so that memory
/// follows the figure's width, not the trace's length ([`crate::envelope`]). Times are
/// seconds since the stream's first arrival; NaN marks "no value".
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameLog {
    /// (time s, display delay ms).
    pub delay_ms: Vec<(f64, f64)>,
    /// (time s, time buffered ahead of the target ms; negative while starving).
    pub ahead_ms: Vec<(f64, f64)>,
    /// (time s, distance from the reference).
    pub error: Vec<(f64, f64)>,
    /// The error's distribution (finite values).
    pub errors: Sketch,
    /// Times (s) of the frames held, extrapolated and empty, reduced, and how many of each.
    pub not_interpolated: [(Vec<f64>, u64); 3],
    /// (time s, display delay ms) around the network's largest spikes
    /// ([`crate::recovery::panel_spikes`]), at a finer resolution than `delay_ms`.
    pub around_spikes: Vec<(f64, f64)>,
}

/// The modes [`FrameLog::not_interpolated`] counts, in its order.
pub const NOT_INTERPOLATED: [Mode; 3] = [Mode::Hold, Mode::Extrapolate, Mode::Empty];

/// Builds a [`FrameLog`] frame by frame.
#[derive(Clone, Debug)]
struct FrameLogger {
    delay: Envelope,
    ahead: Envelope,
    error: Envelope,
    errors: Sketch,
    modes: [(Envelope, u64); 3],
    spikes: SpikeWindows,
}

impl FrameLogger {
    fn new(span: (f64, f64), spikes: SpikeWindows) -> Self {
        Self {
            delay: Envelope::over(span),
            ahead: Envelope::over(span),
            error: Envelope::over(span),
            errors: Sketch::default(),
            modes: std::array::from_fn(|_| (Envelope::over(span), 0)),
            spikes,
        }
    }

    fn frame(&mut self, t: f64, ahead_ms: f64, error: f64, delay_ms: f64, mode: Mode) {
        self.delay.push(t, delay_ms);
        self.ahead.push(t, ahead_ms);
        self.error.push(t, error);
        self.errors.add(error);
        if let Some(k) = NOT_INTERPOLATED.iter().position(|&m| m == mode) {
            self.modes[k].0.push(t, 0.0);
            self.modes[k].1 += 1;
        }
        self.spikes.push(t, delay_ms);
    }

    /// A frame a streaming pass logged, `start` the stream's first arrival (startup frames
    /// are left out, as [`run_policies`] leaves them).
    fn logged(&mut self, f: &LoggedFrame, start: Nanos) {
        if f.startup {
            return;
        }
        self.frame(
            (f.at - start).as_secs_f64(),
            f.ahead.map_or(f64::NAN, |a| a.as_millis_f64()),
            f.error.unwrap_or(f64::NAN),
            f.delay.map_or(f64::NAN, |d| d.as_millis_f64()),
            f.mode,
        );
    }

    fn finish(self) -> FrameLog {
        FrameLog {
            delay_ms: self.delay.finish(),
            ahead_ms: self.ahead.finish(),
            error: self.error.finish(),
            errors: self.errors,
            not_interpolated: self
                .modes
                .map(|(e, n)| (e.finish().into_iter().map(|p| p.0).collect(), n)),
            around_spikes: self.spikes.finish(),
        }
    }
}

/// Points kept at a finer resolution inside the windows around the largest spikes (each
/// window its own [`Envelope`]), in time order.
#[derive(Clone, Debug, Default)]
struct SpikeWindows {
    windows: Vec<((f64, f64), Envelope)>,
}

impl SpikeWindows {
    /// The windows of stream `stream` of `decoded` the recovery figure draws.
    fn of(decoded: &Decoded, stream: u32) -> Self {
        Self::around(&crate::recovery::panel_windows(decoded, stream))
    }

    /// Finer points in `windows`.
    fn around(windows: &[(f64, f64)]) -> Self {
        Self {
            windows: windows.iter().map(|&w| (w, Envelope::over(w))).collect(),
        }
    }

    fn push(&mut self, t: f64, y: f64) {
        if let Some((_, e)) = self
            .windows
            .iter_mut()
            .find(|((lo, hi), _)| (*lo..=*hi).contains(&t))
        {
            e.push(t, y);
        }
    }

    fn finish(self) -> Vec<(f64, f64)> {
        self.windows
            .into_iter()
            .flat_map(|(_, e)| e.finish())
            .collect()
    }
}

/// One configuration's replay.
#[derive(Clone, Debug)]
pub struct Run {
    /// Short label for legends and tables.
    pub label: String,
    /// The exact policy.
    pub policy: Policy,
    /// Its metrics (snapshot mode; the default in playout mode).
    pub summary: Summary,
    /// Its frames (snapshot mode).
    pub log: FrameLog,
    /// Its discrete playout, in playout mode.
    pub playout: Option<PlayoutLog>,
}

/// Per-slot values of one discrete playout, for plotting, reduced while recorded as
/// [`FrameLog`] is. Times are seconds since the stream's first arrival.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlayoutLog {
    /// The playout's figures.
    pub report: PlayoutReport,
    /// (play time s, playout delay ms) of every slot, in play order.
    pub delay: Vec<(f64, f64)>,
    /// (play time s, target delay ms), when the policy records a target.
    pub target: Vec<(f64, f64)>,
    /// (play time s, playout delay ms) of slots concealed because their frame never came.
    pub lost: Vec<(f64, f64)>,
    /// (play time s, playout delay ms) of slots whose frame came after its play time.
    pub late: Vec<(f64, f64)>,
    /// How many slots were lost and late (`lost` and `late` are reduced).
    pub lost_late: (u64, u64),
    /// (play time s, playout delay ms) around the network's largest spikes.
    pub around_spikes: Vec<(f64, f64)>,
}

/// Plays stream `stream` of `decoded` as discrete frames through each policy (each must play
/// frames).
///
/// # Errors
/// A policy that does not play frames, or a stream that cannot be replayed.
pub fn play_policies(
    decoded: &Decoded,
    stream: u32,
    policies: &[(String, Policy)],
    clock: ClockMapping,
    options: QualityOptions,
) -> Result<Vec<Run>, Error> {
    let view = streams::views(decoded, Some(stream))
        .next()
        .transpose()?
        .unwrap_or_else(|| StreamView::owned(stream, Vec::new(), Vec::new(), Vec::new()));
    let media = decoded
        .streams
        .iter()
        .find(|s| s.id == stream)
        .map(Media::of)
        .unwrap_or_default();
    let prepared = PlayoutStream::with_clock(stream, &view.samples, media, clock);
    let start = prepared
        .units()
        .iter()
        .map(|s| s.arrival)
        .min()
        .unwrap_or_default();
    let slots = prepared.slots();
    let first = slots.first().map_or(0, |s| s.seq);
    let end = prepared
        .units()
        .iter()
        .map(|s| s.arrival)
        .max()
        .unwrap_or_default();
    let span = (0.0, (end - start).as_secs_f64());
    let windows = SpikeWindows::of(decoded, stream);
    policies
        .par_iter()
        .map(|(label, policy)| {
            let run = policy
                .playout(&prepared)
                .ok_or(jitterlab_replay::Error::NotPlayout {
                    policy: policy.name(),
                })?;
            let mut delay = Envelope::over(span);
            let mut target = Envelope::over(span);
            let (mut lost, mut late) = (Envelope::over(span), Envelope::over(span));
            let mut lost_late = (0, 0);
            let mut around = windows.clone();
            for (i, e) in run.events.iter().enumerate() {
                let (seq, at) = match *e {
                    PlayoutEvent::Played { seq, at } | PlayoutEvent::Concealed { seq, at, .. } => {
                        (seq, at)
                    }
                };
                let Some(slot) = usize::try_from(seq - first).ok().and_then(|k| slots.get(k))
                else {
                    continue;
                };
                let t = (at - start).as_secs_f64();
                let d = (at - (slot.send - prepared.offset)).as_millis_f64();
                delay.push(t, d);
                around.push(t, d);
                if let Some(aim) = run.target(i) {
                    target.push(t, aim.as_millis_f64());
                }
                match *e {
                    PlayoutEvent::Concealed {
                        arrived_late: true, ..
                    } => {
                        late.push(t, d);
                        lost_late.1 += 1;
                    }
                    PlayoutEvent::Concealed { .. } => {
                        lost.push(t, d);
                        lost_late.0 += 1;
                    }
                    PlayoutEvent::Played { .. } => {}
                }
            }
            let log = PlayoutLog {
                report: PlayoutMetrics::measure(&prepared, &run, options).report(),
                delay: delay.finish(),
                target: target.finish(),
                lost: lost.finish(),
                late: late.finish(),
                lost_late,
                around_spikes: around.finish(),
            };
            Ok(Run {
                label: label.clone(),
                policy: policy.clone(),
                summary: Summary::default(),
                log: FrameLog::default(),
                playout: Some(log),
            })
        })
        .collect()
}

/// Replays stream `stream` of `decoded` through each policy.
///
/// # Errors
/// Replay errors (invalid frame clock).
pub fn run_policies(
    decoded: &Decoded,
    stream: u32,
    policies: &[(String, Policy)],
    frames: &FrameClock,
    clock: ClockMapping,
) -> Result<Vec<Run>, Error> {
    // A trace without that stream replays nothing (the figures say "no data").
    let view = streams::views(decoded, Some(stream))
        .next()
        .transpose()?
        .unwrap_or_else(|| StreamView::owned(stream, Vec::new(), Vec::new(), Vec::new()));
    let start = view
        .samples
        .iter()
        .map(|s| s.arrival)
        .min()
        .unwrap_or_default();
    let end = view
        .samples
        .iter()
        .map(|s| s.arrival)
        .max()
        .unwrap_or_default();
    // Frames run on a little past the last arrival (by the policy's delay): columns of the
    // same width carry on beyond the span.
    let span = (0.0, (end - start).as_secs_f64());
    let windows = SpikeWindows::of(decoded, stream);
    let input = view.stream();
    // Configurations replay independently: one per core.
    policies
        .par_iter()
        .map(|(label, policy)| {
            let mut log = FrameLogger::new(span, windows.clone());
            let metrics = Replay::new(FrameClock::clone(frames)).clock(clock).stream(
                &input,
                policy,
                |f| {
                    if f.startup {
                        return;
                    }
                    log.frame(
                        (f.at - start).as_secs_f64(),
                        f.ahead.map_or(f64::NAN, |a| a.as_millis_f64()),
                        f.error.unwrap_or(f64::NAN),
                        f.delay.map_or(f64::NAN, |d| d.as_millis_f64()),
                        f.mode,
                    );
                },
            )?;
            Ok(Run {
                label: label.clone(),
                policy: policy.clone(),
                summary: metrics.summary(),
                log: log.finish(),
                playout: None,
            })
        })
        .collect()
}

/// [`run_policies`] in one streaming pass: the samples of one stream, received and ground
/// truth, in the trace's order, replayed through each policy side by side
/// ([`StreamingReplay`]), each frame logged once its error is final. Memory follows the
/// figures' width and the pass's window, not the stream's length; the logs and summaries are
/// those of [`run_policies`] (a test compares them).
pub struct RunsPass {
    pass: StreamingReplay,
    stream: u32,
    labels: Vec<(String, Policy)>,
    loggers: Vec<FrameLogger>,
    start: Nanos,
    pushed: u64,
}

impl std::fmt::Debug for RunsPass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunsPass")
            .field("stream", &self.stream)
            .field("policies", &self.labels.len())
            .finish()
    }
}

impl RunsPass {
    /// A pass over stream `stream` (its number as the reader gives it, [`Sample::stream`])
    /// through `policies`, its frames rendered by `frames` with the clock mapping `clock`.
    /// `survey` is the first pass over the same stream (its first and last arrival and the
    /// recovery figure's windows, as [`crate::trace::TraceFigures::panel_windows`]).
    ///
    /// # Errors
    /// What needs the whole stream ([`StreamingReplay::new`]; the `hindsight` mapping does
    /// not: the survey gives the stream's offset).
    pub fn new(
        stream: u32,
        policies: &[(String, Policy)],
        frames: &FrameClock,
        clock: ClockMapping,
        survey: &crate::trace::Surveyed,
    ) -> Result<Self, Unstreamable> {
        let only: Vec<Policy> = policies.iter().map(|(_, p)| p.clone()).collect();
        // One stream is replayed: under `hindsight` its offset is the survey's (the most
        // `send − arrival` over its received samples, as in memory), a constant.
        let clock = match clock {
            ClockMapping::Hindsight => ClockMapping::Fixed(survey.offset),
            other => other,
        };
        let pass = StreamingReplay::new(frames, clock, &only)?.log_frames(stream, false);
        let windows = SpikeWindows::around(&crate::recovery::windows_of(&survey.spikes.1));
        Ok(Self {
            pass,
            stream,
            labels: policies.to_vec(),
            loggers: policies
                .iter()
                .map(|_| FrameLogger::new(survey.span(), windows.clone()))
                .collect(),
            start: survey.start,
            pushed: 0,
        })
    }

    /// The next sample of the stream (received, or ground truth with `truth`); `channels`
    /// are its value channels as known so far.
    pub fn push(&mut self, sample: Sample, truth: bool, channels: Option<&[String]>) {
        debug_assert_eq!(sample.stream, self.stream);
        self.pass.push(sample, truth, channels);
        self.pushed += 1;
        if self.pushed.is_multiple_of(256) {
            self.drain();
        }
    }

    fn drain(&mut self) {
        let (loggers, start) = (&mut self.loggers, self.start);
        self.pass.drain_frames(|i, f| loggers[i].logged(&f, start));
    }

    /// The problem met so far, if any ([`StreamingReplay::broken`]).
    pub fn broken(&self) -> Option<&Unstreamable> {
        self.pass.broken()
    }

    /// The runs, once the stream is over.
    ///
    /// # Errors
    /// The stream broke an assumption of the pass ([`Unstreamable`]).
    pub fn finish(mut self) -> Result<Vec<Run>, Unstreamable> {
        self.drain();
        let streamed = self.pass.finish()?;
        let mine = streamed.into_iter().find(|s| s.stream == self.stream);
        let start = self.start;
        let mut runs = Vec::with_capacity(self.labels.len());
        for (i, ((label, policy), mut log)) in self.labels.into_iter().zip(self.loggers).enumerate()
        {
            let summary = match &mine {
                Some(s) => {
                    for f in s.logged.get(i).into_iter().flatten() {
                        log.logged(f, start);
                    }
                    s.metrics[i].summary()
                }
                None => jitterlab_replay::Metrics::default().summary(),
            };
            runs.push(Run {
                label,
                policy,
                summary,
                log: log.finish(),
                playout: None,
            });
        }
        Ok(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::COLUMNS;
    use jitterlab_capture::{Nanos, Sample};

    /// 200,000 snapshots at 100 Hz (2,000 s) with a 20 ms transit, and an outage: nothing
    /// arrives from 100 s to 100.5 s, the packets sent then arrive at its end.
    fn long_stream() -> Decoded {
        let samples: Vec<Sample> = (0..200_000i64)
            .map(|i| {
                let send = Nanos::from_millis(10 * i);
                let arrival = if (10_000..10_050).contains(&i) {
                    Nanos::from_millis(100_520)
                } else {
                    send + Nanos::from_millis(20)
                };
                Sample::new(0, i, send, arrival).with_values(vec![i as f64])
            })
            .collect();
        crate::test_support::probe_decoded(samples)
    }

    /// A long replay's log is reduced to the figure's columns, the outage's hold run and its
    /// delay peak survive, every frame is counted, and the spike's window keeps its frames.
    #[test]
    fn a_long_replay_logs_in_bounded_memory_and_keeps_its_spike() {
        let decoded = long_stream();
        let policies = vec![("fixed 50".to_owned(), "fixed:delay=50ms".parse().unwrap())];
        let runs = run_policies(
            &decoded,
            0,
            &policies,
            &FrameClock::Fps(100.0),
            ClockMapping::Hindsight,
        )
        .unwrap();
        let log = &runs[0].log;
        let s = &runs[0].summary;
        assert!(s.frames > 190_000, "{s:?}");
        for series in [&log.delay_ms, &log.ahead_ms, &log.error] {
            assert!(series.len() <= 4 * (COLUMNS + 8), "{}", series.len());
            assert!(series.windows(2).all(|w| w[0].0 <= w[1].0));
        }
        // Held through the outage: the display delay climbs to 500 ms, and the
        // reduced series still reaches it.
        let peak = log.delay_ms.iter().map(|p| p.1).fold(0.0f64, f64::max);
        assert!(
            (peak - s.max_delay_ms.unwrap()).abs() < 1e-9,
            "{peak} vs {s:?}"
        );
        assert!(peak >= 450.0, "{peak}");
        let (held_times, held) = &log.not_interpolated[0];
        assert_eq!(*held, s.holds);
        assert!(held_times.len() < held.to_owned() as usize);
        assert!(held_times.iter().any(|t| (100.0..=100.6).contains(t)));
        // Around the spike, every frame: about 4.5 s of them at 100 fps.
        assert!(
            log.around_spikes.len() >= 440,
            "{}",
            log.around_spikes.len()
        );
        assert!(log.errors.len() as usize > 190_000);
    }

    /// A stream with ground truth: jittered arrivals, a loss burst, an outage, and the truth
    /// of every packet, as a trace holds them (by arrival; truth at its local send time).
    fn with_truth(n: i64) -> (Decoded, Vec<(Sample, bool)>) {
        let mut x = 7u64;
        let mut rand = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as i64
        };
        let mut samples = Vec::new();
        let mut truth = Vec::new();
        for i in 0..n {
            let send = Nanos::from_millis(16 * i);
            let value = vec![(i as f64 * 0.1).sin()];
            truth.push(Sample::new(0, i, send, send).with_values(value.clone()));
            if (n / 2..n / 2 + 5).contains(&i) {
                continue;
            }
            let mut transit = Nanos::from_millis(25) + Nanos(rand() % 12_000_000);
            if (n / 4..n / 4 + 20).contains(&i) {
                transit = Nanos::from_millis(16 * (n / 4 + 20 - i) + 30);
            }
            samples.push(Sample::new(0, i, send, send + transit).with_values(value));
        }
        samples.sort_by_key(|s| s.arrival);
        let mut order: Vec<(Sample, bool)> = truth
            .iter()
            .map(|s| (s.clone(), true))
            .chain(samples.iter().map(|s| (s.clone(), false)))
            .collect();
        order.sort_by_key(|(s, _)| s.arrival);
        let mut decoded = crate::test_support::probe_decoded(samples);
        decoded.truth = truth;
        (decoded, order)
    }

    /// Runs logged in one streaming pass are those `run_policies` logs over the whole stream:
    /// every reduced series, the error distribution, the counts and the summaries, for
    /// several engines, with ground truth or without.
    #[test]
    fn a_streaming_pass_logs_the_runs_of_the_whole_stream() {
        let policies: Vec<(String, Policy)> = [
            "fixed:delay=50ms",
            "jitter:a=2,k=3",
            "mirror",
            "quantile:q=0.95,apply=stretch:max_rate=10%",
        ]
        .iter()
        .map(|p| ((*p).to_owned(), p.parse().unwrap()))
        .collect();
        let frames = FrameClock::Fps(60.0);
        let (truthful, order) = with_truth(30_000);
        let plain = long_stream();
        let plain_order: Vec<(Sample, bool)> =
            plain.samples.iter().map(|s| (s.clone(), false)).collect();
        for (decoded, order) in [(&truthful, &order), (&plain, &plain_order)] {
            let want =
                run_policies(decoded, 0, &policies, &frames, ClockMapping::Estimated).unwrap();
            let mut survey = crate::trace::Survey::default();
            for (s, truth) in order {
                if !truth {
                    survey.push(s);
                }
            }
            let mut pass = RunsPass::new(
                0,
                &policies,
                &frames,
                ClockMapping::Estimated,
                &survey.finish(),
            )
            .unwrap();
            let channels = ["x".to_owned()];
            for (s, truth) in order {
                pass.push(s.clone(), *truth, Some(&channels));
            }
            let got = pass.finish().unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(format!("{:?}", g.summary), format!("{:?}", w.summary));
                // Debug text: NaN marks frames without a value, and NaN != NaN.
                assert!(
                    format!("{:?}", g.log) == format!("{:?}", w.log),
                    "{}: the logs differ",
                    g.label
                );
                assert!(g.log.error.len() > 100 && g.log.around_spikes.len() > 10);
            }
        }
    }
}
