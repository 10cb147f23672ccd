//! The W3C webrtc-stats video figures of one played stream (`RTCInboundRtpStreamStats`,
//! <https://www.w3.org/TR/webrtc-stats/#inboundrtpstats-dict*>), as jitterlab can know them,
//! measured the way libwebrtc measures them (`video/video_quality_observer2.cc`,
//! `video/receive_statistics_proxy.cc`, `video/video_receive_stream2.cc`; `webrtc-sdk/webrtc`
//! at `cd6792e`).
//!
//! - `framesReceived`: "the total number of complete frames received on this RTP stream".
//!   Here: frame slots whose frame arrived complete ([`VideoStats::complete`]).
//! - `framesDecoded`: "frames correctly decoded for this RTP stream". jitterlab has no
//!   decoder and does not model the reference chain: every frame the policy plays.
//! - `framesDropped`: "frames dropped prior to decode or dropped because the frame missed its
//!   display deadline": complete frames the policy did not play ([`VideoStats::late`]).
//! - `freezeCount` / `totalFreezesDuration`: "a freeze if frame duration, which is time
//!   interval between two consecutively rendered frames, is equal or exceeds
//!   Max(3 * avg_frame_duration_ms, avg_frame_duration_ms + 150), where avg_frame_duration_ms
//!   is linear average of durations of last 30 rendered frames". libwebrtc's average is a
//!   moving average of the last 30 inter-frame delays *including the one being judged*,
//!   rounded down, and no freeze is counted before 5 delays are known
//!   (`kMinFrameSamplesToDetectFreeze`); jitterlab does the same (rounding down to the
//!   nanosecond, not the millisecond).
//! - `pauseCount` / `totalPausesDuration`: the spec counts a pause when a frame is rendered
//!   more than 5 s after the previous one. libwebrtc tells a pause from a freeze by the
//!   packets: the stream is paused when, waiting for a frame, no packet has arrived for 5 s
//!   (`kInactiveDuration`); the whole gap up to the next rendered frame is then a pause, and
//!   it neither counts as a freeze nor enters the freeze average. jitterlab follows libwebrtc,
//!   checking for such a silence anywhere in the gap (libwebrtc looks at its 3 s frame
//!   timeouts), so a long gap while packets keep coming (frames incomplete or late) is a
//!   freeze.
//! - `totalInterFrameDelay` / `totalSquaredInterFrameDelay`: the sum of the intervals between
//!   consecutively rendered frames (libwebrtc: last render − first render, pauses included),
//!   and of their squares, in seconds and seconds².

use jitterlab_capture::Nanos;

use super::assemble::inactive_spans;
use crate::playout::{PlayoutEvent, PlayoutRun, PlayoutStream};

/// Inter-frame delays the freeze threshold averages (`kAvgInterframeDelaysWindowSizeFrames`).
const FREEZE_WINDOW: usize = 30;
/// Delays needed before a freeze can be counted (`kMinFrameSamplesToDetectFreeze`).
const FREEZE_MIN_SAMPLES: usize = 5;
/// The freeze threshold's least increase over the average (`kMinIncreaseForFreezeMs`).
const FREEZE_MIN_INCREASE: Nanos = Nanos::from_millis(150);

/// The video figures of one played stream (or several, [`VideoStats::merge`]d).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct VideoStats {
    /// Frame slots played out.
    pub frames: u64,
    /// Slots whose frame arrived complete (webrtc-stats `framesReceived`).
    pub complete: u64,
    /// Slots whose frame never arrived complete: a packet lost, or the whole frame.
    pub incomplete: u64,
    /// Complete frames not shown: they arrived after their play time, or the policy dropped
    /// them (webrtc-stats `framesDropped`).
    pub late: u64,
    /// webrtc-stats `framesReceived`: the same as `complete`.
    pub frames_received: u64,
    /// webrtc-stats `framesDecoded`: the frames played (every played frame decodes here).
    pub frames_decoded: u64,
    /// webrtc-stats `framesDropped`: the same as `late`.
    pub frames_dropped: u64,
    /// webrtc-stats `framesRendered`: the frames shown.
    pub frames_rendered: u64,
    /// webrtc-stats `freezeCount`.
    pub freeze_count: u64,
    /// webrtc-stats `totalFreezesDuration`, in ms.
    pub total_freezes_duration_ms: f64,
    /// webrtc-stats `pauseCount`.
    pub pause_count: u64,
    /// webrtc-stats `totalPausesDuration`, in ms.
    pub total_pauses_duration_ms: f64,
    /// webrtc-stats `totalInterFrameDelay`, in seconds.
    pub total_inter_frame_delay: f64,
    /// webrtc-stats `totalSquaredInterFrameDelay`, in seconds².
    pub total_squared_inter_frame_delay: f64,
}

