//! The media clock rate of a dynamic RTP payload type that nothing names (no `--clock-rate`,
//! no SDP), inferred from the stream itself: RTP timestamps advance at the clock rate against
//! arrival times, whatever the jitter, so the slope of one against the other, over a long
//! enough span, is the rate. It is snapped to the standard rates and reported with its
//! evidence; a slope near none of them, or a stream too short to tell, gives no rate.

use super::ClockInference;
use crate::time::Nanos;

/// The rates a measurement is snapped to (Hz).
pub const STANDARD_RATES: [u32; 6] = [8_000, 16_000, 32_000, 44_100, 48_000, 90_000];
/// How far from a standard rate a measurement may be and still be taken as it (2 %: the
/// nearest two, 44.1 and 48 kHz, are 8.5 % apart).
pub const TOLERANCE: f64 = 0.02;
/// The shortest span of arrivals a rate is inferred from.
pub const MIN_SPAN: Nanos = Nanos::from_secs(2);
/// The runs a stream is cut into for its lower envelope.
pub const WINDOWS: usize = 24;
/// The fewest packets a rate is inferred from.
pub const MIN_PACKETS: usize = 20;

/// Infers the clock rate from `(extended RTP timestamp, arrival)` pairs in arrival order.
///
/// Packets that are delayed arrive later, never earlier, so the packets that crossed the
/// network fastest trace the sender's clock: the stream is cut into up to [`WINDOWS`] runs,
/// the packet of least transit kept from each (transit taken against a first, rough slope),
/// and the rate is the median of the slopes between those envelope packets (Theil–Sen). A
/// stall, a burst after it, or a timestamp jump moves a few of those slopes, not the median.
pub fn infer(points: &[(i64, Nanos)]) -> ClockInference {
    let n = points.len();
    let span = match (points.first(), points.last()) {
        (Some(a), Some(b)) => b.1.0.saturating_sub(a.1.0),
        _ => 0,
    };
    let measured = envelope_slope(points);
    let nearest = STANDARD_RATES
        .into_iter()
        .min_by(|&a, &b| {
            let off = |r: u32| (measured / f64::from(r) - 1.0).abs();
            off(a).total_cmp(&off(b))
        })
        .unwrap_or(STANDARD_RATES[0]);
    let close = (measured / f64::from(nearest) - 1.0).abs() <= TOLERANCE;
    let enough = n >= MIN_PACKETS && span >= MIN_SPAN.0;
    ClockInference {
        hz: (close && enough).then_some(nearest),
        measured_hz: measured.max(0.0).round() as u32,
        nearest_hz: nearest,
        packets: n as u64,
        span_ms: (span.max(0) / 1_000_000) as u64,
    }
}

/// The slope, in units per second, of `(value, arrival)` points in arrival order along the
/// lower envelope of their transit times (see [`infer`]); 0 when there are too few points.
pub fn envelope_slope(points: &[(i64, Nanos)]) -> f64 {
    let n = points.len();
    let slope = |a: (i64, Nanos), b: (i64, Nanos)| {
        let dt = (b.1.0 - a.1.0) as f64 / 1e9;
        (dt > 0.0).then(|| (b.0 - a.0) as f64 / dt)
    };
    let rough = match (points.first(), points.last()) {
        (Some(&a), Some(&b)) if n >= 2 => slope(a, b).unwrap_or(0.0),
        _ => 0.0,
    };
    let mut measured = 0.0;
    if n >= 4 && rough > 0.0 {
        let windows = WINDOWS.min(n / 2).max(2);
        let envelope: Vec<(i64, Nanos)> = (0..windows)
            .filter_map(|w| {
                let run = &points[w * n / windows..(w + 1) * n / windows];
                run.iter().copied().min_by(|a, b| {
                    let transit = |p: &(i64, Nanos)| p.1.0 as f64 / 1e9 - p.0 as f64 / rough;
                    transit(a).total_cmp(&transit(b))
                })
            })
            .collect();
        let mut slopes: Vec<f64> = Vec::new();
        for (i, &a) in envelope.iter().enumerate() {
            for &b in &envelope[i + 1..] {
                slopes.extend(slope(a, b));
            }
        }
        if !slopes.is_empty() {
            let mid = slopes.len() / 2;
            measured = *slopes.select_nth_unstable_by(mid, f64::total_cmp).1;
        }
    }
    measured
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// A 20 ms packet stream at `hz` with up to `jitter_ms` of uniform jitter.
    fn stream(hz: u32, packets: usize, jitter_ms: f64, seed: u64) -> Vec<(i64, Nanos)> {
        let mut rng = Rng::new(seed);
        (0..packets)
            .map(|i| {
                let ts = i as i64 * i64::from(hz) / 50;
                let at = i as f64 * 20.0 + rng.uniform() * jitter_ms;
                (ts, Nanos::from_millis_f64(at))
            })
            .collect()
    }

    #[test]
    fn each_standard_rate_is_found_through_jitter() {
        for (k, hz) in STANDARD_RATES.into_iter().enumerate() {
            let got = infer(&stream(hz, 500, 60.0, k as u64));
            assert_eq!(got.hz, Some(hz), "{got:?}");
            assert_eq!(got.packets, 500);
        }
    }

    #[test]
    fn a_rate_near_no_standard_or_a_short_stream_gives_none() {
        let odd = infer(&stream(12_000, 500, 5.0, 1));
        assert_eq!(odd.hz, None, "{odd:?}");
        assert!((11_900..=12_100).contains(&odd.measured_hz), "{odd:?}");
        let short = infer(&stream(16_000, 10, 0.0, 2));
        assert_eq!(short.hz, None);
        assert_eq!(short.nearest_hz, 16_000);
        assert_eq!(infer(&[]).hz, None);
    }

    #[test]
    fn a_timestamp_jump_does_not_move_the_median() {
        let mut s = stream(8_000, 400, 20.0, 3);
        for p in &mut s[380..] {
            p.0 += 1_000_000;
        }
        assert_eq!(infer(&s).hz, Some(8_000));
    }
}
