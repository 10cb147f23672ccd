//! Writing traces back out as pcapng or pcap captures, for Wireshark, tshark and tcpdump.
//!
//! [`CaptureWriter`] turns each record into one raw-IP packet (`LINKTYPE_RAW`: IPv4 or
//! IPv6, UDP, checksums right; see [`packet`]) at its time in nanoseconds:
//! - **received** records on interface 0 (`jitterlab-received`), in file order;
//! - **ground truth** (`Sent`) records on interface 1 (`jitterlab-sent`), each with the
//!   comment `jitterlab kind=sent` (pcapng only: pcap has one interface and no comments, so
//!   ground truth is left out there, and counted);
//! - **capture statistics** as pcapng interface statistics blocks on interface 0 (received,
//!   kernel drops, delivered, and a comment with every counter); left out of pcap, counted;
//! - records of kinds this version does not know are left out and counted.
//!
//! Records without addresses get documentation addresses ([`placeholder`]). Received
//! records relayed in a known direction, or duplicated on purpose by the relay, say so in a
//! comment (`jitterlab kind=received direction=to-upstream flags=injected-duplicate`).
//!
//! Times: a record's time is on the trace header's clock; a capture wants Unix time. The
//! header's `realtime_offset_ns` is added when known (live captures, imported captures: 0);
//! otherwise (synthetic traces, CSV logs) the record times are written as they are, i.e. as
//! if the trace's clock started at the Unix epoch, and the section comment says so. A time
//! that ends up before the epoch (or, for pcap, after 2106) cannot be written: an error
//! names the record.
//!
//! [`ExportSummary`] counts what was written and what was left out, by reason.

pub mod packet;
pub mod pcapng;
pub mod placeholder;

use std::io::Write;

use crate::Error;
use crate::trace::{CaptureStats, Direction, Header, Record, RecordKind, flags};
use pcapng::Options;

/// `LINKTYPE_RAW`: each packet starts with its IP header.
pub const LINKTYPE_RAW: u16 = 101;
/// The name of the interface received records are written on (interface 0).
pub const RECEIVED_INTERFACE: &str = "jitterlab-received";
/// The name of the interface ground-truth records are written on (interface 1); the pcapng
/// reader imports packets on an interface of this name as ground truth again.
pub const SENT_INTERFACE: &str = "jitterlab-sent";
/// The nanosecond-resolution pcap magic number.
const PCAP_NANO_MAGIC: u32 = 0xA1B2_3C4D;
/// The pcap snap length: more than any IP packet.
const PCAP_SNAPLEN: u32 = 262_144;

/// Which capture format to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureFormat {
    /// pcapng: two interfaces, comments, statistics.
    Pcapng,
    /// Legacy pcap with nanosecond timestamps: received datagrams only.
    Pcap,
}

impl CaptureFormat {
    /// `pcapng` or `pcap`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Pcapng => "pcapng",
            Self::Pcap => "pcap",
        }
    }
}

/// What an export wrote and what it left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Received datagrams written (interface 0).
    pub received: u64,
    /// Ground-truth records written (interface 1, pcapng).
    pub sent: u64,
    /// Capture statistics written as interface statistics blocks (pcapng).
    pub stats: u64,
    /// Packets written with placeholder addresses (see [`placeholder`]).
    pub placeholders: u64,
    /// Packets written with a payload cut to a snap length (their original length kept).
    pub truncated: u64,
    /// Ground-truth records left out (pcap has no second interface).
    pub sent_left_out: u64,
    /// Capture statistics left out (pcap has no statistics block).
    pub stats_left_out: u64,
    /// Records of kinds this version does not know, left out.
    pub unknown_left_out: u64,
    /// Datagrams too large for one IP packet, left out.
    pub too_large_left_out: u64,
}

impl ExportSummary {
    /// One line per kind of record left out, empty when nothing was.
    pub fn left_out(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut add = |n: u64, what: &str| {
            if n > 0 {
                out.push(format!("{n} {what}"));
            }
        };
        add(
            self.sent_left_out,
            "ground-truth record(s) (pcap has one interface; export to .pcapng to keep them)",
        );
        add(
            self.stats_left_out,
            "capture statistics record(s) (pcap has no statistics block; pcapng keeps them)",
        );
        add(
            self.unknown_left_out,
            "record(s) of a kind this version does not know",
        );
        add(
            self.too_large_left_out,
            "datagram(s) too large for one IP packet",
        );
        out
    }
}

/// Writes trace records as a pcapng or pcap capture (see the module documentation).
#[derive(Debug)]
pub struct CaptureWriter<W: Write> {
    out: W,
    format: CaptureFormat,
    /// Added to record times to make Unix time.
    offset_ns: i64,
    summary: ExportSummary,
    sent_interface: bool,
    /// Records seen, for error messages.
    index: u64,
    buf: Vec<u8>,
    frame: Vec<u8>,
}

