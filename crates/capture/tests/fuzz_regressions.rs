//! Inputs the fuzz targets (`fuzz/`) crashed on, replayed through the same path as the
//! target: each now decodes with counted skips, never a panic. The inputs are also kept in
//! `fuzz/regressions/TARGET/` for the fuzzer itself.

use jitterlab_capture::decode::{Collector, DecoderConfig, DecoderKind};
use jitterlab_capture::pcap::{CaptureSummary, header_for};
use jitterlab_capture::stats::stream_stats;
use jitterlab_capture::{Nanos, Record};

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// The decoder targets' harness: packets as [length][time step in ms (255: 3 ms back)].
fn decode_packets(config: DecoderConfig, mut data: &[u8]) -> jitterlab_capture::Decoded {
    let header = header_for("fuzz", &CaptureSummary::default(), &config.name());
    let mut collector = Collector::new(&header, Some(config)).unwrap();
    let mut time = Nanos::ZERO;
    while let [len, step, rest @ ..] = data {
        let len = usize::from(*len).min(rest.len());
        let (payload, tail) = rest.split_at(len);
        time = if *step == 255 {
            Nanos(time.0 - 3_000_000)
        } else {
            Nanos(time.0 + i64::from(*step) * 1_000_000)
        };
        collector.push(&Record::received(time, payload.to_vec()));
        data = tail;
    }
    collector.finish()
}

/// decode_probe: probes whose send times are 2^63 ns apart made the RFC 3550 jitter's
/// difference overflow. Send times and ticks beyond ±2^61 are now refused per packet.
#[test]
fn probe_send_times_far_apart_are_refused_not_overflowed() {
    let input = hex(
        "30324a4c505201000002000000010029a0272e000001a743c429000000000000000000000000000000c7000000003ff000000000000030324a4c50520104000000020000000100010000000000020000000002faf08000000000feff00003fe00000000000003ff8000000000000000030324a4c5052010400020000000100000000000000f034ea20020000000002faf080000000003fe0000000000000007a000000000020ee4a4c505201000000000000020000000000000001000000000000000000000001",
    );
    let decoded = decode_packets(DecoderConfig::new(DecoderKind::Probe), &input);
    let _ = stream_stats(&decoded);
    assert!(
        decoded
            .skip_examples
            .iter()
            .any(|why| why.contains("beyond ±2^61")),
        "{:?}",
        decoded.skip_examples
    );
}
