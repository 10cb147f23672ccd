//! Synthetic periodic senders with known period, drift and slots, through loss, bursty loss,
//! light and heavy-tailed jitter, reordering, duplicates and stalls.

use super::*;
use crate::rng::Rng;

/// How each packet's delay beyond the base is drawn, ms.
#[derive(Clone, Copy, Debug)]
enum Jitter {
    Exp(f64),
    /// Pareto of this mean and shape.
    Pareto(f64, f64),
    /// |normal| of this standard deviation.
    HalfNormal(f64),
}

#[derive(Clone, Debug)]
struct Sender {
    period_ms: f64,
    drift_ppm: f64,
    count: i64,
    jitter: Jitter,
    /// Loss rate and mean burst length (1: independent).
    loss: f64,
    burst: f64,
    /// Share of packets held back by 1.2–2.5 periods (overtaken).
    reorder: f64,
    /// Share of packets delivered twice, the copy within 1 ms.
    duplicate: f64,
    /// Every `.0` ms, a stall of `.1` ms: what is sent in it arrives together at its end.
    stall: Option<(f64, f64)>,
}

impl Sender {
    fn new(period_ms: f64) -> Self {
        Self {
            period_ms,
            drift_ppm: 0.0,
            count: 3000,
            jitter: Jitter::Exp(2.0),
            loss: 0.0,
            burst: 1.0,
            reorder: 0.0,
            duplicate: 0.0,
            stall: None,
        }
    }

    /// The receiver's view of the sender's period, ns.
    fn observed_ns(&self) -> f64 {
        self.period_ms * 1e6 / (1.0 + self.drift_ppm * 1e-6)
    }
}

/// What was received: arrivals in arrival order, each with its true slot and the delay
/// beyond the base (ms).
struct Flow {
    arrivals: Vec<Nanos>,
    slots: Vec<i64>,
    extra_ms: Vec<f64>,
}

fn pareto(rng: &mut Rng, mean: f64, alpha: f64) -> f64 {
    let xm = mean * (alpha - 1.0) / alpha;
    xm / (1.0 - rng.uniform()).powf(1.0 / alpha) - xm
}

fn send(s: &Sender, seed: u64) -> Flow {
    let mut rng = Rng::new(seed);
    let p = s.observed_ns();
    let offset = 1_234_567_890.0;
    let mut bad = false;
    let (to_good, to_bad) = (1.0 / s.burst, s.loss / s.burst / (1.0 - s.loss));
    let mut got: Vec<(f64, i64, f64)> = Vec::new();
    for k in 0..s.count {
        bad = if bad {
            !rng.chance(to_good)
        } else {
            rng.chance(to_bad)
        };
        let extra = match s.jitter {
            Jitter::Exp(m) => rng.exponential(m),
            Jitter::Pareto(m, a) => pareto(&mut rng, m, a),
            Jitter::HalfNormal(sd) => (sd * rng.normal()).abs(),
        };
        let held = if rng.chance(s.reorder) {
            p / 1e6 * (1.2 + 1.3 * rng.uniform())
        } else {
            0.0
        };
        let dup = rng.chance(s.duplicate);
        if bad {
            continue;
        }
        let sent = offset + k as f64 * p;
        let mut arrival = sent + 5e6 + (extra + held) * 1e6;
        if let Some((every, len)) = s.stall {
            let into = (arrival / 1e6) % every;
            if into < len {
                // Released at the stall's end, in order, 20 µs apart.
                arrival += (len - into) * 1e6 + 20e3 * (into / (p / 1e6));
            }
        }
        let extra = (arrival - sent) / 1e6 - 5.0;
        got.push((arrival, k, extra));
        if dup {
            got.push((arrival + 1e6 * rng.uniform(), k, extra));
        }
    }
    got.sort_by(|a, b| a.0.total_cmp(&b.0));
    Flow {
        arrivals: got.iter().map(|g| Nanos(g.0.round() as i64)).collect(),
        slots: got.iter().map(|g| g.1).collect(),
        extra_ms: got.iter().map(|g| g.2).collect(),
    }
}

/// Assigned slots for `flow`, in its arrival order.
fn slots_of(flow: &Flow) -> (Estimate, Vec<i64>) {
    let mut samples: Vec<Sample> = flow
        .arrivals
        .iter()
        .map(|&a| Sample::new(0, -1, Nanos::ZERO, a))
        .collect();
    let est = assign(&mut samples).expect("a periodic flow has a period");
    for (s, &a) in samples.iter().zip(&flow.arrivals) {
        assert_eq!(s.arrival, a, "arrival untouched");
        assert_eq!(
            s.send,
            Nanos((s.seq as f64 * est.period_ns).round() as i64),
            "send = slot × period"
        );
    }
    (est, samples.iter().map(|s| s.seq).collect())
}

