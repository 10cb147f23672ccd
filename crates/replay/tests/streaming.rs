//! A streaming pass holds per stream its window, not the stream: over a long stream, with
//! ground truth or not, through every kind of engine, what it holds stays bounded.

use jitterlab_capture::{Nanos, Sample};
use jitterlab_replay::{ClockMapping, FrameClock, Policy, StreamingReplay};

/// `n` snapshots at 20 Hz: a jittered delay, one in 50 lost, one in 40 duplicated.
fn long_stream(n: i64) -> Vec<(Sample, bool)> {
    let mut out = Vec::new();
    for i in 0..n {
        let send = Nanos::from_millis(i * 50);
        let truth = Sample::new(0, i, send, send).with_values(vec![i as f64, 1.0]);
        out.push((send, 0, truth, true));
        if i % 50 == 7 {
            continue;
        }
        let delay = Nanos::from_millis(30 + (i * 7919 % 97));
        let got = Sample::new(0, i, send, send + delay).with_values(vec![i as f64, 1.0]);
        if i % 40 == 3 {
            let mut dup = got.clone();
            dup.arrival += Nanos::from_millis(4);
            out.push((dup.arrival, 1, dup, false));
        }
        out.push((got.arrival, 1, got, false));
    }
    out.sort_by_key(|r| (r.0, r.1));
    out.into_iter().map(|(_, _, s, t)| (s, t)).collect()
}

#[test]
fn what_a_pass_holds_stays_bounded_for_every_engine() {
    let stream = long_stream(60_000);
    for truth in [true, false] {
        for policy in [
            "fixed:delay=100ms",
            "jitter:a=2,k=3",
            "mirror",
            "ngo",
            "fishnet",
            "n4e",
            "lightyear",
            "unreal-np",
            "geckos",
        ] {
            let policy: Policy = policy.parse().unwrap();
            let mut pass = StreamingReplay::new(
                &FrameClock::Fps(60.0),
                ClockMapping::Estimated,
                std::slice::from_ref(&policy),
            )
            .unwrap();
            let mut most = 0;
            for (s, t) in stream.iter().filter(|(_, t)| truth || !t).cloned() {
                pass.push(s, t, None);
                most = most.max(pass.held());
            }
            let out = pass.finish().unwrap();
            assert!(out[0].packets > 58_000, "{policy}");
            // A window of a few thousand samples, not the stream's 60,000.
            assert!(most < 5_000, "{policy} (truth {truth}): held {most}");
        }
    }
}
