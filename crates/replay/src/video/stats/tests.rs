//! The video figures of hand-built playouts: every value worked out by hand.

use jitterlab_capture::Sample;
use jitterlab_capture::decode::MediaKind;

use super::*;
use crate::playout::Media;

fn ms(v: i64) -> Nanos {
    Nanos::from_millis(v)
}

/// Single-packet video frames arriving at `arrivals` (ms), 40 ms of timestamp apart.
fn packets(arrivals: &[i64]) -> Vec<Sample> {
    arrivals
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let i = i as i64;
            Sample {
                marker: true,
                payload_type: Some(96),
                rtp_timestamp: 3600 * i,
                rtp_clock: 90_000,
                size: 500,
                ..Sample::new(0, i, ms(40 * i), ms(a))
            }
        })
        .collect()
}

fn video() -> Media {
    Media {
        kind: Some(MediaKind::Video),
        clock_rate: Some(90_000),
        encoding: Some("VP8".into()),
        payload_type: Some(96),
    }
}

/// A run showing slot `i` at `at[i]` ms.
fn shown(at: &[i64]) -> PlayoutRun {
    PlayoutRun::new(
        at.iter()
            .enumerate()
            .map(|(i, &t)| PlayoutEvent::Played {
                seq: i as i64,
                at: ms(t),
            })
            .collect(),
    )
}

fn measure(arrivals: &[i64], run: &PlayoutRun) -> VideoStats {
    let p = packets(arrivals);
    VideoStats::measure(&PlayoutStream::new(0, &p, video(), Nanos::ZERO), run)
}

/// Packets arriving every 40 ms from 0 up to `until` ms.
fn steady(until: i64) -> Vec<i64> {
    (0..=until / 40).map(|i| 40 * i).collect()
}

#[test]
fn the_freeze_average_includes_the_delay_judged() {
    // Five 40 ms delays, then 200 ms: the mean of the six is 66.67 ms, the bound
    // max(3 × 66.67, 66.67 + 150) = 216.67 ms, so no freeze (against the five before it alone,
    // max(120, 190) = 190 ms, it would be one).
    let s = measure(&steady(400), &shown(&[0, 40, 80, 120, 160, 200, 400]));
    assert_eq!((s.freeze_count, s.total_freezes_duration_ms), (0, 0.0));
    // 250 ms instead: the mean is 75 ms, the bound max(225, 225): a freeze of 250 ms.
    let s = measure(&steady(450), &shown(&[0, 40, 80, 120, 160, 200, 450]));
    assert_eq!((s.freeze_count, s.total_freezes_duration_ms), (1, 250.0));
    // totalInterFrameDelay 0.45 s; squared 5 × 0.04² + 0.25² = 0.0705 s².
    assert!((s.total_inter_frame_delay - 0.45).abs() < 1e-12);
    assert!((s.total_squared_inter_frame_delay - 0.0705).abs() < 1e-12);
}

#[test]
fn no_freeze_before_five_delays() {
    // The fourth delay is 1 s: only four delays known, no freeze.
    let s = measure(&steady(1200), &shown(&[0, 40, 80, 120, 1120]));
    assert_eq!(s.freeze_count, 0);
    // As the fifth: mean (4 × 40 + 1000) / 5 = 232 ms, bound max(696, 382) = 696 ms.
    let s = measure(&steady(1200), &shown(&[0, 40, 80, 120, 160, 1160]));
    assert_eq!((s.freeze_count, s.total_freezes_duration_ms), (1, 1000.0));
}

#[test]
fn a_gap_with_the_sender_silent_is_a_pause_and_with_packets_flowing_a_freeze() {
    let run = shown(&[100, 140, 180, 220, 260, 300, 6300]);
    // Packets up to 260 ms, then none until 6260 ms: inactive from 5260 ms, inside the
    // 300 → 6300 ms gap. One pause of 6 s, no freeze.
    let mut silent: Vec<i64> = steady(260);
    silent.push(6260);
    let s = measure(&silent, &run);
    assert_eq!((s.pause_count, s.total_pauses_duration_ms), (1, 6000.0));
    assert_eq!(s.freeze_count, 0);
    // Packets every 40 ms throughout (the frames were just not shown): a freeze. Mean
    // (5 × 40 + 6000) / 6 = 1033.3 ms, bound max(3100, 1183.3) = 3100 ms ≤ 6000 ms.
    let s = measure(&steady(6300), &run);
    assert_eq!((s.pause_count, s.freeze_count), (0, 1));
    assert_eq!(s.total_freezes_duration_ms, 6000.0);
    // Both ways the inter-frame delays are the same: 6.2 s, and 5 × 0.0016 + 36 s².
    assert!((s.total_inter_frame_delay - 6.2).abs() < 1e-12);
    assert!((s.total_squared_inter_frame_delay - 36.008).abs() < 1e-9);
}

#[test]
fn a_paused_gap_stays_out_of_the_freeze_average() {
    // Five 40 ms delays, a 6 s pause, then 250 ms: with the pause out of the window the mean
    // of 40 × 5 and 250 is 75 ms, the bound 225 ms, a freeze; had the pause entered it the
    // mean would be 921 ms and the bound 2764 ms.
    let mut silent: Vec<i64> = steady(200);
    silent.push(6200);
    silent.extend([6240, 6280, 6320]);
    let run = shown(&[0, 40, 80, 120, 160, 200, 6200, 6450]);
    let s = measure(&silent, &run);
    assert_eq!(s.pause_count, 1);
    assert_eq!((s.freeze_count, s.total_freezes_duration_ms), (1, 250.0));
}

#[test]
fn counts_follow_the_events() {
    let run = PlayoutRun::new(vec![
        PlayoutEvent::Played { seq: 0, at: ms(10) },
        PlayoutEvent::Concealed {
            seq: 1,
            at: ms(50),
            arrived_late: true,
        },
        PlayoutEvent::Concealed {
            seq: 2,
            at: ms(90),
            arrived_late: false,
        },
        PlayoutEvent::Played {
            seq: 3,
            at: ms(130),
        },
    ]);
    let s = measure(&[0, 40, 80, 120], &run);
    assert_eq!((s.frames, s.complete, s.incomplete, s.late), (4, 3, 1, 1));
    assert_eq!(
        (
            s.frames_received,
            s.frames_decoded,
            s.frames_dropped,
            s.frames_rendered
        ),
        (3, 2, 1, 2)
    );
    assert_eq!(s.late_ratio(), 0.25);
    let mut total = s;
    total.merge(&s);
    assert_eq!((total.frames, total.late, total.frames_rendered), (8, 2, 4));
    assert!((total.total_inter_frame_delay - 0.24).abs() < 1e-12);
    let v = serde_json::to_value(s).unwrap();
    for key in [
        "frames",
        "complete",
        "incomplete",
        "late",
        "freeze_count",
        "total_freezes_duration_ms",
        "pause_count",
        "total_pauses_duration_ms",
        "total_inter_frame_delay",
        "total_squared_inter_frame_delay",
    ] {
        assert!(v.get(key).is_some(), "{key}");
    }
}

#[test]
fn streams_without_an_assembly_take_pauses_from_their_units() {
    let mut p = packets(&[0, 40, 80, 120, 160, 200]);
    p.push(Sample::new(0, 6, ms(240), ms(6300)));
    let s = PlayoutStream::plain(&p, Nanos::ZERO);
    let v = VideoStats::measure(&s, &shown(&[100, 140, 180, 220, 260, 300, 6400]));
    assert_eq!((v.pause_count, v.total_pauses_duration_ms), (1, 6100.0));
}
