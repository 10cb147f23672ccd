//! Invariants of the fixed policy over random traces (ordering, loss, duplicates,
//! reordering, gaps), checked against naive oracles.

use jitterlab_capture::{Nanos, Sample};
use jitterlab_replay::{
    ClockMapping, FrameClock, HoldReason, Mode, Policy, Prepared, Replay, Stream,
};
use proptest::prelude::*;

/// A 20 Hz stream: per tick, lost or not, a queueing delay, maybe duplicated.
fn arb_trace() -> impl Strategy<Value = Vec<Sample>> {
    proptest::collection::vec((any::<bool>(), 0i64..250, any::<bool>(), 0u8..10), 2..120).prop_map(
        |ticks| {
            let mut out = Vec::new();
            for (i, (kept, delay_ms, dup, loss_roll)) in ticks.into_iter().enumerate() {
                let lost = !kept && loss_roll < 3;
                if lost {
                    continue;
                }
                let send = Nanos::from_millis(i as i64 * 50);
                let mk = |extra: i64| {
                    Sample::new(
                        0,
                        i as i64,
                        send,
                        send + Nanos::from_millis(delay_ms + extra),
                    )
                    .with_values(vec![i as f64])
                };
                out.push(mk(0));
                if dup {
                    out.push(mk(3));
                }
            }
            out.sort_by_key(|s| s.arrival);
            out
        },
    )
}

/// Fixed, jitter and quantile policies over the shared buffer keys, with their max_gap.
fn arb_policy() -> impl Strategy<Value = (Policy, Nanos)> {
    let buffer = (30i64..300, 1usize..40, any::<bool>());
    let own = prop_oneof![
        (0i64..300, proptest::option::of(0i64..400)).prop_map(|(d, h)| match h {
            Some(h) => format!("fixed:delay={d}ms,miss=extrapolate:{h}ms"),
            None => format!("fixed:delay={d}ms"),
        }),
        (0.5f64..0.99, any::<bool>(), any::<bool>()).prop_map(|(q, reorder, jump)| format!(
            "neteq:quantile={q:.3},reorder={reorder},apply={}",
            if jump { "jump" } else { "stretch:max_rate=10%" }
        )),
        (1i64..300, 1.0f64..4.0, 10.0f64..60.0).prop_map(|(i, r, u)| format!(
            "source:cl_interp={i}ms,cl_interp_ratio={r:.2},cl_updaterate={u:.1}"
        )),
        (0.0f64..4.0, 0.0f64..6.0, any::<bool>()).prop_map(|(a, k, jump)| format!(
            "jitter:a={a:.2},k={k:.2},apply={}",
            if jump { "jump" } else { "stretch:max_rate=5%" }
        )),
        (0.5f64..0.99, 100i64..2000, any::<bool>()).prop_map(|(q, every, jump)| format!(
            "quantile:q={q:.3},every={every}ms,apply={}",
            if jump { "jump" } else { "stretch:max_rate=10%" }
        )),
    ];
    let ours = (own, buffer).prop_map(|(own, (gap, cap, stale))| {
        let policy = format!("{own},max_gap={gap}ms,capacity={cap},stale={stale}")
            .parse()
            .unwrap();
        (policy, Nanos::from_millis(gap))
    });
    // Mirror keeps its own buffer and has no gap budget.
    let mirror = (5.0f64..60.0, 1usize..40, any::<bool>()).prop_map(|(rate, limit, dynamic)| {
        let policy =
            format!("mirror:send_rate={rate:.1},buffer_limit={limit},dynamic_adjustment={dynamic}")
                .parse()
                .unwrap();
        (policy, Nanos::MAX)
    });
    // NGO keeps its own queue too.
    let ngo = (10.0f64..60.0, 0.0f64..4.0).prop_map(|(rate, ticks)| {
        let policy = format!("ngo:tick_rate={rate:.1},ticks_ago={ticks:.2}")
            .parse()
            .unwrap();
        (policy, Nanos::MAX)
    });
    // The game presets of issue 18 keep their own stores too, with no gap budget.
    let games = prop_oneof![
        (10.0f64..60.0, 0.0f64..4.0).prop_map(|(rate, ticks)| format!(
            "n4e:network_tick_rate={rate:.1},interpolation_ticks={ticks:.2}"
        )),
        (10.0f64..60.0, 1u32..5, 0usize..7).prop_map(|(rate, interp, level)| format!(
            "fishnet:tick_rate={rate:.1},interpolation={interp},adaptive={}",
            [
                "off",
                "extremely_low",
                "very_low",
                "low",
                "moderate",
                "high",
                "very_high"
            ][level]
        )),
        (0.0f64..3.0, 0.0f64..4.0, 1usize..40).prop_map(|(ratio, k, cap)| format!(
            "lightyear:send_interval_ratio={ratio:.2},jitter_multiple={k:.2},capacity={cap}"
        )),
        (0i64..400, 0i64..100, 1usize..40).prop_map(|(catch, slack, cap)| format!(
            "unreal-np:catch_up_threshold={catch}ms,wait_slack={slack}ms,capacity={cap}"
        )),
        (
            proptest::option::of(5.0f64..60.0),
            any::<bool>(),
            1usize..130
        )
            .prop_map(|(fps, auto, vault)| format!(
                "geckos:server_fps={},auto_correct={auto},vault={vault}",
                fps.map_or("auto".to_owned(), |f| format!("{f:.1}"))
            )),
    ]
    .prop_map(|text| (text.parse::<Policy>().unwrap(), Nanos::MAX));
    prop_oneof![4 => ours, 1 => mirror, 1 => ngo, 2 => games]
}

