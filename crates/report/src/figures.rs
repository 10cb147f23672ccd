//! The report's figures, built from a decoded trace and replays of it.

use std::collections::BTreeSet;

use jitterlab_capture::decode::Decoded;
use jitterlab_capture::stats::Jitter;
use jitterlab_replay::playout::frame_slots;

use crate::figure::{Figure, Panel, Series, Style};
use crate::runs::Run;

/// Network: one-way delay variation per packet (arrival − send, minimum removed) with lost
/// packets marked, and RFC 3550 jitter over time.
pub fn network_figure(decoded: &Decoded, stream: u32, title: &str) -> Figure {
    let samples: Vec<_> = decoded.stream_samples(stream).collect();
    let start = samples.iter().map(|s| s.arrival).min().unwrap_or_default();
    let min_transit = samples
        .iter()
        .map(|s| s.arrival - s.send)
        .min()
        .unwrap_or_default();
    let mut owd = Vec::with_capacity(samples.len());
    let mut jitter_pts = Vec::with_capacity(samples.len());
    let mut jitter = Jitter::default();
    let mut seen = BTreeSet::new();
    let mut reordered = Vec::new();
    let mut highest = i64::MIN;
    for s in &samples {
        let x = (s.arrival - start).as_secs_f64();
        let y = (s.arrival - s.send - min_transit).as_millis_f64();
        owd.push((x, y));
        jitter.push(s.send, s.arrival, !s.marker);
        jitter_pts.push((x, jitter.current_ms()));
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
        vec![
            Panel {
                title: "One-way delay variation (arrival − send, minimum removed)".into(),
                x_label: "time since first arrival (s)".into(),
                y_label: "delay variation (ms)".into(),
                series: delay_series,
                ..Panel::default()
            },
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
        ],
    )
}

fn per_run_figure(
    runs: &[Run],
    title: &str,
    y_label: &str,
    style: Style,
    pick: impl Fn(&Run) -> &[f64],
) -> Figure {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for r in runs {
        for &v in pick(r) {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    let pad = (hi - lo) * 0.05;
    let panels = runs
        .iter()
        .enumerate()
        .map(|(i, r)| Panel {
            title: format!(
                "{}: holds {:.2} %, mean delay {}",
                r.label,
                100.0 * r.summary.hold_ratio,
                r.summary
                    .mean_delay_ms
                    .map_or_else(|| "–".to_owned(), |d| format!("{d:.1} ms"))
            ),
            x_label: "time since first arrival (s)".into(),
            y_label: y_label.into(),
            series: vec![Series {
                label: String::new(),
                color: i,
                style,
                points: r
                    .log
                    .t
                    .iter()
                    .copied()
                    .zip(pick(r).iter().copied())
                    .collect(),
            }],
            // A shared y scale, so configurations compare at a glance.
            y_range: (hi > lo).then_some((if lo < 0.0 { lo - pad } else { 0.0 }, hi + pad)),
            ..Panel::default()
        })
        .collect();
    let mut fig = Figure::new(title, panels);
    fig.columns = if runs.len() > 3 { 2 } else { 1 };
    fig
}

/// Buffer depth over time (time buffered ahead of the render target), one panel per
/// configuration. Below zero the player has run out of samples.
pub fn depth_figure(runs: &[Run]) -> Figure {
    per_run_figure(
        runs,
        "Buffer depth: time buffered ahead of the render target (below 0: starving)",
        "buffered ahead (ms)",
        Style::Line,
        |r| &r.log.ahead_ms,
    )
}

/// Value error over time, one panel per configuration.
pub fn error_figure(runs: &[Run]) -> Figure {
    let reference = runs
        .iter()
        .find_map(|r| r.summary.error_reference)
        .map_or("reference", |r| match r {
            jitterlab_replay::Reference::Truth => "ground truth",
            jitterlab_replay::Reference::Hindsight => "hindsight",
        });
    per_run_figure(
        runs,
        &format!("Error of the shown value against {reference}"),
        "error (value units)",
        Style::Line,
        |r| &r.log.error,
    )
}
