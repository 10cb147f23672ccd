//! ENet datagrams built field by field from `protocol.h` (big-endian, sizes as in
//! `commandSizes`), and what the parser makes of them.

use super::*;
use crate::rng::Rng;

/// A datagram under construction: the header word, then commands.
struct Dgram(Vec<u8>);

impl Dgram {
    /// A header for `peer` with the sent time when given.
    fn new(peer: u16, sent: Option<u16>) -> Self {
        let word = peer | if sent.is_some() { HEADER_SENT_TIME } else { 0 };
        let mut b = word.to_be_bytes().to_vec();
        if let Some(t) = sent {
            b.extend_from_slice(&t.to_be_bytes());
        }
        Self(b)
    }

    /// A command header: number | flags, channel, reliable sequence number.
    fn cmd(mut self, byte: u8, channel: u8, rseq: u16) -> Self {
        self.0.push(byte);
        self.0.push(channel);
        self.0.extend_from_slice(&rseq.to_be_bytes());
        self
    }

    fn u16(mut self, v: u16) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    fn data(mut self, n: usize) -> Self {
        self.0.extend(std::iter::repeat_n(0xAB, n));
        self
    }

    fn ack(self, channel: u8, acked: u16, echoed: u16) -> Self {
        self.cmd(ACKNOWLEDGE, channel, 0).u16(acked).u16(echoed)
    }

    fn ping(self, rseq: u16) -> Self {
        self.cmd(PING | FLAG_ACKNOWLEDGE, NO_CHANNEL, rseq)
    }

    fn reliable(self, channel: u8, rseq: u16, len: usize) -> Self {
        self.cmd(SEND_RELIABLE | FLAG_ACKNOWLEDGE, channel, rseq)
            .u16(len as u16)
            .data(len)
    }

    fn unreliable(self, channel: u8, rseq: u16, useq: u16, len: usize) -> Self {
        self.cmd(SEND_UNRELIABLE, channel, rseq)
            .u16(useq)
            .u16(len as u16)
            .data(len)
    }

    fn unsequenced(self, channel: u8, group: u16, len: usize) -> Self {
        self.cmd(SEND_UNSEQUENCED | FLAG_UNSEQUENCED, channel, 0)
            .u16(group)
            .u16(len as u16)
            .data(len)
    }

    /// One part of a fragmented message: `start` is the first part's sequence number.
    #[allow(clippy::too_many_arguments)]
    fn fragment(
        self,
        reliable: bool,
        channel: u8,
        rseq: u16,
        start: u16,
        count: u32,
        number: u32,
        total: u32,
        len: usize,
    ) -> Self {
        let byte = if reliable {
            SEND_FRAGMENT | FLAG_ACKNOWLEDGE
        } else {
            SEND_UNRELIABLE_FRAGMENT
        };
        self.cmd(byte, channel, rseq)
            .u16(start)
            .u16(len as u16)
            .u32(count)
            .u32(number)
            .u32(total)
            .u32(number * len as u32)
            .data(len)
    }

    /// CONNECT as `enet_host_connect` writes it: outgoing peer id, session ids, then mtu,
    /// window, channel count, bandwidths, throttle settings, connect id and data.
    fn connect(self) -> Self {
        let mut d = self
            .cmd(CONNECT | FLAG_ACKNOWLEDGE, NO_CHANNEL, 1)
            .u16(0)
            .u16(0xFFFF);
        for v in [1392, 65536, 2, 0, 0, 5000, 2, 2, 0xDEAD_BEEF, 0] {
            d = d.u32(v);
        }
        d
    }

    /// VERIFY_CONNECT: CONNECT's fields without the trailing data word.
    fn verify_connect(self) -> Self {
        let mut d = self
            .cmd(VERIFY_CONNECT | FLAG_ACKNOWLEDGE, NO_CHANNEL, 1)
            .u16(0)
            .u16(0);
        for v in [1392, 65536, 2, 0, 0, 5000, 2, 2, 0xDEAD_BEEF] {
            d = d.u32(v);
        }
        d
    }
}

fn parse(bytes: &[u8]) -> Result<Datagram, DecodeError> {
    EnetParser::default().parse(bytes)
}

fn seqs(d: &Datagram) -> Vec<(u32, u64)> {
    d.messages.iter().map(|m| (m.lane, m.seq.value)).collect()
}

