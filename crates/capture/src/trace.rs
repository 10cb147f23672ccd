//! Trace format v1: a MessagePack header followed by a stream of MessagePack packet records.
//!
//! The header is a map (named fields), so fields can be added without breaking old readers;
//! records are arrays (compact: ~25 bytes of framing per packet). See `docs/trace-format.md`.
//!
//! The format is append-only and crash-tolerant: a writer killed at any byte leaves a file
//! whose complete records all read back. [`Reader`] stops at a cut-off tail and reports its
//! length ([`Reader::trailing_bytes`]); a record that is malformed (not merely cut short) is an
//! [`Error::CorruptRecord`] naming its byte offset.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Error;
use crate::time::Nanos;

/// The value of [`Header::format`] in every jitterlab trace.
pub const FORMAT_NAME: &str = "jitterlab-trace";
/// The newest format version this library reads and the one it writes.
pub const FORMAT_VERSION: u32 = 1;
/// The file name extension used for traces.
pub const EXTENSION: &str = "jtr";

/// Which clock the records' times are on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clock {
    /// The clock's name, e.g. `CLOCK_MONOTONIC`, `CLOCK_REALTIME`, `pcap`, `csv`, `synthetic`.
    pub name: String,
    /// `CLOCK_REALTIME − this clock` at the start of the trace, in ns, when known.
    #[serde(default)]
    pub realtime_offset_ns: Option<i64>,
}

/// Where the trace's packets came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// One of `live`, `relay`, `pcap`, `csv`, `synthetic`.
    pub kind: String,
    /// Free text: the listening address, the imported file name, the generator's model.
    #[serde(default)]
    pub detail: String,
}

/// The trace header: what the file is and how to read its records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// The format version; readers refuse versions newer than [`FORMAT_VERSION`].
    pub version: u32,
    /// The program that wrote the file, e.g. `jitterlab 0.1.0`.
    pub tool: String,
    /// Wall-clock creation time, nanoseconds since the Unix epoch (UTC).
    pub created_unix_ns: i64,
    /// The same instant as RFC 3339 text, for people reading a dump.
    pub created_utc: String,
    /// The clock that record times use.
    pub clock: Clock,
    /// Where the data came from.
    pub source: Source,
    /// The payload decoder to use by default: `rtp`, `probe`, or `layout:SPEC`.
    #[serde(default)]
    pub decoder: Option<String>,
    /// The capture's link type, when imported from a capture file.
    #[serde(default)]
    pub link: Option<String>,
    /// Decoder hints, e.g. `channels = "x,y"` or `clock_rate.96 = "90000"`.
    #[serde(default)]
    pub hints: BTreeMap<String, String>,
    /// Free-form notes.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Header {
    /// A header for a new trace, stamped with the current wall-clock time.
    pub fn new(clock: Clock, source: Source) -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let mut header = Self::at(clock, source, now.as_nanos() as i64);
        header.created_utc = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        header
    }

    /// A header stamped with a given creation time (for reproducible synthetic traces).
    pub fn at(clock: Clock, source: Source, created_unix_ns: i64) -> Self {
        let created = UNIX_EPOCH + std::time::Duration::from_nanos(created_unix_ns.max(0) as u64);
        Self {
            format: FORMAT_NAME.to_owned(),
            version: FORMAT_VERSION,
            tool: concat!("jitterlab ", env!("CARGO_PKG_VERSION")).to_owned(),
            created_unix_ns,
            created_utc: humantime::format_rfc3339_millis(created).to_string(),
            clock,
            source,
            decoder: None,
            link: None,
            hints: BTreeMap::new(),
            notes: Vec::new(),
        }
    }
}

/// What a record stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// A kind this version does not know; readers skip it.
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
            kind: RecordKind::Stats.code(),
            ..Record::received(time, payload)
        }
    }

    /// Reads the stats of a [`RecordKind::Stats`] record.
    pub fn from_record(rec: &Record) -> Option<Self> {
        rmp_serde::from_slice(&rec.payload).ok()
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Not known, or a plain listener (everything is inbound).
    Unknown,
    /// From the client to the upstream server.
    ToUpstream,
    /// From the upstream server to the client.
    ToClient,
}

impl Direction {
    /// The byte stored in the file.
    pub const fn code(self) -> u8 {
        match self {
            Self::Unknown => 0,
            Self::ToUpstream => 1,
            Self::ToClient => 2,
        }
    }

