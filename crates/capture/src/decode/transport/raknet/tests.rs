//! The RakNet parser on bytes laid out as RakNet 4.081 writes them
//! (`ReliabilityLayer::WriteToBitStreamFromInternalPacket`, `DatagramHeaderFormat::Serialize`,
//! `RangeList::Serialize`, RakPeer's offline messages).

use super::*;
use crate::rng::Rng;

const UNRELIABLE: u8 = 0;
const UNRELIABLE_SEQUENCED: u8 = 1;
const RELIABLE: u8 = 2;
const RELIABLE_ORDERED: u8 = 3;
const RELIABLE_SEQUENCED: u8 = 4;

fn u24(v: u32) -> [u8; 3] {
    let b = v.to_le_bytes();
    [b[0], b[1], b[2]]
}

/// The fields of one frame, as the writer takes them.
#[derive(Clone, Default)]
struct F {
    reliability: u8,
    reliable_index: u32,
    sequencing_index: u32,
    ordering: (u32, u8),
    split: Option<(u32, u16, u32)>,
    payload: Vec<u8>,
}

impl F {
    fn new(reliability: u8, payload: &[u8]) -> Self {
        Self {
            reliability,
            payload: payload.to_vec(),
            ..Self::default()
        }
    }

    fn reliable(mut self, index: u32) -> Self {
        self.reliable_index = index;
        self
    }

    fn sequenced(mut self, index: u32) -> Self {
        self.sequencing_index = index;
        self
    }

    fn ordered(mut self, index: u32, channel: u8) -> Self {
        self.ordering = (index, channel);
        self
    }

    fn split(mut self, count: u32, id: u16, index: u32) -> Self {
        self.split = Some((count, id, index));
        self
    }

    /// The frame's bytes: flags byte (reliability in the top 3 bits, then has-split), the
    /// length in bits (u16 BE), the indexes (u24 LE) the reliability needs, the split header
    /// (u32 BE count, u16 BE id, u32 BE index), the payload.
    fn emit(&self) -> Vec<u8> {
        let r = self.reliability;
        let mut out = vec![(r << 5) | if self.split.is_some() { 0x10 } else { 0 }];
        out.extend_from_slice(&((self.payload.len() * 8) as u16).to_be_bytes());
        if matches!(r, 2..=4) {
            out.extend_from_slice(&u24(self.reliable_index));
        }
        if matches!(r, 1 | 4) {
            out.extend_from_slice(&u24(self.sequencing_index));
        }
        if matches!(r, 1 | 3 | 4) {
            out.extend_from_slice(&u24(self.ordering.0));
            out.push(self.ordering.1);
        }
        if let Some((count, id, index)) = self.split {
            out.extend_from_slice(&count.to_be_bytes());
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&index.to_be_bytes());
        }
        out.extend_from_slice(&self.payload);
        out
    }
}

/// A data datagram: 0x84 (valid, needs B and AS, as RakNet's first datagrams carry), the
/// datagram number (u24 LE), the frames.
fn data(number: u32, frames: &[F]) -> Vec<u8> {
    let mut out = vec![0x84];
    out.extend_from_slice(&u24(number));
    for f in frames {
        out.extend(f.emit());
    }
    out
}

/// An application message: a user id (ID_USER_PACKET_ENUM = 134) and filler.
fn app(len: usize) -> Vec<u8> {
    let mut out = vec![134];
    out.resize(len, 7);
    out
}

fn parse_all(parser: &mut RaknetParser, datagrams: &[Vec<u8>]) -> Vec<Datagram> {
    datagrams.iter().map(|d| parser.parse(d).unwrap()).collect()
}

fn err(payload: &[u8]) -> String {
    RaknetParser::default()
        .parse(payload)
        .unwrap_err()
        .to_string()
}

fn lanes(d: &Datagram) -> Vec<(u32, u64)> {
    d.messages.iter().map(|m| (m.lane, m.seq.value)).collect()
}

