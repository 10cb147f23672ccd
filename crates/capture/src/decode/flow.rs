//! Flows (one 5-tuple in one direction) and what each one is, judged by evidence across its
//! packets rather than packet by packet.
//!
//! Each datagram is first sorted by its first bytes as RFC 7983 demultiplexes a WebRTC
//! 5-tuple (STUN 0–3, DTLS 20–63, TURN channel data 64–79, RTP and RTCP 128–191), with the
//! structure of each checked (STUN's magic cookie and length, a DTLS record header, an RTCP
//! compound's lengths) so that a game packet whose first byte happens to fall in a range is
//! not taken for one. A flow is then **RTP** only when its RTP packets are consistent — one or
//! a few SSRCs, each with sequence numbers that advance — which Wireshark's per-packet
//! heuristic is not: a DNS answer or an MMO datagram starting with `0x80` passes it. RTCP,
//! STUN, DTLS and TURN packets are counted apart and never become streams. A flow that is
//! none of these but whose datagrams parse as one of the game [`transport`](super::transport)s
//! is that transport; anything else is a plain UDP flow, still described in `info`.
//!
//! The decision is made after [`EVIDENCE`] packets of a flow, or at the end of the capture
//! for shorter flows. Packets wait in arrival order until their flow is decided, at most
//! [`MAX_WAITING`] of them; beyond that, the oldest waiting packet's flow is decided on the
//! evidence it has, so memory stays bounded on captures of any length.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::probe;
use super::rtp::RtpHeader;
use super::transport::{Parser, Transport};
use crate::time::Nanos;
use crate::trace::Endpoint;

/// Packets of a flow looked at before deciding what it is.
pub const EVIDENCE: usize = 64;
/// Packets held, across all flows, while their flows are undecided.
pub const MAX_WAITING: usize = 16_384;
/// The share of a flow's packets that must agree for it to be called RTP or a transport.
pub const AGREEMENT: f64 = 0.9;
/// Fewer RTP packets than this in a flow never make it RTP.
pub const MIN_RTP_PACKETS: usize = 5;

/// What one datagram looks like on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PacketKind {
    /// A jitterlab probe packet (its magic).
    Probe,
    /// STUN (RFC 8489): first byte 0–3, the magic cookie, a length that fits.
    Stun,
    /// DTLS (RFC 9147 record header): content type, version 0xFEFF/0xFEFD/0xFEFC, length.
    Dtls,
    /// TURN channel data (RFC 8656): channel 0x4000–0x4FFF and a length that fits.
    TurnChannel,
    /// RTCP (RFC 3550, RFC 5761): version 2, packet type 192–223, compound lengths that fit.
    Rtcp,
    /// SIP (RFC 3261): a request line (`INVITE sip:… SIP/2.0`) or a status line (`SIP/2.0 200`).
    Sip,
    /// A valid RTP header (RFC 3550 §5.1).
    Rtp,
    /// None of the above.
    Other,
}

impl PacketKind {
    /// The name counts are kept under.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Probe => "probe",
            Self::Stun => "stun",
            Self::Dtls => "dtls",
            Self::TurnChannel => "turn",
            Self::Rtcp => "rtcp",
            Self::Sip => "sip",
            Self::Rtp => "rtp",
            Self::Other => "other",
        }
    }

    /// Sorts one datagram.
    pub fn of(p: &[u8]) -> Self {
        if p.starts_with(&probe::MAGIC) {
            return Self::Probe;
        }
        match p.first() {
            Some(0..=3) if is_stun(p) => Self::Stun,
            Some(20..=63) if is_dtls(p) => Self::Dtls,
            Some(64..=79) if is_turn_channel(p) => Self::TurnChannel,
            Some(128..=191) if is_rtcp(p) => Self::Rtcp,
            Some(128..=191) if RtpHeader::parse(p).is_ok() => Self::Rtp,
            Some(b'A'..=b'Z') if is_sip(p) => Self::Sip,
            _ => Self::Other,
        }
    }
}

