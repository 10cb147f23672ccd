//! External-policy throughput with the CPU it costs: replays the exec benchmark's trace (1,000,000
//! packets, 60 Hz through `wifi`, 7 values each, sampled at 60 fps) through each policy given,
//! `runs` times in turn (round robin, so that a change in the machine's load falls on all of
//! them), and prints for each the median wall time and packets per second, and the median CPU
//! seconds in all, of jitterlab's main thread, of its other threads (encoder, writer, reader)
//! and of the child (from `/proc`, Linux only: elsewhere the CPU columns are empty), with an
//! estimate for an idle machine of two cores: the pipeline is no faster than its busiest
//! thread, nor than two cores can run the total. On a loaded machine the wall time is mostly
//! the share of the cores the processes got; the CPU seconds are what they cost. `bench/exec.sh` runs it beside the criterion bench:
//!
//! ```sh
//! cargo run --release -p jitterlab-replay --example exec_throughput -- 5 \
//!     'exec(format=msgpack):target/release/examples/exec_newest' 'exec:target/release/examples/exec_newest'
//! ```

use std::time::Instant;

use jitterlab_capture::testdata::snapshot_trace;
use jitterlab_replay::{ClockMapping, FrameClock, Policy, Prepared, Replay, Stream};

/// CPU seconds so far: (jitterlab's main thread, all of jitterlab's threads, its waited-for
/// children), when `/proc` has them (Linux).
fn cpu_seconds() -> Option<[f64; 3]> {
    // The fields after the command's closing parenthesis, in USER_HZ ticks (100 a second):
    // utime and stime are the 12th and 13th, cutime and cstime the 14th and 15th.
    let ticks = |path: &str, from: usize| -> Option<f64> {
        let stat = std::fs::read_to_string(path).ok()?;
        let fields: Vec<f64> = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .map(|f| f.parse().unwrap_or(0.0))
            .collect();
        Some(fields.get(from..from + 2)?.iter().sum::<f64>() / 100.0)
    };
    Some([
        ticks("/proc/thread-self/stat", 11)?,
        ticks("/proc/self/stat", 11)?,
        ticks("/proc/self/stat", 13)?,
    ])
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
    // Per policy and run: main thread, other threads, child.
    let mut cpu = vec![Vec::new(); policies.len()];
    for _ in 0..runs.max(1) {
        for (i, p) in policies.iter().enumerate() {
            let (t0, c0) = (Instant::now(), cpu_seconds());
            replay.metrics(&prepared, p)?;
            wall[i].push(t0.elapsed().as_secs_f64());
            if let (Some(c0), Some(c1)) = (c0, cpu_seconds()) {
                let main = c1[0] - c0[0];
                cpu[i].push([main, (c1[1] - c0[1]) - main, c1[2] - c0[2]]);
            }
        }
    }
    println!(
        "policy\twall s\tM packets/s\tCPU s: total\tmain thread\tother threads\tchild\tidle-machine estimate, M packets/s"
    );
    for (i, p) in policies.iter().enumerate() {
        let w = median(&mut wall[i]);
        let mut cols = String::new();
        if !cpu[i].is_empty() {
            let m = |k: usize| median(&mut cpu[i].iter().map(|c| c[k]).collect::<Vec<_>>());
            let total = median(&mut cpu[i].iter().map(|c| c.iter().sum()).collect::<Vec<_>>());
            let (main, other, child) = (m(0), m(1), m(2));
            // No faster than its busiest thread, nor than two cores can do the total.
            let bound = main.max(child).max(total / 2.0);
            cols = format!(
                "\t{total:.2}\t{main:.2}\t{other:.2}\t{child:.2}\t{:.2}",
                samples.len() as f64 / bound / 1e6
            );
        }
        println!("{p}\t{w:.2}\t{:.2}{cols}", samples.len() as f64 / w / 1e6);
    }
    Ok(())
}
