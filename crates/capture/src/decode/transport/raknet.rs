//! RakNet: offline handshake messages, connected datagrams (data, ACK, NAK), the frames a
//! data datagram carries, and split packets reassembled per flow.
//!
//! Follows RakNet 4.081 (`facebookarchive/RakNet`, `Source/ReliabilityLayer.cpp`,
//! `Source/RakPeer.cpp`, `Source/DS_RangeList.h`, `Source/MessageIdentifiers.h`), whose framing
//! the forks in use (Minecraft Bedrock's among them) keep. In short:
//!
//! - A datagram whose first byte lacks the *valid* bit (0x80) is an **offline** message: its
//!   first byte is a message id (unconnected ping 0x01/0x02 and pong 0x1c, open connection
//!   request 1 and 2 0x05/0x07 and their replies 0x06/0x08, the refusals) and it carries the
//!   16-byte offline magic at an offset that depends on the id ([`OFFLINE_MAGIC`]).
//! - Otherwise the first byte holds flags, most significant bit first: valid, ACK, then for an
//!   ACK *has B and AS* (a 4-byte float follows), for anything else NAK, and for a data
//!   datagram packet-pair, continuous-send and needs-B-and-AS; the byte is padded with zeros.
//!   ACK and NAK bodies are a range list: a count (u16 big-endian), then per range a byte that
//!   is 1 when the range is a single number, the minimum (u24 little-endian) and, unless single,
//!   the maximum.
//! - A data datagram goes on with its datagram sequence number (u24 little-endian; RakNet's
//!   default sliding-window congestion control sends no timestamp before it), then frames until
//!   fewer than 3 bytes are left (RakNet's own stopping rule): a byte with the reliability in its
//!   top 3 bits and the has-split flag in the next; the payload length in **bits** (u16
//!   big-endian); the reliable message index (u24 LE) for reliable kinds; the sequencing index
//!   (u24 LE) for sequenced kinds; the ordering index (u24 LE) and ordering channel (u8, below
//!   32) for ordered and sequenced kinds; split count (u32 BE), split id (u16 BE) and split index
//!   (u32 BE) when split; then `ceil(bits / 8)` payload bytes.
//!
//! RakNet carries no send time in a data datagram. An application message that starts with
//! `ID_TIMESTAMP` (0x1b) carries the sender's `RakNet::Time` (u64 big-endian milliseconds) after
//! it, which becomes the message's send time. Connected ping and pong (ids 0x00 and 0x03,
//! timestamps inside) and the connection messages are control, not application messages.
//!
//! Lanes (each a stream of the flow), chosen so that a sequence gap is a message lost:
//! - ordering channel `c` for ordered frames: seq = ordering index (24 bits), one per ordered
//!   message on that channel (split or not); a retransmitted copy repeats it;
//! - `32 + c` for sequenced frames: seq = sequencing index (24 bits) (RakNet restarts it at 0
//!   after each ordered message on the same channel);
//! - [`LANE_RELIABLE`] for reliable unordered frames: the reliable message index counts every
//!   reliable frame and split part of the connection, so its gaps are not this lane's losses.
//!   Nothing reliable is lost for good, so seq counts distinct reliable messages in order of
//!   first arrival, and a copy whose index was seen before repeats the first copy's seq;
//! - [`LANE_UNRELIABLE`] for unreliable frames, which carry no counter of their own: seq counts
//!   unreliable messages along the datagram sequence numbers. A received datagram takes one seq
//!   per unreliable application message it holds (none if it holds none); a datagram number
//!   that was skipped takes one (the message it most likely held), kept for it if the datagram
//!   turns up late. So loss on this lane is the number of datagrams missing, which over-counts
//!   when a datagram that only held reliable frames or pings was lost.

use std::collections::{HashMap, VecDeque};

use super::{Counter, Datagram, Message, Parser, SendStamp};
use crate::decode::DecodeError;

/// The 16 bytes RakNet puts in every offline message (`OFFLINE_MESSAGE_DATA_ID`).
pub const OFFLINE_MAGIC: [u8; 16] = [
    0x00, 0xff, 0xff, 0x00, 0xfe, 0xfe, 0xfe, 0xfe, 0xfd, 0xfd, 0xfd, 0xfd, 0x12, 0x34, 0x56, 0x78,
];