/// A SIP message: its first line (within 256 bytes) is `SIP/2.0 CODE …` or `METHOD URI SIP/2.0`.
fn is_sip(p: &[u8]) -> bool {
    let head = &p[..p.len().min(256)];
    let Some(end) = head.windows(2).position(|w| w == b"\r\n") else {
        return false;
    };
    let line = &head[..end];
    if line.starts_with(b"SIP/2.0 ") {
        return true;
    }
    let method_end = line.iter().position(|&b| b == b' ').unwrap_or(0);
    method_end > 0
        && line[..method_end].iter().all(u8::is_ascii_uppercase)
        && line.ends_with(b" SIP/2.0")
}

fn be16(p: &[u8], at: usize) -> usize {
    usize::from(u16::from_be_bytes([p[at], p[at + 1]]))
}

fn is_stun(p: &[u8]) -> bool {
    p.len() >= 20 && p[4..8] == [0x21, 0x12, 0xA4, 0x42] && be16(p, 2) + 20 == p.len()
}

fn is_dtls(p: &[u8]) -> bool {
    p.len() >= 13
        && (20..=26).contains(&p[0])
        && p[1] == 0xFE
        && matches!(p[2], 0xFF | 0xFD | 0xFC)
        && 13 + be16(p, 11) <= p.len()
}

fn is_turn_channel(p: &[u8]) -> bool {
    // Over UDP the data may be padded to a multiple of four.
    p.len() >= 4 && (4 + be16(p, 2)..4 + be16(p, 2) + 4).contains(&p.len())
}

/// An RTCP compound: every packet version 2 with its length inside the datagram. The first
/// packet's type is one RTCP defines (200–207) or the lengths add up exactly; SRTCP's trailer
/// (index and tag) may follow an encrypted compound, so the first packet alone decides there.
pub(super) fn is_rtcp(p: &[u8]) -> bool {
    if p.len() < 8 || !(192..=223).contains(&p[1]) {
        return false;
    }
    let mut at = 0;
    while at + 4 <= p.len() {
        if p[at] >> 6 != 2 {
            return (200..=207).contains(&p[1]) && at > 0;
        }
        at += 4 * (be16(p, at + 2) + 1);
        if at == p.len() {
            return true;
        }
    }
    (200..=207).contains(&p[1]) && 4 * (be16(p, 2) + 1) <= p.len()
}

/// What a flow is, once decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowClass {
    /// RTP media, with RTCP, STUN, DTLS and TURN packets of the same 5-tuple counted apart.
    Media,
    /// jitterlab probe packets.
    Probe,
    /// A game transport.
    Transport(Transport),
    /// Nothing recognised: packets, sizes and timing only.
    Udp,
}

/// The evidence gathered from a flow's first packets.
#[derive(Debug, Default)]
pub struct Evidence {
    packets: usize,
    kinds: BTreeMap<PacketKind, usize>,
    /// Per SSRC: packets, the last sequence number, how many steps advanced by 1–100, and
    /// how many repeated or stepped back a little.
    ssrcs: Vec<(u32, usize, u16, usize, usize)>,
    /// Per transport: a trial parser and how many datagrams it took.
    trials: Vec<(Transport, Box<dyn Parser>, usize)>,
}

impl Evidence {
    /// Fresh evidence, with a trial parser for every transport.
    pub fn new() -> Self {
        Self {
            trials: Transport::ALL
                .into_iter()
                .map(|t| (t, t.parser(), 0))
                .collect(),
            ..Self::default()
        }
    }

    /// Packets looked at so far.
    pub const fn packets(&self) -> usize {
        self.packets
    }