impl<W: Write> CaptureWriter<W> {
    /// Starts a capture for records read under `header`, writing the file header (pcap) or
    /// the section header and the received interface (pcapng).
    ///
    /// # Errors
    /// I/O errors.
    pub fn new(out: W, format: CaptureFormat, header: &Header) -> Result<Self, Error> {
        let mut w = Self {
            out,
            format,
            offset_ns: header.clock.realtime_offset_ns.unwrap_or(0),
            summary: ExportSummary::default(),
            sent_interface: false,
            index: 0,
            buf: Vec::with_capacity(1 << 16),
            frame: Vec::with_capacity(1 << 16),
        };
        match format {
            CaptureFormat::Pcapng => {
                let options = Options::default()
                    .text(pcapng::SHB_USERAPPL, &header.tool_for_export())
                    .text(pcapng::OPT_COMMENT, &section_comment(header));
                pcapng::section_header(&mut w.buf, options);
                let iface = Options::default()
                    .text(pcapng::IF_NAME, RECEIVED_INTERFACE)
                    .text(
                        pcapng::IF_DESCRIPTION,
                        "datagrams as received (jitterlab trace records of kind received)",
                    );
                pcapng::interface(&mut w.buf, LINKTYPE_RAW, iface);
            }
            CaptureFormat::Pcap => {
                w.buf.extend_from_slice(&PCAP_NANO_MAGIC.to_le_bytes());
                w.buf.extend_from_slice(&2u16.to_le_bytes());
                w.buf.extend_from_slice(&4u16.to_le_bytes());
                w.buf.extend_from_slice(&0i32.to_le_bytes()); // thiszone
                w.buf.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
                w.buf.extend_from_slice(&PCAP_SNAPLEN.to_le_bytes());
                w.buf
                    .extend_from_slice(&u32::from(LINKTYPE_RAW).to_le_bytes());
            }
        }
        w.flush_buf()?;
        Ok(w)
    }

    /// Writes one record (or counts why not).
    ///
    /// # Errors
    /// A time the format cannot hold ([`Error::Export`], naming the record); I/O errors.
    pub fn write(&mut self, rec: &Record) -> Result<(), Error> {
        let index = self.index;
        self.index += 1;
        match (rec.kind, self.format) {
            (RecordKind::Received, _) => self.datagram(index, rec, 0),
            (RecordKind::Sent, CaptureFormat::Pcapng) => {
                if !self.sent_interface {
                    let iface = Options::default()
                        .text(pcapng::IF_NAME, SENT_INTERFACE)
                        .text(
                            pcapng::IF_DESCRIPTION,
                            "ground truth: packets as sent, at their send time on the \
                             trace's clock (jitterlab trace records of kind sent)",
                        );
                    pcapng::interface(&mut self.buf, LINKTYPE_RAW, iface);
                    self.sent_interface = true;
                }
                self.datagram(index, rec, 1)
            }
            (RecordKind::Sent, CaptureFormat::Pcap) => {
                self.summary.sent_left_out += 1;
                Ok(())
            }
            (RecordKind::Stats, CaptureFormat::Pcapng) => self.stats(index, rec),
            (RecordKind::Stats, CaptureFormat::Pcap) => {
                self.summary.stats_left_out += 1;
                Ok(())
            }
            (RecordKind::Other(_), _) => {
                self.summary.unknown_left_out += 1;
                Ok(())
            }
        }
    }

    /// What has been written and left out so far.
    pub fn summary(&self) -> &ExportSummary {
        &self.summary
    }

    /// Flushes and returns the output and the summary.
    ///
    /// # Errors
    /// I/O errors.
    pub fn finish(mut self) -> Result<(W, ExportSummary), Error> {
        self.flush_buf()?;
        self.out.flush()?;
        Ok((self.out, self.summary))
    }

    /// The record's time as Unix nanoseconds, checked against what the format holds.
    fn unix_ns(&self, index: u64, rec: &Record) -> Result<u64, Error> {
        let ns = i128::from(rec.time.as_nanos()) + i128::from(self.offset_ns);
        let max = match self.format {
            CaptureFormat::Pcapng => i128::from(u64::MAX),
            CaptureFormat::Pcap => (i128::from(u32::MAX) + 1) * 1_000_000_000 - 1,
        };
        if !(0..=max).contains(&ns) {
            return Err(Error::Export {
                index,
                reason: format!(
                    "time {ns} ns (Unix) is outside what a {} file holds (0 to {max} ns)",
                    self.format.name()
                ),
            });
        }
        Ok(ns as u64)
    }