/// The most parts a split message may claim. RakNet itself sets no limit; 65,536 parts of
/// about 1,400 bytes is 90 MB, past anything a game sends in one message.
pub const MAX_SPLIT_COUNT: u32 = 65_536;

/// How many split messages a flow may have incomplete at once; past it the oldest is dropped
/// (its parts were already counted as `fragment`).
pub const MAX_PENDING_SPLITS: usize = 64;

/// The lane of reliable unordered frames.
pub const LANE_RELIABLE: u32 = 64;

/// The lane of unreliable frames.
pub const LANE_UNRELIABLE: u32 = 65;

/// The lane of sequenced frames on ordering channel `channel` (0..32).
pub const fn lane_sequenced(channel: u8) -> u32 {
    32 + channel as u32
}

/// Ordering channels RakNet has (`NUMBER_OF_ORDERED_STREAMS`).
const CHANNELS: u8 = 32;

/// Datagram numbers remembered for late and duplicated datagrams on the unreliable lane.
const DATAGRAM_WINDOW: usize = 1024;

/// Reliable message indexes remembered to recognise retransmitted copies.
const RELIABLE_WINDOW: usize = 4096;

/// Split ids remembered after their message completed.
const COMPLETED_WINDOW: usize = 64;

/// Datagram numbers and message indexes are 24 bits wide.
const U24: u32 = 1 << 24;

/// The flag bits of a connected datagram's first byte.
mod flag {
    pub(super) const VALID: u8 = 0x80;
    pub(super) const ACK: u8 = 0x40;
    /// In an ACK: a 4-byte float (the data arrival rate) follows.
    pub(super) const HAS_B_AND_AS: u8 = 0x20;
    /// In anything but an ACK.
    pub(super) const NAK: u8 = 0x20;
    pub(super) const PACKET_PAIR: u8 = 0x10;
    pub(super) const CONTINUOUS_SEND: u8 = 0x08;
    pub(super) const NEEDS_B_AND_AS: u8 = 0x04;
}

/// A frame's reliability, as `PacketReliability` numbers it. The three `*_WITH_ACK_RECEIPT`
/// kinds (5, 6, 7) are local to the sender, which writes them as their plain kind; a reader
/// that meets them reads the fields of the plain kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reliability {
    Unreliable,
    UnreliableSequenced,
    Reliable,
    ReliableOrdered,
    ReliableSequenced,
}

impl Reliability {
    const fn from_bits(bits: u8) -> Self {
        match bits {
            1 => Self::UnreliableSequenced,
            2 | 6 => Self::Reliable,
            3 | 7 => Self::ReliableOrdered,
            4 => Self::ReliableSequenced,
            _ => Self::Unreliable,
        }
    }

    const fn is_reliable(self) -> bool {
        matches!(
            self,
            Self::Reliable | Self::ReliableOrdered | Self::ReliableSequenced
        )
    }

    const fn is_sequenced(self) -> bool {
        matches!(self, Self::UnreliableSequenced | Self::ReliableSequenced)
    }

    const fn is_ordered(self) -> bool {
        matches!(self, Self::ReliableOrdered) || self.is_sequenced()
    }
}

/// A split part's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Split {
    count: u32,
    id: u16,
    index: u32,
}

/// One frame of a data datagram, its payload given by offset and length.
#[derive(Clone, Copy, Debug)]
struct Frame {
    reliability: Reliability,
    reliable_index: Option<u32>,
    sequencing_index: Option<u32>,
    /// Ordering index and channel.
    ordering: Option<(u32, u8)>,
    split: Option<Split>,
    offset: usize,
    len: usize,
}

