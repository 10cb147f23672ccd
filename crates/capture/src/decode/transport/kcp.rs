//! KCP: its segments, and the kcp2k framing Mirror puts around them.
//!
//! Followed from the reference implementation (`skywind3000/kcp`, `ikcp.c`) and from kcp2k as
//! Mirror ships it (`MirrorNetworking/Mirror`, `Assets/Mirror/Transports/KCP/kcp2k`, and the
//! older `vis2k/kcp2k`), described in `docs/transports.md`.
//!
//! A KCP datagram is one or more segments back to back, each a 24-byte little-endian header
//! (conversation id u32, command u8, fragment countdown u8, window u16, timestamp u32 in
//! milliseconds, sequence number u32, cumulative acknowledgement u32, data length u32) and
//! that many data bytes. PUSH (81) carries data; ACK (82), WASK (83, window probe) and WINS
//! (84, window size) are control and carry none.
//!
//! kcp2k (Mirror's transport) prefixes every datagram with a channel byte, 1 for reliable
//! (KCP segments follow) and 2 for unreliable (the message follows with no KCP header, so no
//! sequence number), and since about version 1.29 a 4-byte cookie after it; an unreliable
//! datagram then has a one-byte kind (4 data, 5 disconnect). The parser learns per flow which
//! of the three framings it sees.

use super::{Counter, Datagram, Message, Parser, SendStamp};
use crate::decode::DecodeError;

/// Segment commands (`IKCP_CMD_*`).
const PUSH: u8 = 81;
const ACK: u8 = 82;
const WASK: u8 = 83;
const WINS: u8 = 84;

/// The segment header's size (`IKCP_OVERHEAD`).
const OVERHEAD: usize = 24;

/// kcp2k's channel bytes (`KcpChannel`).
const CHANNEL_RELIABLE: u8 = 1;
const CHANNEL_UNRELIABLE: u8 = 2;
/// kcp2k's unreliable kinds (`KcpHeaderUnreliable`, with the cookie).
const UNRELIABLE_DATA: u8 = 4;
const UNRELIABLE_DISCONNECT: u8 = 5;

/// How a flow's datagrams wrap their KCP segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Segments alone (the reference library, most bindings).
    Raw,
    /// kcp2k before the cookie: a channel byte.
    Kcp2k,
    /// kcp2k with the cookie: a channel byte and a 4-byte cookie.
    Kcp2kCookie,
}

impl Framing {
    /// Bytes before the segments of a reliable datagram.
    const fn prefix(self) -> usize {
        match self {
            Self::Raw => 0,
            Self::Kcp2k => 1,
            Self::Kcp2kCookie => 5,
        }
    }
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The fields of a segment's header the parser uses (the window and the cumulative
/// acknowledgement are skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    conv: u32,
    cmd: u8,
    frg: u8,
    ts: u32,
    sn: u32,
    len: usize,
}

/// The segments from `start` to the end, every length checked against the datagram.
fn segments(payload: &[u8], start: usize) -> Result<Vec<Segment>, DecodeError> {
    let mut out = Vec::new();
    let mut at = start;
    if at >= payload.len() {
        return Err(DecodeError::new(format!(
            "kcp: no segment after the {start}-byte prefix"
        )));
    }
    while at < payload.len() {
        let left = payload.len() - at;
        if left < OVERHEAD {
            return Err(DecodeError::new(format!(
                "kcp: {left} bytes at offset {at} are too short for a {OVERHEAD}-byte segment \
                 header"
            )));
        }
        let cmd = payload[at + 4];
        if !(PUSH..=WINS).contains(&cmd) {
            return Err(DecodeError::new(format!(
                "kcp: unknown command {cmd} in the segment at offset {at}"
            )));
        }
        let len = le32(payload, at + 20);
        if u64::from(len) > (left - OVERHEAD) as u64 {
            return Err(DecodeError::new(format!(
                "kcp: segment at offset {at} says {len} data bytes, {} left",
                left - OVERHEAD
            )));
        }
        out.push(Segment {
            conv: le32(payload, at),
            cmd,
            frg: payload[at + 5],
            ts: le32(payload, at + 8),
            sn: le32(payload, at + 12),
            len: len as usize,
        });
        at += OVERHEAD + len as usize;
    }
    Ok(out)
}

