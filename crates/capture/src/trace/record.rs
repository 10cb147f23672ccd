//! One trace record: what it stands for ([`RecordKind`]), which way it went ([`Direction`]),
//! and the MessagePack array it is stored as.
//!
//! Kind and direction are stored as one byte each. Codes this version does not know are kept
//! as [`RecordKind::Other`] and [`Direction::Other`] rather than refused or folded into a known
//! value: `docs/trace-format.md` reserves new kinds for later versions (readers skip them), and
//! a record read and written again must give the same bytes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::time::Nanos;

/// What a record stands for.
///
/// Stored as one byte ([`RecordKind::code`]). Two kinds are equal when their codes are, so
/// `Other(0)` is [`RecordKind::Received`]; readers never make such a value.
#[derive(Clone, Copy, Debug)]
pub enum RecordKind {
    /// A packet received at [`Record::time`] on the header's clock.
    Received,
    /// Ground truth: a packet as the sender sent it; [`Record::time`] is the send time on the
    /// header's clock when known. Written by synthetic generators and sender logs, including
    /// for packets the network lost.
    Sent,
    /// Capture bookkeeping: a MessagePack map ([`CaptureStats`]) in the payload, written by live
    /// capture at least once a second and at the end: drop counters and a paired
    /// (realtime, monotonic) clock sample.
    Stats,
    /// A kind this version does not know (a code other than 0, 1, 2): decoders skip it, and
    /// writing the record again keeps the code.
    Other(u8),
}

/// What a [`RecordKind::Stats`] record carries. Counters are cumulative since the capture
/// started, so the last one read is the whole story (or as much as survived a crash).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CaptureStats {
    /// `CLOCK_REALTIME` when the record was written, ns.
    pub realtime_ns: i64,
    /// `CLOCK_MONOTONIC` at the same instant, ns: a step of the realtime clock (NTP) shows as
    /// a change of `realtime_ns − monotonic_ns` between two stats records.
    pub monotonic_ns: i64,
    /// Datagrams received from the socket(s).
    pub received: u64,
    /// Datagrams the kernel dropped because the socket's receive queue was full (SO_RXQ_OVFL).
    pub kernel_drops: u64,
    /// Datagrams lost between the socket and the file because the writer's queue was full.
    pub queue_drops: u64,
    /// Datagrams stamped in user space because the kernel gave no timestamp.
    pub user_timestamps: u64,
    /// Whether this is the record written when the capture ended cleanly.
    pub last: bool,
}

impl CaptureStats {
    /// The record carrying these stats.
    pub fn to_record(&self, time: Nanos) -> Record {
        let payload = rmp_serde::to_vec_named(self).unwrap_or_default();
        Record {
            kind: RecordKind::Stats,
            ..Record::received(time, payload)
        }
    }

    /// Reads the stats of a [`RecordKind::Stats`] record.
    pub fn from_record(rec: &Record) -> Option<Self> {
        Self::from_payload(&rec.payload)
    }

    /// Reads the stats from a [`RecordKind::Stats`] record's payload.
    pub fn from_payload(payload: &[u8]) -> Option<Self> {
        rmp_serde::from_slice(payload).ok()
    }
}

impl RecordKind {
    /// The byte stored in the file.
    pub const fn code(self) -> u8 {
        match self {
            Self::Received => 0,
            Self::Sent => 1,
            Self::Stats => 2,
            Self::Other(code) => code,
        }
    }

    /// The kind for a stored byte.
    pub const fn from_code(code: u8) -> Self {
        match code {
            0 => Self::Received,
            1 => Self::Sent,
            2 => Self::Stats,
            other => Self::Other(other),
        }
    }
}

/// Which way a packet travelled, for traces recorded by the relay.
///
/// Stored as one byte ([`Direction::code`]); equal when the codes are, like [`RecordKind`].
#[derive(Clone, Copy, Debug)]
pub enum Direction {
    /// Not known, or a plain listener (everything is inbound).
    Unknown,
    /// From the client to the upstream server.
    ToUpstream,
    /// From the upstream server to the client.
    ToClient,
    /// A code this version does not know (other than 0, 1, 2). Kept, not read as
    /// [`Direction::Unknown`]: decoders keep streams of different directions apart, as they did
    /// when the byte was compared raw, and writing the record again keeps the code.
    Other(u8),
}