/// A bounds-checked reader over one datagram.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    const fn new(buf: &'a [u8], pos: usize) -> Self {
        Self { buf, pos }
    }

    const fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        if self.left() < n {
            return Err(DecodeError::new(format!(
                "raknet {what} cut short: needs {n} bytes at offset {}, the datagram has {}",
                self.pos,
                self.buf.len()
            )));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn u8(&mut self, what: &str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }

    fn u16_be(&mut self, what: &str) -> Result<u16, DecodeError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u24_le(&mut self, what: &str) -> Result<u32, DecodeError> {
        let b = self.take(3, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], 0]))
    }

    fn u32_be(&mut self, what: &str) -> Result<u32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// What one datagram is, before any per-flow state.
enum Wire {
    /// An offline message: the control it counts as.
    Offline(&'static str),
    /// An ACK or NAK.
    Ack,
    /// A data datagram: its sequence number and frames.
    Data { number: u32, frames: Vec<Frame> },
}

/// Where an offline message with this id carries the magic, and what it counts as.
fn offline_kind(id: u8) -> Option<(usize, &'static str)> {
    // The offsets follow RakPeer.cpp's offline check: after the id and, for the pings, a u64
    // time; for the pong a u64 time and the u64 GUID; for the out-of-band message the GUID.
    Some(match id {
        0x01 | 0x02 => (9, "ping"),
        0x1c => (17, "ping"),
        0x0d => (9, "offline"),
        // Open connection request/reply 1 and 2, attempt failed, already connected, no free
        // incoming connections, banned, IP recently connected.
        0x05..=0x08 | 0x11 | 0x12 | 0x14 | 0x17 | 0x1a => (1, "handshake"),
        // Incompatible protocol version: the id, the version, then the magic.
        0x19 => (2, "handshake"),
        _ => return None,
    })
}

fn offline(payload: &[u8]) -> Option<&'static str> {
    let (at, kind) = offline_kind(*payload.first()?)?;
    (payload.get(at..at + OFFLINE_MAGIC.len())? == OFFLINE_MAGIC).then_some(kind)
}

/// Reads an ACK or NAK range list from `cur` to the end of the datagram.
fn ranges(mut cur: Cursor<'_>, what: &str) -> Result<(), DecodeError> {
    let count = cur.u16_be(&format!("{what} record count"))?;
    if count == 0 {
        return Err(DecodeError::new(format!("raknet {what} with no records")));
    }
    // Each record is at least 4 bytes: a count that cannot fit is a lie, said as such.
    if usize::from(count) * 4 > cur.left() {
        return Err(DecodeError::new(format!(
            "raknet {what} claims {count} records but only {} bytes follow",
            cur.left()
        )));
    }
    for i in 0..count {
        let single = cur.u8(&format!("{what} record {i}"))?;
        let min = cur.u24_le(&format!("{what} record {i}"))?;
        match single {
            1 => {}
            0 => {
                let max = cur.u24_le(&format!("{what} record {i} maximum"))?;
                if max < min {
                    return Err(DecodeError::new(format!(
                        "raknet {what} record {i}: range {min}..{max} runs backwards"
                    )));
                }
            }
            other => {
                return Err(DecodeError::new(format!(
                    "raknet {what} record {i}: single-number byte is {other}, not 0 or 1"
                )));
            }
        }
    }
    if cur.left() != 0 {
        return Err(DecodeError::new(format!(
            "raknet {what}: {} bytes after its {count} records",
            cur.left()
        )));
    }
    Ok(())
}