#[test]
fn offline_handshake_and_pings_are_control() {
    let mut request1 = vec![0x05];
    request1.extend_from_slice(&OFFLINE_MAGIC);
    request1.push(6); // RAKNET_PROTOCOL_VERSION
    request1.resize(1492 - 28, 0); // padded to the MTU being tried, less the UDP/IP headers
    let mut reply1 = vec![0x06];
    reply1.extend_from_slice(&OFFLINE_MAGIC);
    reply1.extend_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes()); // server GUID
    reply1.push(0); // no security
    reply1.extend_from_slice(&1464u16.to_be_bytes()); // MTU
    let mut request2 = vec![0x07];
    request2.extend_from_slice(&OFFLINE_MAGIC);
    request2.extend_from_slice(&[4, 0x80, 0xff, 0xff, 0xfe, 0x1f, 0x90]); // address
    request2.extend_from_slice(&1464u16.to_be_bytes());
    request2.extend_from_slice(&9u64.to_be_bytes());
    let mut ping = vec![0x01];
    ping.extend_from_slice(&1234u64.to_be_bytes()); // RakNet::Time
    ping.extend_from_slice(&OFFLINE_MAGIC);
    ping.extend_from_slice(&9u64.to_be_bytes()); // client GUID
    let mut pong = vec![0x1c];
    pong.extend_from_slice(&1234u64.to_be_bytes());
    pong.extend_from_slice(&0x1122u64.to_be_bytes());
    pong.extend_from_slice(&OFFLINE_MAGIC);
    pong.extend_from_slice(b"MCPE;a server;");
    let mut incompatible = vec![0x19, 11];
    incompatible.extend_from_slice(&OFFLINE_MAGIC);
    incompatible.extend_from_slice(&0x1122u64.to_be_bytes());
    let mut p = RaknetParser::default();
    for (bytes, kind) in [
        (&request1, "handshake"),
        (&reply1, "handshake"),
        (&request2, "handshake"),
        (&ping, "ping"),
        (&pong, "ping"),
        (&incompatible, "handshake"),
    ] {
        assert!(resembles(bytes), "{kind} 0x{:02x}", bytes[0]);
        let d = p.parse(bytes).unwrap();
        assert_eq!(d.control, vec![kind]);
        assert!(d.messages.is_empty());
    }
    // The same ids with the magic one byte off are not RakNet's.
    let mut shifted = vec![0x05, 0];
    shifted.extend_from_slice(&OFFLINE_MAGIC);
    assert!(!resembles(&shifted));
    assert!(
        err(&shifted).contains("no offline magic"),
        "{}",
        err(&shifted)
    );
}

#[test]
fn acks_and_naks_are_control_and_their_ranges_are_checked() {
    // ACK of datagram 5 alone and 7..=9: count 2, [1, 5], [0, 7, 9].
    let ack = [0xc0, 0, 2, 1, 5, 0, 0, 0, 7, 0, 0, 9, 0, 0];
    // The same with the data arrival rate (a float) after the flags.
    let mut ack_as = vec![0xe0];
    ack_as.extend_from_slice(&1.5f32.to_be_bytes());
    ack_as.extend_from_slice(&ack[1..]);
    let nak = [0xa0, 0, 1, 1, 3, 0, 0];
    let mut p = RaknetParser::default();
    for bytes in [&ack[..], &ack_as, &nak] {
        assert!(resembles(bytes));
        assert_eq!(p.parse(bytes).unwrap().control, vec!["ack"]);
    }
    // A count of 200 records in 11 bytes lies.
    let mut lying = ack;
    lying[2] = 200;
    assert!(
        err(&lying).contains("claims 200 records"),
        "{}",
        err(&lying)
    );
    // A range whose maximum is below its minimum.
    let backwards = [0xc0, 0, 1, 0, 9, 0, 0, 7, 0, 0];
    assert!(err(&backwards).contains("runs backwards"));
    // Bytes left after the records.
    let trailing = [0xa0, 0, 1, 1, 3, 0, 0, 0];
    assert!(err(&trailing).contains("1 bytes after"));
    // A record cut short.
    assert!(err(&[0xc0, 0, 1, 0, 9, 0, 0, 7]).contains("cut short"));
}

