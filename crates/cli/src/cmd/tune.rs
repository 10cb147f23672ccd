//! `jitterlab tune`: sweep a sensible grid and recommend a configuration.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use jitterlab_replay::grid::{
    default_playout_grid_of, default_tune_grid_for, packet_rate, packet_rate_of,
};
use jitterlab_replay::sweep::{Row, Shard, SweepTrace};
use jitterlab_replay::tune::{Candidate, Constraints, Tuning, tune};
use jitterlab_replay::{ClockMapping, FrameClock, Policy, TraceStreams};
use jitterlab_report::results::SweepPoints;
use jitterlab_report::{ReportInput, TraceFigures, play_policies, run_policies, write_full_report};
use serde_json::{Value, json};

use crate::errors::AnswerIsNo;
use crate::sweeping::{
    Mode, SweepOptions, TuneLimits, execute, execute_playout, load_all, playout_media, policies,
};

/// Arguments of `jitterlab tune`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab tune game.jtr\n  jitterlab tune a.jtr b.jtr --max-starved-ratio 0.5% --json > tuned.json\n  jitterlab tune a.jtr --max-hold-ratio 1% --max-extrapolated-ratio 10%\n  jitterlab tune call.pcapng --min-mos 4 --report tuned/ || echo \"nothing meets the limits\"\n\nExit code 1: no configuration meets the limits on every trace (the answer and the\nclosest configurations are still printed, and --report still written)."
)]
pub(crate) struct Args {
    /// The traces to tune for (the worst decides); none: the embedded demo trace.
    #[arg(value_name = "TRACE")]
    traces: Vec<PathBuf>,
    #[command(flatten)]
    options: SweepOptions,
    #[command(flatten)]
    limits: TuneLimits,
    /// Print JSON for scripts.
    #[arg(long, help_heading = "Output")]
    json: bool,
    /// Also write a report (figures of the recommendation and runners-up, tables) into DIR.
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    report: Option<PathBuf>,
}

/// The worst figures across traces as JSON, plus each trace's metrics.
fn metrics_json(c: &Candidate, rows: &[Row], names: &[String]) -> Value {
    let per_trace: Vec<Value> = rows
        .iter()
        .filter(|r| r.config == c.config)
        .map(|r| json!({"trace": names[r.trace], "metrics": r.summary, "bound_ms": r.bound_ms, "regret_ms": r.regret_ms}))
        .collect();
    let playout = rows.iter().any(|r| r.playout.is_some());
    if playout {
        let per_trace: Vec<Value> = rows
            .iter()
            .filter(|r| r.config == c.config)
            .map(|r| json!({"trace": names[r.trace], "metrics": r.playout, "bound_ms": r.bound_ms, "regret_ms": r.regret_ms}))
            .collect();
        return json!({
            "worst_late_ratio": c.worst.late_ratio,
            "worst_concealment_ratio": c.worst.concealment_ratio,
            "worst_mean_delay_ms": c.worst.mean_delay_ms,
            "worst_p99_delay_ms": c.worst.p99_delay_ms,
            "worst_mos": c.worst.mos,
            "worst_regret_ms": c.worst.regret_ms,
            "traces": per_trace,
        });
    }
    json!({
        "worst_hold_ratio": c.worst.hold_ratio,
        "worst_starved_ratio": c.worst.starved_ratio,
        "worst_extrapolated_ratio": c.worst.extrapolated_ratio,
        "worst_mean_delay_ms": c.worst.mean_delay_ms,
        "worst_p99_delay_ms": c.worst.p99_delay_ms,
        "worst_p99_error": c.worst.p99_error,
        "worst_regret_ms": c.worst.regret_ms,
        "traces": per_trace,
    })
}

/// The configurations a streamed tune sweeps: the grid given, else the default grid for the
/// traces' packet rate, read in one `info` pass over each. `None` when the traces are better
/// swept in memory (one cannot be read, or holds RTP, whose mode and grid follow its media).
fn streamed_grid(args: &Args) -> Result<Option<Vec<Policy>>> {
    if !args.options.grid.is_empty() || !args.options.sweeps.is_empty() {
        return Ok(Some(policies(&args.options, None)?));
    }
    let mut stats = Vec::new();
    for path in &args.traces {
        match crate::streamed::stream_stats(path, &args.options.decode) {
            Ok((streams, false)) => stats.extend(streams),
            _ => return Ok(None),
        }
    }
    let grid = default_tune_grid_for(packet_rate_of(&stats));
    Ok(Some(policies(&args.options, Some(grid))?))
}