#[test]
fn the_handshake_is_control_and_resembles_enet() {
    // The client's CONNECT goes to peer 0xFFF (it has no id yet), with a sent time since
    // CONNECT asks for an acknowledgement; 4 + 4 + 48 bytes.
    let connect = Dgram::new(NO_PEER, Some(0x1234)).connect().0;
    assert_eq!(connect.len(), 52);
    let d = parse(&connect).unwrap();
    assert!(d.messages.is_empty());
    assert_eq!(d.control, ["handshake"]);
    assert!(resembles(&connect));
    // The server's reply acknowledges the CONNECT and verifies it, in one datagram.
    let verify = Dgram::new(0, Some(0x1300))
        .ack(NO_CHANNEL, 1, 0x1234)
        .verify_connect()
        .0;
    assert_eq!(verify.len(), 4 + 8 + 44);
    assert_eq!(parse(&verify).unwrap().control, ["ack", "handshake"]);
    assert!(resembles(&verify));
}

#[test]
fn acks_and_pings_are_control() {
    // An ACK carries no sent time of its own (it does not ask to be acknowledged)...
    let acks = Dgram::new(3, None).ack(0, 7, 100).ack(NO_CHANNEL, 8, 120).0;
    let d = parse(&acks).unwrap();
    assert_eq!(d.control, ["ack", "ack"]);
    assert!(d.messages.is_empty());
    assert!(resembles(&acks));
    // ...a PING does.
    let ping = Dgram::new(3, Some(500)).ping(9).0;
    assert_eq!(parse(&ping).unwrap().control, ["ping"]);
    assert!(resembles(&ping));
    // A PING without the sent time is not what ENet sends.
    assert!(!resembles(&Dgram::new(3, None).ping(9).0));
}

#[test]
fn several_commands_give_messages_in_lanes_with_the_datagram_sent_time() {
    let bytes = Dgram::new(1, Some(65_000))
        .ack(0, 4, 64_990)
        .unreliable(0, 0, 1, 20)
        .unreliable(0, 0, 2, 21)
        .reliable(1, 5, 30)
        .unsequenced(2, 77, 10)
        .0;
    let d = parse(&bytes).unwrap();
    assert_eq!(d.control, ["ack"]);
    assert_eq!(
        seqs(&d),
        [
            (LANE_UNRELIABLE, 1),
            (LANE_UNRELIABLE, 2),
            (LANE_RELIABLE | 1, 5),
            (LANE_UNSEQUENCED, 77)
        ]
    );
    let names: Vec<_> = d.messages.iter().map(|m| m.lane_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "channel 0 unreliable",
            "channel 0 unreliable",
            "channel 1 reliable",
            "unsequenced"
        ]
    );
    assert_eq!(
        d.messages.iter().map(|m| m.len).collect::<Vec<_>>(),
        [20, 21, 30, 10]
    );
    let stamp = SendStamp::Ticks {
        counter: Counter::new(65_000, 16),
        unit_ns: 1_000_000,
    };
    assert!(d.messages.iter().all(|m| m.send == Some(stamp)));
    assert_eq!(d.messages[0].seq.bits, 32);
    assert_eq!(d.messages[2].seq.bits, 16);
    assert!(resembles(&bytes));
}

#[test]
fn unreliable_runs_are_joined_across_reliable_sends() {
    // peer.c: a reliable send on a channel restarts its unreliable numbers at 1; the
    // unreliable commands after it carry the new reliable number in their header.
    let mut p = EnetParser::default();
    let mut got = Vec::new();
    for (r, u) in [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (3, 1)] {
        let d = p
            .parse(&Dgram::new(0, None).unreliable(0, r, u, 8).0)
            .unwrap();
        got.push(d.messages[0].seq.value);
    }
    assert_eq!(got, [1, 2, 3, 4, 5, 6]);
    // One from the first run arriving late still gets its number.
    let late = p
        .parse(&Dgram::new(0, None).unreliable(0, 1, 2, 8).0)
        .unwrap();
    assert_eq!(late.messages[0].seq.value, 5);
    // Another channel counts on its own.
    let other = p
        .parse(&Dgram::new(0, None).unreliable(4, 9, 1, 8).0)
        .unwrap();
    assert_eq!(seqs(&other), [(LANE_UNRELIABLE | 4, 1)]);
}

