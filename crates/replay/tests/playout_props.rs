//! Discrete playout on arbitrary input: whatever the packets (reordered, duplicated, lost,
//! timestamps backwards or leaping, payload types switching, DTMF events and comfort noise,
//! video whose marker bit never comes), preparing a stream never panics and every policy that
//! plays frames accounts for every slot exactly once.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{MediaKind, Sample};
use jitterlab_replay::grid::{DEFAULT_MAX_CONFIGS, default_playout_grid_for};
use jitterlab_replay::playout::{PlayoutEvent, PlayoutMetrics, QualityOptions, Targets};
use jitterlab_replay::{ClockMapping, Media, PlayoutStream, Policy};
use proptest::prelude::*;

/// One packet: sequence step, timestamp step (ms, may be negative), arrival jitter (ms),
/// payload type choice, marker, size.
fn packet() -> impl Strategy<Value = (i64, i64, i64, u8, bool, u32)> {
    (
        prop_oneof![8 => Just(1i64), 1 => 0i64..4, 1 => -3i64..0],
        prop_oneof![8 => Just(20i64), 1 => -5000i64..5000, 1 => Just(0)],
        0i64..300,
        prop_oneof![8 => Just(0u8), 1 => Just(1), 1 => Just(2)],
        any::<bool>(),
        0u32..1500,
    )
}

fn samples(raw: &[(i64, i64, i64, u8, bool, u32)]) -> Vec<Sample> {
    let (mut seq, mut ts) = (1000i64, 0i64);
    let mut out: Vec<Sample> = raw
        .iter()
        .enumerate()
        .map(|(i, &(dseq, dts, jitter, kind, marker, size))| {
            seq += dseq;
            ts += dts;
            // 0: the stream's payload type; 1: DTMF (clock 0); 2: comfort noise.
            let (pt, clock) = match kind {
                0 => (8, 8000),
                1 => (101, 0),
                _ => (13, 8000),
            };
            Sample {
                payload_type: Some(pt),
                rtp_clock: clock,
                rtp_timestamp: ts * 8,
                marker,
                size,
                ..Sample::new(
                    0,
                    seq,
                    Nanos::from_millis(ts),
                    Nanos::from_millis(20 * i as i64 + jitter),
                )
            }
        })
        .collect();
    out.sort_by_key(|s| s.arrival);
    out
}

fn media(kind: Option<MediaKind>) -> Media {
    Media {
        kind,
        clock_rate: Some(8000),
        encoding: Some("PCMA".into()),
        payload_type: Some(8),
    }
}

/// A few configurations of every preset in the default playout grid.
fn policies() -> Vec<Policy> {
    let all = default_playout_grid_for(Some(50))
        .expand(DEFAULT_MAX_CONFIGS)
        .expect("the default playout grid expands");
    let mut picked: Vec<Policy> = Vec::new();
    for p in all {
        if picked.iter().filter(|q| q.name() == p.name()).count() < 2 {
            picked.push(p);
        }
    }
    picked
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_policy_accounts_for_every_slot_once(
        raw in prop::collection::vec(packet(), 0..120),
        kind in prop_oneof![Just(None), Just(Some(MediaKind::Audio)), Just(Some(MediaKind::Video))],
    ) {
        let samples = samples(&raw);
        let stream = PlayoutStream::with_clock(0, &samples, media(kind), ClockMapping::Hindsight);
        let slots = stream.slots();
        // Slots run from the lowest to the highest sequence number, one each.
        prop_assert!(slots.windows(2).all(|w| w[1].seq == w[0].seq + 1));
        for policy in policies() {
            let run = policy.playout(&stream).expect("a playout grid policy plays frames");
            let mut seen: Vec<i64> = run
                .events
                .iter()
                .map(|e| match *e {
                    PlayoutEvent::Played { seq, .. } | PlayoutEvent::Concealed { seq, .. } => seq,
                })
                .collect();
            seen.sort_unstable();
            let want: Vec<i64> = slots.iter().map(|s| s.seq).collect();
            prop_assert_eq!(&seen, &want, "{}", policy);
            // Nothing plays that had not arrived by its play time.
            for e in &run.events {
                if let PlayoutEvent::Played { seq, at } = *e {
                    let slot = slots[(seq - slots[0].seq) as usize];
                    prop_assert!(slot.arrival.is_some_and(|a| a <= at), "{} {:?}", policy, slot);
                }
            }
            // A target per event, when the policy records them one by one.
            if let Targets::PerEvent(t) = &run.targets {
                prop_assert_eq!(t.len(), run.events.len(), "{}", policy);
            }
            let m = PlayoutMetrics::measure(&stream, &run, QualityOptions::default()).report();
            prop_assert_eq!(m.summary.frames as usize, slots.len());
        }
    }
}
