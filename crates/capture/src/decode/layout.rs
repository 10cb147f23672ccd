//! `layout:SPEC`: custom game protocols decoded by fixed byte offsets.
//!
//! A spec is a comma-separated list of `NAME=TYPE@OFFSET[:UNIT][*COUNT]`, e.g.
//! `layout:seq=u32be@0,send=f64le@4:ms,value=f32le@12*3`.
//!
//! - `TYPE`: `u8`, `i8`, or `u16 i16 u32 i32 u64 i64 f32 f64` with `be` or `le`.
//! - `seq` (required): the sequence number or tick.
//! - `send` (required): the send time, with a unit `s`, `ms`, `us` or `ns` (default `ms`), or
//!   `/HZ` for a tick counter at HZ ticks per second (`send=u32le@0/60`).
//! - `stream` and `state` (optional): a stream id and a discrete state.
//! - `when` (optional): `when=TYPE@OFFSET=VALUE` decodes only the packets whose integer field
//!   there equals VALUE (decimal or `0x` hex), for a flow that mixes message kinds each with
//!   its own layout (`when=u8@0=2,seq=u16le@1,send=u32le@3`); any other packet is skipped with
//!   the reason.
//! - Any other name is a value channel; `*COUNT` repeats the field back to back, naming the
//!   channels `NAME0`, `NAME1`, ...
//!
//! An unsigned `seq` or integer `send` narrower than 64 bits wraps: a stream's [`Wraps`] extends
//! it past its width ([`Layout::decode`] reads the wire value).

use super::DecodeError;
use crate::Error;
use crate::time::Nanos;

/// A field's binary type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
}

impl Kind {
    /// The bits of an unsigned counter narrower than 64 bits, which wraps and so needs
    /// extending; `None` for signed, 64-bit and float fields (read as they are).
    const fn wrap_bits(self) -> Option<u32> {
        match self {
            Self::U8 => Some(8),
            Self::U16 => Some(16),
            Self::U32 => Some(32),
            _ => None,
        }
    }

    const fn width(self) -> usize {
        match self {
            Self::U8 | Self::I8 => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 => 8,
        }
    }
}

/// One field: where it is and how to read it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Field {
    kind: Kind,
    big_endian: bool,
    offset: usize,
}

impl Field {
    /// Whether `value` is one this integer field can hold.
    fn fits(&self, value: i128) -> bool {
        let bits = 8 * self.kind.width() as u32;
        let signed = matches!(self.kind, Kind::I8 | Kind::I16 | Kind::I32 | Kind::I64);
        if signed {
            (-(1i128 << (bits - 1))..(1i128 << (bits - 1))).contains(&value)
        } else {
            (0..(1i128 << bits)).contains(&value)
        }
    }

    /// The field as an integer (floats must be whole) or a float.
    fn read(&self, buf: &[u8]) -> Option<Num> {
        let b = buf.get(self.offset..self.offset + self.kind.width())?;
        let mut raw = [0u8; 8];
        if self.big_endian {
            raw[8 - b.len()..].copy_from_slice(b);
            raw.reverse();
        } else {
            raw[..b.len()].copy_from_slice(b);
        }
        let v = u64::from_le_bytes(raw);
        Some(match self.kind {
            Kind::U8 | Kind::U16 | Kind::U32 | Kind::U64 => Num::Int(i128::from(v)),
            Kind::I8 => Num::Int(i128::from(v as u8 as i8)),
            Kind::I16 => Num::Int(i128::from(v as u16 as i16)),
            Kind::I32 => Num::Int(i128::from(v as u32 as i32)),
            Kind::I64 => Num::Int(i128::from(v as i64)),
            Kind::F32 => Num::Float(f64::from(f32::from_bits(v as u32))),
            Kind::F64 => Num::Float(f64::from_bits(v)),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Self::Int(i) => i as f64,
            Self::Float(f) => f,
        }
    }

    fn as_int(self) -> Option<i64> {
        match self {
            Self::Int(i) => i64::try_from(i).ok(),
            Self::Float(f) => {
                (f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e18).then_some(f as i64)
            }
        }
    }
}

/// How a raw send field becomes nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum SendUnit {
    /// Nanoseconds per unit.
    Scale(f64),
    /// A tick counter at this many ticks per second.
    Ticks(f64),
}

