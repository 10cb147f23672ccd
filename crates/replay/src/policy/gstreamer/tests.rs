//! The `gstreamer` preset: its policy string, its slot events and its counters.

use jitterlab_capture::Sample;
use jitterlab_capture::decode::MediaKind;

use super::*;
use crate::Media;
use crate::Policy;
use crate::playout::summarize;

const MS: i64 = 1_000_000;

#[test]
fn the_policy_string_is_the_elements_properties() {
    let p: Policy = "gstreamer".parse().unwrap();
    assert_eq!(
        p.to_string(),
        "gstreamer:latency=200ms,drop_on_latency=false,do_lost=false,mode=slave,ts_offset=0ms,\
         max_dropout_time=60000ms,max_misorder_time=2000ms,faststart_min_packets=0"
    );
    assert!(p.playout_only() && p.plays_frames());
    let text = "gstreamer:latency=40ms,drop_on_latency=true,mode=none,ts_offset=-15ms,\
                faststart_min_packets=4";
    let q: Policy = text.parse().unwrap();
    let c = q.config::<GStreamerConfig>().unwrap();
    assert_eq!(
        (c.element.latency_ms, c.element.ts_offset, c.element.mode),
        (40, -15 * MS, Mode::None)
    );
    assert_eq!(q.to_string().parse::<Policy>().unwrap(), q);
    assert_eq!(q.max_delay(), Nanos::from_millis(40));
    let msg = |s: &str| s.parse::<Policy>().unwrap_err().to_string();
    assert!(msg("gstreamer:latency=1.5ms").contains("whole number of milliseconds"));
    assert!(msg("gstreamer:latency=-5ms").contains("key latency"));
    assert!(msg("gstreamer:mode=buffer").contains("not modelled"));
    assert!(msg("gstreamer:mode=fast").contains("allowed: none, slave, synced"));
    assert!(msg("gstreamer:delay=5ms").contains("unknown key"));
    assert!(msg("gstreamer:ts_offset=61m").contains("-1h to 1h"));
}

#[test]
fn the_default_playout_grid_sweeps_latency_and_drop_on_latency() {
    let g = crate::grid::default_playout_grid_for(Some(50));
    let ours: Vec<Policy> = g
        .expand(crate::grid::DEFAULT_MAX_CONFIGS)
        .unwrap()
        .into_iter()
        .filter(|p| p.name() == "gstreamer")
        .collect();
    assert_eq!(ours.len(), 16);
    assert!(ours.iter().any(|p| p.to_string().contains("latency=20ms,drop_on_latency=true")));
}

fn audio() -> Media {
    Media::pcma()
}

fn rtp(seq: i64, ts: i64, arrival_ms: i64, pt: u8, clock: u32) -> Sample {
    Sample {
        payload_type: Some(pt),
        rtp_timestamp: ts,
        rtp_clock: clock,
        size: 160,
        ..Sample::new(
            0,
            seq,
            Nanos(ts * 125_000),
            Nanos::from_millis(arrival_ms),
        )
    }
}

/// Audio every 20 ms with two DTMF packets in the sequence (set aside from the slots but fed
/// to the element, as rtpbin does), one packet lost and one 70 ms late, at a 40 ms latency.
#[test]
fn slots_play_at_pts_plus_latency_and_dtmf_feeds_the_element_only() {
    let mut samples = Vec::new();
    for seq in 0..12i64 {
        let ts = seq * 160;
        match seq {
            3 | 4 => samples.push(rtp(seq, 2 * 160, seq * 20, 101, 0)),
            7 => {}
            9 => {}
            _ => samples.push(rtp(seq, ts, seq * 20, 8, 8000)),
        }
    }
    // 9 arrives 70 ms late, after 10 and 11.
    samples.push(rtp(9, 9 * 160, 9 * 20 + 70, 8, 8000));
    let stream = PlayoutStream::new(0, &samples, audio(), Nanos::ZERO);
    assert_eq!(stream.prepared.dtmf_events, 2);
    assert_eq!(stream.packets().len(), samples.len());
    let policy: Policy = "gstreamer:latency=40ms".parse().unwrap();
    let run = policy.playout(&stream).unwrap();
    let Some(PlayoutDetail::GStreamer(stats)) = &run.detail else {
        panic!("no gstreamer detail: {:?}", run.detail);
    };
    // The element pushed the DTMF packets too (10 in all); 7 was lost, 9 declared lost then
    // late.
    assert_eq!(
        (stats.num_pushed, stats.num_lost, stats.num_late),
        (10, 2, 1)
    );
    // Slots: 0 1 2 (3 4 set aside) 5 6 7 8 9 10 11 renumbered 0..=9.
    assert_eq!(run.events.len(), 10);
    // The DTMF pause (two packets on one timestamp, then 60 ms of RTP time) raised the packet
    // spacing estimate to 42.5 ms, so 7's LOST timer is at 120 + 42.5 + 40 ms: 8 and 10 wait
    // behind it and leave after their PTS + latency (160 + 40, 200 + 40 ms), late for the
    // sink, as the element does.
    assert_eq!(stats.late_for_sink, 2);
    let s = summarize(&run.events);
    assert_eq!((s.played, s.lost, s.late), (6, 1, 3));
    // Slot 2 (seq 2) plays at its PTS (40 ms) + 40 ms; the lost slot 5 (seq 7) at where its
    // neighbours put it, 140 + 40 ms.
    assert_eq!(
        run.events[2],
        PlayoutEvent::Played {
            seq: 2,
            at: Nanos::from_millis(80)
        }
    );
    assert_eq!(
        run.events[5],
        PlayoutEvent::Concealed {
            seq: 5,
            at: Nanos::from_millis(180),
            arrived_late: false
        }
    );
    assert!(matches!(
        run.events[7],
        PlayoutEvent::Concealed {
            seq: 7,
            arrived_late: true,
            ..
        }
    ));
    assert_eq!(run.target(0), Some(Nanos::from_millis(40)));
    // The counters go under "gstreamer" in JSON; the per-buffer list does not.
    let detail = run.detail.as_ref().unwrap();
    assert_eq!(detail.key(), "gstreamer");
    let v = serde_json::to_value(detail).unwrap();
    assert_eq!(v["num_pushed"], 10);
    assert!(v.get("outputs").is_none());
    assert!(detail.describe().contains("pushed 10, lost 2, late 1"));
}

