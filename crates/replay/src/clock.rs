//! Mapping the local clock to the sender's clock (C3, C6, C20).
//!
//! `sender time = local time + offset`. The offset is given (`--clock offset=MS`, as the
//! contract vectors do), estimated online from the traffic as a player would (`estimate`, the
//! default), or taken in hindsight from the whole stream (`hindsight`).
//!
//! Both estimates are minimum-transit ones: they make the fastest packet look as if it crossed
//! the network in zero time, so every other packet's transit is its queueing delay above that
//! floor, which is what a jitter buffer must absorb. The online estimate also follows clock
//! drift: per one-second window it keeps the upper envelope of `send − arrival` (delayed
//! packets, spikes and the burst after a receiver pause only ever lower it), fits the drift as
//! a Theil–Sen slope over the last minute of windows (the median of slopes between windows
//! half a minute apart: robust to windows a spike spoiled, and cheap), takes
//! the envelope's intercept for that slope, and slews the offset in use toward it by at most
//! 0.5 % of elapsed time, so the displayed timeline never jumps (C3).

use std::str::FromStr;

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{Sample, SampleSink, StreamInfo};
use jitterlab_capture::time::parse_duration;

use crate::Error;

/// How local time maps to the sender's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClockMapping {
    /// `sender = local + offset`, no estimation.
    Fixed(Nanos),
    /// Estimated online from the traffic: minimum transit with a drift fit, slewed.
    #[default]
    Estimated,
    /// The minimum transit over the whole stream, known in hindsight: a constant offset.
    Hindsight,
}

impl ClockMapping {
    /// A constant offset for `samples` (one stream's received samples): the given one, or the
    /// hindsight minimum transit for both `Hindsight` and `Estimated`. Snapshot replays use the
    /// online estimator for `Estimated` instead; fixed-delay playout uses this constant.
    pub fn offset(&self, samples: &[Sample]) -> Nanos {
        match *self {
            Self::Fixed(offset) => offset,
            Self::Estimated | Self::Hindsight => estimate_offset(samples),
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
        if text == "hindsight" {
            return Ok(Self::Hindsight);
        }
        let bad = |reason: String| Error::ClockMapping {
            text: text.to_owned(),
            reason,
        };
        let value = text
            .strip_prefix("offset=")
            .ok_or_else(|| bad("expected offset=MS, estimate or hindsight".to_owned()))?;
        let offset = match value.parse::<f64>() {
            Ok(ms) if ms.is_finite() => Nanos::from_millis_f64(ms),
            _ => parse_duration(value).map_err(bad)?,
        };
        Ok(Self::Fixed(offset))
    }
}

impl std::fmt::Display for ClockMapping {
    /// The text [`ClockMapping::from_str`] reads back: `estimate`, `hindsight` or `offset=MS`
    /// (milliseconds, as a number).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Estimated => f.write_str("estimate"),
            Self::Hindsight => f.write_str("hindsight"),
            Self::Fixed(offset) => write!(f, "offset={}", offset.as_millis_f64()),
        }
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

/// The first pass of a replay in passes under the `hindsight` mapping: per stream (numbered as
/// the reader numbers them, [`Sample::stream`]), [`estimate_offset`] over its received
/// samples, found as they are read. [`crate::StreamingReplay::with_hindsight`] replays the
/// second pass with each stream's offset, as the in-memory replay uses it.
#[derive(Clone, Debug, Default)]
pub struct HindsightOffsets {
    /// By stream: `max(send − arrival)` so far (`None`: no received sample yet).
    max: Vec<Option<Nanos>>,
}

impl HindsightOffsets {
    /// No stream read yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stream `stream`'s offset: [`estimate_offset`] of its received samples (zero for none,
    /// as there), or `None` for a stream this pass never saw.
    pub fn offset(&self, stream: u32) -> Option<Nanos> {
        self.max
            .get(stream as usize)
            .map(|m| m.unwrap_or(Nanos::ZERO))
    }

    /// How many streams (by number) the pass saw, received samples or not.
    pub fn streams(&self) -> usize {
        self.max.len()
    }

    /// Takes in one received sample.
    pub fn push(&mut self, sample: &Sample) {
        let id = sample.stream as usize;
        if self.max.len() <= id {
            self.max.resize(id + 1, None);
        }
        let transit = sample.send - sample.arrival;
        let slot = &mut self.max[id];
        *slot = Some(slot.map_or(transit, |m| m.max(transit)));
    }
}

impl SampleSink for HindsightOffsets {
    fn samples(&mut self, samples: &mut Vec<Sample>, truth: bool, streams: &[StreamInfo]) {
        // Every stream known so far has a slot, so a stream of ground truth only is seen.
        if self.max.len() < streams.len() {
            self.max.resize(streams.len(), None);
        }
        if !truth {
            for s in samples.iter() {
                self.push(s);
            }
        }
    }
}

/// The online clock estimator behind [`ClockMapping::Estimated`].
#[derive(Clone, Debug)]
pub struct OnlineClock {
    /// Completed windows: (window end, max of send − arrival), oldest first.
    windows: std::collections::VecDeque<(Nanos, Nanos)>,
    /// The window being filled: (start, max so far).
    current: Option<(Nanos, Nanos)>,
    /// Fit: offset(t) = intercept + slope·t, t in ns since the first arrival.
    slope: f64,
    intercept: f64,
    origin: Option<Nanos>,
    fitted: bool,
    /// The offset in use and when it was last moved.
    applied: Option<(Nanos, Nanos)>,
    /// Windows completed since the last fit.
    since_fit: usize,
}

impl Default for OnlineClock {
    fn default() -> Self {
        Self::new()
    }
}

impl OnlineClock {
    /// Window length for the envelope.
    pub const WINDOW: Nanos = Nanos::from_secs(1);
    /// Windows kept for the drift fit (one minute).
    pub const KEEP: usize = 60;
    /// Largest drift believed (beyond it the slope is clamped): 1000 ppm.
    pub const MAX_DRIFT: f64 = 1e-3;
    /// Largest slew of the offset in use, relative to elapsed time: 0.5 % (1/200).
    pub const SLEW_DIVISOR: i64 = 200;
    /// Windows between drift fits.
    pub const REFIT_EVERY: usize = 10;

