//! The recovery figure: display delay around each network spike, per configuration.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Decoded;
use jitterlab_replay::recovery::{Spike, SpikeRule, detect};

use crate::figure::{Figure, Panel, Series, Style};
use crate::runs::Run;

use crate::trace::MAX_PANELS;
/// Shown before a spike's start and after its end, seconds.
const BEFORE_S: f64 = 1.0;
const AFTER_S: f64 = 3.0;

/// The spikes of stream `stream` of `decoded` by the default [`SpikeRule`], as `replay` finds
/// them, with times in seconds since the stream's first arrival.
pub fn stream_spikes(decoded: &Decoded, stream: u32) -> Vec<(f64, f64, Spike)> {
    let mut packets: Vec<(Nanos, Nanos)> = decoded
        .stream_samples(stream)
        .map(|s| (s.arrival, s.send))
        .collect();
    // Stable, as the replay orders arrivals.
    packets.sort_by_key(|p| p.0);
    let Some(&(start, _)) = packets.first() else {
        return Vec::new();
    };
    detect(packets, &SpikeRule::default())
        .into_iter()
        .map(|s| {
            (
                (s.start - start).as_secs_f64(),
                (s.end - start).as_secs_f64(),
                s,
            )
        })
        .collect()
}

/// The spikes the figure draws (the four largest, in time order) and how many were
/// found.
pub fn panel_spikes(decoded: &Decoded, stream: u32) -> (usize, Vec<(f64, f64, Spike)>) {
    let mut spikes = stream_spikes(decoded, stream);
    let found = spikes.len();
    spikes.sort_by_key(|s| std::cmp::Reverse(s.2.peak.max(s.2.end - s.2.start)));
    spikes.truncate(MAX_PANELS);
    spikes.sort_by(|a, b| a.0.total_cmp(&b.0));
    (found, spikes)
}

/// The time windows (s since the first arrival) the figure's panels show: from a second
/// before each drawn spike to three seconds after it. What the report's logs keep at a finer
/// resolution.
pub fn panel_windows(decoded: &Decoded, stream: u32) -> Vec<(f64, f64)> {
    windows_of(&panel_spikes(decoded, stream).1)
}

/// The windows around `spikes` (start and end in seconds since the first arrival) that the
/// figure's panels show.
pub(crate) fn windows_of(spikes: &[(f64, f64, Spike)]) -> Vec<(f64, f64)> {
    spikes
        .iter()
        .map(|&(from, to, _)| (from - BEFORE_S, to + AFTER_S))
        .collect()
}

/// A run's recovery figures: its playout's in playout mode, else its replay's.
fn recovery_of(r: &Run) -> &jitterlab_replay::recovery::RecoverySummary {
    r.playout
        .as_ref()
        .map_or(&r.summary.recovery, |p| &p.report.recovery)
}

/// A run's (time s, delay ms) points: every slot's playout delay in playout mode, else every
/// frame's display delay; `near` the spikes, the finer points kept around them.
fn delays_of(r: &Run, near: bool) -> &[(f64, f64)] {
    match (&r.playout, near) {
        (Some(p), true) => &p.around_spikes,
        (Some(p), false) => &p.delay,
        (None, true) => &r.log.around_spikes,
        (None, false) => &r.log.delay_ms,
    }
}

