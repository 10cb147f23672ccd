//! Replay throughput: a 1,000,000-packet trace (60 Hz snapshots through the `wifi` profile)
//! sampled at 60 fps, per policy. Throughput is in packets per second, frame sampling included.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jitterlab_capture::testdata::snapshot_trace;
use jitterlab_replay::{ClockMapping, FrameClock, Policy, Prepared, Replay, Stream};

fn bench(c: &mut Criterion) {
    let samples = snapshot_trace(1_000_000);
    let stream = Stream::new(&samples);
    let prepared = Prepared::new(&stream);
    let frames = FrameClock::Fps(60.0);
    let mut group = c.benchmark_group("replay_1M_packets_60Hz_at_60fps");
    group.sample_size(10);
    group.throughput(Throughput::Elements(samples.len() as u64));
    for policy in [
        "fixed:delay=100ms",
        "jitter",
        "quantile",
        "source",
        "mirror",
        "neteq",
        "ngo:tick_rate=60,ticks_ago=2",
    ] {
        let p: Policy = policy.parse().unwrap();
        let replay = Replay::new(frames.clone()).clock(ClockMapping::Estimated);
        // The sweep path: metrics only, over a stream prepared once.
        group.bench_function(format!("metrics/{policy}"), |b| {
            b.iter(|| replay.metrics(&prepared, &p).unwrap());
        });
        // Every frame handed to a callback (what `replay --timeline` does).
        group.bench_function(format!("frames/{policy}"), |b| {
            b.iter(|| {
                let mut n = 0u64;
                replay
                    .frames(&prepared, &p, |f| {
                        n += f.value.len() as u64;
                    })
                    .unwrap();
                n
            });
        });
    }
    // The sweep's path: frame times and clock offsets planned once per stream, read by every
    // configuration (the plan's cost is the `plan` row, paid once per trace).
    let fixed: Policy = "fixed:delay=100ms".parse().unwrap();
    let plan = Replay::new(frames.clone())
        .clock(ClockMapping::Estimated)
        .plan(&prepared, fixed.max_delay())
        .unwrap();
    group.bench_function("planned/fixed:delay=100ms", |b| {
        b.iter(|| plan.metrics(&prepared, &fixed).unwrap());
    });
    group.bench_function("plan", |b| {
        b.iter(|| {
            Replay::new(frames.clone())
                .clock(ClockMapping::Estimated)
                .plan(&prepared, fixed.max_delay())
                .unwrap()
        });
    });
    // Preparing the stream (arrival order, clock offset, error reference): once per trace.
    group.bench_function("prepare", |b| b.iter(|| Prepared::new(&stream)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
