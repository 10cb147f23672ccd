//! The small spec language every configuration string shares: `name:key=value,key=value`
//! lists, durations (`100ms`), shares (`2%` or `0.02`), numbers and booleans, each printed in a
//! form that parses back to exactly the same value.
//!
//! Network models (`delay=40ms,loss=2%`), buffer policies (`fixed:delay=100ms`), sweep grids and
//! the CLI's ratios (`--max-hold-ratio 1%`) all read and print their values through these
//! helpers, so a printed configuration always reads back as itself (a share of 7e-115 once
//! printed as `0%`, out of range; found by the `policy_parse` fuzz target).

use std::fmt;

use crate::time::Nanos;
pub use crate::time::parse_duration;

/// Why one value of a spec string was refused; the caller adds which spec and key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// An item without `=`.
    #[error("'{0}': expected key=value")]
    NotAPair(String),
    /// The same key twice in one list.
    #[error("key {0} given twice")]
    Repeated(String),
    /// A value that does not parse as its kind.
    #[error("'{value}' is not {expected}")]
    Malformed {
        /// The text given.
        value: String,
        /// What was expected, e.g. "a number" or "a share (e.g. 2% or 0.02)".
        expected: String,
    },
    /// A value outside its range.
    #[error("{value} is out of range (allowed: {allowed})")]
    OutOfRange {
        /// The text given.
        value: String,
        /// The range allowed, in words.
        allowed: String,
    },
    /// A duration that did not parse (the reason names the problem: no unit, unknown unit…).
    #[error("{0}")]
    Duration(String),
}

/// Splits `key=value,key=value` into trimmed pairs in the order given; empty items are skipped.
///
/// # Errors
/// An item without `=`, or a key given twice.
pub fn parse_pairs(text: &str) -> Result<Vec<(&str, &str)>, SpecError> {
    let pairs = parse_pairs_allowing_repeats(text)?;
    for (i, (key, _)) in pairs.iter().enumerate() {
        if pairs[..i].iter().any(|(k, _)| k == key) {
            return Err(SpecError::Repeated((*key).to_owned()));
        }
    }
    Ok(pairs)
}

/// Splits `key=value,key=value` like [`parse_pairs`], but keeps a key given twice (each
/// occurrence in order), for lists where a later value overrides an earlier one (network
/// models: `$BASE,loss=5%`).
///
/// # Errors
/// An item without `=`.
pub fn parse_pairs_allowing_repeats(text: &str) -> Result<Vec<(&str, &str)>, SpecError> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| SpecError::NotAPair(item.to_owned()))?;
            Ok((key.trim(), value.trim()))
        })
        .collect()
}

/// Writes pairs as `key=value,key=value`.
pub fn write_pairs<K: fmt::Display, V: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    pairs: impl IntoIterator<Item = (K, V)>,
) -> fmt::Result {
    for (i, (key, value)) in pairs.into_iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{key}={value}")?;
    }
    Ok(())
}

/// A duration at least `min`.
///
/// # Errors
/// A malformed duration, or one below `min`.
pub fn duration_at_least(value: &str, min: Nanos) -> Result<Nanos, SpecError> {
    let d = parse_duration(value).map_err(SpecError::Duration)?;
    if d < min {
        return Err(SpecError::OutOfRange {
            value: value.to_owned(),
            allowed: format!("≥ {}", format_min(min)),
        });
    }
    Ok(d)
}

/// How a lower bound reads in a range: `0ms`, or whole nanoseconds for tiny bounds.
fn format_min(min: Nanos) -> String {
    if min == Nanos::ZERO || min.as_nanos() % 1_000_000 == 0 {
        format_duration(min)
    } else {
        format!("{}ns", min.as_nanos())
    }
}

/// Formats a duration the way spec strings write it: `100ms`, `12.5ms`, `0ms` (six decimals
/// of a millisecond at most: whole nanoseconds).
pub fn format_duration(d: Nanos) -> String {
    let ms = d.as_nanos() as f64 / 1e6;
    format!("{}ms", trim_number(format!("{ms:.6}")))
}

