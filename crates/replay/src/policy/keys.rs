//! Key tables: one entry per key of a preset, used to parse, to print and to list the keys
//! allowed. The value parsers here give every preset the same wording and ranges.

use jitterlab_capture::Nanos;
use jitterlab_capture::spec::{self, SpecError, format_duration};

use super::shared::{Apply, MAX_CAPACITY, MissPolicy};
use crate::Error;

/// One key of preset `C`.
pub struct Key<C> {
    /// The key as written in policy strings.
    pub name: &'static str,
    /// Its canonical value; `None` for a key that is only read (printed through another key).
    pub get: Option<fn(&C) -> String>,
    /// Sets it from text; the error says what is wrong and what is allowed.
    pub set: fn(&mut C, &str) -> Result<(), String>,
}

/// A key that disagrees with another once all are set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyError {
    /// The offending key.
    pub key: &'static str,
    /// What is wrong.
    pub reason: String,
}

impl KeyError {
    pub(crate) fn into_error(self, policy: &str) -> Error {
        Error::Policy {
            policy: policy.to_owned(),
            key: self.key.to_owned(),
            reason: self.reason,
        }
    }
}

fn reason(e: SpecError) -> String {
    e.to_string()
}

/// A duration of at least `min`.
///
/// # Errors
/// Malformed or below `min`.
pub fn duration_key(value: &str, min: Nanos) -> Result<Nanos, String> {
    spec::duration_at_least(value, min).map_err(reason)
}

/// `auto` or a duration of at least `min`.
pub(crate) fn auto_duration(value: &str, min: Nanos) -> Result<Option<Nanos>, String> {
    if value == "auto" {
        Ok(None)
    } else {
        duration_key(value, min).map(Some)
    }
}

/// Prints an optional duration (`auto` when unset).
pub(crate) fn format_auto(d: Option<Nanos>) -> String {
    d.map_or_else(|| "auto".to_owned(), format_duration)
}

/// A number for which `ok` holds (`range` says which).
pub(crate) fn number(value: &str, ok: impl Fn(f64) -> bool, range: &str) -> Result<f64, String> {
    spec::number(value, ok, range).map_err(reason)
}

/// A boolean.
pub(crate) fn boolean(value: &str) -> Result<bool, String> {
    spec::boolean(value).map_err(reason)
}

/// A sample count in `1..=MAX_CAPACITY`.
pub(crate) fn capacity(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if (1..=MAX_CAPACITY).contains(&n) => Ok(n),
        _ => Err(format!(
            "{value} is out of range (allowed: 1..={MAX_CAPACITY})"
        )),
    }
}

/// `jump`, `stretch` or `stretch:max_rate=R` with R in (0, 1) as a share.
pub(crate) fn apply(value: &str) -> Result<Apply, String> {
    if value == "jump" {
        return Ok(Apply::Jump);
    }
    let bad = || format!("'{value}' (allowed: jump, stretch:max_rate=5%)");
    let rest = value.strip_prefix("stretch").ok_or_else(bad)?;
    let rate = match rest.strip_prefix(":max_rate=") {
        None if rest.is_empty() => 0.05,
        None => return Err(bad()),
        Some(r) => match spec::parse_share(r) {
            Ok(x) if x > 0.0 && x < 1.0 => x,
            _ => {
                return Err(format!(
                    "max_rate {r} is out of range (allowed: above 0% and below 100%)"
                ));
            }
        },
    };
    Ok(Apply::Stretch { max_rate: rate })
}

/// `hold` or `extrapolate:HORIZON`.
pub(crate) fn miss(value: &str) -> Result<MissPolicy, String> {
    match value.split_once(':') {
        None if value == "hold" => Ok(MissPolicy::Hold),
        Some(("extrapolate", h)) => {
            let d = jitterlab_capture::time::parse_duration(h)?;
            if d < Nanos::ZERO {
                return Err(format!("horizon {h} is out of range (allowed: ≥ 0ms)"));
            }
            Ok(MissPolicy::Extrapolate(d))
        }
        _ => Err(format!(
            "'{value}' is not a miss policy (allowed: hold, extrapolate:HORIZON e.g. extrapolate:250ms)"
        )),
    }
}

