//! The element's own unit tests (GStreamer 1.22.0,
//! `subprojects/gst-plugins-good/tests/check/elements/rtpjitterbuffer.c`), re-derived for the
//! model: PCMU-like packets, 8 kHz, 20 ms apart (160 RTP units), payload type 0. Where a check
//! test sets the clock apart from a packet's DTS, the packet here arrives at the clock time
//! (the model's DTS is the arrival), and the expected values are worked out again from the
//! element's code.

use super::*;

const MS: i64 = 1_000_000;

fn pkt(seq: i64, rtp: i64, arrival_ns: i64) -> Sample {
    Sample {
        payload_type: Some(0),
        rtp_timestamp: rtp,
        rtp_clock: 8000,
        ..Sample::new(0, seq, Nanos(rtp * 125_000), Nanos(arrival_ns))
    }
}

/// Packet `seq` sent and arriving on the 20 ms grid.
fn on_time(seq: i64) -> Sample {
    pkt(seq, seq * 160, seq * 20 * MS)
}

/// `construct_deterministic_initial_state`: packets 0 ..= latency/20 each on time, so that
/// the first deadline (latency) releases them all with PTS on the grid.
fn initial(latency_ms: u32) -> Vec<Sample> {
    (0..=i64::from(latency_ms) / 20).map(on_time).collect()
}

fn config(latency_ms: u32) -> Config {
    Config {
        latency_ms,
        ..Config::default()
    }
}

fn run(cfg: &Config, packets: &[Sample]) -> Simulation {
    simulate(cfg, packets, Some(8000))
}

/// (sequence number, PTS, leave time, DISCONT) of every buffer pushed, times in ns.
fn pushed(sim: &Simulation, packets: &[Sample]) -> Vec<(i64, i64, i64, bool)> {
    sim.stats
        .outputs
        .iter()
        .map(|o| {
            (
                packets[o.packet as usize].seq,
                o.pts.as_nanos(),
                o.leave.as_nanos(),
                o.discont,
            )
        })
        .collect()
}

/// (sequence number, count, timestamp, duration, leave time) of every lost event, in ns.
fn lost(sim: &Simulation) -> Vec<(u16, u32, i64, i64, i64)> {
    sim.stats
        .lost_events
        .iter()
        .map(|e| {
            (
                e.seq,
                e.count,
                e.timestamp.as_nanos(),
                e.duration.as_nanos(),
                e.at.as_nanos(),
            )
        })
        .collect()
}

#[test]
fn the_first_deadline_releases_the_initial_packets_with_pts_on_the_grid() {
    let packets = initial(100);
    let sim = run(&config(100), &packets);
    let expected: Vec<_> = (0..=5).map(|s| (s, s * 20 * MS, 100 * MS, false)).collect();
    assert_eq!(pushed(&sim, &packets), expected);
    assert_eq!(sim.stats.num_pushed, 6);
}

/// `test_lost_event`: a gap of one is declared lost at its PTS + latency, and the packet
/// behind it leaves then.
#[test]
fn a_missing_packet_is_lost_at_its_pts_plus_latency() {
    let mut packets = initial(100);
    packets.push(on_time(7));
    let cfg = Config {
        do_lost: true,
        ..config(100)
    };
    let sim = run(&cfg, &packets);
    assert_eq!(lost(&sim), [(6, 1, 120 * MS, 20 * MS, 220 * MS)]);
    assert_eq!(pushed(&sim, &packets)[6], (7, 140 * MS, 220 * MS, true));
    assert_eq!((sim.stats.num_pushed, sim.stats.num_lost), (7, 1));
}

/// `test_only_one_lost_event_on_large_gaps`: packet 500 arrives on time after 489 missing;
/// those past saving (11..=489) are one lost event at once, the last latency's worth
/// (490..=499) get a timer each.
#[test]
fn a_large_gap_is_one_lost_event_and_a_latency_of_timers() {
    let mut packets = initial(200);
    packets.push(on_time(500));
    let cfg = Config {
        do_lost: true,
        max_misorder_time: 0,
        max_dropout_time: 0,
        ..config(200)
    };
    let sim = run(&cfg, &packets);
    let mut expected = vec![
        (11, 479, 220 * MS, 9580 * MS, 10_000 * MS),
        (490, 1, 9800 * MS, 20 * MS, 10_000 * MS),
    ];
    expected.extend((1..10).map(|i: i64| {
        let t = (490 + i) * 20 * MS;
        (490 + i as u16, 1, t, 20 * MS, t + 200 * MS)
    }));
    assert_eq!(lost(&sim), expected);
    let last = *pushed(&sim, &packets).last().unwrap();
    assert_eq!(last, (500, 10_000 * MS, 10_180 * MS, true));
    assert_eq!(sim.stats.num_lost, 489);
}