/// Reads one frame header and skips its payload.
fn frame(cur: &mut Cursor<'_>) -> Result<Frame, DecodeError> {
    let at = cur.pos;
    let head = cur.u8("frame header")?;
    if head & 0x0f != 0 {
        return Err(DecodeError::new(format!(
            "raknet frame at offset {at}: padding bits of its first byte are set (0x{head:02x})"
        )));
    }
    let reliability = Reliability::from_bits(head >> 5);
    let has_split = head & 0x10 != 0;
    let bits = cur.u16_be("frame length")?;
    if bits == 0 {
        return Err(DecodeError::new(format!(
            "raknet frame at offset {at} has a length of 0 bits"
        )));
    }
    let reliable_index = if reliability.is_reliable() {
        Some(cur.u24_le("reliable message index")?)
    } else {
        None
    };
    let sequencing_index = if reliability.is_sequenced() {
        Some(cur.u24_le("sequencing index")?)
    } else {
        None
    };
    let ordering = if reliability.is_ordered() {
        let index = cur.u24_le("ordering index")?;
        let channel = cur.u8("ordering channel")?;
        if channel >= CHANNELS {
            return Err(DecodeError::new(format!(
                "raknet frame at offset {at}: ordering channel {channel} is not below {CHANNELS}"
            )));
        }
        Some((index, channel))
    } else {
        None
    };
    let split = if has_split {
        let count = cur.u32_be("split count")?;
        let id = cur.u16_be("split id")?;
        let index = cur.u32_be("split index")?;
        if count == 0 || count > MAX_SPLIT_COUNT {
            return Err(DecodeError::new(format!(
                "raknet split {id} claims {count} parts (1..={MAX_SPLIT_COUNT} allowed)"
            )));
        }
        if index >= count {
            return Err(DecodeError::new(format!(
                "raknet split {id}: part index {index} is not below its count {count}"
            )));
        }
        Some(Split { count, id, index })
    } else {
        None
    };
    let len = usize::from(bits).div_ceil(8);
    if len > cur.left() {
        return Err(DecodeError::new(format!(
            "raknet frame at offset {at}: {bits} bits ({len} bytes) run past the datagram ({} bytes left)",
            cur.left()
        )));
    }
    let offset = cur.pos;
    cur.pos += len;
    Ok(Frame {
        reliability,
        reliable_index,
        sequencing_index,
        ordering,
        split,
        offset,
        len,
    })
}

/// Reads a datagram's framing, without per-flow state.
fn wire(payload: &[u8]) -> Result<Wire, DecodeError> {
    let Some(&first) = payload.first() else {
        return Err(DecodeError::new("raknet datagram is empty"));
    };
    if first & flag::VALID == 0 {
        return offline(payload).map(Wire::Offline).ok_or_else(|| {
            DecodeError::new(format!(
                "not raknet: first byte 0x{first:02x} has no valid flag and no offline magic follows"
            ))
        });
    }
    let mut cur = Cursor::new(payload, 1);
    if first & flag::ACK != 0 {
        if first & !(flag::VALID | flag::ACK | flag::HAS_B_AND_AS) != 0 {
            return Err(DecodeError::new(format!(
                "raknet ack: padding bits of its first byte are set (0x{first:02x})"
            )));
        }
        if first & flag::HAS_B_AND_AS != 0 {
            cur.take(4, "ack arrival rate")?;
        }
        ranges(cur, "ack")?;
        return Ok(Wire::Ack);
    }
    if first & flag::NAK != 0 {
        if first != flag::VALID | flag::NAK {
            return Err(DecodeError::new(format!(
                "raknet nak: padding bits of its first byte are set (0x{first:02x})"
            )));
        }
        ranges(cur, "nak")?;
        return Ok(Wire::Ack);
    }
    let known = flag::VALID | flag::PACKET_PAIR | flag::CONTINUOUS_SEND | flag::NEEDS_B_AND_AS;
    if first & !known != 0 {
        return Err(DecodeError::new(format!(
            "raknet data datagram: padding bits of its first byte are set (0x{first:02x})"
        )));
    }
    let number = cur.u24_le("datagram sequence number")?;
    let mut frames = Vec::new();
    // RakNet stops reading frames when fewer than 3 bytes are left, and sends at least one.
    while cur.left() >= 3 || frames.is_empty() {
        frames.push(frame(&mut cur)?);
    }
    Ok(Wire::Data { number, frames })
}

/// What an application payload's first bytes make it: control, or a message with an
/// optional send time.
fn classify(head: &[u8]) -> Result<Option<SendStamp>, &'static str> {
    match head.first() {
        // Connected ping, pong, detect-lost-connections.
        Some(0x00 | 0x03 | 0x04) => Err("ping"),
        // Connection request, request accepted, new incoming connection.
        Some(0x09 | 0x10 | 0x13) => Err("handshake"),
        Some(0x15) => Err("disconnect"),
        Some(0x1b) if head.len() >= 9 => {
            let mut t = [0; 8];
            t.copy_from_slice(&head[1..9]);
            Ok(Some(SendStamp::Ticks {
                counter: Counter::new(u64::from_be_bytes(t), 64),
                unit_ns: 1_000_000,
            }))
        }
        _ => Ok(None),
    }
}

