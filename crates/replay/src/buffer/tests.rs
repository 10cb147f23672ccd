//! Contract vectors from seed 000 and seed 002, through the library API.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

use super::*;
use crate::policy::MissPolicy;

fn s(seq: i64, send_ms: f64, value: f64) -> Sample {
    Sample::new(0, seq, Nanos::from_millis_f64(send_ms), Nanos::ZERO).with_values(vec![value])
}

/// The buffer part of `fixed:delay=…,max_gap=…,capacity=…` (the delay is the caller's: these
/// tests pass the target time directly).
fn cfg(_delay: i64, max_gap: i64, capacity: usize) -> BufferConfig {
    BufferConfig {
        max_gap: Nanos::from_millis(max_gap),
        capacity,
        ..BufferConfig::default()
    }
}

fn filled(samples: &[Sample], config: BufferConfig) -> SnapshotBuffer {
    let mut b = SnapshotBuffer::new(config);
    for i in 0..samples.len() {
        b.push(samples, i as u32);
    }
    b
}

fn value(samples: &[Sample], pick: &Pick) -> f64 {
    let a = samples[pick.from.unwrap() as usize].values[0];
    match pick.to {
        Some(to) => a + (samples[to as usize].values[0] - a) * pick.alpha(),
        None => a,
    }
}

#[test]
fn c4_sorted_by_send_time_whatever_the_arrival_order() {
    let samples = [s(3, 150.0, 15.0), s(1, 50.0, 5.0), s(2, 100.0, 10.0)];
    let b = filled(&samples, cfg(100, 120, 8));
    let order: Vec<f64> = b
        .indices()
        .map(|i| samples[i as usize].send.as_millis_f64())
        .collect();
    assert_eq!(order, vec![50.0, 100.0, 150.0]);
}

#[test]
fn c5_duplicate_tick_is_rejected_and_buffer_unchanged() {
    let samples = [s(7, 70.0, 7.0), s(7, 90.0, 9.0)];
    let mut b = SnapshotBuffer::new(cfg(100, 120, 8));
    assert_eq!(b.push(&samples, 0), Push::Inserted);
    assert_eq!(b.push(&samples, 1), Push::Duplicate);
    assert_eq!(b.len(), 1);
    assert_eq!(b.indices().collect::<Vec<_>>(), vec![0]);
    assert_eq!(b.counters().duplicates, 1);
}

#[test]
fn c7_seed000_interpolation_vector() {
    let samples = [s(3, 150.0, 15.0), s(1, 50.0, 5.0), s(2, 100.0, 10.0)];
    let mut b = filled(&samples, cfg(100, 120, 8));
    // now 225, delay 100 → target 125 (C6).
    let pick = b.sample(Nanos::from_millis(225 - 100));
    assert_eq!(pick.mode, Mode::Interpolate);
    assert_eq!(pick.alpha(), 0.5);
    assert_eq!(value(&samples, &pick), 12.5);
}

#[test]
fn c7_seed002_interpolation_vector() {
    // Estimated server time 2.16 s, delay 0.12 s → render 2.04 s.
    let samples = [s(1, 2000.0, 4.0), s(2, 2100.0, 5.0)];
    let mut b = filled(&samples, cfg(120, 120, 8));
    let pick = b.sample(Nanos::from_millis(2160) - Nanos::from_millis(120));
    assert_eq!(pick.mode, Mode::Interpolate);
    assert!((pick.alpha() - 0.4).abs() < 1e-12);
    assert!((value(&samples, &pick) - 4.4).abs() < 1e-12);
}

#[test]
fn c8_gap_over_budget_holds_the_left_sample() {
    let samples = [s(1, 0.0, 0.0), s(2, 300.0, 30.0)];
    let mut b = filled(&samples, cfg(100, 120, 8));
    let pick = b.sample(Nanos::from_millis(250 - 100));
    assert_eq!((pick.mode, pick.hold), (Mode::Hold, Some(HoldReason::Gap)));
    assert_eq!(value(&samples, &pick), 0.0);
}

#[test]
fn c9_after_the_newest_holds_the_newest() {
    let samples = [s(1, 100.0, 10.0), s(2, 150.0, 15.0)];
    let mut b = filled(&samples, cfg(100, 120, 8));
    let pick = b.sample(Nanos::from_millis(400 - 100));
    assert_eq!(
        (pick.mode, pick.hold),
        (Mode::Hold, Some(HoldReason::AfterNewest))
    );
    assert_eq!(value(&samples, &pick), 15.0);
}

#[test]
fn c10_before_the_oldest_holds_the_oldest_and_empty_has_no_value() {
    let samples = [s(1, 100.0, 10.0), s(2, 150.0, 15.0)];
    let mut b = filled(&samples, cfg(100, 120, 8));
    let pick = b.sample(Nanos::from_millis(50));
    assert_eq!(
        (pick.mode, pick.hold),
        (Mode::Hold, Some(HoldReason::BeforeOldest))
    );
    assert_eq!(value(&samples, &pick), 10.0);
    let mut empty = SnapshotBuffer::new(cfg(100, 120, 8));
    let pick = empty.sample(Nanos::from_millis(50));
    assert_eq!((pick.mode, pick.from), (Mode::Empty, None));
}

