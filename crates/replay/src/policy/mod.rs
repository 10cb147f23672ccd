//! Buffer policies as named configurations, parsed from strings like
//! `fixed:delay=100ms,max_gap=120ms,capacity=8` or `jitter:k=3,apply=stretch:max_rate=5%`.
//!
//! A policy string is the interface users' scripts and sweep results rely on: [`Policy`]'s
//! `Display` prints the canonical string (every key, in a fixed order) and parsing it again
//! gives the same policy.
//!
//! Each preset is one file of this module implementing [`Preset`]: its name, one key table
//! (used for parsing, printing and the allowed-keys error), its defaults, its largest delay, and
//! what it runs on (jitterlab's snapshot buffer with a delay model, or an engine of its own) for
//! snapshot replay and for discrete playout. Adding a preset is one new file plus one line in
//! the `presets!` list below. A preset outside this crate (a user's own buffer) implements the
//! same trait and is wrapped with [`Policy::new`], or added to a [`Registry`] to be parsed and
//! swept from grids.
//!
//! This module is the only place that looks at which preset a policy is.

use std::any::Any;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use jitterlab_capture::Nanos;

use crate::Error;
use crate::engine::{Controller, Engine, SnapshotEngine};
use crate::playout::{PlayoutRun, PlayoutStream};

mod keys;
mod shared;
mod vault;

pub use keys::{Key, KeyError, duration_key, print, print_duration};
pub use shared::{AdaptiveConfig, Apply, BufferConfig, MAX_CAPACITY, MissPolicy};

/// Declares the built-in presets: one `module: Type` line each (the module is this folder's
/// file of that name).
macro_rules! presets {
    ($($module:ident: $ty:ident),+ $(,)?) => {
        $(mod $module; pub use $module::$ty;)+

        /// The built-in presets, in the order `jitterlab` lists them.
        fn builtin_entries() -> Vec<Entry> {
            vec![$(Entry::of::<$ty>()),+]
        }

        impl Policy {
            /// The policy names this build knows.
            pub const NAMES: &'static [&'static str] = &[$(<$ty as Preset>::NAME),+];
        }
    };
}

presets! {
    fixed: FixedConfig,
    jitter: JitterConfig,
    quantile: QuantileConfig,
    source: SourceConfig,
    mirror: MirrorConfig,
    neteq: NetEqConfig,
    ngo: NgoConfig,
    speex: SpeexConfig,
    pjsip: PjsipConfig,
    baresip: BaresipConfig,
    asterisk: AsteriskConfig,
    asterisk_fixed: AsteriskFixedConfig,
    wireshark: WiresharkConfig,
    webrtc_video: WebRtcVideoConfig,
    gstreamer: GStreamerConfig,
    n4e: N4eConfig,
    fishnet: FishNetConfig,
    lightyear: LightyearConfig,
    unreal_np: UnrealNpConfig,
    geckos: GeckosConfig,
}

// Not in `presets!`: an external policy needs its command, so its name alone does not parse
// and it is in no default grid; `Registry::parse` knows it by its `exec:` prefix.
mod exec;
pub use exec::{ExecConfig, is_exec};

pub use baresip::BaresipStats;
pub use pjsip::PjsipStats;
pub use speex::SpeexStats;

pub use asterisk::{AsteriskStats, JbConf, JbCounters, Jitterbuf};
pub use asterisk_fixed::{AsteriskFixedStats, FixedCounters, FixedJb};
pub use wireshark::{Reference, Timing, WiresharkStats};

/// How a preset chooses its playout delay, when it runs on jitterlab's snapshot buffer or its
/// discrete playout.
pub enum DelayModel {
    /// One delay for the whole replay (no controller runs).
    Fixed(Nanos),
    /// A controller proposes a target from what has arrived; `apply` says how the playout
    /// delay moves toward it (C18).
    Adaptive {
        /// Chooses the wanted delay.
        controller: Box<dyn Controller>,
        /// At once, or by time-scaling.
        apply: Apply,
    },
    /// The preset keeps its own timeline (its [`Preset::engine`] is its own).
    Own,
}