/// A frame clock: a fixed rate, a list of times or a rate with hitches.
fn arb_frames() -> impl Strategy<Value = FrameClock> {
    prop_oneof![
        (10.0f64..240.0).prop_map(FrameClock::Fps),
        proptest::collection::vec(0i64..8000, 1..300).prop_map(|mut ms| {
            ms.sort_unstable();
            FrameClock::At(ms.into_iter().map(Nanos::from_millis).collect())
        }),
        (20.0f64..144.0, 0.0f64..0.3, 0i64..200, any::<u64>()).prop_map(
            |(fps, chance, hitch, seed)| FrameClock::Hitches {
                fps,
                chance,
                hitch: Nanos::from_millis(hitch),
                seed,
            }
        ),
    ]
}

struct Seen {
    at: Nanos,
    mode: Mode,
    hold: Option<HoldReason>,
    target: Nanos,
    value: Vec<f64>,
    alpha: Option<f64>,
    from: Option<u32>,
    to: Option<u32>,
}

fn run(trace: &[Sample], policy: &Policy) -> (Vec<Seen>, jitterlab_replay::Metrics) {
    let mut seen = Vec::new();
    let m = Replay::new(FrameClock::Fps(60.0))
        .clock(ClockMapping::Fixed(Nanos::ZERO))
        .stream(&Stream::new(trace), policy, |f| {
            seen.push(Seen {
                at: f.at,
                mode: f.mode,
                hold: f.hold,
                target: f.target,
                value: f.value.to_vec(),
                alpha: f.alpha,
                from: f.from,
                to: f.to,
            })
        })
        .unwrap();
    (seen, m)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every packet is accounted for exactly once.
    #[test]
    fn every_packet_is_accounted_once(trace in arb_trace(), (policy, _) in arb_policy()) {
        let (_, m) = run(&trace, &policy);
        let c = m.counters;
        prop_assert_eq!(m.packets + m.pending, trace.len() as u64);
        prop_assert_eq!(m.packets, c.inserted + c.duplicates + c.late + c.stale + c.refused);
    }

    /// C7, C8: interpolation brackets the target with two samples that had arrived, no further
    /// apart than max_gap, and shows a + (b − a)·alpha.
    #[test]
    fn never_interpolates_across_a_gap(trace in arb_trace(), (policy, max_gap) in arb_policy()) {
        let (seen, m) = run(&trace, &policy);
        let mut interpolated = 0;
        for f in &seen {
            if f.mode != Mode::Interpolate {
                continue;
            }
            interpolated += 1;
            let a = &trace[f.from.unwrap() as usize];
            let b = &trace[f.to.unwrap() as usize];
            prop_assert!(a.arrival <= f.at && b.arrival <= f.at, "used a sample before it arrived");
            prop_assert!(b.send - a.send <= max_gap, "interpolated across {} > {}", b.send - a.send, max_gap);
            prop_assert!(a.send <= f.target && f.target <= b.send);
            let alpha = f.alpha.unwrap();
            let want = a.values[0] + (b.values[0] - a.values[0]) * alpha;
            prop_assert!((f.value[0] - want).abs() < 1e-9);
        }
        prop_assert_eq!(interpolated, m.interpolated + (seen.len() as u64 - m.frames - m.startup_frames));
    }

    /// C9: after the newest sample the newest that has arrived is held, never an older one;
    /// and render targets never step backwards.
    #[test]
    fn after_the_end_the_newest_is_held(trace in arb_trace(), (policy, _) in arb_policy()) {
        // Mirror's timeline can step back (its clamp) and its full buffer refuses the newest:
        // these guarantees are jitterlab's, not Mirror's.
        prop_assume!(policy.on_snapshot_buffer());
        let (seen, m) = run(&trace, &policy);
        prop_assert!(seen.windows(2).all(|w| w[1].target >= w[0].target));
        prop_assert_eq!(m.backward_steps, 0);
        for f in seen.iter().filter(|f| f.hold == Some(HoldReason::AfterNewest) || f.mode == Mode::Extrapolate) {
            let newest = trace.iter().filter(|s| s.arrival <= f.at).map(|s| s.send).max().unwrap();
            // Held: the newest itself. Extrapolated (or held at the horizon): along a pair
            // that ends at the newest.
            let last = f.to.unwrap_or_else(|| f.from.unwrap());
            prop_assert_eq!(trace[last as usize].send, newest);
        }
    }

    /// The metrics-only path (sweeps) gives exactly the metrics of the per-frame path.
    #[test]
    fn metrics_only_replay_equals_the_frame_by_frame_replay(trace in arb_trace(), (policy, _) in arb_policy()) {
        let (_, with_frames) = run(&trace, &policy);
        let fast = Replay::new(FrameClock::Fps(60.0)).clock(ClockMapping::Fixed(Nanos::ZERO)).metrics(&Prepared::new(&Stream::new(&trace)), &policy)
        .unwrap();
        prop_assert_eq!(fast.summary(), with_frames.summary());
    }

    /// A sweep's frame plan (frame times and clock offsets computed once for many policies)
    /// gives exactly the metrics of a replay that computes them itself, for every frame clock
    /// and clock mapping, and when the plan is too short for the policy (it then falls back).
    #[test]
    fn planned_replay_equals_the_metrics_replay(
        trace in arb_trace(),
        (policy, _) in arb_policy(),
        frames in arb_frames(),
        clock in prop_oneof![
            Just(ClockMapping::Estimated),
            Just(ClockMapping::Hindsight),
            (-100i64..100).prop_map(|ms| ClockMapping::Fixed(Nanos::from_millis(ms))),
        ],
        plan_delay in prop_oneof![Just(None), (0i64..3000).prop_map(Some)],
    ) {
        let prepared = Prepared::new(&Stream::new(&trace));
        // The plan covers the policy's delay (or more), or a random delay that may be shorter.
        let max_delay = plan_delay.map_or(policy.max_delay(), Nanos::from_millis);
        let plan = Replay::new(frames.clone()).clock(clock).plan(&prepared, max_delay).unwrap();
        let planned = plan.metrics(&prepared, &policy).unwrap();
        let live = Replay::new(frames.clone()).clock(clock).metrics(&prepared, &policy).unwrap();
        prop_assert_eq!(planned.summary(), live.summary());
    }

    /// Policies replayed side by side in one pass (the sweep's batches) get exactly what each
    /// gets alone, whatever their mix of engines and delays.
    #[test]
    fn batched_replays_equal_single_ones(
        trace in arb_trace(),
        policies in proptest::collection::vec(arb_policy(), 1..6),
        frames in arb_frames(),
        plan_delay in 0i64..400,
    ) {
        let prepared = Prepared::new(&Stream::new(&trace));
        let policies: Vec<Policy> = policies.into_iter().map(|(p, _)| p).collect();
        // A plan that may not reach every policy's delay: those replay without it.
        let plan = Replay::new(frames.clone()).clock(ClockMapping::Estimated).plan(&prepared, Nanos::from_millis(plan_delay)).unwrap();
        let batch = plan.batch(&prepared, &policies).unwrap();
        prop_assert_eq!(batch.len(), policies.len());
        for (policy, m) in policies.iter().zip(&batch) {
            let alone = plan.metrics(&prepared, policy).unwrap();
            prop_assert_eq!(m.summary(), alone.summary(), "{}", policy);
        }
    }

    /// C5, C12: the duplicates a replay counts are exactly the packets, in arrival order, whose
    /// tick had already arrived (a naive oracle over the packets the replay offered).
    #[test]
    fn duplicates_are_the_ticks_already_received(trace in arb_trace(), (policy, _) in arb_policy()) {
        prop_assume!(policy.on_snapshot_buffer());
        let (_, m) = run(&trace, &policy);
        let offered = &trace[..m.packets as usize];
        let oracle = offered
            .iter()
            .enumerate()
            .filter(|(i, s)| offered[..*i].iter().any(|e| e.seq == s.seq))
            .count();
        prop_assert_eq!(m.counters.duplicates, oracle as u64);
    }

    /// The same input gives the same output, frame for frame.
    #[test]
    fn replay_is_deterministic(trace in arb_trace(), (policy, _) in arb_policy()) {
        let (a, ma) = run(&trace, &policy);
        let (b, mb) = run(&trace, &policy);
        prop_assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            prop_assert_eq!((x.mode, x.target, &x.value), (y.mode, y.target, &y.value));
        }
        prop_assert_eq!(ma.summary(), mb.summary());
    }
}

