//! The pcap/pcapng reader: frames through the link and IP layers down to UDP datagrams.

use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use etherparse::defrag::IpDefragPool;
use etherparse::{
    EtherType, IpNumber, LaxNetSlice, LaxSlicedPacket, NetSlice, SlicedPacket, TransportSlice,
};
use pcap_parser::pcapng::Block;
use pcap_parser::traits::PcapNGPacketBlock;
use pcap_parser::{PcapBlockOwned, PcapError, create_reader};

use crate::Error;
use crate::filter::Filter;
use crate::format::PCAPNG_MAGIC;
use crate::pcap::{CaptureSummary, LinkType};
use crate::sdp;
use crate::time::Nanos;
use crate::trace::{Endpoint, Record, RecordRef, flags};

/// The largest record a capture may claim; anything bigger is corruption, not a packet.
pub const MAX_RECORD_BYTES: usize = 16 << 20;

/// Fragments waiting longer than this for their siblings are given up (and counted).
const FRAGMENT_TIMEOUT: Nanos = Nanos::from_secs(30);

/// The common case without the general parser: an IPv4 header without options, not a
/// fragment, carrying one whole UDP datagram. Anything else (options, fragments, truncation,
/// inconsistent lengths) returns `None` and goes through etherparse.
fn plain_ipv4_udp(ip: &[u8]) -> Option<(SocketAddr, SocketAddr, &[u8], u32)> {
    let h = ip.get(..28)?;
    if h[0] != 0x45 || h[9] != 17 || u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    let udp_len = usize::from(u16::from_be_bytes([h[24], h[25]]));
    if total > ip.len() || total < 28 || udp_len != total - 20 {
        return None;
    }
    let addr = |at: usize| std::net::Ipv4Addr::new(h[at], h[at + 1], h[at + 2], h[at + 3]);
    let port = |at: usize| u16::from_be_bytes([h[at], h[at + 1]]);
    let src = SocketAddr::new(addr(12).into(), port(20));
    let dst = SocketAddr::new(addr(16).into(), port(22));
    Some((src, dst, &ip[28..total], (udp_len - 8) as u32))
}

/// Per-interface facts (pcapng has one per IDB; legacy pcap has one).
#[derive(Clone, Copy, Debug)]
struct Interface {
    link: LinkType,
    /// Timestamp units per second.
    resolution: u64,
    /// Seconds added to every timestamp.
    offset_s: i64,
    /// Whether the interface is a jitterlab export's ground truth (`if_name` =
    /// `jitterlab-sent`): its datagrams are imported as records of kind sent.
    sent: bool,
}

/// The `if_name` of a jitterlab export's ground-truth interface (the exporter's
/// `SENT_INTERFACE`, repeated here so that reading does not need the `export` feature).
const SENT_INTERFACE: &str = "jitterlab-sent";
/// The input as pcap-parser needs it: its last I/O error kept (pcap-parser reports every
/// one as `ReadError`, and the error — a decompression error, a device error — is what the
/// user needs to see), and the first read filled (pcap-parser tells the format from what its
/// first read returns, and a pipe may return a few bytes at a time).
struct PcapInput<R> {
    inner: R,
    error: Arc<Mutex<Option<io::Error>>>,
    first: bool,
}

impl<R: Read> PcapInput<R> {
    fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !std::mem::take(&mut self.first) {
            return self.inner.read(buf);
        }
        let mut filled = 0;
        while filled < buf.len() {
            match self.inner.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }
}

impl<R: Read> Read for PcapInput<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_some(buf).inspect_err(|e| {
            if let Ok(mut slot) = self.error.lock() {
                *slot = Some(io::Error::new(e.kind(), e.to_string()));
            }
        })
    }
}

/// Reads a pcap or pcapng stream, calling `sink` with each UDP datagram in file order.
///
/// # Errors
/// [`Error::Capture`] for a file that is not a capture, a header cut short or a record that
/// claims an absurd length (with its byte offset); errors returned by `sink`; I/O errors.
pub fn read_capture<R: Read + Send>(
    input: R,
    filter: Option<&Filter>,
    mut sink: impl FnMut(Record) -> Result<(), Error>,
) -> Result<CaptureSummary, Error> {
    read_capture_ref(input, filter, |rec| sink(rec.to_record()))
}

