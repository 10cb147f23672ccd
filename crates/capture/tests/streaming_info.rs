//! `jitterlab info`'s streaming path ([`Accumulator`] over the collector's sink, and its
//! second pass) gives exactly what the in-memory path ([`Summary::from_decoded`] over a whole
//! [`Decoded`]) gives: on the demo trace, on synthetic traces through every network profile,
//! on hand-made RTP whose clock rate must be inferred, with `--decoder periodic`, on a stream
//! long enough for the percentiles to need their second pass, and on every shared capture
//! (read from `JITTERLAB_SHARED_DATA`, skipped saying so when unset) with each decoder.

use jitterlab_capture::decode::{Collector, DecoderConfig, DecoderKind};
use jitterlab_capture::pcap::{self, CaptureSummary};
use jitterlab_capture::stats::{Accumulator, Summary};
use jitterlab_capture::synth::{self, Config, Motion};
use jitterlab_capture::{Header, Nanos, Reader, Record, sdp};

/// Both paths over the same records; `all_timing` as `--json` asks. Returns the streaming
/// summary (second pass done) after checking it against the in-memory one.
fn both(header: &Header, records: &[Record], config: Option<DecoderConfig>, all: bool) -> Summary {
    let feed = |push: &mut dyn FnMut(&Record)| {
        for rec in records {
            push(rec);
        }
    };
    let mut memory = Collector::new(header, config.clone()).unwrap();
    feed(&mut |r| {
        add_maps(r, |m| memory.add_rtpmaps(m));
        memory.push(r);
    });
    let want = Summary::from_decoded(&memory.finish(), all);

    let mut streaming =
        Collector::with_sink(header, config.clone(), Accumulator::default()).unwrap();
    feed(&mut |r| {
        add_maps(r, |m| streaming.add_rtpmaps(m));
        streaming.push(r);
    });
    let (mut got, second) = Accumulator::summarize(streaming.finish_parts(), all);
    if let Some(second) = second {
        let mut again = Collector::with_sink(header, config, second).unwrap();
        feed(&mut |r| {
            add_maps(r, |m| again.add_rtpmaps(m));
            again.push(r);
        });
        again.finish_parts().sink.apply(&mut got);
    }
    assert!(got.notes.is_empty(), "{:?}", got.notes);
    // Debug prints every f64 in full: equal text is equal bits.
    assert_eq!(format!("{:#?}", got), format!("{:#?}", want));
    got
}

/// SDP in SIP signalling, as the command line scans captures for it.
fn add_maps(rec: &Record, mut add: impl FnMut(Vec<sdp::RtpMap>)) {
    if let (Some(src), Some(dst)) = (rec.src, rec.dst) {
        add(sdp::scan_sip(src.0, dst.0, &rec.payload, rec.time));
    }
}

fn synth(profile: &str, rate_hz: f64, secs: f64, seed: u64) -> (Header, Vec<Record>) {
    synth::generate(&Config {
        rate_hz,
        duration: Nanos::from_secs_f64(secs),
        seed,
        motion: Motion::Walk,
        model: synth::profile(profile).unwrap(),
        profile: None,
    })
    .unwrap()
}

#[test]
fn the_demo_trace_and_every_profile_agree() {
    let demo = std::fs::read(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/traces/demo-wifi-20hz.jtr"),
    )
    .unwrap();
    let mut reader = Reader::new(&demo[..]).unwrap();
    let header = reader.header().clone();
    let mut records = Vec::new();
    while let Some(r) = reader.read_record().unwrap() {
        records.push(r);
    }
    for all in [false, true] {
        let s = both(&header, &records, None, all);
        assert!(s.packets > 400 && s.truth_packets > 400, "{}", s.packets);
    }
    let mut lossy = 0;
    for (name, ..) in synth::PROFILES {
        let (header, records) = synth(name, 50.0, 60.0, 7);
        let s = both(&header, &records, None, true);
        lossy += u64::from(s.streams[0].stats.lost > 0 && s.streams[0].stats.reordered > 0);
        both(
            &header,
            &records,
            Some(DecoderConfig::new(DecoderKind::Periodic)),
            true,
        );
        both(
            &header,
            &records,
            Some(DecoderConfig::new(DecoderKind::Udp)),
            false,
        );
    }
    assert!(lossy >= 2, "some profiles lose and reorder packets");
}

