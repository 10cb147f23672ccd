//! Contracts C1, C3 (fixed mapping) and C6 through the public replay API.

use jitterlab_capture::{Nanos, Sample};
use jitterlab_replay::{ClockMapping, FrameClock, Mode, Policy, Replay, Stream};

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
    Replay::new(at.clone())
        .clock(ClockMapping::Fixed(Nanos::from_millis(offset_ms)))
        .stream(&Stream::new(samples), &policy, |f| {
            out.push((f.mode, f.target, f.value.to_vec()));
        })
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
        Replay::new(FrameClock::Fps(60.0))
            .clock(ClockMapping::Estimated)
            .stream(&Stream::new(v), &policy, |f| {
                shown.push((f.mode, f.value.to_vec()));
            })
            .unwrap();
        shown
    };
    assert_eq!(run(&near), run(&far));
}

/// Source engine preset (anchors.md §5): lerp = max(cl_interp, cl_interp_ratio / cl_updaterate),
/// a fixed render delay, and extrapolation for at most cl_extrapolate_amount (0.25 s).
#[test]
fn source_preset_lerp_and_bounded_extrapolation() {
    let lerp = |p: &str| {
        let policy = p.parse::<Policy>().unwrap();
        policy
            .config::<jitterlab_replay::SourceConfig>()
            .unwrap()
            .lerp()
    };
    assert_eq!(
        lerp("source"),
        Nanos::from_millis(100),
        "defaults: max(0.1, 2/20)"
    );
    assert_eq!(
        lerp("source:cl_interp_ratio=3"),
        Nanos::from_millis(150),
        "ratio 3 covers one lost packet"
    );
    assert_eq!(lerp("source:cl_updaterate=66"), Nanos::from_millis(100));
    assert_eq!(
        lerp("source:cl_interp=0ms,cl_interp_ratio=1,cl_updaterate=50"),
        Nanos::from_millis(20)
    );
    // 20 Hz samples stop at 100 ms; render at now − 100 ms extrapolates up to 350 ms.
    let samples: Vec<Sample> = (0..3)
        .map(|i| s(i, i * 50, i * 50 + 5, i as f64 * 5.0))
        .collect();
    let got = frames(&samples, "source", &[250, 400, 600], 0);
    assert_eq!(got[0].0, Mode::Extrapolate);
    assert!((got[0].2[0] - 15.0).abs() < 1e-9, "{:?}", got[0]);
    assert_eq!(got[1].0, Mode::Extrapolate);
    assert!((got[1].2[0] - 30.0).abs() < 1e-9, "300 ms: {:?}", got[1]);
    assert_eq!(got[2].0, Mode::Hold, "past the 250 ms horizon");
    assert!(
        (got[2].2[0] - 35.0).abs() < 1e-9,
        "held at 100 + 250 ms: {:?}",
        got[2]
    );
}

/// C14 through a replay: one interpolation factor drives every channel, linearly for position
/// and spherically for the `qx,qy,qz,qw` rotation; the discrete state switches, never averages.
#[test]
fn c14_one_factor_drives_position_linearly_and_rotation_by_slerp() {
    let yaw = |deg: f64| {
        let h = deg.to_radians() / 2.0;
        [0.0, 0.0, h.sin(), h.cos()]
    };
    let mk = |seq: i64, send: i64, x: f64, q: [f64; 4], state: u32| {
        let mut s = Sample::new(
            0,
            seq,
            Nanos::from_millis(send),
            Nanos::from_millis(send + 1),
        )
        .with_values(vec![x, 0.0, 0.0, q[0], q[1], q[2], q[3]]);
        s.state = Some(state);
        s
    };
    let samples = [mk(1, 0, 0.0, yaw(0.0), 4), mk(2, 50, 10.0, yaw(90.0), 9)];
    let channels: Vec<String> = "x,y,z,qx,qy,qz,qw".split(',').map(String::from).collect();
    let policy: Policy = "fixed:delay=100ms".parse().unwrap();
    let mut seen = Vec::new();
    Replay::new(FrameClock::At(vec![Nanos::from_millis(125)]))
        .clock(ClockMapping::Fixed(Nanos::ZERO))
        .stream(
            &Stream::new(&samples).with_channels(&channels),
            &policy,
            |f| seen.push((f.mode, f.value.to_vec(), f.state)),
        )
        .unwrap();
    let (mode, v, state) = &seen[0];
    assert_eq!(*mode, Mode::Interpolate);
    assert!((v[0] - 5.0).abs() < 1e-12, "position is linear");
    let want = yaw(45.0);
    for i in 0..4 {
        assert!(
            (v[3 + i] - want[i]).abs() < 1e-12,
            "rotation is slerped: {v:?}"
        );
    }
    assert_eq!(
        *state,
        Some(4),
        "the state is the left sample's until the right one's time"
    );
}