    /// The direction for a stored byte (unknown codes read as [`Direction::Unknown`]).
    pub const fn from_code(code: u8) -> Self {
        match code {
            1 => Self::ToUpstream,
            2 => Self::ToClient,
            _ => Self::Unknown,
        }
    }
}

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
    fn encode(&self, buf: &mut [u8; 18]) -> usize {
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
    /// [`RecordKind::code`].
    pub kind: u8,
    /// Bits from [`flags`].
    pub flags: u32,
    /// [`Direction::code`].
    pub direction: u8,
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
            kind: RecordKind::Received.code(),
            flags: 0,
            direction: Direction::Unknown.code(),
            src: None,
            dst: None,
            orig_len: u32::try_from(payload.len()).unwrap_or(u32::MAX),
            payload,
        }
    }

    /// A ground-truth record of a packet as sent.
    pub fn sent(time: Nanos, payload: Vec<u8>) -> Self {
        Self {
            kind: RecordKind::Sent.code(),
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
        let _ = mp::write_uint(out, u64::from(self.kind));
        let _ = mp::write_uint(out, u64::from(self.flags));
        let _ = mp::write_uint(out, u64::from(self.direction));
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
        RecordKind::from_code(self.kind)
    }

    /// Which way the packet went.
    pub fn direction(&self) -> Direction {
        Direction::from_code(self.direction)
    }

    /// Whether the payload was cut to a snap length.
    pub fn is_truncated(&self) -> bool {
        (self.payload.len() as u64) < u64::from(self.orig_len)
    }
}

/// Writes a trace: the header at creation, then one record per call.
///
/// Records go straight to the inner writer; wrap it in a `BufWriter` and call
/// [`Writer::flush`] on a timer to bound what a crash can lose.
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    records: u64,
    /// One record is encoded here, then written with a single call (MessagePack encoders
    /// issue a write per field, which costs more than the encoding through most writers).
    scratch: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Writes `header` and returns a writer for the records.
    ///
    /// # Errors
    /// I/O errors from `out`.
    pub fn new(mut out: W, header: &Header) -> Result<Self, Error> {
        rmp_serde::encode::write_named(&mut out, header).map_err(encode_error)?;
        Ok(Self {
            out,
            records: 0,
            scratch: Vec::with_capacity(256),
        })
    }

    /// Appends one record.
    ///
    /// # Errors
    /// I/O errors from the inner writer.
    pub fn write(&mut self, record: &Record) -> Result<(), Error> {
        self.scratch.clear();
        record.emit(&mut self.scratch);
        self.out.write_all(&self.scratch)?;
        self.records += 1;
        Ok(())
    }

    /// How many records were written.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes the inner writer.
    ///
    /// # Errors
    /// I/O errors from the inner writer.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.out.flush().map_err(Error::Io)
    }

    /// The inner writer (not flushed).
    pub fn into_inner(self) -> W {
        self.out
    }
}

fn encode_error(err: rmp_serde::encode::Error) -> Error {
    match err {
        rmp_serde::encode::Error::InvalidValueWrite(
            rmp::encode::ValueWriteError::InvalidMarkerWrite(e),
        )
        | rmp_serde::encode::Error::InvalidValueWrite(
            rmp::encode::ValueWriteError::InvalidDataWrite(e),
        ) => Error::Io(e),
        other => Error::Io(io::Error::other(other.to_string())),
    }
}

/// The most bytes a header may take: a larger one is refused rather than read into memory.
pub const MAX_HEADER_BYTES: u64 = 16 << 20;

/// The most payload bytes one record may claim. Datagrams are at most 64 KiB; a larger claim
/// means the length field is damaged, and is reported as a corrupt record instead of being
/// read (a damaged length must not swallow the rest of the file into one allocation).
pub const MAX_PAYLOAD_BYTES: usize = 16 << 20;

/// Counts the bytes consumed, so record offsets are exact, and refuses to read past `limit`.
#[derive(Debug)]
struct Counting<R> {
    inner: R,
    pos: u64,
    limit: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = usize::try_from(self.limit.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let n = buf.len().min(room);
        let n = self.inner.read(&mut buf[..n])?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Reads a trace as a stream: memory does not grow with the file.
///
/// Iterating yields records until the end of the file. A tail cut off mid-record ends the
/// iteration cleanly and is reported by [`Reader::trailing_bytes`]; a malformed record yields one
/// [`Error::CorruptRecord`] and ends the iteration. Records are decoded by hand rather than by
/// serde so that every length is checked before anything is allocated for it: a record costs
/// at most its own bytes, and never more than [`MAX_PAYLOAD_BYTES`].
pub struct Reader<R: Read> {
    input: Counting<BufReader<R>>,
    header: Header,
    header_len: u64,
    good_end: u64,
    records: u64,
    trailing: u64,
    done: bool,
}

impl<R: Read> std::fmt::Debug for Reader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("header", &self.header)
            .field("good_end", &self.good_end)
            .field("records", &self.records)
            .finish_non_exhaustive()
    }
}

