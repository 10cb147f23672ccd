//! pcap and pcapng import on real capture files written here byte by byte: every supported
//! link type, nanosecond resolution, fragments, snap-length truncation, files cut anywhere and
//! records that claim absurd lengths.

use etherparse::PacketBuilder;
use jitterlab_capture::pcap::{CaptureSummary, read_capture_all};
use jitterlab_capture::{Error, Nanos, Record};

const SRC: [u8; 4] = [10, 0, 0, 1];
const DST: [u8; 4] = [10, 0, 0, 2];

/// An Ethernet II frame (optionally VLAN-tagged) carrying IPv4/UDP 5004 → 6000.
fn ether_udp(payload: &[u8], vlan: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let b = PacketBuilder::ethernet2([1; 6], [2; 6]);
    if vlan {
        b.single_vlan(etherparse::VlanId::try_new(7).unwrap())
            .ipv4(SRC, DST, 64)
            .udp(5004, 6000)
            .write(&mut out, payload)
            .unwrap();
    } else {
        b.ipv4(SRC, DST, 64)
            .udp(5004, 6000)
            .write(&mut out, payload)
            .unwrap();
    }
    out
}

/// An IPv4 (or IPv6) packet carrying UDP 5004 → 6000, no link header.
fn ip_udp(payload: &[u8], v6: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if v6 {
        PacketBuilder::ipv6([1; 16], [2; 16], 64)
            .udp(5004, 6000)
            .write(&mut out, payload)
            .unwrap();
    } else {
        PacketBuilder::ipv4(SRC, DST, 64)
            .udp(5004, 6000)
            .write(&mut out, payload)
            .unwrap();
    }
    out
}

/// A legacy pcap file: (seconds, fraction, frame, original length) per record.
fn pcap(link: u32, nano: bool, frames: &[(u32, u32, Vec<u8>, u32)]) -> Vec<u8> {
    let magic: u32 = if nano { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
    let mut out = Vec::new();
    for v in [
        magic.to_le_bytes(),
        [2, 0, 4, 0],
        [0; 4],
        [0; 4],
        65535u32.to_le_bytes(),
        link.to_le_bytes(),
    ] {
        out.extend_from_slice(&v);
    }
    for (sec, frac, data, orig) in frames {
        for v in [*sec, *frac, data.len() as u32, *orig] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(data);
    }
    out
}

fn block(kind: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    while !body.len().is_multiple_of(4) {
        body.push(0);
    }
    let len = (12 + body.len()) as u32;
    let mut out = Vec::new();
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&len.to_le_bytes());
    out
}

