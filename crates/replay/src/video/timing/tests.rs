//! libwebrtc's `timing_unittest.cc` vectors, re-derived for jitterlab's [`Timing`] (times in
//! ms on a simulated clock; timestamps at 90 kHz).

use super::*;

fn ms(v: i64) -> Nanos {
    Nanos::from_millis(v)
}

/// 25 fps: 40 ms and 3600 ticks per frame.
const FRAME_MS: i64 = 40;
const FRAME_TICKS: i64 = 3600;

/// `VCMTimingTest.JitterDelay`, every expectation in order.
#[test]
fn jitter_delay_slews_100_ms_per_second_and_honours_min_playout() {
    let mut now = ms(0);
    let mut timing = Timing::new(now);
    let mut ts = 0i64;
    let per_s = Timing::MAX_CHANGE_PER_SECOND;
    timing.update_current_delay_slewed(ts, per_s);
    timing.reset(now);
    timing.incoming_timestamp(ts, now);
    let mut jitter = ms(20);
    timing.set_jitter_delay(jitter);
    timing.update_current_delay_slewed(ts, per_s);
    timing.set_render_delay(Nanos::ZERO);
    let wait =
        |t: &Timing, ts: i64, now: Nanos| t.max_waiting_time(t.render_time(ts, now), now, false);
    // The first update sets the render time: with no decode time the wait is the jitter.
    assert_eq!(wait(&timing, ts, now), jitter);

    // 110 ms more jitter: after one second only 100 ms of it.
    jitter += ms(110);
    ts += 90_000;
    now += ms(1000);
    timing.set_jitter_delay(jitter);
    timing.update_current_delay_slewed(ts, per_s);
    assert_eq!(wait(&timing, ts, now), jitter - ms(10));

    // One more second: all of it.
    ts += 90_000;
    now += ms(1000);
    timing.update_current_delay_slewed(ts, per_s);
    assert_eq!(wait(&timing, ts, now), jitter);

    // 300 frames without jitter: the wait is exactly the jitter.
    for _ in 0..300 {
        now += ms(FRAME_MS);
        ts += FRAME_TICKS;
        timing.incoming_timestamp(ts, now);
    }
    timing.update_current_delay_slewed(ts, per_s);
    assert_eq!(wait(&timing, ts, now), jitter);

    // One second of 10 ms decodes: the decode time joins the target, the wait stays.
    for _ in 0..25 {
        now += ms(10);
        timing.stop_decode_timer(ms(10), now);
        ts += FRAME_TICKS;
        now += ms(FRAME_MS - 10);
        timing.incoming_timestamp(ts, now);
    }
    timing.update_current_delay_slewed(ts, per_s);
    assert_eq!(wait(&timing, ts, now), jitter);

    // A 200 ms min playout delay: the wait is 200 − decode (10) − render delay (10).
    timing.set_min_playout_delay(ms(200));
    now += ms(5000);
    ts += 5 * 90_000;
    timing.update_current_delay_slewed(ts, per_s);
    timing.set_render_delay(ms(10));
    assert_eq!(wait(&timing, ts, now), ms(200 - 10 - 10));
    assert_eq!(timing.target_delay(), ms(200));

    timing.set_min_playout_delay(Nanos::ZERO);
    now += ms(5000);
    ts += 5 * 90_000;
    timing.update_current_delay_slewed(ts, per_s);
    // HasConsistentVideoDelayTimings: min ≤ current ≤ max, jitter ≤ target.
    assert!(timing.jitter_delay() <= timing.target_delay());
    assert!(timing.current_delay() >= Nanos::ZERO && timing.current_delay() <= ms(10_000));
}

/// `VCMTimingTest.TimestampWrapAround`, on extended timestamps: five frames at 25 fps from
/// 1337 ms, starting 3 frames before 2³² − 1; the frame at 2³² − 1 renders at 1337 + 120 ms
/// and one 90 ticks (1 ms) later at 1337 + 121 ms, after every update.
#[test]
fn extrapolation_across_the_32_bit_wrap() {
    let start = ms(1337);
    let mut now = start;
    let mut timing = Timing::new(now);
    let last = 0xFFFF_FFFF_i64;
    let mut ts = last - 3 * FRAME_TICKS;
    for _ in 0..5 {
        timing.incoming_timestamp(ts, now);
        now += ms(FRAME_MS);
        ts += FRAME_TICKS;
        assert_eq!(timing.render_time(last, now), Some(start + ms(120)));
        assert_eq!(timing.render_time(last + 90, now), Some(start + ms(121)));
    }
}

