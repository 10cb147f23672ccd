//! KCP segments built field by field as `ikcp_flush` encodes them (little-endian, 24-byte
//! header), alone and inside kcp2k's framing, and what the parser makes of them.

use super::*;
use crate::rng::Rng;

/// One segment: conv, cmd, frg, wnd, ts, sn, una, then `len` data bytes.
#[allow(clippy::too_many_arguments)]
fn seg(conv: u32, cmd: u8, frg: u8, wnd: u16, ts: u32, sn: u32, una: u32, len: usize) -> Vec<u8> {
    let mut b = conv.to_le_bytes().to_vec();
    b.push(cmd);
    b.push(frg);
    b.extend_from_slice(&wnd.to_le_bytes());
    for v in [ts, sn, una, len as u32] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend(std::iter::repeat_n(0x3C, len));
    b
}

fn push(conv: u32, ts: u32, sn: u32, len: usize) -> Vec<u8> {
    seg(conv, PUSH, 0, 128, ts, sn, 0, len)
}

/// An ACK as ikcp_flush writes it: the acknowledged segment's sn and ts, no data.
fn ack(conv: u32, sn: u32, ts: u32) -> Vec<u8> {
    seg(conv, ACK, 0, 128, ts, sn, sn + 1, 0)
}

fn parse(bytes: &[u8]) -> Result<Datagram, DecodeError> {
    KcpParser::default().parse(bytes)
}

fn ms(ts: u32) -> Option<SendStamp> {
    Some(SendStamp::Ticks {
        counter: Counter::new(u64::from(ts), 32),
        unit_ns: 1_000_000,
    })
}

#[test]
fn a_push_segment_is_a_message_with_its_sn_and_ts() {
    let bytes = push(0x1234, 50_000, 7, 40);
    assert_eq!(bytes.len(), 64);
    let d = parse(&bytes).unwrap();
    assert!(d.control.is_empty());
    assert_eq!(
        d.messages,
        [Message {
            lane: 0x1234,
            lane_name: "conv 0x1234".to_owned(),
            seq: Counter::new(7, 32),
            send: ms(50_000),
            len: 40,
            retransmit: false,
        }]
    );
    assert!(resembles(&bytes));
}

#[test]
fn several_segments_per_datagram_messages_and_control() {
    // ikcp_flush puts the pending ACKs first, then window probes, then data, in one datagram
    // up to the MTU.
    let mut bytes = ack(9, 3, 1000);
    bytes.extend(ack(9, 4, 1016));
    bytes.extend(seg(9, WASK, 0, 128, 0, 0, 5, 0));
    bytes.extend(seg(9, WINS, 0, 128, 0, 0, 5, 0));
    bytes.extend(push(9, 1033, 10, 12));
    bytes.extend(push(9, 1033, 11, 300));
    let d = parse(&bytes).unwrap();
    assert_eq!(d.control, ["ack", "ack", "window probe", "window size"]);
    assert_eq!(
        d.messages
            .iter()
            .map(|m| (m.seq.value, m.len))
            .collect::<Vec<_>>(),
        [(10, 12), (11, 300)]
    );
    assert!(resembles(&bytes));
    // A retransmitted copy is the same segment (with a fresh ts): a duplicate as it stands.
    let again = parse(&push(9, 1233, 10, 12)).unwrap();
    assert_eq!(again.messages[0].seq.value, 10);
    assert!(!again.messages[0].retransmit);
    assert_eq!(again.messages[0].send, ms(1233));
}

