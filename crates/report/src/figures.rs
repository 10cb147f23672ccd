//! The report's figures of replays and sweeps; the trace's own (network, jitter, playout)
//! are drawn in [`crate::trace`].

use crate::figure::{Figure, Panel, Series, Style};
use crate::results::SweepPoints;
use crate::runs::Run;

/// Per configuration on one time axis: display delay, time buffered ahead, and a strip of the
/// frames that were not interpolated (hold, extrapolate, empty), so stalls show at a glance.
pub fn timeline_figure(runs: &[Run]) -> Figure {
    let overlay = |pick: &dyn Fn(&Run) -> &[(f64, f64)]| -> Vec<Series> {
        runs.iter()
            .enumerate()
            .map(|(i, r)| Series {
                label: r.label.clone(),
                color: i,
                style: Style::Line,
                points: pick(r).to_vec(),
            })
            .collect()
    };
    let mut modes = Vec::new();
    for (k, (colour, name)) in [(5, "hold"), (1, "extrapolate"), (7, "empty")]
        .into_iter()
        .enumerate()
    {
        let points: Vec<(f64, f64)> = runs
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                r.log.not_interpolated[k]
                    .0
                    .iter()
                    .map(move |&t| (t, i as f64))
            })
            .collect();
        let n: u64 = runs.iter().map(|r| r.log.not_interpolated[k].1).sum();
        modes.push(Series {
            label: format!("{name} ({n} frames)"),
            color: colour,
            style: Style::Dots,
            points,
        });
    }
    let strip_note = runs
        .iter()
        .enumerate()
        .map(|(i, r)| format!("{i}: {}", r.label))
        .collect::<Vec<_>>()
        .join("   ");
    Figure::new(
        "Per configuration: display delay, buffer depth and frame modes",
        vec![
            Panel {
                title: "Display delay (shown sender time behind now)".into(),
                x_label: "time since first arrival (s)".into(),
                y_label: "delay (ms)".into(),
                series: overlay(&|r| &r.log.delay_ms),
                ..Panel::default()
            },
            Panel {
                title: "Time buffered ahead of the render target (below 0: starving)".into(),
                x_label: "time since first arrival (s)".into(),
                y_label: "buffered ahead (ms)".into(),
                series: overlay(&|r| &r.log.ahead_ms),
                ..Panel::default()
            },
            Panel {
                title: "Frames not interpolated, per configuration (blank: smooth)".into(),
                x_label: "time since first arrival (s)".into(),
                y_label: "configuration".into(),
                series: modes,
                y_range: Some((-0.5, runs.len().max(1) as f64 - 0.5)),
                note: Some(strip_note),
                ..Panel::default()
            },
        ],
    )
}

/// The distribution of the error per configuration: fraction of frames with error ≤ x.
pub fn error_cdf_figure(runs: &[Run]) -> Figure {
    let series = runs
        .iter()
        .enumerate()
        .map(|(i, r)| Series {
            label: r.label.clone(),
            color: i,
            style: Style::Line,
            points: r.log.errors.cdf(4000),
        })
        .collect();
    Figure::new(
        "Error distribution per configuration",
        vec![Panel {
            title: "Cumulative distribution of the error".into(),
            x_label: "error (value units)".into(),
            y_label: "fraction of frames".into(),
            series,
            y_range: Some((0.0, 1.02)),
            ..Panel::default()
        }],
    )
}