/// What a preset runs on in snapshot replay.
pub enum Built {
    /// jitterlab's snapshot buffer, driven by a delay model.
    Snapshot(Box<SnapshotEngine>),
    /// An engine of the preset's own (Mirror's timeline, NGO's interpolator, a user's buffer).
    Own(Box<dyn Engine>),
}

/// One buffer policy: a name, a key table and what it runs on.
///
/// Implement it for a plain configuration struct (with `Default` as the preset's defaults);
/// [`Policy::new`] wraps it, [`Registry::add`] makes it parseable by name.
pub trait Preset: Clone + fmt::Debug + PartialEq + Default + Send + Sync + 'static {
    /// The name before the colon in a policy string.
    const NAME: &'static str;

    /// The key that the default tuning grid pins to the traffic's packet rate (a property of
    /// the sender, not something to tune), if the preset has one.
    const RATE_KEY: Option<&'static str> = None;

    /// The default tuning grid's axes for this preset, as the body of a TOML table (see
    /// `docs/sweep.md`); empty: the preset is not in the default grid.
    const TUNE_AXES: &'static str = "";

    /// The default playout tuning grid's axes (`tune --playout`, and audio and video streams),
    /// as the body of a TOML table; empty: the preset is not in that grid.
    const PLAYOUT_AXES: &'static str = "";

    /// The media the preset's buffer is made for, in the default playout grid: `None` for any
    /// (the generic buffers), audio or video for a media stack's buffer; `tune` sweeps only the
    /// presets made for what the traces carry.
    const MEDIA: Option<jitterlab_capture::decode::MediaKind> = None;

    /// The preset models a media buffer that only plays discrete frames ([`Preset::playout`]):
    /// snapshot replay refuses it with [`Error::PlayoutOnly`], and its [`Preset::engine`] is
    /// never asked for.
    const PLAYOUT_ONLY: bool = false;

    /// Every key, in the order the canonical string prints them.
    fn keys() -> &'static [Key<Self>];

    /// Checks the keys against each other once all are set (e.g. `min` above `max`).
    ///
    /// # Errors
    /// The offending key and why.
    fn validate(&self) -> Result<(), KeyError> {
        Ok(())
    }

    /// The largest delay the policy can choose: how long frames go on after the last arrival.
    fn max_delay(&self) -> Nanos;

    /// The sample store's configuration, when it runs on jitterlab's snapshot buffer.
    fn buffer(&self) -> Option<&BufferConfig> {
        None
    }

    /// How it chooses its delay.
    fn delay_model(&self) -> DelayModel;

    /// The engine it runs on in snapshot replay: by default jitterlab's snapshot buffer with
    /// [`Preset::buffer`] and [`Preset::delay_model`]. Presets with [`DelayModel::Own`] must
    /// override it.
    fn engine(&self) -> Built {
        let buffer = self.buffer().cloned().unwrap_or_default();
        Built::Snapshot(Box::new(SnapshotEngine::new(buffer, self.delay_model())))
    }

    /// Discrete playout (C21, C22) of one prepared stream (its units, slots and the offset
    /// mapping local to sender time); `None` when the preset only interpolates snapshots. By
    /// default the delay model plays at send time + delay (fixed) or on a 10 ms tick
    /// (adaptive, as NetEq's).
    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        match self.delay_model() {
            DelayModel::Fixed(delay) => Some(PlayoutRun::fixed(
                crate::playout::playout_slots(stream.slots(), delay, stream.offset),
                delay,
            )),
            DelayModel::Adaptive { controller, apply } => Some(crate::playout::playout_controlled(
                stream.units(),
                controller,
                apply,
                stream.offset,
                Nanos::from_millis(10),
            )),
            DelayModel::Own => None,
        }
    }
}

/// The object-safe face of a [`Preset`], behind [`Policy`].
trait Configured: fmt::Debug + Send + Sync {
    fn name(&self) -> &'static str;
    fn params(&self) -> Vec<(&'static str, String)>;
    fn max_delay(&self) -> Nanos;
    fn buffer(&self) -> Option<&BufferConfig>;
    fn delay_model(&self) -> DelayModel;
    fn engine(&self) -> Built;
    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun>;
    fn playout_only(&self) -> bool;
    fn as_any(&self) -> &dyn Any;
    fn same(&self, other: &dyn Configured) -> bool;
}

impl<P: Preset> Configured for P {
    fn name(&self) -> &'static str {
        P::NAME
    }

