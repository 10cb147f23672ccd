//! `fixed`: the fixed-delay snapshot interpolation buffer of seed 000 (C4–C11).

use std::sync::OnceLock;

use jitterlab_capture::Nanos;

use super::keys::{buffer_keys, key, print_duration};
use super::{BufferConfig, DelayModel, Key, Preset, duration_key};

/// The fixed-delay snapshot interpolation buffer of seed 000 (C4–C11).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedConfig {
    /// Interpolation delay: target = sender-clock now − delay (C6).
    pub delay: Nanos,
    /// The sample store.
    pub buffer: BufferConfig,
}

impl Default for FixedConfig {
    /// Seed 000's probe: 100 ms delay (2 intervals at 20 Hz), 120 ms max gap.
    fn default() -> Self {
        Self {
            delay: Nanos::from_millis(100),
            buffer: BufferConfig::default(),
        }
    }
}

impl Preset for FixedConfig {
    const NAME: &'static str = "fixed";
    const TUNE_AXES: &'static str = "delay = \"0ms..300ms step 10ms\"\nmax_gap = [\"120ms\", \"250ms\"]\n";
    const PLAYOUT_AXES: &'static str = "delay = \"0ms..400ms step 10ms\"\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<FixedConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            let mut keys = vec![key!(Self, "delay", |c| c.delay, print_duration, |v| {
                duration_key(v, Nanos::ZERO)
            })];
            keys.extend(buffer_keys!(Self, |c| c.buffer));
            keys
        })
    }

    fn max_delay(&self) -> Nanos {
        self.delay
    }

    fn buffer(&self) -> Option<&BufferConfig> {
        Some(&self.buffer)
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Fixed(self.delay)
    }
}
