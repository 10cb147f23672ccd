//! Reading traces as a stream, tolerant of a file cut off mid-record.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use serde::Deserialize;

use crate::Error;
use crate::time::Nanos;
use crate::trace::{Direction, Endpoint, FORMAT_NAME, FORMAT_VERSION, Header, Record, RecordKind};

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
    let kind = RecordKind::from_code(read_int(r, "kind")?);
    let flags = read_int(r, "flags")?;
    let direction = Direction::from_code(read_int(r, "direction")?);
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