/// Playout mode: per configuration on one time axis, the target and the actual playout delay,
/// with the slots concealed because their frame never came or came late marked.
pub fn playout_timeline_figure(runs: &[Run]) -> Figure {
    let logs: Vec<(&Run, &crate::runs::PlayoutLog)> = runs
        .iter()
        .filter_map(|r| Some((r, r.playout.as_ref()?)))
        .collect();
    let x_hi = logs
        .iter()
        .flat_map(|(_, l)| l.delay.last().map(|p| p.0))
        .fold(0.0f64, f64::max);
    let y_hi = logs
        .iter()
        .flat_map(|(_, l)| l.delay.iter().chain(&l.target).map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let panels = logs
        .iter()
        .enumerate()
        .map(|(i, (r, log))| {
            let mut series = vec![Series {
                label: "playout delay".into(),
                color: i,
                style: Style::Line,
                points: log.delay.clone(),
            }];
            if !log.target.is_empty() {
                series.push(Series {
                    label: "target".into(),
                    color: 7,
                    style: Style::Step,
                    points: log.target.clone(),
                });
            }
            if !log.late.is_empty() {
                series.push(Series {
                    label: format!("late ({})", log.lost_late.1),
                    color: 5,
                    style: Style::Crosses,
                    points: log.late.clone(),
                });
            }
            if !log.lost.is_empty() {
                series.push(Series {
                    label: format!("never arrived ({})", log.lost_late.0),
                    color: 3,
                    style: Style::Dots,
                    points: log.lost.clone(),
                });
            }
            let rep = &log.report;
            Panel {
                title: format!(
                    "{}: late {:.2} %, concealed {:.2} %, mean delay {}{}",
                    r.label,
                    100.0 * rep.summary.late_ratio,
                    100.0 * rep.summary.concealment_ratio,
                    rep.mean_delay_ms
                        .map_or_else(|| "–".to_owned(), |d| format!("{d:.1} ms")),
                    rep.mos().map_or(String::new(), |m| format!(", MOS {m:.2}"))
                ),
                x_label: "time since first arrival (s)".into(),
                y_label: "delay beyond the minimum transit (ms)".into(),
                series,
                x_range: (x_hi > 0.0).then_some((0.0, x_hi)),
                y_range: (y_hi > 0.0).then_some((0.0, y_hi * 1.05)),
                ..Panel::default()
            }
        })
        .collect();
    let mut fig = Figure::new(
        "Playout: target and actual delay, concealment marked",
        panels,
    );
    fig.columns = if logs.len() > 3 { 2 } else { 1 };
    fig
}

/// Playout mode: each configuration's MOS (E-model) against its mean playout delay.
pub fn mos_figure(runs: &[Run]) -> Figure {
    let series: Vec<Series> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let rep = &r.playout.as_ref()?.report;
            Some(Series {
                label: format!(
                    "{}: MOS {}",
                    r.label,
                    rep.mos()
                        .map_or_else(|| "–".to_owned(), |m| format!("{m:.2}"))
                ),
                color: i,
                style: Style::Crosses,
                points: vec![(rep.mean_delay_ms?, rep.mos().unwrap_or(f64::NAN))],
            })
        })
        .collect();
    let note = series
        .iter()
        .all(|s| s.points.iter().all(|p| !p.1.is_finite()))
        .then(|| "no MOS: the stream is not audio".to_owned());
    Figure::new(
        "MOS per configuration",
        vec![Panel {
            title: "E-model MOS against mean playout delay".into(),
            x_label: "mean playout delay (ms)".into(),
            y_label: "MOS".into(),
            series,
            y_range: Some((1.0, 4.6)),
            note,
            ..Panel::default()
        }],
    )
}