pub(crate) fn run(args: &Args) -> Result<()> {
    crate::sweeping::use_threads(args.options.threads)?;
    crate::input::stdin_once(args.traces.iter().chain(&args.options.grid))?;
    if let Some(dir) = &args.report {
        crate::input::not_stdout_dir(dir, "--report")?;
    }
    let constraints = args.limits.constraints()?;
    // Large traces stream (and so does `--report`'s: its figures in passes of their own).
    let streamed = if crate::streamed::should_stream(&args.traces, &args.options) {
        match streamed_grid(args)? {
            Some(policies) => {
                crate::streamed::sweep(&args.traces, &policies, &args.options, Shard::ALL)?
                    .map(|swept| (policies, swept))
            }
            None => None,
        }
    } else {
        None
    };
    let (loaded, mode, policies, rows, names) = match streamed {
        Some((policies, swept)) => (
            Vec::new(),
            Mode::Snapshot,
            policies,
            swept.rows,
            swept.names,
        ),
        None => {
            let loaded = if args.traces.is_empty() {
                vec![crate::sweeping::demo()?]
            } else {
                load_all(&args.traces, &args.options)?
            };
            let mode = Mode::choose(&args.options, &loaded);
            let rate = packet_rate(loaded.iter().map(|l| &l.decoded));
            let fallback = match mode {
                Mode::Snapshot => default_tune_grid_for(rate),
                Mode::Playout => default_playout_grid_of(rate, playout_media(&loaded)),
            };
            let policies = policies(&args.options, Some(fallback))?;
            let rows = match mode {
                Mode::Snapshot => {
                    let traces: Vec<SweepTrace<'_>> =
                        loaded.iter().map(TraceStreams::prepare).collect();
                    execute(&traces, &policies, &args.options, Shard::ALL)?
                }
                Mode::Playout => execute_playout(&loaded, &policies, &args.options, Shard::ALL)?,
            };
            let names: Vec<String> = loaded.iter().map(|t| t.name.clone()).collect();
            (loaded, mode, policies, rows, names)
        }
    };
    let t = tune(&rows, &policies, &constraints);
    let mut out = crate::say::stdout();
    if args.json {
        let entry = |config: usize| {
            t.candidate(config).map(|c| {
                json!({"policy": policies[config].to_string(), "metrics": metrics_json(c, &rows, &names)})
            })
        };
        let doc = json!({
            "recommendation": t.recommendation.and_then(entry),
            "runners_up": t.runners_up.iter().filter_map(|&c| entry(c)).collect::<Vec<_>>(),
            "rejected": t.rejected.iter().map(|(p, why)| json!({"policy": p, "reason": why})).collect::<Vec<_>>(),
            "mode": match mode { Mode::Snapshot => "snapshot", Mode::Playout => "playout" },
            "constraints": match mode {
                Mode::Snapshot => json!({
                    "max_hold_ratio": constraints.max_hold_ratio,
                    "max_starved_ratio": constraints.max_starved_ratio,
                    "max_extrapolated_ratio": constraints.max_extrapolated_ratio,
                    "max_p99_error": constraints.max_p99_error,
                    "objective": constraints.objective.name(),
                }),
                Mode::Playout => json!({
                    "max_late": constraints.max_late,
                    "max_concealment": constraints.max_concealment,
                    "min_mos": constraints.min_mos,
                    "objective": "delay",
                }),
            },
            "configurations": policies.len(),
            "traces": names,
            "frontier": t.frontier.iter().map(|&c| policies[c].to_string()).collect::<Vec<_>>(),
        });
        // Rendered first, so that a closed pipe is the I/O error `main` recognises.
        out.write_all(serde_json::to_string_pretty(&doc)?.as_bytes())?;
        writeln!(out)?;
    } else if mode == Mode::Playout {
        print_playout_text(&mut out, &t, &policies, &names, &constraints)?;
    } else {
        print_text(&mut out, &t, &policies, &names, &constraints)?;
    }
    if let Some(dir) = &args.report {
        let points = match mode {
            Mode::Snapshot => SweepPoints::new(&policies, &t, rows.len()),
            Mode::Playout => SweepPoints::playout(&policies, &t, rows.len()),
        }
        .with_bound(&rows);
        let why = match mode {
            Mode::Snapshot => constraints.rule(policies.len()),
            Mode::Playout => constraints.playout_rule(policies.len()),
        };
        // The traces swept (`--keep-going` may have skipped some).
        let swept: Vec<PathBuf> = args
            .traces
            .iter()
            .filter(|p| names.contains(&p.display().to_string()))
            .cloned()
            .collect();
        write_tune_report(
            dir,
            (&t, &policies),
            (&swept, &loaded),
            &args.options,
            &points,
            (mode, &why),
        )?;
        crate::say::note!("report written to {}/", dir.display());
    }
    if t.recommendation.is_none() {
        // The answer is printed; the exit code says it too (1), for scripts and CI gates.
        return Err(AnswerIsNo(format!(
            "no configuration of {} meets the limits on every trace",
            policies.len()
        ))
        .into());
    }
    Ok(())
}