/// RTP with a dynamic payload type and no SDP: the clock rate is inferred from the whole
/// stream (held), then its jitter computed with it.
#[test]
fn rtp_whose_clock_rate_is_inferred_agrees() {
    let mut rng = jitterlab_capture::rng::Rng::new(4);
    let records: Vec<Record> = (0..1500u32)
        .filter(|i| i % 97 != 3)
        .map(|i| {
            let seq = (i + 65_000) as u16;
            let ts = i.wrapping_mul(960);
            let mut p = vec![0x80, 96];
            p.extend_from_slice(&seq.to_be_bytes());
            p.extend_from_slice(&ts.to_be_bytes());
            p.extend_from_slice(&0x1234_5678u32.to_be_bytes());
            p.extend_from_slice(&[0u8; 40]);
            let at = f64::from(i) * 20.0 + rng.exponential(6.0);
            Record::received(Nanos::from_millis_f64(at), p)
        })
        .collect();
    let header = pcap::header_for("rtp", &CaptureSummary::default(), "auto");
    let s = both(&header, &records, None, true);
    let info = &s.decoded.streams[0];
    assert_eq!(info.clock_rate, Some(48_000), "{info:?}");
    assert!(s.streams[0].stats.jitter.is_some());
    assert_eq!(s.streams[0].stats.lost, 16);
}

/// Past the exact limit of intervals: the histogram's estimates, then the second pass's
/// exact percentiles, equal to the in-memory ones.
#[test]
fn a_long_stream_needs_the_second_pass_and_agrees() {
    let (header, records) = synth("congested", 1000.0, 70.0, 2);
    let mut one = Collector::with_sink(&header, None, Accumulator::default()).unwrap();
    records.iter().for_each(|r| one.push(r));
    let (summary, second) = Accumulator::summarize(one.finish_parts(), true);
    assert!(second.is_some_and(|s| s.streams() == 1));
    assert!(summary.streams[0].timing_approximate);
    let exact = both(&header, &records, None, true);
    assert!(!exact.streams[0].timing_approximate);
    let (a, b) = (
        summary.streams[0].timing.unwrap().intervals.unwrap(),
        exact.streams[0].timing.unwrap().intervals.unwrap(),
    );
    assert!(
        (a.p99_ms - b.p99_ms).abs() <= b.p99_ms / 2048.0,
        "{a:?} {b:?}"
    );
    // The text asks for no timing of a probe stream: no second pass.
    let mut text = Collector::with_sink(&header, None, Accumulator::default()).unwrap();
    records.iter().for_each(|r| text.push(r));
    assert!(
        Accumulator::summarize(text.finish_parts(), false)
            .1
            .is_none()
    );
}

#[test]
fn every_shared_capture_agrees_with_each_decoder() {
    let Some(data) = jitterlab_capture::testdata::shared_data() else {
        return;
    };
    let mut files: Vec<_> = walk(&data.join("pcap"));
    files.retain(|p| p.extension().is_some_and(|e| e == "pcap" || e == "pcapng"));
    assert!(files.len() >= 10, "{files:?}");
    for path in files {
        let mut records = Vec::new();
        pcap::read_capture(std::fs::File::open(&path).unwrap(), None, |r| {
            records.push(r);
            Ok(())
        })
        .unwrap();
        let header = pcap::header_for("", &CaptureSummary::default(), "auto");
        for decoder in [None, Some("rtp"), Some("udp"), Some("periodic")] {
            let config = decoder.map(|d| {
                let mut c = DecoderConfig::parse(d).unwrap();
                c.add_hints(&header);
                c
            });
            for all in [false, true] {
                if all || decoder.is_none() {
                    both(&header, &records, config.clone(), all);
                }
            }
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}
