//! Property tests of the trace format: what is written reads back equal, and a file cut at
//! any byte reads back as a prefix of what was written (crash tolerance).

use jitterlab_capture::trace::{Clock, Direction, Endpoint, Header, Record, RecordKind, Source};
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
                kind: RecordKind::from_code(kind),
                flags,
                direction: Direction::from_code(direction),
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

/// Flips one bit at a time in every byte of a small file. Nothing panics; every record that
/// ends before the flipped byte reads back unchanged; the reader always ends.
#[test]
fn every_single_bit_flip_reads_the_records_before_it_or_fails_cleanly() {
    let records: Vec<Record> = (0..4)
        .map(|i| {
            let mut r = Record::received(Nanos(i * 20_000_000), vec![0x80, i as u8, 7, 9]);
            r.src = Some(Endpoint(([10, 0, 0, 1], 5004).into()));
            r
        })
        .collect();
    let bytes = write_all(&records);
    let header_len = Reader::new(&bytes[..]).unwrap().header_len() as usize;
    let ends: Vec<usize> = (1..=records.len())
        .map(|n| write_all(&records[..n]).len())
        .collect();
    let mut outcomes = [0usize; 3];
    for at in header_len..bytes.len() {
        for bit in 0..8 {
            let mut flipped = bytes.clone();
            flipped[at] ^= 1 << bit;
            let mut reader = Reader::new(&flipped[..]).unwrap();
            let mut back = Vec::new();
            let outcome = loop {
                match reader.read_record() {
                    Ok(Some(r)) => back.push(r),
                    Ok(None) if reader.trailing_bytes() == 0 => break 0,
                    Ok(None) => break 1,
                    Err(e) => {
                        // A corrupt record is named by the offset just past the last good one
                        // (a flipped length can make the damaged record itself parse).
                        let text = e.to_string();
                        let offset = format!("offset {}", reader.valid_len());
                        assert!(text.contains(&offset), "byte {at} bit {bit}: {text}");
                        break 2;
                    }
                }
                assert!(back.len() <= flipped.len(), "the reader must end");
            };
            outcomes[outcome] += 1;
            let intact = ends.iter().filter(|&&end| end <= at).count();
            assert!(
                back.len() >= intact,
                "byte {at} bit {bit}: lost intact records"
            );
            assert_eq!(&back[..intact], &records[..intact], "byte {at} bit {bit}");
        }
    }
    // All three endings happen: values changed in place, lengths that run off the end, and
    // markers that are not what a record holds.
    assert!(outcomes.iter().all(|&n| n > 0), "{outcomes:?}");
}

/// A header whose string claims 4 GiB (followed by endless bytes) is refused after at most
/// `MAX_HEADER_BYTES`, not read until memory runs out.
#[test]
fn a_header_claiming_4_gib_is_refused() {
    use std::io::Read;
    let mut start = vec![0x81, 0xa6];
    start.extend_from_slice(b"format");
    start.extend_from_slice(&[0xdb, 0xff, 0xff, 0xff, 0xff]);
    let endless = start.as_slice().chain(std::io::repeat(b'a'));
    let err = Reader::new(endless).unwrap_err().to_string();
    assert!(err.contains("runs past"), "{err}");
    // Cut short instead of endless: the same claim is a cut-short header.
    let err = Reader::new(&start[..]).unwrap_err().to_string();
    assert!(err.contains("cut short"), "{err}");
}

/// A record whose payload claims 4 GiB is a corrupt record at its own offset, read no further.
#[test]
fn a_record_claiming_4_gib_is_corrupt_at_its_offset() {
    use std::io::Read;
    let good = Record::received(Nanos(5), vec![1, 2, 3]);
    let mut bytes = write_all(std::slice::from_ref(&good));
    let offset = bytes.len();
    bytes.extend_from_slice(&[0x98, 0x06, 0x00, 0x00, 0x00, 0xc0, 0xc0, 0x03]);
    bytes.extend_from_slice(&[0xc6, 0xff, 0xff, 0xff, 0xff]);
    let endless = bytes.as_slice().chain(std::io::repeat(0));
    let mut reader = Reader::new(endless).unwrap();
    assert_eq!(reader.read_record().unwrap(), Some(good));
    let err = reader.read_record().unwrap_err().to_string();
    assert!(err.contains(&format!("offset {offset}")), "{err}");
    assert!(err.contains("payload claims 4294967295 bytes"), "{err}");
    assert_eq!(reader.read_record().unwrap(), None);
}

