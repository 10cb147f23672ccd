//! The adaptive buffer against Asterisk's own unit tests (`tests/test_jitterbuf.c` and
//! `tests/test_abstract_jb.c`, read at `f0c1c1a7`), re-derived: the same calls, the same
//! expected answers and counters; then the drivers and the preset.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

use super::*;
use crate::playout::{Media, PlayoutEvent, PlayoutStream, summarize};

/// `test_jb_populate_config`: max 1000, resync 1000, 10 interpolations, target extra 0.
fn test_conf() -> JbConf {
    JbConf {
        max_jitterbuf: 1000,
        resync_threshold: 1000,
        max_contig_interp: 10,
        target_extra: 0,
    }
}

fn jb() -> Jitterbuf {
    Jitterbuf::new(test_conf(), Variant::Asterisk)
}

fn frame(ts: i64, ms: i64) -> Frame {
    Frame {
        ts,
        ms,
        slot: u32::try_from(ts / ms.max(1)).unwrap_or(0),
        marker: false,
    }
}

/// The voice frame `jb_get` handed out, or the answer's name.
fn got(g: Got) -> Result<Frame, &'static str> {
    match g {
        Got::Frame(f) => Ok(f),
        Got::Drop { .. } => Err("JB_DROP"),
        Got::Interp { .. } => Err("JB_INTERP"),
        Got::NoFrame => Err("JB_NOFRAME"),
    }
}

/// `jitterbuffer_nominal_voice_frames`: 40 frames put at ts + 5 ms, each got at its time, with
/// `jb_next` one frame later.
#[test]
fn nominal_voice_frames() {
    let mut jb = jb();
    for i in 0..40 {
        assert_eq!(jb.jb_put(frame(i * 20, 20), i * 20 + 5), Put::Queued, "put {i}");
    }
    for i in 0..40 {
        let f = got(jb.jb_get(i * 20 + 5, 20)).unwrap();
        assert_eq!((f.ms, f.ts), (20, i * 20 - jb.info.resync_offset));
        assert_eq!(jb.jb_next(), (i + 1) * 20 + 5, "next after {i}");
    }
    let c = jb.counters();
    assert_eq!(
        (c.frames_dropped, c.frames_in, c.frames_out, c.frames_late, c.frames_lost, c.frames_ooo),
        (0, 40, 40, 0, 0, 0)
    );
}

/// `jitterbuffer_out_of_order_voice`: every fourth pair swapped; all come out in order, 10
/// counted out of order.
#[test]
fn out_of_order_voice() {
    let mut jb = jb();
    let mut i = 0;
    while i < 40 {
        if i % 4 == 0 {
            assert_eq!(jb.jb_put(frame((i + 1) * 20, 20), (i + 1) * 20 + 5), Put::Queued);
            assert_eq!(jb.jb_put(frame(i * 20, 20), i * 20 + 5), Put::Queued);
            i += 1;
        } else {
            assert_eq!(jb.jb_put(frame(i * 20, 20), i * 20 + 5), Put::Queued);
        }
        i += 1;
    }
    for i in 0..40 {
        let f = got(jb.jb_get(i * 20 + 5, 20)).unwrap();
        assert_eq!((f.ms, f.ts), (20, i * 20 - jb.info.resync_offset));
    }
    let c = jb.counters();
    assert_eq!(
        (c.frames_dropped, c.frames_in, c.frames_out, c.frames_late, c.frames_lost, c.frames_ooo),
        (0, 40, 40, 0, 0, 10)
    );
}

/// `jitterbuffer_lost_voice`: every fifth frame never put; those slots are interpolated (the
/// first, before any frame, is `JB_NOFRAME`), 7 counted lost.
#[test]
fn lost_voice() {
    let mut jb = jb();
    let mut i = 0;
    while i < 40 {
        if i % 5 == 0 {
            i += 1;
        }
        assert_eq!(jb.jb_put(frame(i * 20, 20), i * 20 + 5), Put::Queued);
        i += 1;
    }
    for i in 0..40 {
        match got(jb.jb_get(i * 20 + 5, 20)) {
            Ok(f) => assert_eq!((f.ms, f.ts), (20, i * 20 - jb.info.resync_offset)),
            Err("JB_INTERP") if i % 5 == 0 => {}
            Err("JB_NOFRAME") if i == 0 => {}
            Err(other) => panic!("{other} at {i}"),
        }
    }
    let c = jb.counters();
    assert_eq!(
        (c.frames_ooo, c.frames_late, c.frames_lost, c.frames_in, c.frames_out, c.frames_dropped),
        (0, 0, 7, 32, 32, 0)
    );
}

