//! Video: RTP packets assembled into frames (what a video jitter buffer plays), the W3C
//! webrtc-stats video figures of a playout, and the models behind the `webrtc-video` preset
//! (libwebrtc's frame-delay jitter estimator and its timing: see `docs/media/video.md`).
//!
//! - [`assemble`]: packets sharing an RTP timestamp form one frame; complete frames are the
//!   units [`crate::PlayoutStream`] plays, incomplete ones are slots that never arrive.
//! - [`VideoStats`]: framesReceived/Decoded/Dropped, freezes, pauses and the inter-frame
//!   delay sums of one played stream, measured in one pass.
//! - [`JitterEstimator`], [`Timing`] and [`TimestampExtrapolator`]: libwebrtc's
//!   `modules/video_coding/timing/`, driven by [`playout_webrtc_video`].
//!
//! jitterlab does not model the decoder's reference chain: every complete frame counts as
//! decodable on its own, also one that follows an incomplete frame (a real decoder would show
//! artefacts or wait for a key frame there). The packets do not say which frames are key
//! frames, so jitterlab cannot tell how long such a chain breaks.

mod assemble;
mod jitter;
mod receiver;
mod stats;
mod timing;

pub use assemble::{Assembly, INACTIVE_AFTER, Incomplete, assemble};
pub use jitter::{FrameDelayKalman, InterFrameDelay, JitterEstimator};
pub use receiver::{WebRtcVideoStats, playout_webrtc_video};
pub use stats::VideoStats;
pub use timing::{DecodeTimeFilter, TimestampExtrapolator, Timing};