    /// Adds one datagram.
    pub fn push(&mut self, p: &[u8]) {
        self.packets += 1;
        let kind = PacketKind::of(p);
        *self.kinds.entry(kind).or_default() += 1;
        if kind == PacketKind::Rtp
            && let Ok(h) = RtpHeader::parse(p)
        {
            let full = self.ssrcs.len() >= 64;
            match self.ssrcs.iter_mut().find(|s| s.0 == h.ssrc) {
                Some(s) => {
                    s.1 += 1;
                    // A step forward by 1–100 advances; a repeat (a duplicate) or a short
                    // step back (reordering) says nothing either way; anything else is a
                    // jump no sequence number makes.
                    match h.seq.wrapping_sub(s.2) as i16 {
                        1..=100 => s.3 += 1,
                        -100..=0 => s.4 += 1,
                        _ => {}
                    }
                    s.2 = h.seq;
                }
                None if !full => self.ssrcs.push((h.ssrc, 1, h.seq, 0, 0)),
                None => {}
            }
        }
        // A transport's first byte may fall in RTP's range (RakNet's valid bit 0x80, ENet's
        // sent-time flag in the peer id's top bit, a KCP conversation id), so every transport
        // is tried on RTP-looking packets too; consistent RTP is decided before them.
        if matches!(kind, PacketKind::Other | PacketKind::Rtp) {
            for (t, parser, ok) in &mut self.trials {
                if t.resembles(p) && parser.parse(p).is_ok() {
                    *ok += 1;
                }
            }
        }
    }

    /// The name of a media flow: `rtp` when its RTP packets are consistent, else the most
    /// common of the signalling kinds (`rtcp`, `stun`, `dtls`, `turn`, `sip`).
    pub fn media_name(&self) -> &'static str {
        if self.consistent_rtp() {
            return "rtp";
        }
        [
            PacketKind::Rtcp,
            PacketKind::Stun,
            PacketKind::Dtls,
            PacketKind::TurnChannel,
            PacketKind::Sip,
        ]
        .into_iter()
        .max_by_key(|&k| self.count(k))
        .map_or("rtp", PacketKind::name)
    }

    fn count(&self, kind: PacketKind) -> usize {
        self.kinds.get(&kind).copied().unwrap_or(0)
    }

    /// Whether the RTP packets seen are one or a few streams whose sequence numbers advance.
    fn consistent_rtp(&self) -> bool {
        let rtp = self.count(PacketKind::Rtp);
        if rtp < MIN_RTP_PACKETS {
            return false;
        }
        // SSRCs with at least three packets carry the flow; stray ones count against it.
        let (mut carried, mut steps, mut advanced) = (0, 0, 0);
        for &(_, n, _, adv, neutral) in &self.ssrcs {
            if n >= 3 {
                carried += n;
                steps += n - 1 - neutral;
                advanced += adv;
            }
        }
        carried as f64 >= AGREEMENT * rtp as f64
            && advanced >= MIN_RTP_PACKETS - 1
            && advanced as f64 >= 0.8 * steps as f64
    }

    /// What the flow is, on the evidence so far.
    pub fn decide(&self) -> FlowClass {
        let n = self.packets.max(1) as f64;
        if self.count(PacketKind::Probe) as f64 >= 0.5 * n {
            return FlowClass::Probe;
        }
        let signalling = self.count(PacketKind::Rtcp)
            + self.count(PacketKind::Stun)
            + self.count(PacketKind::Dtls)
            + self.count(PacketKind::TurnChannel)
            + self.count(PacketKind::Sip);
        let media = signalling + self.count(PacketKind::Rtp);
        if media as f64 >= AGREEMENT * n && (self.consistent_rtp() || signalling > media / 2) {
            return FlowClass::Media;
        }
        let best = self
            .trials
            .iter()
            .filter(|(_, _, ok)| *ok >= MIN_RTP_PACKETS.min(self.packets) && *ok > 0)
            .max_by_key(|(_, _, ok)| *ok);
        if let Some(&(t, _, ok)) = best
            && ok as f64 >= AGREEMENT * n
        {
            return FlowClass::Transport(t);
        }
        FlowClass::Udp
    }
}