/// `test_two_lost_one_arrives_in_time`: of two missing, the first is lost at 220 ms, the
/// second arrives then (its timer is at 240 ms) and leaves with the one behind it.
#[test]
fn of_two_missing_one_is_lost_and_one_arrives_in_time() {
    let mut packets = initial(100);
    packets.push(on_time(8));
    packets.push(pkt(7, 7 * 160, 220 * MS));
    let cfg = Config {
        do_lost: true,
        ..config(100)
    };
    let sim = run(&cfg, &packets);
    assert_eq!(lost(&sim), [(6, 1, 120 * MS, 20 * MS, 220 * MS)]);
    let out = pushed(&sim, &packets);
    assert_eq!(
        out[6..],
        [
            (7, 140 * MS, 220 * MS, true),
            (8, 160 * MS, 220 * MS, false)
        ]
    );
    assert_eq!((sim.stats.num_pushed, sim.stats.num_lost), (8, 1));
}

/// `test_out_of_order_loss_not_reported`: a reordered packet arriving just before its LOST
/// timer cancels it. (Here it arrives 1 ns before: at the timer's own time the timer fires
/// first.)
#[test]
fn a_reordered_packet_before_its_timer_is_not_lost() {
    let mut packets = initial(100);
    packets.push(on_time(6));
    packets.push(pkt(8, 8 * 160, 120 * MS));
    packets.push(pkt(7, 7 * 160, 240 * MS - 1));
    let sim = run(&config(100), &packets);
    let out = pushed(&sim, &packets);
    assert_eq!(
        out[7..].iter().map(|o| (o.0, o.2, o.3)).collect::<Vec<_>>(),
        [(7, 240 * MS - 1, false), (8, 240 * MS - 1, false)]
    );
    assert_eq!((sim.stats.num_pushed, sim.stats.num_lost), (9, 0));
    // At the timer's time, the timer wins: 7 is lost, then late.
    packets[8] = pkt(7, 7 * 160, 240 * MS);
    let sim = run(&config(100), &packets);
    assert_eq!(
        (sim.stats.num_pushed, sim.stats.num_lost, sim.stats.num_late),
        (8, 1, 1)
    );
}

/// `test_late_packets_still_makes_lost_events`: a packet 10 s late after a gap of two resyncs
/// the clock; the first missing one is lost at once for the time it covers, the second gets
/// a timer 20 ms before the late packet's PTS.
#[test]
fn a_very_late_packet_after_a_gap_makes_one_huge_lost_event() {
    let mut packets = initial(100);
    packets.push(pkt(8, 8 * 160, 10_000 * MS));
    let cfg = Config {
        do_lost: true,
        ..config(100)
    };
    let sim = run(&cfg, &packets);
    assert_eq!(
        lost(&sim),
        [
            (6, 1, 120 * MS, 9860 * MS, 10_000 * MS),
            (7, 1, 9980 * MS, 20 * MS, 10_080 * MS)
        ]
    );
    assert_eq!(
        *pushed(&sim, &packets).last().unwrap(),
        (8, 10_000 * MS, 10_080 * MS, true)
    );
    assert_eq!((sim.stats.num_pushed, sim.stats.num_lost), (7, 2));
}

/// `test_num_late_when_considered_lost_arrives`: a packet arriving after it was declared
/// lost is counted late, with or without do-lost.
#[test]
fn a_packet_arriving_after_being_declared_lost_is_late() {
    for do_lost in [false, true] {
        let mut packets = initial(100);
        packets.push(on_time(7));
        packets.push(pkt(6, 6 * 160, 300 * MS));
        let cfg = Config {
            do_lost,
            ..config(100)
        };
        let sim = run(&cfg, &packets);
        assert_eq!(
            (sim.stats.num_pushed, sim.stats.num_lost, sim.stats.num_late),
            (7, 1, 1)
        );
        assert_eq!(sim.fates[7], Fate::Late);
        assert_eq!(sim.stats.lost_events.len(), usize::from(do_lost));
    }
}

/// `test_reorder_of_non_equidistant_packets`: after packets sharing a timestamp the stream is
/// not equidistant, so a missing packet's timer is the next packet's PTS + latency.
#[test]
fn a_gap_in_a_non_equidistant_stream_waits_from_the_next_pts() {
    let cfg = Config {
        do_lost: true,
        ..config(5)
    };
    let packets = vec![
        pkt(0, 0, 0),
        pkt(1, 0, 0),
        pkt(3, 160, 20 * MS),
        pkt(2, 160, 25 * MS - 1),
    ];
    let sim = run(&cfg, &packets);
    assert_eq!(
        pushed(&sim, &packets)
            .iter()
            .map(|o| (o.0, o.2))
            .collect::<Vec<_>>(),
        [(0, 5 * MS), (1, 5 * MS), (2, 25 * MS - 1), (3, 25 * MS - 1)]
    );
    assert_eq!(sim.stats.num_lost, 0);
    // 2 ns later it is lost at 25 ms.
    let mut late = packets;
    late[3] = pkt(2, 160, 25 * MS + 1);
    let sim = run(&cfg, &late);
    assert_eq!(lost(&sim), [(2, 1, 20 * MS, 0, 25 * MS)]);
    assert_eq!((sim.stats.num_lost, sim.stats.num_late), (1, 1));
}

