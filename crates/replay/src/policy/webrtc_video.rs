//! `webrtc-video`: libwebrtc's video receive timing as a frame-playout policy (anchors-2.md
//! §3.2).
//!
//! Source: libwebrtc as mirrored in `webrtc-sdk/webrtc` at `cd6792e` (October 2024):
//! `modules/video_coding/timing/jitter_estimator.cc`, `frame_delay_variation_kalman_filter.cc`,
//! `inter_frame_delay_variation_calculator.cc`, `timing.cc`, `timestamp_extrapolator.cc`,
//! `decode_time_percentile_filter.cc`, and the frame buffer's scheduling in
//! `video/video_stream_buffer_controller.cc`, `video/frame_decode_timing.cc` and
//! `api/video/frame_buffer.cc`. The models are in [`crate::video`]; the playout in
//! [`crate::video::playout_webrtc_video`].
//!
//! How a frame is played: when it completes, its timestamp feeds the extrapolator (which
//! learns the local time each 90 kHz timestamp completes). When the decoder is free, the
//! oldest complete frame gets a render time (expected completion + the current delay, within
//! `min`..`max`) and is handed to the decoder `decode_time` + `render_delay` before it; a frame
//! whose hand-over time is more than 5 ms past while a newer frame is ready is dropped
//! (fast-forward), and a frame completing after a newer one was decoded is dropped too. At
//! each hand-over the jitter estimator takes the frame's delay variation and size, the jitter
//! delay becomes its estimate (plus `os_jitter`), and the current delay moves toward the
//! target `max(min, jitter + decode time + render delay)`: by the frame's lateness (the
//! current pipeline) or, with `slew`, by at most that much per second of media (the legacy
//! `VCMReceiver`, `kDelayMaxChangeMsPerS` = 100 ms). The frame is shown at its render time,
//! or when decoded if that is later. With `min=0` and `max` at most 500 ms libwebrtc renders
//! as soon as decoded, paced by `min_pacing` (its low-latency mode), and so does this preset.
//!
//! Defaults (libwebrtc's): `render_delay=10ms` (`kDefaultRenderDelay`), `os_jitter=10ms`
//! (`OPERATING_SYSTEM_JITTER`), `min=0ms`, `max=10s`, `min_pacing=8ms`, `slew=off`.
//! `decode_time=0ms` is jitterlab's: a replay has no decoder; libwebrtc plans for the 95th
//! percentile of measured decode times, which this key stands in for (the first 5 decodes
//! count as 0, as libwebrtc ignores them).
//!
//! Departures: no NACK or RTT term (a replay has no retransmissions); no reference chain
//! (every complete frame is decodable, so the first frame stands in for the key frame that
//! libwebrtc releases at once); the decoder's 3 s frame timeout bounds each wait but does not
//! request key frames; timestamps are 90 kHz ticks of the stream's send times (re-based by
//! [`crate::PlayoutStream`]); a frame is never shown before the one before it.

use std::sync::OnceLock;

use jitterlab_capture::Nanos;
use jitterlab_capture::spec::format_duration;

use super::keys::{key, print_duration};
use super::{DelayModel, Key, KeyError, Preset, duration_key};
use crate::playout::{PlayoutRun, PlayoutStream};

/// libwebrtc's video receive timing: see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebRtcVideoConfig {
    /// Time between handing a frame to the renderer and it showing (`render_delay`).
    pub render_delay: Nanos,
    /// The decode time planned for (libwebrtc: the 95th percentile of measured decodes).
    pub decode_time: Nanos,
    /// Added to every jitter estimate (`OPERATING_SYSTEM_JITTER`).
    pub os_jitter: Nanos,
    /// Min playout delay (the RTP playout-delay extension's min, or A/V sync).
    pub min: Nanos,
    /// Max playout delay.
    pub max: Nanos,
    /// `None`: the current pipeline's delay update; `Some(rate)`: the legacy one, moving by
    /// at most `rate` per second of media.
    pub slew: Option<Nanos>,
    /// The low-latency renderer's least time between decodes.
    pub min_pacing: Nanos,
}

