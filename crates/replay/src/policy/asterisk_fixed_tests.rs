//! The fixed buffer against Asterisk's `tests/test_abstract_jb.c` (read at `f0c1c1a7`) with
//! the fixed implementation, re-derived; VoIPmonitor's rule changes; and the two drivers on a
//! hand-computed stream.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

use super::*;
use crate::playout::{Media, PlayoutEvent, PlayoutStream};

/// `test_abstract_jb.c`: 160 ms frames, `DEFAULT_CONFIG_SIZE` = 1600, resync 320.
fn abstract_jb() -> FixedJb {
    FixedJb::new(1600, 320, Variant::Asterisk)
}

fn frame(ts: i64, ms: i64, slot: u32) -> Frame {
    Frame {
        ts,
        ms,
        slot,
        marker: false,
    }
}

/// `put_first` then `remove` gives the frame back.
#[test]
fn put_first_then_remove() {
    let mut jb = abstract_jb();
    assert_eq!(jb.put_first(frame(1000, 160, 0), 1100), Put::Queued);
    assert_eq!(jb.remove().map(|f| f.ts), Some(1000));
    assert!(Core::is_empty(&jb));
}

/// `test_put`: ten frames put 100 ms after their timestamp, each got at `next`, in order.
#[test]
fn put_then_get_at_next() {
    let mut jb = abstract_jb();
    assert_eq!(jb.put_first(frame(1000, 160, 0), 1100), Put::Queued);
    for i in 1..10 {
        assert_eq!(
            jb.put_frame(frame(1000 + i * 160, 160, i as u32), 1100 + i * 160),
            Put::Queued
        );
    }
    for i in 0..10 {
        let next = jb.next_delivery();
        match jb.get_frame(next, 160) {
            Got::Frame(f) => assert_eq!(f.ts, 1000 + i * 160),
            other => panic!("frame {i} at {next}: {other:?}"),
        }
    }
}

/// `test_put_overflow(fixed, 12)`: frames up to 12 ahead fit (`delivery ≤ next + size +
/// threshold`), the next four are refused.
#[test]
fn put_overflow_at_twelve() {
    let mut jb = abstract_jb();
    jb.put_first(frame(1000, 160, 0), 1100);
    for i in 1..=12 {
        assert_eq!(
            jb.put_frame(frame(1000 + i * 160, 160, i as u32), 1100 + i * 160),
            Put::Queued,
            "frame {i}"
        );
    }
    for i in 13..17 {
        assert_eq!(
            jb.put_frame(frame(1000 + i * 160, 160, i as u32), 1100 + i * 160),
            Put::Refused,
            "frame {i}"
        );
    }
    assert_eq!(jb.counters().refused_other, 4);
}

/// `test_put_out_of_order(fixed, 320)`: every third pair swapped, all queued, all got in
/// order.
#[test]
fn put_out_of_order() {
    let mut jb = abstract_jb();
    jb.put_first(frame(1000, 160, 0), 1100);
    for i in 1..=10i64 {
        let k = if i % 3 == 1 && i != 10 {
            i + 1
        } else if i % 3 == 2 {
            i - 1
        } else {
            i
        };
        assert_eq!(
            jb.put_frame(frame(1000 + k * 160, 160, k as u32), 1100 + i * 160),
            Put::Queued,
            "put {i}"
        );
    }
    for i in 0..=10 {
        let next = jb.next_delivery();
        match jb.get_frame(next, 160) {
            Got::Frame(f) => assert_eq!(f.ts, 1000 + i * 160),
            other => panic!("{i}: {other:?}"),
        }
    }
}