/// One panel per network spike or outage (the four largest): every configuration's
/// display delay (playout mode: playout delay) from a second before the spike to three
/// seconds after it, the spike's span marked; the legend carries each configuration's
/// recovery figures over the whole stream. `spikes`: how many were found and those drawn
/// ([`panel_spikes`], or [`crate::trace::TraceFigures::spikes`]).
pub fn recovery_figure(spikes: &(usize, Vec<(f64, f64, Spike)>), runs: &[Run]) -> Figure {
    let (found, spikes) = (spikes.0, &spikes.1);
    let legend = |r: &Run| {
        let s = recovery_of(r);
        let ms = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.0} ms"));
        format!(
            "{}: recovery mean {} max {}, unrecovered {}, inflation {}",
            r.label,
            ms(s.mean_recovery_ms),
            ms(s.max_recovery_ms),
            s.unrecovered,
            ms(s.inflation_ms)
        )
    };
    let panels: Vec<Panel> = if spikes.is_empty() {
        vec![Panel {
            title: "Display delay (no spike or outage in the network delay)".into(),
            x_label: "time since first arrival (s)".into(),
            y_label: "display delay (ms)".into(),
            series: runs
                .iter()
                .enumerate()
                .map(|(i, r)| Series {
                    label: legend(r),
                    color: i,
                    style: Style::Line,
                    points: delays_of(r, false).to_vec(),
                })
                .collect(),
            note: Some("no spike found: transit never rose 50 ms above its baseline, no arrival gap over 200 ms".into()),
            ..Panel::default()
        }]
    } else {
        spikes
            .iter()
            .map(|&(from, to, spike)| {
                let (lo, hi) = (from - BEFORE_S, to + AFTER_S);
                let mut series: Vec<Series> = runs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| Series {
                        label: legend(r),
                        color: i,
                        style: Style::Line,
                        points: delays_of(r, true)
                            .iter()
                            .filter(|(t, _)| (lo..=hi).contains(t))
                            .map(|&(t, d)| (t - from, d))
                            .collect(),
                    })
                    .collect();
                series.push(Series {
                    label: "spike start and end".into(),
                    color: 7,
                    style: Style::Crosses,
                    points: vec![(0.0, 0.0), (to - from, 0.0)],
                });
                Panel {
                    title: format!(
                        "{} at {from:.1} s: {:.0} ms long, transit up {:.0} ms",
                        if spike.peak < SpikeRule::default().rise {
                            "Outage"
                        } else {
                            "Spike"
                        },
                        (spike.end - spike.start).as_millis_f64(),
                        spike.peak.as_millis_f64()
                    ),
                    x_label: "time since the spike started (s)".into(),
                    y_label: "display delay (ms)".into(),
                    series,
                    x_range: Some((-BEFORE_S, to - from + AFTER_S)),
                    ..Panel::default()
                }
            })
            .collect()
    };
    let mut fig = Figure::new(
        format!(
            "Recovery: display delay around the network's spikes ({found} found{})",
            if found > MAX_PANELS {
                format!(", the {MAX_PANELS} largest shown")
            } else {
                String::new()
            }
        ),
        panels,
    );
    fig.columns = if spikes.len() > 1 { 2 } else { 1 };
    fig
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_capture::Sample;
    use jitterlab_replay::{ClockMapping, FrameClock};

    #[test]
    fn one_panel_per_spike_with_every_configuration() {
        // Packets every 50 ms; 20..=25 lost (a 350 ms outage from 0.95 s).
        let samples: Vec<Sample> = (0..100)
            .filter(|i| !(20..=25).contains(i))
            .map(|i| {
                Sample::new(
                    0,
                    i as _,
                    Nanos::from_millis(50 * i),
                    Nanos::from_millis(50 * i + 20),
                )
                .with_values(vec![i as f64])
            })
            .collect();
        let decoded = crate::test_support::probe_decoded(samples);
        let spikes = stream_spikes(&decoded, 0);
        assert_eq!(spikes.len(), 1);
        assert_eq!((spikes[0].0, spikes[0].1), (0.95, 1.3));
        let policies = vec![
            ("fixed 100".to_owned(), "fixed:delay=100ms".parse().unwrap()),
            ("fixed 300".to_owned(), "fixed:delay=300ms".parse().unwrap()),
        ];
        let runs = crate::run_policies(
            &decoded,
            0,
            &policies,
            &FrameClock::Fps(100.0),
            ClockMapping::Hindsight,
        )
        .unwrap();
        let fig = recovery_figure(&panel_spikes(&decoded, 0), &runs);
        assert_eq!(fig.panels.len(), 1);
        let p = &fig.panels[0];
        assert!(p.title.contains("350 ms long"), "{}", p.title);
        assert_eq!(p.series.len(), 3);
        assert!(
            p.series[0].label.contains("unrecovered 0"),
            "{}",
            p.series[0].label
        );
        // Only the window around the spike, relative to its start.
        for s in &p.series[..2] {
            assert!(!s.points.is_empty());
            assert!(s.points.iter().all(|(t, _)| (-1.0..=3.35).contains(t)));
        }

        // Played as discrete frames: the playout delay (a fixed delay's, at every slot) and
        // the playout's own recovery figures.
        let played = crate::play_policies(
            &decoded,
            0,
            &policies,
            ClockMapping::Hindsight,
            jitterlab_replay::playout::QualityOptions::default(),
        )
        .unwrap();
        let fig = recovery_figure(&panel_spikes(&decoded, 0), &played);
        let p = &fig.panels[0];
        assert!(p.title.contains("350 ms long"), "{}", p.title);
        for (s, want) in p.series[..2].iter().zip([100.0, 300.0]) {
            assert!(!s.points.is_empty());
            assert!(s.points.iter().all(|&(_, d)| (d - want).abs() < 1e-6));
            assert!(s.label.contains("unrecovered 0"), "{}", s.label);
        }
    }
}
