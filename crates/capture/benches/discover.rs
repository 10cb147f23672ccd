//! `discover` on 100,000-packet flows: a one-kind protocol (seed 0 of the synthetic
//! generator), a flow mixing three message kinds behind a type byte (seed 7), and random
//! payloads (every candidate tried and refused, and every type-byte split considered).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jitterlab_capture::discover::discover;
use jitterlab_capture::discover::synthetic::{Protocol, random_flow, view};

const PACKETS: usize = 100_000;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("discover_100k_packets");
    group.sample_size(10);
    group.throughput(Throughput::Elements(PACKETS as u64));
    for (name, flow) in [
        ("one_kind", Protocol::new(0).packets(PACKETS)),
        ("three_kinds", Protocol::new(7).packets(PACKETS)),
        ("random", random_flow(1, PACKETS)),
    ] {
        let packets = view(&flow);
        group.bench_function(name, |b| b.iter(|| discover(&packets)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