/// `fixed_jb_get`'s four answers, by hand: too early, interpolate when empty, drop a head
/// past its end, interpolate a head not yet due.
#[test]
fn get_answers() {
    let mut jb = FixedJb::new(50, 1000, Variant::Asterisk);
    jb.put_first(frame(0, 20, 0), 0);
    // Due at 50.
    assert_eq!(jb.get_frame(49, 20), Got::NoFrame);
    assert!(matches!(jb.get_frame(50, 20), Got::Frame(f) if f.ts == 0));
    // Empty at 70: interpolate, next 90.
    assert_eq!(
        jb.get_frame(70, 20),
        Got::Interp {
            expected: 20,
            grow: false
        }
    );
    assert_eq!(jb.next_delivery(), 90);
    // A frame due at 130 (ts 80) is not due at 90: interpolate.
    assert_eq!(jb.put_frame(frame(80, 20, 4), 95), Put::Queued);
    assert!(matches!(jb.get_frame(90, 20), Got::Interp { expected: 40, .. }));
    // At 151 it is past its end (150): dropped.
    assert!(matches!(jb.get_frame(151, 20), Got::Drop { frame, .. } if frame.ts == 80));
}

/// A late frame: Asterisk drops it unless its timestamp jumped at least the threshold, in
/// which case `rxcore` moves so that it follows the last queued frame.
#[test]
fn late_frames_drop_or_resync() {
    let mut jb = FixedJb::new(60, 200, Variant::Asterisk);
    jb.put_first(frame(0, 20, 0), 0);
    jb.put_frame(frame(20, 20, 1), 20);
    jb.put_frame(frame(40, 20, 2), 40);
    assert!(matches!(jb.get_frame(60, 20), Got::Frame(_)));
    assert!(matches!(jb.get_frame(80, 20), Got::Frame(_)));
    // ts 0 again, queued frame ts 40: offset −60, within ±200: dropped.
    assert_eq!(jb.put_frame(frame(0, 20, 9), 85), Put::Refused);
    // ts 2000 (a jump of 1940 ≥ 200): resync behind ts 40, due at 100 + 20.
    assert_eq!(jb.put_frame(frame(2000, 20, 3), 90), Put::Queued);
    assert_eq!(jb.counters().resyncs, 1);
    assert!(matches!(jb.get_frame(100, 20), Got::Frame(f) if f.slot == 2));
    assert!(matches!(jb.get_frame(120, 20), Got::Frame(f) if f.slot == 3));
}

/// VoIPmonitor's changes: a frame overlapping the last by under 10 ms is queued (Asterisk
/// refuses it); a late frame within the threshold that is not behind the last restarts the
/// buffer from it, delivering what was queued; a marked frame far from the last forces a
/// resync.
#[test]
fn voipmonitor_rules() {
    let mut ast = FixedJb::new(50, 100, Variant::Asterisk);
    let mut vm = FixedJb::new(50, 100, Variant::Voipmonitor);
    for jb in [&mut ast, &mut vm] {
        jb.put_first(frame(0, 20, 0), 0);
    }
    // ts 15 overlaps ts 0's 20 ms by 5 ms.
    assert_eq!(ast.put_frame(frame(15, 20, 1), 15), Put::Refused);
    assert_eq!(vm.put_frame(frame(15, 20, 1), 15), Put::Queued);
    // A forced resync (VoIPmonitor's marker rule) with a frame right after the last queued
    // one restarts the buffer from it, delivering what was queued.
    let mut vm = FixedJb::new(50, 100, Variant::Voipmonitor);
    vm.put_first(frame(0, 20, 0), 0);
    vm.put_frame(frame(20, 20, 1), 20);
    vm.set_force_resynch();
    assert_eq!(vm.put_frame(frame(40, 20, 2), 45), Put::Queued);
    assert_eq!(vm.counters().restarts, 1);
    assert_eq!(
        std::mem::take(Core::released(&mut vm)),
        vec![
            Released {
                slot: 0,
                played: true
            },
            Released {
                slot: 1,
                played: true
            }
        ]
    );
    // The new reference: rxcore = 45 − 40, due at 5 + 50 + 40.
    assert_eq!(vm.next_delivery(), 95);
    // A late frame behind the last queued one is dropped, and counted lost.
    assert_eq!(vm.put_frame(frame(20, 20, 1), 50), Put::Refused);
    assert_eq!(vm.take_put_losses(), 1);
    // A marked frame two frames or more from the last queued one's end forces a resync.
    let mut vm = FixedJb::new(200, 200, Variant::Voipmonitor);
    vm.put_first(frame(0, 20, 0), 0);
    let mut marked = frame(100, 20, 1);
    marked.marker = true;
    assert_eq!(vm.put_frame(marked, 20), Put::Queued);
    assert_eq!(vm.counters().restarts, 1);
}