fn line(c: &Candidate) -> String {
    let opt =
        |v: Option<f64>, unit: &str| v.map_or_else(|| "–".into(), |v| format!("{v:.1}{unit}"));
    format!(
        "starved {:.3} %, hold {:.3} %, mean delay {}, p99 delay {}, p99 error {}",
        100.0 * c.worst.starved_ratio,
        100.0 * c.worst.hold_ratio,
        opt(c.worst.mean_delay_ms, " ms"),
        opt(c.worst.p99_delay_ms, " ms"),
        c.worst
            .p99_error
            .map_or_else(|| "–".into(), |e| format!("{e:.4}"))
    )
}

fn playout_line(c: &Candidate) -> String {
    let opt =
        |v: Option<f64>, unit: &str| v.map_or_else(|| "–".into(), |v| format!("{v:.1}{unit}"));
    format!(
        "late {:.3} %, concealed {:.3} %, mean playout delay {}, p99 {}, MOS {}",
        100.0 * c.worst.late_ratio,
        100.0 * c.worst.concealment_ratio,
        opt(c.worst.mean_delay_ms, " ms"),
        opt(c.worst.p99_delay_ms, " ms"),
        c.worst
            .mos
            .map_or_else(|| "–".into(), |m| format!("{m:.2}"))
    )
}

fn print_playout_text(
    out: &mut impl Write,
    t: &Tuning,
    policies: &[Policy],
    names: &[String],
    c: &Constraints,
) -> Result<()> {
    writeln!(
        out,
        "Tuned {} playout configurations over {} trace(s) ({}); limits: late ≤ {:.2} %{}{}; \
         minimising mean playout delay.",
        policies.len(),
        names.len(),
        names.join(", "),
        100.0 * c.max_late,
        c.max_concealment.map_or(String::new(), |m| format!(
            ", concealment ≤ {:.2} %",
            100.0 * m
        )),
        c.min_mos
            .map_or(String::new(), |m| format!(", MOS ≥ {m:.2}")),
    )?;
    print_verdicts(
        out,
        t,
        policies,
        &Verdicts {
            line: playout_line,
            flag: "--playout ",
            width: 13,
            frontier: "delay/concealment",
        },
    )
}

/// How a mode words the tuning's verdicts.
struct Verdicts {
    /// One candidate's worst figures.
    line: fn(&Candidate) -> String,
    /// What goes before `--policy` to replay it.
    flag: &'static str,
    /// The width of the policy-name column.
    width: usize,
    /// What the Pareto frontier trades.
    frontier: &'static str,
}

/// The recommendation, the runner-up of every other policy, the rejected policies and the
/// counts, in the words of `v`.
fn print_verdicts(
    out: &mut impl Write,
    t: &Tuning,
    policies: &[Policy],
    v: &Verdicts,
) -> Result<()> {
    let w = v.width;
    match t.recommendation.and_then(|r| t.candidate(r)) {
        Some(rec) => {
            writeln!(out, "\nRecommendation (worst trace: {}):", (v.line)(rec))?;
            writeln!(out, "  {}--policy {}", v.flag, policies[rec.config])?;
            if let Some(r) = rec.worst.regret_ms {
                writeln!(
                    out,
                    "  regret: {r:.1} ms above the offline-optimal bound at its share (worst trace)"
                )?;
            }
        }
        None => writeln!(out, "\nNo configuration meets the limits on every trace.")?,
    }
    if !t.runners_up.is_empty() {
        writeln!(out, "\nRunner-up per policy:")?;
        for &r in &t.runners_up {
            if let Some(cand) = t.candidate(r) {
                writeln!(
                    out,
                    "  {:<w$} {}\n   {:w$}{}",
                    policies[r].name(),
                    (v.line)(cand),
                    "",
                    policies[r]
                )?;
            }
        }
    }
    if !t.rejected.is_empty() {
        writeln!(out, "\nRejected:")?;
        for (p, why) in &t.rejected {
            writeln!(out, "  {p:<w$} {why}")?;
        }
    }
    let feasible = t.candidates.iter().filter(|c| c.rejected.is_none()).count();
    writeln!(
        out,
        "\n{feasible} of {} configurations meet the limits; {} are on the {} Pareto frontier.",
        t.candidates.len(),
        t.frontier.len(),
        v.frontier
    )?;
    Ok(())
}

