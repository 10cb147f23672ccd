//! Property tests of the trace format: what is written reads back equal, and a file cut at
//! any byte reads back as a prefix of what was written (crash tolerance).

use jitterlab_capture::trace::{Clock, Endpoint, Header, Record, Source};
use jitterlab_capture::{Nanos, Reader, Writer};
use proptest::prelude::*;

fn header() -> Header {
    let mut h = Header::at(
        Clock {
            name: "CLOCK_MONOTONIC".into(),
            realtime_offset_ns: Some(1_700_000_000_000_000_000),
        },
        Source {
            kind: "live".into(),
            detail: "127.0.0.1:5004".into(),
        },
        1_700_000_000_000_000_000,
    );
    h.decoder = Some("rtp".into());
    h.hints.insert("clock_rate.96".into(), "90000".into());
    h.notes.push("proptest".into());
    h
}

fn arb_endpoint() -> impl Strategy<Value = Option<Endpoint>> {
    prop_oneof![
        Just(None),
        (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| Some(Endpoint((ip, port).into()))),
        (any::<[u8; 16]>(), any::<u16>()).prop_map(|(ip, port)| Some(Endpoint((ip, port).into()))),
    ]
}

fn arb_record() -> impl Strategy<Value = Record> {
    (
        any::<i64>(),
        any::<u8>(),
        any::<u32>(),
        0u8..3,
        arb_endpoint(),
        arb_endpoint(),
        any::<u32>(),
        proptest::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(
            |(time, kind, flags, direction, src, dst, orig_len, payload)| Record {
                time: Nanos(time),
                kind,
                flags,
                direction,
                src,
                dst,
                orig_len,
                payload,
            },
        )
}

fn write_all(records: &[Record]) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), &header()).unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    w.into_inner()
}

fn read_all(bytes: &[u8]) -> Result<(Vec<Record>, u64), jitterlab_capture::Error> {
    let mut reader = Reader::new(bytes)?;
    let mut out = Vec::new();
    while let Some(r) = reader.read_record()? {
        out.push(r);
    }
    Ok((out, reader.trailing_bytes()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The hand-written encoder makes exactly the bytes serde does.
    #[test]
    fn emit_matches_the_serde_encoding(record in arb_record()) {
        let mut fast = Vec::new();
        record.emit(&mut fast);
        prop_assert_eq!(fast, rmp_serde::to_vec(&record).unwrap());
    }

    #[test]
    fn written_records_read_back_equal(records in proptest::collection::vec(arb_record(), 0..40)) {
        let bytes = write_all(&records);
        let reader = Reader::new(&bytes[..]).unwrap();
        prop_assert_eq!(reader.header(), &header());
        let (back, trailing) = read_all(&bytes).unwrap();
        prop_assert_eq!(back, records);
        prop_assert_eq!(trailing, 0);
    }

    #[test]
    fn a_file_cut_at_any_byte_reads_as_a_prefix(
        records in proptest::collection::vec(arb_record(), 1..12),
        cut_share in 0.0f64..1.0,
    ) {
        let bytes = write_all(&records);
        let header_len = Reader::new(&bytes[..]).unwrap().header_len() as usize;
        let cut = header_len + ((bytes.len() - header_len) as f64 * cut_share) as usize;
        let (back, trailing) = read_all(&bytes[..cut]).unwrap();
        prop_assert!(back.len() <= records.len());
        prop_assert_eq!(&records[..back.len()], &back[..]);
        // Everything after the last whole record is reported, nothing more.
        let whole = write_all(&back).len();
        prop_assert_eq!(trailing as usize, cut - whole);
    }
}

/// Exhaustive over every cut point of one small file, not just sampled ones.
#[test]
fn every_cut_point_of_a_small_file_reads_as_a_prefix() {
    let records: Vec<Record> = (0..5)
        .map(|i| Record::received(Nanos(i * 1_000_000), vec![i as u8; 3 + i as usize]))
        .collect();
    let bytes = write_all(&records);
    let header_len = Reader::new(&bytes[..]).unwrap().header_len() as usize;
    for cut in 0..=bytes.len() {
        match read_all(&bytes[..cut]) {
            Ok((back, trailing)) => {
                assert!(
                    cut >= header_len,
                    "cut {cut} inside the header read as a trace"
                );
                assert_eq!(&records[..back.len()], &back[..], "cut {cut}");
                assert_eq!(trailing as usize, cut - write_all(&back).len(), "cut {cut}");
            }
            Err(e) => assert!(cut < header_len, "cut {cut} after the header failed: {e}"),
        }
    }
}