fn pcma(seq: i64, arrival_ms: i64) -> Sample {
    Sample {
        payload_type: Some(8),
        rtp_clock: 8000,
        rtp_timestamp: 8 * 20 * seq,
        size: 160,
        ..Sample::new(
            0,
            seq,
            Nanos::from_millis(20 * seq),
            Nanos::from_millis(arrival_ms),
        )
    }
}

fn audio() -> Media {
    Media::pcma()
}

/// Hand-computed, 20 ms frames arriving at 20·k ms except frame 3 at 141 ms, through a 50 ms
/// fixed buffer (VoIPmonitor's f1). Frame k is due at 50 + 20·k.
///
/// Asterisk's framehook reads every 20 ms: at 120 frame 3 (due 110) is missing and frame 4
/// (due 130) is not due, so slot 3 is interpolated; frame 3 arriving at 141 is late.
///
/// VoIPmonitor steps its clock only before putting a packet, up to the arrival − 40 ms: frame
/// 3 arriving at 141 finds the clock at 100 (frame 2 played there, next due 110), is queued,
/// and plays at step 120, run when frame 8 arrives at 160. So VoIPmonitor plays a frame that
/// came 31 ms after the step that plays it.
#[test]
fn asterisk_conceals_what_voipmonitor_plays() {
    let mut samples: Vec<Sample> = (0..12)
        .map(|k| pcma(k, if k == 3 { 141 } else { 20 * k }))
        .collect();
    samples.sort_by_key(|s| s.arrival);
    let stream = PlayoutStream::new(0, &samples, audio(), Nanos::ZERO);
    let f1 = "asterisk-fixed:variant=voipmonitor,jbmaxsize=50ms,jbresyncthreshold=100ms,marker_resync=true";
    let ast: crate::Policy = "asterisk-fixed:jbmaxsize=50ms".parse().unwrap();
    let vm: crate::Policy = f1.parse().unwrap();
    let a = ast.playout(&stream).unwrap();
    let v = vm.playout(&stream).unwrap();
    assert_eq!(
        a.events[3],
        PlayoutEvent::Concealed {
            seq: 3,
            at: Nanos::from_millis(120),
            arrived_late: true
        }
    );
    assert_eq!(
        v.events[3],
        PlayoutEvent::Played {
            seq: 3,
            at: Nanos::from_millis(120)
        }
    );
    // Everything else plays, on the 20 ms grid from 60 ms (the first step at or after 50).
    for (k, e) in v.events.iter().enumerate() {
        assert_eq!(
            *e,
            PlayoutEvent::Played {
                seq: k as i64,
                at: Nanos::from_millis(60 + 20 * k as i64)
            },
            "voipmonitor {k}"
        );
    }
    for (k, e) in a.events.iter().enumerate().filter(|&(k, _)| k != 3) {
        assert_eq!(
            *e,
            PlayoutEvent::Played {
                seq: k as i64,
                at: Nanos::from_millis(60 + 20 * k as i64)
            },
            "asterisk {k}"
        );
    }
    let Some(PlayoutDetail::AsteriskFixed(d)) = &v.detail else {
        panic!("no detail")
    };
    assert_eq!(d.voipmonitor.as_ref().map(|m| m.lost), Some(0));
    let Some(PlayoutDetail::AsteriskFixed(d)) = &a.detail else {
        panic!("no detail")
    };
    assert_eq!((d.buffer.refused_late, d.driver.get_interpolated), (1, 1));
    // The target: 50 ms above the first frame's transit (0 here).
    assert_eq!(a.target(5), Some(Nanos::from_millis(50)));
}