/// A packet leaving after its PTS + latency is late for a synchronised sink. In a stream
/// that is not equidistant (0 and 1 share a timestamp) a missing packet waits for the next
/// packet's PTS + latency (3's: 40 + 5 ms), so 2 arriving at 30 ms still leaves, after its own
/// PTS + latency (20 + 5 ms): its slot is concealed as late.
#[test]
fn a_packet_leaving_after_pts_plus_latency_is_concealed_as_late() {
    let samples = vec![
        rtp(0, 0, 0, 8, 8000),
        rtp(1, 0, 0, 8, 8000),
        rtp(3, 320, 20, 8, 8000),
        rtp(2, 160, 30, 8, 8000),
        rtp(4, 480, 60, 8, 8000),
    ];
    let stream = PlayoutStream::new(0, &samples, audio(), Nanos::ZERO);
    let policy: Policy = "gstreamer:latency=5ms".parse().unwrap();
    let run = policy.playout(&stream).unwrap();
    let Some(PlayoutDetail::GStreamer(stats)) = &run.detail else {
        panic!("no gstreamer detail");
    };
    assert_eq!(
        (stats.num_pushed, stats.num_lost, stats.late_for_sink),
        (5, 0, 1)
    );
    let two = stats.outputs.iter().find(|o| o.packet == 3).unwrap();
    assert_eq!(
        (two.pts, two.leave),
        (Nanos::from_millis(20), Nanos::from_millis(30))
    );
    assert!(matches!(
        run.events[2],
        PlayoutEvent::Concealed {
            seq: 2,
            arrived_late: true,
            ..
        }
    ));
    assert!(matches!(run.events[3], PlayoutEvent::Played { seq: 3, .. }));
}

/// Video: a frame plays when every packet of it left in time.
#[test]
fn a_video_frame_plays_only_if_all_its_packets_left_in_time() {
    let video = Media {
        kind: Some(MediaKind::Video),
        clock_rate: Some(90_000),
        encoding: Some("H264".into()),
        payload_type: Some(96),
    };
    // Frames of two packets every 40 ms (3600 at 90 kHz); frame 2's second packet is lost.
    let mut samples = Vec::new();
    for frame in 0..5i64 {
        for k in 0..2 {
            let seq = frame * 2 + k;
            if seq == 5 {
                continue;
            }
            let mut s = Sample {
                payload_type: Some(96),
                rtp_timestamp: frame * 3600,
                rtp_clock: 90_000,
                marker: k == 1,
                ..Sample::new(
                    0,
                    seq,
                    Nanos(frame * 40 * MS),
                    Nanos(frame * 40 * MS + k * MS),
                )
            };
            s.size = 1000;
            samples.push(s);
        }
    }
    let stream = PlayoutStream::new(0, &samples, video, Nanos::ZERO);
    let policy: Policy = "gstreamer:latency=60ms".parse().unwrap();
    let run = policy.playout(&stream).unwrap();
    let played: Vec<bool> = run
        .events
        .iter()
        .map(|e| matches!(e, PlayoutEvent::Played { .. }))
        .collect();
    // Frame 2 lacks its marker packet; frame 3 cannot be told whole either, since the lost
    // packet may have been its first (the assembly's rule, docs/media/video.md). Frame 4 plays.
    assert_eq!(played, [true, true, false, false, true]);
}
