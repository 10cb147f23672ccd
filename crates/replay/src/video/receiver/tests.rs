//! The `webrtc-video` playout on hand-built 25 fps streams (single-packet frames of 1000 bytes,
//! 40 ms and 3600 ticks apart), with the first frames' times worked out by hand from
//! libwebrtc's rules.
//!
//! The first jitter estimate, used throughout these short runs: the Kalman slope 1/64 000 ms
//! per byte times (max 1000 − mean 500) bytes = 0.0078 ms, plus the noise threshold's floor of
//! 1 ms, is 1.0078 ms, truncated to 1007 µs; with the 10 ms operating-system jitter, 11.007 ms.
//! The extrapolator is exact on a jitter-free stream: a frame's expected completion is its
//! arrival.

use jitterlab_capture::Sample;
use jitterlab_capture::decode::MediaKind;

use super::*;
use crate::playout::Media;

fn ms(v: f64) -> Nanos {
    Nanos::from_millis_f64(v)
}

/// Frame `i` sent at 40·i ms, arriving at `arrival(i)` ms.
fn frames(n: i64, arrival: impl Fn(i64) -> f64) -> Vec<Sample> {
    let mut v: Vec<Sample> = (0..n)
        .map(|i| Sample {
            marker: true,
            payload_type: Some(96),
            rtp_timestamp: 3600 * i,
            rtp_clock: 90_000,
            size: 1000,
            ..Sample::new(0, i, Nanos::from_millis(40 * i), ms(arrival(i)))
        })
        .collect();
    v.sort_by_key(|s| s.arrival);
    v
}

fn video() -> Media {
    Media {
        kind: Some(MediaKind::Video),
        clock_rate: Some(90_000),
        encoding: Some("VP8".into()),
        payload_type: Some(96),
    }
}

fn play(packets: &[Sample], policy: &str) -> (PlayoutRun, WebRtcVideoStats) {
    let stream = PlayoutStream::new(0, packets, video(), Nanos::ZERO);
    let policy: crate::Policy = policy.parse().unwrap();
    let run = policy.playout(&stream).unwrap();
    let Some(PlayoutDetail::WebRtcVideo(stats)) = run.detail.clone() else {
        panic!("no webrtc-video detail: {:?}", run.detail);
    };
    check_events(&stream, &run);
    (run, stats)
}