/// As [`read_capture`], lending each datagram to `sink` instead of handing it over: its
/// payload is borrowed from one buffer the reader reuses, so nothing is allocated per packet.
///
/// # Errors
/// As [`read_capture`].
pub fn read_capture_ref<R: Read + Send>(
    input: R,
    filter: Option<&Filter>,
    mut sink: impl FnMut(RecordRef<'_>) -> Result<(), Error>,
) -> Result<CaptureSummary, Error> {
    let kept = Arc::new(Mutex::new(None));
    let read_error = || {
        Error::Io(
            kept.lock()
                .ok()
                .and_then(|mut e| e.take())
                .unwrap_or_else(|| io::Error::other("cannot read the capture")),
        )
    };
    let input = PcapInput {
        inner: input,
        error: Arc::clone(&kept),
        first: true,
    };
    let mut reader = create_reader(128 << 10, input).map_err(|e| match e {
        PcapError::Eof => capture_error(0, "the file is empty"),
        PcapError::HeaderNotRecognized => {
            capture_error(0, "not a pcap or pcapng file (unknown magic number)")
        }
        PcapError::Incomplete(_) | PcapError::UnexpectedEof => {
            capture_error(0, "the file header is cut short")
        }
        PcapError::ReadError => read_error(),
        other => capture_error(0, &format!("cannot read the file header: {other:?}")),
    })?;
    let mut state = State {
        summary: CaptureSummary::default(),
        interfaces: Vec::new(),
        big_endian: false,
        legacy: true,
        pool: IpDefragPool::new(),
        last_sweep: None,
        last_time: Nanos::ZERO,
        filter,
        payload: Vec::new(),
        payload_in_block: None,
        buffer: (0, 0),
    };
    loop {
        let consumed = reader.consumed() as u64;
        // pcap-parser 0.17 underflows on some pcapng blocks shorter than their 12-byte frame
        // (a panic in debug builds, a wrapped length in release): refuse them first.
        if let Some(len) = state.pcapng_block_len(reader.data())
            && len < 12
        {
            return Err(capture_error(
                consumed,
                &format!("a block claims {len} bytes (a pcapng block takes at least 12)"),
            ));
        }
        let data = reader.data().as_ptr_range();
        state.buffer = (data.start.addr(), data.end.addr());
        match reader.next() {
            Ok((len, block)) => {
                let record = state.block(block)?;
                if let Some(rec) = record {
                    sink(RecordRef {
                        payload: state.payload(reader.data()),
                        ..rec
                    })?;
                }
                reader.consume(len);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::UnexpectedEof) => {
                state.summary.trailing_bytes = reader.data().len() as u64;
                break;
            }
            Err(PcapError::Incomplete(_)) => {
                reader.refill().map_err(|_| read_error())?;
            }
            Err(PcapError::BufferTooSmall) => {
                let need = state.claimed_len(reader.data());
                if need > MAX_RECORD_BYTES {
                    return Err(capture_error(
                        consumed,
                        &format!(
                            "a record claims {need} bytes (more than {MAX_RECORD_BYTES}); the file is corrupt"
                        ),
                    ));
                }
                reader.grow((need + 16).max(1 << 20) * 2);
                reader.refill().map_err(|_| read_error())?;
            }
            Err(e) => {
                let reason = match e {
                    PcapError::NomError(_, kind) | PcapError::OwnedNomError(_, kind) => {
                        format!("malformed block ({kind:?})")
                    }
                    other => format!("{other:?}"),
                };
                return Err(capture_error(consumed, &reason));
            }
        }
    }
    let pending = state.pool_pending();
    state.summary.fragments_lost += pending;
    Ok(state.summary)
}

/// As [`read_capture_ref`], with the capture read and parsed on a second thread while `each`
/// decodes on this one ([`crate::trace::ahead::ahead`]): the datagrams reach `each` in
/// batches, so this is for inputs that do not stay open (a file, not a live pipe, whose
/// datagrams would wait for a batch to fill).
///
/// # Errors
/// As [`read_capture`].
pub fn read_capture_ahead<R: Read + Send>(
    input: R,
    filter: Option<&Filter>,
    each: impl FnMut(&RecordRef<'_>),
) -> Result<CaptureSummary, Error> {
    crate::trace::ahead::ahead(
        |feed| {
            read_capture_ref(input, filter, |rec| {
                if feed.push(&rec) {
                    Ok(())
                } else {
                    Err(Error::Io(io::Error::other("the capture's reader stopped")))
                }
            })
        },
        each,
    )
}

/// Reads a whole capture into memory.
///
/// # Errors
/// As [`read_capture`].
pub fn read_capture_all<R: Read + Send>(
    input: R,
    filter: Option<&Filter>,
) -> Result<(Vec<Record>, CaptureSummary), Error> {
    let mut records = Vec::new();
    let summary = read_capture(input, filter, |r| {
        records.push(r);
        Ok(())
    })?;
    Ok((records, summary))
}

fn capture_error(offset: u64, reason: &str) -> Error {
    Error::Capture {
        offset,
        reason: reason.to_owned(),
    }
}

struct State<'f> {
    summary: CaptureSummary,
    interfaces: Vec<Interface>,
    big_endian: bool,
    legacy: bool,
    pool: IpDefragPool<Nanos, ()>,
    last_sweep: Option<Nanos>,
    last_time: Nanos,
    filter: Option<&'f Filter>,
    /// The payload of the datagram last made into a record ([`Fields`]): where it lies in the
    /// block just parsed (its address and length), or copied here when it does not (a
    /// datagram reassembled from fragments).
    payload: Vec<u8>,
    payload_in_block: Option<(usize, usize)>,
    /// The addresses of the reader's buffer while a block parsed from it is read.
    buffer: (usize, usize),
}

impl State<'_> {
    /// The payload of the record [`Self::block`] made last: lent from `data` (the reader's
    /// buffer the block was parsed from) when it lies there, else the copy.
    fn payload<'a>(&'a self, data: &'a [u8]) -> &'a [u8] {
        if let Some((addr, len)) = self.payload_in_block {
            let start = data.as_ptr().addr();
            if addr >= start && addr + len <= start + data.len() {
                return &data[addr - start..addr - start + len];
            }
        }
        &self.payload
    }
}

