//! Deterministic, sans-IO replay of recorded traffic through jitter-buffer policies.
//!
//! Feed a stream's decoded samples (from `jitterlab-capture`) and a frame clock to a
//! [`Replay`] with a [`Policy`]: it returns what a player would have seen, frame by frame
//! ([`Frame`]) and summarised ([`Metrics`], [`Summary`]). Nothing here reads a file or the OS
//! clock, so the same input always gives the same output.
//!
//! - [`policy`]: every preset in a file of its own behind the [`Preset`] trait (name, key table,
//!   defaults, largest delay, what it runs on); [`Policy`] wraps one, [`Registry`] parses them.
//! - [`Replay`]: the one door to a replay (one stream with per-frame output or metrics only, a
//!   batch of configurations over a [`FramePlan`], a whole trace, discrete playout).
//! - [`streams`]: from a decoded trace to replay inputs ([`StreamView`], [`TraceStreams`]).
//! - [`sweep`], [`grid`] and [`tune`]: many configurations, and the one rule that picks one.
//! - [`shard`]: `--shard auto`, the part of a sweep a Slurm job array or a Kubernetes Indexed
//!   Job task runs.
//!
//! The buffer itself is [`SnapshotBuffer`] (contracts C4–C11); [`playout`] plays discrete
//! frames at send time + delay (C21, C22).
//!
//! # Example
//! ```
//! use jitterlab_capture::{Nanos, Sample};
//! use jitterlab_replay::{ClockMapping, FrameClock, Mode, Policy, Replay, Stream};
//!
//! // Seed 000: samples at 50/100/150 ms arriving out of order, sampled at 225 ms.
//! let mk = |seq: i64, send: i64, arrival: i64, v: f64| {
//!     Sample::new(0, seq, Nanos::from_millis(send), Nanos::from_millis(arrival)).with_values(vec![v])
//! };
//! let samples = [mk(3, 150, 151, 15.0), mk(1, 50, 152, 5.0), mk(2, 100, 153, 10.0)];
//! let policy: Policy = "fixed:delay=100ms,max_gap=120ms".parse()?;
//! let mut shown = Vec::new();
//! Replay::new(FrameClock::At(vec![Nanos::from_millis(225)]))
//!     .clock(ClockMapping::Fixed(Nanos::ZERO))
//!     .stream(&Stream::new(&samples), &policy, |f| shown.push((f.mode, f.alpha, f.value.to_vec())))?;
//! assert_eq!(shown, [(Mode::Interpolate, Some(0.5), vec![12.5])]);
//! # Ok::<(), jitterlab_replay::Error>(())
//! ```

pub(crate) mod adapt;
pub mod bound;
pub mod buffer;
pub mod clock;
pub mod decision;
pub mod engine;
mod error;
pub mod external;
pub mod grid;
pub mod gstreamer;
pub mod metrics;
pub mod mirror;
pub mod neteq;
pub mod ngo;
pub mod playout;
pub mod policy;
pub mod quality;
pub mod recovery;
mod run;
pub mod shard;
pub mod streams;
pub mod sweep;
pub mod tune;
pub mod values;
pub mod video;

pub use buffer::{Factor, HoldReason, Mode, Packet, Pick, Push, SnapshotBuffer};
pub use clock::{ClockMapping, HindsightOffsets};
pub use engine::{Applied, Controller, Engine, SnapshotEngine};
pub use error::Error;
pub use metrics::{LogHistogram, Metrics, Reference, Summary};
pub use playout::{Media, PlayoutStream};
pub use policy::{
    AdaptiveConfig, Apply, BufferConfig, Built, DelayModel, ExecConfig, FixedConfig,
    GStreamerConfig, JitterConfig, MirrorConfig, MissPolicy, NetEqConfig, NgoConfig, Policy,
    Preset, QuantileConfig, Registry, SourceConfig, WebRtcVideoConfig,
};
pub use run::{
    Frame, FrameClock, FramePlan, HORIZON, LoggedFrame, Prepared, Replay, Stream, StreamPlayout,
    StreamedStream, StreamingReplay, TracePlayout, TraceReplay, Unstreamable,
};
pub use streams::{StreamView, TraceStreams};
pub use video::{Assembly, VideoStats};
