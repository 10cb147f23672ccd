//! `source`: Valve Source engine interpolation (anchors.md §5).

use std::sync::OnceLock;

use jitterlab_capture::Nanos;

use super::keys::{buffer_keys, key, number, print, print_duration};
use super::{BufferConfig, DelayModel, Key, MissPolicy, Preset, duration_key};

/// Valve Source engine interpolation (anchors.md §5): a fixed render delay
/// `lerp = max(cl_interp, cl_interp_ratio / cl_updaterate)`, extrapolating for at most
/// `cl_extrapolate_amount` when data runs out.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceConfig {
    /// `cl_interp`, bounds 0..0.5 s.
    pub cl_interp: Nanos,
    /// `cl_interp_ratio`.
    pub cl_interp_ratio: f64,
    /// `cl_updaterate`, snapshots per second.
    pub cl_updaterate: f64,
    /// The sample store; `miss` is `extrapolate:cl_extrapolate_amount`.
    pub buffer: BufferConfig,
}

impl SourceConfig {
    /// The render delay: `max(cl_interp, cl_interp_ratio / cl_updaterate)`.
    pub fn lerp(&self) -> Nanos {
        self.cl_interp.max(Nanos::from_secs_f64(
            self.cl_interp_ratio / self.cl_updaterate,
        ))
    }
}

impl Default for SourceConfig {
    /// `source-sdk-2013` defaults: cl_interp 0.1 s, cl_interp_ratio 2, cl_updaterate 20,
    /// cl_extrapolate_amount 0.25 s. Source has no gap budget of its own, so `max_gap` is 1 s.
    fn default() -> Self {
        Self {
            cl_interp: Nanos::from_millis(100),
            cl_interp_ratio: 2.0,
            cl_updaterate: 20.0,
            buffer: BufferConfig {
                max_gap: Nanos::from_secs(1),
                miss: MissPolicy::Extrapolate(Nanos::from_millis(250)),
                ..BufferConfig::default()
            },
        }
    }
}

impl Preset for SourceConfig {
    const NAME: &'static str = "source";
    const RATE_KEY: Option<&'static str> = Some("cl_updaterate");
    const TUNE_AXES: &'static str =
        "cl_interp = \"0ms..200ms step 25ms\"\ncl_interp_ratio = [1, 2]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<SourceConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            let mut keys = vec![
                key!(Self, "cl_interp", |c| c.cl_interp, print_duration, |v| {
                    let d = duration_key(v, Nanos::ZERO)?;
                    if d > Nanos::from_millis(500) {
                        return Err(format!(
                            "{v} is out of range (allowed: 0 to 0.5s, Source's bounds)"
                        ));
                    }
                    Ok(d)
                }),
                key!(Self, "cl_interp_ratio", |c| c.cl_interp_ratio, print, |v| {
                    number(v, |x| (0.0..=100.0).contains(&x), "0 to 100")
                }),
                key!(Self, "cl_updaterate", |c| c.cl_updaterate, print, |v| {
                    number(v, |x| x > 0.0 && x <= 10_000.0, ">0 to 10000 per second")
                }),
                // Read only: printed as the sample store's `miss=extrapolate:…`.
                Key {
                    name: "cl_extrapolate_amount",
                    get: None,
                    set: |c, v| {
                        c.buffer.miss = MissPolicy::Extrapolate(duration_key(v, Nanos::ZERO)?);
                        Ok(())
                    },
                },
            ];
            keys.extend(buffer_keys!(Self, |c| c.buffer));
            keys
        })
    }

    fn max_delay(&self) -> Nanos {
        self.lerp()
    }

    fn buffer(&self) -> Option<&BufferConfig> {
        Some(&self.buffer)
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Fixed(self.lerp())
    }
}