/// The bytes of an application payload kept to classify it (`ID_TIMESTAMP` and its time).
const HEAD: usize = 9;

/// A split message waiting for its other parts.
#[derive(Debug)]
struct Pending {
    count: u32,
    /// One bit per part received.
    got: Vec<u64>,
    received: u32,
    len: usize,
    /// The frame fields of the first part to arrive (all parts carry the same).
    reliability: Reliability,
    sequencing_index: Option<u32>,
    ordering: Option<(u32, u8)>,
    /// The first bytes of part 0, once it arrived.
    head: Vec<u8>,
    /// When it started, in parts seen by this flow (for eviction).
    born: u64,
}

/// What became of one datagram number on the unreliable lane.
#[derive(Clone, Copy, Debug)]
enum Slot {
    /// Not seen: the seq kept for the unreliable message it most likely held.
    Missing(u64),
    /// Seen, its unreliable messages numbered from `first`.
    Seen { first: u64, count: u32 },
}

/// One RakNet flow's parser.
#[derive(Debug, Default)]
pub struct RaknetParser {
    /// The datagram number after the highest seen.
    next_datagram: Option<u32>,
    /// The next seq on the unreliable lane.
    unreliable: u64,
    /// Recent datagram numbers and what they hold on the unreliable lane, oldest first.
    datagrams: VecDeque<(u32, Slot)>,
    /// The next seq on the reliable lane.
    reliable: u64,
    /// Reliable message indexes seen, with the reliable-lane seq their message took (if it
    /// is on that lane); `reliable_order` keeps them oldest first.
    reliable_seen: HashMap<u32, Option<u64>>,
    reliable_order: VecDeque<u32>,
    splits: HashMap<u16, Pending>,
    completed: VecDeque<u16>,
    parts: u64,
}

/// How the unreliable messages of the datagram being parsed are numbered.
enum Numbering {
    /// Fresh seqs.
    Fresh,
    /// The first takes the kept seq, the rest fresh ones.
    Kept(u64),
    /// A copy of a datagram seen before: the same seqs again (the first `count`).
    Again { first: u64, count: u32 },
}

impl RaknetParser {
    /// How many split messages are incomplete (bounded by [`MAX_PENDING_SPLITS`]).
    pub fn pending_splits(&self) -> usize {
        self.splits.len()
    }

    /// Takes a data datagram's number into account; says how its unreliable messages count.
    fn datagram(&mut self, number: u32) -> Numbering {
        let Some(next) = self.next_datagram else {
            self.next_datagram = Some((number + 1) % U24);
            return Numbering::Fresh;
        };
        let ahead = number.wrapping_sub(next) % U24;
        if ahead < U24 / 2 {
            if ahead as usize > DATAGRAM_WINDOW {
                // A jump too long to remember number by number: count it, keep nothing.
                self.datagrams.clear();
                self.unreliable += u64::from(ahead);
            } else {
                // Numbers never seen before: appended without a search.
                for i in 0..ahead {
                    self.datagrams
                        .push_back(((next + i) % U24, Slot::Missing(self.unreliable)));
                    self.unreliable += 1;
                }
                while self.datagrams.len() > DATAGRAM_WINDOW {
                    self.datagrams.pop_front();
                }
            }
            self.next_datagram = Some((number + 1) % U24);
            return Numbering::Fresh;
        }
        match self.datagrams.iter().rev().find(|(n, _)| *n == number) {
            Some((_, Slot::Missing(kept))) => Numbering::Kept(*kept),
            Some((_, Slot::Seen { first, count })) => Numbering::Again {
                first: *first,
                count: *count,
            },
            None => Numbering::Fresh,
        }
    }