/// A parsed layout.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    spec: String,
    seq: Field,
    send: (Field, SendUnit),
    stream: Option<Field>,
    state: Option<Field>,
    /// The message kind this layout is for: the field must read this value.
    when: Option<(Field, i128)>,
    values: Vec<(String, Field)>,
}

/// What a layout reads from one packet.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// The stream id (0 when the layout has none).
    pub stream: u32,
    /// Sequence number.
    pub seq: i64,
    /// Send time.
    pub send: Nanos,
    /// Discrete state.
    pub state: Option<u32>,
    /// Value channels in spec order.
    pub values: Vec<f64>,
    /// The sequence and send fields as read, for [`Layout::extend`].
    raw: (i64, Num),
}

/// Per-stream state that extends a layout's wrapping counters (unsigned fields narrower than
/// 64 bits: a `u16` sequence number goes 65535, 0, 1, …) to 64 bits, as RTP's 16-bit sequence
/// number is: each value is placed nearest the highest seen, so reordering across a wrap is
/// handled too.
#[derive(Clone, Copy, Debug)]
pub struct Wraps {
    seq: Option<super::rtp::Extender>,
    send: Option<super::rtp::Extender>,
    /// The send field's unit, to convert an extended value.
    unit: SendUnit,
}

impl Wraps {
    /// Extends `d`'s sequence number and integer send time by their field widths, packet by
    /// packet in arrival order.
    ///
    /// # Errors
    /// An extended value beyond ±2^61.
    pub fn extend(&mut self, d: &mut Decoded) -> Result<(), DecodeError> {
        let (seq, send) = d.raw;
        if let Some(e) = &mut self.seq {
            // A wrapping field holds at most 32 bits, so the raw value fits.
            d.seq = super::in_range("layout seq", i128::from(e.extend(seq as u32)))?;
        }
        if let (Some(e), Num::Int(raw)) = (&mut self.send, send) {
            let extended = Num::Int(i128::from(e.extend(raw as u32)));
            d.send = send_time(self.unit, extended)?;
        }
        Ok(())
    }
}

/// A send field's value as a time within ±2^61 ns.
fn send_time(unit: SendUnit, raw: Num) -> Result<Nanos, DecodeError> {
    let ns = match (unit, raw) {
        (SendUnit::Scale(1.0), Num::Int(i)) => i64::try_from(i).ok(),
        (SendUnit::Scale(k), n) => finite_ns(n.as_f64() * k),
        (SendUnit::Ticks(hz), n) => finite_ns(n.as_f64() * 1e9 / hz),
    }
    .ok_or_else(|| DecodeError::new("layout send time is not a finite time"))?;
    Ok(Nanos(super::in_range(
        "layout send time (ns)",
        i128::from(ns),
    )?))
}

