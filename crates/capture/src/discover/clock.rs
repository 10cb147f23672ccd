//! Send times: fields that advance with arrival time at a rate near one in some unit (integer
//! ms, µs, ns or 100 ns ticks; float seconds or ms), and, failing one, a counter read as ticks
//! at the rate it advances against arrivals.

use std::fmt;
use std::ops::Range;

use super::counter::{CounterFit, MAX_OFFSET};
use super::field::{ByteColumn, CLOCKS, FieldType, Packet, median, quantile};
use crate::decode::rtp::Extender;

/// A send time's unit, as the `layout:` grammar spells it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    /// Seconds (`:s`).
    S,
    /// Milliseconds (`:ms`).
    Ms,
    /// Microseconds (`:us`).
    Us,
    /// Nanoseconds (`:ns`).
    Ns,
    /// A tick counter at this many ticks per second (`/HZ`).
    Hz(f64),
}

impl Unit {
    /// Field units per second.
    pub fn per_second(self) -> f64 {
        match self {
            Self::S => 1.0,
            Self::Ms => 1e3,
            Self::Us => 1e6,
            Self::Ns => 1e9,
            Self::Hz(hz) => hz,
        }
    }

    /// The unit as it follows a field in a spec: `:ms`, `/60`.
    pub fn spec(self) -> String {
        match self {
            Self::Hz(_) => format!("/{self}"),
            _ => format!(":{self}"),
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::S => f.write_str("s"),
            Self::Ms => f.write_str("ms"),
            Self::Us => f.write_str("us"),
            Self::Ns => f.write_str("ns"),
            Self::Hz(hz) => {
                let text = format!("{hz:.3}");
                f.write_str(text.trim_end_matches('0').trim_end_matches('.'))
            }
        }
    }
}

/// Units an integer send time may be in: ms, µs, ns, and the 100 ns ticks of .NET and Windows.
const INT_UNITS: [Unit; 4] = [Unit::Ms, Unit::Us, Unit::Ns, Unit::Hz(1e7)];
/// Units a float send time may be in.
const FLOAT_UNITS: [Unit; 2] = [Unit::S, Unit::Ms];
/// How far from one the rate of a send time against arrivals may be (clock drift, and the
/// error of a slope measured through jitter on a short flow).
const RATE_TOLERANCE: f64 = 0.1;
/// A packet's send time is consistent when its one-way delay is within this of the median.
pub(super) const TOLERANCE_S: f64 = 1.0;
/// The same for a counter read as ticks, which must be a steadier clock to be one.
const TICK_TOLERANCE_S: f64 = 0.25;

/// How well one field reads as a send time.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ClockFit {
    pub(super) ty: FieldType,
    pub(super) offset: usize,
    pub(super) unit: Unit,
    /// Send-time seconds per arrival second (1 + drift).
    pub(super) rate: f64,
    /// Packets whose delay is within the tolerance of the median.
    pub(super) consistent: usize,
    /// Median and 95th percentile of |delay − median delay|, seconds.
    pub(super) p50: f64,
    pub(super) p95: f64,
    /// Read from the counter at the measured rate rather than from a time field.
    pub(super) from_counter: bool,
    /// The rate is within drift (0.2 %) or three standard errors of its measure of one.
    pub(super) steady: bool,
}

/// A clock's rate may differ from one by this much from drift alone (2,000 ppm, far more than
/// a crystal's).
const DRIFT: f64 = 0.002;

