//! External-policy throughput (`exec:CMD`, `docs/external-policy.md`): a 1,000,000-packet trace
//! (60 Hz snapshots through the `wifi` profile) sampled at 60 fps through a trivial child in
//! Rust (`examples/exec_newest.rs` with serde, `examples/exec_newest_raw.rs` parsing MessagePack
//! by hand), in Python (`examples/external/trivial_newest.py`) and in
//! Node (`examples/external/trivial_newest.mjs`, JSON Lines only), over JSON Lines and over
//! MessagePack, with and without the values, protocol and pipe included, in packets per
//! second. A child whose interpreter (or `msgpack` package) is missing is skipped, saying so.
//!
//! `bench/exec.sh` builds the Rust child and runs it (figures in BENCHMARKS.md). Filter with
//! criterion's name filter: `bench/exec.sh trivial_rust`, `bench/exec.sh format=msgpack`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jitterlab_capture::testdata::snapshot_trace;
use jitterlab_replay::{ClockMapping, FrameClock, Policy, Prepared, Replay, Stream};

/// Whether `program args…` runs and succeeds.
fn runs(program: &str, args: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn bench(c: &mut Criterion) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // (name, command, the formats it speaks)
    let mut children: Vec<(&str, String, &[&str])> = Vec::new();
    // The Rust child (`examples/exec_newest.rs`), when bench/exec.sh built it.
    let rust = root.join("target/release/examples/exec_newest");
    if rust.exists() {
        children.push((
            "trivial_rust",
            rust.display().to_string(),
            &["json", "msgpack"],
        ));
    } else {
        eprintln!("skipped the Rust child: build it with bench/exec.sh");
    }
    // The same policy parsing MessagePack by hand (`examples/exec_newest_raw.rs`).
    let raw = root.join("target/release/examples/exec_newest_raw");
    if raw.exists() {
        children.push(("trivial_rust_raw", raw.display().to_string(), &["msgpack"]));
    } else {
        eprintln!("skipped the hand-parsing Rust child: build it with bench/exec.sh");
    }
    if runs("python3", &["--version"]) {
        let py = root.join("examples/external/trivial_newest.py");
        let formats: &[&str] = if runs("python3", &["-c", "import msgpack"]) {
            &["json", "msgpack"]
        } else {
            eprintln!("skipped the Python child over MessagePack: pip install msgpack");
            &["json"]
        };
        children.push((
            "trivial_python",
            format!("python3 {}", py.display()),
            formats,
        ));
    } else {
        eprintln!("skipped the Python child: python3 is not installed");
    }
    if runs("node", &["--version"]) {
        let js = root.join("examples/external/trivial_newest.mjs");
        children.push(("trivial_node", format!("node {}", js.display()), &["json"]));
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
    for (name, command, formats) in &children {
        for format in *formats {
            // With the values (7 channels here) and without (a buffer deciding by times alone).
            for values in [true, false] {
                let p: Policy = format!("exec(values={values},format={format}):{command}")
                    .parse()
                    .unwrap();
                group.bench_function(
                    format!("metrics/{name}/format={format}/values={values}"),
                    |b| b.iter(|| replay.metrics(&prepared, &p).unwrap()),
                );
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
