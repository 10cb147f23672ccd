//! Frame assembly on hand-built packet lists: every count worked out by hand.

use jitterlab_capture::decode::MediaKind;

use super::*;
use crate::playout::{Media, PlayoutStream};

/// A 90 kHz video packet of `size` bytes, payload type 96.
fn pkt(seq: i64, ts: i64, marker: bool, arrival_ms: i64) -> Sample {
    Sample {
        marker,
        payload_type: Some(96),
        rtp_timestamp: ts,
        rtp_clock: 90_000,
        size: 100,
        ..Sample::new(
            0,
            seq,
            Nanos(ts * 100_000 / 9),
            Nanos::from_millis(arrival_ms),
        )
    }
}

fn video() -> Media {
    Media {
        kind: Some(MediaKind::Video),
        clock_rate: Some(90_000),
        encoding: Some("H264".into()),
        payload_type: Some(96),
    }
}

/// Single-packet frames 3000 ticks (33.3 ms) apart, arriving 10 ms after their send time.
fn single(seqs: impl IntoIterator<Item = i64>) -> Vec<Sample> {
    seqs.into_iter()
        .map(|i| pkt(i, 3000 * i, true, i * 100 / 3 + 10))
        .collect()
}

#[test]
fn frames_complete_with_their_last_packet_and_sum_their_sizes() {
    // Frame 0: seqs 10–12 (marker on 12); frame 1: seq 13; frame 2: seqs 14–15. Seq 13
    // overtakes seq 12 on the way.
    let packets = vec![
        pkt(10, 0, false, 5),
        pkt(11, 0, false, 6),
        pkt(13, 3000, true, 40),
        pkt(12, 0, true, 45),
        pkt(14, 6000, false, 70),
        pkt(15, 6000, true, 72),
    ];
    let a = assemble(&packets);
    assert_eq!((a.total, a.complete, a.incomplete), (3, 3, 0));
    let got: Vec<(i64, i64, u32)> = a
        .frames
        .iter()
        .map(|f| (f.seq, f.arrival.as_nanos() / 1_000_000, f.size))
        .collect();
    // In completion order: frame 1 (at 40 ms) before frame 0 (at 45 ms, its last packet).
    assert_eq!(got, [(1, 40, 100), (0, 45, 300), (2, 72, 200)]);
    assert!(a.frames.iter().all(|f| f.marker));
    assert_eq!(a.frames[1].send, Nanos::ZERO);
    assert_eq!(a.ended_by_timestamp, 0);
}

#[test]
fn a_missing_packet_makes_its_frame_an_empty_slot() {
    // Frame 1 (seqs 2–4) lost seq 3.
    let packets = vec![
        pkt(0, 0, false, 1),
        pkt(1, 0, true, 2),
        pkt(2, 3000, false, 35),
        pkt(4, 3000, true, 36),
        pkt(5, 6000, true, 70),
    ];
    let a = assemble(&packets);
    assert_eq!((a.total, a.complete, a.incomplete), (3, 2, 1));
    assert_eq!(a.incomplete_reasons.missing_packets, 1);
    let s = PlayoutStream::new(0, &packets, video(), Nanos::ZERO);
    let slots: Vec<(i64, bool, u32)> = s
        .slots()
        .iter()
        .map(|s| (s.seq, s.arrival.is_some(), s.size))
        .collect();
    assert_eq!(slots, [(0, true, 200), (1, false, 0), (2, true, 100)]);
    assert_eq!(s.frames.as_ref().map(|f| f.incomplete), Some(1));
}

#[test]
fn a_frame_lost_whole_gets_its_own_number() {
    // Five frames, the third (seq 2) lost: its timestamp step (6000 ticks) is two spacings.
    let packets = single([0, 1, 3, 4]);
    let a = assemble(&packets);
    assert_eq!((a.total, a.complete, a.incomplete), (5, 4, 1));
    assert_eq!(a.incomplete_reasons.lost, 1);
    let seqs: Vec<i64> = a.frames.iter().map(|f| f.seq).collect();
    assert_eq!(seqs, [0, 1, 3, 4]);
    let mut packets = single([0, 1, 2]);
    packets.push(pkt(5, 15_000, true, 510));
    packets.push(pkt(6, 18_000, true, 610));
    let a = assemble(&packets);
    // seqs 3, 4 missing; the step 6000 → 15 000 is 3 spacings: 2 lost frames, one per packet.
    assert_eq!((a.total, a.incomplete_reasons.lost), (7, 2));
    assert_eq!(a.complete, 5);
    // Two packets missing over one lost frame: the next frame's head may be missing too.
    let mut packets = single([0, 1, 2]);
    packets.push(pkt(5, 12_000, true, 410));
    let a = assemble(&packets);
    assert_eq!(a.incomplete_reasons.lost, 1);
    assert_eq!(a.incomplete_reasons.missing_packets, 1);
    assert_eq!((a.total, a.complete), (5, 3));
    let mut packets = single([0, 1, 2]);
    packets.push(pkt(6, 9_000, true, 310));
    let a = assemble(&packets);
    // seqs 3–5 missing, the step one spacing: no lost frame, frame 3's head is missing.
    assert_eq!(a.incomplete_reasons.lost, 0);
    assert_eq!(a.incomplete_reasons.missing_packets, 1);
    assert_eq!((a.total, a.complete), (4, 3));
}