impl Reader<File> {
    /// Opens a trace file.
    ///
    /// # Errors
    /// I/O errors, [`Error::NotATrace`], [`Error::UnsupportedVersion`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::new(File::open(path)?)
    }
}

impl<R: Read> Reader<R> {
    /// Reads the header from `input` and returns a reader positioned at the first record.
    ///
    /// # Errors
    /// [`Error::NotATrace`] when the input does not start with a jitterlab header (or its
    /// header is longer than [`MAX_HEADER_BYTES`]), [`Error::UnsupportedVersion`] when it is
    /// newer than this library.
    pub fn new(input: R) -> Result<Self, Error> {
        let counting = Counting {
            inner: BufReader::with_capacity(1 << 16, input),
            pos: 0,
            limit: MAX_HEADER_BYTES,
        };
        let mut de = rmp_serde::Deserializer::new(counting);
        let header = match Header::deserialize(&mut de) {
            Ok(h) => h,
            Err(err) if is_eof(&err) && de.get_ref().pos == 0 => {
                return Err(Error::NotATrace {
                    reason: "the file is empty".into(),
                });
            }
            Err(err) if is_eof(&err) && de.get_ref().pos >= MAX_HEADER_BYTES => {
                return Err(Error::NotATrace {
                    reason: format!("the header runs past {MAX_HEADER_BYTES} bytes"),
                });
            }
            Err(err) if is_eof(&err) => {
                return Err(Error::NotATrace {
                    reason: "the header is cut short".into(),
                });
            }
            Err(err) => {
                return Err(Error::NotATrace {
                    reason: format!("no jitterlab header at the start ({err})"),
                });
            }
        };
        if header.format != FORMAT_NAME {
            return Err(Error::NotATrace {
                reason: format!("header names format '{}'", header.format),
            });
        }
        if header.version > FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                found: header.version,
                supported: FORMAT_VERSION,
            });
        }
        let mut input = de.into_inner();
        input.limit = u64::MAX;
        let header_len = input.pos;
        Ok(Self {
            input,
            header,
            header_len,
            good_end: header_len,
            records: 0,
            trailing: 0,
            done: false,
        })
    }

    /// The file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The header's length in bytes (the offset of the first record).
    pub fn header_len(&self) -> u64 {
        self.header_len
    }

    /// How many records were read so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The byte offset just past the last complete record read so far: the length a damaged
    /// file can be cut back to before appending.
    pub fn valid_len(&self) -> u64 {
        self.good_end
    }

    /// After iteration ended: how many bytes at the end did not form a complete record (a
    /// writer stopped mid-record). Zero for a cleanly closed file.
    pub fn trailing_bytes(&self) -> u64 {
        self.trailing
    }

    /// Reads the next record, or `None` at the end of the file.
    ///
    /// # Errors
    /// [`Error::CorruptRecord`] with the record's byte offset; I/O errors.
    pub fn read_record(&mut self) -> Result<Option<Record>, Error> {
        if self.done {
            return Ok(None);
        }
        let result = match self.decode_buffered() {
            Some(result) => result,
            None => decode_record(&mut self.input),
        };
        match result {
            Ok(record) => {
                self.good_end = self.input.pos;
                self.records += 1;
                Ok(Some(record))
            }
            Err(Fail::End) => {
                self.done = true;
                self.trailing = self.input.pos - self.good_end;
                Ok(None)
            }
            Err(Fail::Io(e)) => {
                self.done = true;
                Err(Error::Io(e))
            }
            Err(Fail::Corrupt(reason)) => {
                self.done = true;
                Err(Error::CorruptRecord {
                    offset: self.good_end,
                    index: self.records,
                    reason,
                })
            }
        }
    }
}

impl<R: Read> Reader<R> {
    /// Decodes the next record straight from the read buffer when the buffer holds all of it
    /// (nearly always: records are far smaller than the buffer), without a read call per
    /// field; `None` when it straddles the buffer's end, for the streaming path to finish.
    fn decode_buffered(&mut self) -> Option<Result<Record, Fail>> {
        let buf = match self.input.inner.fill_buf() {
            Ok(buf) => buf,
            Err(e) => return Some(Err(Fail::from(e))),
        };
        let mut cursor = buf;
        match decode_record(&mut cursor) {
            Err(Fail::End) => None,
            Ok(record) => {
                let used = buf.len() - cursor.len();
                self.input.inner.consume(used);
                self.input.pos += used as u64;
                Some(Ok(record))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Record, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.read_record().transpose()
    }
}

fn is_eof(err: &rmp_serde::decode::Error) -> bool {
    matches!(
        err,
        rmp_serde::decode::Error::InvalidMarkerRead(e) | rmp_serde::decode::Error::InvalidDataRead(e)
            if e.kind() == io::ErrorKind::UnexpectedEof
    )
}

/// Why a record could not be decoded.
enum Fail {
    /// The input ended, cleanly or mid-record.
    End,
    Io(io::Error),
    Corrupt(String),
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Self::End
        } else {
            Self::Io(e)
        }
    }
}