/// Frame clocks: a hitchy frame rate renders fewer frames with longer steps, reproducibly.
#[test]
fn frame_hitches_skip_time_reproducibly() {
    let samples: Vec<Sample> = (0..200)
        .map(|i| s(i, i * 50, i * 50 + 20, i as f64))
        .collect();
    let policy: Policy = "fixed:delay=100ms".parse().unwrap();
    let run = |frames: FrameClock| {
        let mut ats = Vec::new();
        Replay::new(frames.clone())
            .clock(ClockMapping::Fixed(Nanos::ZERO))
            .stream(&Stream::new(&samples), &policy, |f| {
                ats.push(f.at);
            })
            .unwrap();
        ats
    };
    let regular = run(FrameClock::Fps(60.0));
    let hitchy = |seed| FrameClock::Hitches {
        fps: 60.0,
        chance: 0.1,
        hitch: Nanos::from_millis(100),
        seed,
    };
    let a = run(hitchy(1));
    assert_eq!(a, run(hitchy(1)));
    assert_ne!(a, run(hitchy(2)));
    assert!(
        a.len() < regular.len() * 2 / 3,
        "{} vs {}",
        a.len(),
        regular.len()
    );
    let longest = a.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(longest >= Nanos::from_millis(116), "{longest}");
    assert!(
        FrameClock::Hitches {
            fps: 60.0,
            chance: 1.5,
            hitch: Nanos::ZERO,
            seed: 0
        }
        .validate()
        .is_err()
    );
}

/// C15: the buffer only smooths confirmed samples and never takes over prediction: with the
/// default miss policy every shown value is a received sample or lies between two of them.
#[test]
fn c15_only_confirmed_samples_are_shown_by_default() {
    let samples: Vec<Sample> = [0, 1, 2, 5, 6]
        .iter()
        .map(|&i| s(i, i * 50, i * 50 + 10, i as f64 * 3.0))
        .collect();
    let got = frames(
        &samples,
        "fixed:delay=60ms,max_gap=120ms",
        &(0..40).map(|k| k * 15).collect::<Vec<_>>(),
        0,
    );
    for (mode, _, v) in &got {
        if let Some(&x) = v.first() {
            assert!(*mode != Mode::Extrapolate);
            assert!(
                (0.0..=18.0).contains(&x),
                "shown {x} beyond the confirmed samples"
            );
        }
    }
}

/// C19: after a gap longer than max_gap the same rule decides: hold (no interpolation or
/// extrapolation across it), and hand off to extrapolation only within its bounded horizon.
#[test]
fn c19_after_a_long_gap_max_gap_decides() {
    // The 500 ms sample has arrived by the frame at 400 (local), so the gap is known.
    let samples = [s(1, 0, 5, 0.0), s(2, 50, 55, 5.0), s(3, 500, 300, 50.0)];
    // At target 300 the pair 50→500 is 450 ms apart: hold the 50 ms sample, value 5.
    let held = frames(&samples, "fixed:delay=100ms,max_gap=120ms", &[400], 0);
    assert_eq!((held[0].0, held[0].2[0]), (Mode::Hold, 5.0));
    let extrapolating = frames(
        &samples,
        "fixed:delay=100ms,max_gap=120ms,miss=extrapolate:100ms",
        &[400],
        0,
    );
    assert_eq!(
        (extrapolating[0].0, extrapolating[0].2[0]),
        (Mode::Hold, 5.0),
        "never across the gap"
    );
}

/// Correction distance: a sample arriving for a moment already displayed corrects what was
/// shown then; the metric is the distance between the two.
#[test]
fn correction_distance_of_a_late_sample() {
    // Sample 3 (sent at 100 ms, value 30) arrives at 260 ms, after target 100 was displayed as
    // the interpolation 5 → 15 at one half: 10. It corrects that by 20.
    let samples = [
        s(1, 0, 5, 0.0),
        s(2, 50, 55, 5.0),
        s(4, 150, 155, 15.0),
        s(3, 100, 260, 30.0),
    ];
    let policy: Policy = "fixed:delay=100ms,max_gap=120ms".parse().unwrap();
    let at = FrameClock::At(
        [200, 225, 250, 275]
            .iter()
            .map(|&t| Nanos::from_millis(t))
            .collect(),
    );
    let m = Replay::new(at.clone())
        .clock(ClockMapping::Fixed(Nanos::ZERO))
        .stream(&Stream::new(&samples), &policy, |_| {})
        .unwrap()
        .summary();
    assert_eq!(m.corrections, 1);
    assert!((m.mean_correction.unwrap() - 20.0).abs() < 1e-9, "{m:?}");
    // In time, the same sample corrects nothing.
    let mut on_time = samples;
    on_time[3].arrival = Nanos::from_millis(60);
    let m = Replay::new(at.clone())
        .clock(ClockMapping::Fixed(Nanos::ZERO))
        .stream(&Stream::new(&on_time), &policy, |_| {})
        .unwrap()
        .summary();
    assert_eq!(m.corrections, 0);
}
