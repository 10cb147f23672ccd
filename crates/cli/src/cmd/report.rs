//! `jitterlab report`: PNG figures and an index for a trace, its replays and a sweep.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use jitterlab_replay::grid::{default_playout_grid_of, default_tune_grid_for, packet_rate};
use jitterlab_replay::sweep::Shard;
use jitterlab_replay::tune::tune;
use jitterlab_replay::{ClockMapping, FrameClock, Policy, StreamingReplay, TraceStreams, streams};
use jitterlab_report::results::{SweepPoints, SweepTable, read_results};
use jitterlab_report::{ReportInput, TraceFigures, play_policies, run_policies, write_full_report};

use crate::sweeping::{Mode, SweepOptions, TuneLimits, execute, execute_playout, playout_media};

/// Arguments of `jitterlab report`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab report game.jtr -o report/\n  jitterlab sweep game.jtr --grid grid.toml -o rows.parquet\n  jitterlab report game.jtr --results rows.parquet -o report/"
)]
pub(crate) struct Args {
    /// The trace (or pcap/pcapng capture) to report on.
    trace: PathBuf,
    /// Configurations to replay and compare (repeatable); default: the recommendation and
    /// runners-up of the sweep (--results), or of `tune`'s default grid.
    #[arg(long, value_name = "POLICY", help_heading = "Replay")]
    policy: Vec<String>,
    /// A sweep's results (.parquet, .csv or .json from `jitterlab sweep`) for the Pareto figure,
    /// the heat map and the recommendation (judged by the same rule and flags as `tune`).
    /// `--sweep FILE` is the old name.
    #[arg(
        long = "results",
        alias = "sweep",
        value_name = "FILE",
        help_heading = "Replay"
    )]
    sweep_results: Option<PathBuf>,
    /// The directory to write (created if needed; unrelated files are left alone).
    #[arg(short, long, value_name = "DIR", help_heading = "Output")]
    output: PathBuf,
    /// The tune rule's limits and objective for the recommendation, as for `tune`.
    #[command(flatten)]
    limits: TuneLimits,
    /// Render frames at this rate.
    #[arg(long, default_value_t = 60.0, help_heading = "Replay")]
    fps: f64,
    /// Clock mapping: estimate (default), hindsight or offset=MS, as for replay.
    #[arg(long, value_name = "MAPPING", default_value = "estimate", value_parser = crate::values::Clock, help_heading = "Replay")]
    clock: String,
    /// Worker threads for the default sweep and the figures (default or 0: every core).
    #[arg(short = 'j', long, value_name = "N", help_heading = "Replay")]
    threads: Option<usize>,
    /// Playout mode (the default for RTP audio and video): figures of discrete playout.
    #[arg(long, conflicts_with = "snapshot", help_heading = "Replay")]
    playout: bool,
    /// Snapshot mode, even for RTP audio or video.
    #[arg(long, help_heading = "Replay")]
    snapshot: bool,
    /// Draw the report in memory: the whole trace is loaded (the default for a trace under
    /// 512 MB, or one that cannot be drawn in passes).
    #[arg(long, conflicts_with = "streaming", help_heading = "Replay")]
    in_memory: bool,
    /// Draw the report in passes over the file whatever its size (the default from 512 MB):
    /// memory follows the figures' width and the streams' windows, not the trace.
    #[arg(long, help_heading = "Replay")]
    streaming: bool,
    #[command(flatten)]
    quality: crate::input::QualityArgs,
    #[command(flatten)]
    decode: crate::input::DecodeArgs,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    crate::sweeping::use_threads(args.threads)?;
    crate::input::stdin_once(std::iter::once(&args.trace).chain(&args.sweep_results))?;
    crate::input::not_stdout_dir(&args.output, "-o")?;
    let constraints = args.limits.constraints()?;
    let options = SweepOptions {
        grid: Vec::new(),
        sweeps: Vec::new(),
        fps: args.fps,
        clock: args.clock.clone(),
        max_configs: jitterlab_replay::grid::DEFAULT_MAX_CONFIGS,
        allow_exec: false,
        threads: args.threads,
        keep_going: false,
        playout: args.playout,
        snapshot: args.snapshot,
        in_memory: args.in_memory,
        streaming: args.streaming,
        quality: args.quality.clone(),
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
        .map(|path| read_results(path).with_context(|| format!("--results {}", path.display())))
        .transpose()?;
    let title = format!("jitterlab report: {}", args.trace.display());
    let clock: ClockMapping = options.clock.parse()?;
    let frames = FrameClock::Fps(options.fps);
    // A playout sweep's results are drawn in memory, in playout mode.
    let playout_results = sweep_file
        .as_ref()
        .is_some_and(|t| t.rows.iter().any(|r| r.playout.is_some()));
    if !playout_results
        && crate::streamed::should_stream(std::slice::from_ref(&args.trace), &options)
        && explicit.iter().all(|p| StreamingReplay::check(p).is_ok())
        && crate::streamed::streamable(&frames, clock, &[])
        && let Some(surveyed) = crate::streamed::survey(&args.trace, &options.decode, "reporting")?
    {
        let table = match &sweep_file {
            Some(t) => Some(t.clone()),
            None => {
                // tune's default grid for the trace's packet rate, swept in passes.
                let (stats, _) = crate::streamed::stream_stats(&args.trace, &options.decode)?;
                let rate = jitterlab_replay::grid::packet_rate_of(&stats);
                let policies = default_tune_grid_for(rate).expand(options.max_configs)?;
                crate::streamed::sweep(
                    std::slice::from_ref(&args.trace),
                    &policies,
                    &options,
                    Shard::ALL,
                )?
                .map(|swept| SweepTable {
                    traces: swept.names,
                    policies,
                    rows: swept.rows,
                })
            }
        };
        if let Some(table) = table
            && streaming(
                args,
                &options,
                &explicit,
                &table,
                &constraints,
                &surveyed,
                &title,
            )?
        {
            return Ok(());
        }
    }
    in_memory(args, &options, &explicit, sweep_file, &constraints)
}