/// `test_deadline_ts_offset`: ts-offset moves the first deadline (10 ms latency + 20 ms) and
/// the output PTS.
#[test]
fn ts_offset_moves_the_deadline_and_the_pts() {
    let cfg = Config {
        ts_offset: 20 * MS,
        ..config(10)
    };
    let packets = [on_time(0)];
    let sim = run(&cfg, &packets);
    assert_eq!(pushed(&sim, &packets), [(0, 20 * MS, 30 * MS, false)]);
}

/// `test_big_gap_seqnum`: a jump of 20000 sequence numbers at the same pace parks packets
/// until 5 are consecutive, then resets: they leave with the arrival times as PTS.
#[test]
fn a_big_sequence_jump_resets_after_five_consecutive_packets() {
    let mut packets = initial(100);
    let base = 6 + 20_000;
    for i in 0..5 {
        packets.push(pkt(base + i, (base + i) * 160, (6 + i) * 20 * MS));
    }
    let cfg = Config {
        do_lost: true,
        ..config(100)
    };
    let sim = run(&cfg, &packets);
    let after: Vec<_> = pushed(&sim, &packets)[6..].to_vec();
    let expected: Vec<_> = (0..5)
        .map(|i| (base + i, (6 + i) * 20 * MS, 200 * MS, i == 0))
        .collect();
    assert_eq!(after, expected);
    assert_eq!((sim.stats.resets, sim.stats.num_lost), (1, 0));
    assert!(sim.stats.lost_events.is_empty());
}

/// `test_drop_messages_drop_on_latency`: three packets behind a gap arriving at once span the
/// latency (20 ms of RTP time from the first to the third), so the first is dropped and the
/// gap skipped.
#[test]
fn drop_on_latency_drops_the_head_behind_a_gap() {
    let mut packets = initial(20);
    for seq in 3..=5 {
        packets.push(pkt(seq, seq * 160, 20 * MS));
    }
    let cfg = Config {
        drop_on_latency: true,
        ..config(20)
    };
    let sim = run(&cfg, &packets);
    assert_eq!(sim.stats.dropped_on_latency, 1);
    assert_eq!(sim.fates[2], Fate::DroppedOnLatency);
    let seqs: Vec<i64> = pushed(&sim, &packets).iter().map(|o| o.0).collect();
    assert_eq!(seqs, [0, 1, 4, 5]);
    // Without drop-on-latency the gap holds them until 2 is lost (at 40 + 20 ms).
    let sim = run(&config(20), &packets);
    let seqs: Vec<(i64, i64)> = pushed(&sim, &packets).iter().map(|o| (o.0, o.2)).collect();
    assert_eq!(
        seqs,
        [
            (0, 20 * MS),
            (1, 20 * MS),
            (3, 60 * MS),
            (4, 60 * MS),
            (5, 60 * MS)
        ]
    );
}

/// The same sequence number twice: a duplicate while it is queued, late once it left.
#[test]
fn copies_are_duplicates_while_queued_and_late_after() {
    let mut packets = initial(100);
    packets.insert(2, pkt(1, 160, 30 * MS));
    packets.push(pkt(3, 3 * 160, 150 * MS));
    let sim = run(&config(100), &packets);
    assert_eq!(
        (
            sim.stats.num_pushed,
            sim.stats.num_duplicates,
            sim.stats.num_late
        ),
        (6, 1, 1)
    );
    assert_eq!(sim.fates[2], Fate::Duplicate);
    assert_eq!(sim.fates[7], Fate::Late);
}

/// Slave mode follows the minimum transit: a packet delayed by 50 ms keeps its PTS on the
/// grid. With a 20 ms latency it is declared lost first (200 + 20 ms) and arrives late; with
/// 60 ms it leaves on arrival, before its PTS + latency.
#[test]
fn a_delayed_packet_keeps_its_pts() {
    let mut packets: Vec<Sample> = (0..20).map(on_time).collect();
    packets.retain(|p| p.seq != 10);
    let at = packets.iter().position(|p| p.seq == 12).unwrap();
    packets.insert(at + 1, pkt(10, 10 * 160, 250 * MS));
    let sim = run(&config(20), &packets);
    assert_eq!((sim.stats.num_lost, sim.stats.num_late), (1, 1));
    let sim = run(&config(60), &packets);
    let ten = pushed(&sim, &packets)
        .into_iter()
        .find(|o| o.0 == 10)
        .unwrap();
    assert_eq!(ten, (10, 200 * MS, 250 * MS, false));
    assert_eq!(sim.stats.late_for_sink, 0);
}

