//! Telling input files apart by their first bytes: jitterlab traces, pcap, pcapng and CSV.
//!
//! The one place that knows each format's magic: the command line picks a reader with
//! [`Format::sniff`] instead of trying readers in turn, so that an error always comes from the
//! reader of the format the file is in.

use std::fmt;
use std::io::{self, Read};

use crate::trace::FORMAT_NAME;

/// How many leading bytes [`Format::sniff`] looks at; fewer are fine for a shorter file.
pub const SNIFF_LEN: usize = 64;

/// The formats jitterlab reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// A jitterlab trace (`.jtr`): a MessagePack map naming `jitterlab-trace` first.
    Trace,
    /// A legacy pcap capture (micro- or nanosecond, either byte order).
    Pcap,
    /// A pcapng capture (it starts with a section header block).
    PcapNg,
    /// Text that may be a CSV log (the CSV importer has the last word).
    Csv,
}

/// Legacy pcap magic numbers as the first four bytes read little-endian: microsecond and
/// nanosecond resolution, each in both byte orders.
const PCAP_MAGIC: [u32; 4] = [0xa1b2_c3d4, 0xd4c3_b2a1, 0xa1b2_3c4d, 0x4d3c_b2a1];

/// The block type of a pcapng section header block, the first block of every pcapng file (a
/// palindrome, so the same in both byte orders).
pub(crate) const PCAPNG_MAGIC: u32 = 0x0a0d_0d0a;

impl Format {
    /// The format `head` (the first bytes of a file, ideally [`SNIFF_LEN`] of them) is in, or
    /// `None` for an empty or unrecognised (binary) file.
    pub fn sniff(head: &[u8]) -> Option<Self> {
        if let Some(magic) = head.first_chunk::<4>() {
            let magic = u32::from_le_bytes(*magic);
            if PCAP_MAGIC.contains(&magic) {
                return Some(Self::Pcap);
            }
            if magic == PCAPNG_MAGIC {
                return Some(Self::PcapNg);
            }
        }
        if is_trace(head) {
            return Some(Self::Trace);
        }
        if is_text(head) {
            return Some(Self::Csv);
        }
        None
    }

    /// Reads up to [`SNIFF_LEN`] bytes from `input` and sniffs them.
    ///
    /// # Errors
    /// I/O errors from `input`.
    pub fn sniff_reader(input: impl Read) -> io::Result<Option<Self>> {
        let mut head = Vec::with_capacity(SNIFF_LEN);
        input.take(SNIFF_LEN as u64).read_to_end(&mut head)?;
        Ok(Self::sniff(&head))
    }

    /// Whether this is a packet capture (pcap or pcapng).
    pub fn is_capture(self) -> bool {
        matches!(self, Self::Pcap | Self::PcapNg)
    }

    /// The format's name as messages print it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Trace => "jitterlab trace",
            Self::Pcap => "pcap",
            Self::PcapNg => "pcapng",
            Self::Csv => "CSV",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `head` looks like a trace header: a map-encoded header starts with a map marker,
/// then the key "format" (fixstr 6), then the fixstr "jitterlab-trace".
fn is_trace(head: &[u8]) -> bool {
    let is_map = matches!(head.first(), Some(0x80..=0x8f | 0xde | 0xdf));
    is_map
        && head
            .windows(FORMAT_NAME.len())
            .take(24)
            .any(|w| w == FORMAT_NAME.as_bytes())
}

/// Whether `head` is non-empty UTF-8 text without control characters other than whitespace
/// (the head may end inside a multi-byte character).
fn is_text(head: &[u8]) -> bool {
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // Cut inside a character: the part before it must be text.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    !text.is_empty()
        && text
            .chars()
            .all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_told_apart_by_its_first_bytes() {
        assert_eq!(Format::sniff(b"\xd4\xc3\xb2\xa1 pcap"), Some(Format::Pcap));
        assert_eq!(Format::sniff(b"\xa1\xb2\xc3\xd4...."), Some(Format::Pcap));
        assert_eq!(Format::sniff(b"\x4d\x3c\xb2\xa1...."), Some(Format::Pcap));
        assert_eq!(Format::sniff(b"\x0a\x0d\x0d\x0a...."), Some(Format::PcapNg));
        assert_eq!(
            Format::sniff(b"\x8b\xa6format\xafjitterlab-trace\xa7version\x01"),
            Some(Format::Trace)
        );
        assert_eq!(
            Format::sniff(b"seq,send_ms,arrival_ms\n1,2,3\n"),
            Some(Format::Csv)
        );
        assert_eq!(Format::sniff("a,é".as_bytes()), Some(Format::Csv));
        assert_eq!(Format::sniff(&"a,é".as_bytes()[..3]), Some(Format::Csv));
        assert_eq!(Format::sniff(b""), None);
        assert_eq!(Format::sniff(b"\x00\x01\x02\x03"), None);
        assert!(Format::PcapNg.is_capture() && !Format::Trace.is_capture());
    }
}
