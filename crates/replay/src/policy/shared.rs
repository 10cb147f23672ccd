//! What several presets share: the sample store's configuration, the miss policy, how delay
//! changes are applied, and the adaptive presets' clamps.

use std::fmt;

use jitterlab_capture::Nanos;
use jitterlab_capture::spec::{format_duration, format_share};

/// The most samples a buffer may be configured to hold.
pub const MAX_CAPACITY: usize = 1 << 20;

/// What to show when the target time has no usable pair of samples (C13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissPolicy {
    /// Hold the last confirmed state: error bounded by the last confirmed sample.
    Hold,
    /// Extrapolate along the last two samples for at most this long past the newest, then
    /// hold the extrapolated state (a bounded horizon keeps the error bounded).
    Extrapolate(Nanos),
}

impl fmt::Display for MissPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hold => f.write_str("hold"),
            Self::Extrapolate(h) => write!(f, "extrapolate:{}", format_duration(*h)),
        }
    }
}

/// The sample store every snapshot policy shares (C4, C5, C8, C11).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferConfig {
    /// Never interpolate across a pair of samples further apart than this (C8).
    pub max_gap: Nanos,
    /// Samples held at most; the oldest by send time is evicted when full (C11).
    pub capacity: usize,
    /// Drop on arrival a sample not newer than the oldest held (seed 003's variant of C11).
    pub stale_drop: bool,
    /// Reject a sample whose tick was already received (C5).
    pub dedup: bool,
    /// What to show on a miss (C13).
    pub miss: MissPolicy,
}

impl Default for BufferConfig {
    /// Seed 000's 120 ms max gap; capacity 32 as in seed 003 and Mirror (seed 000's 8 holds
    /// only 400 ms at 20 Hz, too few for longer delays).
    fn default() -> Self {
        Self {
            max_gap: Nanos::from_millis(120),
            capacity: 32,
            stale_drop: false,
            dedup: true,
            miss: MissPolicy::Hold,
        }
    }
}

/// How an adaptive policy moves from its current delay to a new target (C18).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Apply {
    /// At once. A shorter delay skips the timeline forward; a longer one freezes the display
    /// until the timeline has fallen back (it never steps backwards).
    Jump,
    /// By time-scaling: playback runs at most `max_rate` faster or slower than real time, so
    /// the timeline stays continuous (as NetEq's accelerate / preemptive expand do for voice).
    Stretch {
        /// Largest relative speed change, e.g. 0.05 for ±5 %.
        max_rate: f64,
    },
}

impl fmt::Display for Apply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Jump => f.write_str("jump"),
            Self::Stretch { max_rate } => write!(f, "stretch:max_rate={}", format_share(*max_rate)),
        }
    }
}

/// What the adaptive presets (jitter, quantile) share: the send interval, the clamps on the
/// delay, how changes are applied, and the sample store.
#[derive(Clone, Debug, PartialEq)]
pub struct AdaptiveConfig {
    /// The send interval; `None`: estimated from the stream.
    pub interval: Option<Nanos>,
    /// Lower clamp; `None`: one send interval.
    pub min: Option<Nanos>,
    /// Upper clamp.
    pub max: Nanos,
    /// How delay changes are applied.
    pub apply: Apply,
    /// The sample store.
    pub buffer: BufferConfig,
}

impl AdaptiveConfig {
    /// `min` must not be above `max`.
    pub(crate) fn validate(&self) -> Result<(), super::KeyError> {
        super::keys::check_clamp(self.min, self.max)
    }

    /// Clamps `d` to [min, max], `min` defaulting to one send interval.
    pub(crate) fn clamp(&self, d: Nanos, interval: Nanos) -> Nanos {
        let lo = self.min.unwrap_or(interval).min(self.max);
        d.max(lo).min(self.max)
    }
}