/// `jitterbuffer_late_voice`: every fifth frame 15 ms later than the others, still in order:
/// nothing lost or late.
#[test]
fn late_voice() {
    let mut jb = jb();
    for i in 0..40 {
        let now = if i % 5 == 0 { i * 20 + 20 } else { i * 20 + 5 };
        assert_eq!(jb.jb_put(frame(i * 20, 20), now), Put::Queued);
    }
    for i in 0..40 {
        let f = got(jb.jb_get(i * 20 + 5, 20)).unwrap();
        assert_eq!((f.ms, f.ts), (20, i * 20 - jb.info.resync_offset));
    }
    let c = jb.counters();
    assert_eq!(
        (c.frames_ooo, c.frames_late, c.frames_lost, c.frames_in, c.frames_out, c.frames_dropped),
        (0, 0, 0, 40, 40, 0)
    );
}

/// `jitterbuffer_overflow_voice`: 100 frames put at once; the queue may not span 1000 ms, so
/// 49 are refused, 51 come out, and the one after is interpolated.
#[test]
fn overflow_voice() {
    let mut jb = jb();
    for i in 0..100 {
        jb.jb_put(frame(i * 20, 20), i * 20 + 5);
    }
    let mut i = 0;
    while let Ok(f) = got(jb.jb_get(i * 20 + 5, 20)) {
        assert_eq!((f.ms, f.ts), (20, i * 20 - jb.info.resync_offset));
        i += 1;
    }
    let c = jb.counters();
    assert_eq!(
        (c.frames_dropped, c.frames_out, c.frames_in, c.frames_late, c.frames_lost, c.frames_ooo),
        (49, 51, 51, 0, 1, 0)
    );
}

/// `jitterbuffer_resynch_voice`: after 20 frames the timestamps jump 500 ms (threshold 200):
/// three frames are refused and the fourth resynchronises; every interpolation counts lost.
#[test]
fn resynch_voice() {
    let mut jb = Jitterbuf::new(
        JbConf {
            resync_threshold: 200,
            ..test_conf()
        },
        Variant::Asterisk,
    );
    for i in 0..20 {
        jb.jb_put(frame(i * 20, 20), i * 20 + 5);
    }
    for i in 20..40 {
        jb.jb_put(frame(i * 20 + 500, 20), i * 20 + 5);
    }
    let mut interpolated = 0;
    for i in 0..=40 {
        if matches!(jb.jb_get(i * 20 + 5, 20), Got::Interp { .. }) {
            interpolated += 1;
        }
    }
    let c = jb.counters();
    assert_eq!(
        (c.frames_dropped, c.frames_out, c.frames_in, c.frames_late, c.frames_ooo),
        (3, 37, 37, 0, 0)
    );
    assert_eq!(c.frames_lost, interpolated);
    assert_eq!(jb.resyncs, 1);
}

/// `test_abstract_jb.c` with the adaptive implementation: 160 ms frames, size 1600, resync
/// 320, target extra −1 (the default, 40): put then got at `jb_next`, in order; the buffer
/// overflows after 10 frames; every third pair out of order still comes out in order.
#[test]
fn abstract_jb_adaptive() {
    let conf = JbConf {
        max_jitterbuf: 1600,
        resync_threshold: 320,
        max_contig_interp: 10,
        target_extra: TARGET_EXTRA_MS,
    };
    // put + get at next.
    let mut jb = Jitterbuf::new(conf, Variant::Asterisk);
    for i in 0..10 {
        assert_eq!(jb.jb_put(frame(1000 + i * 160, 160), 1100 + i * 160), Put::Queued);
    }
    for i in 0..10 {
        let next = jb.jb_next();
        let f = got(jb.jb_get(next, 160)).unwrap();
        assert_eq!(f.ts, 1000 + i * 160, "frame {i} at {next}");
    }
    // put_overflow(10).
    let mut jb = Jitterbuf::new(conf, Variant::Asterisk);
    for i in 0..=10 {
        assert_eq!(jb.jb_put(frame(1000 + i * 160, 160), 1100 + i * 160), Put::Queued);
    }
    for i in 11..15 {
        assert_eq!(jb.jb_put(frame(1000 + i * 160, 160), 1100 + i * 160), Put::Refused);
    }
    // put_out_of_order(2 frames).
    let mut jb = Jitterbuf::new(conf, Variant::Asterisk);
    jb.jb_put(frame(1000, 160), 1100);
    for i in 1..=10 {
        let k = if i % 3 == 1 && i != 10 {
            i + 1
        } else if i % 3 == 2 {
            i - 1
        } else {
            i
        };
        assert_eq!(jb.jb_put(frame(1000 + k * 160, 160), 1100 + i * 160), Put::Queued);
    }
    for i in 0..=10 {
        let next = jb.jb_next();
        let f = got(jb.jb_get(next, 160)).unwrap();
        assert_eq!(f.ts, 1000 + i * 160);
    }
}

