//! Contracts C1, C3 (fixed mapping) and C6 through the public replay API.

use jitterlab_capture::{Nanos, Sample};
use jitterlab_replay::{ClockMapping, FrameClock, Mode, Policy, Stream, replay_stream};

fn s(seq: i64, send_ms: i64, arrival_ms: i64, v: f64) -> Sample {
    Sample::new(
        0,
        seq,
        Nanos::from_millis(send_ms),
        Nanos::from_millis(arrival_ms),
    )
    .with_values(vec![v])
}

fn frames(
    samples: &[Sample],
    policy: &str,
    at_ms: &[i64],
    offset_ms: i64,
) -> Vec<(Mode, Nanos, Vec<f64>)> {
    let policy: Policy = policy.parse().unwrap();
    let at = FrameClock::At(at_ms.iter().map(|&t| Nanos::from_millis(t)).collect());
    let mut out = Vec::new();
    replay_stream(
        &Stream::new(samples),
        &policy,
        &at,
        ClockMapping::Fixed(Nanos::from_millis(offset_ms)),
        |f| {
            out.push((f.mode, f.target, f.value.to_vec()));
        },
    )
    .unwrap();
    out
}

/// C1: arrival time only decides availability; send time alone orders samples. A sample whose
/// send time brackets the target is not used before it has arrived, and once it arrives last
/// it is placed by its send time, not taken as the newest state.
#[test]
fn c01_arrival_decides_availability_send_time_orders() {
    let samples = [s(1, 0, 5, 0.0), s(3, 100, 20, 10.0), s(2, 50, 180, 9.0)];
    // At 170 sample 2 (send 50) has not arrived: target 70 is interpolated 0→10 (gap 100 ≤ 120).
    let got = frames(&samples, "fixed:delay=100ms,max_gap=120ms", &[170, 185], 0);
    assert_eq!(got[0].0, Mode::Interpolate);
    assert!((got[0].2[0] - 7.0).abs() < 1e-12, "{:?}", got[0]);
    // At 185 it has arrived (last of all): target 85 lies between it (50 → 9) and 100 → 10,
    // so 9.7 is shown. Taking the last arrival as the newest would show 9; ignoring it, 8.5.
    assert_eq!(got[1].0, Mode::Interpolate);
    assert!((got[1].2[0] - 9.7).abs() < 1e-12, "{:?}", got[1]);
}

/// C6 with C3's explicit mapping: target = (local now + offset) − delay on the sender clock.
#[test]
fn c06_target_is_mapped_now_minus_delay() {
    let samples = [s(1, 10_000, 20, 1.0), s(2, 10_050, 70, 2.0)];
    let got = frames(&samples, "fixed:delay=100ms,max_gap=120ms", &[125], 10_000);
    assert_eq!(got[0].1, Nanos::from_millis(125 + 10_000 - 100));
    assert_eq!(got[0].0, Mode::Interpolate);
    assert!((got[0].2[0] - 1.5).abs() < 1e-12);
}

/// C3: without a given offset, the minimum-transit estimate maps the fastest packet to zero
/// transit, so a constant clock offset between the hosts does not change what is shown.
#[test]
fn c03_estimated_offset_cancels_the_clock_offset() {
    let near: Vec<Sample> = (0..20)
        .map(|i| s(i, i * 50, i * 50 + 30 + (i % 3) * 7, i as f64))
        .collect();
    let far: Vec<Sample> = near
        .iter()
        .map(|x| Sample {
            send: x.send + Nanos::from_secs(3600),
            ..x.clone()
        })
        .collect();
    let policy: Policy = "fixed:delay=80ms".parse().unwrap();
    let run = |v: &[Sample]| {
        let mut shown = Vec::new();
        replay_stream(
            &Stream::new(v),
            &policy,
            &FrameClock::Fps(60.0),
            ClockMapping::Estimated,
            |f| {
                shown.push((f.mode, f.value.to_vec()));
            },
        )
        .unwrap();
        shown
    };
    assert_eq!(run(&near), run(&far));
}