/// `VCMTimingTest.UseLowLatencyRenderer`.
#[test]
fn low_latency_rendering_is_min_zero_and_max_up_to_500_ms() {
    let mut t = Timing::new(Nanos::ZERO);
    assert!(!t.low_latency());
    t.set_min_playout_delay(ms(10))
        .set_max_playout_delay(ms(20));
    assert!(!t.low_latency());
    t.set_min_playout_delay(Nanos::ZERO);
    assert!(t.low_latency());
    t.set_max_playout_delay(Nanos::ZERO);
    assert!(t.low_latency());
    t.set_max_playout_delay(ms(500));
    assert!(t.low_latency());
    t.set_max_playout_delay(ms(501));
    assert!(!t.low_latency());
}

/// `VCMTimingTest.MaxWaitingTimeIsZeroForZeroRenderTime`: min = max = 0 renders at time 0,
/// so every wait is negative.
#[test]
fn zero_playout_delay_waits_are_negative() {
    let mut t = Timing::new(Nanos::ZERO);
    t.set_max_playout_delay(Nanos::ZERO);
    let mut now = Nanos::from_micros(31_500_000_000_000);
    for _ in 0..10 {
        now += Nanos::from_micros(16_666);
        assert!(t.max_waiting_time(t.render_time(0, now), now, false) < Nanos::ZERO);
    }
}

/// `VCMTimingTest.MaxWaitingTimeZeroDelayPacingExperiment` (pacing 3 ms) and
/// `MaxWaitingTimeReturnsZeroIfTooManyFramesQueuedIsTrue`.
#[test]
fn low_latency_frames_are_paced() {
    let mut t = Timing::new(Nanos::ZERO);
    t.set_max_playout_delay(ms(500)).set_min_pacing(ms(3));
    let mut now = Nanos::from_micros(31_500_000_000_000);
    for _ in 0..10 {
        now += Nanos::from_micros(16_666);
        assert_eq!(t.max_waiting_time(None, now, false), Nanos::ZERO);
        t.set_last_decode_scheduled(now);
    }
    assert_eq!(t.max_waiting_time(None, now, false), ms(3));
    assert_eq!(t.max_waiting_time(None, now, true), Nanos::ZERO);
    now += ms(2);
    assert_eq!(t.max_waiting_time(None, now, false), ms(1));
    t.set_last_decode_scheduled(now);
    assert_eq!(t.max_waiting_time(None, now, false), ms(3));
}

/// `VCMTimingTest.UpdateCurrentDelayCapsWhenOffByMicroseconds`: a frame decoded 100 ms late
/// lifts the delay to 110 ms (lateness + render delay); a frame 37 µs early rounds to 0 ms
/// late, and the delay drops to the new 50 ms target.
#[test]
fn late_decodes_lift_the_delay_and_on_time_ones_cap_it() {
    let mut t = Timing::new(Nanos::ZERO);
    t.set_min_playout_delay(ms(200));
    t.update_current_delay_late(Some(ms(900)), ms(1000));
    assert_eq!(t.current_delay(), ms(110));
    t.set_min_playout_delay(ms(50));
    let decoded = ms(1337);
    t.update_current_delay_late(Some(decoded + ms(10) + Nanos::from_micros(37)), decoded);
    assert_eq!(t.current_delay(), t.target_delay());
    assert_eq!(t.current_delay(), ms(50));
}

/// The decode-time filter: five samples ignored, then the 95th percentile of the last 10 s.
#[test]
fn decode_time_is_the_95th_percentile_after_five() {
    let mut f = DecodeTimeFilter::default();
    for i in 0..5 {
        f.add(100, i);
    }
    assert_eq!(f.required_ms(), 0);
    for i in 1..=20 {
        f.add(i, 100 + i);
    }
    // ⌊0.95 × 19⌋ = 18: the 19th smallest of 1..=20.
    assert_eq!(f.required_ms(), 19);
    // 10 s later the old samples have left the window.
    f.add(3, 20_200);
    assert_eq!(f.required_ms(), 3);
}

/// The extrapolation rounds to the nearest ms (`+ 0.5` before truncation): on an exact
/// 90-ticks-per-ms line from 1000 ms, 45 ticks past a frame is 1 ms later, 44 ticks the
/// same ms; before two updates the step is truncated to the µs (44 ticks: 488 µs).
#[test]
fn extrapolated_times_round_to_the_millisecond() {
    let mut e = TimestampExtrapolator::new(ms(1000));
    e.update(ms(1000), 9000);
    assert_eq!(e.local_time(9044), Some(Nanos::from_micros(1_000_488)));
    for i in 1..3 {
        e.update(ms(1000 + 40 * i), 9000 + 3600 * i);
    }
    assert_eq!(e.local_time(9000 + 45), Some(ms(1001)));
    assert_eq!(e.local_time(9000 + 44), Some(ms(1000)));
    assert_eq!(e.local_time(9000 + 3600 * 10), Some(ms(1400)));
}