/// A pcapng file with one interface at `10^-tsresol` s and packets at `ticks`.
fn pcapng(link: u16, tsresol: u8, packets: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    let mut out = block(0x0a0d_0d0a, &shb);
    let mut idb = Vec::new();
    idb.extend_from_slice(&link.to_le_bytes());
    idb.extend_from_slice(&[0, 0]);
    idb.extend_from_slice(&0u32.to_le_bytes());
    idb.extend_from_slice(&[9, 0, 1, 0, tsresol, 0, 0, 0]); // if_tsresol
    idb.extend_from_slice(&[0, 0, 0, 0]); // opt_endofopt
    out.extend(block(1, &idb));
    for (ticks, data) in packets {
        let mut epb = Vec::new();
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&((ticks >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(*ticks as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(data);
        out.extend(block(6, &epb));
    }
    out
}

fn read(bytes: &[u8]) -> (Vec<Record>, CaptureSummary) {
    read_capture_all(bytes, None).unwrap()
}

#[test]
fn every_link_type_yields_the_datagram() {
    let payload = b"hello jitter";
    let ip4 = ip_udp(payload, false);
    let ip6 = ip_udp(payload, true);
    let mut sll = vec![0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00];
    sll.extend_from_slice(&ip4);
    let mut sll2 = vec![
        0x86, 0xdd, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0,
    ];
    sll2.extend_from_slice(&ip6);
    let mut null = 2u32.to_le_bytes().to_vec();
    null.extend_from_slice(&ip4);
    let mut loop6 = 30u32.to_be_bytes().to_vec();
    loop6.extend_from_slice(&ip6);
    let cases: Vec<(u32, Vec<u8>, &str)> = vec![
        (1, ether_udp(payload, false), "ETHERNET"),
        (1, ether_udp(payload, true), "ETHERNET"),
        (113, sll, "LINUX_SLL"),
        (276, sll2, "LINUX_SLL2"),
        (0, null, "NULL"),
        (108, loop6, "LOOP"),
        (101, ip4.clone(), "RAW"),
        (228, ip4, "IPV4"),
        (229, ip6, "IPV6"),
    ];
    for (link, frame, name) in cases {
        let len = frame.len() as u32;
        let (records, summary) = read(&pcap(link, false, &[(100, 250_000, frame, len)]));
        assert_eq!(summary.link_types, [name]);
        assert_eq!((summary.frames, summary.udp), (1, 1), "{name}");
        let r = &records[0];
        assert_eq!(r.payload, payload, "{name}");
        assert_eq!(r.time, Nanos(100_250_000_000), "{name}");
        assert_eq!(r.src.unwrap().0.port(), 5004);
        assert_eq!(r.dst.unwrap().0.port(), 6000);
        assert_eq!(r.orig_len, payload.len() as u32);
    }
}

#[test]
fn nanosecond_captures_keep_their_resolution() {
    let frame = ether_udp(b"x", false);
    let len = frame.len() as u32;
    let (records, summary) = read(&pcap(1, true, &[(5, 123_456_789, frame.clone(), len)]));
    assert!(summary.nanosecond);
    assert_eq!(records[0].time, Nanos(5_123_456_789));
    let (records, summary) = read(&pcapng(1, 9, &[(7_000_000_001, frame.clone())]));
    assert!(summary.nanosecond && summary.format == "pcapng");
    assert_eq!(records[0].time, Nanos(7_000_000_001));
    // Default pcapng resolution: microseconds.
    let (records, _) = read(&pcapng(1, 6, &[(1_500_000, frame)]));
    assert_eq!(records[0].time, Nanos(1_500_000_000));
}

/// Splits an IPv4/UDP packet into two fragments at an 8-byte boundary.
fn fragments(payload: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let whole = ip_udp(payload, false);
    let (header, body) = whole.split_at(20);
    let cut = 16;
    let frag = |data: &[u8], offset: usize, more: bool| {
        let mut h = header.to_vec();
        let total = (20 + data.len()) as u16;
        h[2..4].copy_from_slice(&total.to_be_bytes());
        h[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        let flags = ((offset / 8) as u16) | if more { 0x2000 } else { 0 };
        h[6..8].copy_from_slice(&flags.to_be_bytes());
        h[10..12].copy_from_slice(&[0, 0]);
        let sum = etherparse::Ipv4HeaderSlice::from_slice(&h)
            .unwrap()
            .to_header()
            .calc_header_checksum();
        h[10..12].copy_from_slice(&sum.to_be_bytes());
        h.extend_from_slice(data);
        h
    };
    (frag(&body[..cut], 0, true), frag(&body[cut..], cut, false))
}

#[test]
fn ip_fragments_are_reassembled_or_counted() {
    let payload: Vec<u8> = (0..40).collect();
    let (a, b) = fragments(&payload);
    let (la, lb) = (a.len() as u32, b.len() as u32);
    let (records, summary) = read(&pcap(
        101,
        false,
        &[(1, 0, b.clone(), lb), (1, 10, a.clone(), la)],
    ));
    assert_eq!(
        (
            summary.fragments,
            summary.reassembled,
            summary.fragments_lost
        ),
        (2, 1, 0)
    );
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].payload, payload);
    // The first half alone never completes: counted, not silently dropped.
    let (records, summary) = read(&pcap(101, false, &[(1, 0, a, la)]));
    assert!(records.is_empty());
    assert_eq!(summary.fragments_lost, 1);
    assert!(
        summary
            .problems()
            .iter()
            .any(|p| p.contains("never completed"))
    );
}

#[test]
fn snap_length_truncation_is_kept_and_marked() {
    let payload = vec![7u8; 200];
    let frame = ether_udp(&payload, false);
    let full = frame.len() as u32;
    let (records, summary) = read(&pcap(1, false, &[(1, 0, frame[..60].to_vec(), full)]));
    assert_eq!(summary.truncated, 1);
    assert_eq!(records[0].orig_len, 200);
    assert_eq!(records[0].payload.len(), 60 - 14 - 20 - 8);
    assert!(records[0].is_truncated());
}

#[test]
fn non_udp_and_filtered_frames_are_counted() {
    let mut tcp = Vec::new();
    PacketBuilder::ipv4(SRC, DST, 64)
        .tcp(1, 2, 3, 4)
        .write(&mut tcp, b"x")
        .unwrap();
    let udp = ip_udp(b"y", false);
    let (lt, lu) = (tcp.len() as u32, udp.len() as u32);
    let file = pcap(
        101,
        false,
        &[(1, 0, tcp, lt), (1, 0, udp.clone(), lu), (1, 0, udp, lu)],
    );
    let (records, summary) = read(&file);
    assert_eq!((records.len(), summary.not_udp), (2, 1));
    let filter = jitterlab_capture::filter::Filter::parse("udp port 9").unwrap();
    let (records, summary) = read_capture_all(&file[..], Some(&filter)).unwrap();
    assert_eq!((records.len(), summary.filtered_out), (0, 2));
}

#[test]
fn a_capture_cut_anywhere_reads_a_prefix_or_fails_cleanly() {
    let frames: Vec<_> = (0..4)
        .map(|i| {
            let f = ether_udp(&[i as u8; 30], false);
            let l = f.len() as u32;
            (i, 0, f, l)
        })
        .collect();
    for file in [
        pcap(1, false, &frames),
        pcapng(
            1,
            6,
            &frames
                .iter()
                .map(|f| (u64::from(f.0), f.2.clone()))
                .collect::<Vec<_>>(),
        ),
    ] {
        let (all, _) = read(&file);
        assert_eq!(all.len(), 4);
        for cut in 0..file.len() {
            match read_capture_all(&file[..cut], None) {
                Ok((records, summary)) => {
                    assert!(records.len() <= 4);
                    assert_eq!(records[..], all[..records.len()], "cut at {cut}");
                    let whole = records.len() < 4 && summary.trailing_bytes == 0;
                    assert!(
                        !whole || cut == file.len() || summary.frames == records.len() as u64,
                        "cut at {cut}"
                    );
                }
                Err(Error::Capture { offset, .. }) => assert!(offset as usize <= cut),
                Err(other) => panic!("cut at {cut}: {other}"),
            }
        }
    }
}

#[test]
fn absurd_record_lengths_are_an_error_with_the_offset() {
    let frame = ether_udp(b"ok", false);
    let len = frame.len() as u32;
    let mut file = pcap(1, false, &[(1, 0, frame, len)]);
    let second = file.len();
    for v in [2u32, 0, 1 << 31, 1 << 31] {
        file.extend_from_slice(&v.to_le_bytes());
    }
    file.extend_from_slice(&[0u8; 2048]);
    match read_capture_all(&file[..], None) {
        Err(Error::Capture { offset, reason }) => {
            assert_eq!(offset as usize, second, "{reason}");
            assert!(reason.contains("2147483648"), "{reason}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    let err = read_capture_all(&b"GIF89a and more bytes than a header"[..], None).unwrap_err();
    assert!(err.to_string().contains("not a pcap or pcapng"), "{err}");
}

/// An RTP packet: version 2, payload type 0, the given sequence number and timestamp.
fn rtp(seq: u16, ts: u32) -> Vec<u8> {
    let mut p = vec![0x80, 0];
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&ts.to_be_bytes());
    p.extend_from_slice(&0x1234_5678u32.to_be_bytes());
    p.extend_from_slice(&[0xd5; 160]);
    p
}

fn decode_all(records: &[Record]) -> jitterlab_capture::Decoded {
    let header = jitterlab_capture::pcap::header_for("t", &CaptureSummary::default(), "rtp");
    let mut c = jitterlab_capture::decode::Collector::new(&header, None).unwrap();
    for r in records {
        c.push(r);
    }
    c.finish()
}

/// Hostile input: zero-length UDP, timestamps that go backwards, sequence numbers that wrap
/// every few packets, and a million duplicates: counted correctly, never a panic.
#[test]
fn hostile_udp_and_rtp_inputs_are_counted_not_fatal() {
    // Zero-length UDP: imported (an empty payload), and the RTP decoder skips it with a reason.
    let empty = ether_udp(b"", false);
    let le = empty.len() as u32;
    let (records, summary) = read(&pcap(1, false, &[(1, 0, empty, le)]));
    assert_eq!((summary.udp, records[0].payload.len()), (1, 0));
    let d = decode_all(&records);
    assert_eq!(d.skipped, 1);
    assert!(
        d.skip_examples[0].contains("shorter than the 12-byte header"),
        "{:?}",
        d.skip_examples
    );

    // Capture timestamps going backwards: kept in file order, as recorded.
    let frames: Vec<_> = [(5u32, 0u32), (4, 0), (6, 0)]
        .iter()
        .enumerate()
        .map(|(i, &(s, f))| {
            let fr = ether_udp(&rtp(i as u16, 160 * i as u32), false);
            let l = fr.len() as u32;
            (s, f, fr, l)
        })
        .collect();
    let (records, _) = read(&pcap(1, false, &frames));
    let secs: Vec<i64> = records
        .iter()
        .map(|r| r.time.as_nanos() / 1_000_000_000)
        .collect();
    assert_eq!(secs, [5, 4, 6]);
    let stats = jitterlab_capture::stats::stream_stats(&decode_all(&records));
    assert_eq!((stats[0].packets, stats[0].lost), (3, 0));

    // Sequence numbers wrapping every few packets (65533, 65534, 65535, 0, 1, ...).
    let wrap: Vec<Record> = (0..40u32)
        .map(|i| {
            let seq = (65_533 + i) as u16;
            let mut r = Record::received(Nanos::from_millis(i64::from(i) * 20), rtp(seq, i * 160));
            r.src = Some(jitterlab_capture::trace::Endpoint(
                "10.0.0.1:5004".parse().unwrap(),
            ));
            r
        })
        .collect();
    let s = &jitterlab_capture::stats::stream_stats(&decode_all(&wrap))[0];
    assert_eq!(
        (s.packets, s.expected, s.lost, s.duplicates),
        (40, 40, 0, 0)
    );

    // A million copies of one packet: one sequence number, 999,999 duplicates, flat memory
    // (the seen-set is a bitmap over the stream's range).
    let one = Record::received(Nanos::ZERO, rtp(7, 0));
    let mut c = jitterlab_capture::decode::Collector::new(
        &jitterlab_capture::pcap::header_for("t", &CaptureSummary::default(), "rtp"),
        None,
    )
    .unwrap();
    for _ in 0..1_000_000 {
        c.push(&one);
    }
    let d = c.finish();
    let s = &jitterlab_capture::stats::stream_stats(&d)[0];
    assert_eq!(
        (s.packets, s.duplicates, s.expected, s.lost),
        (1_000_000, 999_999, 1, 0)
    );
}

/// A pcapng block whose length field claims 4 GiB (and one whose packet claims 4 GiB inside
/// a small block): an error naming the block's offset, nothing allocated for the claim.
#[test]
fn pcapng_blocks_claiming_4_gib_are_an_error_with_the_offset() {
    let mut file = pcapng(1, 6, &[(1, ether_udp(b"ok", false))]);
    let at = file.len();
    file.extend_from_slice(&6u32.to_le_bytes());
    file.extend_from_slice(&0xffff_fff0u32.to_le_bytes());
    file.extend_from_slice(&[0u8; 4096]);
    let err = read_capture_all(&file[..], None).unwrap_err().to_string();
    assert!(err.contains(&format!("offset {at}")), "{err}");
    assert!(err.contains("4294967280"), "{err}");
    // An enhanced packet block of 32 bytes whose captured length claims 4 GiB.
    let mut file = pcapng(1, 6, &[]);
    let at = file.len();
    let mut epb = Vec::new();
    for v in [0u32, 0, 1, 0xffff_ffff, 0xffff_ffff] {
        epb.extend_from_slice(&v.to_le_bytes());
    }
    file.extend(block(6, &epb));
    file.extend_from_slice(&[0u8; 64]);
    match read_capture_all(&file[..], None) {
        Err(e) => assert!(e.to_string().contains(&format!("offset {at}")), "{e}"),
        Ok((records, summary)) => {
            assert!(records.is_empty(), "{records:?}");
            assert!(
                summary.malformed > 0 || summary.trailing_bytes > 0,
                "{summary:?}"
            );
        }
    }
}

/// A pipe that hands out a few bytes per read (`tcpdump -U -w - |`): the same datagrams as
/// the whole file, for pcap and pcapng, and an I/O error of the input is the error reported.
#[test]
fn a_trickling_pipe_reads_like_the_file() {
    struct Trickle<'a>(&'a [u8], usize);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let frames: Vec<Vec<u8>> = (0..50u8).map(|i| ether_udp(&[i; 40], false)).collect();
    let legacy: Vec<(u32, u32, Vec<u8>, u32)> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (10, i as u32 * 20_000, f.clone(), f.len() as u32))
        .collect();
    let ng: Vec<(u64, Vec<u8>)> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (i as u64 * 20_000, f.clone()))
        .collect();
    for bytes in [pcap(1, false, &legacy), pcapng(1, 6, &ng)] {
        let (want, _) = read(&bytes);
        assert_eq!(want.len(), 50);
        for step in [1, 3, 7] {
            let (got, _) = read_capture_all(Trickle(&bytes, step), None).unwrap();
            assert_eq!(got, want, "{step} bytes per read");
        }
    }
    struct Failing;
    impl std::io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other(
                "corrupt gzip data: invalid block type",
            ))
        }
    }
    let err = read_capture_all(Failing, None).unwrap_err().to_string();
    assert!(err.contains("corrupt gzip data"), "{err}");
}

