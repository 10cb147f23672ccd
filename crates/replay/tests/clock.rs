//! C3 and C20 through replays of synthetic traces: the clock mapping follows drift and
//! survives a receiver pause without the display delay creeping, and the timeline never steps
//! backwards.

use jitterlab_capture::decode::{DecoderConfig, DecoderKind, StreamDecoder};
use jitterlab_capture::synth::{Config, Motion, generate};
use jitterlab_capture::{Nanos, RecordKind, Sample};
use jitterlab_replay::{ClockMapping, FrameClock, Policy, Replay, Stream};

fn received(model: &str, secs: i64) -> Vec<Sample> {
    let config = Config {
        rate_hz: 20.0,
        duration: Nanos::from_secs(secs),
        seed: 5,
        motion: Motion::Circle,
        model: model.parse().unwrap(),
        profile: None,
    };
    let (_, records) = generate(&config).unwrap();
    let mut dec = StreamDecoder::new(DecoderConfig::new(DecoderKind::Probe), vec![]);
    records
        .iter()
        .filter(|r| r.kind() == RecordKind::Received)
        .map(|r| dec.decode(r).unwrap())
        .collect()
}

/// Mean display delay (ms) over frames in [from, to) seconds after the first arrival, and the
/// number of backward steps.
fn delays(samples: &[Sample], clock: ClockMapping, windows: &[(f64, f64)]) -> (Vec<f64>, u64) {
    let policy: Policy = "fixed:delay=120ms".parse().unwrap();
    let start = samples[0].arrival;
    let mut sums = vec![(0.0, 0u32); windows.len()];
    let m = Replay::new(FrameClock::Fps(60.0))
        .clock(clock)
        .stream(&Stream::new(samples), &policy, |f| {
            let t = (f.at - start).as_secs_f64();
            if let (Some(d), false) = (f.delay, f.startup) {
                for (i, (a, b)) in windows.iter().enumerate() {
                    if (*a..*b).contains(&t) {
                        sums[i].0 += d.as_millis_f64();
                        sums[i].1 += 1;
                    }
                }
            }
        })
        .unwrap();
    (
        sums.iter().map(|(s, n)| s / f64::from(*n)).collect(),
        m.backward_steps,
    )
}

#[test]
fn c03_online_mapping_follows_500_ppm_of_drift() {
    for drift in ["500ppm", "-500ppm"] {
        let samples = received(
            &format!("delay=30ms,jitter=5ms,offset=7s,drift={drift}"),
            600,
        );
        let windows = [(30.0, 60.0), (560.0, 590.0)];
        let (online, back) = delays(&samples, ClockMapping::Estimated, &windows);
        assert_eq!(back, 0, "the timeline never steps backwards");
        assert!(
            (online[1] - online[0]).abs() < 5.0,
            "{drift}: display delay crept {online:?}"
        );
        // A constant offset cannot follow: over 9 minutes 500 ppm is 265 ms of clock creep.
        let (fixed, _) = delays(&samples, ClockMapping::Hindsight, &windows);
        assert!(
            (fixed[1] - fixed[0]).abs() > 100.0,
            "{drift}: hindsight {fixed:?}"
        );
    }
}

#[test]
fn c03_online_mapping_ignores_delay_spikes() {
    let samples = received(
        "delay=30ms,jitter=5ms,spike_rate=0.2,spike_delay=400ms,spike_len=1s,offset=-3s",
        300,
    );
    let (d, back) = delays(
        &samples,
        ClockMapping::Estimated,
        &[(30.0, 60.0), (260.0, 290.0)],
    );
    let (h, _) = delays(
        &samples,
        ClockMapping::Hindsight,
        &[(30.0, 60.0), (260.0, 290.0)],
    );
    assert_eq!(back, 0);
    for (a, b) in d.iter().zip(&h) {
        assert!(
            (a - b).abs() < 5.0,
            "spikes moved the online mapping: {d:?} vs {h:?}"
        );
    }
}

#[test]
fn c20_a_receiver_pause_does_not_accumulate_delay() {
    let samples = received("delay=30ms,jitter=5ms,pause=3s@60s", 180);
    let (d, back) = delays(
        &samples,
        ClockMapping::Estimated,
        &[(20.0, 55.0), (70.0, 170.0)],
    );
    assert_eq!(back, 0);
    assert!((d[1] - d[0]).abs() < 3.0, "delay after the pause {d:?}");
}