/// A trace's streams and ground truth in one file order: each stream's received samples
/// (stream 1 a copy of stream 0, `lag_ms` later), and, when `truth`, stream 0's sent samples
/// at their send time, ahead of the receptions at the same instant (as `synth` writes them).
fn file_order(trace: &[Sample], two: bool, lag_ms: i64, truth: bool) -> Vec<(Sample, bool)> {
    let mut records: Vec<(Nanos, u8, Sample, bool)> = trace
        .iter()
        .map(|s| (s.arrival, 1, s.clone(), false))
        .collect();
    if two {
        records.extend(trace.iter().map(|s| {
            let mut c = s.clone();
            c.stream = 1;
            c.arrival += Nanos::from_millis(lag_ms);
            c.values = vec![s.values[0] * 2.0, -1.0].into();
            (c.arrival, 1, c, false)
        }));
    }
    if truth {
        let ticks = trace.iter().map(|s| s.seq).max().unwrap_or(0);
        records.extend((0..=ticks).map(|i| {
            let send = Nanos::from_millis(i * 50);
            let s = Sample::new(0, i, send, send).with_values(vec![i as f64 + 0.25]);
            (send, 0, s, true)
        }));
    }
    records.sort_by_key(|r| (r.0, r.1));
    records.into_iter().map(|(_, _, s, t)| (s, t)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// One streaming pass over a trace's records in file order (several streams, ground
    /// truth or not, any clock mapping (`hindsight` after a first pass), any horizon, the window trimmed and what waits measured at every sample,
    /// every 7 or every 1,024) gives every stream's metrics exactly as the in-memory replay
    /// of that stream does, bit for bit; or, when the horizon is too short for the trace, says
    /// so instead of giving other figures.
    #[test]
    fn streaming_replay_equals_the_in_memory_replay(
        trace in arb_trace(),
        policies in proptest::collection::vec(arb_policy(), 1..5),
        frames in arb_frames(),
        clock in prop_oneof![
            Just(ClockMapping::Estimated),
            Just(ClockMapping::Hindsight),
            (-100i64..100).prop_map(|ms| ClockMapping::Fixed(Nanos::from_millis(ms))),
        ],
        two in any::<bool>(),
        lag_ms in 0i64..500,
        truth in any::<bool>(),
        horizon_ms in prop_oneof![Just(2000i64), 0i64..400],
        trim_every in prop_oneof![Just(1u64), Just(7), Just(1024)],
    ) {
        let policies: Vec<Policy> = policies.into_iter().map(|(p, _)| p).collect();
        let records = file_order(&trace, two, lag_ms, truth);
        // The hindsight mapping in two passes: each stream's offset first.
        let pass = if clock == ClockMapping::Hindsight {
            let mut offsets = jitterlab_replay::HindsightOffsets::new();
            for (sample, truth) in &records {
                if !truth {
                    offsets.push(sample);
                }
            }
            jitterlab_replay::StreamingReplay::with_hindsight(&frames, &offsets, &policies)
        } else {
            jitterlab_replay::StreamingReplay::new(&frames, clock, &policies)
        };
        let pass = pass
            .unwrap()
            .horizon(Nanos::from_millis(horizon_ms))
            .trim_every(trim_every)
            .needs(usize::MAX);
        // The first stream's frames logged (and handed out as the pass goes, at every
        // `trim_every`-th record).
        let logged_id = records.first().map_or(0, |r| r.0.stream);
        let mut pass = pass.log_frames(logged_id, true);
        let mut logged: Vec<Vec<jitterlab_replay::LoggedFrame>> = vec![Vec::new(); policies.len()];
        for (k, (s, t)) in records.iter().cloned().enumerate() {
            pass.push(s, t, None);
            if (k as u64).is_multiple_of(trim_every) {
                pass.drain_frames(|i, f| logged[i].push(f));
            }
        }
        let streamed = match pass.finish() {
            Ok(streamed) => streamed,
            // Only a short horizon may give up.
            Err(e) => {
                prop_assert!(horizon_ms < 2000, "{e}");
                return Ok(());
            }
        };
        let mut ids: Vec<u32> = records.iter().map(|(r, _)| r.stream).collect();
        ids.dedup();
        ids.sort_unstable();
        ids.dedup();
        prop_assert_eq!(streamed.len(), ids.len());
        for s in &streamed {
            let samples: Vec<Sample> = records
                .iter()
                .filter(|(r, t)| !t && r.stream == s.stream)
                .map(|(r, _)| r.clone())
                .collect();
            let sent: Vec<Sample> = records
                .iter()
                .filter(|(r, t)| *t && r.stream == s.stream)
                .map(|(r, _)| r.clone())
                .collect();
            prop_assert_eq!(s.packets, samples.len() as u64);
            let prepared = Prepared::new(&Stream::new(&samples).with_truth(&sent));
            // The needs the bounds are computed from, frame for frame.
            let Some(jitterlab_replay::sweep::StreamNeeds::Listed(needs)) = s.needs.clone() else {
                panic!("the needs of stream {} are not listed", s.stream);
            };
            let trace = jitterlab_replay::sweep::SweepTrace {
                name: String::new(),
                streams: vec![prepared.clone()],
            };
            let bounds = jitterlab_replay::sweep::snapshot_bound(&trace, &frames, clock).unwrap();
            prop_assert_eq!(
                format!("{:?}", jitterlab_replay::sweep::Bounds::of(&[needs])),
                format!("{bounds:?}")
            );
            for (k, (policy, m)) in policies.iter().zip(&s.metrics).enumerate() {
                let replay = Replay::new(frames.clone()).clock(clock);
                // The sweep's path and `replay`'s frame-by-frame one. Debug prints every
                // float exactly (and tells −0 and NaN apart).
                let fast = replay.metrics(&prepared, policy).unwrap();
                let mut want = Vec::new();
                let framed = replay
                    .frames(&prepared, policy, |f| {
                        want.push(jitterlab_replay::LoggedFrame {
                            at: f.at,
                            target: f.target,
                            mode: f.mode,
                            hold: f.hold,
                            alpha: f.alpha,
                            from: f.from,
                            to: f.to,
                            value: f.value.to_vec(),
                            state: f.state,
                            shown: f.shown,
                            delay: f.delay,
                            depth: f.depth,
                            buffer_delay: f.buffer_delay,
                            frozen: f.frozen,
                            ahead: f.ahead,
                            error: f.error,
                            startup: f.startup,
                        });
                    })
                    .unwrap();
                if s.stream == logged_id {
                    // The frames logged in the pass are those rendered in memory, frame for
                    // frame, startup frames, shown values and error included.
                    let mut got = logged[k].clone();
                    got.extend(s.logged.get(k).into_iter().flatten().cloned());
                    prop_assert_eq!(
                        format!("{got:?}"),
                        format!("{want:?}"),
                        "stream {} {}", s.stream, policy
                    );
                } else {
                    prop_assert!(s.logged.is_empty());
                }
                for alone in [fast, framed] {
                    prop_assert_eq!(
                        format!("{:?}", m.summary()),
                        format!("{:?}", alone.summary()),
                        "stream {} {}", s.stream, policy
                    );
                }
            }
        }
    }
}
