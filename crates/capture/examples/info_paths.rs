//! `jitterlab info`'s figures for a trace, computed the old way (every sample decoded into a
//! `Decoded` in memory, then `Summary::from_decoded`) or the streaming way (`Accumulator` over
//! the collector's sink, a second pass for exact percentiles when needed), for measuring the
//! two side by side without the rest of the command line (`bench/info_stream.sh`).
//!
//!   cargo run --release -p jitterlab-capture --example info_paths -- memory|stream TRACE [json]

use jitterlab_capture::decode::Collector;
use jitterlab_capture::stats::{Accumulator, Summary};
use jitterlab_capture::{Reader, Record};

fn each(path: &str, mut f: impl FnMut(&Record)) -> jitterlab_capture::Header {
    let file = std::io::BufReader::new(std::fs::File::open(path).expect("the trace opens"));
    let mut reader = Reader::new(file).expect("a trace");
    let header = reader.header().clone();
    while let Some(rec) = reader.read_record().expect("readable") {
        f(&rec);
    }
    header
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (mode, path) = (args[1].as_str(), args[2].as_str());
    let all = args.get(3).is_some_and(|a| a == "json");
    let header = {
        let file = std::fs::File::open(path).expect("the trace opens");
        Reader::new(file).expect("a trace").header().clone()
    };
    let summary = if mode == "memory" {
        let mut c = Collector::new(&header, None).unwrap();
        each(path, |r| c.push(r));
        Summary::from_decoded(&c.finish(), all)
    } else {
        let mut c = Collector::with_sink(&header, None, Accumulator::default()).unwrap();
        each(path, |r| c.push(r));
        let (mut s, second) = Accumulator::summarize(c.finish_parts(), all);
        if let Some(second) = second {
            let mut c = Collector::with_sink(&header, None, second).unwrap();
            each(path, |r| c.push(r));
            c.finish_parts().sink.apply(&mut s);
        }
        s
    };
    println!(
        "{} streams, {} packets, first stream {:?}",
        summary.decoded.streams.len(),
        summary.packets,
        summary.streams.first().map(|s| (s.stats.lost, s.timing))
    );
}