impl Direction {
    /// The byte stored in the file.
    pub const fn code(self) -> u8 {
        match self {
            Self::Unknown => 0,
            Self::ToUpstream => 1,
            Self::ToClient => 2,
            Self::Other(code) => code,
        }
    }

    /// A name for output: `unknown`, `to-upstream`, `to-client`, or `code-N` for a code
    /// this version does not know.
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        match self {
            Self::Unknown => "unknown".into(),
            Self::ToUpstream => "to-upstream".into(),
            Self::ToClient => "to-client".into(),
            Self::Other(code) => format!("code-{code}").into(),
        }
    }

    /// The direction for a stored byte.
    pub const fn from_code(code: u8) -> Self {
        match code {
            0 => Self::Unknown,
            1 => Self::ToUpstream,
            2 => Self::ToClient,
            other => Self::Other(other),
        }
    }
}

/// Equality, hashing and the serde form of a one-byte code enum: all by the stored byte, so a
/// typed field writes exactly the bytes the raw `u8` field did.
macro_rules! by_code {
    ($ty:ty) => {
        impl PartialEq for $ty {
            fn eq(&self, other: &Self) -> bool {
                self.code() == other.code()
            }
        }

        impl Eq for $ty {}

        impl std::hash::Hash for $ty {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.code().hash(state);
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u8(self.code())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                u8::deserialize(d).map(Self::from_code)
            }
        }
    };
}

by_code!(RecordKind);
by_code!(Direction);

/// Bits of [`Record::flags`].
pub mod flags {
    /// The time came from the kernel (SO_TIMESTAMPNS) or the capture file, not user space.
    pub const KERNEL_TIMESTAMP: u32 = 1 << 0;
    /// The packet was duplicated on purpose by the relay's impairment model.
    pub const INJECTED_DUPLICATE: u32 = 1 << 1;
}

/// A UDP endpoint stored as 6 bytes (IPv4 + port) or 18 bytes (IPv6 + port), big-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint(pub SocketAddr);

impl Endpoint {
    /// Writes the 6- or 18-byte form into `buf` and returns its length.
    pub(super) fn encode(&self, buf: &mut [u8; 18]) -> usize {
        let n = match self.0.ip() {
            IpAddr::V4(ip) => {
                buf[..4].copy_from_slice(&ip.octets());
                4
            }
            IpAddr::V6(ip) => {
                buf[..16].copy_from_slice(&ip.octets());
                16
            }
        };
        buf[n..n + 2].copy_from_slice(&self.0.port().to_be_bytes());
        n + 2
    }
}

impl Serialize for Endpoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 18];
        let n = self.encode(&mut buf);
        s.serialize_bytes(&buf[..n])
    }
}

impl<'de> Deserialize<'de> for Endpoint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes: serde_bytes::ByteBuf = Deserialize::deserialize(d)?;
        let port = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
        match bytes.len() {
            6 => {
                let ip = Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]);
                Ok(Self(SocketAddr::new(ip.into(), port(&bytes[4..]))))
            }
            18 => {
                let mut octets = [0u8; 16];
                octets.copy_from_slice(&bytes[..16]);
                let ip = Ipv6Addr::from(octets);
                Ok(Self(SocketAddr::new(ip.into(), port(&bytes[16..]))))
            }
            n => Err(serde::de::Error::custom(format!(
                "endpoint of {n} bytes (expected 6 or 18)"
            ))),
        }
    }
}

/// One packet: when it arrived, where from, and its (possibly truncated) payload.
///
/// Stored as a MessagePack array in field order; see `docs/trace-format.md`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Arrival time on the header's clock (send time for [`RecordKind::Sent`]).
    pub time: Nanos,
    /// What the record stands for (one byte on disk).
    pub kind: RecordKind,
    /// Bits from [`flags`].
    pub flags: u32,
    /// Which way the packet went (one byte on disk).
    pub direction: Direction,
    /// Source address, when known.
    pub src: Option<Endpoint>,
    /// Destination address, when known.
    pub dst: Option<Endpoint>,
    /// The datagram's length on the wire (payload bytes before any snap-length truncation).
    pub orig_len: u32,
    /// The payload, at most the capture's snap length.
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
}

