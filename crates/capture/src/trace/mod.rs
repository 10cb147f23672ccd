//! Trace format v1: a MessagePack header followed by a stream of MessagePack packet records.
//!
//! The header is a map (named fields), so fields can be added without breaking old readers;
//! records are arrays (compact: ~25 bytes of framing per packet). See `docs/trace-format.md`.
//!
//! The format is append-only and crash-tolerant: a writer killed at any byte leaves a file
//! whose complete records all read back. [`Reader`] stops at a cut-off tail and reports its
//! length ([`Reader::trailing_bytes`]); a record that is malformed (not merely cut short) is an
//! [`Error::CorruptRecord`](crate::Error::CorruptRecord) naming its byte offset.
//!
//! One job per file: [`record`] is what one packet is (its typed kind and direction, and the
//! exact MessagePack bytes it takes), [`write`](mod@write) appends records after a header, [`read`](mod@read)
//! streams them back, and [`ahead`] reads them on a second thread while the caller decodes.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub mod ahead;
pub mod read;
pub mod record;
pub mod write;

pub use ahead::read_ahead;
pub use read::{MAX_HEADER_BYTES, MAX_PAYLOAD_BYTES, Reader};
pub use record::{CaptureStats, Direction, Endpoint, Record, RecordKind, RecordRef, flags};
pub use write::Writer;

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

/// Whether `bytes` (the start of a file) look like a jitterlab trace header.
///
/// The same test as [`crate::format::Format::sniff`] answering [`Format::Trace`].
///
/// [`Format::Trace`]: crate::format::Format::Trace
pub fn sniff(bytes: &[u8]) -> bool {
    crate::format::Format::sniff(bytes) == Some(crate::format::Format::Trace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, Nanos};

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
    fn unknown_kind_and_direction_codes_are_kept_byte_for_byte() {
        let mut r = Record::received(Nanos(7), vec![1]);
        r.kind = RecordKind::from_code(9);
        r.direction = Direction::from_code(5);
        let bytes = write(std::slice::from_ref(&r));
        let back = Reader::new(&bytes[..]).unwrap().next().unwrap().unwrap();
        assert_eq!(
            (back.kind, back.direction),
            (RecordKind::Other(9), Direction::Other(5))
        );
        assert_eq!(write(&[back]), bytes);
        assert_eq!(RecordKind::Other(0), RecordKind::Received);
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
    fn borrowed_records_match_serde_across_buffer_refills() {
        // Records of every size up to past the read buffer (so they straddle its end, and one
        // outgrows it), with and without endpoints: the reader's borrowed records, its owned
        // ones and serde's decoding of the same bytes agree record for record.
        let mut records = Vec::new();
        for i in 0..3000usize {
            let len = if i == 1500 { 300_000 } else { (i * 37) % 1500 };
            let mut r =
                Record::received(Nanos(i as i64 * 1_000_003 - 5), vec![(i % 251) as u8; len]);
            if i % 3 == 0 {
                r.src = Some(Endpoint("10.1.2.3:4000".parse().unwrap()));
                r.dst = Some(Endpoint("[2001:db8::1]:5000".parse().unwrap()));
            }
            r.flags = (i % 4) as u32;
            r.orig_len = len as u32 + (i % 2) as u32;
            if i % 5 == 0 {
                r.kind = RecordKind::Sent;
            }
            records.push(r);
        }
        let bytes = write(&records);
        let header_len = Reader::new(&bytes[..]).unwrap().header_len() as usize;
        let mut de = rmp_serde::Deserializer::new(&bytes[header_len..]);
        let by_serde: Vec<Record> = (0..records.len())
            .map(|_| Record::deserialize(&mut de).unwrap())
            .collect();
        assert_eq!(by_serde, records);
        let mut reader = Reader::new(&bytes[..]).unwrap();
        let mut n = 0;
        while let Some(r) = reader.next_ref().unwrap() {
            assert_eq!(r.to_record(), records[n], "record {n}");
            assert_eq!(r, records[n].view());
            n += 1;
        }
        assert_eq!(n, records.len());
        assert_eq!(reader.valid_len(), bytes.len() as u64);
        let owned: Vec<Record> = Reader::new(&bytes[..])
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(owned, records);
        // Cut inside the last record: every record before it, and its bytes as the tail.
        let cut = &bytes[..bytes.len() - 1];
        let mut reader = Reader::new(cut).unwrap();
        let mut n = 0;
        while reader.next_ref().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, records.len() - 1);
        assert_eq!(
            reader.valid_len() + reader.trailing_bytes(),
            cut.len() as u64
        );
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