/// A number for which `ok` holds; `range` says which in words.
///
/// # Errors
/// Not a finite number, or one outside the range.
pub fn number(value: &str, ok: impl Fn(f64) -> bool, range: &str) -> Result<f64, SpecError> {
    match value.parse::<f64>() {
        Ok(x) if x.is_finite() && ok(x) => Ok(x),
        Ok(_) => Err(SpecError::OutOfRange {
            value: value.to_owned(),
            allowed: range.to_owned(),
        }),
        Err(_) => Err(SpecError::Malformed {
            value: value.to_owned(),
            expected: format!("a number (allowed: {range})"),
        }),
    }
}

/// A boolean: `true`/`on`/`yes`/`1` or `false`/`off`/`no`/`0`.
///
/// # Errors
/// Anything else.
pub fn boolean(value: &str) -> Result<bool, SpecError> {
    match value {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        other => Err(SpecError::Malformed {
            value: other.to_owned(),
            expected: "a boolean (allowed: true, false)".to_owned(),
        }),
    }
}

/// A share written as a percentage (`2%`, `2.5 %`) or a fraction (`0.02`), not checked for
/// range.
///
/// # Errors
/// Neither form, or not finite.
pub fn parse_share(value: &str) -> Result<f64, SpecError> {
    let text = value.trim();
    let x = match text.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => text.parse::<f64>(),
    };
    match x {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(SpecError::Malformed {
            value: value.to_owned(),
            expected: "a share (e.g. 2% or 0.02)".to_owned(),
        }),
    }
}

/// A share in `[0, max_exclusive)`.
///
/// # Errors
/// Malformed, or out of range.
pub fn share_below(value: &str, max_exclusive: f64) -> Result<f64, SpecError> {
    let x = parse_share(value)?;
    if !(0.0..max_exclusive).contains(&x) {
        return Err(SpecError::OutOfRange {
            value: value.to_owned(),
            allowed: format!("0% to below {}%", max_exclusive * 100.0),
        });
    }
    Ok(x)
}

/// A share as a percentage (`5%`, `2.5%`) when that reads back as exactly the same value, else
/// as the plain fraction in Rust's shortest round-trip form, so that a printed share always
/// parses back to itself.
pub fn format_share(x: f64) -> String {
    let percent = trim_number(format!("{:.6}", x * 100.0));
    if percent.parse::<f64>().is_ok_and(|p| p / 100.0 == x) {
        format!("{percent}%")
    } else {
        x.to_string()
    }
}

/// Drops trailing zeros and a trailing decimal point: `12.500000` → `12.5`, `3.000` → `3`.
fn trim_number(mut s: String) -> String {
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_keep_order_and_refuse_repeats() {
        assert_eq!(
            parse_pairs(" a=1, b = 2ms ,,c=x").unwrap(),
            [("a", "1"), ("b", "2ms"), ("c", "x")]
        );
        assert_eq!(parse_pairs("a=1,a=2"), Err(SpecError::Repeated("a".into())));
        assert_eq!(parse_pairs("a"), Err(SpecError::NotAPair("a".into())));
    }

    #[test]
    fn shares_and_durations_round_trip() {
        for x in [0.05, 0.025, 0.0, 0.1234567, 7e-115, 1.0 / 3.0] {
            assert_eq!(parse_share(&format_share(x)).unwrap(), x, "{x}");
        }
        assert_eq!(format_share(0.05), "5%");
        assert_eq!(parse_share("2 %").unwrap(), 0.02);
        assert!(parse_share("2x").is_err());
        assert!(share_below("100%", 1.0).is_err());
        for ns in [0, 1, 12_500_000, 100_000_000, -3_000_000, 123_456_789] {
            let d = Nanos(ns);
            assert_eq!(parse_duration(&format_duration(d)).unwrap(), d, "{ns}");
        }
        assert_eq!(format_duration(Nanos::from_micros(12_500)), "12.5ms");
        assert_eq!(format_duration(Nanos::from_secs(10)), "10000ms");
        assert!(
            duration_at_least("-5ms", Nanos::ZERO)
                .unwrap_err()
                .to_string()
                .contains("≥ 0ms")
        );
        assert!(
            duration_at_least("0ms", Nanos(1))
                .unwrap_err()
                .to_string()
                .contains("≥ 1ns")
        );
    }
}
