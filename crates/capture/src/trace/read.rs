//! Reading traces as a stream, tolerant of a file cut off mid-record.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use serde::Deserialize;

use crate::Error;
use crate::time::Nanos;
use crate::trace::{
    Direction, Endpoint, FORMAT_NAME, FORMAT_VERSION, Header, Record, RecordKind, RecordRef,
};

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

/// The read buffer's starting size; it grows only for a record larger than itself.
const BUFFER_BYTES: usize = 1 << 17;

/// Reads a trace as a stream: memory does not grow with the file.
///
/// Records come out of one read buffer: [`Reader::next_ref`] lends each record with its
/// payload borrowed from that buffer (nothing is allocated per record), and
/// [`Reader::read_record`] (and iterating) copies it into an owned [`Record`].
///
/// Iterating yields records until the end of the file. A tail cut off mid-record ends the
/// iteration cleanly and is reported by [`Reader::trailing_bytes`]; a malformed record yields one
/// [`Error::CorruptRecord`] and ends the iteration. Records are decoded by hand rather than by
/// serde so that every length is checked before anything is allocated for it: a record costs
/// at most its own bytes, and never more than [`MAX_PAYLOAD_BYTES`].
pub struct Reader<R: Read> {
    input: R,
    /// Bytes read from `input`; `start..end` are not consumed yet.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// `input` returned end of file.
    eof: bool,
    /// The byte offset in the file of `buf[start]`.
    pos: u64,
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
            inner: BufReader::with_capacity(BUFFER_BYTES, input),
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
        let counting = de.into_inner();
        let header_len = counting.pos;
        // What the header's reads buffered past the header starts the record buffer.
        let mut buf = counting.inner.buffer().to_vec();
        let end = buf.len();
        buf.resize(end.max(BUFFER_BYTES), 0);
        Ok(Self {
            input: counting.inner.into_inner(),
            buf,
            start: 0,
            end,
            eof: false,
            pos: header_len,
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

    /// Reads the next record into an owned [`Record`], or `None` at the end of the file.
    ///
    /// # Errors
    /// [`Error::CorruptRecord`] with the record's byte offset; I/O errors.
    pub fn read_record(&mut self) -> Result<Option<Record>, Error> {
        Ok(self.next_ref()?.map(|r| r.to_record()))
    }

    /// Reads the next record, its payload borrowed from the read buffer until the next call,
    /// or `None` at the end of the file. Nothing is allocated per record (the buffer grows only
    /// for a record larger than itself).
    ///
    /// # Errors
    /// [`Error::CorruptRecord`] with the record's byte offset; I/O errors.
    pub fn next_ref(&mut self) -> Result<Option<RecordRef<'_>>, Error> {
        match self.step(true)? {
            Step::Record(rec) => Ok(Some(rec)),
            Step::End | Step::WouldRead => Ok(None),
        }
    }

    /// The next record if it (or the end) is already in the buffer, without reading the input
    /// (a read that may block on a pipe that stays open): [`Step::WouldRead`] otherwise.
    /// Parses the record once, where [`Self::next_is_buffered`] and then [`Self::next_ref`]
    /// would parse it twice.
    ///
    /// # Errors
    /// As [`Self::next_ref`].
    pub(crate) fn next_ref_buffered(&mut self) -> Result<Step<'_>, Error> {
        self.step(false)
    }

    /// The next record, reading more of the input when `may_read`.
    fn step(&mut self, may_read: bool) -> Result<Step<'_>, Error> {
        if self.done {
            return Ok(Step::End);
        }
        loop {
            match parse_record(&self.buf[self.start..self.end]) {
                Ok(parsed) => {
                    let at = self.start;
                    self.start += parsed.len;
                    self.pos += parsed.len as u64;
                    self.good_end = self.pos;
                    self.records += 1;
                    return Ok(Step::Record(parsed.lend(&self.buf[at..at + parsed.len])));
                }
                Err(Fail::End) if self.eof => {
                    self.done = true;
                    self.trailing = (self.end - self.start) as u64;
                    return Ok(Step::End);
                }
                Err(Fail::End) if !may_read => return Ok(Step::WouldRead),
                Err(Fail::End) => {
                    if let Err(e) = self.fill() {
                        self.done = true;
                        return Err(Error::Io(e));
                    }
                }
                Err(Fail::Corrupt(reason)) => {
                    self.done = true;
                    return Err(Error::CorruptRecord {
                        offset: self.good_end,
                        index: self.records,
                        reason,
                    });
                }
            }
        }
    }

    /// Whether the next record (or the end) is already in the buffer, so that
    /// [`Self::next_ref`] returns it without reading the input: a caller that batches records
    /// hands on what it holds before a read that may block (a pipe that stays open). More than
    /// a datagram's worth of bytes buffered (64 KiB and a record's fields) counts as a whole
    /// record without parsing it twice.
    pub fn next_is_buffered(&self) -> bool {
        const DATAGRAM: usize = 65_536 + 256;
        self.done
            || self.eof
            || self.end - self.start > DATAGRAM
            || !matches!(
                parse_record(&self.buf[self.start..self.end]),
                Err(Fail::End)
            )
    }

    /// Reads more of the input after the unconsumed bytes: moves them to the front first, and
    /// doubles the buffer when they fill it (a record larger than the buffer, which grows with
    /// the bytes really there, never with what a length field claims).
    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
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