fn read_array<const N: usize>(r: &mut impl Read) -> Result<[u8; N], Fail> {
    let mut buf = [0u8; N];
    r.read_exact(&mut buf)?;
    Ok(buf)
}

fn read_byte(r: &mut impl Read) -> Result<u8, Fail> {
    Ok(read_array::<1>(r)?[0])
}

/// A MessagePack integer of any width, checked to fit `T`.
fn read_int<T: TryFrom<i128>>(r: &mut impl Read, field: &str) -> Result<T, Fail> {
    let marker = read_byte(r)?;
    let value = match marker {
        0x00..=0x7f => i128::from(marker),
        0xe0..=0xff => i128::from(marker as i8),
        0xcc => i128::from(read_byte(r)?),
        0xcd => i128::from(u16::from_be_bytes(read_array(r)?)),
        0xce => i128::from(u32::from_be_bytes(read_array(r)?)),
        0xcf => i128::from(u64::from_be_bytes(read_array(r)?)),
        0xd0 => i128::from(read_byte(r)? as i8),
        0xd1 => i128::from(i16::from_be_bytes(read_array(r)?)),
        0xd2 => i128::from(i32::from_be_bytes(read_array(r)?)),
        0xd3 => i128::from(i64::from_be_bytes(read_array(r)?)),
        other => {
            return Err(Fail::Corrupt(format!(
                "{field}: expected an integer, found marker 0x{other:02x}"
            )));
        }
    };
    T::try_from(value).map_err(|_| Fail::Corrupt(format!("{field}: {value} is out of range")))
}

/// The length of a byte string (bin or str), or `None` for nil where `nil_ok`.
fn read_bytes_len(r: &mut impl Read, field: &str, nil_ok: bool) -> Result<Option<usize>, Fail> {
    let len = match read_byte(r)? {
        0xc0 if nil_ok => return Ok(None),
        m @ 0xa0..=0xbf => usize::from(m & 0x1f),
        0xc4 | 0xd9 => usize::from(read_byte(r)?),
        0xc5 | 0xda => usize::from(u16::from_be_bytes(read_array(r)?)),
        0xc6 | 0xdb => u32::from_be_bytes(read_array(r)?) as usize,
        other => {
            return Err(Fail::Corrupt(format!(
                "{field}: expected bytes, found marker 0x{other:02x}"
            )));
        }
    };
    Ok(Some(len))
}

fn read_endpoint(r: &mut impl Read, field: &str) -> Result<Option<Endpoint>, Fail> {
    let Some(len) = read_bytes_len(r, field, true)? else {
        return Ok(None);
    };
    let mut buf = [0u8; 18];
    let Some(bytes) = buf.get_mut(..len).filter(|_| len == 6 || len == 18) else {
        return Err(Fail::Corrupt(format!(
            "{field}: endpoint of {len} bytes (expected 6 or 18)"
        )));
    };
    r.read_exact(bytes)?;
    let port = u16::from_be_bytes([bytes[len - 2], bytes[len - 1]]);
    let ip: IpAddr = if len == 6 {
        Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).into()
    } else {
        let mut octets = [0u8; 16];
        octets.copy_from_slice(&bytes[..16]);
        Ipv6Addr::from(octets).into()
    };
    Ok(Some(Endpoint(SocketAddr::new(ip, port))))
}

