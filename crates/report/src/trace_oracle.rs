//! The report's first figures as they were drawn from a whole stream in memory, before
//! [`crate::trace`] drew them in passes: the oracle its tests compare against.

use std::collections::BTreeSet;

use jitterlab_capture::decode::Decoded;
use jitterlab_capture::stats::Jitter;
use jitterlab_replay::playout::{first_arrivals, frame_slots};

use crate::figure::{Figure, Panel, Series, Style};

/// Network: one-way delay variation per packet (arrival − send, minimum removed) with lost
/// packets marked, and RFC 3550 jitter over time.
pub(crate) fn network_figure(decoded: &Decoded, stream: u32, title: &str) -> Figure {
    let samples: Vec<_> = decoded.stream_samples(stream).collect();
    let start = samples.iter().map(|s| s.arrival).min().unwrap_or_default();
    let min_transit = samples
        .iter()
        .map(|s| s.arrival - s.send)
        .min()
        .unwrap_or_default();
    let mut owd = Vec::with_capacity(samples.len());
    let mut seen = BTreeSet::new();
    let mut reordered = Vec::new();
    let mut highest = i64::MIN;
    for s in &samples {
        let x = (s.arrival - start).as_secs_f64();
        let y = (s.arrival - s.send - min_transit).as_millis_f64();
        owd.push((x, y));
        if seen.insert(s.seq) && s.seq < highest {
            reordered.push((x, y));
        }
        highest = highest.max(s.seq);
    }
    owd.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Lost packets: sequence numbers never received, placed at their expected send time.
    let lost: Vec<(f64, f64)> = frame_slots(samples.iter().copied())
        .into_iter()
        .filter(|(q, _)| !seen.contains(q))
        .map(|(_, send)| ((send + min_transit - start).as_secs_f64(), 0.0))
        .collect();
    let mut delay_series = vec![Series {
        label: "per packet".into(),
        color: 0,
        style: Style::Dots,
        points: owd,
    }];
    if !reordered.is_empty() {
        delay_series.push(Series {
            label: format!("reordered ({})", reordered.len()),
            color: 1,
            style: Style::Dots,
            points: reordered,
        });
    }
    if !lost.is_empty() {
        delay_series.push(Series {
            label: format!("lost ({})", lost.len()),
            color: 5,
            style: Style::Crosses,
            points: lost,
        });
    }
    Figure::new(
        title,
        vec![Panel {
            title: "One-way delay variation (arrival − send, minimum removed)".into(),
            x_label: "time since first arrival (s)".into(),
            y_label: "delay variation (ms)".into(),
            series: delay_series,
            note: samples
                .is_empty()
                .then(|| "no packets in this stream".to_owned()),
            ..Panel::default()
        }],
    )
}

/// Jitter: RFC 3550 jitter over time, and a histogram of inter-arrival times with the nominal
/// send interval (the median send spacing) marked.
pub(crate) fn jitter_figure(decoded: &Decoded, stream: u32, title: &str) -> Figure {
    let mut samples: Vec<_> = decoded.stream_samples(stream).collect();
    samples.sort_by_key(|s| s.arrival);
    let start = samples.first().map(|s| s.arrival).unwrap_or_default();
    let mut jitter = Jitter::default();
    let mut jitter_pts = Vec::with_capacity(samples.len());
    for s in &samples {
        jitter.push(s.send, s.arrival, !s.marker);
        jitter_pts.push(((s.arrival - start).as_secs_f64(), jitter.current_ms()));
    }
    let iat: Vec<f64> = samples
        .windows(2)
        .map(|w| (w[1].arrival - w[0].arrival).as_millis_f64())
        .collect();
    let mut sends: Vec<_> = samples.iter().map(|s| (s.seq, s.send)).collect();
    sends.sort_unstable();
    sends.dedup_by_key(|s| s.0);
    let mut spacing: Vec<f64> = sends
        .windows(2)
        .filter(|w| w[1].0 == w[0].0 + 1)
        .map(|w| (w[1].1 - w[0].1).as_millis_f64())
        .collect();
    spacing.sort_by(f64::total_cmp);
    let nominal = spacing.get(spacing.len() / 2).copied();
    let hist = histogram(&iat, 80);
    let peak = hist.iter().map(|p| p.1).fold(0.0, f64::max);
    let mut series = vec![Series {
        label: format!("{} inter-arrival times", iat.len()),
        color: 0,
        style: Style::Step,
        points: hist,
    }];
    if let Some(n) = nominal.filter(|n| n.is_finite()) {
        series.push(Series {
            label: format!("nominal interval {n:.2} ms"),
            color: 5,
            style: Style::Line,
            points: vec![(n, 0.0), (n, peak.max(1.0))],
        });
    }
    Figure::new(
        title,
        vec![
            Panel {
                title: "RFC 3550 interarrival jitter".into(),
                x_label: "time since first arrival (s)".into(),
                y_label: "jitter (ms)".into(),
                series: vec![Series {
                    label: String::new(),
                    color: 0,
                    style: Style::Line,
                    points: jitter_pts,
                }],
                ..Panel::default()
            },
            Panel {
                title: "Inter-arrival times".into(),
                x_label: "time between consecutive arrivals (ms)".into(),
                y_label: "packets".into(),
                series,
                note: (iat.is_empty()).then(|| "fewer than two packets".to_owned()),
                ..Panel::default()
            },
        ],
    )
}

