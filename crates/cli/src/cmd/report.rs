//! `jitterlab report`: PNG figures and an index for a trace, its replays and a sweep.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use jitterlab_replay::grid::default_tune_grid_for;
use jitterlab_replay::sweep::Shard;
use jitterlab_replay::tune::{Constraints, tune};
use jitterlab_replay::{ClockMapping, FrameClock, Policy};
use jitterlab_report::results::{SweepPoints, read_results};
use jitterlab_report::{ReportInput, run_policies, write_full_report};

use crate::cmd::sweep::{Loaded, SweepOptions, execute};

/// Arguments of `jitterlab report`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The trace (or pcap/pcapng capture) to report on.
    trace: PathBuf,
    /// Configurations to replay and compare (repeatable); default: the recommendation and
    /// runners-up of the sweep (--sweep), or of `tune`'s default grid.
    #[arg(long, value_name = "POLICY")]
    policy: Vec<String>,
    /// A sweep's results (.parquet, .csv or .json from `jitterlab sweep`) for the Pareto figure,
    /// the heat map and the recommendation.
    #[arg(long = "sweep", value_name = "FILE")]
    sweep_results: Option<PathBuf>,
    /// The directory to write (created if needed; unrelated files are left alone).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// The stream the figures show (by its index in `jitterlab info`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    stream: u32,
    /// The largest acceptable hold ratio for the recommendation, e.g. 1%.
    #[arg(long, value_name = "RATIO", default_value = "1%")]
    max_hold_ratio: String,
    /// Render frames at this rate.
    #[arg(long, default_value_t = 60.0)]
    fps: f64,
    /// Clock mapping: estimate (default), hindsight or offset=MS, as for replay.
    #[arg(long, value_name = "MAPPING", default_value = "estimate")]
    clock: String,
    /// Worker threads for the default sweep (default: every core).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    decode: crate::input::DecodeArgs,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let max_hold = crate::input::parse_ratio("--max-hold-ratio", &args.max_hold_ratio)?;
    let options = SweepOptions {
        grid: Vec::new(),
        sweeps: Vec::new(),
        fps: args.fps,
        clock: args.clock.clone(),
        max_configs: jitterlab_replay::grid::DEFAULT_MAX_CONFIGS,
        threads: args.threads,
        quiet: args.quiet,
        keep_going: false,
        decode: args.decode.clone(),
    };
    let explicit: Vec<Policy> = args
        .policy
        .iter()
        .map(|p| p.parse::<Policy>().with_context(|| format!("--policy {p}")))
        .collect::<Result<_>>()?;
    let sweep_file = args
        .sweep_results
        .as_deref()
        .map(|p| read_results(p).with_context(|| p.display().to_string()))
        .transpose()?;
    let decoded = crate::input::load(&args.trace, &options.decode)?;
    if decoded.samples.is_empty() {
        // Nothing to replay: the figures say "no data" rather than the command failing.
        let title = format!("jitterlab report: {}", args.trace.display());
        let written = write_full_report(
            &args.output,
            &ReportInput {
                title: &title,
                decoded: &decoded,
                stream: args.stream,
                runs: &[],
                sweep: sweep_file.as_ref(),
                recommendation: None,
            },
        )?;
        eprintln!(
            "warning: {}: no decodable packets; the figures say so",
            args.trace.display()
        );
        println!(
            "Report written to {}/ ({} files; open index.html)",
            args.output.display(),
            written.files.len()
        );
        return Ok(());
    }
    let loaded = Loaded::new(args.trace.display().to_string(), decoded)?;
    if !loaded.decoded.streams.iter().any(|s| s.id == args.stream) {
        bail!(
            "--stream {}: {} has {} stream(s)",
            args.stream,
            args.trace.display(),
            loaded.decoded.streams.len()
        );
    }
    let rule = format!(
        "The lowest mean display delay whose hold ratio stays at or below {:.2} % on every trace.",
        100.0 * max_hold
    );
    // The sweep to show: the given results, or tune's default grid over this trace.
    let (sweep, recommended, mut chosen): (SweepPoints, Option<String>, Vec<String>) =
        match sweep_file {
            Some(points) => {
                let rec = points
                    .recommendation(max_hold)
                    .map(|i| points.points[i].policy.clone());
                let mut chosen: Vec<String> = rec.iter().cloned().collect();
                for name in Policy::NAMES {
                    let best = points
                        .points
                        .iter()
                        .filter(|p| {
                            p.name == *name && p.worst_hold <= max_hold && p.worst_delay.is_some()
                        })
                        .min_by(|a, b| {
                            a.worst_delay
                                .partial_cmp(&b.worst_delay)
                                .unwrap_or(std::cmp::Ordering::Equal)
                        });
                    if let Some(b) = best
                        && !chosen.contains(&b.policy)
                    {
                        chosen.push(b.policy.clone());
                    }
                }
                (points, rec, chosen)
            }
            None => {
                let grid = default_tune_grid_for(crate::cmd::tune::send_rate(
                    std::slice::from_ref(&loaded),
                ));
                let policies = grid.expand(options.max_configs)?;
                let traces = [loaded.prepare()];
                let rows = execute(&traces, &policies, &options, Shard::ALL)?;
                let t = tune(
                    &rows,
                    &policies,
                    &Constraints {
                        max_hold_ratio: max_hold,
                        ..Constraints::default()
                    },
                );
                let names = vec![loaded.name.clone()];
                let chosen = t
                    .recommendation
                    .iter()
                    .chain(&t.runners_up)
                    .map(|&c| policies[c].to_string())
                    .collect();
                (
                    SweepPoints::from_rows(&names, &policies, &rows),
                    t.recommendation.map(|c| policies[c].to_string()),
                    chosen,
                )
            }
        };
    if !explicit.is_empty() {
        chosen = explicit.iter().map(Policy::to_string).collect();
    }
    chosen.truncate(6);
    let runs_in: Vec<(String, Policy)> = chosen
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let policy: Policy = p.parse()?;
            let label = if recommended.as_deref() == Some(p.as_str()) && args.policy.is_empty() {
                format!("recommended {}", policy.name())
            } else {
                format!("{} #{}", policy.name(), i + 1)
            };
            Ok((label, policy))
        })
        .collect::<Result<_>>()?;
    let clock: ClockMapping = options.clock.parse()?;
    let runs = run_policies(
        &loaded.decoded,
        args.stream,
        &runs_in,
        &FrameClock::Fps(options.fps),
        clock,
    )?;
    let title = format!("jitterlab report: {}", args.trace.display());
    let written = write_full_report(
        &args.output,
        &ReportInput {
            title: &title,
            decoded: &loaded.decoded,
            stream: args.stream,
            runs: &runs,
            sweep: Some(&sweep),
            recommendation: recommended.as_deref().map(|p| (p, rule.as_str())),
        },
    )
    .with_context(|| format!("cannot write the report into {}", args.output.display()))?;
    match &recommended {
        Some(p) => println!("Recommended: --policy {p}"),
        None => println!(
            "No configuration of the sweep meets a hold ratio of {:.2} %.",
            100.0 * max_hold
        ),
    }
    println!(
        "Report written to {}/ ({} files; open index.html)",
        args.output.display(),
        written.files.len()
    );
    Ok(())
}