#[test]
fn lengths_that_lie_are_errors() {
    let mut bytes = push(1, 0, 0, 10);
    bytes[20..24].copy_from_slice(&11u32.to_le_bytes());
    assert_eq!(
        parse(&bytes).unwrap_err().to_string(),
        "kcp: segment at offset 0 says 11 data bytes, 10 left"
    );
    // The second segment cut inside its header.
    let mut two = push(1, 0, 0, 10);
    two.extend(&push(1, 0, 1, 10)[..20]);
    assert_eq!(
        parse(&two).unwrap_err().to_string(),
        "kcp: 20 bytes at offset 34 are too short for a 24-byte segment header"
    );
    // A command KCP does not have.
    let bad = seg(1, 85, 0, 128, 0, 0, 0, 0);
    assert_eq!(
        parse(&bad).unwrap_err().to_string(),
        "kcp: unknown command 85 in the segment at offset 0"
    );
    // A length near 2^32 does not overflow.
    let mut huge = push(1, 0, 0, 4);
    huge[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(parse(&huge).is_err());
    assert!(parse(&[]).is_err());
    assert!(parse(&[0x51; 23]).is_err());
}

#[test]
fn kcp2k_framing_with_cookie_is_learnt() {
    // kcp2k (Mirror): channel 1, the cookie, then KCP segments of conversation 0.
    let cookie = 0x5EED_0042u32.to_le_bytes();
    let reliable = |sn| {
        let mut b = vec![CHANNEL_RELIABLE];
        b.extend_from_slice(&cookie);
        b.extend(push(0, 700 + sn, sn, 20));
        b
    };
    let mut p = KcpParser::default();
    let d = p.parse(&reliable(1)).unwrap();
    assert_eq!(p.framing(), Some(Framing::Kcp2kCookie));
    assert_eq!(d.messages[0].seq.value, 1);
    assert_eq!(d.messages[0].lane_name, "conv 0x0");
    assert!(resembles(&reliable(1)));
    // An unreliable datagram: channel 2, the cookie, kind 4 and the message, no KCP header
    // and so no sequence number: counted, not a message.
    let mut unreliable = vec![CHANNEL_UNRELIABLE];
    unreliable.extend_from_slice(&cookie);
    unreliable.push(UNRELIABLE_DATA);
    unreliable.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let d = p.parse(&unreliable).unwrap();
    assert_eq!(d.control, ["unreliable"]);
    assert!(d.messages.is_empty());
    assert!(resembles(&unreliable));
    unreliable[5] = UNRELIABLE_DISCONNECT;
    assert_eq!(p.parse(&unreliable).unwrap().control, ["disconnect"]);
    unreliable[5] = 9;
    assert!(
        p.parse(&unreliable)
            .unwrap_err()
            .to_string()
            .contains("unknown unreliable kind 9")
    );
    // Once learnt, raw segments are not read as kcp2k's.
    assert!(
        p.parse(&push(0, 1, 2, 20))
            .unwrap_err()
            .to_string()
            .contains("kcp2k: unknown channel 0")
    );
}

#[test]
fn kcp2k_framing_before_the_cookie_is_learnt() {
    let mut b = vec![CHANNEL_RELIABLE];
    b.extend(push(0, 5, 3, 8));
    b.extend(ack(0, 2, 4));
    let mut p = KcpParser::default();
    let d = p.parse(&b).unwrap();
    assert_eq!(p.framing(), Some(Framing::Kcp2k));
    assert_eq!(d.messages[0].seq.value, 3);
    assert_eq!(d.control, ["ack"]);
}

#[test]
fn raw_segments_are_learnt_as_raw() {
    let mut p = KcpParser::default();
    p.parse(&push(0x0102_0304, 5, 3, 8)).unwrap();
    assert_eq!(p.framing(), Some(Framing::Raw));
}

#[test]
fn mirror_batches_give_their_timestamp() {
    // A batch: f64 seconds, then varuint-size-prefixed messages (one of 3 bytes, one of 300:
    // Mirror writes 300 as 241 + (300 - 240) / 256, (300 - 240) % 256).
    let mut batch = 12.625f64.to_le_bytes().to_vec();
    batch.extend_from_slice(&[3, 0xAA, 0xBB, 0xCC]);
    batch.extend_from_slice(&[241, 60]);
    batch.extend(std::iter::repeat_n(0, 300));
    assert_eq!(mirror_batch_time(&batch), Some(12.625));
    // A size that runs past the end, a negative or infinite time, no message at all.
    let mut short = batch.clone();
    short.pop();
    assert_eq!(mirror_batch_time(&short), None);
    let mut negative = batch.clone();
    negative[..8].copy_from_slice(&(-1.0f64).to_le_bytes());
    assert_eq!(mirror_batch_time(&negative), None);
    let mut inf = batch.clone();
    inf[..8].copy_from_slice(&f64::INFINITY.to_le_bytes());
    assert_eq!(mirror_batch_time(&inf), None);
    assert_eq!(mirror_batch_time(&batch[..8]), None);
    assert_eq!(mirror_varuint(&[249, 1, 2]), Some((2288 + 258, 3)));
    assert_eq!(mirror_varuint(&[250, 1, 0, 1]), Some((65_537, 4)));
}

#[test]
fn other_protocols_and_random_bytes_do_not_resemble_kcp() {
    let mut rtp = vec![0x80, 0x00, 0x00, 0x01, 0, 0, 0, 160, 0x12, 0x34, 0x56, 0x78];
    rtp.extend(std::iter::repeat_n(0xD5, 160));
    let dns =
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01";
    let stun = b"\x00\x01\x00\x00\x21\x12\xA4\x42\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0A\x0B\x0C";
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
    // An ENet ping is not KCP either.
    assert!(!resembles(&[
        0x80, 0x00, 0x01, 0xF4, 0x85, 0xFF, 0x00, 0x09
    ]));
    let mut rng = Rng::new(16);
    let mut passed = 0;
    for _ in 0..20_000 {
        let len = (rng.next_u64() % 200) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let _ = parse(&bytes);
        passed += usize::from(resembles(&bytes));
    }
    // Only kcp2k's unreliable shape (channel 2, any cookie, kind 4 or 5) can pass by chance:
    // 2 of 256 first bytes times 2 of 256 sixth bytes.
    assert!(
        passed <= 5,
        "{passed} of 20,000 random datagrams resemble KCP"
    );
}