/// A report of a trace in two passes over the file (a third for tune's default grid, and
/// the sweep's own): `false` when the replay's pass gives up (said in a note) and the report
/// is to be drawn in memory.
fn streaming(
    args: &Args,
    options: &SweepOptions,
    explicit: &[Policy],
    table: &SweepTable,
    constraints: &jitterlab_replay::tune::Constraints,
    surveyed: &crate::streamed::Surveyed,
    title: &str,
) -> Result<bool> {
    for note in streams::unreplayable(&surveyed.decoded) {
        crate::say::note!("note: {}: {note}", args.trace.display());
    }
    let tuning = tune(&table.rows, &table.policies, constraints);
    let rule = constraints.rule(table.policies.len());
    let recommended = tuning.recommendation.map(|c| table.policies[c].clone());
    let runs_in = shown_runs(args, explicit, &tuning, table, recommended.as_ref());
    let clock: ClockMapping = options.clock.parse()?;
    let Some((figures, runs)) = crate::streamed::draw(
        &args.trace,
        &options.decode,
        surveyed,
        &runs_in,
        &FrameClock::Fps(options.fps),
        clock,
        title,
    )?
    else {
        return Ok(false);
    };
    let points =
        SweepPoints::new(&table.policies, &tuning, table.rows.len()).with_bound(&table.rows);
    write_and_say(
        args,
        &ReportInput {
            title,
            trace: &figures,
            runs: &runs,
            sweep: Some(&points),
            recommendation: None,
        },
        recommended.as_ref(),
        &rule,
        Mode::Snapshot,
        &tuning,
        table,
    )?;
    Ok(true)
}

/// The configurations a report replays, labelled: `--policy` as given, else the
/// recommendation and runners-up (or the frontier's low-hold end), at most six.
fn shown_runs(
    args: &Args,
    explicit: &[Policy],
    tuning: &jitterlab_replay::tune::Tuning,
    table: &SweepTable,
    recommended: Option<&Policy>,
) -> Vec<(String, Policy)> {
    let mut chosen: Vec<Policy> = if explicit.is_empty() {
        tuning
            .shown(6)
            .into_iter()
            .map(|c| table.policies[c].clone())
            .collect()
    } else {
        explicit.to_vec()
    };
    chosen.truncate(6);
    chosen
        .into_iter()
        .enumerate()
        .map(|(i, policy)| {
            let label = if recommended == Some(&policy) && args.policy.is_empty() {
                format!("recommended {}", policy.name())
            } else {
                format!("{} #{}", policy.name(), i + 1)
            };
            (label, policy)
        })
        .collect()
}

/// Writes the report `input` shows (its recommendation given here) and says what it
/// recommends and where it went.
fn write_and_say(
    args: &Args,
    input: &ReportInput<'_>,
    recommended: Option<&Policy>,
    rule: &str,
    mode: Mode,
    tuning: &jitterlab_replay::tune::Tuning,
    table: &SweepTable,
) -> Result<()> {
    let recommended_text = recommended.map(Policy::to_string);
    let written = write_full_report(
        &args.output,
        &ReportInput {
            recommendation: recommended_text.as_deref().map(|p| (p, rule)),
            ..*input
        },
    )
    .with_context(|| format!("cannot write the report into {}", args.output.display()))?;
    let flag = if mode == Mode::Playout {
        "--playout "
    } else {
        ""
    };
    let mut out = crate::say::stdout();
    match recommended {
        Some(p) => writeln!(out, "Recommended: {flag}--policy {p}")?,
        None => writeln!(
            out,
            "No configuration of the sweep meets the limits: {rule}"
        )?,
    }
    for &c in &tuning.runners_up {
        writeln!(out, "Runner-up: {flag}--policy {}", table.policies[c])?;
    }
    writeln!(
        out,
        "Report written to {}/ ({} files; open index.html)",
        args.output.display(),
        written.files.len()
    )?;
    Ok(())
}