/// A histogram of `values` over `bins` equal bins as step points (bin start, count), with a
/// final point closing the last bin. Non-finite values are left out.
pub(crate) fn histogram(values: &[f64], bins: usize) -> Vec<(f64, f64)> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let (lo, hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    if !lo.is_finite() {
        return Vec::new();
    }
    let width = if hi > lo {
        (hi - lo) / bins as f64
    } else {
        1.0
    };
    let mut counts = vec![0u64; bins];
    for v in finite {
        let b = (((v - lo) / width) as usize).min(bins - 1);
        counts[b] += 1;
    }
    let mut pts: Vec<(f64, f64)> = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| (lo + i as f64 * width, c as f64))
        .collect();
    pts.push((lo + bins as f64 * width, counts[bins - 1] as f64));
    pts
}

/// Playout mode: concealment and late-loss rates against a fixed delay (every frame slot
/// played at its send time + the delay, as `replay --playout` does; C21).
pub(crate) fn playout_figure(decoded: &Decoded, stream: u32, max_delay_ms: u32) -> Figure {
    let samples: Vec<_> = decoded.stream_samples(stream).cloned().collect();
    let offset = jitterlab_replay::ClockMapping::Hindsight.offset(&samples);
    let first = first_arrivals(&samples);
    // How late each slot's frame arrived after its send time (mapped to local time); a slot
    // is concealed at delay d when its frame was lost or is later than d.
    let slots = frame_slots(samples.iter());
    let mut lost = 0u64;
    let mut lateness: Vec<f64> = Vec::with_capacity(slots.len());
    for (seq, send) in &slots {
        match first.get(seq) {
            Some(a) => lateness.push((*a - (*send - offset)).as_millis_f64()),
            None => lost += 1,
        }
    }
    lateness.sort_by(f64::total_cmp);
    let total = slots.len().max(1) as f64;
    let mut concealed = Vec::new();
    let mut late = Vec::new();
    if !slots.is_empty() {
        for ms in (0..=max_delay_ms).step_by(5) {
            let d = f64::from(ms);
            let after = lateness.len() - lateness.partition_point(|l| *l <= d);
            concealed.push((d, 100.0 * (lost as f64 + after as f64) / total));
            late.push((d, 100.0 * after as f64 / total));
        }
    }
    Figure::new(
        "Playout: frames played at send time + a fixed delay",
        vec![Panel {
            title: format!(
                "Concealment and late loss against the playout delay ({lost} frames never arrived)"
            ),
            x_label: "playout delay beyond the minimum transit (ms)".into(),
            y_label: "frames (%)".into(),
            series: vec![
                Series {
                    label: "concealed (lost or late)".into(),
                    color: 0,
                    style: Style::Line,
                    points: concealed,
                },
                Series {
                    label: "arrived too late".into(),
                    color: 5,
                    style: Style::Line,
                    points: late,
                },
            ],
            ..Panel::default()
        }],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Envelope;
    use crate::test_support::probe_decoded;
    use crate::trace::TraceFigures;
    use jitterlab_capture::{Nanos, Sample};

    /// A stream of `n` packets at 50 Hz with jitter, loss, reordering, repeats, a delay spike
    /// and an outage, in arrival order (deterministic).
    fn network(n: i64, seed: u64) -> Vec<Sample> {
        let mut x = seed;
        let mut rand = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as i64
        };
        let mut out = Vec::new();
        for i in 0..n {
            let send = Nanos::from_millis(20 * i) + Nanos(rand() % 50_000);
            let mut transit = Nanos::from_millis(30) + Nanos(rand() % 8_000_000);
            if (n / 3..n / 3 + 40).contains(&i) {
                transit += Nanos::from_millis(150);
            }
            if (2 * n / 3..2 * n / 3 + 30).contains(&i) {
                // An outage: held back, all at its end.
                transit = Nanos::from_millis(20 * (2 * n / 3 + 30 - i) + 40);
            }
            let r = rand() % 100;
            if r < 3 {
                continue; // lost
            }
            if r < 6 {
                transit += Nanos::from_millis(45); // overtaken by the next two or three
            }
            let s = Sample::new(0, i, send, send + transit).with_values(vec![i as f64]);
            if r == 7 {
                let mut again = s.clone();
                again.arrival += Nanos::from_millis(3);
                out.push(again);
            }
            out.push(s);
        }
        out.sort_by_key(|s| s.arrival);
        out
    }

    fn reduced(points: &[(f64, f64)], span: (f64, f64)) -> Vec<(f64, f64)> {
        let mut e = Envelope::over(span);
        for &(x, y) in points {
            e.push(x, y);
        }
        e.finish()
    }

    /// The series of the figures drawn in passes are those of the whole-stream figures,
    /// reduced column by column; the histograms, labels, playout rates and spikes are equal.
    #[test]
    fn two_passes_draw_the_whole_stream_figures() {
        for (n, seed) in [(0, 1), (1, 1), (2, 5), (500, 2), (3_000, 3), (60_000, 4)] {
            let decoded = probe_decoded(network(n, seed));
            let got = TraceFigures::of(&decoded, 0, "t");
            assert!(!got.approximate, "n={n}");
            let end = decoded.samples.iter().map(|s| s.arrival).max();
            let start = decoded.samples.iter().map(|s| s.arrival).min();
            let span = (
                0.0,
                end.zip(start).map_or(0.0, |(e, s)| (e - s).as_secs_f64()),
            );
            let mut want_net = network_figure(&decoded, 0, "t: network");
            for series in &mut want_net.panels[0].series {
                series.points = reduced(&series.points, span);
            }
            assert_eq!(got.network, want_net, "network, n={n}");
            let want_jitter = jitter_figure(&decoded, 0, "t: jitter");
            let mut want_jitter = want_jitter;
            want_jitter.panels[0].series[0].points =
                reduced(&want_jitter.panels[0].series[0].points, span);
            assert_eq!(got.jitter, want_jitter, "jitter, n={n}");
            assert_eq!(
                got.playout,
                playout_figure(&decoded, 0, 300),
                "playout, n={n}"
            );
            assert_eq!(
                got.spikes,
                crate::recovery::panel_spikes(&decoded, 0),
                "spikes, n={n}"
            );
        }
    }

    /// A short stream's figures keep every point but those of its outage's burst (dozens of
    /// arrivals in one column), and mark its lost and reordered packets and its spikes.
    #[test]
    fn a_short_stream_keeps_its_points_and_marks_what_happened() {
        let decoded = probe_decoded(network(400, 9));
        let got = TraceFigures::of(&decoded, 0, "t");
        let want = network_figure(&decoded, 0, "t: network");
        let burst = |p: &&(f64, f64)| (5.9..5.95).contains(&p.0);
        let outside = |points: &[(f64, f64)]| -> Vec<(f64, f64)> {
            points.iter().filter(|p| !burst(p)).copied().collect()
        };
        let all = &want.panels[0].series[0].points;
        assert!(all.iter().filter(burst).count() > 20);
        assert_eq!(
            outside(&got.network.panels[0].series[0].points),
            outside(all)
        );
        let jitter = jitter_figure(&decoded, 0, "t: jitter");
        assert_eq!(
            outside(&got.jitter.panels[0].series[0].points),
            outside(&jitter.panels[0].series[0].points)
        );
        assert_eq!(got.jitter.panels[1], jitter.panels[1]);
        let labels: Vec<&str> = got.network.panels[0]
            .series
            .iter()
            .map(|s| s.label.as_str())
            .collect();
        assert!(labels.iter().any(|l| l.starts_with("lost (")), "{labels:?}");
        assert!(
            labels.iter().any(|l| l.starts_with("reordered (")),
            "{labels:?}"
        );
        assert!(got.spikes.0 >= 2, "{:?}", got.spikes);
    }

    /// A packet far behind the highest sequence number seen is still drawn, and the figures
    /// say they are approximate.
    #[test]
    fn a_packet_far_behind_makes_the_figures_approximate() {
        let mut samples: Vec<Sample> = (0..100_000i64)
            .filter(|&i| i != 10)
            .map(|i| {
                let t = Nanos::from_millis(i);
                Sample::new(0, i, t, t + Nanos::from_millis(5)).with_values(vec![0.0])
            })
            .collect();
        let late = Nanos::from_millis(100_001);
        samples.push(Sample::new(0, 10, Nanos::from_millis(10), late).with_values(vec![0.0]));
        let got = TraceFigures::of(&probe_decoded(samples), 0, "t");
        assert!(got.approximate);
    }
}
