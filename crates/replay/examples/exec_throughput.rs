//! External-policy throughput with the CPU it costs: replays the exec benchmark's trace (1,000,000
//! packets, 60 Hz through `wifi`, 7 values each, sampled at 60 fps) through each policy given,
//! `runs` times in turn (round robin, so that a change in the machine's load falls on all of
//! them), and prints for each the median wall time, the median packets per second and the
//! median CPU seconds of jitterlab and the child together (from `/proc/self/stat`, Linux
//! only: elsewhere the CPU column is empty). `bench/exec.sh` runs it beside the criterion bench:
//!
//! ```sh
//! cargo run --release -p jitterlab-replay --example exec_throughput -- 5 \
//!     'exec(format=msgpack):target/release/examples/exec_newest' 'exec:target/release/examples/exec_newest'
//! ```

use std::time::Instant;

use jitterlab_capture::testdata::snapshot_trace;
use jitterlab_replay::{ClockMapping, FrameClock, Policy, Prepared, Replay, Stream};

/// CPU seconds used so far by this process and its waited-for children, when known.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command's closing parenthesis: utime, stime, cutime and cstime
    // are the 12th to the 15th, in USER_HZ ticks (100 a second).
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<f64>().unwrap_or(0.0))
        .sum();
    Some(ticks / 100.0)
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let runs: usize = args
        .next()
        .ok_or("usage: exec_throughput RUNS POLICY…")?
        .parse()?;
    let policies: Vec<Policy> = args.map(|p| p.parse()).collect::<Result<_, _>>()?;
    let samples = snapshot_trace(1_000_000);
    let stream = Stream::new(&samples);
    let prepared = Prepared::new(&stream);
    let replay = Replay::new(FrameClock::Fps(60.0)).clock(ClockMapping::Estimated);
    let mut wall = vec![Vec::new(); policies.len()];
    let mut cpu = vec![Vec::new(); policies.len()];
    for _ in 0..runs.max(1) {
        for (i, p) in policies.iter().enumerate() {
            let (t0, c0) = (Instant::now(), cpu_seconds());
            replay.metrics(&prepared, p)?;
            wall[i].push(t0.elapsed().as_secs_f64());
            if let (Some(c0), Some(c1)) = (c0, cpu_seconds()) {
                cpu[i].push(c1 - c0);
            }
        }
    }
    println!("policy\twall s (median)\tM packets/s\tCPU s, both processes (median)");
    for (i, p) in policies.iter().enumerate() {
        let w = median(&mut wall[i]);
        let c = if cpu[i].is_empty() {
            String::new()
        } else {
            format!("{:.2}", median(&mut cpu[i]))
        };
        println!(
            "{p}\t{w:.2}\t{:.2}\t{c}",
            samples.len() as f64 / w / 1e6
        );
    }
    Ok(())
}