#[test]
fn several_frames_in_one_datagram_go_to_their_lanes() {
    let d = data(
        0,
        &[
            F::new(UNRELIABLE_SEQUENCED, &app(120))
                .sequenced(5)
                .ordered(0, 0),
            F::new(RELIABLE_ORDERED, &app(30))
                .reliable(10)
                .ordered(3, 1),
            F::new(UNRELIABLE, &app(24)),
            F::new(RELIABLE, &app(40)).reliable(11),
            F::new(RELIABLE_SEQUENCED, &app(8))
                .reliable(12)
                .sequenced(2)
                .ordered(4, 1),
            F::new(UNRELIABLE, &app(25)),
        ],
    );
    assert!(resembles(&d));
    let out = RaknetParser::default().parse(&d).unwrap();
    assert!(out.control.is_empty());
    assert_eq!(
        lanes(&out),
        vec![
            (lane_sequenced(0), 5),
            (1, 3),
            (LANE_UNRELIABLE, 0),
            (LANE_RELIABLE, 0),
            (lane_sequenced(1), 2),
            (LANE_UNRELIABLE, 1),
        ]
    );
    let lens: Vec<usize> = out.messages.iter().map(|m| m.len).collect();
    assert_eq!(lens, vec![120, 30, 24, 40, 8, 25]);
    assert_eq!(out.messages[1].lane_name, "channel 1 ordered");
    assert_eq!(out.messages[0].lane_name, "channel 0 sequenced");
    assert!(
        out.messages
            .iter()
            .all(|m| !m.retransmit && m.send.is_none())
    );
    assert_eq!(out.messages[1].seq.bits, 24);
}

#[test]
fn a_split_packet_in_three_parts_out_of_order_is_one_message() {
    let body = app(3000);
    let part = |index: u32, number: u32| {
        let chunk = &body[index as usize * 1000..(index as usize + 1) * 1000];
        data(
            number,
            &[F::new(RELIABLE_ORDERED, chunk)
                .reliable(20 + index)
                .ordered(7, 2)
                .split(3, 42, index)],
        )
    };
    let mut p = RaknetParser::default();
    let out = parse_all(&mut p, &[part(2, 0), part(0, 1), part(1, 2)]);
    assert_eq!(out[0].control, vec!["fragment"]);
    assert_eq!(out[1].control, vec!["fragment"]);
    assert!(out[0].messages.is_empty() && out[1].messages.is_empty());
    assert!(out[2].control.is_empty());
    assert_eq!(lanes(&out[2]), vec![(2, 7)]);
    assert_eq!(out[2].messages[0].len, 3000);
    assert_eq!(p.pending_splits(), 0);
    // A part sent again (its ACK was lost) is a fragment, not a new message.
    let again = p.parse(&part(1, 3)).unwrap();
    assert_eq!(again.control, vec!["fragment"]);
    assert!(again.messages.is_empty());
    assert_eq!(p.pending_splits(), 0);
}

#[test]
fn splits_that_never_complete_stay_bounded() {
    let mut p = RaknetParser::default();
    for id in 0..1000u16 {
        let d = data(
            u32::from(id),
            &[F::new(RELIABLE, &app(100))
                .reliable(u32::from(id))
                .split(2, id, 0)],
        );
        assert_eq!(p.parse(&d).unwrap().control, vec!["fragment"]);
        assert!(p.pending_splits() <= MAX_PENDING_SPLITS);
    }
    assert_eq!(p.pending_splits(), MAX_PENDING_SPLITS);
    // An absurd count is refused before anything is kept.
    let absurd = data(
        2000,
        &[F::new(RELIABLE, &app(100))
            .reliable(5000)
            .split(4_000_000_000, 1, 0)],
    );
    let e = err(&absurd);
    assert!(e.contains("claims 4000000000 parts"), "{e}");
    // An index past the count.
    let past = data(0, &[F::new(RELIABLE, &app(10)).reliable(1).split(3, 1, 3)]);
    assert!(err(&past).contains("part index 3 is not below its count 3"));
    // Parts that disagree on the count.
    let mut q = RaknetParser::default();
    q.parse(&data(
        0,
        &[F::new(RELIABLE, &app(10)).reliable(1).split(3, 9, 0)],
    ))
    .unwrap();
    let e = q
        .parse(&data(
            1,
            &[F::new(RELIABLE, &app(10)).reliable(2).split(4, 9, 1)],
        ))
        .unwrap_err()
        .to_string();
    assert!(e.contains("claims 4 parts, an earlier one 3"), "{e}");
}

