//! Bad and mixed input through the per-flow classifier: random bytes, transport headers that
//! lie, fragments that never complete, a flow that changes protocol midway. Each is counted
//! and skipped with its reason, never a panic, and the flows beside it decode as they are.

use std::net::SocketAddr;

use jitterlab_capture::decode::{Collector, Decoded};
use jitterlab_capture::rng::Rng;
use jitterlab_capture::trace::{Clock, Endpoint, Header, Record, Source};
use jitterlab_capture::{Nanos, StreamInfo};

fn header() -> Header {
    Header::new(
        Clock {
            name: "test".into(),
            realtime_offset_ns: None,
        },
        Source {
            kind: "test".into(),
            detail: String::new(),
        },
    )
}

fn addr(port: u16) -> Option<Endpoint> {
    Some(Endpoint(SocketAddr::from(([10, 0, 0, 1], port))))
}

fn record(at_ms: i64, src: u16, payload: Vec<u8>) -> Record {
    let mut r = Record::received(Nanos::from_millis(at_ms), payload);
    r.src = addr(src);
    r.dst = addr(9_000);
    r.orig_len = r.payload.len() as u32;
    r
}

fn rtp(seq: u16, ssrc: u32) -> Vec<u8> {
    let mut b = vec![0u8; 172];
    b[0] = 0x80;
    b[2..4].copy_from_slice(&seq.to_be_bytes());
    b[4..8].copy_from_slice(&(u32::from(seq) * 160).to_be_bytes());
    b[8..12].copy_from_slice(&ssrc.to_be_bytes());
    b
}

/// An ENet datagram to peer 1 with one SEND_UNRELIABLE command on channel 0 (unreliable
/// sequence number `seq`) whose header says `claimed` data bytes and carries 20.
fn enet_unreliable(seq: u16, claimed: u16) -> Vec<u8> {
    let mut b = vec![0x00, 0x01, 7, 0, 0, 0];
    b.extend_from_slice(&seq.to_be_bytes());
    b.extend_from_slice(&claimed.to_be_bytes());
    b.extend_from_slice(&[0xAB; 20]);
    b
}

fn decode(records: &[Record]) -> Decoded {
    let mut c = Collector::new(&header(), None).unwrap();
    for r in records {
        c.push(r);
    }
    c.finish()
}

fn stream_from(d: &Decoded, port: u16) -> Vec<&StreamInfo> {
    d.streams.iter().filter(|s| s.src == addr(port)).collect()
}

#[test]
fn bad_flows_are_counted_with_their_reasons_beside_good_ones() {
    let mut rng = Rng::new(7);
    let mut records = Vec::new();
    for i in 0..300u16 {
        let t = i64::from(i) * 20;
        // Port 1000: RTP for 150 packets, then the flow turns to random bytes.
        records.push(record(
            t,
            1_000,
            if i < 150 {
                rtp(i, 0xC0FFEE)
            } else {
                (0..80).map(|_| rng.next_u64() as u8).collect()
            },
        ));
        // Port 2000: random bytes throughout.
        records.push(record(
            t + 1,
            2_000,
            (0..60).map(|_| rng.next_u64() as u8).collect(),
        ));
        // Port 3000: ENet unreliable sends; every 25th header claims 200 data bytes.
        let claimed = if i % 25 == 24 { 200 } else { 20 };
        records.push(record(t + 2, 3_000, enet_unreliable(i + 1, claimed)));
    }
    let d = decode(&records);
    let flow = |port: u16| d.flows.iter().find(|f| f.src == addr(port)).unwrap();

    // The RTP flow: one stream of 150 packets; the 150 random datagrams after it are skipped,
    // counted on the flow, and those that happen to parse as RTP (first byte 0x80–0xBF, a new
    // SSRC each) are not made into one-packet streams.
    assert_eq!(flow(1_000).protocol, "rtp");
    let rtp_streams = stream_from(&d, 1_000);
    assert_eq!(rtp_streams.len(), 1, "{rtp_streams:?}");
    assert_eq!(d.samples_of(rtp_streams[0].id).len(), 150);
    assert_eq!(flow(1_000).packets, 300);
    assert_eq!(flow(1_000).skipped, 150);
    let why = flow(1_000).skip_example.as_deref().unwrap();
    assert!(why.contains("RTP") || why.contains("stray SSRC"), "{why}");

    // Random bytes: a plain UDP flow, every packet kept as an arrival, no send times.
    assert_eq!(flow(2_000).protocol, "udp");
    let plain = stream_from(&d, 2_000);
    assert_eq!(plain.len(), 1);
    assert!(!plain[0].has_send_times());
    assert_eq!(d.samples_of(plain[0].id).len(), 300);

    // ENet: detected; the 12 lying headers skipped with the reason, the rest decoded.
    assert_eq!(flow(3_000).protocol, "enet");
    assert_eq!(flow(3_000).skipped, 12);
    let enet = stream_from(&d, 3_000);
    assert_eq!(enet.len(), 1);
    assert_eq!(d.samples_of(enet[0].id).len(), 288);
    let why = flow(3_000).skip_example.as_deref().unwrap();
    assert!(why.contains("enet") && why.contains("200"), "{why}");
    assert_eq!(
        d.skipped,
        flow(1_000).skipped + flow(2_000).skipped + flow(3_000).skipped
    );
}

#[test]
fn the_rtp_flow_skips_what_is_not_rtp_after_it_changed() {
    let mut rng = Rng::new(3);
    let records: Vec<Record> = (0..200u16)
        .map(|i| {
            let p = if i < 100 {
                rtp(i, 1)
            } else {
                let mut junk: Vec<u8> = (0..40).map(|_| rng.next_u64() as u8).collect();
                junk[0] = 0x11; // not RTP, RTCP, STUN or DTLS
                junk
            };
            record(i64::from(i) * 20, 1_000, p)
        })
        .collect();
    let d = decode(&records);
    assert_eq!(d.flows[0].protocol, "rtp");
    assert_eq!(d.flows[0].skipped, 100);
    assert_eq!(d.samples.len(), 100);
    assert!(
        d.skip_examples[0].contains("RTP version"),
        "{:?}",
        d.skip_examples
    );
}

#[test]
fn fragments_that_never_complete_are_counted_and_bounded() {
    // ENet SEND_UNRELIABLE_FRAGMENT (12): start seq, fragment count 3, number 0 only, total
    // 3 × 20 bytes: the other two parts never come.
    let part = |start: u16| {
        let mut b = vec![0x00, 0x01, 12, 0, 0, 0];
        b.extend_from_slice(&start.to_be_bytes()); // start sequence number
        b.extend_from_slice(&20u16.to_be_bytes()); // data length
        b.extend_from_slice(&3u32.to_be_bytes()); // fragment count
        b.extend_from_slice(&0u32.to_be_bytes()); // fragment number
        b.extend_from_slice(&60u32.to_be_bytes()); // total length
        b.extend_from_slice(&0u32.to_be_bytes()); // fragment offset
        b.extend_from_slice(&[0xCD; 20]);
        b
    };
    let records: Vec<Record> = (0..5_000u16)
        .map(|i| record(i64::from(i) * 10, 4_000, part(i + 1)))
        .collect();
    let d = decode(&records);
    let f = &d.flows[0];
    assert_eq!(f.protocol, "enet");
    assert_eq!(f.counted.get("fragment"), Some(&5_000), "{f:?}");
    assert!(
        d.samples.is_empty(),
        "no message from parts that never completed"
    );
    assert_eq!(d.skipped, 0);
}
