//! Shared by the decoder targets: split the fuzz input into packets and run them through the
//! same collector and statistics that `jitterlab info` uses.

use jitterlab_capture::decode::{Collector, DecoderConfig};
use jitterlab_capture::pcap::{CaptureSummary, header_for};
use jitterlab_capture::stats::stream_stats;
use jitterlab_capture::{Nanos, Record};

/// Splits `data` into packets, each prefixed by a one-byte length and a one-byte time step
/// (ms), decodes them with `config`, and computes every stream's statistics.
pub fn decode_packets(config: DecoderConfig, mut data: &[u8]) {
    let header = header_for("fuzz", &CaptureSummary::default(), &config.name());
    let Ok(mut collector) = Collector::new(&header, Some(config)) else {
        return;
    };
    let mut time = Nanos::ZERO;
    while let [len, step, rest @ ..] = data {
        let len = usize::from(*len).min(rest.len());
        let (payload, tail) = rest.split_at(len);
        // A step of 255 goes back in time: captures are not always in order.
        time = if *step == 255 {
            Nanos(time.0 - 3_000_000)
        } else {
            Nanos(time.0 + i64::from(*step) * 1_000_000)
        };
        collector.push(&Record::received(time, payload.to_vec()));
        data = tail;
    }
    let decoded = collector.finish();
    let _ = stream_stats(&decoded);
}
