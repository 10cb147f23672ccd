//! The `probe` payload: jitterlab's own snapshot packet (see `docs/probe-format.md`).
//!
//! Layout, all integers and floats big-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `JLPR` |
//! | 4 | 1 | version (1) |
//! | 5 | 1 | lifecycle flags: bit 0 spawn, bit 1 despawn, bit 2 teleport |
//! | 6 | 2 | value count `n` |
//! | 8 | 4 | stream id |
//! | 12 | 8 | tick (sequence number) |
//! | 20 | 8 | send time, ns on the sender's clock (signed) |
//! | 28 | 4 | discrete state |
//! | 32 | 8·n | values (f64) |

use super::{DecodeError, Lifecycle};
use crate::time::Nanos;

/// The four bytes every probe packet starts with.
pub const MAGIC: [u8; 4] = *b"JLPR";
/// The probe format version this library writes and reads.
pub const VERSION: u8 = 1;
/// The fixed part's length; values follow.
pub const HEADER_LEN: usize = 32;
/// The most values one probe packet may carry.
pub const MAX_VALUES: usize = 1024;

/// A decoded probe packet.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// The entity or stream the snapshot belongs to.
    pub stream: u32,
    /// The snapshot's tick; increases by one per snapshot sent.
    pub tick: u64,
    /// When the sender stamped the snapshot, on the sender's clock.
    pub send: Nanos,
    /// A discrete state (animation state, weapon id): switched, never averaged (C14).
    pub state: u32,
    /// A lifecycle event at this snapshot, if any.
    pub event: Option<Lifecycle>,
    /// The continuous values (position, rotation quaternion, ...).
    pub values: super::Values,
}

impl Probe {
    /// The encoded length.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + 8 * self.values.len()
    }

    /// Encodes the packet.
    ///
    /// # Panics
    /// If there are more than [`MAX_VALUES`] values (a caller bug: importers check first).
    pub fn emit(&self) -> Vec<u8> {
        assert!(self.values.len() <= MAX_VALUES, "too many probe values");
        let mut out = Vec::with_capacity(self.buffer_len());
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(self.event.map_or(0, Lifecycle::flag));
        out.extend_from_slice(&(self.values.len() as u16).to_be_bytes());
        out.extend_from_slice(&self.stream.to_be_bytes());
        out.extend_from_slice(&self.tick.to_be_bytes());
        out.extend_from_slice(&self.send.as_nanos().to_be_bytes());
        out.extend_from_slice(&self.state.to_be_bytes());
        for v in &self.values {
            out.extend_from_slice(&v.to_be_bytes());
        }
        out
    }

    /// Decodes a packet, checking every length and value.
    ///
    /// # Errors
    /// [`DecodeError`] naming what is wrong: short packet, bad magic or version, a value
    /// count beyond the packet, a non-finite value, several lifecycle flags at once.
    pub fn parse(buf: &[u8]) -> Result<Self, DecodeError> {
        if buf.len() < HEADER_LEN {
            return Err(DecodeError::new(format!(
                "probe packet of {} bytes is shorter than its {HEADER_LEN}-byte header",
                buf.len()
            )));
        }
        if buf[0..4] != MAGIC {
            return Err(DecodeError::new("not a probe packet (bad magic)"));
        }
        if buf[4] != VERSION {
            return Err(DecodeError::new(format!(
                "probe version {} (this build reads {VERSION})",
                buf[4]
            )));
        }
        let event = match buf[5] {
            0 => None,
            f => Some(Lifecycle::from_flag(f).ok_or_else(|| {
                DecodeError::new(format!("probe lifecycle flags {f:#04x} are not one event"))
            })?),
        };
        let n = usize::from(u16::from_be_bytes([buf[6], buf[7]]));
        if n > MAX_VALUES || buf.len() < HEADER_LEN + 8 * n {
            return Err(DecodeError::new(format!(
                "probe claims {n} values but carries {} bytes of them",
                buf.len() - HEADER_LEN
            )));
        }
        let be_u32 = |at: usize| u32::from_be_bytes(buf[at..at + 4].try_into().unwrap_or_default());
        let be_u64 = |at: usize| u64::from_be_bytes(buf[at..at + 8].try_into().unwrap_or_default());
        let value = |b: &[u8; 8]| f64::from_bits(u64::from_be_bytes(*b));
        let raw = buf[HEADER_LEN..HEADER_LEN + 8 * n]
            .as_chunks::<8>()
            .0
            .iter();
        // Filled in place when they fit inline (`collect` pushes one at a time, checking room
        // at each: a tenth of the decoding thread).
        let values = if n <= super::INLINE_VALUES {
            let mut inline = [0.0; super::INLINE_VALUES];
            for (slot, b) in inline.iter_mut().zip(raw) {
                *slot = value(b);
            }
            super::Values::from_buf_and_len(inline, n)
        } else {
            super::Values::from_vec(raw.map(value).collect())
        };
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(DecodeError::new(format!("probe value {i} is not finite")));
        }
        let send = super::in_range("probe send time (ns)", i128::from(be_u64(20) as i64))?;
        Ok(Self {
            stream: be_u32(8),
            tick: be_u64(12),
            send: Nanos(send),
            state: be_u32(28),
            event,
            values,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe() -> Probe {
        Probe {
            stream: 3,
            tick: 77,
            send: Nanos(-5),
            state: 9,
            event: Some(Lifecycle::Teleport),
            values: vec![1.5, -2.0, 0.25].into(),
        }
    }

    #[test]
    fn emit_parse_round_trip() {
        let p = probe();
        let bytes = p.emit();
        assert_eq!(bytes.len(), p.buffer_len());
        assert_eq!(Probe::parse(&bytes).unwrap(), p);
    }

    #[test]
    fn rejects_bad_packets() {
        let bytes = probe().emit();
        assert!(Probe::parse(&bytes[..31]).is_err());
        assert!(
            Probe::parse(&bytes[..40])
                .unwrap_err()
                .to_string()
                .contains("claims 3 values")
        );
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(Probe::parse(&bad).is_err());
        let mut bad = bytes.clone();
        bad[5] = 0b11;
        assert!(Probe::parse(&bad).is_err());
        let mut nan = probe();
        nan.values[1] = f64::NAN;
        assert!(
            Probe::parse(&nan.emit())
                .unwrap_err()
                .to_string()
                .contains("not finite")
        );
    }
}
