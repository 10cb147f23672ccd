//! Wireshark's drop rule on hand-computed streams (20 ms PCMA, 160-byte payloads), with the
//! first-packet and the minimum-transit references and the three timing modes.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

use super::*;
use crate::playout::{Media, PlayoutEvent, PlayoutStream};

fn pcma(seq: i64, send_ms: i64, arrival_ms: i64) -> Sample {
    Sample {
        payload_type: Some(8),
        rtp_clock: 8000,
        rtp_timestamp: 8 * send_ms,
        size: 160,
        ..Sample::new(
            0,
            seq,
            Nanos::from_millis(send_ms),
            Nanos::from_millis(arrival_ms),
        )
    }
}

fn audio() -> Media {
    Media::pcma()
}

fn run(samples: &mut [Sample], policy: &str) -> (Vec<PlayoutEvent>, WiresharkStats) {
    samples.sort_by_key(|s| s.arrival);
    let stream = PlayoutStream::new(0, samples, audio(), Nanos::ZERO);
    let policy: crate::Policy = policy.parse().unwrap();
    let run = policy.playout(&stream).unwrap();
    let Some(PlayoutDetail::Wireshark(stats)) = run.detail else {
        panic!("no detail");
    };
    (run.events, stats)
}

fn played(events: &[PlayoutEvent]) -> Vec<i64> {
    events
        .iter()
        .filter_map(|e| match e {
            PlayoutEvent::Played { seq, .. } => Some(*seq),
            PlayoutEvent::Concealed { .. } => None,
        })
        .collect()
}

fn at(e: &PlayoutEvent) -> Nanos {
    match e {
        PlayoutEvent::Played { at, .. } | PlayoutEvent::Concealed { at, .. } => *at,
    }
}

/// A queue draining at the start of a call: packet 0 takes 60 ms, 1 and 2 come in a burst
/// behind it (41 and 22 ms), the rest take 3 ms.
///
/// First-packet reference (transit 60): `|arrive − rtp|` is 0, 19, 38, then 57 ms: packets 3
/// and 4 are dropped as *early*; packet 5, dropped too, follows the last kept packet (2) by
/// more than two periods, so the player resynchronises on it and the rest play. Three packets
/// that were on time are lost. Minimum transit (3 ms): the excess is 57, 38, 19, 0, …: only
/// packet 0, really late, is dropped.
fn draining_queue() -> Vec<Sample> {
    (0..20)
        .map(|k| {
            let transit = match k {
                0 => 60,
                1 => 41,
                2 => 22,
                _ => 3,
            };
            pcma(k, 20 * k, 20 * k + transit)
        })
        .collect()
}

#[test]
fn first_packet_reference_drops_on_time_packets_as_early() {
    let (events, s) = run(&mut draining_queue(), "wireshark");
    let mut want: Vec<i64> = (0..20).collect();
    want.retain(|k| !(3..=5).contains(k));
    assert_eq!(played(&events), want);
    assert_eq!(
        (s.jitter_drops, s.jitter_drops_early, s.jitter_drops_late, s.resyncs),
        (3, 3, 0, 1)
    );
    assert_eq!(s.first_excess_ms, 57.0);
    // Each packet at the first arrival (60 ms) + its place in the audio + the 50 ms buffer.
    for (k, e) in events.iter().enumerate().take(5) {
        assert_eq!(at(e), Nanos::from_millis(110 + 20 * k as i64), "{k}");
    }
}

#[test]
fn min_transit_reference_drops_only_the_late_packet() {
    let (events, s) = run(&mut draining_queue(), "wireshark:reference=min_transit");
    assert_eq!(played(&events), (1..20).collect::<Vec<_>>());
    assert_eq!(
        (s.jitter_drops, s.jitter_drops_early, s.jitter_drops_late, s.resyncs),
        (1, 0, 1, 0)
    );
    assert!(matches!(
        events[0],
        PlayoutEvent::Concealed {
            arrived_late: true,
            ..
        }
    ));
    // The buffer's own 50 ms: with 60 ms packet 0 (57 ms late) plays too.
    let (events, _) = run(
        &mut draining_queue(),
        "wireshark:reference=min_transit,jitter_buffer=60ms",
    );
    assert_eq!(played(&events).len(), 20);
}