    /// An estimator that has seen nothing.
    pub fn new() -> Self {
        Self {
            windows: std::collections::VecDeque::new(),
            current: None,
            slope: 0.0,
            intercept: 0.0,
            origin: None,
            fitted: false,
            applied: None,
            since_fit: 0,
        }
    }

    /// A packet sent at `send` (sender clock) arrived at `arrival` (local clock).
    #[inline]
    pub fn observe(&mut self, send: Nanos, arrival: Nanos) {
        // Most packets land in the window being filled once a fit exists: keep its maximum.
        if self.fitted
            && let Some((start, max)) = &mut self.current
            && arrival < *start + Self::WINDOW
        {
            *max = (*max).max(send - arrival);
            return;
        }
        self.observe_window(send, arrival);
    }

    /// [`Self::observe`] for a packet that starts a window, or before the first fit.
    fn observe_window(&mut self, send: Nanos, arrival: Nanos) {
        let origin = *self.origin.get_or_insert(arrival);
        let v = send - arrival;
        match self.current {
            Some((start, max)) if arrival < start + Self::WINDOW => {
                self.current = Some((start, max.max(v)));
            }
            Some((start, max)) => {
                self.windows.push_back((start + Self::WINDOW, max));
                if self.windows.len() > Self::KEEP {
                    self.windows.pop_front();
                }
                self.current = Some((arrival, v));
                // Drift moves slowly: refit every few windows (always while warming up).
                self.since_fit += 1;
                if !self.fitted || self.since_fit >= Self::REFIT_EVERY {
                    self.since_fit = 0;
                    self.refit(origin);
                } else {
                    // Between fits, keep the envelope: no window may lie above the line.
                    let t = (start + Self::WINDOW - origin).as_nanos() as f64;
                    self.intercept = self.intercept.max(max.as_nanos() as f64 - self.slope * t);
                }
            }
            None => {
                self.current = Some((arrival, v));
                self.intercept = v.as_nanos() as f64;
            }
        }
        if !self.fitted {
            // Until a fit exists: the running minimum transit.
            self.intercept = self.intercept.max(v.as_nanos() as f64);
        }
    }

    fn refit(&mut self, origin: Nanos) {
        let pts: Vec<(f64, f64)> = self
            .windows
            .iter()
            .map(|&(t, v)| ((t - origin).as_nanos() as f64, v.as_nanos() as f64))
            .collect();
        if pts.len() < 3 {
            let envelope = pts.iter().map(|p| p.1).fold(f64::MIN, f64::max);
            self.intercept = self.intercept.max(envelope);
            return;
        }
        // Theil–Sen restricted to pairs half the span apart: the median of n/2 slopes, each
        // over a long baseline, robust to windows a spike spoiled and O(n) per refit (all
        // pairs would be O(n² log n) once a second of trace).
        let half = pts.len() / 2;
        let mut slopes: Vec<f64> = (0..pts.len() - half)
            .filter_map(|i| {
                let (a, b) = (pts[i], pts[i + half]);
                let dt = b.0 - a.0;
                (dt > 0.0).then(|| (b.1 - a.1) / dt)
            })
            .collect();
        if slopes.is_empty() {
            return;
        }
        slopes.sort_by(f64::total_cmp);
        let slope = slopes[slopes.len() / 2].clamp(-Self::MAX_DRIFT, Self::MAX_DRIFT);
        // The envelope for that slope: no window lies above the line.
        let intercept = pts
            .iter()
            .map(|(t, v)| v - slope * t)
            .fold(f64::MIN, f64::max);
        self.slope = slope;
        self.intercept = intercept;
        self.fitted = true;
    }

    /// The offset to use at local time `at` (times must not decrease), slewed toward the
    /// current estimate.
    #[inline]
    pub fn offset_at(&mut self, at: Nanos) -> Nanos {
        let Some(origin) = self.origin else {
            return Nanos::ZERO;
        };
        let t = (at - origin).as_nanos() as f64;
        // Truncation, not `round`: a libm call on baseline x86-64, and sub-ns is noise here.
        let estimate = Nanos((self.intercept + self.slope * t) as i64);
        let offset = match self.applied {
            None => estimate,
            Some((applied, last)) => {
                let room = Nanos((at - last).as_nanos().max(0) / Self::SLEW_DIVISOR);
                applied + (estimate - applied).max(-room).min(room)
            }
        };
        self.applied = Some((offset, at));
        offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_what_parses_back() {
        for text in [
            "estimate",
            "hindsight",
            "offset=0",
            "offset=-12.5",
            "offset=2000",
        ] {
            let clock: ClockMapping = text.parse().unwrap();
            assert_eq!(clock.to_string(), text);
            assert_eq!(clock.to_string().parse::<ClockMapping>().unwrap(), clock);
        }
        assert_eq!(
            "auto".parse::<ClockMapping>().unwrap().to_string(),
            "estimate"
        );
    }

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