#[test]
fn lengths_that_lie_are_errors_naming_the_command() {
    // SEND_UNRELIABLE says 100 data bytes; 10 follow.
    let mut bytes = Dgram::new(0, None).unreliable(0, 0, 1, 10).0;
    bytes[8..10].copy_from_slice(&100u16.to_be_bytes());
    let err = parse(&bytes).unwrap_err().to_string();
    assert_eq!(
        err,
        "enet: SEND_UNRELIABLE at offset 2 says 100 data bytes, 10 left"
    );
    // A command cut short.
    let mut cut = Dgram::new(0, Some(1)).connect().0;
    cut.truncate(30);
    assert_eq!(
        parse(&cut).unwrap_err().to_string(),
        "enet: CONNECT at offset 4 needs 48 bytes, 26 left"
    );
    // An unknown command number.
    let unknown = Dgram::new(0, None).cmd(13, 0, 0).0;
    assert_eq!(
        parse(&unknown).unwrap_err().to_string(),
        "enet: unknown command 13 at offset 2"
    );
    // More commands than ENet ever puts in one datagram. (ACKs of sequence number 0: read
    // as if a checksum came first, their fields would be command 0, so no reading fits.)
    let mut many = Dgram::new(0, None);
    for _ in 0..33 {
        many = many.ack(0, 0, 0);
    }
    let err = parse(&many.0).unwrap_err().to_string();
    assert!(err.starts_with("enet: more than 32 commands"), "{err}");
    // 32 are fine.
    let mut most = Dgram::new(0, Some(1));
    for i in 0..32 {
        most = most.ping(i);
    }
    assert_eq!(parse(&most.0).unwrap().control.len(), 32);
    // A send on channel 255.
    let err = parse(&Dgram::new(0, None).unreliable(NO_CHANNEL, 0, 1, 4).0).unwrap_err();
    assert!(err.to_string().contains("channel 255"), "{err}");
    // A send addressed to no peer.
    let err = parse(&Dgram::new(NO_PEER, None).unreliable(0, 0, 1, 4).0).unwrap_err();
    assert!(err.to_string().contains("no peer"), "{err}");
}

#[test]
fn truncated_headers_are_errors() {
    assert!(
        parse(&[0x80])
            .unwrap_err()
            .to_string()
            .contains("shorter than the 2-byte")
    );
    // The sent-time flag promises two more bytes.
    assert!(
        parse(&[0x80, 0x00, 0x01])
            .unwrap_err()
            .to_string()
            .contains("shorter than its 4-byte header")
    );
    // A header and nothing after it (a command header cut short: 3 of 4 bytes).
    let err = parse(&[0x00, 0x01, 0x05, 0xFF, 0x00])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("too short for a 4-byte command header"),
        "{err}"
    );
    assert!(parse(&[0x00, 0x01]).is_err());
}

#[test]
fn fragments_become_one_message_when_complete() {
    let mut p = EnetParser::default();
    // A reliable message of 2,500 bytes in 3 parts; each part has its own reliable number,
    // counting from the start number 10 (peer.c gives every part the acknowledge flag).
    let part = |n: u32| {
        let len = if n == 2 { 500 } else { 1000 };
        Dgram::new(0, Some(7))
            .fragment(true, 0, 10 + n as u16, 10, 3, n, 2500, len)
            .0
    };
    let d = p.parse(&part(0)).unwrap();
    assert_eq!(d.control, ["fragment"]);
    assert!(resembles(&part(0)));
    // A retransmitted copy of part 0 does not count twice.
    assert_eq!(p.parse(&part(0)).unwrap().control, ["fragment"]);
    assert_eq!(p.parse(&part(2)).unwrap().control, ["fragment"]);
    assert_eq!(p.pending_fragments(), 1);
    let done = p.parse(&part(1)).unwrap();
    assert!(done.control.is_empty());
    assert_eq!(seqs(&done), [(LANE_RELIABLE, 10)]);
    assert_eq!(done.messages[0].len, 2500);
    assert_eq!(p.pending_fragments(), 0);

    // An unreliable fragmented message: all parts share the header's reliable number and
    // the start (unreliable) number; it takes its place in the channel's unreliable lane.
    let mut p = EnetParser::default();
    p.parse(&Dgram::new(0, None).unreliable(1, 4, 1, 8).0)
        .unwrap();
    let upart = |n| {
        Dgram::new(0, None)
            .fragment(false, 1, 4, 2, 2, n, 1600, 800)
            .0
    };
    assert_eq!(p.parse(&upart(1)).unwrap().control, ["fragment"]);
    let done = p.parse(&upart(0)).unwrap();
    assert_eq!(seqs(&done), [(LANE_UNRELIABLE | 1, 2)]);
    assert_eq!(done.messages[0].len, 1600);
}

#[test]
fn fragments_that_never_complete_stay_bounded() {
    let mut p = EnetParser::default();
    for start in 0..5_000u16 {
        // Part 0 of 4 of every message; the other parts are lost.
        let d = p
            .parse(
                &Dgram::new(0, None)
                    .fragment(false, 0, 0, start, 4, 0, 4000, 1000)
                    .0,
            )
            .unwrap();
        assert_eq!(d.control, ["fragment"]);
        assert!(p.pending_fragments() <= MAX_PENDING_FRAGMENTS);
    }
    assert_eq!(p.pending_fragments(), MAX_PENDING_FRAGMENTS);
    // The newest sets are the ones kept: the last message's other parts complete it.
    for n in 1..4 {
        let d = p
            .parse(
                &Dgram::new(0, None)
                    .fragment(false, 0, 0, 4_999, 4, n, 4000, 1000)
                    .0,
            )
            .unwrap();
        if n == 3 {
            assert_eq!(d.messages.len(), 1);
        }
    }
}