    /// Notes what datagram `number` holds. The newest number is appended without a search
    /// (the common case); an older one is updated where it is.
    fn remember(&mut self, number: u32, slot: Slot) {
        let newest = self.next_datagram == Some((number + 1) % U24);
        if !newest && let Some(entry) = self.datagrams.iter_mut().rev().find(|(n, _)| *n == number)
        {
            entry.1 = slot;
            return;
        }
        self.datagrams.push_back((number, slot));
        if self.datagrams.len() > DATAGRAM_WINDOW {
            self.datagrams.pop_front();
        }
    }

    /// Notes a reliable message index; says whether it was seen before and, if so, the
    /// reliable-lane seq its first copy took.
    fn reliable_index(&mut self, index: u32) -> Option<Option<u64>> {
        if let Some(seq) = self.reliable_seen.get(&index) {
            return Some(*seq);
        }
        self.reliable_seen.insert(index, None);
        self.reliable_order.push_back(index);
        if self.reliable_order.len() > RELIABLE_WINDOW
            && let Some(old) = self.reliable_order.pop_front()
        {
            self.reliable_seen.remove(&old);
        }
        None
    }

    /// Adds one split part; returns the completed message's fields when it was the last.
    fn split_part(
        &mut self,
        frame: &Frame,
        split: Split,
        payload: &[u8],
    ) -> Result<Option<Pending>, DecodeError> {
        if self.completed.contains(&split.id) {
            return Ok(None);
        }
        self.parts += 1;
        if !self.splits.contains_key(&split.id) && self.splits.len() >= MAX_PENDING_SPLITS {
            // Drop the oldest incomplete message: it has waited longest and most likely lost
            // a part for good.
            if let Some(old) = self
                .splits
                .iter()
                .min_by_key(|(_, p)| p.born)
                .map(|(k, _)| *k)
            {
                self.splits.remove(&old);
            }
        }
        let born = self.parts;
        let pending = self.splits.entry(split.id).or_insert_with(|| Pending {
            count: split.count,
            got: vec![0; split.count.div_ceil(64) as usize],
            received: 0,
            len: 0,
            reliability: frame.reliability,
            sequencing_index: frame.sequencing_index,
            ordering: frame.ordering,
            head: Vec::new(),
            born,
        });
        if pending.count != split.count {
            return Err(DecodeError::new(format!(
                "raknet split {}: a part claims {} parts, an earlier one {}",
                split.id, split.count, pending.count
            )));
        }
        let (word, bit) = ((split.index / 64) as usize, split.index % 64);
        if pending.got[word] & (1 << bit) != 0 {
            return Ok(None);
        }
        pending.got[word] |= 1 << bit;
        pending.received += 1;
        pending.len += payload.len();
        if split.index == 0 {
            pending.head = payload[..payload.len().min(HEAD)].to_vec();
        }
        if pending.received < pending.count {
            return Ok(None);
        }
        self.completed.push_back(split.id);
        if self.completed.len() > COMPLETED_WINDOW {
            self.completed.pop_front();
        }
        Ok(self.splits.remove(&split.id))
    }

    /// The lane, lane name and seq of a message with these fields (the reliable and
    /// unreliable lanes take their next seq).
    fn lane(
        &mut self,
        reliability: Reliability,
        sequencing_index: Option<u32>,
        ordering: Option<(u32, u8)>,
        numbering: &mut Numbering,
        unreliable_count: &mut u32,
    ) -> (u32, String, Counter) {
        match (reliability, ordering, sequencing_index) {
            (Reliability::ReliableOrdered, Some((index, channel)), _) => (
                u32::from(channel),
                format!("channel {channel} ordered"),
                Counter::new(u64::from(index), 24),
            ),
            (_, Some((_, channel)), Some(index)) => (
                lane_sequenced(channel),
                format!("channel {channel} sequenced"),
                Counter::new(u64::from(index), 24),
            ),
            (Reliability::Unreliable, _, _) => {
                let seq = match numbering {
                    Numbering::Kept(kept) => {
                        let seq = *kept;
                        *numbering = Numbering::Fresh;
                        seq
                    }
                    Numbering::Again { first, count } if *unreliable_count < *count => {
                        *first + u64::from(*unreliable_count)
                    }
                    _ => {
                        self.unreliable += 1;
                        self.unreliable - 1
                    }
                };
                *unreliable_count += 1;
                (LANE_UNRELIABLE, "unreliable".into(), Counter::new(seq, 64))
            }
            _ => {
                self.reliable += 1;
                (
                    LANE_RELIABLE,
                    "reliable".into(),
                    Counter::new(self.reliable - 1, 64),
                )
            }
        }
    }
}