/// One flow: its addresses, what it is, and what its packets were.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSummary {
    /// Source address, when the trace knows it.
    pub src: Option<Endpoint>,
    /// Destination address, when the trace knows it.
    pub dst: Option<Endpoint>,
    /// What the flow is: `rtp`, `rtcp`, `stun`, `dtls`, `probe`, a transport, `layout`,
    /// `periodic` or `udp`.
    pub protocol: &'static str,
    /// Datagrams received.
    pub packets: u64,
    /// Payload bytes received (as on the wire, before any snap-length truncation).
    pub bytes: u64,
    /// First and last arrival.
    pub first: Nanos,
    /// Last arrival.
    pub last: Nanos,
    /// Packets counted apart rather than decoded into samples, by kind: `rtcp`, `stun`,
    /// `dtls`, `turn`, and a transport's control traffic (`handshake`, `ack`, `ping`, …).
    pub counted: BTreeMap<&'static str, u64>,
    /// Packets that could not be decoded as what the flow is.
    pub skipped: u64,
    /// Why the first of them could not.
    pub skip_example: Option<String>,
}

impl FlowSummary {
    /// A flow with no packets yet.
    pub fn new(src: Option<Endpoint>, dst: Option<Endpoint>) -> Self {
        Self {
            src,
            dst,
            protocol: "udp",
            packets: 0,
            bytes: 0,
            first: Nanos::MAX,
            last: Nanos::MIN,
            counted: BTreeMap::new(),
            skipped: 0,
            skip_example: None,
        }
    }

    /// `SRC-DST`, as `--flow` takes it (`-` for an unknown address).
    pub fn label(&self) -> String {
        flow_label(self.src, self.dst)
    }

    /// The flow's duration, first to last arrival.
    pub fn duration(&self) -> Nanos {
        if self.packets < 2 {
            Nanos::ZERO
        } else {
            Nanos(self.last.0 - self.first.0)
        }
    }
}

/// `SRC-DST` for a pair of endpoints (`-` for an unknown one).
pub fn flow_label(src: Option<Endpoint>, dst: Option<Endpoint>) -> String {
    let show = |e: Option<Endpoint>| e.map_or_else(|| "-".to_owned(), |e| e.0.to_string());
    format!("{}-{}", show(src), show(dst))
}