fn per_run_figure(
    runs: &[Run],
    title: &str,
    y_label: &str,
    style: Style,
    pick: impl Fn(&Run) -> &[(f64, f64)],
) -> Figure {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for r in runs {
        for &(_, v) in pick(r) {
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
                points: pick(r).to_vec(),
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

/// Sweep: every configuration's worst display delay against its worst hold ratio, one colour
/// per policy, the tune rule's Pareto frontier joined, its recommendation marked.
pub fn pareto_figure(sweep: &SweepPoints) -> Figure {
    // Playout sweeps trade concealment (late or lost frames) against delay, not holds.
    let bad = |p: &crate::results::SweepPoint| {
        100.0
            * if sweep.playout {
                p.worst_concealment
            } else {
                p.worst_hold
            }
    };
    let (what, delay_label) = if sweep.playout {
        ("concealed", "mean playout delay (ms)")
    } else {
        ("holds", "mean display delay (ms)")
    };
    let mut names: Vec<&str> = jitterlab_replay::Policy::NAMES.to_vec();
    for p in &sweep.points {
        if !names.contains(&p.name.as_str()) {
            names.push(&p.name);
        }
    }
    let mut series: Vec<Series> = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let points: Vec<(f64, f64)> = sweep
            .points
            .iter()
            .filter(|p| p.name == *name)
            .filter_map(|p| Some((p.worst_delay?, bad(p))))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        if !points.is_empty() {
            let mut points = points;
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            series.push(Series {
                label: format!("{name} ({})", points.len()),
                color: k,
                style: Style::Dots,
                points,
            });
        }
    }
    let frontier: Vec<(f64, f64)> = sweep
        .frontier
        .iter()
        .filter_map(|&i| sweep.points.get(i))
        .filter_map(|p| Some((p.worst_delay?, bad(p))))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    if frontier.len() > 1 {
        series.push(Series {
            label: "Pareto frontier".into(),
            color: 7,
            style: Style::Step,
            points: frontier,
        });
    }
    if !sweep.bound.is_empty() {
        // The best possible: no policy whose delay changes only between one-second windows
        // could sit left of this line (`docs/bound.md`).
        let mut points = sweep.bound.clone();
        points.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        series.push(Series {
            label: format!(
                "offline-optimal bound (at the {} share)",
                if sweep.playout { "late" } else { "starved" }
            ),
            color: 6,
            style: Style::Line,
            points,
        });
    }
    let mut note = None;
    if let Some(p) = sweep.recommendation.and_then(|i| sweep.points.get(i))
        && let Some(d) = p.worst_delay
    {
        series.push(Series {
            label: format!(
                "recommended: {} ({d:.1} ms, {:.2} % {what}{})",
                p.name,
                bad(p),
                p.worst_mos
                    .map_or(String::new(), |m| format!(", MOS {m:.2}"))
            ),
            color: 5,
            style: Style::Crosses,
            points: vec![(d, bad(p))],
        });
    } else if !sweep.points.is_empty() {
        note = Some("no configuration meets the limits".to_owned());
    }
    Figure::new(
        format!(
            "Sweep: {} configurations, {} rows",
            sweep.points.len(),
            sweep.rows
        ),
        vec![Panel {
            title: if sweep.playout {
                "Playout delay against concealment (worst trace per configuration)".into()
            } else {
                "Display delay against hold ratio (worst trace per configuration)".into()
            },
            x_label: delay_label.into(),
            y_label: if sweep.playout {
                "concealed frames (%)".into()
            } else {
                "hold ratio (%)".into()
            },
            series,
            note,
            ..Panel::default()
        }],
    )
}

/// Sweep: the hold ratio over the two most varied numeric parameters of the most swept policy
/// (e.g. `delay × max_gap`); where other parameters vary too, a cell shows the best of them.
pub fn heatmap_figure(sweep: &SweepPoints) -> Figure {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for p in &sweep.points {
        match counts.iter_mut().find(|(n, _)| *n == p.name) {
            Some(c) => c.1 += 1,
            None => counts.push((&p.name, 1)),
        }
    }
    let name = counts.iter().max_by_key(|c| c.1).map(|c| c.0.to_owned());
    let of: Vec<&crate::results::SweepPoint> = sweep
        .points
        .iter()
        .filter(|p| Some(&p.name) == name.as_ref())
        .collect();
    let distinct = |key: &str| -> Vec<f64> {
        let mut v: Vec<f64> = of
            .iter()
            .filter_map(|p| p.params.iter().find(|(k, _)| k == key).map(|(_, v)| *v))
            .filter(|v| v.is_finite())
            .collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let mut keys: Vec<(String, Vec<f64>)> = of
        .first()
        .map(|p| p.params.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|k| {
            let d = distinct(&k);
            (k, d)
        })
        .filter(|(_, d)| d.len() > 1)
        .collect();
    keys.sort_by_key(|k| std::cmp::Reverse(k.1.len()));
    let title = format!(
        "Hold ratio over two swept parameters{}",
        name.as_ref().map_or(String::new(), |n| format!(" ({n})"))
    );
    let panel = match keys.as_slice() {
        [(kx, xs), (ky, ys), ..] => {
            let mut z = vec![vec![None::<f64>; xs.len()]; ys.len()];
            for p in &of {
                let get = |k: &str| p.params.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
                let (Some(x), Some(y)) = (get(kx), get(ky)) else {
                    continue;
                };
                let (Some(i), Some(j)) = (
                    xs.iter().position(|v| *v == x),
                    ys.iter().position(|v| *v == y),
                ) else {
                    continue;
                };
                let h = 100.0 * p.worst_hold;
                z[j][i] = Some(z[j][i].map_or(h, |o: f64| o.min(h)));
            }
            let unit = |k: &str| {
                if [
                    "delay",
                    "max_gap",
                    "cl_interp",
                    "window",
                    "every",
                    "max",
                    "min",
                    "interval",
                ]
                .contains(&k)
                {
                    " (ms)"
                } else {
                    ""
                }
            };
            Panel {
                title: format!("{kx} × {ky}: hold ratio (%), worst trace"),
                x_label: format!("{kx}{}", unit(kx)),
                y_label: format!("{ky}{}", unit(ky)),
                heat: Some(crate::figure::Heat {
                    xs: xs.clone(),
                    ys: ys.clone(),
                    z,
                    label: "hold ratio %".into(),
                }),
                note: (keys.len() > 2).then(|| {
                    format!(
                        "{} other parameter(s) vary: each cell shows their best",
                        keys.len() - 2
                    )
                }),
                ..Panel::default()
            }
        }
        _ => Panel {
            title: "needs a sweep over two numeric parameters of one policy".into(),
            x_label: "parameter".into(),
            y_label: "parameter".into(),
            note: Some("no data: the sweep varies fewer than two numeric parameters".into()),
            ..Panel::default()
        },
    };
    Figure::new(title, vec![panel])
}