/// What [`Reader::next_ref_buffered`] found.
pub(crate) enum Step<'a> {
    Record(RecordRef<'a>),
    /// The end of the file (or of its complete records).
    End,
    /// The next record is not all in the buffer: reading on may block.
    WouldRead,
}

/// Why a record could not be decoded.
enum Fail {
    /// The bytes ended, cleanly or mid-record.
    End,
    Corrupt(String),
}

/// A record's fields read from the buffer, its payload as a range of the record's bytes.
struct Parsed {
    time: Nanos,
    kind: RecordKind,
    flags: u32,
    direction: Direction,
    src: Option<Endpoint>,
    dst: Option<Endpoint>,
    orig_len: u32,
    /// Where the payload starts in the record's bytes; it runs to the record's end.
    payload_at: usize,
    /// The record's length in bytes.
    len: usize,
}

impl Parsed {
    /// The record, its payload lent from `bytes` (the record's own bytes).
    fn lend<'a>(&self, bytes: &'a [u8]) -> RecordRef<'a> {
        RecordRef {
            time: self.time,
            kind: self.kind,
            flags: self.flags,
            direction: self.direction,
            src: self.src,
            dst: self.dst,
            orig_len: self.orig_len,
            payload: &bytes[self.payload_at..],
        }
    }
}

/// Reads MessagePack fields from the front of a slice; running out is [`Fail::End`].
struct Bytes<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Fail> {
        let bytes = self.buf.get(self.at..self.at + n).ok_or(Fail::End)?;
        self.at += n;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Fail> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, Fail> {
        let b = *self.buf.get(self.at).ok_or(Fail::End)?;
        self.at += 1;
        Ok(b)
    }

    /// A MessagePack integer of any width, checked to fit `T`.
    fn int<T: TryFrom<i128>>(&mut self, field: &str) -> Result<T, Fail> {
        let marker = self.byte()?;
        let value = match marker {
            0x00..=0x7f => i128::from(marker),
            0xe0..=0xff => i128::from(marker as i8),
            0xcc => i128::from(self.byte()?),
            0xcd => i128::from(u16::from_be_bytes(self.array()?)),
            0xce => i128::from(u32::from_be_bytes(self.array()?)),
            0xcf => i128::from(u64::from_be_bytes(self.array()?)),
            0xd0 => i128::from(self.byte()? as i8),
            0xd1 => i128::from(i16::from_be_bytes(self.array()?)),
            0xd2 => i128::from(i32::from_be_bytes(self.array()?)),
            0xd3 => i128::from(i64::from_be_bytes(self.array()?)),
            other => {
                return Err(Fail::Corrupt(format!(
                    "{field}: expected an integer, found marker 0x{other:02x}"
                )));
            }
        };
        T::try_from(value).map_err(|_| Fail::Corrupt(format!("{field}: {value} is out of range")))
    }

    /// The length of a byte string (bin or str), or `None` for nil where `nil_ok`.
    fn bytes_len(&mut self, field: &str, nil_ok: bool) -> Result<Option<usize>, Fail> {
        let len = match self.byte()? {
            0xc0 if nil_ok => return Ok(None),
            m @ 0xa0..=0xbf => usize::from(m & 0x1f),
            0xc4 | 0xd9 => usize::from(self.byte()?),
            0xc5 | 0xda => usize::from(u16::from_be_bytes(self.array()?)),
            0xc6 | 0xdb => u32::from_be_bytes(self.array()?) as usize,
            other => {
                return Err(Fail::Corrupt(format!(
                    "{field}: expected bytes, found marker 0x{other:02x}"
                )));
            }
        };
        Ok(Some(len))
    }

    fn endpoint(&mut self, field: &str) -> Result<Option<Endpoint>, Fail> {
        let Some(len) = self.bytes_len(field, true)? else {
            return Ok(None);
        };
        if len != 6 && len != 18 {
            return Err(Fail::Corrupt(format!(
                "{field}: endpoint of {len} bytes (expected 6 or 18)"
            )));
        }
        let bytes = self.take(len)?;
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
}

/// Parses the record at the front of `buf`: the array [`Record::emit`] writes, with any
/// integer widths. [`Fail::End`] when `buf` ends before the record does.
fn parse_record(buf: &[u8]) -> Result<Parsed, Fail> {
    let mut r = Bytes { buf, at: 0 };
    let fields = match r.byte()? {
        m @ 0x90..=0x9f => usize::from(m & 0x0f),
        0xdc => usize::from(u16::from_be_bytes(r.array()?)),
        0xdd => u32::from_be_bytes(r.array()?) as usize,
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
    let time = Nanos(r.int("time")?);
    let kind = RecordKind::from_code(r.int("kind")?);
    let flags = r.int("flags")?;
    let direction = Direction::from_code(r.int("direction")?);
    let src = r.endpoint("src")?;
    let dst = r.endpoint("dst")?;
    let orig_len = r.int("orig_len")?;
    let len = r.bytes_len("payload", false)?.unwrap_or(0);
    if len > MAX_PAYLOAD_BYTES {
        return Err(Fail::Corrupt(format!(
            "payload claims {len} bytes (more than {MAX_PAYLOAD_BYTES})"
        )));
    }
    let payload_at = r.at;
    r.take(len)?;
    Ok(Parsed {
        time,
        kind,
        flags,
        direction,
        src,
        dst,
        orig_len,
        payload_at,
        len: r.at,
    })
}
