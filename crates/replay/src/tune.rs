//! Tuning: from sweep rows to a recommended configuration.
//!
//! Each configuration is judged by its **worst trace**: the largest hold ratio, display delay
//! and p99 error any of the given traces saw with it. A configuration is feasible when its worst
//! hold ratio is at most the limit (and, if asked, its worst p99 error too). The recommendation
//! is the feasible configuration with the lowest worst mean display delay (or p99 error, with
//! [`Objective::Error`]); ties go to the lower hold ratio, then to grid order. The Pareto
//! frontier of worst delay against worst hold ratio is computed over every configuration.
//!
//! In **playout mode** (rows from [`crate::sweep::run_playout`]) the same rule runs on what a
//! listener or viewer got: a configuration is feasible when its worst late ratio (frames that
//! arrived after their play time), and if asked its worst concealment ratio (late or never
//! arrived) and its worst MOS, meet the limits; the recommendation is the feasible one with the
//! lowest worst mean playout delay, ties to the lower late ratio; the frontier is worst delay
//! against worst concealment.

use crate::policy::Policy;
use crate::sweep::Row;

/// What to minimise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Objective {
    /// Mean display delay.
    #[default]
    Delay,
    /// p99 error against ground truth (or hindsight).
    Error,
}

impl std::str::FromStr for Objective {
    type Err = String;

    /// `delay` or `error`.
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "delay" => Ok(Self::Delay),
            "error" => Ok(Self::Error),
            other => Err(format!("'{other}': expected delay or error")),
        }
    }
}

impl Objective {
    /// The name `tune --json` prints.
    pub fn name(self) -> &'static str {
        match self {
            Self::Delay => "delay",
            Self::Error => "error",
        }
    }

    /// What is minimised, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Delay => "mean display delay",
            Self::Error => "p99 error",
        }
    }
}

/// The limits a recommendation must meet on every trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constraints {
    /// The largest acceptable hold ratio (0..1), holds alone (1: no limit beyond
    /// [`Self::max_starved_ratio`]).
    pub max_hold_ratio: f64,
    /// The largest acceptable starved ratio (held, extrapolated or empty frames over frames,
    /// [`crate::Summary::starved_ratio`]), if any: the default limit, 1 %.
    pub max_starved_ratio: Option<f64>,
    /// The largest acceptable extrapolated ratio (0..1), extrapolated frames alone, if given.
    pub max_extrapolated_ratio: Option<f64>,
    /// The largest acceptable p99 error, when given.
    pub max_p99_error: Option<f64>,
    /// What to minimise among feasible configurations.
    pub objective: Objective,
    /// Playout mode: the largest acceptable late ratio (0..1).
    pub max_late: f64,
    /// Playout mode: the largest acceptable concealment ratio (late or lost, 0..1), if given.
    pub max_concealment: Option<f64>,
    /// Playout mode: the lowest acceptable MOS, if given.
    pub min_mos: Option<f64>,
}

impl Default for Constraints {
    fn default() -> Self {
        Self {
            max_hold_ratio: 1.0,
            max_starved_ratio: Some(0.01),
            max_extrapolated_ratio: None,
            max_p99_error: None,
            objective: Objective::Delay,
            max_late: 0.01,
            max_concealment: None,
            min_mos: None,
        }
    }
}

impl Constraints {
    /// The playout rule in one sentence, for reports.
    pub fn playout_rule(&self, configurations: usize) -> String {
        format!(
            "The lowest mean playout delay whose late ratio stays at or below {:.2} %{}{} on every \
             trace, out of {configurations} configurations.",
            100.0 * self.max_late,
            self.max_concealment.map_or(String::new(), |c| format!(
                ", concealment at or below {:.2} %",
                100.0 * c
            )),
            self.min_mos
                .map_or(String::new(), |m| format!(" and MOS at or above {m:.2}")),
        )
    }

