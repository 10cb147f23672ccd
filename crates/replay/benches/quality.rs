//! Quality figures' throughput: every figure (webrtc-stats, E-model, VoIPmonitor, RFC 3611)
//! over one fixed-delay playout of a 1,000,000-packet PCMA stream (20 ms frames, jittered
//! transit, 1 % loss), in events per second. `measure` is what a sweep pays per
//! configuration (the stream prepared once in a `Meter`); `meter+measure` prepares it too.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jitterlab_capture::decode::MediaKind;
use jitterlab_capture::{Nanos, Sample};
use jitterlab_replay::playout::{Media, PlayoutRun, PlayoutStream, playout_slots};
use jitterlab_replay::quality::{self, Meter};

fn stream_samples(n: i64) -> Vec<Sample> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut v: Vec<Sample> = (0..n)
        .filter_map(|i| {
            let r = next();
            if r % 100 == 0 {
                return None;
            }
            let send = Nanos::from_millis(i * 20);
            let transit = Nanos::from_micros(10_000 + (r >> 32) as i64 % 60_000);
            Some(Sample {
                payload_type: Some(8),
                rtp_clock: 8000,
                size: 160,
                ..Sample::new(0, i, send, send + transit)
            })
        })
        .collect();
    v.sort_by_key(|s| s.arrival);
    v
}

fn bench(c: &mut Criterion) {
    let samples = stream_samples(1_000_000);
    let media = Media {
        kind: Some(MediaKind::Audio),
        clock_rate: Some(8000),
        encoding: Some("PCMA".into()),
        payload_type: Some(8),
    };
    let stream = PlayoutStream::new(0, &samples, media, Nanos::from_millis(-10));
    let delay = Nanos::from_millis(40);
    let run = PlayoutRun::fixed(playout_slots(stream.slots(), delay, stream.offset), delay);
    let mut group = c.benchmark_group("quality_1M_events");
    group.sample_size(10);
    group.throughput(Throughput::Elements(run.events.len() as u64));
    let meter = Meter::new(&stream, None, Nanos::ZERO);
    group.bench_function("measure", |b| b.iter(|| meter.measure(&run)));
    group.bench_function("meter+measure", |b| {
        b.iter(|| quality::measure(&stream, &run, None, Nanos::ZERO))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
