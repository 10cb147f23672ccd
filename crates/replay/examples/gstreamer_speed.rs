//! Times the `gstreamer` preset's playout: the default playout grid's 16 configurations
//! (latency 20..400 ms, drop-on-latency both ways) over one synthetic audio stream, one
//! configuration after another on one thread, then spread over every core with rayon.
//! `cargo run --release -p jitterlab-replay --example gstreamer_speed -- [PACKETS] [RUNS]`
//!
//! The stream: 20 ms G.711 packets (8 kHz), arrivals with up to 30 ms of jitter, 1 % lost
//! and 1 % overtaken by the next packet (a fixed-seed generator).

use jitterlab_capture::decode::MediaKind;
use jitterlab_capture::{Nanos, Sample};
use jitterlab_replay::{Media, PlayoutStream, Policy};
use rayon::prelude::*;

fn stream(packets: i64) -> Vec<Sample> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::with_capacity(packets as usize);
    for seq in 0..packets {
        let r = next();
        if r % 100 == 0 {
            continue;
        }
        let jitter = (r >> 8) % 30_000_000;
        let mut s = Sample::new(
            0,
            seq,
            Nanos(seq * 20_000_000),
            Nanos(seq * 20_000_000 + 40_000_000 + jitter as i64),
        );
        s.payload_type = Some(8);
        s.rtp_timestamp = 12_345 + seq * 160;
        s.rtp_clock = 8000;
        s.size = 160;
        if (r >> 40) % 100 == 0 {
            // Overtaken by the next packet.
            s.arrival += Nanos(25_000_000);
        }
        out.push(s);
    }
    out.sort_by_key(|s| s.arrival);
    out
}

/// This thread's CPU time (user + system) in seconds, from /proc (Linux; 0 elsewhere): on a
/// shared machine it says what the work cost, whatever else ran.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return 0.0;
    };
    let Some(rest) = stat.rsplit_once(')').map(|r| r.1) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|u| u.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let packets: i64 = args.first().map_or(1_000_000, |s| s.parse().unwrap());
    let runs: u32 = args.get(1).map_or(3, |s| s.parse().unwrap());
    let samples = stream(packets);
    let media = Media {
        kind: Some(MediaKind::Audio),
        clock_rate: Some(8000),
        encoding: Some("PCMA".into()),
        payload_type: Some(8),
    };
    let prepared = PlayoutStream::new(0, &samples, media, Nanos::ZERO);
    let policies: Vec<Policy> = [20, 40, 60, 100, 150, 200, 300, 400]
        .iter()
        .flat_map(|l| {
            [false, true].map(|d| {
                format!("gstreamer:latency={l}ms,drop_on_latency={d}")
                    .parse()
                    .unwrap()
            })
        })
        .collect();
    let work = (samples.len() * policies.len()) as f64;
    for _ in 0..runs {
        let t = std::time::Instant::now();
        let cpu = cpu_seconds();
        let mut played = 0usize;
        for p in &policies {
            played += p.playout(&prepared).unwrap().events.len();
        }
        let one = t.elapsed().as_secs_f64();
        let one_cpu = cpu_seconds() - cpu;
        let t = std::time::Instant::now();
        let all: usize = policies
            .par_iter()
            .map(|p| p.playout(&prepared).unwrap().events.len())
            .sum();
        let par = t.elapsed().as_secs_f64();
        assert_eq!(all, played);
        // The element's model alone (no slot events).
        let t = std::time::Instant::now();
        let cpu = cpu_seconds();
        let mut pushed = 0u64;
        for p in &policies {
            let c = p.config::<jitterlab_replay::GStreamerConfig>().unwrap();
            pushed +=
                jitterlab_replay::gstreamer::simulate(&c.element, prepared.packets(), Some(8000))
                    .stats
                    .num_pushed;
        }
        let sim = t.elapsed().as_secs_f64();
        let sim_cpu = cpu_seconds() - cpu;
        assert!(pushed > 0);
        println!(
            "  per CPU second on one thread: playout {:.1} M/s, the element's model alone {:.1} M/s \
             (wall clock {:.1} M/s)",
            work / one_cpu / 1e6,
            work / sim_cpu / 1e6,
            work / sim / 1e6
        );
        println!(
            "{} packets x {} configurations: one thread {:.3} s ({:.1} M packet·configurations/s), \
             {} threads {:.3} s ({:.1} M/s)",
            samples.len(),
            policies.len(),
            one,
            work / one / 1e6,
            rayon::current_num_threads(),
            par,
            work / par / 1e6
        );
    }
}
