//! Statistical checks of the synthetic network model on long seeded runs: what the trace
//! shows matches the parameters the model was given.

use std::collections::{BTreeMap, BTreeSet};

use jitterlab_capture::decode::probe::Probe;
use jitterlab_capture::synth::{Config, Motion, generate};
use jitterlab_capture::{Nanos, Record, RecordKind};

struct Run {
    /// tick → (local send time, sender send time)
    sent: BTreeMap<u64, (Nanos, Nanos)>,
    /// (tick, arrival) per received copy, in file order.
    received: Vec<(u64, Nanos)>,
}

fn run(rate_hz: f64, secs: i64, model: &str, seed: u64) -> Run {
    let config = Config {
        rate_hz,
        duration: Nanos::from_secs(secs),
        seed,
        motion: Motion::Circle,
        model: model.parse().unwrap(),
        profile: None,
    };
    let (_, records) = generate(&config).unwrap();
    let mut out = Run {
        sent: BTreeMap::new(),
        received: Vec::new(),
    };
    for Record {
        time,
        kind,
        payload,
        ..
    } in records
    {
        let p = Probe::parse(&payload).unwrap();
        if kind == RecordKind::Sent {
            out.sent.insert(p.tick, (time, p.send));
        } else {
            out.received.push((p.tick, time));
        }
    }
    out
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn within(got: f64, want: f64, rel: f64, what: &str) {
    assert!(
        (got - want).abs() <= rel * want.abs(),
        "{what}: got {got}, want {want} ±{}%",
        rel * 100.0
    );
}

#[test]
fn loss_rate_and_mean_burst_length_match_the_parameters() {
    let r = run(1000.0, 300, "delay=10ms,loss=5%,burst=4", 11);
    let got: BTreeSet<u64> = r.received.iter().map(|(t, _)| *t).collect();
    let lost: Vec<u64> = r
        .sent
        .keys()
        .copied()
        .filter(|t| !got.contains(t))
        .collect();
    let rate = lost.len() as f64 / r.sent.len() as f64;
    let mut bursts = Vec::new();
    let mut run_len = 0u64;
    let mut prev = None;
    for &t in &lost {
        if prev == Some(t - 1) {
            run_len += 1;
        } else {
            if run_len > 0 {
                bursts.push(run_len);
            }
            run_len = 1;
        }
        prev = Some(t);
    }
    bursts.push(run_len);
    let mean_burst = bursts.iter().sum::<u64>() as f64 / bursts.len() as f64;
    within(rate, 0.05, 0.05, "loss rate");
    within(mean_burst, 4.0, 0.05, "mean burst length");
}

#[test]
fn independent_loss_has_geometric_bursts() {
    let r = run(1000.0, 300, "delay=10ms,loss=10%", 12);
    let got: BTreeSet<u64> = r.received.iter().map(|(t, _)| *t).collect();
    let lost = r.sent.keys().filter(|t| !got.contains(t)).count() as f64;
    within(lost / r.sent.len() as f64, 0.10, 0.05, "loss rate");
}

fn variable_delays(model: &str, base_ms: f64, seed: u64) -> Vec<f64> {
    let r = run(1000.0, 200, model, seed);
    let mut d: Vec<f64> = r
        .received
        .iter()
        .map(|(t, a)| (*a - r.sent[t].0).as_millis_f64() - base_ms)
        .collect();
    d.sort_by(f64::total_cmp);
    d
}

#[test]
fn exponential_delay_quantiles_match() {
    let d = variable_delays("delay=20ms,jitter=10ms,dist=exp", 20.0, 13);
    for q in [0.5, 0.9, 0.99] {
        within(
            quantile(&d, q),
            -10.0 * (1.0f64 - q).ln(),
            0.03,
            &format!("exp p{q}"),
        );
    }
}

#[test]
fn normal_delay_quantiles_match() {
    let d = variable_delays("delay=100ms,jitter=10ms,dist=normal", 100.0, 14);
    within(quantile(&d, 0.8413), 10.0, 0.03, "normal +1σ");
    within(quantile(&d, 0.9772), 20.0, 0.03, "normal +2σ");
    assert!(
        quantile(&d, 0.5).abs() < 0.2,
        "normal median {}",
        quantile(&d, 0.5)
    );
}

#[test]
fn pareto_delay_quantiles_match() {
    // Mean 10 ms, shape 2.5: scale 6 ms; q-quantile = 6·(1−q)^(−1/2.5).
    let d = variable_delays("delay=5ms,jitter=10ms,dist=pareto,alpha=2.5", 5.0, 15);
    for q in [0.5, 0.9, 0.99] {
        within(
            quantile(&d, q),
            6.0 * (1.0f64 - q).powf(-1.0 / 2.5),
            0.03,
            &format!("pareto p{q}"),
        );
    }
}

#[test]
fn drift_measured_from_the_trace_matches_within_5_ppm() {
    // A receiver can only see send (sender clock) − arrival (local clock); its lower envelope
    // rises at the drift rate.
    let r = run(
        100.0,
        600,
        "delay=30ms,jitter=5ms,offset=5s,drift=200ppm",
        16,
    );
    let mut windows: BTreeMap<i64, f64> = BTreeMap::new();
    for (tick, arrival) in &r.received {
        let w = arrival.as_nanos() / 10_000_000_000;
        let v = (r.sent[tick].1 - *arrival).as_secs_f64();
        windows.entry(w).and_modify(|m| *m = m.max(v)).or_insert(v);
    }
    let pts: Vec<(f64, f64)> = windows
        .iter()
        .map(|(w, v)| (*w as f64 * 10.0 + 5.0, *v))
        .collect();
    let n = pts.len() as f64;
    let (sx, sy) = pts.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let slope = pts.iter().map(|(x, y)| (x - mx) * (y - my)).sum::<f64>()
        / pts.iter().map(|(x, _)| (x - mx).powi(2)).sum::<f64>();
    let ppm = slope * 1e6;
    assert!((ppm - 200.0).abs() < 5.0, "measured drift {ppm} ppm");
}

#[test]
fn a_receiver_pause_delivers_what_arrived_during_it_in_one_burst() {
    let model = "delay=30ms,jitter=5ms";
    let plain = run(50.0, 40, model, 17);
    let paused = run(50.0, 40, &format!("{model},pause=3s@20s"), 17);
    let (from, to) = (Nanos::from_secs(20), Nanos::from_secs(23));
    let during = plain
        .received
        .iter()
        .filter(|(_, a)| *a >= from && *a < to)
        .count();
    assert!(
        (140..=160).contains(&during),
        "{during} arrivals in 3 s at 50 Hz"
    );
    assert!(
        paused.received.iter().all(|(_, a)| *a < from || *a >= to),
        "nothing arrives while paused"
    );
    let burst = paused
        .received
        .iter()
        .filter(|(_, a)| *a >= to && *a < to + Nanos::from_millis(4))
        .count();
    assert_eq!(
        burst, during,
        "everything that arrived during the pause is read at its end"
    );
    assert_eq!(plain.received.len(), paused.received.len());
}

#[test]
fn a_route_change_steps_the_base_delay() {
    let r = run(100.0, 20, "delay=20ms,jitter=1ms,route=+30ms@10s", 18);
    let min_delay = |lo: i64, hi: i64| {
        r.received
            .iter()
            .filter(|(t, _)| (lo * 100..hi * 100).contains(&(*t as i64)))
            .map(|(t, a)| (*a - r.sent[t].0).as_millis_f64())
            .fold(f64::INFINITY, f64::min)
    };
    within(min_delay(0, 10), 20.0, 0.01, "before");
    within(min_delay(10, 20), 50.0, 0.01, "after");
}

#[test]
fn duplicates_and_reordering_follow_their_probabilities() {
    // Constant delay, so every reordering comes from the explicit hold-back.
    let r = run(
        1000.0,
        200,
        "delay=10ms,duplicate=2%,reorder=3%,reorder_delay=20ms",
        19,
    );
    let mut copies: BTreeMap<u64, u32> = BTreeMap::new();
    for (t, _) in &r.received {
        *copies.entry(*t).or_default() += 1;
    }
    let dups = copies.values().filter(|&&n| n == 2).count() as f64;
    within(dups / r.sent.len() as f64, 0.02, 0.07, "duplicate share");
    // A held-back packet arrives after its successor: count ticks received after a higher one.
    let mut highest = 0;
    let mut late = 0usize;
    let mut seen = BTreeSet::new();
    for (t, _) in &r.received {
        if seen.insert(*t) && *t < highest {
            late += 1;
        }
        highest = highest.max(*t);
    }
    within(
        late as f64 / r.sent.len() as f64,
        0.03,
        0.07,
        "reordered share",
    );
}