/// The outlier window: with 100 delays 0..99 ms, Asterisk reads the 3rd smallest and the 3rd
/// largest (index 100·3/100 = 3): min 3, jitter 96 − 3 = 93; past 500 delays the oldest leave.
#[test]
fn history_drops_three_percent_either_end() {
    let mut h = History::new();
    for d in 0..100 {
        h.push(d);
    }
    assert_eq!(h.get(), (3, 93));
    for d in 0..500 {
        h.push(1000 + d);
    }
    // Only 1000..1499 remain: index 15 either end.
    assert_eq!(h.get(), (1015, 1484 - 1015));
    h.clear();
    // Right after a resync Asterisk reads what its buffers last held at either end.
    assert_eq!(h.get(), (1000, 499));
}

/// VoIPmonitor's revision resynchronises on its first frame (its timestamps are then its
/// arrival times), where Asterisk's refuses the first three frames whose delay is far from 0.
#[test]
fn voipmonitor_resyncs_on_the_first_frame_asterisk_refuses_three() {
    let conf = JbConf {
        max_jitterbuf: 500,
        resync_threshold: 500,
        max_contig_interp: 10,
        target_extra: TARGET_EXTRA_MS,
    };
    let mut vm = Jitterbuf::new(conf, Variant::Voipmonitor);
    let mut ast = Jitterbuf::new(conf, Variant::Asterisk);
    let base = 1_000_000; // a raw RTP timestamp / 8, far from the receiver's clock
    let puts: Vec<(Put, Put)> = (0..5)
        .map(|i| {
            let f = frame(base + i * 20, 20);
            (vm.jb_put(f, i * 20), ast.jb_put(f, i * 20))
        })
        .collect();
    assert!(puts.iter().all(|p| p.0 == Put::Queued));
    assert_eq!(
        puts.iter().map(|p| p.1).collect::<Vec<_>>(),
        [Put::Refused, Put::Refused, Put::Refused, Put::Queued, Put::Queued]
    );
    assert_eq!((vm.info.resync_offset, vm.resyncs), (base, 1));
    assert_eq!((ast.info.resync_offset, ast.resyncs), (base, 1));
}

fn pcma(seq: i64, send_ms: i64, arrival_us: i64) -> Sample {
    Sample {
        payload_type: Some(8),
        rtp_clock: 8000,
        rtp_timestamp: 8 * send_ms,
        size: 160,
        ..Sample::new(
            0,
            seq,
            Nanos::from_millis(send_ms),
            Nanos::from_micros(arrival_us),
        )
    }
}

fn audio() -> Media {
    Media::pcma()
}

/// The preset over a steady stream: every frame plays, once, in order, a constant target
/// after the jitter is learnt; a lost frame is concealed; a spike beyond the buffer makes it
/// grow (interpolations inserted) and it plays later frames on time again.
#[test]
fn preset_plays_a_stream_with_one_event_per_slot() {
    let mut samples: Vec<Sample> = (0..500)
        .filter(|&i| i != 100)
        .map(|i| {
            let jitter = if i == 300 { 120_000 } else { (i * 7919 % 11) * 1000 };
            pcma(i, i * 20, i * 20_000 + 10_000 + jitter)
        })
        .collect();
    samples.sort_by_key(|s| s.arrival);
    let stream = PlayoutStream::new(0, &samples, audio(), Nanos::ZERO);
    for text in [
        "asterisk",
        "asterisk:variant=voipmonitor,jbmaxsize=500ms,jbresyncthreshold=500ms,marker_resync=true",
    ] {
        let policy: crate::Policy = text.parse().unwrap();
        let run = policy.playout(&stream).unwrap();
        assert_eq!(run.events.len(), 500, "{text}");
        let seqs: Vec<i64> = run
            .events
            .iter()
            .map(|e| match e {
                PlayoutEvent::Played { seq, .. } | PlayoutEvent::Concealed { seq, .. } => *seq,
            })
            .collect();
        assert_eq!(seqs, (0..500).collect::<Vec<_>>(), "{text}");
        let at = |e: &PlayoutEvent| match e {
            PlayoutEvent::Played { at, .. } | PlayoutEvent::Concealed { at, .. } => *at,
        };
        assert!(run.events.windows(2).all(|w| at(&w[0]) <= at(&w[1])), "{text}");
        let s = summarize(&run.events);
        assert!(
            matches!(run.events[100], PlayoutEvent::Concealed { arrived_late: false, .. }),
            "{text}: {:?}",
            run.events[100]
        );
        assert!(s.played >= 490, "{text}: {s:?}");
        let Some(PlayoutDetail::Asterisk(d)) = &run.detail else {
            panic!("{text}: no detail");
        };
        assert_eq!(
            d.info.frames_in as u64,
            d.driver.put - d.driver.put_refused,
            "{text}"
        );
        assert!(run.inserted > Nanos::ZERO, "{text}: the buffer grew");
        // Past the first second the target sits at min + jitter + 40 ms above the send time.
        let t = run.target(400).unwrap();
        assert!(
            t > Nanos::from_millis(40) && t < Nanos::from_millis(200),
            "{text}: target {t}"
        );
        assert_eq!(d.voipmonitor.is_some(), text.contains("voipmonitor"), "{text}");
    }
}
