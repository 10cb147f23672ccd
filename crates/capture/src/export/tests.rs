//! The exporter against the crate's own pcap/pcapng reader (the tshark comparison is in the
//! CLI tests).

use super::*;
use crate::Nanos;
use crate::trace::{Clock, Endpoint, Source};

fn header(offset: Option<i64>) -> Header {
    Header::at(
        Clock {
            name: "test".into(),
            realtime_offset_ns: offset,
        },
        Source {
            kind: "synthetic".into(),
            detail: "unit test".into(),
        },
        0,
    )
}

fn records() -> Vec<Record> {
    let mut a = Record::received(Nanos(1_700_000_000_123_456_789), b"first".to_vec());
    a.src = Some(Endpoint("10.0.0.1:5004".parse().unwrap()));
    a.dst = Some(Endpoint("10.0.0.2:6000".parse().unwrap()));
    let mut cut = Record::received(Nanos(1_700_000_000_200_000_001), vec![7; 10]);
    cut.orig_len = 1200;
    cut.src = Some(Endpoint("[2001:db8::5]:9".parse().unwrap()));
    cut.dst = Some(Endpoint("[2001:db8::6]:10".parse().unwrap()));
    let sent = Record::sent(Nanos(1_700_000_000_100_000_000), b"truth".to_vec());
    let stats = CaptureStats {
        received: 2,
        kernel_drops: 1,
        ..CaptureStats::default()
    }
    .to_record(Nanos(1_700_000_001_000_000_000));
    let unknown = Record {
        kind: RecordKind::Other(9),
        ..Record::received(Nanos(5), vec![])
    };
    vec![a, sent, cut, stats, unknown]
}

fn export(format: CaptureFormat, header: &Header, records: &[Record]) -> (Vec<u8>, ExportSummary) {
    let mut w = CaptureWriter::new(Vec::new(), format, header).unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn pcapng_reads_back_with_times_addresses_payloads_and_ground_truth() {
    let recs = records();
    let (bytes, summary) = export(CaptureFormat::Pcapng, &header(Some(0)), &recs);
    assert_eq!(
        (
            summary.received,
            summary.sent,
            summary.stats,
            summary.unknown_left_out
        ),
        (2, 1, 1, 1)
    );
    assert_eq!(summary.placeholders, 1);
    assert_eq!(summary.truncated, 1);
    let (back, cap) = crate::pcap::read_capture_all(&bytes[..], None).unwrap();
    assert_eq!(cap.format, "pcapng");
    assert!(cap.nanosecond);
    assert_eq!(back.len(), 3, "{back:?}");
    assert_eq!(cap.ground_truth, 1);
    let (a, sent, cut) = (&back[0], &back[1], &back[2]);
    assert_eq!(
        (a.time, a.src, a.dst, &a.payload),
        (recs[0].time, recs[0].src, recs[0].dst, &recs[0].payload)
    );
    assert_eq!(sent.kind, RecordKind::Sent);
    assert_eq!(sent.time, recs[1].time);
    assert_eq!(sent.src, Some(Endpoint("192.0.2.1:50000".parse().unwrap())));
    assert_eq!(sent.payload, b"truth");
    assert_eq!(
        (cut.time, cut.src, cut.dst),
        (recs[2].time, recs[2].src, recs[2].dst)
    );
    assert_eq!((cut.payload.len(), cut.orig_len), (10, 1200));
    assert_eq!(cap.truncated, 1);
}

#[test]
fn pcap_keeps_received_datagrams_and_counts_the_rest() {
    let recs = records();
    let (bytes, summary) = export(CaptureFormat::Pcap, &header(Some(0)), &recs);
    assert_eq!(summary.received, 2);
    assert_eq!(
        (
            summary.sent_left_out,
            summary.stats_left_out,
            summary.unknown_left_out
        ),
        (1, 1, 1)
    );
    assert_eq!(summary.left_out().len(), 3);
    let (back, cap) = crate::pcap::read_capture_all(&bytes[..], None).unwrap();
    assert_eq!(cap.format, "pcap");
    assert!(cap.nanosecond);
    let times: Vec<Nanos> = back.iter().map(|r| r.time).collect();
    assert_eq!(times, [recs[0].time, recs[2].time]);
}

#[test]
fn the_realtime_offset_makes_unix_time_and_times_before_the_epoch_are_refused() {
    let rec = Record::received(Nanos(5), b"x".to_vec());
    let (bytes, _) = export(CaptureFormat::Pcapng, &header(Some(1_000_000_000)), &[rec]);
    let (back, _) = crate::pcap::read_capture_all(&bytes[..], None).unwrap();
    assert_eq!(back[0].time, Nanos(1_000_000_005));
    let mut w = CaptureWriter::new(Vec::new(), CaptureFormat::Pcap, &header(None)).unwrap();
    w.write(&Record::received(Nanos(1), vec![])).unwrap();
    let err = w.write(&Record::received(Nanos(-1), vec![])).unwrap_err();
    assert!(err.to_string().contains("record #1"), "{err}");
}
