//! The offline-optimal bound against the built-in policies: on random traces no configuration
//! of the default tuning grids (every snapshot preset; every playout preset) reaches a mean
//! delay below the bound at its own starved or late share, beyond [`TOLERANCE_MS`].

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{MediaKind, Sample};
use jitterlab_replay::grid::{
    DEFAULT_MAX_CONFIGS, default_playout_grid_for, default_tune_grid_for,
};
use jitterlab_replay::playout::QualityOptions;
use jitterlab_replay::sweep::{self, PlayoutTrace, Shard, SweepTrace};
use jitterlab_replay::{ClockMapping, FrameClock, Media, PlayoutStream, Policy, Prepared, Stream};
use proptest::prelude::*;

/// How far below the bound a row may sit: the bound counts the frames from the first arrival
/// to the last, a row from playback start to the last arrival plus its delay, so the two
/// means are over slightly different frames (see docs/bound.md).
const TOLERANCE_MS: f64 = 0.5;

/// A 20 Hz stream with random queueing delay, bursts (a spike that lasts a few ticks) and
/// losses.
fn arb_trace() -> impl Strategy<Value = Vec<Sample>> {
    proptest::collection::vec((0i64..80, 0u8..20, 0u8..10), 20..200).prop_map(|ticks| {
        let mut out = Vec::new();
        let mut spike = 0i64;
        for (i, (delay_ms, spike_roll, loss_roll)) in ticks.into_iter().enumerate() {
            if spike_roll == 0 {
                spike = 300;
            }
            spike = (spike - 50).max(0);
            if loss_roll == 0 {
                continue;
            }
            let send = Nanos::from_millis(i as i64 * 50);
            out.push(
                Sample::new(
                    0,
                    i as i64,
                    send,
                    send + Nanos::from_millis(20 + delay_ms + spike),
                )
                .with_values(vec![i as f64]),
            );
        }
        out.sort_by_key(|s| s.arrival);
        out
    })
}

/// At most `per` configurations of each preset in `policies`.
fn a_few(policies: Vec<Policy>, per: usize) -> Vec<Policy> {
    let mut picked: Vec<Policy> = Vec::new();
    let n = policies.len();
    // Spread over the grid, not only its first corner.
    for p in policies.into_iter().step_by((n / 200).max(1)) {
        if picked.iter().filter(|q| q.name() == p.name()).count() < per {
            picked.push(p);
        }
    }
    picked
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn no_snapshot_policy_beats_the_bound(samples in arb_trace()) {
        let policies = a_few(
            default_tune_grid_for(Some(20)).expand(DEFAULT_MAX_CONFIGS).unwrap(),
            6,
        );
        let traces = [SweepTrace {
            name: "synthetic".into(),
            streams: vec![Prepared::new(&Stream::new(&samples))],
        }];
        let rows = sweep::run(
            &traces,
            &policies,
            &FrameClock::Fps(60.0),
            ClockMapping::Estimated,
            Shard::ALL,
            &|| {},
        )
        .unwrap();
        for row in &rows {
            let (Some(delay), Some(bound)) = (row.summary.mean_delay_ms, row.bound_ms) else {
                continue;
            };
            prop_assert!(
                delay >= bound - TOLERANCE_MS,
                "{}: mean delay {delay:.3} ms below the bound {bound:.3} ms ({:?})",
                policies[row.config],
                row.summary
            );
            prop_assert_eq!(row.regret_ms, Some(delay - bound));
            // A fixed delay is constant in every window: the window bound is a floor for it.
            let window = row.window_bound_ms.unwrap();
            prop_assert!(window >= bound - 1e-9);
            if policies[row.config].name() == "fixed" {
                prop_assert!(
                    delay >= window - TOLERANCE_MS,
                    "{}: mean delay {delay:.3} ms below the window bound {window:.3} ms",
                    policies[row.config]
                );
            }
        }
    }

    #[test]
    fn no_playout_policy_beats_the_bound(samples in arb_trace()) {
        let policies = a_few(
            default_playout_grid_for(Some(20)).expand(DEFAULT_MAX_CONFIGS).unwrap(),
            4,
        );
        let media = Media {
            kind: Some(MediaKind::Audio),
            clock_rate: Some(8000),
            encoding: Some("PCMA".into()),
            payload_type: Some(8),
        };
        // As RTP audio: 8 kHz timestamps of the send times, a talkspurt every 17 packets.
        let samples: Vec<Sample> = samples
            .into_iter()
            .map(|s| Sample {
                payload_type: Some(8),
                rtp_clock: 8000,
                rtp_timestamp: s.send.as_nanos() / 125_000,
                marker: s.seq % 17 == 0,
                ..s
            })
            .collect();
        let traces = [PlayoutTrace {
            name: "synthetic".into(),
            streams: vec![PlayoutStream::with_clock(0, &samples, media, ClockMapping::Hindsight)],
        }];
        let rows = sweep::run_playout(&traces, &policies, QualityOptions::default(), Shard::ALL, &|| {})
            .unwrap();
        prop_assert!(traces[0].slots() > 0);
        let mut compared = 0;
        for row in &rows {
            let p = row.playout.as_ref().unwrap();
            let (Some(delay), Some(bound)) = (p.mean_delay_ms, row.bound_ms) else {
                continue;
            };
            prop_assert!(
                delay >= bound - TOLERANCE_MS,
                "{}: mean delay {delay:.3} ms below the bound {bound:.3} ms ({:?})",
                policies[row.config],
                p.summary
            );
            prop_assert!((row.regret_ms.unwrap() - (delay - bound)).abs() < 1e-9);
            let window = row.window_bound_ms.unwrap();
            prop_assert!(window >= bound - 1e-9);
            // A fixed delay is constant in every talkspurt too.
            let talkspurt = row.talkspurt_bound_ms.unwrap();
            prop_assert!(talkspurt >= bound - 1e-9);
            if policies[row.config].name() == "fixed" {
                prop_assert!(
                    delay >= window - TOLERANCE_MS,
                    "{}: mean delay {delay:.3} ms below the window bound {window:.3} ms",
                    policies[row.config]
                );
                prop_assert!(
                    delay >= talkspurt - TOLERANCE_MS,
                    "{}: mean delay {delay:.3} ms below the talkspurt bound {talkspurt:.3} ms",
                    policies[row.config]
                );
            }
            compared += 1;
        }
        prop_assert!(compared > 0, "no playout row had a delay and a bound");
    }
}