#[test]
fn without_markers_the_next_timestamp_ends_a_frame() {
    let packets = vec![
        pkt(0, 0, false, 1),
        pkt(1, 0, false, 2),
        pkt(2, 3000, false, 35),
        pkt(3, 6000, false, 70),
    ];
    let a = assemble(&packets);
    assert_eq!((a.total, a.complete, a.incomplete), (3, 2, 1));
    assert_eq!(a.ended_by_timestamp, 2);
    // The last frame: nothing follows and no marker came.
    assert_eq!(a.incomplete_reasons.unterminated, 1);
}

#[test]
fn interleaved_timestamps_spoil_both_frames() {
    // T1 and T2 alternate in sequence order, then a clean frame.
    let packets = vec![
        pkt(0, 0, false, 1),
        pkt(1, 3000, false, 2),
        pkt(2, 0, true, 3),
        pkt(3, 3000, true, 4),
        pkt(4, 6000, true, 70),
    ];
    let a = assemble(&packets);
    assert_eq!((a.total, a.complete, a.incomplete), (3, 1, 2));
    assert_eq!(a.incomplete_reasons.interleaved, 2);
    assert_eq!(a.frames[0].seq, 2);
}

#[test]
fn duplicates_count_once_at_their_first_arrival() {
    let mut packets = single([0, 1, 2]);
    packets.push(pkt(1, 3000, true, 90));
    let a = assemble(&packets);
    assert_eq!((a.total, a.complete, a.duplicates), (3, 3, 1));
    assert_eq!(a.frames[1].arrival, Nanos::from_millis(43));
}

#[test]
fn a_payload_type_switch_is_counted_and_a_mixed_frame_is_incomplete() {
    let mut packets = vec![pkt(0, 0, false, 1), pkt(1, 0, true, 2)];
    packets[1].payload_type = Some(97);
    packets.push(Sample {
        payload_type: Some(97),
        ..pkt(2, 3000, true, 35)
    });
    let a = assemble(&packets);
    assert_eq!(a.payload_type_switches, 1);
    assert_eq!(a.incomplete_reasons.mixed_payload_types, 1);
    assert_eq!((a.total, a.complete), (2, 1));
}

#[test]
fn timestamps_backwards_and_jumps_are_counted_and_no_loss_is_inferred_over_a_jump() {
    let mut packets = single([0, 1, 2, 3]);
    // Seq 4 goes back to timestamp 1000.
    packets.push(pkt(4, 1000, true, 140));
    let a = assemble(&packets);
    assert_eq!(a.timestamps_backwards, 1);
    assert_eq!((a.total, a.complete), (5, 5));
    // 100 s of timestamp over a 33 ms arrival step, with 3 packets missing: a restart, not
    // 3000 lost frames.
    let mut packets = single([0, 1, 2, 3]);
    packets.push(pkt(7, 9000 + 9_000_000, true, 140));
    let a = assemble(&packets);
    assert_eq!(a.timestamp_jumps, 1);
    assert_eq!(a.incomplete_reasons.lost, 0);
    assert_eq!(a.incomplete_reasons.missing_packets, 1);
    assert_eq!(a.total, 5);
}

#[test]
fn silences_of_over_five_seconds_are_inactive_spans() {
    let mut packets = single([0, 1]);
    packets.push(pkt(2, 6000, true, 6043));
    let a = assemble(&packets);
    assert_eq!(
        a.inactive,
        [
            (Nanos::from_millis(5043), Nanos::from_millis(6043)),
            (Nanos::from_millis(11_043), Nanos::MAX)
        ]
    );
}

#[test]
fn the_counts_serialise_under_the_documented_keys() {
    let a = assemble(&single([0, 1, 3]));
    let v = serde_json::to_value(&a).unwrap();
    assert_eq!(v["frames"], 4);
    assert_eq!(v["complete"], 3);
    assert_eq!(v["incomplete"], 1);
    assert_eq!(v["incomplete_reasons"]["lost"], 1);
    assert_eq!(v["duplicates"], 0);
    assert!(v.get("inactive").is_none());
}

/// Hostile input: random sequence numbers, timestamps, markers, payload types and arrival
/// times never panic, and the counts always add up.
#[test]
fn random_packets_never_panic_and_the_counts_add_up() {
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for _ in 0..500 {
        let n = next(60) as usize;
        let packets: Vec<Sample> = (0..n)
            .map(|_| Sample {
                payload_type: Some(96 + next(2) as u8),
                ..pkt(
                    next(40) as i64 - 5,
                    next(8) as i64 * 3000 - 3000,
                    next(3) == 0,
                    next(20_000) as i64 - 100,
                )
            })
            .collect();
        let a = assemble(&packets);
        let r = a.incomplete_reasons;
        assert_eq!(a.total, a.complete + a.incomplete);
        assert_eq!(
            a.incomplete,
            r.lost + r.interleaved + r.mixed_payload_types + r.missing_packets + r.unterminated
        );
        assert_eq!(a.frames.len() as u64, a.complete);
        let mut seqs: Vec<i64> = a.frames.iter().map(|f| f.seq).collect();
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(seqs.len(), a.frames.len());
        assert!(a.frames.windows(2).all(|w| w[0].arrival <= w[1].arrival));
        let s = PlayoutStream::new(0, &packets, video(), Nanos::ZERO);
        assert!(s.slots().len() as u64 <= a.total);
    }
}