/// mode=none: PTS are RTP time from 0 (the first arrival here), whatever the arrivals.
#[test]
fn mode_none_uses_rtp_time_only() {
    let packets: Vec<Sample> = (0..5)
        .map(|s| pkt(s, 1000 + s * 160, 7 * MS + s * 25 * MS))
        .collect();
    let cfg = Config {
        mode: Mode::None,
        ..config(20)
    };
    let sim = run(&cfg, &packets);
    let pts: Vec<i64> = sim.stats.outputs.iter().map(|o| o.pts.as_nanos()).collect();
    assert_eq!(pts, [0, 20, 40, 60, 80].map(|t| 7 * MS + t * MS));
}

/// RTP timestamps wrap at 2³²: the extended timestamp goes on (as
/// `gst_rtp_buffer_ext_timestamp` does), and PTS stay on the grid.
#[test]
fn timestamps_wrap_without_a_jump() {
    let start = (1i64 << 32) - 2 * 160;
    let packets: Vec<Sample> = (0..6)
        .map(|s| {
            let ts = (start + s * 160) & 0xffff_ffff;
            pkt(s, ts, s * 20 * MS)
        })
        .collect();
    let sim = run(&config(20), &packets);
    let pts: Vec<i64> = sim.stats.outputs.iter().map(|o| o.pts.as_nanos()).collect();
    assert_eq!(pts, (0..6).map(|s| s * 20 * MS).collect::<Vec<_>>());
    let mut ext = NONE;
    assert_eq!(ext_timestamp(&mut ext, 5), (1 << 32) + 5);
    assert_eq!(ext_timestamp(&mut ext, u32::MAX), u32::MAX as u64);
}

/// Arbitrary input (sequence jumps both ways and across the 16-bit wrap, timestamps that
/// repeat, jump and go backwards, bursts, payload type switches) in every mode: nothing
/// panics, buffers leave in time order, and the counters agree with the fates.
#[test]
fn arbitrary_streams_keep_the_books_straight() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..120 {
        let n = 1 + (next() % 400) as usize;
        let (mut seq, mut ts, mut t) = (
            (next() % 70_000) as i64 - 2000,
            next() as i64 % (1 << 33),
            0i64,
        );
        let mut packets = Vec::with_capacity(n);
        for _ in 0..n {
            let r = next();
            seq += match r % 50 {
                0 => -(((r >> 8) % 200) as i64),
                1 => ((r >> 8) % 40_000) as i64,
                2..=5 => 0,
                _ => 1,
            };
            ts += match (r >> 16) % 40 {
                0 => -(((r >> 20) % 100_000) as i64),
                1 => ((r >> 20) % 10_000_000) as i64,
                2..=6 => 0,
                _ => 160,
            };
            t += ((r >> 32) % 60) as i64 * MS / 2;
            let mut p = pkt(seq, ts & 0xffff_ffff, t);
            p.payload_type = Some(if (r >> 48) % 30 == 0 { 101 } else { 0 });
            packets.push(p);
        }
        let cfg = Config {
            latency_ms: [0, 5, 20, 200, 2000][round % 5],
            drop_on_latency: round % 3 == 0,
            do_lost: round % 2 == 0,
            mode: [Mode::Slave, Mode::None, Mode::Synced][round % 3],
            ts_offset: [0, -30 * MS, 15 * MS][round % 3],
            faststart_min_packets: [0, 3][round % 2],
            ..Config::default()
        };
        let sim = run(&cfg, &packets);
        let st = &sim.stats;
        assert_eq!(st.num_pushed as usize, st.outputs.len(), "round {round}");
        let count = |f: Fate| sim.fates.iter().filter(|&&x| x == f).count() as u64;
        assert_eq!(count(Fate::Pushed), st.num_pushed, "round {round}");
        assert_eq!(count(Fate::Late), st.num_late, "round {round}");
        assert_eq!(count(Fate::Duplicate), st.num_duplicates, "round {round}");
        assert!(
            st.outputs.windows(2).all(|w| w[0].leave <= w[1].leave),
            "round {round}: buffers left out of time order"
        );
        assert!(
            st.outputs
                .iter()
                .all(|o| o.leave >= packets[o.packet as usize].arrival),
            "round {round}: a buffer left before it arrived"
        );
    }
}
