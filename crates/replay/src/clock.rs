//! Mapping the local clock to the sender's clock (C3, C6).
//!
//! `sender time = local time + offset`. The offset is either given (`--clock offset=MS`, as
//! the contract vectors do) or estimated from the traffic. The estimate here is the
//! minimum-transit one: `offset = max(send − arrival)`, which makes the fastest packet of the
//! stream look as if it crossed the network in zero time. Every other packet's transit is then
//! its queueing delay above that floor, which is exactly what a jitter buffer must absorb.

use std::str::FromStr;

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;
use jitterlab_capture::time::parse_duration;

use crate::Error;

/// How local time maps to the sender's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClockMapping {
    /// `sender = local + offset`, no estimation.
    Fixed(Nanos),
    /// Estimated from the traffic (minimum transit).
    #[default]
    Estimated,
}

impl ClockMapping {
    /// The offset to use for `samples` (one stream's received samples).
    pub fn offset(&self, samples: &[Sample]) -> Nanos {
        match *self {
            Self::Fixed(offset) => offset,
            Self::Estimated => estimate_offset(samples),
        }
    }
}

impl FromStr for ClockMapping {
    type Err = Error;

    /// Parses `offset=MS` (a number of milliseconds, or a duration with a unit) or `estimate`.
    fn from_str(text: &str) -> Result<Self, Error> {
        let text = text.trim();
        if text == "estimate" || text == "auto" {
            return Ok(Self::Estimated);
        }
        let value = text.strip_prefix("offset=").ok_or_else(|| {
            Error::Invalid(format!("--clock '{text}': expected offset=MS or estimate"))
        })?;
        let offset = match value.parse::<f64>() {
            Ok(ms) if ms.is_finite() => Nanos::from_millis_f64(ms),
            _ => {
                parse_duration(value).map_err(|e| Error::Invalid(format!("--clock offset: {e}")))?
            }
        };
        Ok(Self::Fixed(offset))
    }
}

/// `max(send − arrival)` over the samples: the offset under which the fastest packet had zero
/// transit. Zero for no samples.
pub fn estimate_offset(samples: &[Sample]) -> Nanos {
    samples
        .iter()
        .map(|s| s.send - s.arrival)
        .max()
        .unwrap_or(Nanos::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_offsets() {
        assert_eq!(
            "offset=0".parse::<ClockMapping>().unwrap(),
            ClockMapping::Fixed(Nanos::ZERO)
        );
        assert_eq!(
            "offset=-12.5".parse::<ClockMapping>().unwrap(),
            ClockMapping::Fixed(Nanos::from_micros(-12_500))
        );
        assert_eq!(
            "offset=2s".parse::<ClockMapping>().unwrap(),
            ClockMapping::Fixed(Nanos::from_secs(2))
        );
        assert_eq!(
            "estimate".parse::<ClockMapping>().unwrap(),
            ClockMapping::Estimated
        );
        assert!("offset=abc".parse::<ClockMapping>().is_err());
        assert!("skew=1".parse::<ClockMapping>().is_err());
    }
}