impl Parser for RaknetParser {
    fn parse(&mut self, payload: &[u8]) -> Result<Datagram, DecodeError> {
        let (number, frames) = match wire(payload)? {
            Wire::Offline(kind) => {
                return Ok(Datagram {
                    messages: Vec::new(),
                    control: vec![kind],
                });
            }
            Wire::Ack => {
                return Ok(Datagram {
                    messages: Vec::new(),
                    control: vec!["ack"],
                });
            }
            Wire::Data { number, frames } => (number, frames),
        };
        let mut numbering = self.datagram(number);
        let kept = matches!(numbering, Numbering::Kept(_));
        let again = matches!(numbering, Numbering::Again { .. });
        let mut first_unreliable = None;
        let mut unreliable_count = 0u32;
        let mut out = Datagram::default();
        for f in &frames {
            let bytes = &payload[f.offset..f.offset + f.len];
            let seen = f.reliable_index.and_then(|i| self.reliable_index(i));
            if let Some(split) = f.split {
                if seen.is_some() {
                    // A retransmitted part: its message was (or will be) built from the first.
                    out.control.push("fragment");
                    continue;
                }
                let Some(done) = self.split_part(f, split, bytes)? else {
                    out.control.push("fragment");
                    continue;
                };
                match classify(&done.head) {
                    Err(kind) => out.control.push(kind),
                    Ok(send) => {
                        // A reassembled message has no datagram of its own: on the unreliable
                        // lane it takes a fresh seq.
                        let mut fresh = Numbering::Fresh;
                        let mut n = 0;
                        let (lane, lane_name, seq) = self.lane(
                            done.reliability,
                            done.sequencing_index,
                            done.ordering,
                            &mut fresh,
                            &mut n,
                        );
                        out.messages.push(Message {
                            lane,
                            lane_name,
                            seq,
                            send,
                            len: done.len,
                            retransmit: false,
                        });
                    }
                }
                continue;
            }
            let send = match classify(&bytes[..bytes.len().min(HEAD)]) {
                Err(kind) => {
                    out.control.push(kind);
                    continue;
                }
                Ok(send) => send,
            };
            let (lane, lane_name, seq) = if f.reliability == Reliability::Reliable
                && let Some(Some(first)) = seen
            {
                (LANE_RELIABLE, "reliable".into(), Counter::new(first, 64))
            } else {
                self.lane(
                    f.reliability,
                    f.sequencing_index,
                    f.ordering,
                    &mut numbering,
                    &mut unreliable_count,
                )
            };
            if lane == LANE_UNRELIABLE && first_unreliable.is_none() {
                first_unreliable = Some(seq.value);
            }
            if lane == LANE_RELIABLE
                && seen.is_none()
                && let Some(index) = f.reliable_index
            {
                self.reliable_seen.insert(index, Some(seq.value));
            }
            out.messages.push(Message {
                lane,
                lane_name,
                seq,
                send,
                len: f.len,
                retransmit: seen.is_some(),
            });
        }
        // Remember how this datagram numbered its unreliable messages, for a copy of it. After
        // a kept seq the others were fresh, so only the first can be given again.
        if !again && (kept || unreliable_count > 0) {
            let slot = Slot::Seen {
                first: first_unreliable.unwrap_or(0),
                count: if kept {
                    unreliable_count.min(1)
                } else {
                    unreliable_count
                },
            };
            self.remember(number, slot);
        }
        Ok(out)
    }
}

/// Whether a datagram could be RakNet's: an offline message with its magic, or a connected
/// datagram whose flags, ranges or frames fit it exactly (no per-flow state).
pub fn resembles(payload: &[u8]) -> bool {
    wire(payload).is_ok()
}

#[cfg(test)]
mod tests;
