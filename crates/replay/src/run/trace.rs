//! Every stream of a decoded trace through one policy: snapshot replay or discrete playout.

use jitterlab_capture::decode::Decoded;

use super::{Frame, FrameClock, replay_stream};
use crate::Error;
use crate::clock::ClockMapping;
use crate::metrics::Metrics;
use crate::playout::{
    Media, PlayoutMetrics, PlayoutRun, PlayoutStream, PlayoutSummary, Prepared, QualityOptions,
    summarize,
};
use crate::policy::Policy;
use crate::streams::views;
use crate::video::{Assembly, VideoStats};

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
pub(crate) fn replay_trace(
    decoded: &Decoded,
    only: Option<u32>,
    policy: &Policy,
    frames: &FrameClock,
    clock: ClockMapping,
    mut on_frame: impl FnMut(&Frame<'_>),
) -> Result<TraceReplay, Error> {
    let mut out = TraceReplay::default();
    for view in views(decoded, only) {
        let view = view?;
        let m = replay_stream(&view.stream(), policy, frames, clock, &mut on_frame)?;
        out.total.merge(&m);
        out.streams.push((view.id, m));
    }
    Ok(out)
}

/// One stream's discrete playout.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamPlayout {
    /// The stream.
    pub stream: u32,
    /// What happened to every frame slot, and the policy's own counters.
    pub run: PlayoutRun,
    /// The slots summarised.
    pub summary: PlayoutSummary,
    /// The playout's figures (with the quality or video figures the stream's media has).
    pub metrics: PlayoutMetrics,
    /// What the stream carries.
    pub media: Media,
    /// What preparing the stream set aside or repaired.
    pub prepared: Prepared,
    /// Video streams: the webrtc-stats video figures of the run.
    pub video: Option<VideoStats>,
    /// Video streams: how the packets were assembled into frames.
    pub frames: Option<Assembly>,
}

/// The discrete playout (C21–C24) of every stream of a trace (or only `only`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TracePlayout {
    /// Per stream, in the trace's stream order.
    pub streams: Vec<StreamPlayout>,
    /// All streams together.
    pub total: PlayoutSummary,
    /// All streams' figures together (what a playout sweep's row holds).
    pub metrics: PlayoutMetrics,
    /// The video streams' figures together (`None` without a video stream).
    pub video: Option<VideoStats>,
}

/// Plays every stream of a decoded trace (or only `only`) as discrete frames through `policy`:
/// the policy chooses how (a fixed delay, an adaptive one on a 10 ms tick, or its own decision
/// logic such as NetEq's).
///
/// # Errors
/// A policy that only interpolates snapshots, or a stream without send times.
pub(crate) fn playout_trace(
    decoded: &Decoded,
    only: Option<u32>,
    policy: &Policy,
    clock: ClockMapping,
    options: QualityOptions,
) -> Result<TracePlayout, Error> {
    if !policy.plays_frames() {
        return Err(Error::NotPlayout {
            policy: policy.name(),
        });
    }
    let mut out = TracePlayout::default();
    let info: std::collections::HashMap<u32, &jitterlab_capture::decode::StreamInfo> =
        decoded.streams.iter().map(|s| (s.id, s)).collect();
    for view in views(decoded, only) {
        let view = view?;
        let media = info.get(&view.id).map(|s| Media::of(s)).unwrap_or_default();
        let mut stream = PlayoutStream::with_clock(view.id, &view.samples, media, clock);
        let run = policy.playout(&stream).ok_or(Error::NotPlayout {
            policy: policy.name(),
        })?;
        let summary = summarize(&run.events);
        let metrics = PlayoutMetrics::measure(&stream, &run, options);
        out.total.merge(&summary);
        out.metrics.merge(&metrics);
        let video = metrics.video;
        out.streams.push(StreamPlayout {
            stream: view.id,
            run,
            summary,
            metrics,
            prepared: stream.prepared.clone(),
            media: stream.media.clone(),
            video,
            frames: stream.frames.take().map(|mut a| {
                // The counts are what is kept.
                a.inactive = Vec::new();
                a
            }),
        });
    }
    out.video = out.metrics.video;
    Ok(out)
}
