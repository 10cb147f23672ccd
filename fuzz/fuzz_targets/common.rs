//! Shared by the fuzz targets.

use jitterlab_capture::decode::DecoderConfig;
use jitterlab_capture::pcap::read_capture;
use jitterlab_capture::stats::stream_stats;
use jitterlab_capture::testdata;

/// Decodes `data` as framed packets (see `testdata::decode_packets`) and computes every
/// stream's statistics, as `jitterlab info` does.
#[allow(dead_code)]
pub fn decode_packets(config: DecoderConfig, data: &[u8]) {
    if let Some(decoded) = testdata::decode_packets(config, data) {
        let _ = stream_stats(&decoded);
    }
}

/// Reads a capture. Odd first byte: the rest is the whole file. Even: the rest follows
/// `header`, so the fuzzer spends its time on records rather than on file headers.
#[allow(dead_code)]
pub fn read_capture_after(header: &[u8], data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let file = if mode & 1 == 1 {
        rest.to_vec()
    } else {
        [header, rest].concat()
    };
    let mut records = 0u64;
    if let Ok(summary) = read_capture(&file[..], None, |_| {
        records += 1;
        Ok(())
    }) {
        assert_eq!(summary.udp, records, "every UDP datagram reaches the sink");
        let _ = summary.problems();
    }
}