    /// The rule in one sentence, for reports: what is minimised under which limits.
    pub fn rule(&self, configurations: usize) -> String {
        let mut limits: Vec<String> = Vec::new();
        if let Some(s) = self.max_starved_ratio {
            limits.push(format!(
                "starved ratio (held, extrapolated or empty frames) stays at or below {:.2} %",
                100.0 * s
            ));
        }
        if self.max_hold_ratio < 1.0 || limits.is_empty() {
            limits.push(format!(
                "hold ratio stays at or below {:.2} %",
                100.0 * self.max_hold_ratio
            ));
        }
        if let Some(x) = self.max_extrapolated_ratio {
            limits.push(format!(
                "extrapolated ratio stays at or below {:.2} %",
                100.0 * x
            ));
        }
        if let Some(e) = self.max_p99_error {
            limits.push(format!("p99 error at or below {e}"));
        }
        let last = limits.pop().unwrap_or_default();
        let limits = if limits.is_empty() {
            last
        } else {
            format!("{}, and {last}", limits.join(", "))
        };
        format!(
            "The lowest {} whose {limits} on every trace, out of {configurations} configurations.",
            self.objective.describe(),
        )
    }
}

/// A configuration's worst figures over the traces.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Worst {
    /// Largest hold ratio.
    pub hold_ratio: f64,
    /// Largest starved ratio (held, extrapolated or empty frames).
    pub starved_ratio: f64,
    /// Largest extrapolated ratio.
    pub extrapolated_ratio: f64,
    /// Largest mean display delay, ms (`None` if some trace showed nothing).
    pub mean_delay_ms: Option<f64>,
    /// Largest p99 display delay, ms.
    pub p99_delay_ms: Option<f64>,
    /// Largest p99 error (`None` if some trace has no error reference).
    pub p99_error: Option<f64>,
    /// Playout mode: largest late ratio.
    pub late_ratio: f64,
    /// Playout mode: largest concealment ratio.
    pub concealment_ratio: f64,
    /// Playout mode: lowest MOS (`None` if some trace has none).
    pub mos: Option<f64>,
    /// Largest regret over the traces, ms: mean delay minus the offline-optimal bound at the
    /// trace's starved or late share ([`Row::regret_ms`]; `None` if some trace has none).
    pub regret_ms: Option<f64>,
}

impl Worst {
    /// The ratio the frontier trades against delay: holds, or in playout mode concealment.
    fn badness(&self, playout: bool) -> f64 {
        if playout {
            self.concealment_ratio
        } else {
            self.hold_ratio
        }
    }
}

fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        _ => None,
    }
}

/// One configuration's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Index into the configurations.
    pub config: usize,
    /// Worst figures over the traces.
    pub worst: Worst,
    /// Why it does not meet the constraints (`None`: it does).
    pub rejected: Option<String>,
}

/// The outcome of tuning.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tuning {
    /// Every configuration that had rows, in grid order.
    pub candidates: Vec<Candidate>,
    /// The recommended configuration, if any is feasible.
    pub recommendation: Option<usize>,
    /// The best feasible configuration of every other policy, best first.
    pub runners_up: Vec<usize>,
    /// Policies with no feasible configuration, with the reason of their closest one.
    pub rejected: Vec<(String, String)>,
    /// Configurations on the delay / hold-ratio Pareto frontier, by increasing delay.
    pub frontier: Vec<usize>,
}

impl Tuning {
    /// The position in `candidates` of configuration `config`, if it had rows.
    pub fn position(&self, config: usize) -> Option<usize> {
        // Candidates are in grid order.
        self.candidates
            .binary_search_by_key(&config, |c| c.config)
            .ok()
    }

    /// The verdict on configuration `config`, if it had rows.
    pub fn candidate(&self, config: usize) -> Option<&Candidate> {
        self.position(config).map(|i| &self.candidates[i])
    }

    /// The configurations a report shows: the recommendation then the runners-up, or, when
    /// nothing is feasible, the low-hold end of the frontier; at most `n`.
    pub fn shown(&self, n: usize) -> Vec<usize> {
        let chosen: Vec<usize> = self
            .recommendation
            .iter()
            .chain(&self.runners_up)
            .copied()
            .take(n)
            .collect();
        if chosen.is_empty() {
            self.frontier.iter().rev().take(n.min(3)).copied().collect()
        } else {
            chosen
        }
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    }
}

fn pct(x: f64) -> String {
    format!("{:.2} %", 100.0 * x)
}

/// Why a playout configuration misses the limits, if it does.
fn playout_rejection(w: &Worst, c: &Constraints) -> Option<String> {
    if w.late_ratio.is_nan() || w.late_ratio > c.max_late {
        return Some(format!("late {} > {}", pct(w.late_ratio), pct(c.max_late)));
    }
    if let Some(max) = c.max_concealment
        && (w.concealment_ratio.is_nan() || w.concealment_ratio > max)
    {
        return Some(format!(
            "concealment {} > {}",
            pct(w.concealment_ratio),
            pct(max)
        ));
    }
    match (c.min_mos, w.mos) {
        (Some(_), None) => Some("no MOS on some trace (not audio)".to_owned()),
        (Some(min), Some(m)) if m < min => Some(format!("MOS {m:.2} < {min:.2}")),
        _ => None,
    }
}

