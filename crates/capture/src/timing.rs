//! Arrival timing of a flow that carries no sequence numbers or send times (or of any
//! stream): rate, inter-arrival percentiles and gaps. What `info` shows for a plain UDP flow.

use crate::time::Nanos;

/// A gap is an inter-arrival time longer than this many median intervals.
pub const GAP_MEDIANS: f64 = 3.0;

/// Inter-arrival times, ms, in the order packets were captured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Intervals {
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Longest.
    pub max_ms: f64,
}

/// What the arrivals of one flow or stream say.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timing {
    /// Packets.
    pub packets: u64,
    /// First to last arrival, seconds.
    pub duration_s: f64,
    /// Packets per second over that span (0 for fewer than two packets).
    pub rate_pps: f64,
    /// Inter-arrival times (`None` for fewer than two packets).
    pub intervals: Option<Intervals>,
    /// Inter-arrival times longer than [`GAP_MEDIANS`] median intervals.
    pub gaps: u64,
    /// The longest of them, ms (0 when there is none).
    pub longest_gap_ms: f64,
}

/// The `q` quantile (0..=1) of sorted values: the value at rank ⌊q·n⌋ (0-based, the last one
/// for `q = 1`), the nearest-rank definition the team's tshark reference tables
/// (`*.tshark.txt`) were computed with.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n => sorted[((q.clamp(0.0, 1.0) * n as f64) as usize).min(n - 1)],
    }
}

/// The timing of packets arriving at `arrivals`, in capture order.
pub fn timing(arrivals: impl IntoIterator<Item = Nanos>) -> Timing {
    let mut packets = 0u64;
    let (mut first, mut last) = (Nanos::MAX, Nanos::MIN);
    let mut prev: Option<Nanos> = None;
    let mut gaps: Vec<f64> = Vec::new();
    for at in arrivals {
        packets += 1;
        first = first.min(at);
        last = last.max(at);
        if let Some(p) = prev {
            gaps.push((at.0 - p.0) as f64 / 1e6);
        }
        prev = Some(at);
    }
    let duration_s = if packets >= 2 {
        (last.0 - first.0) as f64 / 1e9
    } else {
        0.0
    };
    let mut t = Timing {
        packets,
        duration_s,
        rate_pps: if duration_s > 0.0 {
            packets as f64 / duration_s
        } else {
            0.0
        },
        ..Timing::default()
    };
    if gaps.is_empty() {
        return t;
    }
    let n = gaps.len();
    let mean_ms = gaps.iter().sum::<f64>() / n as f64;
    // Each quantile by selection, not a sort: the ranks ascend, so each search runs on the
    // part above the last (O(n) each, where a sort of a million intervals would dominate).
    let rank = |q: f64| ((q * n as f64) as usize).min(n - 1);
    let mut at = |r: usize, from: usize| -> f64 {
        let (_, v, _) = gaps[from..].select_nth_unstable_by(r - from, f64::total_cmp);
        *v
    };
    let (r50, r95, r99) = (rank(0.5), rank(0.95), rank(0.99));
    let p50_ms = at(r50, 0);
    let p95_ms = at(r95, r50);
    let p99_ms = at(r99, r95);
    let max_ms = gaps[r99..]
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    t.intervals = Some(Intervals {
        mean_ms,
        p50_ms,
        p95_ms,
        p99_ms,
        max_ms,
    });
    let threshold = GAP_MEDIANS * p50_ms;
    for &g in gaps.iter().filter(|&&g| g > threshold) {
        t.gaps += 1;
        t.longest_gap_ms = t.longest_gap_ms.max(g);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_take_the_nearest_rank_above() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 0.74), 3.0);
        assert_eq!(quantile(&v, 0.75), 4.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn a_tick_with_one_stall_has_one_gap() {
        // 20 ms ticks, one 100 ms stall between packets 50 and 51.
        let mut at = Vec::new();
        let mut t = 0;
        for i in 0..101 {
            at.push(Nanos::from_millis(t));
            t += if i == 50 { 100 } else { 20 };
        }
        let timing = timing(at);
        assert_eq!(timing.packets, 101);
        let iv = timing.intervals.unwrap();
        assert_eq!(iv.p50_ms, 20.0);
        assert_eq!(iv.max_ms, 100.0);
        assert_eq!((timing.gaps, timing.longest_gap_ms), (1, 100.0));
        assert!((timing.duration_s - 2.08).abs() < 1e-9);
        assert!((timing.rate_pps - 101.0 / 2.08).abs() < 1e-9);
    }

    #[test]
    fn selection_gives_the_quantiles_a_sort_gives() {
        let mut rng = crate::rng::Rng::new(5);
        let mut t = 0i64;
        let at: Vec<Nanos> = (0..1001)
            .map(|_| {
                t += (rng.exponential(20.0) * 1e6) as i64;
                Nanos(t)
            })
            .collect();
        let mut sorted: Vec<f64> = at
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) as f64 / 1e6)
            .collect();
        sorted.sort_unstable_by(f64::total_cmp);
        let iv = timing(at).intervals.unwrap();
        assert_eq!(iv.p50_ms, quantile(&sorted, 0.5));
        assert_eq!(iv.p95_ms, quantile(&sorted, 0.95));
        assert_eq!(iv.p99_ms, quantile(&sorted, 0.99));
        assert_eq!(iv.max_ms, sorted[999]);
    }

    #[test]
    fn one_packet_has_no_intervals() {
        let t = timing([Nanos::from_millis(5)]);
        assert_eq!((t.packets, t.rate_pps, t.intervals), (1, 0.0, None));
    }
}