impl Layout {
    /// Parses the part after `layout:`.
    ///
    /// # Errors
    /// [`Error::Layout`] naming the field that does not parse.
    pub fn parse(spec: &str) -> Result<Self, Error> {
        let bad = |item: &str, why: &str| Error::Layout {
            spec: spec.to_owned(),
            reason: format!("field '{item}': {why}"),
        };
        let (mut seq, mut send, mut stream, mut state) = (None, None, None, None);
        let mut when = None;
        let mut values = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, rest) = item
                .split_once('=')
                .ok_or_else(|| bad(item, "expected NAME=TYPE@OFFSET"))?;
            let (rest, count) = match rest.split_once('*') {
                Some((r, c)) => (
                    r,
                    c.parse::<usize>()
                        .ok()
                        .filter(|c| (1..=64).contains(c))
                        .ok_or_else(|| bad(item, "repeat count must be 1..=64"))?,
                ),
                None => (rest, 1),
            };
            let (ty, at) = rest
                .split_once('@')
                .ok_or_else(|| bad(item, "expected TYPE@OFFSET"))?;
            let (at, wanted) = match at.split_once('=') {
                Some((at, value)) if name == "when" => (at, Some(value)),
                Some(_) => return Err(bad(item, "only when takes =VALUE")),
                None if name == "when" => {
                    return Err(bad(
                        item,
                        "expected when=TYPE@OFFSET=VALUE, e.g. when=u8@0=2",
                    ));
                }
                None => (at, None),
            };
            let (at, unit) = match at.find([':', '/']) {
                Some(i) => (&at[..i], Some(&at[i..])),
                None => (at, None),
            };
            let offset: usize = at
                .parse()
                .ok()
                .filter(|o| *o < 65_536)
                .ok_or_else(|| bad(item, "offset must be a byte offset below 65536"))?;
            let (kind, big_endian) = parse_type(ty).ok_or_else(|| {
                bad(
                    item,
                    "unknown type (u8, i8, u16be, u16le, ..., i64le, f32be, f64le)",
                )
            })?;
            let field = Field {
                kind,
                big_endian,
                offset,
            };
            if unit.is_some() && name != "send" {
                return Err(bad(item, "only send takes a unit"));
            }
            if count > 1 && matches!(name, "seq" | "send" | "stream" | "state" | "when") {
                return Err(bad(item, "only value channels repeat"));
            }
            if let Some(value) = wanted {
                if matches!(kind, Kind::F32 | Kind::F64) {
                    return Err(bad(item, "when needs an integer type"));
                }
                let value = parse_int(value)
                    .filter(|v| field.fits(*v))
                    .ok_or_else(|| bad(item, "the value must be an integer that fits the type"))?;
                if when.replace((field, value)).is_some() {
                    return Err(bad(item, "given twice"));
                }
                continue;
            }
            let slot = match name {
                "seq" => &mut seq,
                "send" => {
                    let unit = match unit {
                        None | Some(":ms") => SendUnit::Scale(1e6),
                        Some(":s") => SendUnit::Scale(1e9),
                        Some(":us") => SendUnit::Scale(1e3),
                        Some(":ns") => SendUnit::Scale(1.0),
                        Some(u) => match u.strip_prefix('/').and_then(|h| h.parse::<f64>().ok()) {
                            Some(hz) if hz > 0.0 && hz.is_finite() => SendUnit::Ticks(hz),
                            _ => return Err(bad(item, "unit must be :s, :ms, :us, :ns or /HZ")),
                        },
                    };
                    if send.replace((field, unit)).is_some() {
                        return Err(bad(item, "send given twice"));
                    }
                    continue;
                }
                "stream" => &mut stream,
                "state" => &mut state,
                _ => {
                    if name.is_empty()
                        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        return Err(bad(item, "a channel name is letters, digits and _"));
                    }
                    for i in 0..count {
                        let label = if count == 1 {
                            name.to_owned()
                        } else {
                            format!("{name}{i}")
                        };
                        let offset = offset + i * kind.width();
                        values.push((label, Field { offset, ..field }));
                    }
                    continue;
                }
            };
            if slot.replace(field).is_some() {
                return Err(bad(item, "given twice"));
            }
        }
        let missing = |what: &str| Error::Layout {
            spec: spec.to_owned(),
            reason: format!("needs a {what} field, e.g. {what}=u32be@0"),
        };
        Ok(Self {
            spec: spec.to_owned(),
            seq: seq.ok_or_else(|| missing("seq"))?,
            send: send.ok_or_else(|| missing("send"))?,
            stream,
            state,
            when,
            values,
        })
    }

    /// The spec as given (without `layout:`).
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The value channels' names.
    pub fn channels(&self) -> Vec<String> {
        self.values.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Fresh wrap state for one stream of this layout.
    pub fn wraps(&self) -> Wraps {
        let ext = |f: &Field| f.kind.wrap_bits().map(super::rtp::Extender::new);
        Wraps {
            seq: ext(&self.seq),
            send: ext(&self.send.0),
            unit: self.send.1,
        }
    }

    /// Reads one packet, its counters as they are on the wire (see [`Wraps::extend`]).
    ///
    /// # Errors
    /// A field past the end of the packet, a non-integer sequence number, or a send time that is
    /// not finite.
    pub fn decode(&self, buf: &[u8]) -> Result<Decoded, DecodeError> {
        let short = |f: &Field| {
            DecodeError::new(format!(
                "layout field at byte {} needs {} bytes, packet has {}",
                f.offset,
                f.offset + f.kind.width(),
                buf.len()
            ))
        };
        let read = |f: &Field| f.read(buf).ok_or_else(|| short(f));
        if let Some((f, want)) = &self.when {
            let got = read(f)?;
            if got != Num::Int(*want) {
                return Err(DecodeError::new(format!(
                    "another message kind: the field at byte {} reads {}, this layout is for {want}",
                    f.offset,
                    got.as_f64()
                )));
            }
        }
        let seq = read(&self.seq)?
            .as_int()
            .ok_or_else(|| DecodeError::new("layout seq is not a whole number"))?;
        let seq = super::in_range("layout seq", i128::from(seq))?;
        let raw = read(&self.send.0)?;
        let send = send_time(self.send.1, raw)?;
        let stream = match &self.stream {
            Some(f) => read(f)?
                .as_int()
                .and_then(|s| u32::try_from(s).ok())
                .ok_or_else(|| DecodeError::new("layout stream is not a 32-bit id"))?,
            None => 0,
        };
        let state = match &self.state {
            Some(f) => Some(
                read(f)?
                    .as_int()
                    .and_then(|s| u32::try_from(s).ok())
                    .ok_or_else(|| DecodeError::new("layout state is not a 32-bit value"))?,
            ),
            None => None,
        };
        let mut values = Vec::with_capacity(self.values.len());
        for (name, f) in &self.values {
            let v = read(f)?.as_f64();
            if !v.is_finite() {
                return Err(DecodeError::new(format!("layout value {name} is {v}")));
            }
            values.push(v);
        }
        Ok(Decoded {
            stream,
            seq,
            send,
            state,
            values,
            raw: (seq, raw),
        })
    }
}

