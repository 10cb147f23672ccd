//! External-policy throughput (`exec:CMD`, `docs/external-policy.md`): a 1,000,000-packet trace
//! (60 Hz snapshots through the `wifi` profile) sampled at 60 fps through a trivial child in
//! Rust (`examples/exec_newest.rs`) and in Node (`examples/external/trivial_newest.mjs`), protocol and pipe included, in packets per
//! second. Skipped, saying so, without `node`.
//!
//! `bench/exec.sh` builds the Rust child and runs it (figures in BENCHMARKS.md).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jitterlab_capture::testdata::snapshot_trace;
use jitterlab_replay::{ClockMapping, FrameClock, Policy, Prepared, Replay, Stream};

fn bench(c: &mut Criterion) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut children = Vec::new();
    // The Rust child (`examples/exec_newest.rs`), when bench/exec.sh built it.
    let rust = root.join("target/release/examples/exec_newest");
    if rust.exists() {
        children.push(("trivial_rust", rust.display().to_string()));
    } else {
        eprintln!("skipped the Rust child: build it with bench/exec.sh");
    }
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let js = root.join("examples/external/trivial_newest.mjs");
        children.push(("trivial_node", format!("node {}", js.display())));
    } else {
        eprintln!("skipped the Node child: node is not installed");
    }
    let samples = snapshot_trace(1_000_000);
    let stream = Stream::new(&samples);
    let prepared = Prepared::new(&stream);
    let replay = Replay::new(FrameClock::Fps(60.0)).clock(ClockMapping::Estimated);
    let mut group = c.benchmark_group("exec_1M_packets_60Hz_at_60fps");
    group.sample_size(10);
    group.throughput(Throughput::Elements(samples.len() as u64));
    for (name, command) in &children {
        // With the values (7 channels here) and without (a buffer deciding by times alone).
        for values in [true, false] {
            let p: Policy = format!("exec(values={values}):{command}").parse().unwrap();
            group.bench_function(format!("metrics/{name}/values={values}"), |b| {
                b.iter(|| replay.metrics(&prepared, &p).unwrap());
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