/// Read ahead on a second thread, a capture gives `each` the datagrams (in order, across
/// many batches), summary, cut tail and errors of the one-thread read.
#[test]
fn reading_ahead_gives_the_one_thread_read() {
    use jitterlab_capture::pcap::{read_capture_ahead, read_capture_ref};
    let frames: Vec<_> = (0..5000u32)
        .map(|i| {
            let f = ether_udp(&vec![i as u8; (i % 200) as usize + 1], i % 3 == 0);
            let l = f.len() as u32 + i % 2;
            (i / 50, (i % 50) * 1000, f, l)
        })
        .collect();
    let file = pcap(1, false, &frames);
    let one = |bytes: &[u8]| {
        let mut got = Vec::new();
        read_capture_ref(bytes, None, |r| {
            got.push(r.to_record());
            Ok(())
        })
        .map(|s| (got, s))
    };
    let two = |bytes: &[u8]| {
        let mut got = Vec::new();
        read_capture_ahead(bytes, None, |r| got.push(r.to_record())).map(|s| (got, s))
    };
    let (want, summary) = one(&file).unwrap();
    assert_eq!(want.len(), frames.len());
    let (got, got_summary) = two(&file).unwrap();
    assert_eq!(got, want);
    assert_eq!(format!("{got_summary:?}"), format!("{summary:?}"));

    let cut = &file[..file.len() - 7];
    let (want, summary) = one(cut).unwrap();
    let (got, got_summary) = two(cut).unwrap();
    assert_eq!(got, want);
    assert!(got_summary.trailing_bytes > 0);
    assert_eq!(format!("{got_summary:?}"), format!("{summary:?}"));

    let mut damaged = file.clone();
    let at = damaged.len() - (frames[4999].2.len() + 16);
    damaged[at + 8..at + 12].copy_from_slice(&(1u32 << 31).to_le_bytes());
    let want = one(&damaged).unwrap_err().to_string();
    let got = two(&damaged).unwrap_err().to_string();
    assert_eq!(got, want);
    assert!(got.contains("2147483648"), "{got}");
}