impl Record {
    /// A received packet with the whole payload kept.
    pub fn received(time: Nanos, payload: Vec<u8>) -> Self {
        Self {
            time,
            kind: RecordKind::Received,
            flags: 0,
            direction: Direction::Unknown,
            src: None,
            dst: None,
            orig_len: u32::try_from(payload.len()).unwrap_or(u32::MAX),
            payload,
        }
    }

    /// A ground-truth record of a packet as sent.
    pub fn sent(time: Nanos, payload: Vec<u8>) -> Self {
        Self {
            kind: RecordKind::Sent,
            ..Self::received(time, payload)
        }
    }

    /// Appends the record's MessagePack encoding to `out`: byte for byte what `rmp_serde`
    /// makes of the derived `Serialize` (checked by a property test), without serde's per-field
    /// dispatch, since writing is on the capture hot path.
    pub fn emit(&self, out: &mut Vec<u8>) {
        use rmp::encode as mp;
        // Writing into a Vec cannot fail.
        let _ = mp::write_array_len(out, 8);
        let _ = mp::write_sint(out, self.time.as_nanos());
        let _ = mp::write_uint(out, u64::from(self.kind.code()));
        let _ = mp::write_uint(out, u64::from(self.flags));
        let _ = mp::write_uint(out, u64::from(self.direction.code()));
        for endpoint in [self.src, self.dst] {
            match endpoint {
                None => {
                    let _ = mp::write_nil(out);
                }
                Some(e) => {
                    let mut buf = [0u8; 18];
                    let n = e.encode(&mut buf);
                    let _ = mp::write_bin(out, &buf[..n]);
                }
            }
        }
        let _ = mp::write_uint(out, u64::from(self.orig_len));
        let _ = mp::write_bin(out, &self.payload);
    }

    /// What the record stands for.
    pub fn kind(&self) -> RecordKind {
        self.kind
    }

    /// Which way the packet went.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// Whether the payload was cut to a snap length.
    pub fn is_truncated(&self) -> bool {
        (self.payload.len() as u64) < u64::from(self.orig_len)
    }
}

/// One packet borrowed rather than owned: a [`Record`] whose payload is a slice, as
/// [`Reader::next_ref`](super::Reader::next_ref) hands it out of its read buffer (no
/// allocation per record) and as [`Record::view`] lends an owned one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Arrival time on the header's clock (send time for [`RecordKind::Sent`]).
    pub time: Nanos,
    /// What the record stands for.
    pub kind: RecordKind,
    /// Bits from [`flags`].
    pub flags: u32,
    /// Which way the packet went.
    pub direction: Direction,
    /// Source address, when known.
    pub src: Option<Endpoint>,
    /// Destination address, when known.
    pub dst: Option<Endpoint>,
    /// The datagram's length on the wire.
    pub orig_len: u32,
    /// The payload, at most the capture's snap length.
    pub payload: &'a [u8],
}

impl RecordRef<'_> {
    /// What the record stands for.
    pub fn kind(&self) -> RecordKind {
        self.kind
    }

    /// An owned copy (the payload copied).
    pub fn to_record(&self) -> Record {
        Record {
            time: self.time,
            kind: self.kind,
            flags: self.flags,
            direction: self.direction,
            src: self.src,
            dst: self.dst,
            orig_len: self.orig_len,
            payload: self.payload.to_vec(),
        }
    }
}

impl Record {
    /// The record borrowed: its fields copied, its payload lent.
    pub fn view(&self) -> RecordRef<'_> {
        RecordRef {
            time: self.time,
            kind: self.kind,
            flags: self.flags,
            direction: self.direction,
            src: self.src,
            dst: self.dst,
            orig_len: self.orig_len,
            payload: &self.payload,
        }
    }
}