/// One event per slot in sequence order, times never decreasing, one target each.
fn check_events(stream: &PlayoutStream<'_>, run: &PlayoutRun) {
    let seqs: Vec<i64> = run
        .events
        .iter()
        .map(|e| match e {
            PlayoutEvent::Played { seq, .. } | PlayoutEvent::Concealed { seq, .. } => *seq,
        })
        .collect();
    let want: Vec<i64> = stream.slots().iter().map(|s| s.seq).collect();
    assert_eq!(seqs, want);
    let at: Vec<Nanos> = run
        .events
        .iter()
        .map(|e| match e {
            PlayoutEvent::Played { at, .. } | PlayoutEvent::Concealed { at, .. } => *at,
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "{at:?}");
    assert!(run.target(run.events.len().saturating_sub(1)).is_some() || run.events.is_empty());
}

/// The time each slot was shown, `None` if concealed.
fn shown(run: &PlayoutRun) -> Vec<Option<Nanos>> {
    run.events
        .iter()
        .map(|e| match e {
            PlayoutEvent::Played { at, .. } => Some(*at),
            PlayoutEvent::Concealed { .. } => None,
        })
        .collect()
}

#[test]
fn the_first_frame_shows_on_arrival_and_the_next_after_jitter_and_render_delay() {
    let p = frames(100, |i| 40.0 * i as f64 + 10.0);
    let (run, stats) = play(&p, "webrtc-video");
    let at = shown(&run);
    // Frame 0 is released at once: its render time is its completion with no delay yet.
    assert_eq!(at[0], Some(ms(10.0)));
    // Then the jitter delay is 11.007 ms, and the current delay 11.007 + the first frame's
    // 10 ms lateness (its render delay) = 21.007 ms: frame 1, complete at 50 ms, shows at
    // 71.007 ms, frame 2 at 111.007 ms.
    assert_eq!(at[1], Some(ms(71.007)));
    assert_eq!(at[2], Some(ms(111.007)));
    // Every frame shows, between 21.0 and 21.007 ms after it completed (the estimate only
    // loses the 0.0078 ms as the max frame size decays toward the mean).
    for (i, a) in at.iter().enumerate().skip(1) {
        let d = a.unwrap() - ms(40.0 * i as f64 + 10.0);
        assert!(d >= ms(21.0) && d <= ms(21.007), "frame {i}: {d}");
    }
    assert_eq!(stats.frames_decoded, 100);
    assert_eq!(stats.dropped_too_late + stats.dropped_after_newer, 0);
    assert!((stats.mean_target_ms - 21.0).abs() < 0.01, "{stats:?}");
}

#[test]
fn the_legacy_slew_raises_the_delay_4_ms_per_25_fps_frame() {
    let p = frames(10, |i| 40.0 * i as f64 + 10.0);
    let (run, _) = play(&p, "webrtc-video:slew=100ms");
    let at = shown(&run);
    // The current delay starts at the jitter delay, 11.007 ms, and moves toward the
    // 21.007 ms target by 100 ms × 3600 / 90 000 = 4 ms per frame: frame 1 shows 11.007 ms
    // after completing, frame 2 15.007 ms, frame 3 19.007 ms, frame 4 at the target.
    assert_eq!(at[0], Some(ms(10.0)));
    assert_eq!(at[1], Some(ms(50.0 + 11.007)));
    assert_eq!(at[2], Some(ms(90.0 + 15.007)));
    assert_eq!(at[3], Some(ms(130.0 + 19.007)));
    let d4 = at[4].unwrap() - ms(170.0);
    assert!(d4 > ms(20.9) && d4 <= ms(21.007), "{d4}");
}

#[test]
fn a_min_playout_delay_holds_every_frame_that_long() {
    let p = frames(50, |i| 40.0 * i as f64 + 10.0);
    let (run, stats) = play(&p, "webrtc-video:min=200ms");
    for (i, a) in shown(&run).iter().enumerate() {
        assert_eq!(*a, Some(ms(40.0 * i as f64 + 210.0)), "frame {i}");
    }
    assert!(
        (0..run.events.len()).all(|i| run.target(i) == Some(ms(200.0))),
        "{:?}",
        run.targets
    );
    assert_eq!(stats.mean_target_ms, 200.0);
}

#[test]
fn low_latency_mode_shows_frames_as_they_complete() {
    let p = frames(30, |i| 40.0 * i as f64 + 10.0 + (i % 3) as f64 * 7.0);
    let (run, stats) = play(&p, "webrtc-video:max=500ms");
    assert!(stats.low_latency);
    for (i, a) in shown(&run).iter().enumerate() {
        let arrival = 40.0 * i as f64 + 10.0 + (i % 3) as f64 * 7.0;
        assert_eq!(*a, Some(ms(arrival)), "frame {i}");
    }
}

#[test]
fn a_frame_completing_after_a_newer_one_was_decoded_is_dropped() {
    // Frame 5 is 300 ms late; frame 6 is decoded on time before it comes.
    let p = frames(20, |i| {
        40.0 * i as f64 + 10.0 + if i == 5 { 300.0 } else { 0.0 }
    });
    let (run, stats) = play(&p, "webrtc-video");
    assert_eq!(stats.dropped_after_newer, 1);
    assert_eq!(stats.frames_decoded, 19);
    let PlayoutEvent::Concealed {
        at, arrived_late, ..
    } = run.events[5]
    else {
        panic!("{:?}", run.events[5]);
    };
    assert!(arrived_late);
    // It is placed at its render time as known when it came, between its neighbours'.
    let shown = shown(&run);
    let (four, six) = (shown[4].unwrap(), shown[6].unwrap());
    assert!(four <= at && at <= six, "{four} {at} {six}");
}

#[test]
fn after_a_stall_the_buffer_fast_forwards_to_the_newest_frame() {
    // Frames 10–19 are held up and all complete at once with frame 19 (770 ms). Frame 10
    // completes first and alone in the buffer: libwebrtc decodes the only decodable frame
    // however late, so it shows at once, 339 ms late. Frame 11 comes next with its hand-over
    // long past and newer frames waiting: dropped, as are others of the burst; the newest
    // shows.
    let p = frames(40, |i| {
        if (10..20).contains(&i) {
            770.0
        } else {
            40.0 * i as f64 + 10.0
        }
    });
    let (run, stats) = play(&p, "webrtc-video");
    let at = shown(&run);
    assert_eq!(at[10], Some(ms(770.0)));
    assert_eq!(at[11], None);
    assert!(
        stats.dropped_too_late >= 1 && stats.rendered_late >= 1,
        "{stats:?}"
    );
    assert!(at[19].is_some(), "the newest frame of the burst shows");
    let dropped = (10..20).filter(|&i| at[i].is_none()).count() as u64;
    assert_eq!(dropped, stats.dropped_too_late);
    assert!(run.events[10..20].iter().all(|e| matches!(
        e,
        PlayoutEvent::Played { .. }
            | PlayoutEvent::Concealed {
                arrived_late: true,
                ..
            }
    )));
    assert_eq!(stats.frames_decoded + stats.dropped_too_late, 40);
}

#[test]
fn an_incomplete_frame_is_a_slot_that_never_arrived() {
    let mut p = frames(10, |i| 40.0 * i as f64 + 10.0);
    // Frame 4 had three packets (seqs 4–6) and lost the middle one.
    for s in &mut p {
        if s.seq > 4 {
            s.seq += 2;
        }
    }
    let four = p.iter().position(|s| s.seq == 4).unwrap();
    p[four].marker = false;
    p.insert(
        four + 1,
        Sample {
            seq: 6,
            ..p[four].clone()
        },
    );
    p[four + 1].marker = true;
    let (run, stats) = play(&p, "webrtc-video");
    assert!(matches!(
        run.events[4],
        PlayoutEvent::Concealed {
            arrived_late: false,
            ..
        }
    ));
    assert_eq!(stats.frames_decoded, 9);
    let v = serde_json::to_value(PlayoutDetail::WebRtcVideo(stats.clone())).unwrap();
    assert_eq!(v["frames_decoded"], 9);
    assert_eq!(PlayoutDetail::WebRtcVideo(stats).key(), "webrtc_video");
}

#[test]
fn an_empty_stream_plays_nothing() {
    let (run, stats) = play(&[], "webrtc-video");
    assert!(run.events.is_empty());
    assert_eq!(stats.frames_decoded, 0);
}

/// Hostile input: random sequence numbers, timestamps (backwards, jumping), markers, sizes and
/// arrival times, under every mode: never a panic, every slot once in order.
#[test]
fn random_streams_play_without_panicking() {
    let mut x = 0x853c_49e6_748f_ea9b_u64;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for round in 0..300 {
        let n = next(80) as i64;
        let mut p: Vec<Sample> = (0..n)
            .map(|i| {
                let ts = if next(20) == 0 {
                    next(1 << 40) as i64 - (1 << 39)
                } else {
                    3600 * (i + next(3) as i64 - 1)
                };
                Sample {
                    marker: next(2) == 0,
                    payload_type: Some(96),
                    rtp_timestamp: ts,
                    rtp_clock: 90_000,
                    size: next(3000) as u32,
                    ..Sample::new(
                        0,
                        i + next(4) as i64,
                        Nanos(ts * 100_000 / 9),
                        Nanos::from_millis(next(30_000) as i64 - 1000),
                    )
                }
            })
            .collect();
        p.sort_by_key(|s| s.arrival);
        let policy = [
            "webrtc-video",
            "webrtc-video:slew=100ms",
            "webrtc-video:max=500ms",
            "webrtc-video:min=0ms,max=0ms",
            "webrtc-video:min=300ms,decode_time=15ms",
        ][round % 5];
        play(&p, policy);
    }
}
