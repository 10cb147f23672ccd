//! Nanosecond time values, so units live in the type rather than in field names.

use std::fmt;
use std::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};

use serde::{Deserialize, Serialize};

/// A signed count of nanoseconds: an instant on some clock, or the span between two instants.
///
/// Which clock an instant is on (the sender's, the receiver's) is said by where it is stored:
/// a sample's `send` is on the sender's clock, its `arrival` on the receiver's (contract C1).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub i64);

impl Nanos {
    /// Zero.
    pub const ZERO: Self = Self(0);
    /// The largest representable value.
    pub const MAX: Self = Self(i64::MAX);
    /// The smallest representable value.
    pub const MIN: Self = Self(i64::MIN);

    /// From whole milliseconds.
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms * 1_000_000)
    }

    /// From whole microseconds.
    pub const fn from_micros(us: i64) -> Self {
        Self(us * 1_000)
    }

    /// From whole seconds.
    pub const fn from_secs(s: i64) -> Self {
        Self(s * 1_000_000_000)
    }

    /// From fractional milliseconds, rounded to the nearest nanosecond (saturating).
    pub fn from_millis_f64(ms: f64) -> Self {
        Self((ms * 1e6).round() as i64)
    }

    /// From fractional seconds, rounded to the nearest nanosecond (saturating).
    pub fn from_secs_f64(s: f64) -> Self {
        Self((s * 1e9).round() as i64)
    }

    /// The raw count of nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Fractional milliseconds.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Fractional seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// The absolute value.
    pub const fn abs(self) -> Self {
        Self(self.0.saturating_abs())
    }

    /// Addition that saturates instead of overflowing.
    pub const fn saturating_add(self, rhs: Self) -> Self {
        Self(self.0.saturating_add(rhs.0))
    }

    /// Subtraction that saturates instead of overflowing.
    pub const fn saturating_sub(self, rhs: Self) -> Self {
        Self(self.0.saturating_sub(rhs.0))
    }
}

impl Add for Nanos {
    type Output = Self;
    fn add(self, rhs: Self) -> Self {
        Self(self.0 + rhs.0)
    }
}

impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Self) {
        self.0 += rhs.0;
    }
}

impl Sub for Nanos {
    type Output = Self;
    fn sub(self, rhs: Self) -> Self {
        Self(self.0 - rhs.0)
    }
}

impl SubAssign for Nanos {
    fn sub_assign(&mut self, rhs: Self) {
        self.0 -= rhs.0;
    }
}

impl Mul<i64> for Nanos {
    type Output = Self;
    fn mul(self, rhs: i64) -> Self {
        Self(self.0 * rhs)
    }
}

impl Neg for Nanos {
    type Output = Self;
    fn neg(self) -> Self {
        Self(-self.0)
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.as_millis_f64())
    }
}

/// Parses a duration such as `100ms`, `0.1s`, `1500us`, `250000ns` or `2m`.
///
/// A bare number is rejected: the unit is part of the value. Negative values parse (the caller
/// decides whether they are allowed), so that a message can say "must be at least 0" instead of
/// "invalid number".
pub fn parse_duration(text: &str) -> Result<Nanos, String> {
    let s = text.trim();
    let split = s
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(|| format!("'{text}' has no unit (use ns, us, ms, s or m)"))?;
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a number followed by a unit"))?;
    if !value.is_finite() {
        return Err(format!("'{text}' is not a finite duration"));
    }
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        _ => {
            return Err(format!(
                "'{text}' has unknown unit '{unit}' (use ns, us, ms, s or m)"
            ));
        }
    };
    let ns = value * scale;
    if ns.abs() > 9.0e18 {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(Nanos(ns.round() as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("100ms"), Ok(Nanos::from_millis(100)));
        assert_eq!(parse_duration("0.12s"), Ok(Nanos::from_millis(120)));
        assert_eq!(parse_duration("1500us"), Ok(Nanos::from_micros(1500)));
        assert_eq!(parse_duration("-5ms"), Ok(Nanos::from_millis(-5)));
        assert_eq!(parse_duration("2m"), Ok(Nanos::from_secs(120)));
        assert!(parse_duration("100").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("1e300s").is_err());
    }
}