#[test]
fn a_bit_length_that_lies_is_named() {
    let mut d = data(0, &[F::new(UNRELIABLE, &app(10))]);
    // 8,000 bits is 1,000 bytes; 10 follow.
    d[5..7].copy_from_slice(&8000u16.to_be_bytes());
    let e = err(&d);
    assert!(
        e.contains("8000 bits (1000 bytes) run past the datagram (10 bytes left)"),
        "{e}"
    );
    assert!(!resembles(&d));
    // A zero length, which RakNet refuses as garbage.
    d[5..7].copy_from_slice(&0u16.to_be_bytes());
    assert!(err(&d).contains("length of 0 bits"));
    // An ordering channel RakNet does not have.
    let d = data(
        0,
        &[F::new(RELIABLE_ORDERED, &app(4)).reliable(0).ordered(0, 40)],
    );
    assert!(err(&d).contains("ordering channel 40 is not below 32"));
}

#[test]
fn truncated_headers_are_errors_not_panics() {
    let full = data(
        0,
        &[F::new(RELIABLE_SEQUENCED, &app(20))
            .reliable(1)
            .sequenced(2)
            .ordered(3, 0)
            .split(2, 5, 0)],
    );
    // Every cut of the datagram header and of the frame header fails with a reason.
    let header_end = full.len() - 20;
    for cut in 0..header_end {
        let e = err(&full[..cut]);
        assert!(
            e.contains("cut short") || e.contains("empty") || e.contains("run past"),
            "cut at {cut}: {e}"
        );
    }
    assert!(err(&[0x84, 1, 0]).contains("datagram sequence number cut short"));
    assert!(err(&[]).contains("empty"));
}

#[test]
fn random_bytes_never_panic_and_rarely_resemble() {
    let mut rng = Rng::new(15);
    let mut p = RaknetParser::default();
    let (mut resembled, n) = (0, 20_000);
    for _ in 0..n {
        let len = 1 + (rng.next_u64() % 300) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        resembled += usize::from(resembles(&bytes));
        let _ = p.parse(&bytes);
        assert!(p.pending_splits() <= MAX_PENDING_SPLITS);
    }
    eprintln!("{resembled} of {n} random datagrams resemble raknet");
    // Random datagrams pass only by chance: well under 1 %.
    assert!(
        resembled * 100 < n,
        "{resembled} of {n} random datagrams resembled RakNet"
    );
}

#[test]
fn other_protocols_do_not_resemble_raknet() {
    // RTP (version 2, PT 0, seq 0x1234, a timestamp, an SSRC) with 160 bytes of G.711.
    let mut rtp = vec![
        0x80, 0x00, 0x12, 0x34, 0x00, 0x01, 0xe2, 0x40, 0xde, 0xad, 0xbe, 0xef,
    ];
    rtp.extend(std::iter::repeat_n(0xd5, 160));
    // DNS query for example.com.
    let dns = [
        0xab, 0xcd, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 7, b'e', b'x',
        b'a', b'm', b'p', b'l', b'e', 3, b'c', b'o', b'm', 0, 0, 1, 0, 1,
    ];
    // STUN binding request (RFC 8489): type 0x0001, length 0, magic cookie, transaction id.
    let mut stun = vec![0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42];
    stun.extend_from_slice(&[1; 12]);
    // QUIC v1 Initial: long header 0xc0 | packet number length 0, version 1, CIDs.
    let mut quic = vec![0xc0, 0x00, 0x00, 0x00, 0x01, 8];
    quic.extend_from_slice(&[0x55; 8]);
    quic.push(0);
    quic.resize(1200, 0);
    // QUIC short header.
    let mut short = vec![0x43];
    short.extend_from_slice(&[0x55; 40]);
    for (name, bytes) in [
        ("rtp", &rtp[..]),
        ("dns", &dns),
        ("stun", &stun),
        ("quic", &quic),
        ("quic short", &short),
    ] {
        assert!(!resembles(bytes), "{name} resembles raknet");
    }
}