/// What one datagram is under one framing, before any state is touched.
enum Shape {
    Segments(Vec<Segment>),
    /// A kcp2k unreliable datagram: its control name.
    Unreliable(&'static str),
}

fn shape(payload: &[u8], framing: Framing) -> Result<Shape, DecodeError> {
    if framing == Framing::Raw {
        return segments(payload, 0).map(Shape::Segments);
    }
    let prefix = framing.prefix();
    if payload.len() < prefix {
        return Err(DecodeError::new(format!(
            "kcp2k: datagram of {} bytes is shorter than its {prefix}-byte prefix",
            payload.len()
        )));
    }
    match payload[0] {
        CHANNEL_RELIABLE => segments(payload, prefix).map(Shape::Segments),
        CHANNEL_UNRELIABLE if framing == Framing::Kcp2k => Ok(Shape::Unreliable("unreliable")),
        CHANNEL_UNRELIABLE => match payload.get(prefix) {
            Some(&UNRELIABLE_DATA) => Ok(Shape::Unreliable("unreliable")),
            Some(&UNRELIABLE_DISCONNECT) => Ok(Shape::Unreliable("disconnect")),
            Some(&kind) => Err(DecodeError::new(format!(
                "kcp2k: unknown unreliable kind {kind} at offset {prefix}"
            ))),
            None => Err(DecodeError::new(
                "kcp2k: unreliable datagram without its kind byte",
            )),
        },
        other => Err(DecodeError::new(format!(
            "kcp2k: unknown channel {other} (1 reliable, 2 unreliable)"
        ))),
    }
}

/// One KCP flow's parser.
///
/// Its only state is the framing, learnt from the first reliable datagram that reads one way
/// only (raw segments first, then kcp2k with its cookie, then without); until then each
/// datagram is read the first way that fits. KCP itself needs no more: every PUSH segment is
/// one message with its own sequence number, and the retransmitted copy of a segment is the
/// same segment again (KCP marks nothing on the wire), so it is a duplicate as it stands.
#[derive(Debug, Default)]
pub struct KcpParser {
    framing: Option<Framing>,
}

impl KcpParser {
    /// The flow's framing, once known.
    pub fn framing(&self) -> Option<Framing> {
        self.framing
    }
}

impl Parser for KcpParser {
    fn parse(&mut self, payload: &[u8]) -> Result<Datagram, DecodeError> {
        let shape = match self.framing {
            Some(framing) => shape(payload, framing)?,
            None => {
                let tries = [Framing::Raw, Framing::Kcp2kCookie, Framing::Kcp2k]
                    .map(|f| (f, shape(payload, f)));
                let fits = tries.iter().filter(|(_, r)| r.is_ok()).count();
                let mut first_err = None;
                let mut chosen = None;
                for (framing, result) in tries {
                    match result {
                        Ok(s) if chosen.is_none() => {
                            // A kcp2k unreliable datagram does not tell the two kcp2k framings
                            // apart; a reliable one that reads one way only settles it.
                            if fits == 1 && matches!(s, Shape::Segments(_)) {
                                self.framing = Some(framing);
                            }
                            chosen = Some(s);
                        }
                        Ok(_) => {}
                        Err(e) => {
                            first_err.get_or_insert(e);
                        }
                    }
                }
                match (chosen, first_err) {
                    (Some(s), _) => s,
                    (None, Some(e)) => return Err(e),
                    (None, None) => return Err(DecodeError::new("kcp: unreadable datagram")),
                }
            }
        };
        let mut out = Datagram::default();
        match shape {
            Shape::Unreliable(name) => out.control.push(name),
            Shape::Segments(segs) => {
                for seg in segs {
                    match seg.cmd {
                        PUSH => out.messages.push(Message {
                            lane: seg.conv,
                            lane_name: format!("conv {:#x}", seg.conv),
                            seq: Counter::new(u64::from(seg.sn), 32),
                            send: Some(SendStamp::Ticks {
                                counter: Counter::new(u64::from(seg.ts), 32),
                                unit_ns: 1_000_000,
                            }),
                            len: seg.len,
                            retransmit: false,
                        }),
                        ACK => out.control.push("ack"),
                        WASK => out.control.push("window probe"),
                        // segments() returns only the four commands.
                        _ => out.control.push("window size"),
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Whether a datagram could be KCP's, raw or in kcp2k's framing: every segment is well formed
/// and shaped as `ikcp_flush` writes it (one conversation per datagram; ACK, WASK and WINS
/// with no data and no fragment countdown; PUSH with data),
/// and a kcp2k unreliable datagram has its kind byte.
pub fn resembles(payload: &[u8]) -> bool {
    [Framing::Raw, Framing::Kcp2kCookie, Framing::Kcp2k]
        .into_iter()
        .any(|f| match shape(payload, f) {
            Ok(Shape::Segments(segs)) => plausible(&segs),
            // One byte of kind is thin evidence, but kcp2k sends these only after a reliable
            // handshake the classifier will also have seen.
            Ok(Shape::Unreliable(_)) => f == Framing::Kcp2kCookie && payload.len() > 6,
            Err(_) => false,
        })
}

fn plausible(segs: &[Segment]) -> bool {
    let conv = segs[0].conv;
    segs.iter().all(|s| {
        s.conv == conv
            && match s.cmd {
                // ikcp_flush writes control segments with no data and frg 0; the ACK's sn and
                // ts echo the acknowledged segment's.
                ACK | WASK | WINS => s.len == 0 && s.frg == 0,
                // A PUSH carries data (kcp.send refuses empty messages), and its fragment
                // countdown is below the receive window ikcp_send allows (at most 255).
                _ => s.len > 0,
            }
    })
}

/// Mirror's batch timestamp: a batch (what Mirror hands kcp2k as one message) starts with the
/// sender's `NetworkTime.localTime`, a little-endian `f64` of seconds, followed by messages
/// each prefixed by their size in Mirror's variable-length integer (`Compression.VarUInt`).
/// Returns the timestamp when `batch` has that shape exactly: a finite, non-negative time
/// below 10^9 s and size prefixes that fill the rest to the byte.
///
/// In a kcp2k datagram the batch follows the reliable kind byte 3 (inside the first PUSH
/// segment of a message) or the unreliable kind byte 4. The check is structural, so a short
/// payload of other bytes can pass by chance: see `docs/transports.md`.
pub fn mirror_batch_time(batch: &[u8]) -> Option<f64> {
    let time = f64::from_le_bytes(batch.get(..8)?.try_into().ok()?);
    if !time.is_finite() || !(0.0..1e9).contains(&time) || batch.len() == 8 {
        return None;
    }
    let mut at = 8;
    while at < batch.len() {
        let (size, used) = mirror_varuint(&batch[at..])?;
        at = at
            .checked_add(used)?
            .checked_add(usize::try_from(size).ok()?)?;
        if size == 0 || at > batch.len() {
            return None;
        }
    }
    Some(time)
}

/// Mirror's `DecompressVarUInt`, for sizes up to 2^32: (value, bytes used).
fn mirror_varuint(b: &[u8]) -> Option<(u64, usize)> {
    let a0 = *b.first()?;
    let byte = |i: usize| b.get(i).map(|&x| u64::from(x));
    match a0 {
        0..=240 => Some((u64::from(a0), 1)),
        241..=248 => Some((240 + ((u64::from(a0) - 241) << 8) + byte(1)?, 2)),
        249 => Some((2288 + (byte(1)? << 8) + byte(2)?, 3)),
        250 => Some((byte(1)? | byte(2)? << 8 | byte(3)? << 16, 4)),
        251 => Some((
            byte(1)? | byte(2)? << 8 | byte(3)? << 16 | byte(4)? << 24,
            5,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