/// A datagram's record without its payload, which [`State::payload`] lends (the record's own
/// `payload` is empty).
type Fields = RecordRef<'static>;

/// Where the IP layer starts in a frame.
enum Start<'a> {
    Ethernet(&'a [u8]),
    EtherType(EtherType, &'a [u8]),
    Ip(&'a [u8]),
}

impl State<'_> {
    /// The length the record at the front of `data` claims: a legacy record's captured
    /// length, a pcapng block's total length.
    fn claimed_len(&self, data: &[u8]) -> usize {
        let word = |at: usize| -> usize {
            let Some(b) = data.get(at..at + 4) else {
                return 0;
            };
            let b = [b[0], b[1], b[2], b[3]];
            if self.big_endian {
                u32::from_be_bytes(b) as usize
            } else {
                u32::from_le_bytes(b) as usize
            }
        };
        if self.legacy { word(8) } else { word(4) }
    }

    /// The total length a pcapng block at the start of `data` claims, in its section's byte
    /// order (a section header carries its own); `None` for legacy pcap or too few bytes.
    fn pcapng_block_len(&self, data: &[u8]) -> Option<u32> {
        if self.legacy {
            return None;
        }
        let len: [u8; 4] = data.get(4..8)?.try_into().ok()?;
        let big_endian = if data.get(..4)? == PCAPNG_MAGIC.to_le_bytes() {
            data.get(8..12)? == [0x1a, 0x2b, 0x3c, 0x4d]
        } else {
            self.big_endian
        };
        Some(if big_endian {
            u32::from_be_bytes(len)
        } else {
            u32::from_le_bytes(len)
        })
    }

    fn block(&mut self, block: PcapBlockOwned<'_>) -> Result<Option<Fields>, Error> {
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                self.summary.format = "pcap".into();
                self.big_endian = h.is_bigendian();
                let nano = h.is_nanosecond_precision();
                self.summary.nanosecond = nano;
                self.interfaces = vec![Interface {
                    link: LinkType::from_code(h.network.0),
                    resolution: if nano { 1_000_000_000 } else { 1_000_000 },
                    offset_s: 0,
                    sent: false,
                }];
                self.add_link(LinkType::from_code(h.network.0));
                Ok(None)
            }
            PcapBlockOwned::Legacy(b) => {
                let iface = self.interfaces[0];
                let time = Nanos::from_secs(i64::from(b.ts_sec))
                    + Nanos(i64::from(b.ts_usec) * (1_000_000_000 / iface.resolution as i64));
                Ok(self.frame(iface.link, time, b.data, b.origlen))
            }
            PcapBlockOwned::NG(block) => {
                self.summary.format = "pcapng".into();
                self.legacy = false;
                match block {
                    Block::SectionHeader(shb) => {
                        self.big_endian = shb.big_endian();
                        self.interfaces.clear();
                        Ok(None)
                    }
                    Block::InterfaceDescription(idb) => {
                        let resolution = idb.ts_resolution().ok_or_else(|| {
                            capture_error(0, "an interface has an invalid timestamp resolution")
                        })?;
                        if resolution > 1_000_000 {
                            self.summary.nanosecond = true;
                        }
                        let sent = idb.options.iter().any(|o| {
                            o.code == pcap_parser::pcapng::OptionCode::IfName
                                && o.as_str() == Ok(SENT_INTERFACE)
                        });
                        self.interfaces.push(Interface {
                            link: LinkType::from_code(idb.linktype.0),
                            resolution,
                            offset_s: idb.ts_offset(),
                            sent,
                        });
                        self.add_link(LinkType::from_code(idb.linktype.0));
                        Ok(None)
                    }
                    Block::EnhancedPacket(epb) => {
                        let Some(iface) = self.interfaces.get(epb.if_id as usize).copied() else {
                            self.summary.frames += 1;
                            self.summary.malformed += 1;
                            let n = self.summary.frames;
                            self.summary.note(n, || {
                                format!("names interface {} which was never described", epb.if_id)
                            });
                            return Ok(None);
                        };
                        let ticks = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                        let ns = i128::from(iface.offset_s) * 1_000_000_000
                            + i128::from(ticks) * 1_000_000_000 / i128::from(iface.resolution);
                        let time = Nanos(i64::try_from(ns).unwrap_or(i64::MAX));
                        let record = self.frame(iface.link, time, epb.packet_data(), epb.origlen);
                        Ok(record.map(|mut rec| {
                            if iface.sent {
                                rec.kind = crate::RecordKind::Sent;
                                self.summary.ground_truth += 1;
                            }
                            rec
                        }))
                    }
                    Block::SimplePacket(spb) => {
                        // No timestamp in a simple packet block: the best we can say is "at the
                        // same time as the previous packet".
                        let Some(iface) = self.interfaces.first().copied() else {
                            self.summary.frames += 1;
                            self.summary.malformed += 1;
                            return Ok(None);
                        };
                        let time = self.last_time;
                        Ok(self.frame(iface.link, time, spb.packet_data(), spb.origlen))
                    }
                    _ => Ok(None),
                }
            }
        }
    }

    fn add_link(&mut self, link: LinkType) {
        let name = link.name();
        if !self.summary.link_types.contains(&name) {
            self.summary.link_types.push(name);
        }
    }

    /// Turns one frame into a record, or counts why not.
    fn frame(&mut self, link: LinkType, time: Nanos, data: &[u8], orig_len: u32) -> Option<Fields> {
        self.summary.frames += 1;
        self.last_time = time;
        let n = self.summary.frames;
        let start = match link {
            LinkType::Ethernet => Start::Ethernet(data),
            LinkType::Null | LinkType::Loop => match data.get(4) {
                Some(b) if b >> 4 == 6 => Start::EtherType(EtherType::IPV6, &data[4..]),
                Some(_) => Start::EtherType(EtherType::IPV4, &data[4..]),
                None => return self.malformed(n, "loopback frame shorter than 4 bytes"),
            },
            LinkType::Raw | LinkType::Ipv4 | LinkType::Ipv6 => Start::Ip(data),
            LinkType::LinuxSll => match data.get(14..16) {
                Some(p) => {
                    Start::EtherType(EtherType(u16::from_be_bytes([p[0], p[1]])), &data[16..])
                }
                None => return self.malformed(n, "Linux SLL frame shorter than 16 bytes"),
            },
            LinkType::LinuxSll2 => match data.get(..2) {
                Some(p) if data.len() >= 20 => {
                    Start::EtherType(EtherType(u16::from_be_bytes([p[0], p[1]])), &data[20..])
                }
                _ => return self.malformed(n, "Linux SLL2 frame shorter than 20 bytes"),
            },
            LinkType::Other(other) => {
                self.summary.unsupported_link += 1;
                self.summary
                    .note(n, || format!("link type {other} is not supported"));
                return None;
            }
        };
        let ip = match &start {
            Start::Ethernet(d) if d.get(12..14) == Some(&[0x08, 0x00]) => Some(&d[14..]),
            Start::EtherType(EtherType::IPV4, d) | Start::Ip(d) => Some(*d),
            _ => None,
        };
        if let Some((src, dst, payload, len)) = ip.and_then(plain_ipv4_udp) {
            return self.emit(time, src, dst, payload, len);
        }
        let strict = match &start {
            Start::Ethernet(d) => SlicedPacket::from_ethernet(d),
            Start::EtherType(t, d) => SlicedPacket::from_ether_type(*t, d),
            Start::Ip(d) => SlicedPacket::from_ip(d),
        };
        let truncated_frame = (data.len() as u64) < u64::from(orig_len);
        match strict {
            Ok(packet) => self.sliced(n, time, &packet),
            Err(strict_err) => self.lax(n, time, &start, truncated_frame, &strict_err.to_string()),
        }
    }

    fn malformed(&mut self, n: u64, why: &str) -> Option<Fields> {
        self.summary.malformed += 1;
        self.summary.note(n, || why.to_owned());
        None
    }

    fn sliced(&mut self, n: u64, time: Nanos, packet: &SlicedPacket<'_>) -> Option<Fields> {
        let (src_ip, dst_ip, fragmenting): (IpAddr, IpAddr, bool) = match &packet.net {
            Some(NetSlice::Ipv4(ip)) => (
                ip.header().source_addr().into(),
                ip.header().destination_addr().into(),
                ip.header().is_fragmenting_payload(),
            ),
            Some(NetSlice::Ipv6(ip)) => (
                ip.header().source_addr().into(),
                ip.header().destination_addr().into(),
                ip.payload().fragmented,
            ),
            _ => {
                self.summary.not_udp += 1;
                return None;
            }
        };
        if fragmenting {
            return self.fragment(n, time, packet, src_ip, dst_ip);
        }
        match &packet.transport {
            Some(TransportSlice::Udp(udp)) => {
                let src = SocketAddr::new(src_ip, udp.source_port());
                let dst = SocketAddr::new(dst_ip, udp.destination_port());
                let len = u32::from(udp.length()).saturating_sub(8);
                self.emit(time, src, dst, udp.payload(), len)
            }
            _ => {
                self.summary.not_udp += 1;
                None
            }
        }
    }

    fn fragment(
        &mut self,
        n: u64,
        time: Nanos,
        packet: &SlicedPacket<'_>,
        src_ip: IpAddr,
        dst_ip: IpAddr,
    ) -> Option<Fields> {
        self.summary.fragments += 1;
        self.sweep(time);
        match self.pool.process_sliced_packet(packet, time, ()) {
            Ok(None) => None,
            Ok(Some(whole)) => {
                let payload = whole.payload;
                if whole.ip_number != IpNumber::UDP {
                    self.summary.not_udp += 1;
                    self.pool
                        .return_buf(etherparse::defrag::IpDefragPayloadVec { payload, ..whole });
                    return None;
                }
                self.summary.reassembled += 1;
                if payload.len() < 8 {
                    return self.malformed(n, "reassembled UDP datagram shorter than its header");
                }
                let port = |at: usize| u16::from_be_bytes([payload[at], payload[at + 1]]);
                let src = SocketAddr::new(src_ip, port(0));
                let dst = SocketAddr::new(dst_ip, port(2));
                let len = usize::from(port(4)).clamp(8, payload.len());
                let rec = self.emit(time, src, dst, &payload[8..len], (len - 8) as u32);
                self.pool
                    .return_buf(etherparse::defrag::IpDefragPayloadVec { payload, ..whole });
                rec
            }
            Err(e) => {
                self.summary.fragments_lost += 1;
                self.summary.note(n, || format!("IP fragment refused: {e}"));
                None
            }
        }
    }

    /// Gives up fragments that waited too long, counting them.
    fn sweep(&mut self, now: Nanos) {
        let last = *self.last_sweep.get_or_insert(now);
        if now.as_nanos().saturating_sub(last.as_nanos()) < FRAGMENT_TIMEOUT.as_nanos() {
            return;
        }
        self.last_sweep = Some(now);
        let before = self.pool_pending();
        self.pool
            .retain(|t| now.as_nanos().saturating_sub(t.as_nanos()) < FRAGMENT_TIMEOUT.as_nanos());
        self.summary.fragments_lost += before - self.pool_pending();
    }

    /// Datagrams waiting for fragments. The pool has no size accessor; a predicate that keeps
    /// everything visits each entry exactly once.
    fn pool_pending(&mut self) -> u64 {
        let n = std::cell::Cell::new(0u64);
        self.pool.retain(|_| {
            n.set(n.get() + 1);
            true
        });
        n.get()
    }

    fn lax(
        &mut self,
        n: u64,
        time: Nanos,
        start: &Start<'_>,
        truncated_frame: bool,
        strict_err: &str,
    ) -> Option<Fields> {
        let lax = match start {
            Start::Ethernet(d) => LaxSlicedPacket::from_ethernet(d).ok(),
            Start::EtherType(t, d) => Some(LaxSlicedPacket::from_ether_type(*t, d)),
            Start::Ip(d) => LaxSlicedPacket::from_ip(d).ok(),
        };
        let Some(lax) = lax else {
            return self.malformed(n, strict_err);
        };
        let (src_ip, dst_ip): (IpAddr, IpAddr) = match &lax.net {
            Some(LaxNetSlice::Ipv4(ip)) => (
                ip.header().source_addr().into(),
                ip.header().destination_addr().into(),
            ),
            Some(LaxNetSlice::Ipv6(ip)) => (
                ip.header().source_addr().into(),
                ip.header().destination_addr().into(),
            ),
            _ => return self.malformed(n, strict_err),
        };
        match &lax.transport {
            Some(TransportSlice::Udp(udp)) if truncated_frame => {
                self.summary.truncated += 1;
                let src = SocketAddr::new(src_ip, udp.source_port());
                let dst = SocketAddr::new(dst_ip, udp.destination_port());
                let len = u32::from(udp.length()).saturating_sub(8);
                self.emit(time, src, dst, udp.payload(), len)
            }
            Some(TransportSlice::Udp(_)) | None => self.malformed(n, strict_err),
            Some(_) => {
                self.summary.not_udp += 1;
                None
            }
        }
    }

    fn emit(
        &mut self,
        time: Nanos,
        src: SocketAddr,
        dst: SocketAddr,
        payload: &[u8],
        orig_len: u32,
    ) -> Option<Fields> {
        if let Some(f) = self.filter
            && !f.matches(src, dst)
        {
            self.summary.filtered_out += 1;
            return None;
        }
        self.summary.udp += 1;
        let maps = sdp::scan_sip(src, dst, payload, time);
        if !maps.is_empty() {
            self.summary.rtpmaps.extend(maps);
        }
        // Lent from the reader's buffer (no copy) when the payload lies in it.
        let addr = payload.as_ptr().addr();
        if addr >= self.buffer.0 && addr + payload.len() <= self.buffer.1 {
            self.payload_in_block = Some((addr, payload.len()));
        } else {
            self.payload_in_block = None;
            self.payload.clear();
            self.payload.extend_from_slice(payload);
        }
        Some(RecordRef {
            time,
            kind: crate::RecordKind::Received,
            flags: flags::KERNEL_TIMESTAMP,
            direction: crate::trace::Direction::Unknown,
            src: Some(Endpoint(src)),
            dst: Some(Endpoint(dst)),
            orig_len: orig_len.max(payload.len() as u32),
            payload: &[],
        })
    }
}