    fn datagram(&mut self, index: u64, rec: &Record, interface: u32) -> Result<(), Error> {
        let ns = self.unix_ns(index, rec)?;
        let (src, dst, placed) = placeholder::endpoints(rec);
        self.frame.clear();
        let Ok(built) = packet::build_udp(
            &mut self.frame,
            src,
            dst,
            &rec.payload,
            rec.orig_len,
            index as u16,
        ) else {
            self.summary.too_large_left_out += 1;
            return Ok(());
        };
        match self.format {
            CaptureFormat::Pcapng => {
                let comment = record_comment(rec);
                let options = match &comment {
                    Some(c) => Options::default().text(pcapng::OPT_COMMENT, c),
                    None => Options::default(),
                };
                pcapng::packet(
                    &mut self.buf,
                    interface,
                    ns,
                    &self.frame,
                    built.original,
                    options,
                );
            }
            CaptureFormat::Pcap => {
                let secs = (ns / 1_000_000_000) as u32;
                let nanos = (ns % 1_000_000_000) as u32;
                self.buf.extend_from_slice(&secs.to_le_bytes());
                self.buf.extend_from_slice(&nanos.to_le_bytes());
                self.buf.extend_from_slice(&built.captured.to_le_bytes());
                self.buf.extend_from_slice(&built.original.to_le_bytes());
                self.buf.extend_from_slice(&self.frame);
            }
        }
        if interface == 0 {
            self.summary.received += 1;
        } else {
            self.summary.sent += 1;
        }
        self.summary.placeholders += u64::from(placed);
        self.summary.truncated += u64::from(rec.is_truncated());
        if self.buf.len() >= 1 << 16 {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn stats(&mut self, index: u64, rec: &Record) -> Result<(), Error> {
        let ns = self.unix_ns(index, rec)?;
        let options = match CaptureStats::from_record(rec) {
            Some(s) => Options::default()
                .text(
                    pcapng::OPT_COMMENT,
                    &format!(
                        "jitterlab kind=stats received={} kernel_drops={} queue_drops={} \
                         user_timestamps={} realtime_ns={} monotonic_ns={} last={}",
                        s.received,
                        s.kernel_drops,
                        s.queue_drops,
                        s.user_timestamps,
                        s.realtime_ns,
                        s.monotonic_ns,
                        s.last
                    ),
                )
                .u64(pcapng::ISB_IFRECV, s.received)
                .u64(pcapng::ISB_IFDROP, s.kernel_drops)
                .u64(
                    pcapng::ISB_USRDELIV,
                    s.received.saturating_sub(s.queue_drops),
                ),
            None => Options::default().text(
                pcapng::OPT_COMMENT,
                "jitterlab kind=stats (its counters could not be read)",
            ),
        };
        pcapng::statistics(&mut self.buf, 0, ns, options);
        self.summary.stats += 1;
        Ok(())
    }

    fn flush_buf(&mut self) -> Result<(), Error> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }
}

/// The comment on a packet: always for ground truth, for received packets only when they
/// were relayed in a known direction or duplicated on purpose.
fn record_comment(rec: &Record) -> Option<String> {
    let direction = (rec.direction != Direction::Unknown).then(|| rec.direction.name());
    let duplicate = rec.flags & flags::INJECTED_DUPLICATE != 0;
    let sent = rec.kind == RecordKind::Sent;
    if !sent && direction.is_none() && !duplicate {
        return None;
    }
    let mut c = format!("jitterlab kind={}", if sent { "sent" } else { "received" });
    if let Some(d) = direction {
        c.push_str(" direction=");
        c.push_str(&d);
    }
    if duplicate {
        c.push_str(" flags=injected-duplicate");
    }
    Some(c)
}

/// The section's comment: where the trace came from and what its times mean.
fn section_comment(header: &Header) -> String {
    let times = match header.clock.realtime_offset_ns {
        Some(off) => format!(
            "times are Unix time: the trace's {} clock plus its realtime offset ({off} ns)",
            header.clock.name
        ),
        None => format!(
            "the trace's {} clock has no known realtime offset: times are its own, as if it \
             started at the Unix epoch",
            header.clock.name
        ),
    };
    format!(
        "exported by jitterlab from a trace (source: {} {}); {times}",
        header.source.kind, header.source.detail
    )
}

impl Header {
    /// The `shb_userappl` of an export: this build, and the trace's own writer.
    fn tool_for_export(&self) -> String {
        format!(
            "jitterlab {} export (trace written by {})",
            env!("CARGO_PKG_VERSION"),
            self.tool
        )
    }
}

#[cfg(all(test, feature = "import"))]
mod tests;