    fn params(&self) -> Vec<(&'static str, String)> {
        P::keys()
            .iter()
            .filter_map(|k| Some((k.name, (k.get?)(self))))
            .collect()
    }

    fn max_delay(&self) -> Nanos {
        Preset::max_delay(self)
    }

    fn buffer(&self) -> Option<&BufferConfig> {
        Preset::buffer(self)
    }

    fn delay_model(&self) -> DelayModel {
        Preset::delay_model(self)
    }

    fn engine(&self) -> Built {
        Preset::engine(self)
    }

    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        Preset::playout(self, stream)
    }

    fn playout_only(&self) -> bool {
        P::PLAYOUT_ONLY
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn same(&self, other: &dyn Configured) -> bool {
        other.as_any().downcast_ref::<P>() == Some(self)
    }
}

/// A buffer policy with all of its parameters: one [`Preset`]'s configuration.
#[derive(Clone)]
pub struct Policy(Arc<dyn Configured>);

impl Policy {
    /// Wraps a preset's configuration.
    ///
    /// # Errors
    /// The configuration's keys disagree ([`Preset::validate`]).
    pub fn new<P: Preset>(config: P) -> Result<Self, Error> {
        config.validate().map_err(|e| e.into_error(P::NAME))?;
        Ok(Self(Arc::new(config)))
    }

    /// The policy's name.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// The configuration, if the policy is preset `P`.
    pub fn config<P: Preset>(&self) -> Option<&P> {
        self.0.as_any().downcast_ref()
    }

    /// The sample store's configuration (`None` for presets with an engine of their own).
    pub fn buffer(&self) -> Option<&BufferConfig> {
        self.0.buffer()
    }

    /// The largest delay the policy can choose.
    pub fn max_delay(&self) -> Nanos {
        self.0.max_delay()
    }

    /// The parameters as (key, canonical value) pairs, in the order `Display` prints them.
    pub fn params(&self) -> Vec<(&'static str, String)> {
        self.0.params()
    }

    /// How the policy chooses its delay.
    pub fn delay_model(&self) -> DelayModel {
        self.0.delay_model()
    }

    /// A fresh engine for one snapshot replay.
    pub fn engine(&self) -> Built {
        self.0.engine()
    }

    /// Discrete playout of one prepared stream; `None` when the policy only interpolates
    /// snapshots.
    pub fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        self.0.playout(stream)
    }

    /// Whether the policy can play discrete frames ([`Policy::playout`]).
    pub fn plays_frames(&self) -> bool {
        self.0
            .playout(&PlayoutStream::plain(&[], Nanos::ZERO))
            .is_some()
    }

    /// Whether the policy only plays discrete frames (a media buffer: no snapshot replay).
    pub fn playout_only(&self) -> bool {
        self.0.playout_only()
    }

    /// Whether replays run on jitterlab's snapshot buffer (and so can share a batched pass).
    pub fn on_snapshot_buffer(&self) -> bool {
        !matches!(self.0.delay_model(), DelayModel::Own)
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for Policy {
    fn eq(&self, other: &Self) -> bool {
        self.0.same(&*other.0)
    }
}

impl<P: Preset> From<P> for Policy {
    /// Wraps a configuration without [`Preset::validate`] (a default, or one built in code).
    fn from(config: P) -> Self {
        Self(Arc::new(config))
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // An external policy's command is not a key: `exec:CMD` (see `exec.rs`).
        if let Some(e) = self.config::<ExecConfig>() {
            return f.write_str(&e.spec());
        }
        write!(f, "{}:", self.name())?;
        jitterlab_capture::spec::write_pairs(f, self.params())
    }
}

impl FromStr for Policy {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        Registry::builtin().parse(text)
    }
}

/// Parses a preset's key=value pairs.
type ParseFn = fn(&[(&str, &str)]) -> Result<Policy, Error>;

/// One preset as a registry knows it.
#[derive(Clone)]
struct Entry {
    name: &'static str,
    rate_key: Option<&'static str>,
    tune_axes: &'static str,
    playout_axes: &'static str,
    playout_only: bool,
    media: Option<jitterlab_capture::decode::MediaKind>,
    parse: ParseFn,
}