impl Default for WebRtcVideoConfig {
    fn default() -> Self {
        Self {
            render_delay: Nanos::from_millis(10),
            decode_time: Nanos::ZERO,
            os_jitter: Nanos::from_millis(10),
            min: Nanos::ZERO,
            max: Nanos::from_secs(10),
            slew: None,
            min_pacing: Nanos::from_millis(8),
        }
    }
}

/// `off` or a rate of at least 1 ms per second.
fn slew(v: &str) -> Result<Option<Nanos>, String> {
    match v {
        "off" => Ok(None),
        _ => duration_key(v, Nanos::from_millis(1)).map(Some),
    }
}

/// A duration of at least zero.
fn at_least_zero(v: &str) -> Result<Nanos, String> {
    duration_key(v, Nanos::ZERO)
}

fn print_slew(s: &Option<Nanos>) -> String {
    s.map_or_else(|| "off".to_owned(), format_duration)
}

impl Preset for WebRtcVideoConfig {
    const NAME: &'static str = "webrtc-video";
    const PLAYOUT_ONLY: bool = true;
    const MEDIA: Option<jitterlab_capture::decode::MediaKind> =
        Some(jitterlab_capture::decode::MediaKind::Video);
    const PLAYOUT_AXES: &'static str = "min = [\"0ms\", \"50ms\", \"100ms\", \"150ms\", \"200ms\"]\nrender_delay = [\"0ms\", \"10ms\"]\nslew = [\"off\", \"100ms\"]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<WebRtcVideoConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "min", |c| c.min, print_duration, at_least_zero),
                key!(Self, "max", |c| c.max, print_duration, at_least_zero),
                key!(Self, "render_delay", |c| c.render_delay, print_duration, at_least_zero),
                key!(Self, "decode_time", |c| c.decode_time, print_duration, at_least_zero),
                key!(Self, "os_jitter", |c| c.os_jitter, print_duration, at_least_zero),
                key!(Self, "slew", |c| c.slew, print_slew, slew),
                key!(Self, "min_pacing", |c| c.min_pacing, print_duration, at_least_zero),
            ]
        })
    }

    fn validate(&self) -> Result<(), KeyError> {
        if self.min > self.max {
            return Err(KeyError {
                key: "min",
                reason: format!(
                    "{} is above max {}",
                    format_duration(self.min),
                    format_duration(self.max)
                ),
            });
        }
        Ok(())
    }

    fn max_delay(&self) -> Nanos {
        self.max
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    /// libwebrtc's frame scheduling and render times ([`crate::video::playout_webrtc_video`]).
    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        Some(crate::video::playout_webrtc_video(stream, self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Policy;

    #[test]
    fn parses_prints_and_refuses_min_above_max() {
        let p: Policy = "webrtc-video".parse().unwrap();
        assert_eq!(
            p.to_string(),
            "webrtc-video:min=0ms,max=10000ms,render_delay=10ms,decode_time=0ms,os_jitter=10ms,slew=off,min_pacing=8ms"
        );
        let q: Policy = "webrtc-video:min=100ms,slew=100ms,decode_time=5ms"
            .parse()
            .unwrap();
        assert_eq!(q.to_string().parse::<Policy>().unwrap(), q);
        let c = q.config::<WebRtcVideoConfig>().unwrap();
        assert_eq!(c.slew, Some(Nanos::from_millis(100)));
        assert!(p.playout_only() && p.plays_frames());
        let err = "webrtc-video:min=2s,max=1s"
            .parse::<Policy>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("min") && err.contains("above max"), "{err}");
        let err = "webrtc-video:slew=0ms".parse::<Policy>().unwrap_err().to_string();
        assert!(err.contains("slew"), "{err}");
    }
}
