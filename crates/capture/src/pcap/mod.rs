//! Reading pcap and pcapng capture files into trace records.
//!
//! Every UDP datagram becomes a [`Record`](crate::Record) with its capture time (nanoseconds since the Unix
//! epoch; nanosecond-resolution files keep their resolution), endpoints and payload. Link types:
//! Ethernet (with VLAN tags), Linux cooked SLL and SLL2, BSD loopback (NULL/LOOP) and raw IP;
//! IPv4 and IPv6. IP fragments are reassembled (etherparse's defragmentation pool); fragments
//! that never complete are counted. Nothing is dropped silently: every frame that is not
//! imported is counted in [`CaptureSummary`] under its reason.
//!
//! SIP packets carrying SDP are scanned for `a=rtpmap` lines ([`crate::sdp`]), so dynamic RTP
//! payload types get their clock rates.
//!
//! [`CaptureSummary`], [`LinkType`] and [`header_for`] need no parser and are always built;
//! the reader itself (`read_capture`) comes with the `import` feature.

#[cfg(feature = "import")]
mod read;

#[cfg(feature = "import")]
pub use read::{
    MAX_RECORD_BYTES, read_capture, read_capture_ahead, read_capture_all, read_capture_ref,
};

use crate::sdp::RtpMap;

/// The most problem examples kept for the summary.
const MAX_EXAMPLES: usize = 5;

/// What reading a capture found, besides the records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureSummary {
    /// `pcap` or `pcapng`.
    pub format: String,
    /// Link types seen, e.g. `ETHERNET`, `LINUX_SLL`.
    pub link_types: Vec<String>,
    /// Whether any timestamps had a resolution finer than a microsecond.
    pub nanosecond: bool,
    /// Packet records (frames) in the file.
    pub frames: u64,
    /// UDP datagrams imported as records.
    pub udp: u64,
    /// Of those, datagrams on a jitterlab export's ground-truth interface (`jitterlab-sent`),
    /// imported as records of kind sent.
    pub ground_truth: u64,
    /// UDP datagrams the filter left out.
    pub filtered_out: u64,
    /// Frames that are not UDP (TCP, ARP, ICMP, ...).
    pub not_udp: u64,
    /// Imported datagrams whose payload was cut by the capture's snap length.
    pub truncated: u64,
    /// Frames whose headers could not be parsed.
    pub malformed: u64,
    /// Frames on a link type this reader does not know.
    pub unsupported_link: u64,
    /// IP fragments seen.
    pub fragments: u64,
    /// Datagrams rebuilt from fragments.
    pub reassembled: u64,
    /// Fragmented datagrams that never completed (waited over 30 s, or the file ended), plus
    /// fragments refused as malformed.
    pub fragments_lost: u64,
    /// Bytes at the end of the file that do not form a whole record (a capture cut short).
    pub trailing_bytes: u64,
    /// Payload maps from SDP in SIP packets.
    pub rtpmaps: Vec<RtpMap>,
    /// The first few problems, with frame numbers.
    pub examples: Vec<String>,
}

impl CaptureSummary {
    #[cfg_attr(not(feature = "import"), allow(dead_code))]
    fn note(&mut self, frame: u64, what: impl FnOnce() -> String) {
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(format!("frame {frame}: {}", what()));
        }
    }

    /// One line per thing that was not imported, for warnings and trace notes.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut add = |n: u64, what: &str| {
            if n > 0 {
                out.push(format!("{n} {what}"));
            }
        };
        add(self.not_udp, "frame(s) are not UDP and were left out");
        add(self.filtered_out, "UDP datagram(s) did not pass the filter");
        add(
            self.malformed,
            "frame(s) could not be parsed and were skipped",
        );
        add(
            self.unsupported_link,
            "frame(s) are on an unsupported link type",
        );
        add(
            self.truncated,
            "datagram(s) were cut by the snap length (kept, marked truncated)",
        );
        add(
            self.fragments_lost,
            "fragmented datagram(s) never completed",
        );
        add(
            self.trailing_bytes,
            "byte(s) at the end do not form a whole record (capture cut short)",
        );
        out
    }
}

/// A capture's link type: what each frame starts with. The numbers are tcpdump.org's
/// `LINKTYPE_*` values (and the BSD `DLT_*` values some writers still use for raw IP); this is
/// the one place they appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LinkType {
    /// BSD loopback (0): a 4-byte address family in the writer's byte order, then IP.
    Null,
    /// Ethernet (1), with or without VLAN tags.
    Ethernet,
    /// Raw IP, version in the first nibble: `LINKTYPE_RAW` (101) or the BSD `DLT_RAW`
    /// values 12 and 14.
    Raw,
    /// OpenBSD loopback (108): like [`LinkType::Null`] with the family in network order.
    Loop,
    /// Linux cooked capture v1 (113): a 16-byte header ending in the EtherType.
    LinuxSll,
    /// Raw IPv4 (228).
    Ipv4,
    /// Raw IPv6 (229).
    Ipv6,
    /// Linux cooked capture v2 (276): a 20-byte header starting with the EtherType.
    LinuxSll2,
    /// A link type this reader does not know; its frames are counted, not imported.
    Other(i32),
}

impl LinkType {
    /// The link type for a number from a pcap file header or a pcapng interface block.
    pub const fn from_code(code: i32) -> Self {
        match code {
            0 => Self::Null,
            1 => Self::Ethernet,
            12 | 14 | 101 => Self::Raw,
            108 => Self::Loop,
            113 => Self::LinuxSll,
            228 => Self::Ipv4,
            229 => Self::Ipv6,
            276 => Self::LinuxSll2,
            other => Self::Other(other),
        }
    }

    /// The name trace headers list in [`crate::Header::link`], e.g. `ETHERNET`, `LINUX_SLL`,
    /// or `LINKTYPE_147` for an unknown one.
    pub fn name(self) -> String {
        let known = match self {
            Self::Null => "NULL",
            Self::Ethernet => "ETHERNET",
            Self::Raw => "RAW",
            Self::Loop => "LOOP",
            Self::LinuxSll => "LINUX_SLL",
            Self::Ipv4 => "IPV4",
            Self::Ipv6 => "IPV6",
            Self::LinuxSll2 => "LINUX_SLL2",
            Self::Other(code) => return format!("LINKTYPE_{code}"),
        };
        known.to_owned()
    }
}

/// The trace header for records imported from a capture: the decoder to use, the link types,
/// SDP payload maps (`rtpmap.N` hints) and one note per thing left out.
pub fn header_for(source_name: &str, summary: &CaptureSummary, decoder: &str) -> crate::Header {
    let mut header = crate::Header::new(
        crate::trace::Clock {
            name: "pcap".into(),
            realtime_offset_ns: Some(0),
        },
        crate::trace::Source {
            kind: "pcap".into(),
            detail: format!("{source_name} ({})", summary.format),
        },
    );
    header.decoder = Some(decoder.to_owned());
    header.link = Some(summary.link_types.join(","));
    for (i, map) in summary.rtpmaps.iter().enumerate() {
        header.hints.insert(format!("rtpmap.{i:04}"), map.to_hint());
    }
    header.notes = summary.problems();
    header
}
