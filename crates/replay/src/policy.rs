//! Buffer policies as named configurations, parsed from strings like
//! `fixed:delay=100ms,max_gap=120ms,capacity=8`.
//!
//! A policy string is the interface users' scripts and sweep results rely on: [`Policy`]'s
//! `Display` prints the canonical string (every key, in a fixed order) and parsing it again
//! gives the same policy.

use std::fmt;
use std::str::FromStr;

use jitterlab_capture::Nanos;
use jitterlab_capture::time::parse_duration;

use crate::Error;

/// What to show when the target time has no usable pair of samples (C13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissPolicy {
    /// Hold the last confirmed state: error bounded by the last confirmed sample.
    Hold,
}

/// The fixed-delay snapshot interpolation buffer of seed 000 (C4–C11).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedConfig {
    /// Interpolation delay: target = sender-clock now − delay (C6).
    pub delay: Nanos,
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

impl Default for FixedConfig {
    /// Seed 000's probe: 100 ms delay, 120 ms max gap; capacity 32 as in seed 003 and Mirror
    /// (seed 000's capacity of 8 holds only 400 ms at 20 Hz, too few for longer delays).
    fn default() -> Self {
        Self {
            delay: Nanos::from_millis(100),
            max_gap: Nanos::from_millis(120),
            capacity: 32,
            stale_drop: false,
            dedup: true,
            miss: MissPolicy::Hold,
        }
    }
}

/// The most samples a buffer may be configured to hold.
pub const MAX_CAPACITY: usize = 1 << 20;

/// A buffer policy with all of its parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Policy {
    /// Fixed delay (seed 000).
    Fixed(FixedConfig),
}

impl Policy {
    /// The policy names this build knows.
    pub const NAMES: &'static [&'static str] = &["fixed"];

    /// The policy's name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Fixed(_) => "fixed",
        }
    }

    /// The (initial) interpolation delay.
    pub fn delay(&self) -> Nanos {
        match self {
            Self::Fixed(c) => c.delay,
        }
    }

    /// The parameters as (key, canonical value) pairs, in the order `Display` prints them.
    pub fn params(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::Fixed(c) => vec![
                ("delay", format_duration(c.delay)),
                ("max_gap", format_duration(c.max_gap)),
                ("capacity", c.capacity.to_string()),
                ("stale", c.stale_drop.to_string()),
                ("dedup", c.dedup.to_string()),
                (
                    "miss",
                    match c.miss {
                        MissPolicy::Hold => "hold".to_owned(),
                    },
                ),
            ],
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.name())?;
        for (i, (key, value)) in self.params().iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{key}={value}")?;
        }
        Ok(())
    }
}

/// Formats a duration the way policy strings write it: `100ms`, `12.5ms`, `0ms`.
pub fn format_duration(d: Nanos) -> String {
    let ms = d.as_nanos() as f64 / 1e6;
    let mut s = format!("{ms:.6}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    format!("{s}ms")
}

impl FromStr for Policy {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let name = name.trim();
        let pairs = parse_pairs(name, rest)?;
        match name {
            "fixed" => {
                let mut c = FixedConfig::default();
                for (key, value) in pairs {
                    let bad = |reason: String| Error::Policy {
                        policy: name.to_owned(),
                        key: key.to_owned(),
                        reason,
                    };
                    match key {
                        "delay" => c.delay = duration_at_least(value, Nanos::ZERO).map_err(bad)?,
                        "max_gap" => c.max_gap = duration_at_least(value, Nanos(1)).map_err(bad)?,
                        "capacity" => c.capacity = capacity(value).map_err(bad)?,
                        "stale" => c.stale_drop = boolean(value).map_err(bad)?,
                        "dedup" => c.dedup = boolean(value).map_err(bad)?,
                        "miss" => {
                            c.miss = match value {
                                "hold" => MissPolicy::Hold,
                                other => {
                                    return Err(bad(format!(
                                        "'{other}' is not a miss policy (allowed: hold)"
                                    )));
                                }
                            }
                        }
                        other => {
                            return Err(Error::Policy {
                                policy: name.to_owned(),
                                key: other.to_owned(),
                                reason: "unknown key (allowed: delay, max_gap, capacity, stale, dedup, miss)"
                                    .to_owned(),
                            });
                        }
                    }
                }
                Ok(Self::Fixed(c))
            }
            other => Err(Error::Policy {
                policy: other.to_owned(),
                key: String::new(),
                reason: format!("unknown policy (known: {})", Self::NAMES.join(", ")),
            }),
        }
    }
}

fn parse_pairs<'a>(policy: &str, rest: &'a str) -> Result<Vec<(&'a str, &'a str)>, Error> {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, value) = item.split_once('=').ok_or_else(|| Error::Policy {
            policy: policy.to_owned(),
            key: item.to_owned(),
            reason: "expected key=value".to_owned(),
        })?;
        let key = key.trim();
        if pairs.iter().any(|(k, _)| *k == key) {
            return Err(Error::Policy {
                policy: policy.to_owned(),
                key: key.to_owned(),
                reason: "given twice".to_owned(),
            });
        }
        pairs.push((key, value.trim()));
    }
    Ok(pairs)
}

fn duration_at_least(value: &str, min: Nanos) -> Result<Nanos, String> {
    let d = parse_duration(value)?;
    if d < min {
        return Err(format!(
            "{value} is out of range (allowed: ≥ {})",
            if min == Nanos::ZERO {
                "0ms".to_owned()
            } else {
                format!("{}ns", min.0)
            }
        ));
    }
    Ok(d)
}

fn capacity(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if (1..=MAX_CAPACITY).contains(&n) => Ok(n),
        _ => Err(format!(
            "{value} is out of range (allowed: 1..={MAX_CAPACITY})"
        )),
    }
}

fn boolean(value: &str) -> Result<bool, String> {
    match value {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        other => Err(format!("'{other}' is not a boolean (allowed: true, false)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_canonically() {
        let p: Policy = "fixed:delay=100ms,max_gap=120ms,capacity=8"
            .parse()
            .unwrap();
        let Policy::Fixed(c) = &p;
        assert_eq!(
            (c.delay, c.max_gap, c.capacity),
            (Nanos::from_millis(100), Nanos::from_millis(120), 8)
        );
        let text = p.to_string();
        assert_eq!(
            text,
            "fixed:delay=100ms,max_gap=120ms,capacity=8,stale=false,dedup=true,miss=hold"
        );
        assert_eq!(text.parse::<Policy>().unwrap(), p);
        assert_eq!(
            "fixed".parse::<Policy>().unwrap(),
            Policy::Fixed(FixedConfig::default())
        );
        assert_eq!(format_duration(Nanos::from_micros(12_500)), "12.5ms");
    }

    #[test]
    fn bad_policies_name_key_and_range() {
        let msg = |s: &str| s.parse::<Policy>().unwrap_err().to_string();
        assert!(
            msg("fixed:delay=-5ms").contains("delay") && msg("fixed:delay=-5ms").contains("≥ 0ms")
        );
        assert!(msg("fixed:capacity=0").contains("1..="));
        assert!(msg("fixed:foo=1").contains("unknown key"));
        assert!(msg("fixed:foo=1").contains("foo"));
        assert!(msg("nope:delay=1ms").contains("unknown policy"));
        assert!(msg("fixed:delay").contains("key=value"));
        assert!(msg("fixed:delay=1ms,delay=2ms").contains("twice"));
        assert!(msg("fixed:delay=100").contains("unit"));
        assert!(msg("fixed:max_gap=0ms").contains("max_gap"));
    }
}
