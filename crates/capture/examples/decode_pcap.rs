//! Decodes a pcap/pcapng capture as `jitterlab info` does (flows judged unless a decoder is
//! named) and prints the stream count: the decode path alone, for profiling and benchmarks.
//!
//!     cargo run --release --example decode_pcap -p jitterlab-capture -- CAPTURE [DECODER]

use jitterlab_capture::decode::{Collector, DecoderConfig};
use jitterlab_capture::pcap::{self, CaptureSummary};
use jitterlab_capture::stats::stream_stats;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: decode_pcap CAPTURE [DECODER]")?;
    let config = args.next().map(|d| DecoderConfig::parse(&d)).transpose()?;
    let header = pcap::header_for("", &CaptureSummary::default(), "auto");
    let mut collector = Collector::new(&header, config)?;
    pcap::read_capture(std::fs::File::open(&path)?, None, |rec| {
        collector.push(&rec);
        Ok(())
    })?;
    let decoded = collector.finish();
    let stats = stream_stats(&decoded);
    println!(
        "{} stream(s), {} samples, {} packets in the first",
        decoded.streams.len(),
        decoded.samples.len(),
        stats.first().map_or(0, |s| s.packets)
    );
    Ok(())
}