/// Decodes one record: the array [`Record::emit`] writes, with any integer widths.
fn decode_record(r: &mut impl Read) -> Result<Record, Fail> {
    let fields = match read_byte(r)? {
        m @ 0x90..=0x9f => usize::from(m & 0x0f),
        0xdc => usize::from(u16::from_be_bytes(read_array(r)?)),
        0xdd => u32::from_be_bytes(read_array(r)?) as usize,
        other => {
            return Err(Fail::Corrupt(format!(
                "expected a record (an array), found marker 0x{other:02x}"
            )));
        }
    };
    if fields != 8 {
        return Err(Fail::Corrupt(format!(
            "a record has 8 fields, this one claims {fields}"
        )));
    }
    let time = Nanos(read_int(r, "time")?);
    let kind = read_int(r, "kind")?;
    let flags = read_int(r, "flags")?;
    let direction = read_int(r, "direction")?;
    let src = read_endpoint(r, "src")?;
    let dst = read_endpoint(r, "dst")?;
    let orig_len = read_int(r, "orig_len")?;
    let len = read_bytes_len(r, "payload", false)?.unwrap_or(0);
    if len > MAX_PAYLOAD_BYTES {
        return Err(Fail::Corrupt(format!(
            "payload claims {len} bytes (more than {MAX_PAYLOAD_BYTES})"
        )));
    }
    // Grow with the bytes that are really there: a damaged length near the end of a file
    // costs what is left of the file, not what the length claims.
    let mut payload = Vec::with_capacity(len.min(1 << 16));
    r.take(len as u64).read_to_end(&mut payload)?;
    if payload.len() < len {
        return Err(Fail::End);
    }
    Ok(Record {
        time,
        kind,
        flags,
        direction,
        src,
        dst,
        orig_len,
        payload,
    })
}

/// Whether `bytes` (the start of a file) look like a jitterlab trace header.
pub fn sniff(bytes: &[u8]) -> bool {
    // A map-encoded header starts with a map marker, then the key "format" (fixstr 6), then
    // the fixstr "jitterlab-trace".
    let is_map = matches!(bytes.first(), Some(0x80..=0x8f | 0xde | 0xdf));
    is_map
        && bytes
            .windows(FORMAT_NAME.len())
            .take(24)
            .any(|w| w == FORMAT_NAME.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_header() -> Header {
        Header::at(
            Clock {
                name: "synthetic".into(),
                realtime_offset_ns: None,
            },
            Source {
                kind: "synthetic".into(),
                detail: "unit test".into(),
            },
            1_700_000_000_000_000_000,
        )
    }

    fn write(records: &[Record]) -> Vec<u8> {
        let mut w = Writer::new(Vec::new(), &sample_header()).unwrap();
        for r in records {
            w.write(r).unwrap();
        }
        w.into_inner()
    }

    #[test]
    fn round_trip_with_endpoints() {
        let mut r = Record::received(Nanos(42), vec![1, 2, 3]);
        r.src = Some(Endpoint("127.0.0.1:5004".parse().unwrap()));
        r.dst = Some(Endpoint("[::1]:9".parse().unwrap()));
        r.orig_len = 1500;
        let bytes = write(std::slice::from_ref(&r));
        assert!(sniff(&bytes));
        let mut reader = Reader::new(&bytes[..]).unwrap();
        assert_eq!(reader.header(), &sample_header());
        assert_eq!(reader.next().unwrap().unwrap(), r);
        assert!(reader.next().is_none());
        assert_eq!(reader.trailing_bytes(), 0);
        assert!(r.is_truncated());
    }

    #[test]
    fn another_format_is_not_a_trace() {
        let err = Reader::new(&b"seq,send_ms,arrival_ms\n1,2,3\n"[..]).unwrap_err();
        assert!(matches!(err, Error::NotATrace { .. }), "{err}");
        let err = Reader::new(&b""[..]).unwrap_err();
        assert!(err.to_string().contains("empty"), "{err}");
        assert!(!sniff(b"\xd4\xc3\xb2\xa1 pcap"));
    }

    #[test]
    fn newer_version_is_refused() {
        let mut h = sample_header();
        h.version = FORMAT_VERSION + 1;
        let bytes = Writer::new(Vec::new(), &h).unwrap().into_inner();
        let err = Reader::new(&bytes[..]).unwrap_err();
        assert!(matches!(err, Error::UnsupportedVersion { .. }), "{err}");
    }

    #[test]
    fn corrupt_record_names_its_offset() {
        let good = Record::received(Nanos(1), vec![9; 4]);
        let mut bytes = write(&[good.clone(), good.clone()]);
        let header_len = Reader::new(&bytes[..]).unwrap().header_len() as usize;
        let one = (bytes.len() - header_len) / 2;
        // Replace the second record's array marker with a string marker.
        bytes[header_len + one] = 0xa3;
        let mut reader = Reader::new(&bytes[..]).unwrap();
        assert_eq!(reader.next().unwrap().unwrap(), good);
        let err = reader.next().unwrap().unwrap_err();
        match err {
            Error::CorruptRecord { offset, index, .. } => {
                assert_eq!(offset as usize, header_len + one);
                assert_eq!(index, 1);
            }
            other => panic!("unexpected {other}"),
        }
        assert!(reader.next().is_none());
    }
}
