//! Inputs the fuzz targets (`fuzz/`) crashed on, replayed through the same path as the
//! target: each now decodes with counted skips, never a panic. The inputs are also kept in
//! `fuzz/regressions/TARGET/` for the fuzzer itself.

use jitterlab_capture::decode::{DecoderConfig, DecoderKind};
#[cfg(feature = "import")]
use jitterlab_capture::pcap::read_capture_all;
use jitterlab_capture::stats::stream_stats;
use jitterlab_capture::testdata::decode_packets;

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// decode_probe: probes whose send times are 2^63 ns apart made the RFC 3550 jitter's
/// difference overflow. Send times and ticks beyond ±2^61 are now refused per packet.
#[test]
fn probe_send_times_far_apart_are_refused_not_overflowed() {
    let input = hex(
        "30324a4c505201000002000000010029a0272e000001a743c429000000000000000000000000000000c7000000003ff000000000000030324a4c50520104000000020000000100010000000000020000000002faf08000000000feff00003fe00000000000003ff8000000000000000030324a4c5052010400020000000100000000000000f034ea20020000000002faf080000000003fe0000000000000007a000000000020ee4a4c505201000000000000020000000000000001000000000000000000000001",
    );
    let decoded = decode_packets(DecoderConfig::new(DecoderKind::Probe), &input).unwrap();
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

/// capture_pcapng: an error naming the offset, never a panic.
#[cfg(feature = "import")]
#[test]
fn pcapng_block_shorter_than_its_frame_is_an_error() {
    // capture_pcapng: a process-information block claiming 4 bytes after a valid section and
    // interface header; pcap-parser 0.17 subtracted 12 from it.
    let header: [u8; 48] = [
        0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0, 1, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff,
        0, 0, 20, 0, 0, 0,
    ];
    let input = hex(
        "0001000080040000003d00000000002c00000000000000000000ddffffff0000000000000026262626262626262626262626262826262626262626262626262626000000000100001400000006000000004d3c2b1aff710000e803000000",
    );
    let file = [&header[..], &input[1..]].concat();
    let err = read_capture_all(&file[..], None).unwrap_err().to_string();
    assert!(err.contains("offset 48"), "{err}");
    assert!(err.contains("claims 4 bytes"), "{err}");
}