/// The starved, hold and extrapolated limits in force, for the text answer.
fn starvation_limits(c: &Constraints) -> String {
    let mut parts = Vec::new();
    if let Some(s) = c.max_starved_ratio {
        parts.push(format!("starved ratio ≤ {:.2} %", 100.0 * s));
    }
    if c.max_hold_ratio < 1.0 || parts.is_empty() {
        parts.push(format!("hold ratio ≤ {:.2} %", 100.0 * c.max_hold_ratio));
    }
    if let Some(x) = c.max_extrapolated_ratio {
        parts.push(format!("extrapolated ratio ≤ {:.2} %", 100.0 * x));
    }
    parts.join(", ")
}

fn print_text(
    out: &mut impl Write,
    t: &Tuning,
    policies: &[Policy],
    names: &[String],
    c: &Constraints,
) -> Result<()> {
    writeln!(
        out,
        "Tuned {} configurations over {} trace(s) ({}); limits: {}{}; minimising {}.",
        policies.len(),
        names.len(),
        names.join(", "),
        starvation_limits(c),
        c.max_p99_error
            .map_or(String::new(), |e| format!(", p99 error ≤ {e}")),
        c.objective.describe()
    )?;
    print_verdicts(
        out,
        t,
        policies,
        &Verdicts {
            line,
            flag: "",
            width: 9,
            frontier: "delay/hold-ratio",
        },
    )
}

/// The report of `tune --report`: the tuning of `policies`, its rule in words (`why`), drawn
/// from the first trace: `loaded` when the traces were swept in memory, else in passes over
/// its file (or, when those give up, loaded now).
fn write_tune_report(
    dir: &std::path::Path,
    (t, policies): (&Tuning, &[Policy]),
    (paths, loaded): (&[PathBuf], &[TraceStreams]),
    o: &SweepOptions,
    points: &SweepPoints,
    (mode, why): (Mode, &str),
) -> Result<()> {
    let feasible = t.recommendation.is_some();
    let chosen: Vec<(String, Policy)> = t
        .shown(4)
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let label = match (feasible, i) {
                (true, 0) => format!("recommended {}", policies[c].name()),
                (true, _) => format!("runner-up {}", policies[c].name()),
                (false, _) => format!("frontier {}", policies[c].name()),
            };
            (label, policies[c].clone())
        })
        .collect();
    let clock: ClockMapping = o.clock.parse()?;
    let frames = FrameClock::Fps(o.fps);
    let rec = t.recommendation.map(|r| policies[r].to_string());
    let write = |title: &str, trace: &TraceFigures, runs: &[jitterlab_report::Run]| {
        write_full_report(
            dir,
            &ReportInput {
                title,
                trace,
                runs,
                sweep: Some(points),
                recommendation: rec.as_deref().map(|p| (p, why)),
            },
        )
        .with_context(|| format!("cannot write the report into {}", dir.display()))
        .map(|_| ())
    };
    let held;
    let first = match loaded.first() {
        Some(first) => first,
        None => {
            let Some(path) = paths.first() else {
                return Ok(());
            };
            let title = format!("jitterlab tune: {}", path.display());
            if let Some(surveyed) = crate::streamed::survey(path, &o.decode, "reporting")?
                && let Some((figures, runs)) = crate::streamed::draw(
                    path, &o.decode, &surveyed, &chosen, &frames, clock, &title,
                )?
            {
                return write(&title, &figures, &runs);
            }
            held = load_all(std::slice::from_ref(path), o)?;
            let Some(first) = held.first() else {
                return Ok(());
            };
            first
        }
    };
    // The first stream that replays, as `report` shows by default.
    let stream = first.views().first().map_or(0, |v| v.id);
    let runs = match mode {
        Mode::Snapshot => run_policies(&first.decoded, stream, &chosen, &frames, clock)?,
        Mode::Playout => {
            play_policies(&first.decoded, stream, &chosen, clock, o.quality.options()?)?
        }
    };
    let title = format!("jitterlab tune: {}", first.name);
    write(
        &title,
        &TraceFigures::of(&first.decoded, stream, &title),
        &runs,
    )
}