impl Entry {
    fn of<P: Preset>() -> Self {
        Self {
            name: P::NAME,
            rate_key: P::RATE_KEY,
            tune_axes: P::TUNE_AXES,
            playout_axes: P::PLAYOUT_AXES,
            playout_only: P::PLAYOUT_ONLY,
            media: P::MEDIA,
            parse: parse_preset::<P>,
        }
    }
}

/// Applies `pairs` over `P`'s defaults through its key table.
fn parse_preset<P: Preset>(pairs: &[(&str, &str)]) -> Result<Policy, Error> {
    let mut config = P::default();
    for &(key, value) in pairs {
        let Some(k) = P::keys().iter().find(|k| k.name == key) else {
            let allowed: Vec<&str> = P::keys().iter().map(|k| k.name).collect();
            return Err(Error::Policy {
                policy: P::NAME.to_owned(),
                key: key.to_owned(),
                reason: format!("unknown key (allowed: {})", allowed.join(", ")),
            });
        };
        (k.set)(&mut config, value).map_err(|e| Error::Policy {
            policy: P::NAME.to_owned(),
            key: key.to_owned(),
            reason: e.to_string(),
        })?;
    }
    Policy::new(config)
}

/// The presets that policy strings and grids may name: the built-in ones, plus any a user adds.
#[derive(Clone)]
pub struct Registry {
    entries: Vec<Entry>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| e.name))
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::builtin().clone()
    }
}

impl Registry {
    /// The built-in presets.
    pub fn builtin() -> &'static Self {
        static BUILTIN: OnceLock<Registry> = OnceLock::new();
        BUILTIN.get_or_init(|| Self {
            entries: builtin_entries(),
        })
    }

    /// Adds (or replaces) preset `P`.
    pub fn add<P: Preset>(&mut self) -> &mut Self {
        self.entries.retain(|e| e.name != P::NAME);
        self.entries.push(Entry::of::<P>());
        self
    }

    /// The names known, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.name).collect()
    }

    /// Each preset in the default tuning grid with the key pinned to the packet rate and its
    /// axes (a TOML table body), in order.
    pub fn tune_axes(&self) -> Vec<(&'static str, Option<&'static str>, &'static str)> {
        self.entries
            .iter()
            .filter(|e| !e.tune_axes.is_empty() && !e.playout_only)
            .map(|e| (e.name, e.rate_key, e.tune_axes))
            .collect()
    }

    /// Each preset in the default playout tuning grid for `media` with its axes, in order:
    /// the generic buffers, and those made for `media` (every one when `media` is `None`).
    pub fn playout_axes(
        &self,
        media: Option<jitterlab_capture::decode::MediaKind>,
    ) -> Vec<(&'static str, Option<&'static str>, &'static str)> {
        self.entries
            .iter()
            .filter(|e| !e.playout_axes.is_empty())
            .filter(|e| media.is_none() || e.media.is_none() || e.media == media)
            .map(|e| (e.name, e.rate_key, e.playout_axes))
            .collect()
    }

    /// Parses `name:key=value,…`.
    ///
    /// # Errors
    /// An unknown policy or key, a malformed value or one out of range, a key given twice.
    pub fn parse(&self, text: &str) -> Result<Policy, Error> {
        if is_exec(text) {
            return exec::parse(&text.trim_start()["exec".len()..]);
        }
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let name = name.trim();
        let pairs = jitterlab_capture::spec::parse_pairs(rest).map_err(|e| {
            let (key, reason) = match e {
                jitterlab_capture::spec::SpecError::NotAPair(item) => {
                    (item, "expected key=value".to_owned())
                }
                jitterlab_capture::spec::SpecError::Repeated(key) => (key, "given twice".into()),
                other => (String::new(), other.to_string()),
            };
            Error::Policy {
                policy: name.to_owned(),
                key,
                reason,
            }
        })?;
        let Some(entry) = self.entries.iter().find(|e| e.name == name) else {
            return Err(Error::Policy {
                policy: name.to_owned(),
                key: String::new(),
                reason: format!(
                    "unknown policy (known: {}, exec:CMD)",
                    self.names().join(", ")
                ),
            });
        };
        (entry.parse)(&pairs)
    }
}

#[cfg(test)]
mod tests;