/// Packet 3 takes 60 ms instead of 5 and arrives after packets 4 and 5: it is a jitter drop
/// (55 ms late), and out of sequence, and never written (a higher sequence number was).
/// Packet 4 is out of sequence too and follows 20 ms of inserted silence ("wrong
/// timestamp"); packet 6 is out of sequence after packet 3.
#[test]
fn a_late_reordered_packet() {
    let mut samples: Vec<Sample> = (0..10)
        .map(|k| pcma(k, 20 * k, 20 * k + if k == 3 { 60 } else { 5 }))
        .collect();
    let (events, s) = run(&mut samples, "wireshark");
    assert_eq!(played(&events), [0, 1, 2, 4, 5, 6, 7, 8, 9]);
    assert_eq!(
        events[3],
        PlayoutEvent::Concealed {
            seq: 3,
            at: Nanos::from_millis(5 + 60 + 50),
            arrived_late: true
        }
    );
    assert_eq!(
        (
            s.jitter_drops_late,
            s.out_of_sequence,
            s.not_written,
            s.wrong_timestamp,
            s.silence_inserted
        ),
        (1, 3, 1, 1, 1)
    );
    assert_eq!(at(&events[4]), Nanos::from_millis(5 + 80 + 50));
    // Uninterrupted: nothing dropped, no silence: packet 4 follows packet 2 at once.
    let (events, s) = run(&mut samples, "wireshark:timing=uninterrupted");
    assert_eq!((s.jitter_drops, s.silence_inserted), (0, 0));
    assert_eq!(played(&events), [0, 1, 2, 4, 5, 6, 7, 8, 9]);
    assert_eq!(at(&events[4]), Nanos::from_millis(5 + 60));
    assert_eq!(at(&events[3]), Nanos::from_millis(5 + 60));
}

/// After a 1 s pause in talk (the timestamps and sequence go on), the network delay is 80 ms
/// higher: the first packet after the pause is dropped, and since it follows a gap of more
/// than two packet periods the player resynchronises on it, inserting the pause as silence
/// (1100 ms of arrival less the 20 ms last written); the rest plays. The Qt player writes
/// the dropped packet's audio all the same, yet counts nothing written since the resync, so
/// the next packet brings 20 ms more silence: 1100 ms in all. With the minimum transit
/// there is no resync and everything after the pause is dropped as 80 ms late.
#[test]
fn a_dropped_packet_after_silence_resynchronises() {
    let mut samples: Vec<Sample> = (0..15)
        .map(|k| {
            if k < 5 {
                pcma(k, 20 * k, 20 * k + 5)
            } else {
                pcma(k, 1000 + 20 * k, 1000 + 20 * k + 85)
            }
        })
        .collect();
    let (events, s) = run(&mut samples, "wireshark");
    assert_eq!(played(&events), [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    assert_eq!((s.jitter_drops_late, s.resyncs), (1, 1));
    assert!((s.silence_ms - 1100.0).abs() <= 0.125, "{}", s.silence_ms);
    let (events, s) = run(&mut samples, "wireshark:reference=min_transit");
    assert_eq!(played(&events), [0, 1, 2, 3, 4]);
    assert_eq!((s.jitter_drops_late, s.resyncs), (10, 0));
}

/// RTP-timestamp timing ignores arrivals: nothing is dropped and every packet sits at its
/// timestamp from the first packet's arrival, with no buffer added.
#[test]
fn rtp_timestamp_timing_drops_nothing() {
    let (events, s) = run(&mut draining_queue(), "wireshark:timing=rtp_timestamp");
    assert_eq!(s.jitter_drops, 0);
    assert_eq!(played(&events).len(), 20);
    for (k, e) in events.iter().enumerate() {
        assert_eq!(at(e), Nanos::from_millis(60 + 20 * k as i64), "{k}");
    }
}

#[test]
fn keys_parse_print_and_refuse() {
    let p: crate::Policy = "wireshark".parse().unwrap();
    assert_eq!(
        p.to_string(),
        "wireshark:jitter_buffer=50ms,timing=jitter_buffer,reference=first"
    );
    let msg = |t: &str| t.parse::<crate::Policy>().unwrap_err().to_string();
    assert!(msg("wireshark:timing=live").contains("uninterrupted"));
    assert!(msg("wireshark:reference=last").contains("min_transit"));
    assert!(msg("wireshark:jitter_buffer=12.5ms").contains("whole number"));
}

/// The resync needs more than two packet periods since the last kept packet: packet 2 comes
/// 50 ms (2.5 periods) after packet 1 and 60 ms late, so it is dropped and becomes the new
/// reference; packet 3, just as late, then plays. Had the gap been two periods or less, packet
/// 3 would be dropped too.
#[test]
fn resync_needs_a_gap_of_more_than_two_periods() {
    let mut samples = vec![
        pcma(0, 0, 5),
        pcma(1, 20, 25),
        pcma(2, 70, 135),
        pcma(3, 90, 155),
        pcma(4, 110, 175),
    ];
    let (events, s) = run(&mut samples, "wireshark");
    assert_eq!(played(&events), [0, 1, 3, 4]);
    assert_eq!((s.jitter_drops, s.resyncs), (1, 1));
    // Packet 2 40 ms after packet 1 (two periods): dropped without a resync; packet 3, as
    // late, is dropped too and resyncs (60 ms since packet 1); packet 4 plays.
    let mut samples = vec![
        pcma(0, 0, 5),
        pcma(1, 20, 25),
        pcma(2, 60, 125),
        pcma(3, 80, 145),
        pcma(4, 100, 165),
    ];
    let (events, s) = run(&mut samples, "wireshark");
    assert_eq!(played(&events), [0, 1, 4]);
    assert_eq!((s.jitter_drops, s.resyncs), (2, 1));
}