/// Share of the packets whose extra delay is below half a period that got their true slot
/// (up to the numbering's origin, which is the most common difference).
fn recovered(flow: &Flow, slots: &[i64], period_ms: f64) -> f64 {
    let diffs: Vec<i64> = slots.iter().zip(&flow.slots).map(|(a, b)| a - b).collect();
    let mut sorted = diffs.clone();
    sorted.sort_unstable();
    let origin = sorted[sorted.len() / 2];
    let eligible: Vec<usize> = (0..slots.len())
        .filter(|&i| flow.extra_ms[i] < period_ms / 2.0)
        .collect();
    let right = eligible.iter().filter(|&&i| diffs[i] == origin).count();
    right as f64 / eligible.len() as f64
}

/// Checks period, drift and slots; returns the estimate.
fn check(s: &Sender, seed: u64, min_share: f64) -> Estimate {
    let flow = send(s, seed);
    let (est, slots) = slots_of(&flow);
    let want = s.observed_ns();
    let period_ppm = (est.period_ns / want - 1.0).abs() * 1e6;
    assert!(
        period_ppm < 5.0,
        "{s:?}: period {} vs {want} ({period_ppm:.1} ppm)",
        est.period_ns
    );
    assert!(
        (est.drift_ppm - s.drift_ppm).abs() < 5.0,
        "{s:?}: drift {} vs {}",
        est.drift_ppm,
        s.drift_ppm
    );
    let share = recovered(&flow, &slots, s.period_ms);
    assert!(
        share >= min_share,
        "{s:?}: {:.2} % of slots right, {est:?}",
        100.0 * share
    );
    est
}

const PERIODS: [f64; 4] = [1000.0 / 60.0, 1000.0 / 30.0, 50.0, 15.625];

#[test]
fn period_drift_and_slots_through_ten_percent_loss() {
    for (i, &period_ms) in PERIODS.iter().enumerate() {
        for drift_ppm in [-100.0, 0.0, 100.0] {
            let s = Sender {
                drift_ppm,
                loss: 0.1,
                ..Sender::new(period_ms)
            };
            let est = check(&s, 10 + i as u64, 0.99);
            let nominal = est.nominal_period_ns.expect("a whole number of hertz");
            assert!((nominal / (period_ms * 1e6) - 1.0).abs() < 1e-12, "{s:?}");
            // 10 % of 3000 slots lost, give or take the draw.
            assert!((200..400).contains(&est.missing), "{est:?}");
            assert_eq!(est.duplicates, 0, "{est:?}");
        }
    }
}

#[test]
fn bursty_loss_leaves_its_slots_empty() {
    for (i, &period_ms) in PERIODS.iter().enumerate() {
        let s = Sender {
            loss: 0.1,
            burst: 5.0,
            drift_ppm: 100.0,
            ..Sender::new(period_ms)
        };
        let est = check(&s, 20 + i as u64, 0.99);
        assert!((150..450).contains(&est.missing), "{est:?}");
    }
}

#[test]
fn heavy_tailed_and_wide_jitter() {
    for (i, &period_ms) in PERIODS.iter().enumerate() {
        let pareto = Sender {
            jitter: Jitter::Pareto(3.0, 1.5),
            loss: 0.02,
            drift_ppm: -100.0,
            ..Sender::new(period_ms)
        };
        check(&pareto, 30 + i as u64, 0.99);
        // Exponential with a mean a fifth of the period: delays beyond half a period are common.
        let wide = Sender {
            jitter: Jitter::Exp(period_ms / 5.0),
            loss: 0.05,
            ..Sender::new(period_ms)
        };
        check(&wide, 40 + i as u64, 0.99);
        let normal = Sender {
            jitter: Jitter::HalfNormal(period_ms / 8.0),
            ..Sender::new(period_ms)
        };
        check(&normal, 45 + i as u64, 0.99);
    }
}

#[test]
fn overtaken_packets_are_put_back_in_their_slots() {
    for (i, &period_ms) in PERIODS.iter().enumerate() {
        let s = Sender {
            reorder: 0.02,
            loss: 0.02,
            jitter: Jitter::Exp(1.0),
            ..Sender::new(period_ms)
        };
        let est = check(&s, 50 + i as u64, 0.99);
        assert!(est.reordered > 20, "{est:?}");
    }
}

#[test]
fn a_burst_after_a_stall_is_spread_over_its_slots() {
    for (i, &period_ms) in PERIODS.iter().enumerate() {
        // Every 5 s the receiver stalls for 300 ms and reads the backlog at once.
        let s = Sender {
            stall: Some((5000.0, 300.0)),
            jitter: Jitter::Exp(1.0),
            ..Sender::new(period_ms)
        };
        let flow = send(&s, 60 + i as u64);
        let (est, slots) = slots_of(&flow);
        // Every packet, the stalled ones included, in its own true slot.
        let share = recovered(
            &Flow {
                extra_ms: vec![0.0; flow.arrivals.len()],
                ..flow
            },
            &slots,
            s.period_ms,
        );
        assert!(share >= 0.99, "{:.2} %, {est:?}", 100.0 * share);
        assert_eq!(est.duplicates, 0, "{est:?}");
        assert!(est.bursts >= 5, "{est:?}");
    }
}