#[test]
fn retransmitted_reliable_frames_repeat_their_seq() {
    let mut p = RaknetParser::default();
    let first = data(
        0,
        &[
            F::new(RELIABLE, &app(40)).reliable(3),
            F::new(RELIABLE_ORDERED, &app(40)).reliable(4).ordered(9, 0),
        ],
    );
    let other = data(1, &[F::new(RELIABLE, &app(40)).reliable(5)]);
    // RakNet resends both in a new datagram with their reliable message indexes.
    let resent = data(
        2,
        &[
            F::new(RELIABLE, &app(40)).reliable(3),
            F::new(RELIABLE_ORDERED, &app(40)).reliable(4).ordered(9, 0),
        ],
    );
    let out = parse_all(&mut p, &[first, other, resent]);
    assert_eq!(lanes(&out[0]), vec![(LANE_RELIABLE, 0), (0, 9)]);
    assert_eq!(lanes(&out[1]), vec![(LANE_RELIABLE, 1)]);
    assert_eq!(lanes(&out[2]), lanes(&out[0]));
    assert!(out[2].messages.iter().all(|m| m.retransmit));
    assert!(out[0].messages.iter().all(|m| !m.retransmit));
}

#[test]
fn unreliable_messages_count_along_datagram_numbers() {
    let u = || F::new(UNRELIABLE, &app(24));
    let mut p = RaknetParser::default();
    let ack = vec![0xc0, 0, 1, 1, 0, 0, 0];
    let out = parse_all(
        &mut p,
        &[
            data(10, &[u()]),
            ack,
            // A datagram of reliable frames alone takes no seq on the unreliable lane.
            data(11, &[F::new(RELIABLE, &app(8)).reliable(0)]),
            data(12, &[u(), u()]),
            // 13 and 14 lost: each kept one seq.
            data(15, &[u()]),
            // 13 turns up late, and 15 twice (a duplicate on the network).
            data(13, &[u()]),
            data(15, &[u()]),
        ],
    );
    let unreliable = |d: &Datagram| -> Vec<u64> {
        d.messages
            .iter()
            .filter(|m| m.lane == LANE_UNRELIABLE)
            .map(|m| m.seq.value)
            .collect()
    };
    let seqs: Vec<Vec<u64>> = out.iter().map(unreliable).collect();
    assert_eq!(
        seqs,
        vec![
            vec![0],
            vec![],
            vec![],
            vec![1, 2],
            vec![5],
            vec![3],
            vec![5]
        ]
    );
}

#[test]
fn datagram_numbers_wrap_at_24_bits() {
    let u = || F::new(UNRELIABLE, &app(24));
    let mut p = RaknetParser::default();
    let out = parse_all(
        &mut p,
        &[
            data(0xff_fffe, &[u()]),
            data(0xff_ffff, &[u()]),
            data(0, &[u()]),
        ],
    );
    let seqs: Vec<u64> = out.iter().map(|d| d.messages[0].seq.value).collect();
    assert_eq!(seqs, vec![0, 1, 2]);
}