#[test]
fn c11_full_buffer_evicts_the_oldest_send_time() {
    // Ten samples pushed newest-first into a buffer of 8: the two oldest sends are evicted
    // as they come, so what remains is the 8 newest by send time.
    let samples: Vec<Sample> = (0..10)
        .rev()
        .map(|i| s(i, i as f64 * 50.0, i as f64))
        .collect();
    let b = filled(&samples, cfg(100, 120, 8));
    assert_eq!(b.len(), 8);
    let mut sends: Vec<i64> = b.indices().map(|i| samples[i as usize].seq).collect();
    sends.sort();
    // Pushing 9,8,...,0: each push beyond 8 evicts the oldest held, which is the newcomer.
    assert_eq!(sends, vec![2, 3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(b.counters().evicted, 2);
}

#[test]
fn c11_seed003_stale_drop_and_prune() {
    let samples = [
        s(1, 100.0, 1.0),
        s(2, 150.0, 2.0),
        s(3, 50.0, 3.0),
        s(4, 200.0, 4.0),
    ];
    let config = BufferConfig {
        stale_drop: true,
        ..cfg(100, 120, 32)
    };
    let mut b = SnapshotBuffer::new(config);
    assert_eq!(b.push(&samples, 0), Push::Inserted);
    assert_eq!(b.push(&samples, 1), Push::Inserted);
    assert_eq!(b.push(&samples, 2), Push::Stale);
    assert_eq!(b.push(&samples, 3), Push::Inserted);
    // Sampling between 150 and 200 prunes everything older than the left bracket (150).
    let pick = b.sample(Nanos::from_millis(175));
    assert_eq!(pick.mode, Mode::Interpolate);
    assert_eq!(b.len(), 2);
}

#[test]
fn c12_late_packet_behind_the_playout_point_is_counted() {
    let samples = [
        s(1, 0.0, 0.0),
        s(2, 50.0, 5.0),
        s(3, 100.0, 10.0),
        s(0, -50.0, -5.0),
    ];
    let mut b = SnapshotBuffer::new(cfg(100, 120, 8));
    for i in 0..3 {
        b.push(&samples, i);
    }
    b.sample(Nanos::from_millis(75));
    assert_eq!(b.push(&samples, 3), Push::Late);
    assert_eq!(b.counters().late, 1);
}

#[test]
fn c14_never_interpolate_across_a_teleport() {
    let mut samples = vec![s(1, 0.0, 0.0), s(2, 50.0, 100.0)];
    samples[1].event = Some(Lifecycle::Teleport);
    let mut b = filled(&samples, cfg(100, 120, 8));
    let pick = b.sample(Nanos::from_millis(25));
    assert_eq!((pick.mode, value(&samples, &pick)), (Mode::Hold, 0.0));
    // Past the teleport, the teleported sample is the one shown.
    let pick = b.sample(Nanos::from_millis(51));
    assert_eq!(value(&samples, &pick), 100.0);
}

#[test]
fn duplicate_of_a_pruned_tick_is_still_a_duplicate() {
    let samples = [
        s(1, 0.0, 0.0),
        s(2, 50.0, 5.0),
        s(3, 100.0, 10.0),
        s(1, 0.0, 0.0),
    ];
    let mut b = SnapshotBuffer::new(cfg(100, 120, 8));
    for i in 0..3 {
        b.push(&samples, i);
    }
    b.sample(Nanos::from_millis(75));
    assert_eq!(b.push(&samples, 3), Push::Duplicate);
}

/// C13: an explicit, bounded miss policy. Extrapolation continues along the last two samples
/// for at most the horizon, then holds the state reached there; hold stays at the newest.
#[test]
fn c13_extrapolate_within_a_bounded_horizon_then_hold() {
    let samples = [s(1, 0.0, 0.0), s(2, 50.0, 5.0)];
    let config = BufferConfig {
        miss: MissPolicy::Extrapolate(Nanos::from_millis(250)),
        ..cfg(100, 120, 8)
    };
    let mut b = filled(&samples, config.clone());
    let pick = b.sample(Nanos::from_millis(80));
    assert_eq!((pick.mode, pick.hold), (Mode::Extrapolate, None));
    assert!((value(&samples, &pick) - 8.0).abs() < 1e-12);
    let pick = b.sample(Nanos::from_millis(400));
    assert_eq!(
        (pick.mode, pick.hold),
        (Mode::Hold, Some(HoldReason::AfterNewest))
    );
    assert!(
        (value(&samples, &pick) - 30.0).abs() < 1e-12,
        "held at the 300 ms horizon"
    );
    // Never across a gap wider than max_gap: a lone newest after a gap is held.
    let gapped = [s(1, 0.0, 0.0), s(2, 200.0, 20.0)];
    let mut b = filled(&gapped, config);
    let pick = b.sample(Nanos::from_millis(250));
    assert_eq!((pick.mode, value(&gapped, &pick)), (Mode::Hold, 20.0));
    // The default miss policy holds the newest (C9).
    let mut h = filled(&samples, cfg(100, 120, 8));
    assert_eq!(value(&samples, &h.sample(Nanos::from_millis(80))), 5.0);
}
