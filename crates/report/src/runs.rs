//! Replaying one stream through several configurations, keeping per-frame logs for figures.

use jitterlab_capture::decode::Decoded;
use jitterlab_replay::playout::{PlayoutEvent, PlayoutMetrics, PlayoutReport, QualityOptions};
use jitterlab_replay::{
    ClockMapping, FrameClock, Media, Mode, PlayoutStream, Policy, Replay, StreamView, Summary,
    streams,
};

use rayon::prelude::*;

use crate::Error;

/// Per-frame values of one replay, for plotting. Times are seconds since the stream's first
/// arrival; NaN marks "no value".
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameLog {
    /// Local frame time, s.
    pub t: Vec<f64>,
    /// Samples buffered ahead of the target.
    pub depth: Vec<f64>,
    /// Time buffered ahead of the target, ms (negative while starving).
    pub ahead_ms: Vec<f64>,
    /// Distance from the reference.
    pub error: Vec<f64>,
    /// Display delay, ms.
    pub delay_ms: Vec<f64>,
    /// How each frame was shown.
    pub mode: Vec<Mode>,
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

/// Per-slot values of one discrete playout, for plotting. Times are seconds since the
/// stream's first arrival.
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
    policies
        .par_iter()
        .map(|(label, policy)| {
            let run = policy
                .playout(&prepared)
                .ok_or(jitterlab_replay::Error::NotPlayout {
                    policy: policy.name(),
                })?;
            let mut log = PlayoutLog {
                report: PlayoutMetrics::measure(&prepared, &run, options).report(),
                ..PlayoutLog::default()
            };
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
                log.delay.push((t, d));
                if let Some(target) = run.target(i) {
                    log.target.push((t, target.as_millis_f64()));
                }
                match *e {
                    PlayoutEvent::Concealed {
                        arrived_late: true, ..
                    } => log.late.push((t, d)),
                    PlayoutEvent::Concealed { .. } => log.lost.push((t, d)),
                    PlayoutEvent::Played { .. } => {}
                }
            }
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
    let input = view.stream();
    // Configurations replay independently: one per core.
    policies
        .par_iter()
        .map(|(label, policy)| {
            let mut log = FrameLog::default();
            let metrics = Replay::new(FrameClock::clone(frames)).clock(clock).stream(
                &input,
                policy,
                |f| {
                    if f.startup {
                        return;
                    }
                    log.t.push((f.at - start).as_secs_f64());
                    log.depth.push(f.depth as f64);
                    log.ahead_ms
                        .push(f.ahead.map_or(f64::NAN, |a| a.as_millis_f64()));
                    log.error.push(f.error.unwrap_or(f64::NAN));
                    log.delay_ms
                        .push(f.delay.map_or(f64::NAN, |d| d.as_millis_f64()));
                    log.mode.push(f.mode);
                },
            )?;
            Ok(Run {
                label: label.clone(),
                policy: policy.clone(),
                summary: metrics.summary(),
                log,
                playout: None,
            })
        })
        .collect()
}