/// The report of the whole trace loaded in memory.
fn in_memory(
    args: &Args,
    options: &SweepOptions,
    explicit: &[Policy],
    sweep_file: Option<SweepTable>,
    constraints: &jitterlab_replay::tune::Constraints,
) -> Result<()> {
    let options = &SweepOptions {
        in_memory: true,
        streaming: false,
        ..options.clone()
    };
    let constraints = *constraints;
    let decoded = crate::input::load(&args.trace, &options.decode)?;
    // The stream the figures show: the one selected, else the first.
    let mut stream = args
        .decode
        .select
        .stream
        .or_else(|| decoded.streams.first().map(|s| s.id))
        .unwrap_or(0);
    let title = format!("jitterlab report: {}", args.trace.display());
    if decoded.samples.is_empty() {
        // Nothing to replay: the figures say "no data" rather than the command failing.
        let points = sweep_file.as_ref().map(|t| {
            SweepPoints::new(
                &t.policies,
                &tune(&t.rows, &t.policies, &constraints),
                t.rows.len(),
            )
            .with_bound(&t.rows)
        });
        let written = write_full_report(
            &args.output,
            &ReportInput {
                title: &title,
                trace: &TraceFigures::of(&decoded, stream, &title),
                runs: &[],
                sweep: points.as_ref(),
                recommendation: None,
            },
        )?;
        eprintln!(
            "warning: {}: no decodable packets; the figures say so",
            args.trace.display()
        );
        writeln!(
            crate::say::stdout(),
            "Report written to {}/ ({} files; open index.html)",
            args.output.display(),
            written.files.len()
        )?;
        return Ok(());
    }
    let loaded = TraceStreams::new(args.trace.display().to_string(), decoded)?;
    for note in &loaded.skipped {
        crate::say::note!("note: {}: {note}", args.trace.display());
    }
    if args.decode.select.stream.is_none()
        && let Some(first) = loaded.views().first()
    {
        stream = first.id;
    }
    streams::check(
        loaded
            .decoded
            .streams
            .iter()
            .find(|s| s.id == stream)
            .context("the selected stream")?,
    )
    .with_context(|| format!("--stream {stream}"))?;
    // The sweep to show: the given results, or tune's default grid over this trace; judged
    // by the one tune rule either way. A results file says its own mode.
    let mode = match &sweep_file {
        Some(t) if t.rows.iter().any(|r| r.playout.is_some()) => Mode::Playout,
        Some(_) if !args.playout => Mode::Snapshot,
        _ => Mode::choose(options, std::slice::from_ref(&loaded)),
    };
    let table = match sweep_file {
        Some(table) => table,
        None => {
            let rate = packet_rate([&loaded.decoded]);
            let grid = match mode {
                Mode::Snapshot => default_tune_grid_for(rate),
                Mode::Playout => {
                    default_playout_grid_of(rate, playout_media(std::slice::from_ref(&loaded)))
                }
            };
            let policies = grid.expand(options.max_configs)?;
            let rows = match mode {
                Mode::Snapshot => {
                    let traces = [loaded.prepare()];
                    execute(&traces, &policies, options, Shard::ALL)?
                }
                Mode::Playout => execute_playout(
                    std::slice::from_ref(&loaded),
                    &policies,
                    options,
                    Shard::ALL,
                )?,
            };
            SweepTable {
                traces: vec![loaded.name.clone()],
                policies,
                rows,
            }
        }
    };
    let tuning = tune(&table.rows, &table.policies, &constraints);
    let rule = match mode {
        Mode::Snapshot => constraints.rule(table.policies.len()),
        Mode::Playout => constraints.playout_rule(table.policies.len()),
    };
    let recommended = tuning.recommendation.map(|c| table.policies[c].clone());
    // What `tune --report` shows too: the recommendation and runners-up, or the frontier's
    // low-hold end when nothing is feasible.
    let runs_in = shown_runs(args, explicit, &tuning, &table, recommended.as_ref());
    let clock: ClockMapping = options.clock.parse()?;
    let (runs, points) = match mode {
        Mode::Snapshot => (
            run_policies(
                &loaded.decoded,
                stream,
                &runs_in,
                &FrameClock::Fps(options.fps),
                clock,
            )?,
            SweepPoints::new(&table.policies, &tuning, table.rows.len()).with_bound(&table.rows),
        ),
        Mode::Playout => (
            play_policies(
                &loaded.decoded,
                stream,
                &runs_in,
                clock,
                args.quality.options()?,
            )?,
            SweepPoints::playout(&table.policies, &tuning, table.rows.len())
                .with_bound(&table.rows),
        ),
    };
    write_and_say(
        args,
        &ReportInput {
            title: &title,
            trace: &TraceFigures::of(&loaded.decoded, stream, &title),
            runs: &runs,
            sweep: Some(&points),
            recommendation: None,
        },
        recommended.as_ref(),
        &rule,
        mode,
        &tuning,
        &table,
    )
}
