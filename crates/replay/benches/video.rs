//! Video playout throughput: a synthetic 30 fps stream of 1,000,000 RTP packets (1–4 per
//! frame, 5–60 ms of transit jitter, 0.1 % loss), assembled into frames once, then played by
//! `webrtc-video` and by a fixed delay with the webrtc-stats video figures. Throughput is in
//! frames per second.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{MediaKind, Sample};
use jitterlab_replay::{Media, PlayoutStream, Policy, VideoStats};

/// The stream's packets in arrival order.
fn video_packets(packets: usize) -> Vec<Sample> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut out = Vec::with_capacity(packets);
    let (mut seq, mut frame) = (0i64, 0i64);
    while out.len() < packets {
        let n = 1 + next(4) as i64;
        let ts = frame * 3000;
        let send = Nanos(ts * 100_000 / 9);
        for k in 0..n {
            if next(1000) != 0 {
                let transit = Nanos::from_millis(5 + next(55) as i64);
                out.push(Sample {
                    marker: k == n - 1,
                    payload_type: Some(96),
                    rtp_timestamp: ts,
                    rtp_clock: 90_000,
                    size: 300 + next(900) as u32,
                    ..Sample::new(0, seq, send, send + transit + Nanos::from_micros(k * 300))
                });
            }
            seq += 1;
        }
        frame += 1;
    }
    out.sort_by_key(|s| s.arrival);
    out
}

fn bench(c: &mut Criterion) {
    let packets = video_packets(1_000_000);
    let media = Media {
        kind: Some(MediaKind::Video),
        clock_rate: Some(90_000),
        encoding: Some("VP8".into()),
        payload_type: Some(96),
    };
    let stream = PlayoutStream::new(0, &packets, media.clone(), Nanos::ZERO);
    let frames = stream.slots().len() as u64;
    let mut group = c.benchmark_group("video_1M_packets_30fps");
    group.sample_size(10);
    group.throughput(Throughput::Elements(frames));
    group.bench_function("assemble+prepare", |b| {
        b.iter(|| {
            PlayoutStream::new(0, &packets, media.clone(), Nanos::ZERO)
                .slots()
                .len()
        });
    });
    let webrtc: Policy = "webrtc-video".parse().unwrap();
    group.bench_function("playout/webrtc-video", |b| {
        b.iter(|| webrtc.playout(&stream).unwrap().events.len());
    });
    let fixed: Policy = "fixed:delay=100ms".parse().unwrap();
    let run = fixed.playout(&stream).unwrap();
    group.bench_function("video-stats", |b| {
        b.iter(|| VideoStats::measure(&stream, &run))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