#[test]
fn timestamps_pings_and_connection_messages() {
    // ID_TIMESTAMP, the sender's RakNet::Time (u64 BE ms), then the application's message.
    let mut stamped = vec![0x1b];
    stamped.extend_from_slice(&123_456u64.to_be_bytes());
    stamped.extend(app(20));
    // Connected ping: id 0x00 and the sender's time; pong: 0x03, the ping's and its own.
    let mut ping = vec![0x00];
    ping.extend_from_slice(&99u64.to_be_bytes());
    let mut pong = vec![0x03];
    pong.extend_from_slice(&99u64.to_be_bytes());
    pong.extend_from_slice(&101u64.to_be_bytes());
    let d = data(
        0,
        &[
            F::new(UNRELIABLE, &ping),
            F::new(UNRELIABLE, &pong),
            F::new(RELIABLE, &[0x09; 20]).reliable(0), // connection request
            F::new(UNRELIABLE_SEQUENCED, &stamped)
                .sequenced(0)
                .ordered(0, 0),
            F::new(RELIABLE_ORDERED, &[0x15]).reliable(1).ordered(0, 0), // disconnection
        ],
    );
    let out = RaknetParser::default().parse(&d).unwrap();
    assert_eq!(out.control, vec!["ping", "ping", "handshake", "disconnect"]);
    assert_eq!(out.messages.len(), 1);
    assert_eq!(
        out.messages[0].send,
        Some(SendStamp::Ticks {
            counter: Counter::new(123_456, 64),
            unit_ns: 1_000_000
        })
    );
    assert_eq!(out.messages[0].len, 29);
}

#[test]
fn flag_bits_outside_the_header_are_refused() {
    // A data datagram's low two bits are padding; so are an ACK's low five.
    let mut d = data(0, &[F::new(UNRELIABLE, &app(4))]);
    d[0] = 0x81;
    assert!(err(&d).contains("padding bits"));
    assert!(err(&[0xc1, 0, 1, 1, 0, 0, 0]).contains("padding bits"));
    assert!(err(&[0xb0, 0, 1, 1, 0, 0, 0]).contains("padding bits"));
    // Packet-pair, continuous-send and needs-B-and-AS are all accepted.
    d[0] = 0x80 | 0x10 | 0x08 | 0x04;
    assert!(resembles(&d));
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Datagrams RakNet 4.081 sent (`tests/peers/raknet_peer.py`, recorded through the relay).
#[test]
fn datagrams_recorded_from_real_raknet() {
    let mut p = RaknetParser::default();
    // Client's first connected datagram: 0x84 (valid, needs B and AS), number 0, a RELIABLE
    // frame (0x40) of 0x90 = 144 bits, reliable index 0, holding ID_CONNECTION_REQUEST (0x09).
    let request = hex("8400000040009000000009000661907e675008000000000000002000");
    assert_eq!(p.parse(&request).unwrap().control, vec!["handshake"]);
    // ACK of datagrams 1..=2 (one range), NAK of datagram 0x26.
    assert_eq!(
        p.parse(&hex("c0000100010000020000")).unwrap().control,
        vec!["ack"]
    );
    assert_eq!(
        p.parse(&hex("a0000101260000")).unwrap().control,
        vec!["ack"]
    );
    // A snapshot: datagram 2, UNRELIABLE_SEQUENCED (0x20) of 0x408 = 1032 bits, sequencing
    // index 0, ordering index 1 on channel 0 (the connection's one ordered message came
    // first), then ID_TIMESTAMP, the time 0x881afa ms, id 135 and counter 0, 115 filler bytes.
    let mut snapshot = hex("84020000200408000000010000001b0000000000881afa870000000000");
    snapshot.extend((1..115).map(|i: u8| i));
    let d = RaknetParser::default().parse(&snapshot).unwrap();
    assert_eq!(lanes(&d), vec![(lane_sequenced(0), 0)]);
    assert_eq!(d.messages[0].len, 129);
    assert_eq!(
        d.messages[0].send,
        Some(SendStamp::Ticks {
            counter: Counter::new(0x881afa, 64),
            unit_ns: 1_000_000
        })
    );
}