/// Parses `SRC-DST` (`10.0.0.1:5000-10.0.0.2:6000`, `[::1]:5000-[::1]:6000`) as `--flow`
/// takes it.
///
/// # Errors
/// Not two socket addresses joined by `-`.
pub fn parse_flow(text: &str) -> Result<(SocketAddr, SocketAddr), crate::Error> {
    text.match_indices('-')
        .find_map(|(i, _)| Some((text[..i].parse().ok()?, text[i + 1..].parse().ok()?)))
        .ok_or_else(|| crate::Error::Setting {
            setting: "flow",
            value: text.to_owned(),
            reason: "expected SRC-DST, both HOST:PORT, e.g. 10.0.0.1:5000-10.0.0.2:6000".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtp(seq: u16, ssrc: u32) -> Vec<u8> {
        let mut b = vec![0u8; 172];
        b[0] = 0x80;
        b[1] = 96;
        b[2..4].copy_from_slice(&seq.to_be_bytes());
        b[4..8].copy_from_slice(&(u32::from(seq) * 320).to_be_bytes());
        b[8..12].copy_from_slice(&ssrc.to_be_bytes());
        b
    }

    /// A receiver report with one report block (RFC 3550 §6.4.2): 32 bytes, length 7.
    fn rtcp_rr() -> Vec<u8> {
        let mut b = vec![0u8; 32];
        b[0] = 0x81;
        b[1] = 201;
        b[2..4].copy_from_slice(&7u16.to_be_bytes());
        b
    }

    fn stun_binding() -> Vec<u8> {
        let mut b = vec![0u8; 28];
        b[1] = 0x01;
        b[2..4].copy_from_slice(&8u16.to_be_bytes());
        b[4..8].copy_from_slice(&[0x21, 0x12, 0xA4, 0x42]);
        b
    }

    #[test]
    fn packets_are_sorted_by_their_structure() {
        assert_eq!(PacketKind::of(&rtp(1, 7)), PacketKind::Rtp);
        assert_eq!(PacketKind::of(&rtcp_rr()), PacketKind::Rtcp);
        assert_eq!(PacketKind::of(&stun_binding()), PacketKind::Stun);
        assert_eq!(
            PacketKind::of(b"INVITE sip:bob@example.com SIP/2.0\r\nVia: x\r\n\r\n"),
            PacketKind::Sip
        );
        assert_eq!(PacketKind::of(b"SIP/2.0 200 OK\r\n\r\n"), PacketKind::Sip);
        assert_eq!(PacketKind::of(b"INVITE me now\r\n"), PacketKind::Other);
        assert_eq!(PacketKind::of(b"GET / HTTP/1.1\r\n"), PacketKind::Other);
        let mut dtls = vec![22, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4];
        assert_eq!(PacketKind::of(&dtls), PacketKind::Dtls);
        dtls[12] = 200; // a record length past the datagram
        assert_eq!(PacketKind::of(&dtls), PacketKind::Other);
        // A receiver report whose length runs past the datagram is not RTCP; read as RTP it
        // is payload type 73 with the marker set, as a per-packet heuristic sees it.
        let mut cut = rtcp_rr();
        cut[2..4].copy_from_slice(&40u16.to_be_bytes());
        assert_eq!(PacketKind::of(&cut), PacketKind::Rtp);
        // A STUN-looking first byte without the cookie is not STUN.
        let mut fake = stun_binding();
        fake[5] = 0;
        assert_eq!(PacketKind::of(&fake), PacketKind::Other);
    }

    #[test]
    fn rtp_needs_stable_ssrcs_and_advancing_numbers() {
        let mut e = Evidence::new();
        for i in 0..40 {
            e.push(&rtp(65_520u16.wrapping_add(i), 0xABCD));
            if i % 10 == 0 {
                e.push(&rtcp_rr());
            }
        }
        assert_eq!(e.decide(), FlowClass::Media);
        // Datagrams that each parse as RTP but with a new SSRC and random numbers every time,
        // as an MMO's packets starting with 0x80–0xBF do.
        let mut junk = Evidence::new();
        let mut x = 12_345u32;
        for _ in 0..64 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            junk.push(&rtp((x >> 16) as u16, x));
        }
        assert_eq!(junk.decide(), FlowClass::Udp);
        // Four packets are too few to call a flow RTP.
        let mut few = Evidence::new();
        for i in 0..4 {
            few.push(&rtp(i, 1));
        }
        assert_eq!(few.decide(), FlowClass::Udp);
    }

    #[test]
    fn rtcp_and_stun_alone_are_media_signalling() {
        let mut e = Evidence::new();
        for _ in 0..10 {
            e.push(&rtcp_rr());
            e.push(&stun_binding());
        }
        assert_eq!(e.decide(), FlowClass::Media);
    }

    #[test]
    fn labels_name_both_ends() {
        let a: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let b: SocketAddr = "10.0.0.2:6000".parse().unwrap();
        assert_eq!(
            flow_label(Some(Endpoint(a)), Some(Endpoint(b))),
            "10.0.0.1:5000-10.0.0.2:6000"
        );
        assert_eq!(flow_label(None, None), "---");
        assert_eq!(parse_flow("10.0.0.1:5000-10.0.0.2:6000").unwrap(), (a, b));
        let v6 = parse_flow("[::1]:5000-[fe80::1]:6000").unwrap();
        assert_eq!((v6.0.port(), v6.1.port()), (5000, 6000));
        assert!(parse_flow("10.0.0.1:5000").is_err());
        assert!(parse_flow("10.0.0.1-10.0.0.2").is_err());
    }
}
