//! Replaying traces derived from the team's real cellular link traces (Mahimahi, in
//! `../shared/data/traces/mahimahi`; never copied into the project). Skipped, saying so, when
//! `JITTERLAB_SHARED_DATA` is unset; failing when it is set but missing.

use jitterlab_capture::decode::{DecoderConfig, DecoderKind, StreamDecoder};
use jitterlab_capture::synth::{Config, Motion, generate};
use jitterlab_capture::testdata::shared_data;
use jitterlab_capture::{Nanos, RecordKind, Sample};
use jitterlab_replay::{ClockMapping, FrameClock, Policy, Replay, Stream};

/// 20 Hz snapshots for 5 minutes through a recorded link, decoded into (received, truth).
fn link_trace(path: &std::path::Path) -> (Vec<Sample>, Vec<Sample>) {
    let config = Config {
        rate_hz: 20.0,
        duration: Nanos::from_secs(300),
        seed: 3,
        motion: Motion::Walk,
        model: format!("delay=25ms,link={},queue=200", path.display())
            .parse()
            .unwrap(),
        profile: None,
    };
    let (_, records) = generate(&config).unwrap();
    let mut dec = StreamDecoder::new(DecoderConfig::new(DecoderKind::Probe), vec![]);
    let (mut received, mut truth) = (Vec::new(), Vec::new());
    for r in &records {
        let s = dec.decode(r).unwrap();
        if r.kind() == RecordKind::Sent {
            truth.push(s)
        } else {
            received.push(s)
        }
    }
    (received, truth)
}

#[test]
fn over_recorded_cellular_links_more_delay_means_fewer_holds() {
    let Some(data) = shared_data() else { return };
    for name in [
        "ATT-LTE-driving.down",
        "TMobile-UMTS-driving.down",
        "Verizon-LTE-short.down",
    ] {
        let (received, truth) = link_trace(&data.join("traces/mahimahi").join(name));
        assert!(received.len() > 5000, "{name}: {} received", received.len());
        let mut ratios = Vec::new();
        for delay in [50, 100, 200, 400, 800] {
            let policy: Policy = format!("fixed:delay={delay}ms,max_gap=250ms,capacity=64")
                .parse()
                .unwrap();
            let m = Replay::new(FrameClock::Fps(60.0))
                .clock(ClockMapping::Estimated)
                .stream(&Stream::new(&received).with_truth(&truth), &policy, |_| {})
                .unwrap();
            ratios.push(m.summary().hold_ratio);
        }
        assert!(
            ratios.windows(2).all(|w| w[1] <= w[0]),
            "{name}: hold ratios {ratios:?}"
        );
        assert!(ratios[4] < ratios[0], "{name}: hold ratios {ratios:?}");
        eprintln!("{name}: fixed, hold ratio by delay 50/100/200/400/800 ms: {ratios:?}");
        // The RFC 3550 jitter policy: a larger k buys more delay and fewer holds.
        let mut by_k = Vec::new();
        for k in [0.0, 2.0, 4.0, 8.0] {
            let policy: Policy = format!("jitter:a=1,k={k},max=2s,max_gap=250ms,capacity=64")
                .parse()
                .unwrap();
            let m = Replay::new(FrameClock::Fps(60.0))
                .clock(ClockMapping::Estimated)
                .stream(&Stream::new(&received).with_truth(&truth), &policy, |_| {})
                .unwrap()
                .summary();
            by_k.push((m.mean_buffer_delay_ms.unwrap(), m.hold_ratio));
        }
        assert!(
            by_k.windows(2).all(|w| w[1].0 > w[0].0),
            "{name}: jitter delays {by_k:?}"
        );
        assert!(
            by_k.windows(2).all(|w| w[1].1 <= w[0].1),
            "{name}: jitter holds {by_k:?}"
        );
        eprintln!("{name}: jitter k=0/2/4/8, (mean delay ms, hold ratio): {by_k:?}");
    }
}