/// Each packet's field value relative to the first one read (integers narrower than 64 bits
/// extended across their wrap), in field units; `None` where unreadable.
fn values(packets: &[Packet<'_>], ty: FieldType, offset: usize, out: &mut Vec<Option<f64>>) {
    out.clear();
    let mut ext = Extender::new(ty.bits().min(32));
    let mut first_int: Option<i64> = None;
    let mut first_float: Option<f64> = None;
    for &(_, p) in packets {
        let v = if ty.float {
            ty.float_at(p, offset)
                .map(|v| v - *first_float.get_or_insert(v))
        } else {
            ty.bits_at(p, offset).map(|raw| {
                let v = if ty.width == 8 {
                    raw as i64
                } else {
                    ext.extend(raw as u32)
                };
                v.wrapping_sub(*first_int.get_or_insert(v)) as f64
            })
        };
        out.push(v);
    }
}

/// Field units per arrival second: the median slope between packets half the run apart.
fn slope(packets: &[Packet<'_>], vals: &[Option<f64>]) -> Option<f64> {
    let n = vals.len();
    let half = n / 2;
    if half == 0 {
        return None;
    }
    let stride = ((n - half) / 512).max(1);
    let mut slopes: Vec<f64> = (0..n - half)
        .step_by(stride)
        .filter_map(|i| {
            let (a, b) = (vals[i]?, vals[i + half]?);
            let dt = (packets[i + half].0 - packets[i].0).as_secs_f64();
            (dt > 0.0).then(|| (b - a) / dt)
        })
        .collect();
    if slopes.len() * 2 < (n - half).div_ceil(stride) {
        return None;
    }
    median(&mut slopes)
}

/// Residuals of the one-way delay (arrival − send on the field's clock at `per_second`):
/// (packets within `tolerance` seconds of the median, p50, p95 of the absolute residual).
fn residuals(
    packets: &[Packet<'_>],
    vals: &[Option<f64>],
    per_second: f64,
    tolerance: f64,
) -> (usize, f64, f64) {
    let t0 = packets.first().map_or(0, |p| p.0.0);
    let mut delays: Vec<f64> = packets
        .iter()
        .zip(vals)
        .filter_map(|(p, v)| Some((p.0.0 - t0) as f64 * 1e-9 - (*v)? / per_second))
        .collect();
    let Some(mid) = median(&mut delays.clone()) else {
        return (0, 0.0, 0.0);
    };
    for d in &mut delays {
        *d = (*d - mid).abs();
    }
    let consistent = delays.iter().filter(|d| **d <= tolerance).count();
    (
        consistent,
        quantile(&mut delays, 0.5),
        quantile(&mut delays, 0.95),
    )
}

/// The unit whose rate is within the tolerance of one for a slope in field units per second.
fn unit_for(ty: FieldType, slope: f64) -> Option<(Unit, f64)> {
    let units: &[Unit] = if ty.float { &FLOAT_UNITS } else { &INT_UNITS };
    units
        .iter()
        .map(|&u| (u, slope / u.per_second()))
        .find(|(_, rate)| (rate - 1.0).abs() <= RATE_TOLERANCE)
}

/// The send-time candidates in the sample windows: a unit fits each window's slope and at
/// least 60 % of the sampled packets have a consistent delay.
///
/// An integer clock's low byte must vary: one that stays constant is a counter or a coarser
/// field read across a byte boundary, not a time in ms or finer.
pub(super) fn scan(
    packets: &[Packet<'_>],
    windows: &[Range<usize>],
    cols: &[ByteColumn],
) -> Vec<(FieldType, usize, Unit)> {
    let sampled: usize = windows.iter().map(Range::len).sum();
    let longest = packets.iter().map(|p| p.1.len()).max().unwrap_or(0);
    let mut vals = Vec::new();
    let mut found = Vec::new();
    for offset in 0..MAX_OFFSET.min(longest) {
        'ty: for ty in CLOCKS {
            if offset + ty.size() > longest
                || (!ty.float
                    && cols
                        .get(ty.low_byte(offset))
                        .is_some_and(|c| c.constant(packets.len()).is_some()))
            {
                continue;
            }
            let mut unit = None;
            let mut consistent = 0;
            for w in windows {
                let run = &packets[w.clone()];
                values(run, ty, offset, &mut vals);
                let Some((u, rate)) = slope(run, &vals).and_then(|s| unit_for(ty, s)) else {
                    continue 'ty;
                };
                if unit.is_some_and(|prev| prev != u) {
                    continue 'ty;
                }
                unit = Some(u);
                consistent += residuals(run, &vals, u.per_second() * rate, TOLERANCE_S).0;
            }
            if let Some(u) = unit
                && consistent * 10 >= sampled * 6
            {
                found.push((ty, offset, u));
            }
        }
    }
    found
}

/// Measures a send-time candidate over the whole flow.
pub(super) fn verify(
    packets: &[Packet<'_>],
    ty: FieldType,
    offset: usize,
    unit: Unit,
) -> Option<ClockFit> {
    // The layout decoder refuses times beyond ±2^61 ns (a u64 read over constant high bytes).
    let first = packets.iter().find_map(|p| {
        if ty.float {
            ty.float_at(p.1, offset)
        } else {
            ty.bits_at(p.1, offset).map(|v| v as f64)
        }
    })?;
    if (first * 1e9 / unit.per_second()).abs() >= crate::decode::MAX_MAGNITUDE as f64 {
        return None;
    }
    let mut vals = Vec::new();
    values(packets, ty, offset, &mut vals);
    let rate = slope(packets, &vals)? / unit.per_second();
    if (rate - 1.0).abs() > RATE_TOLERANCE {
        return None;
    }
    let (consistent, p50, p95) = residuals(packets, &vals, unit.per_second() * rate, TOLERANCE_S);
    // The slope is a median of pairs half the flow apart: each errs by about the residual
    // spread over half the duration.
    let half = (packets[packets.len() - 1].0 - packets[0].0).as_secs_f64() / 2.0;
    let pairs = (packets.len() / 2).clamp(1, 512) as f64;
    let sigma = 2.0 * p95 / half.max(1e-9) / pairs.sqrt();
    Some(ClockFit {
        ty,
        offset,
        unit,
        rate,
        consistent,
        p50,
        p95,
        from_counter: false,
        steady: (rate - 1.0).abs() <= DRIFT.max(3.0 * sigma),
    })
}

/// Whether each packet's delay on `fit`'s clock is within the tolerance of the median.
pub(super) fn flags(packets: &[Packet<'_>], fit: &ClockFit) -> Vec<bool> {
    let mut vals = Vec::new();
    values(packets, fit.ty, fit.offset, &mut vals);
    let per_second = fit.unit.per_second() * fit.rate;
    let tolerance = if fit.from_counter {
        TICK_TOLERANCE_S
    } else {
        TOLERANCE_S
    };
    let t0 = packets.first().map_or(0, |p| p.0.0);
    let delays: Vec<Option<f64>> = packets
        .iter()
        .zip(&vals)
        .map(|(p, v)| Some((p.0.0 - t0) as f64 * 1e-9 - (*v)? / per_second))
        .collect();
    let mut known: Vec<f64> = delays.iter().flatten().copied().collect();
    let mid = median(&mut known).unwrap_or(0.0);
    delays
        .iter()
        .map(|d| d.is_some_and(|d| (d - mid).abs() <= tolerance))
        .collect()
}

/// One clock per pair of nested integer readings (`u32le@8` is the low half of `u64le@8`):
/// the 64-bit one when it is as consistent.
pub(super) fn resolve(fits: Vec<ClockFit>) -> Vec<ClockFit> {
    let covered = |narrow: &ClockFit| {
        fits.iter().any(|wide| {
            !narrow.ty.float
                && !wide.ty.float
                && narrow.ty.width == 4
                && wide.ty.width == 8
                && wide.ty.big_endian == narrow.ty.big_endian
                && wide.ty.low_byte(wide.offset) == narrow.ty.low_byte(narrow.offset)
                && wide.unit == narrow.unit
                && wide.consistent >= narrow.consistent
        })
    };
    let keep: Vec<bool> = fits.iter().map(|f| !covered(f)).collect();
    fits.into_iter()
        .zip(keep)
        .filter_map(|(f, k)| k.then_some(f))
        .collect()
}

/// A counter read as ticks at the rate it advances against arrivals (rounded to a whole rate
/// within 1 %), when its delays are steady enough for it to be a clock.
pub(super) fn ticks(packets: &[Packet<'_>], counter: &CounterFit) -> Option<ClockFit> {
    let mut vals = Vec::new();
    values(packets, counter.ty, counter.offset, &mut vals);
    let hz = slope(packets, &vals)?;
    if !(hz.is_finite() && hz > 0.0) {
        return None;
    }
    let whole = hz.round();
    let hz = if whole >= 1.0 && (hz - whole).abs() <= 0.01 * hz {
        whole
    } else {
        let digits = 10f64.powi(2 - hz.log10().floor() as i32);
        (hz * digits).round() / digits
    };
    let (consistent, p50, p95) = residuals(packets, &vals, hz, TICK_TOLERANCE_S);
    Some(ClockFit {
        ty: counter.ty,
        offset: counter.offset,
        unit: Unit::Hz(hz),
        rate: 1.0,
        consistent,
        p50,
        p95,
        from_counter: true,
        steady: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    #[test]
    fn units_print_as_the_grammar_reads_them() {
        assert_eq!(Unit::Ms.spec(), ":ms");
        assert_eq!(Unit::Hz(60.0).spec(), "/60");
        assert_eq!(Unit::Hz(29.97).spec(), "/29.97");
        assert_eq!(Unit::Hz(1e7).spec(), "/10000000");
    }

    /// A u32 ns clock wraps every 4.3 s: extended, it is found in ns with its drift.
    #[test]
    fn a_wrapping_nanosecond_clock_is_found() {
        let payloads: Vec<Vec<u8>> = (0..400u64)
            .map(|i| {
                let send_ns = 4_000_000_000u64 + i * 33_333_333 * 1_000_050 / 1_000_000;
                (send_ns as u32).to_be_bytes().to_vec()
            })
            .collect();
        let packets: Vec<Packet<'_>> = payloads
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let jitter = (i as i64 * 7919 % 13) * 1_000_000;
                (Nanos(i as i64 * 33_333_333 + jitter), p.as_slice())
            })
            .collect();
        let cols = super::super::field::byte_columns(&packets, 8);
        let found = scan(&packets, std::slice::from_ref(&(0..400)), &cols);
        assert_eq!(found, vec![(FieldType::uint(4, true), 0, Unit::Ns)]);
        let fit = verify(&packets, FieldType::uint(4, true), 0, Unit::Ns).unwrap();
        assert_eq!(fit.consistent, 400);
        assert!((fit.rate - 1.000_05).abs() < 1e-3, "{}", fit.rate);
        assert!(fit.p95 < 0.013, "{}", fit.p95);
    }
}