/// Why a snapshot configuration starves beyond the limits, if it does: holds alone, all starved
/// frames, extrapolated frames alone.
fn starvation_rejection(w: &Worst, c: &Constraints) -> Option<String> {
    let over = |x: f64, max: f64| x.is_nan() || x > max;
    if over(w.hold_ratio, c.max_hold_ratio) {
        return Some(format!(
            "hold ratio {} > {}",
            pct(w.hold_ratio),
            pct(c.max_hold_ratio)
        ));
    }
    if let Some(max) = c.max_starved_ratio
        && over(w.starved_ratio, max)
    {
        return Some(format!(
            "starved ratio {} > {} (held {}, extrapolated {})",
            pct(w.starved_ratio),
            pct(max),
            pct(w.hold_ratio),
            pct(w.extrapolated_ratio)
        ));
    }
    match c.max_extrapolated_ratio {
        Some(max) if over(w.extrapolated_ratio, max) => Some(format!(
            "extrapolated ratio {} > {}",
            pct(w.extrapolated_ratio),
            pct(max)
        )),
        _ => None,
    }
}

/// Judges every configuration and picks the recommendation. `rows` may be in any order and
/// must hold every (trace, configuration) pair for `traces` traces.
pub fn tune(rows: &[Row], policies: &[Policy], c: &Constraints) -> Tuning {
    let playout = rows.iter().any(|r| r.playout.is_some());
    let mut worst: Vec<Option<Worst>> = vec![None; policies.len()];
    for row in rows {
        let this = match &row.playout {
            Some(p) => Worst {
                hold_ratio: 0.0,
                starved_ratio: 0.0,
                extrapolated_ratio: 0.0,
                mean_delay_ms: p.mean_delay_ms,
                p99_delay_ms: p.p99_delay_ms,
                p99_error: None,
                late_ratio: p.summary.late_ratio,
                concealment_ratio: p.summary.concealment_ratio,
                mos: p.mos(),
                regret_ms: row.regret_ms,
            },
            None => {
                let s = &row.summary;
                Worst {
                    hold_ratio: s.hold_ratio,
                    // Holds are starved frames too: a results file written before
                    // `starved_ratio` existed reads back with 0 there.
                    starved_ratio: s.starved_ratio.max(s.hold_ratio),
                    extrapolated_ratio: s.extrapolated_ratio,
                    mean_delay_ms: s.mean_delay_ms,
                    p99_delay_ms: s.p99_delay_ms,
                    p99_error: s.p99_error,
                    regret_ms: row.regret_ms,
                    ..Worst::default()
                }
            }
        };
        worst[row.config] = Some(match worst[row.config] {
            None => this,
            Some(w) => Worst {
                hold_ratio: w.hold_ratio.max(this.hold_ratio),
                starved_ratio: w.starved_ratio.max(this.starved_ratio),
                extrapolated_ratio: w.extrapolated_ratio.max(this.extrapolated_ratio),
                mean_delay_ms: max_opt(w.mean_delay_ms, this.mean_delay_ms),
                p99_delay_ms: max_opt(w.p99_delay_ms, this.p99_delay_ms),
                p99_error: max_opt(w.p99_error, this.p99_error),
                late_ratio: w.late_ratio.max(this.late_ratio),
                concealment_ratio: w.concealment_ratio.max(this.concealment_ratio),
                mos: min_opt(w.mos, this.mos),
                regret_ms: max_opt(w.regret_ms, this.regret_ms),
            },
        });
    }
    let candidates: Vec<Candidate> = worst
        .iter()
        .enumerate()
        .filter_map(|(config, w)| {
            let w = (*w)?;
            let rejected = if w.mean_delay_ms.is_none() {
                Some(
                    if playout {
                        "a trace played nothing"
                    } else {
                        "a trace showed no frame"
                    }
                    .to_owned(),
                )
            } else if playout {
                playout_rejection(&w, c)
            } else if let Some(why) = starvation_rejection(&w, c) {
                Some(why)
            } else {
                match (c.max_p99_error, w.p99_error) {
                    (Some(_), None) => Some("no error reference on some trace".to_owned()),
                    (Some(max), Some(e)) if e > max => Some(format!("p99 error {e:.4} > {max}")),
                    _ => None,
                }
            };
            Some(Candidate {
                config,
                worst: w,
                rejected,
            })
        })
        .collect();
    let key = |cand: &Candidate| -> (f64, f64, f64, usize) {
        let delay = cand.worst.mean_delay_ms.unwrap_or(f64::INFINITY);
        let error = cand.worst.p99_error.unwrap_or(f64::INFINITY);
        if playout {
            return (
                delay,
                cand.worst.late_ratio,
                cand.worst.concealment_ratio,
                cand.config,
            );
        }
        match c.objective {
            Objective::Delay => (delay, cand.worst.hold_ratio, error, cand.config),
            Objective::Error => (error, delay, cand.worst.hold_ratio, cand.config),
        }
    };
    let better = |a: &Candidate, b: &Candidate| {
        key(a).partial_cmp(&key(b)) == Some(std::cmp::Ordering::Less)
    };
    let mut best_per_policy: Vec<(&'static str, Option<&Candidate>, Option<&Candidate>)> =
        Vec::new();
    for cand in &candidates {
        let name = policies[cand.config].name();
        let slot = match best_per_policy.iter().position(|(n, _, _)| *n == name) {
            Some(i) => i,
            None => {
                best_per_policy.push((name, None, None));
                best_per_policy.len() - 1
            }
        };
        let (_, feasible, closest) = &mut best_per_policy[slot];
        if cand.rejected.is_none() {
            if feasible.is_none_or(|f| better(cand, f)) {
                *feasible = Some(cand);
            }
        } else if closest.is_none_or(|f| {
            (cand.worst.badness(playout), key(cand)) < (f.worst.badness(playout), key(f))
        }) {
            *closest = Some(cand);
        }
    }
    let mut feasible: Vec<&Candidate> = best_per_policy.iter().filter_map(|(_, f, _)| *f).collect();
    feasible.sort_by(|a, b| {
        key(a)
            .partial_cmp(&key(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let recommendation = feasible.first().map(|c| c.config);
    let runners_up = feasible.iter().skip(1).map(|c| c.config).collect();
    let rejected = best_per_policy
        .iter()
        .filter(|(_, f, _)| f.is_none())
        .filter_map(|(name, _, closest)| {
            closest.map(|cl| {
                (
                    (*name).to_owned(),
                    format!(
                        "no configuration meets the limits; closest {}: {}",
                        policies[cl.config],
                        cl.rejected.as_deref().unwrap_or("")
                    ),
                )
            })
        })
        .collect();
    // Pareto frontier: sort by delay, keep those that lower the best hold ratio so far.
    let mut by_delay: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| c.worst.mean_delay_ms.is_some())
        .collect();
    by_delay.sort_by(|a, b| {
        (a.worst.mean_delay_ms, a.worst.badness(playout), a.config)
            .partial_cmp(&(b.worst.mean_delay_ms, b.worst.badness(playout), b.config))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut frontier = Vec::new();
    let mut best_hold = f64::INFINITY;
    for cand in by_delay {
        if cand.worst.badness(playout) < best_hold {
            best_hold = cand.worst.badness(playout);
            frontier.push(cand.config);
        }
    }
    Tuning {
        candidates,
        recommendation,
        runners_up,
        rejected,
        frontier,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Summary;

    fn row(trace: usize, config: usize, hold: f64, delay: f64, err: f64) -> Row {
        Row {
            trace,
            config,
            summary: Summary {
                hold_ratio: hold,
                starved_ratio: hold,
                mean_delay_ms: Some(delay),
                p99_delay_ms: Some(delay * 1.5),
                p99_error: Some(err),
                ..Summary::default()
            },
            playout: None,
            bound_ms: None,
            window_bound_ms: None,
            talkspurt_bound_ms: None,
            regret_ms: None,
        }
    }

    #[test]
    fn the_worst_trace_decides_and_the_lowest_delay_wins() {
        let policies: Vec<Policy> = [
            "fixed:delay=50ms",
            "fixed:delay=100ms",
            "jitter:k=3",
            "mirror:",
        ]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
        let rows = vec![
            // fixed 50 ms: fine on trace 0, holds 5 % on trace 1.
            row(0, 0, 0.0, 60.0, 0.1),
            row(1, 0, 0.05, 61.0, 0.2),
            row(0, 1, 0.0, 110.0, 0.1),
            row(1, 1, 0.002, 111.0, 0.1),
            row(0, 2, 0.004, 90.0, 0.3),
            row(1, 2, 0.008, 95.0, 0.4),
            row(0, 3, 0.2, 40.0, 1.0),
            row(1, 3, 0.3, 45.0, 1.0),
        ];
        let t = tune(&rows, &policies, &Constraints::default());
        assert_eq!(
            t.recommendation,
            Some(2),
            "jitter: worst 95 ms beats fixed's 111 ms"
        );
        assert_eq!(t.runners_up, [1]);
        assert_eq!(t.rejected.len(), 1);
        assert_eq!(t.rejected[0].0, "mirror");
        assert!(
            t.rejected[0].1.contains("starved ratio 30.00 % > 1.00 %"),
            "{:?}",
            t.rejected
        );
        assert_eq!(
            t.candidates[0].rejected.as_deref(),
            Some("starved ratio 5.00 % > 1.00 % (held 5.00 %, extrapolated 0.00 %)")
        );
        // Frontier by delay: mirror (45 ms, 30 %), fixed 50 (61, 5 %), jitter (95, 0.8 %),
        // fixed 100 (111, 0.2 %).
        assert_eq!(t.frontier, [3, 0, 2, 1]);
        let strict = Constraints {
            max_p99_error: Some(0.2),
            ..Constraints::default()
        };
        assert_eq!(tune(&rows, &policies, &strict).recommendation, Some(1));
        let by_error = Constraints {
            objective: Objective::Error,
            max_starved_ratio: None,
            ..Constraints::default()
        };
        assert_eq!(tune(&rows, &policies, &by_error).recommendation, Some(1));
        let none = Constraints {
            max_hold_ratio: 0.0,
            ..Constraints::default()
        };
        let t = tune(&rows, &policies, &none);
        assert_eq!(t.recommendation, None);
        assert_eq!(t.rejected.len(), 3);
    }

    #[test]
    fn extrapolated_frames_are_starved_frames_unless_limited_apart() {
        let policies: Vec<Policy> = ["source:", "fixed:delay=100ms"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let extrapolating = |trace| Row {
            summary: Summary {
                extrapolated_ratio: 0.33,
                starved_ratio: 0.33,
                ..row(trace, 0, 0.0, 50.0, 0.1).summary
            },
            ..row(trace, 0, 0.0, 50.0, 0.1)
        };
        let rows = vec![
            extrapolating(0),
            extrapolating(1),
            row(0, 1, 0.002, 110.0, 0.1),
            row(1, 1, 0.004, 111.0, 0.1),
        ];
        // By default a third of the frames extrapolated is a third starved: rejected.
        let t = tune(&rows, &policies, &Constraints::default());
        assert_eq!(t.recommendation, Some(1));
        assert_eq!(
            t.candidates[0].rejected.as_deref(),
            Some("starved ratio 33.00 % > 1.00 % (held 0.00 %, extrapolated 33.00 %)")
        );
        // Limits apart: holds alone (the old `--max-hold-ratio` rule) lets it win ...
        let apart = Constraints {
            max_hold_ratio: 0.01,
            max_starved_ratio: None,
            ..Constraints::default()
        };
        assert_eq!(tune(&rows, &policies, &apart).recommendation, Some(0));
        // ... unless extrapolation has its own limit.
        let capped = Constraints {
            max_extrapolated_ratio: Some(0.1),
            ..apart
        };
        let t = tune(&rows, &policies, &capped);
        assert_eq!(t.recommendation, Some(1));
        assert_eq!(
            t.candidates[0].rejected.as_deref(),
            Some("extrapolated ratio 33.00 % > 10.00 %")
        );
        assert!(
            capped
                .rule(2)
                .contains("extrapolated ratio stays at or below 10.00 %"),
            "{}",
            capped.rule(2)
        );
    }

    #[test]
    fn rows_without_a_starved_ratio_count_their_holds() {
        // A results file from before `starved_ratio` reads back with 0 there.
        let policies: Vec<Policy> = vec!["fixed:delay=50ms".parse().unwrap()];
        let mut old = row(0, 0, 0.05, 60.0, 0.1);
        old.summary.starved_ratio = 0.0;
        let t = tune(&[old], &policies, &Constraints::default());
        assert_eq!(t.recommendation, None);
        assert_eq!(t.candidates[0].worst.starved_ratio, 0.05);
    }
}