#[test]
fn fragment_fields_that_lie_are_errors() {
    let lie = |count, number, total| {
        parse(
            &Dgram::new(0, Some(1))
                .fragment(true, 0, 1, 1, count, number, total, 100)
                .0,
        )
        .unwrap_err()
        .to_string()
    };
    assert!(lie(3, 3, 300).contains("fragment number 3 of 3"));
    assert!(lie(0, 0, 300).contains("fragment count 0"));
    assert!(lie(2_000_000, 0, 300).contains("fragment count 2000000"));
    assert!(lie(3, 2, 250).contains("does not fit a message of 250 bytes"));
    // A part that disagrees with the set it joins.
    let mut p = EnetParser::default();
    p.parse(
        &Dgram::new(0, Some(1))
            .fragment(true, 0, 1, 1, 3, 0, 300, 100)
            .0,
    )
    .unwrap();
    let err = p
        .parse(
            &Dgram::new(0, Some(1))
                .fragment(true, 0, 2, 1, 4, 1, 400, 100)
                .0,
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("joins a message of 3 parts"),
        "{err}"
    );
}

#[test]
fn a_checksum_is_learnt_from_the_first_datagram_that_needs_it() {
    // enet_host's optional checksum: 4 bytes after the header, before the commands.
    let mut with_sum = Dgram::new(0, Some(9)).0;
    with_sum.extend_from_slice(&[0x9A, 0x33, 0x01, 0x7C]);
    let with_sum = Dgram(with_sum).ping(3).unreliable(0, 0, 1, 12).0;
    let mut p = EnetParser::default();
    assert_eq!(p.checksum(), None);
    let d = p.parse(&with_sum).unwrap();
    assert_eq!(p.checksum(), Some(true));
    assert_eq!(d.control, ["ping"]);
    assert_eq!(seqs(&d), [(LANE_UNRELIABLE, 1)]);
    assert!(resembles(&with_sum));
    // Without the checksum the same commands are read at offset 4. This datagram also
    // reads with a checksum (the PING's 4 bytes taken for it), so it settles nothing...
    let mut p = EnetParser::default();
    let d = p
        .parse(&Dgram::new(0, Some(9)).ping(3).unreliable(0, 0, 1, 12).0)
        .unwrap();
    assert_eq!(
        d.control,
        ["ping"],
        "read without the checksum while unsettled"
    );
    assert_eq!(p.checksum(), None);
    // ...a PING alone does.
    p.parse(&Dgram::new(0, Some(10)).ping(4).0).unwrap();
    assert_eq!(p.checksum(), Some(false));
}

#[test]
fn compressed_datagrams_are_counted_not_read() {
    let mut bytes = Dgram::new(2, Some(5)).0;
    bytes[0] |= 0x40;
    bytes.extend_from_slice(&[0x13, 0x77, 0x02, 0x90, 0x11]);
    assert_eq!(parse(&bytes).unwrap().control, ["compressed"]);
    assert!(!resembles(&bytes));
}

/// What `resembles` says of other protocols' first bytes and of noise.
#[test]
fn other_protocols_and_random_bytes_do_not_resemble_enet() {
    // RTP: version 2, PT 0, seq 1, timestamp 160, SSRC, 160 bytes of payload.
    let mut rtp = vec![0x80, 0x00, 0x00, 0x01, 0, 0, 0, 160, 0x12, 0x34, 0x56, 0x78];
    rtp.extend(std::iter::repeat_n(0xD5, 160));
    // DNS query for example.com.
    let dns =
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01";
    // STUN binding request (magic cookie 0x2112A442) with no attributes.
    let stun = b"\x00\x01\x00\x00\x21\x12\xA4\x42\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0A\x0B\x0C";
    // QUIC long header (Initial), version 1.
    let mut quic = vec![0xC3, 0, 0, 0, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0x44, 0xE6];
    quic.extend(std::iter::repeat_n(0x5A, 1200));
    for (name, p) in [
        ("rtp", &rtp[..]),
        ("dns", &dns[..]),
        ("stun", &stun[..]),
        ("quic", &quic[..]),
    ] {
        assert!(!resembles(p), "{name}");
    }
    let mut rng = Rng::new(15);
    let mut passed = 0;
    for i in 0..20_000 {
        let len = 2 + (rng.next_u64() % 200) as usize + i % 3;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        // Never a panic, whatever the bytes.
        let _ = parse(&bytes);
        passed += usize::from(resembles(&bytes));
    }
    // Random bytes pass only by the chance of a short datagram being one well-formed
    // command (1 of these 20,000 at the time of writing).
    assert!(
        passed <= 5,
        "{passed} of 20,000 random datagrams resemble ENet"
    );
}