/// On a steady stream (20 Hz, a constant 20 ms transit, frames at 60 fps in phase with the
/// arrivals: the newest sample is 20, 36.7 or 53.3 ms old) every window needs the same
/// delay, so the smallest fixed delay that never starves sits on the window bound, to the frame clock's
/// and the grid's resolution: the bound is tight, not merely below every row.
#[test]
fn the_best_fixed_delay_sits_on_the_window_bound_of_a_steady_stream() {
    let samples: Vec<Sample> = (0..200)
        .map(|i| {
            let send = Nanos::from_millis(50 * i);
            Sample::new(0, i, send, send + Nanos::from_millis(20)).with_values(vec![i as f64])
        })
        .collect();
    let policies: Vec<Policy> = (40..=90)
        .map(|d| format!("fixed:delay={d}ms").parse().unwrap())
        .collect();
    let traces = [SweepTrace {
        name: "steady".into(),
        streams: vec![Prepared::new(&Stream::new(&samples))],
    }];
    let rows = sweep::run(
        &traces,
        &policies,
        &FrameClock::Fps(60.0),
        ClockMapping::Fixed(Nanos::ZERO),
        Shard::ALL,
        &|| {},
    )
    .unwrap();
    // The frames after the last arrival starve whatever the delay: the fewest starved.
    let starved = |r: &sweep::Row| r.summary.holds + r.summary.extrapolated + r.summary.empty;
    let fewest = rows.iter().map(starved).min().unwrap();
    assert!(fewest <= 3, "{fewest}");
    let best = rows
        .iter()
        .filter(|r| starved(r) == fewest)
        .min_by(|a, b| {
            let d = |r: &&sweep::Row| r.summary.mean_delay_ms.unwrap_or(f64::INFINITY);
            d(a).total_cmp(&d(b))
        })
        .expect("some fixed delay never starves");
    let (delay, window, any) = (
        best.summary.mean_delay_ms.unwrap(),
        best.window_bound_ms.unwrap(),
        best.bound_ms.unwrap(),
    );
    assert!(
        delay >= window && delay - window <= 1.0,
        "{}: {delay} ms against the window bound {window} ms",
        policies[best.config]
    );
    assert!((window - 160.0 / 3.0).abs() < 1e-6, "{window}");
    // Free per frame, the delay could follow the sawtooth of the newest sample's age: its
    // mean, (20 + 36.7 + 53.3) / 3.
    // (The budget is the row's share of the bound's frames rounded up, one frame more than
    // the row counts at the trace's ends: a little below the sawtooth's mean.)
    assert!((any - 110.0 / 3.0).abs() < 0.5, "{any}");
    assert!((best.regret_ms.unwrap() - (delay - any)).abs() < 1e-9 && delay - any > 15.0);
}

/// The per-talkspurt bound by hand: six 20 ms slots whose transits are 10, 25, 10, 40, 20 and
/// 10 ms (needs over the fastest: 0, 15, 0, 30, 10, 0), a talkspurt starting at the fourth
/// (its marker bit). Nothing late: each talkspurt at its largest need, (3·15 + 3·30) / 6 =
/// 22.5 ms; one late (the 30): (3·15 + 3·10) / 6 = 12.5 ms. One window holds all six: 30 and
/// 15 ms. Any policy: 55 / 6 and 25 / 6 ms.
#[test]
fn the_talkspurt_bound_by_hand() {
    let transits = [10, 25, 10, 40, 20, 10];
    let samples: Vec<Sample> = transits
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let send = Nanos::from_millis(20 * i as i64);
            Sample {
                payload_type: Some(8),
                rtp_clock: 8000,
                rtp_timestamp: send.as_nanos() / 125_000,
                marker: i == 3,
                ..Sample::new(0, i as i64, send, send + Nanos::from_millis(t))
            }
        })
        .collect();
    let media = Media {
        kind: Some(MediaKind::Audio),
        clock_rate: Some(8000),
        encoding: Some("PCMA".into()),
        payload_type: Some(8),
    };
    let trace = PlayoutTrace {
        name: "by hand".into(),
        streams: vec![PlayoutStream::with_clock(
            0,
            &samples,
            media,
            ClockMapping::Hindsight,
        )],
    };
    let bounds = sweep::playout_curve(&trace);
    let close = |got: Option<f64>, want: f64| {
        assert!((got.unwrap() - want).abs() < 1e-9, "{got:?} vs {want}");
    };
    close(bounds.talkspurt.mean(0), 22.5);
    close(bounds.talkspurt.mean(1), 12.5);
    close(bounds.window.mean(0), 30.0);
    close(bounds.window.mean(1), 15.0);
    close(bounds.any.mean(0), 55.0 / 6.0);
    close(bounds.any.mean(1), 25.0 / 6.0);
}
