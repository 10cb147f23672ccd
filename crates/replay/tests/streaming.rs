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

/// A pass asked to list more frames' needs than its cap sketches every stream's instead (those
/// listed so far, and streams that start later): the bounds stay floors under the listed ones,
/// within the sketch's stated error, from the same rows' point of view.
#[test]
fn needs_beyond_the_cap_are_sketched_into_floors() {
    use jitterlab_replay::sweep::{Bounds, StreamNeeds};
    // Three streams: two from the start, one starting late (after the cap is passed).
    let mut records = Vec::new();
    for (id, from, n) in [(0u32, 0i64, 3_000i64), (1, 0, 3_000), (2, 100_000, 1_000)] {
        for (mut s, t) in long_stream(n) {
            s.stream = id;
            s.send += Nanos::from_millis(from);
            s.arrival += Nanos::from_millis(from);
            records.push((s, t));
        }
    }
    records.sort_by_key(|(s, t)| (s.arrival, !*t, s.stream));
    let policy: Policy = "fixed:delay=100ms".parse().unwrap();
    let run = |cap: usize| {
        let mut pass = StreamingReplay::new(
            &FrameClock::Fps(60.0),
            ClockMapping::Estimated,
            std::slice::from_ref(&policy),
        )
        .unwrap()
        .needs(cap);
        for (s, t) in records.iter().cloned() {
            pass.push(s, t, None);
        }
        let mut out = pass.finish().unwrap();
        out.sort_by_key(|s| s.stream);
        out.into_iter()
            .map(|s| s.needs.unwrap())
            .collect::<Vec<StreamNeeds>>()
    };
    let listed = run(usize::MAX);
    assert!(listed.iter().all(|n| matches!(n, StreamNeeds::Listed(_))));
    let sketched = run(4_000);
    assert!(
        sketched
            .iter()
            .all(|n| matches!(n, StreamNeeds::Sketched(_)))
    );
    let (exact, sketch) = (Bounds::of_streams(listed), Bounds::of_streams(sketched));
    assert!(sketch.any.sketched() && !exact.any.sketched());
    let frames = exact.any.frames();
    assert!(frames > 20_000, "{frames} frames");
    assert_eq!(
        (sketch.any.frames(), sketch.window.frames()),
        (frames, frames)
    );
    for share in [0.0, 0.001, 0.01, 0.05, 0.2, 0.5, 1.0] {
        for (name, s, e) in [
            ("any", &sketch.any, &exact.any),
            ("window", &sketch.window, &exact.window),
        ] {
            let (s, e, start) = (
                s.at_share(share).unwrap(),
                e.at_share(share).unwrap(),
                e.at_share(0.0).unwrap(),
            );
            assert!(s <= e + 1e-9, "{name} at {share}: sketch {s} above {e}");
            // The window curve's exact part (the first budgets) may be above its relaxation.
            if name == "any" {
                assert!(
                    e - s <= (start - e) / 2047.0 + 1e-9,
                    "{name} at {share}: sketch {s}, exact {e}"
                );
            }
        }
    }
}