#[test]
fn duplicates_share_a_slot_and_push_nothing() {
    for (i, &period_ms) in PERIODS.iter().enumerate() {
        let s = Sender {
            duplicate: 0.005,
            loss: 0.005,
            ..Sender::new(period_ms)
        };
        let flow = send(&s, 70 + i as u64);
        let true_dups = flow.slots.len() - {
            let mut k = flow.slots.clone();
            k.sort_unstable();
            k.dedup();
            k.len()
        };
        let est = check(&s, 70 + i as u64, 0.99);
        assert!(true_dups > 5, "the draw has duplicates");
        assert!(
            est.duplicates.abs_diff(true_dups) <= 2,
            "{} vs {true_dups}: {est:?}",
            est.duplicates
        );
    }
}

#[test]
fn no_two_packets_share_a_slot_without_a_duplicate() {
    let s = Sender {
        loss: 0.05,
        burst: 3.0,
        jitter: Jitter::Pareto(10.0, 1.5),
        reorder: 0.01,
        stall: Some((3000.0, 200.0)),
        ..Sender::new(50.0)
    };
    let flow = send(&s, 80);
    let (est, mut slots) = slots_of(&flow);
    slots.sort_unstable();
    let before = slots.len();
    slots.dedup();
    assert_eq!(before - slots.len(), est.duplicates);
    assert_eq!(est.duplicates, 0, "{est:?}");
}

#[test]
fn random_arrivals_have_no_period() {
    let mut rng = Rng::new(90);
    // Poisson at 30 packets/s.
    let mut t = 0.0;
    let poisson: Vec<Nanos> = (0..5000)
        .map(|_| {
            t += rng.exponential(1e9 / 30.0);
            Nanos(t as i64)
        })
        .collect();
    assert_eq!(estimate(&poisson), None);
    // Bursts of 1–10 packets 0.5 ms apart, Poisson between bursts.
    let mut bursty = Vec::new();
    let mut t = 0.0;
    while bursty.len() < 5000 {
        t += rng.exponential(2e8);
        for j in 0..1 + (rng.uniform() * 10.0) as i64 {
            bursty.push(Nanos(t as i64 + j * 500_000));
        }
    }
    assert_eq!(estimate(&bursty), None);
    // Too few packets, however regular.
    let few: Vec<Nanos> = (0..MIN_PACKETS as i64 - 1)
        .map(|k| Nanos::from_millis(50 * k))
        .collect();
    assert_eq!(estimate(&few), None);
    assert_eq!(estimate(&[]), None);
    let same = vec![Nanos::from_millis(5); 100];
    assert_eq!(estimate(&same), None);
}

#[test]
fn assign_leaves_samples_alone_without_a_period() {
    let mut samples: Vec<Sample> = (0..100)
        .map(|i| Sample::new(0, i, Nanos(i * 7), Nanos((i * i * 7919) % 100_003)))
        .collect();
    let before = samples.clone();
    assert!(assign(&mut samples).is_none());
    assert_eq!(samples, before);
}

#[test]
fn arrivals_out_of_capture_order_are_sorted_first() {
    let s = Sender {
        loss: 0.05,
        ..Sender::new(50.0)
    };
    let flow = send(&s, 95);
    let mut samples: Vec<Sample> = flow
        .arrivals
        .iter()
        .map(|&a| Sample::new(0, -1, Nanos::ZERO, a))
        .collect();
    // Swap a few neighbours, as a capture's clock may.
    for i in (10..samples.len() - 1).step_by(97) {
        samples.swap(i, i + 1);
    }
    let est = assign(&mut samples).unwrap();
    let mut by_arrival: Vec<&Sample> = samples.iter().collect();
    by_arrival.sort_by_key(|s| s.arrival);
    let slots: Vec<i64> = by_arrival.iter().map(|s| s.seq).collect();
    assert!(recovered(&flow, &slots, 50.0) >= 0.99, "{est:?}");
    assert_eq!(slots.iter().min(), Some(&0), "slots count from 0");
}

#[test]
fn nominal_periods_are_whole_hertz_or_milliseconds() {
    assert_eq!(nominal_period(1e9 / 60.0 * (1.0 + 2e-4)), Some(1e9 / 60.0));
    assert_eq!(nominal_period(15.625e6), Some(15.625e6));
    assert_eq!(nominal_period(7e6 * 1.0003), Some(7e6));
    assert_eq!(nominal_period(1e9 / 60.0 * 1.01), None);
}
