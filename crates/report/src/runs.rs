//! Replaying one stream through several configurations, keeping per-frame logs for figures.

use jitterlab_capture::decode::Decoded;
use jitterlab_replay::{
    ClockMapping, FrameClock, Mode, Policy, Replay, StreamView, Summary, streams,
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
    /// Its metrics.
    pub summary: Summary,
    /// Its frames.
    pub log: FrameLog,
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
            })
        })
        .collect()
}