/// Other writers may pick wider integer markers and `str` for bytes; the reader takes them.
#[test]
fn records_with_wide_integers_and_str_payloads_read_back() {
    let mut bytes = write_all(&[]);
    let mut rec = vec![0xdc, 0x00, 0x08]; // array 16 of 8
    rec.extend_from_slice(&[0xd3, 0, 0, 0, 0, 0, 0, 0x01, 0x00]); // time: int64 256
    rec.extend_from_slice(&[0xcf, 0, 0, 0, 0, 0, 0, 0, 1]); // kind: uint64 1
    rec.extend_from_slice(&[0xd2, 0, 0, 0, 2]); // flags: int32 2
    rec.push(0x00); // direction
    rec.extend_from_slice(&[0xc4, 6, 127, 0, 0, 1, 0x13, 0x8c]); // src 127.0.0.1:5004
    rec.push(0xc0); // dst nil
    rec.extend_from_slice(&[0xcd, 0, 3]); // orig_len
    rec.extend_from_slice(&[0xa3, b'a', b'b', b'c']); // payload as fixstr
    bytes.extend_from_slice(&rec);
    let (back, trailing) = read_all(&bytes).unwrap();
    assert_eq!(trailing, 0);
    let r = &back[0];
    assert_eq!(
        (r.time, r.kind.code(), r.flags, r.orig_len),
        (Nanos(256), 1, 2, 3)
    );
    assert_eq!(r.src, Some(Endpoint(([127, 0, 0, 1], 5004).into())));
    assert_eq!(r.payload, b"abc");
    // A value out of its field's range is corrupt, not wrapped.
    let mut bad = write_all(&[]);
    bad.extend_from_slice(&[0x98, 0x00, 0xcd, 0x01, 0x00]);
    let err = read_all(&bad).unwrap_err().to_string();
    assert!(err.contains("kind: 256 is out of range"), "{err}");
}

/// A reader that hands out at most a few bytes per call, so records straddle every buffer
/// refill.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.step = self.step % 7 + 1;
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Records read back equal whether the whole record is in the read buffer (the fast path)
/// or straddles refills: a file far larger than the buffer, and the same file in trickles.
#[test]
fn records_straddling_buffer_refills_read_back_equal() {
    let records: Vec<Record> = (0..3_000)
        .map(|i| {
            let mut r = Record::received(
                Nanos(i * 7_919),
                vec![(i % 251) as u8; (i as usize * 37) % 1_200],
            );
            if i % 3 == 0 {
                r.src = Some(Endpoint(([192, 168, 0, (i % 200) as u8], 5004).into()));
            }
            r
        })
        .collect();
    let bytes = write_all(&records);
    assert!(bytes.len() > 1 << 20);
    let (back, trailing) = read_all(&bytes).unwrap();
    assert_eq!((back.len(), trailing), (records.len(), 0));
    assert_eq!(back, records);
    let mut reader = Reader::new(Trickle {
        data: &bytes,
        step: 0,
    })
    .unwrap();
    let mut trickled = Vec::new();
    while let Some(r) = reader.read_record().unwrap() {
        trickled.push(r);
    }
    assert_eq!(trickled, records);
    // Cut inside the last record: everything before it, and the cut reported.
    let cut = bytes.len() - 5;
    let (back, trailing) = read_all(&bytes[..cut]).unwrap();
    assert_eq!(back.len(), records.len() - 1);
    assert_eq!(trailing as usize, cut - write_all(&back).len());
}