/// A decimal (optionally negative) or `0x` hexadecimal integer.
fn parse_int(text: &str) -> Option<i128> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => i128::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn finite_ns(ns: f64) -> Option<i64> {
    (ns.is_finite() && ns.abs() < 9.0e18).then_some(ns.round() as i64)
}

fn parse_type(ty: &str) -> Option<(Kind, bool)> {
    let (base, big) = match ty {
        "u8" => return Some((Kind::U8, false)),
        "i8" => return Some((Kind::I8, false)),
        t if t.ends_with("be") => (&t[..t.len() - 2], true),
        t if t.ends_with("le") => (&t[..t.len() - 2], false),
        _ => return None,
    };
    let kind = match base {
        "u16" => Kind::U16,
        "i16" => Kind::I16,
        "u32" => Kind::U32,
        "i32" => Kind::I32,
        "u64" => Kind::U64,
        "i64" => Kind::I64,
        "f32" => Kind::F32,
        "f64" => Kind::F64,
        _ => return None,
    };
    Some((kind, big))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_example_decodes() {
        let l = Layout::parse("seq=u32be@0,send=f64le@4:ms,value=f32le@12*3").unwrap();
        assert_eq!(l.channels(), ["value0", "value1", "value2"]);
        let mut p = Vec::new();
        p.extend_from_slice(&7u32.to_be_bytes());
        p.extend_from_slice(&1234.5f64.to_le_bytes());
        for v in [1.5f32, -2.0, 3.25] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        let d = l.decode(&p).unwrap();
        assert_eq!((d.seq, d.send, d.stream), (7, Nanos(1_234_500_000), 0));
        assert_eq!(d.values, [1.5, -2.0, 3.25]);
        let err = l.decode(&p[..20]).unwrap_err().to_string();
        assert!(
            err.contains("needs 16 bytes, packet has 20") || err.contains("packet has 20"),
            "{err}"
        );
    }

    #[test]
    fn ticks_stream_state_and_signed_types() {
        let l = Layout::parse("stream=u8@0,seq=i16le@1,send=u32be@3/60,state=u8@7,x=i8@8").unwrap();
        let p = [9u8, 0xff, 0xff, 0, 0, 0, 60, 4, 0xfe];
        let d = l.decode(&p).unwrap();
        assert_eq!(
            (d.stream, d.seq, d.send, d.state),
            (9, -1, Nanos(1_000_000_000), Some(4))
        );
        assert_eq!(d.values, [-2.0]);
    }

    /// A spec for one message kind decodes that kind and skips the others with the reason.
    #[test]
    fn when_keeps_one_message_kind() {
        let l = Layout::parse("when=u8@0=0x02,seq=u16le@1,send=u32le@3").unwrap();
        let mut p = vec![2u8];
        p.extend_from_slice(&513u16.to_le_bytes());
        p.extend_from_slice(&40u32.to_le_bytes());
        let d = l.decode(&p).unwrap();
        assert_eq!((d.seq, d.send), (513, Nanos::from_millis(40)));
        p[0] = 7;
        let err = l.decode(&p).unwrap_err().to_string();
        assert!(
            err.contains("another message kind") && err.contains("for 2"),
            "{err}"
        );
        let err = l.decode(&[]).unwrap_err().to_string();
        assert!(err.contains("packet has 0"), "{err}");
        let signed = Layout::parse("when=i16be@0=-2,seq=u8@2,send=u8@3").unwrap();
        assert_eq!(signed.decode(&[0xff, 0xfe, 9, 1]).unwrap().seq, 9);
    }

    #[test]
    fn non_finite_values_are_refused() {
        let l = Layout::parse("seq=u8@0,send=u8@1,v=f32le@2").unwrap();
        let mut p = vec![1, 2];
        p.extend_from_slice(&f32::NAN.to_le_bytes());
        assert!(l.decode(&p).unwrap_err().to_string().contains("NaN"));
    }

    #[test]
    fn bad_specs_name_the_field() {
        for (spec, needle) in [
            ("seq=u32be@0", "needs a send field"),
            ("send=u32be@0", "needs a seq field"),
            ("seq=u33be@0,send=u8@4", "unknown type"),
            ("seq=u32be,send=u8@4", "TYPE@OFFSET"),
            ("seq=u32be@x,send=u8@4", "offset"),
            ("seq=u32be@0,send=u8@4:min", "unit"),
            ("seq=u32be@0*2,send=u8@4", "only value channels repeat"),
            ("seq=u32be@0,send=u8@4,v=f32le@8*0", "repeat count"),
            ("seq=u32be@0:ms,send=u8@4", "only send takes a unit"),
            ("when=u8@0,seq=u8@1,send=u8@2", "when=TYPE@OFFSET=VALUE"),
            ("when=u8@0=256,seq=u8@1,send=u8@2", "fits the type"),
            ("when=f32le@0=1,seq=u8@4,send=u8@5", "integer type"),
            ("when=u8@0=1,when=u8@1=1,seq=u8@2,send=u8@3", "given twice"),
            ("seq=u8@1=3,send=u8@2", "only when takes =VALUE"),
        ] {
            let err = Layout::parse(spec).unwrap_err().to_string();
            assert!(err.contains(needle), "{spec}: {err}");
        }
    }
}
