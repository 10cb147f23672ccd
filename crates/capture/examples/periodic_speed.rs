//! Times `decode::periodic::assign` on a generated 60 Hz flow (exponential jitter of 4 ms
//! mean, 1 % loss, and every 10 s a 300 ms stall released as a burst).
//! `cargo run --release -p jitterlab-capture --example periodic_speed -- [PACKETS] [RUNS]`

use std::time::Instant;

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{Sample, periodic};
use jitterlab_capture::rng::Rng;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let packets: i64 = args
        .first()
        .map_or(1_000_000, |s| s.parse().expect("PACKETS"));
    let runs: u32 = args.get(1).map_or(5, |s| s.parse().expect("RUNS"));
    let mut rng = Rng::new(1);
    let period = 1e9 / 60.0;
    let mut samples = Vec::new();
    for k in 0..packets {
        if rng.chance(0.01) {
            continue;
        }
        let mut at = k as f64 * period + 20e6 + rng.exponential(4e6);
        let into = at % 10e9;
        if into < 300e6 {
            at += 300e6 - into;
        }
        samples.push(Sample::new(0, 0, Nanos::ZERO, Nanos(at as i64)));
    }
    samples.sort_by_key(|s| s.arrival);
    let mut times = Vec::new();
    for _ in 0..runs {
        let mut s = samples.clone();
        let started = Instant::now();
        let e = periodic::assign(&mut s).expect("a period");
        times.push(started.elapsed().as_secs_f64());
        assert!((e.period_ns / period - 1.0).abs() < 1e-6, "{e:?}");
    }
    times.sort_by(f64::total_cmp);
    println!(
        "assign on {} packets: median {:.3} s over {runs} runs (min {:.3} s, max {:.3} s)",
        samples.len(),
        times[times.len() / 2],
        times[0],
        times[times.len() - 1]
    );
}
