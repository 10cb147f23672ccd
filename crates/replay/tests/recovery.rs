//! Recovery figures on hand-built traces whose recovery can be worked out by hand.

use jitterlab_capture::{Nanos, Sample};
use jitterlab_replay::recovery::{RecoverySummary, Spike};
use jitterlab_replay::{ClockMapping, FrameClock, Policy, Prepared, Replay, Stream};

fn ms(v: i64) -> Nanos {
    Nanos::from_millis(v)
}

/// Snapshots every 50 ms with a 20 ms transit; `arrival(i)` overrides packet `i`'s arrival
/// (`None`: lost).
fn trace(n: i64, arrival: impl Fn(i64) -> Option<i64>) -> Vec<Sample> {
    (0..n)
        .filter_map(|i| {
            let at = arrival(i)?;
            Some(Sample::new(0, i as _, ms(50 * i), ms(at)).with_values(vec![i as f64]))
        })
        .collect()
}

/// Replays `samples` through `policy` at exact 10 ms frames to 2990 ms (before the last
/// packet runs out) with the hindsight clock.
fn recovery(samples: &[Sample], policy: &str) -> (Vec<Spike>, RecoverySummary) {
    let prepared = Prepared::new(&Stream::new(samples));
    let frames = FrameClock::At((0..300).map(|f| ms(10 * f)).collect());
    let replay = Replay::new(frames).clock(ClockMapping::Hindsight);
    let policy: Policy = policy.parse().unwrap();
    let metrics = replay.metrics(&prepared, &policy).unwrap();
    (prepared.spikes().to_vec(), metrics.summary().recovery)
}

#[test]
fn a_fixed_buffer_recovers_one_delay_after_an_outage() {
    // Packets 20..=25 (sent 1000..=1250 ms) lost: nothing arrives from 970 ms (packet 19) to
    // 1320 ms (packet 26, on time), a 350 ms outage. A fixed 100 ms buffer holds sample 19
    // across the gap (C8) until its target (now − 20 ms − 100 ms) passes sample 26's 1300 ms:
    // at 1420 ms the target is exactly 1300 ms, the end of the pair across the gap, still
    // held; the 1430 ms frame interpolates (26, 27) and is back at the 100 ms display delay,
    // 110 ms after the outage ended.
    let samples = trace(60, |i| (!(20..=25).contains(&i)).then_some(50 * i + 20));
    let (spikes, r) = recovery(&samples, "fixed:delay=100ms");
    assert_eq!(
        spikes.iter().map(|s| (s.start, s.end)).collect::<Vec<_>>(),
        vec![(ms(970), ms(1320))]
    );
    assert_eq!((r.spikes, r.unrecovered), (1, 0));
    assert_eq!(r.mean_recovery_ms, Some(110.0));
    assert_eq!(r.max_recovery_ms, Some(110.0));
    // Holds from target 950 ms (at 1070 ms) to 1420 ms.
    assert_eq!(r.worst_hold_run_after_spike, 35);
    assert_eq!(r.inflation_ms, Some(0.0));
}

#[test]
fn a_200_ms_delay_spike_recovers_when_the_queue_drains() {
    // Packets 20..=23 queued behind a 200 ms spike: all of them and packet 24 (on time)
    // arrive together at 1220 ms. The spike runs from packet 19's arrival (970 ms) to packet
    // 24's (1220 ms). At 1220 ms the fixed 100 ms buffer's target is 1100 ms, inside the pair
    // (22, 23) just received: display delay is back to 100 ms at once, 0 ms after the end.
    let samples = trace(60, |i| {
        Some(if (20..=24).contains(&i) {
            1220
        } else {
            50 * i + 20
        })
    });
    let (spikes, r) = recovery(&samples, "fixed:delay=100ms");
    assert_eq!(spikes.len(), 1, "{spikes:?}");
    assert_eq!(
        (spikes[0].start, spikes[0].end, spikes[0].peak),
        (ms(970), ms(1220), ms(200))
    );
    assert_eq!((r.spikes, r.unrecovered), (1, 0));
    assert_eq!(r.mean_recovery_ms, Some(0.0));
    // A 300 ms buffer never held: nothing to recover from, and the same spike counted.
    let (_, deep) = recovery(&samples, "fixed:delay=300ms");
    assert_eq!((deep.spikes, deep.worst_hold_run_after_spike), (1, 0));
    assert_eq!(deep.mean_recovery_ms, Some(0.0));
}

#[test]
fn a_steady_trace_has_no_spike() {
    let samples = trace(60, |i| Some(50 * i + 20 + (i % 3) * 10));
    let (spikes, r) = recovery(&samples, "fixed:delay=100ms");
    assert!(spikes.is_empty(), "{spikes:?}");
    assert_eq!((r.spikes, r.mean_recovery_ms, r.unrecovered), (0, None, 0));
}