/// One [`Key`] of preset `C` whose field the accessor reaches, printed by `print` (taking the
/// field by reference) and parsed by `parse` (a function or non-capturing closure from `&str`
/// to `Result<T, String>`):
///
/// ```
/// use jitterlab_capture::Nanos;
/// use jitterlab_replay::policy::{Key, duration_key, print_duration};
/// use jitterlab_replay::policy_key;
///
/// #[derive(Default)]
/// struct Mine {
///     delay: Nanos,
/// }
/// let key: Key<Mine> = policy_key!(Mine, "delay", |c| c.delay, print_duration, |v| {
///     duration_key(v, Nanos::ZERO)
/// });
/// let mut mine = Mine::default();
/// (key.set)(&mut mine, "40ms").unwrap();
/// assert_eq!((key.get.unwrap())(&mine), "40ms");
/// ```
#[macro_export]
macro_rules! policy_key {
    ($c:ty, $name:literal, |$x:ident| $field:expr, $print:expr, $parse:expr) => {
        $crate::policy::Key::<$c> {
            name: $name,
            get: Some(|$x: &$c| ($print)(&$field)),
            set: |$x: &mut $c, v: &str| {
                $field = ($parse)(v)?;
                Ok(())
            },
        }
    };
}
pub(crate) use crate::policy_key as key;

/// Prints a duration field.
pub fn print_duration(d: &Nanos) -> String {
    format_duration(*d)
}

/// Prints a field by its `Display`.
pub fn print<T: ToString>(x: &T) -> String {
    x.to_string()
}

/// The sample store's keys (`max_gap`, `capacity`, `stale`, `dedup`, `miss`), for a preset
/// whose [`super::BufferConfig`] the accessor reaches: `buffer_keys!(C, |c| c.buffer)`.
macro_rules! buffer_keys {
    ($c:ty, |$x:ident| $buf:expr) => {{
        use $crate::policy::keys::{boolean, capacity, key, miss, print, print_duration};
        [
            key!($c, "max_gap", |$x| $buf.max_gap, print_duration, |v| {
                $crate::policy::duration_key(v, jitterlab_capture::Nanos(1))
            }),
            key!($c, "capacity", |$x| $buf.capacity, print, capacity),
            key!($c, "stale", |$x| $buf.stale_drop, print, boolean),
            key!($c, "dedup", |$x| $buf.dedup, print, boolean),
            key!($c, "miss", |$x| $buf.miss, print, miss),
        ]
    }};
}
pub(crate) use buffer_keys;

/// The adaptive presets' shared keys (`interval`, `min`, `max`, `apply`) for a preset whose
/// [`super::AdaptiveConfig`] the accessor reaches: `adaptive_keys!(C, |c| c.adaptive)`.
macro_rules! adaptive_keys {
    ($c:ty, |$x:ident| $ad:expr) => {{
        use jitterlab_capture::Nanos;
        use $crate::policy::keys::{apply, auto_duration, format_auto, key, print, print_duration};
        [
            key!(
                $c,
                "interval",
                |$x| $ad.interval,
                |d: &Option<Nanos>| format_auto(*d),
                |v| { auto_duration(v, Nanos(1)) }
            ),
            key!(
                $c,
                "min",
                |$x| $ad.min,
                |d: &Option<Nanos>| format_auto(*d),
                |v| { auto_duration(v, Nanos::ZERO) }
            ),
            key!($c, "max", |$x| $ad.max, print_duration, |v| {
                $crate::policy::duration_key(v, Nanos::ZERO)
            }),
            key!($c, "apply", |$x| $ad.apply, print, apply),
        ]
    }};
}
pub(crate) use adaptive_keys;

/// The check every adaptive preset makes: `min` not above `max`.
pub(crate) fn check_clamp(min: Option<Nanos>, max: Nanos) -> Result<(), KeyError> {
    match min {
        Some(min) if min > max => Err(KeyError {
            key: "min",
            reason: format!(
                "{} is above max {}",
                format_duration(min),
                format_duration(max)
            ),
        }),
        _ => Ok(()),
    }
}
