//! Times `replay_metrics` of one policy over a synthetic 60 Hz trace, or with `grid` the sweep
//! benchmark's 100 fixed delays on one thread (for profilers and side-by-side timing).
//! `cargo run --release -p jitterlab-replay --example speed -- [POLICY|grid] [PACKETS] [RUNS]`
//! Environment: `TRACE=FILE` (a trace's first stream with its ground truth instead),
//! `CLOCK=estimate|hindsight|offset=MS`, `BATCH=K` (grid: K configurations side by side).

use jitterlab_capture::Nanos;
use jitterlab_capture::testdata::snapshot_trace;
use jitterlab_replay::{ClockMapping, FrameClock, Policy, Prepared, Replay, Stream};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let policy: Policy = match args.first().map(String::as_str) {
        None | Some("grid") => "fixed:delay=100ms".parse().unwrap(),
        Some(p) => p.parse().unwrap(),
    };
    let packets: u64 = args.get(1).map_or(1_000_000, |s| s.parse().unwrap());
    let runs: u32 = args.get(2).map_or(5, |s| s.parse().unwrap());
    let mut samples = snapshot_trace(packets);
    // TRACE=FILE replays a trace file's first stream instead, with its ground truth.
    let mut truth = Vec::new();
    let mut channels = Vec::new();
    if let Ok(path) = std::env::var("TRACE") {
        let reader = jitterlab_capture::Reader::new(std::fs::File::open(&path).unwrap()).unwrap();
        let decoded = jitterlab_capture::decode::decode_trace(reader, None).unwrap();
        let info = &decoded.streams[0];
        samples = decoded.stream_samples(info.id).cloned().collect();
        truth = decoded.stream_truth(info.id).cloned().collect();
        channels = info.channels.clone();
    }
    let stream = Stream::new(&samples)
        .with_truth(&truth)
        .with_channels(&channels);
    let prepared = Prepared::new(&stream);
    let frames = FrameClock::Fps(60.0);
    // CLOCK=hindsight|offset=MS|estimate (the default).
    let clock: ClockMapping =
        std::env::var("CLOCK").map_or(ClockMapping::Estimated, |c| c.parse().unwrap());
    if args.first().is_some_and(|a| a == "grid") {
        // The sweep benchmark's grid, one thread, as `jitterlab sweep` runs it (frames and
        // clock offsets planned once): fixed:delay=0..297ms/3ms.
        let policies: Vec<Policy> = (0..=297)
            .step_by(3)
            .map(|d| format!("fixed:delay={d}ms").parse().unwrap())
            .collect();
        for _ in 0..runs {
            let t = std::time::Instant::now();
            let plan = Replay::new(frames.clone())
                .clock(clock)
                .plan(&prepared, Nanos::from_millis(297))
                .unwrap();
            // BATCH=K replays K configurations side by side (as `jitterlab sweep` does).
            let batch: usize = std::env::var("BATCH").map_or(1, |b| b.parse().unwrap());
            if batch > 1 {
                for chunk in policies.chunks(batch) {
                    plan.batch(&prepared, chunk).unwrap();
                }
            } else {
                for p in &policies {
                    plan.metrics(&prepared, p).unwrap();
                }
            }
            let s = t.elapsed().as_secs_f64();
            println!(
                "grid {:.3} s  {:.2} M steps/s",
                s,
                100.0 * samples.len() as f64 / s / 1e6
            );
        }
        return;
    }
    for _ in 0..runs {
        let t = std::time::Instant::now();
        let m = Replay::new(frames.clone())
            .clock(clock)
            .metrics(&prepared, &policy)
            .unwrap();
        let s = t.elapsed().as_secs_f64();
        println!(
            "{:.3} s  {:.2} M packets/s  frames {} holds {} mean_error {:?}",
            s,
            samples.len() as f64 / s / 1e6,
            m.frames,
            m.holds,
            m.summary().mean_error
        );
    }
}