/// The last [`FREEZE_WINDOW`] inter-frame delays and their sum.
struct Window {
    delays: [i64; FREEZE_WINDOW],
    len: usize,
    next: usize,
    sum: i64,
}

impl Window {
    fn add(&mut self, d: i64) {
        if self.len == FREEZE_WINDOW {
            self.sum = self.sum.wrapping_sub(self.delays[self.next]);
        } else {
            self.len += 1;
        }
        self.delays[self.next] = d;
        // Wrapping both ways keeps the window's sum exact whatever the delays.
        self.sum = self.sum.wrapping_add(d);
        self.next = (self.next + 1) % FREEZE_WINDOW;
    }

    /// The mean, rounded down; `None` before [`FREEZE_MIN_SAMPLES`].
    fn mean(&self) -> Option<i64> {
        (self.len >= FREEZE_MIN_SAMPLES).then(|| self.sum / self.len as i64)
    }
}

impl VideoStats {
    /// Measures `run`, a playout of `stream`, in one pass over its events (and the stream's
    /// inactive spans, for pauses).
    pub fn measure(stream: &PlayoutStream<'_>, run: &PlayoutRun) -> Self {
        let computed;
        let inactive: &[(Nanos, Nanos)] = match &stream.frames {
            Some(a) => &a.inactive,
            None => {
                computed = inactive_spans(stream.units());
                &computed
            }
        };
        let mut s = Self::default();
        let mut window = Window {
            delays: [0; FREEZE_WINDOW],
            len: 0,
            next: 0,
            sum: 0,
        };
        let mut span = 0usize;
        let (mut first, mut last): (Option<Nanos>, Option<Nanos>) = (None, None);
        let (mut freezes, mut pauses) = (Nanos::ZERO, Nanos::ZERO);
        for e in &run.events {
            s.frames += 1;
            match *e {
                PlayoutEvent::Played { at, .. } => {
                    s.frames_rendered += 1;
                    if let Some(prev) = last {
                        let d = (at - prev).max(Nanos::ZERO);
                        s.total_squared_inter_frame_delay += d.as_secs_f64() * d.as_secs_f64();
                        // Inactive spans ending by the previous frame are behind us.
                        while span < inactive.len() && inactive[span].1 <= prev {
                            span += 1;
                        }
                        let paused = inactive.get(span).is_some_and(|&(start, _)| start < at);
                        if paused {
                            s.pause_count += 1;
                            pauses += d;
                        } else {
                            window.add(d.as_nanos());
                            if let Some(mean) = window.mean() {
                                let bound = mean
                                    .saturating_mul(3)
                                    .max(mean.saturating_add(FREEZE_MIN_INCREASE.as_nanos()));
                                if d.as_nanos() >= bound {
                                    s.freeze_count += 1;
                                    freezes += d;
                                }
                            }
                        }
                    } else {
                        first = Some(at);
                    }
                    last = Some(at.max(last.unwrap_or(at)));
                }
                PlayoutEvent::Concealed { arrived_late, .. } => {
                    if arrived_late {
                        s.late += 1;
                    } else {
                        s.incomplete += 1;
                    }
                }
            }
        }
        s.complete = s.frames - s.incomplete;
        s.frames_received = s.complete;
        s.frames_decoded = s.frames_rendered;
        s.frames_dropped = s.late;
        s.total_freezes_duration_ms = freezes.as_millis_f64();
        s.total_pauses_duration_ms = pauses.as_millis_f64();
        if let (Some(a), Some(b)) = (first, last) {
            s.total_inter_frame_delay = (b - a).as_secs_f64();
        }
        s
    }

    /// Adds another stream's figures.
    pub fn merge(&mut self, o: &Self) {
        self.frames += o.frames;
        self.complete += o.complete;
        self.incomplete += o.incomplete;
        self.late += o.late;
        self.frames_received += o.frames_received;
        self.frames_decoded += o.frames_decoded;
        self.frames_dropped += o.frames_dropped;
        self.frames_rendered += o.frames_rendered;
        self.freeze_count += o.freeze_count;
        self.total_freezes_duration_ms += o.total_freezes_duration_ms;
        self.pause_count += o.pause_count;
        self.total_pauses_duration_ms += o.total_pauses_duration_ms;
        self.total_inter_frame_delay += o.total_inter_frame_delay;
        self.total_squared_inter_frame_delay += o.total_squared_inter_frame_delay;
    }

    /// `late / frames`: the share of slots whose frame came complete but too late.
    pub fn late_ratio(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            self.late as f64 / self.frames as f64
        }
    }
}

#[cfg(test)]
mod tests;
