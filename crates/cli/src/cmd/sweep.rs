//! `jitterlab sweep`: many configurations over recorded traces, in parallel, as a table.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use jitterlab_capture::source::is_stdio;
use jitterlab_replay::shard::shard_from_process_env;
use jitterlab_replay::sweep::{Row, Shard, SweepTrace};
use jitterlab_replay::tune::{Constraints, tune};
use jitterlab_replay::{Policy, TraceStreams};
use jitterlab_report::results::{Provenance, check_results_output_as, write_results_with};

use crate::input::{report_out, shown_out, stdin_once};
use crate::sweeping::{Mode, SweepOptions, execute, execute_playout, load_all, policies};

/// Arguments of `jitterlab sweep`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab sweep a.jtr b.jtr --grid grid.toml -o rows.parquet\n  jitterlab sweep a.jtr --sweep 'fixed:delay=0..300ms/5ms' -o rows.csv -j 4\n  jitterlab sweep *.jtr --grid grid.toml --shard 2/8 -o part2.parquet\n  sbatch --array=0-7 --wrap 'jitterlab sweep a.jtr --grid grid.toml --shard auto -o part_$SLURM_ARRAY_TASK_ID.parquet'"
)]
pub(crate) struct Args {
    /// The traces (or pcap/pcapng captures) to sweep over.
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    #[command(flatten)]
    options: SweepOptions,
    /// Write every row here: .parquet, .csv or .json (- writes standard output, with
    /// --format).
    #[arg(short, long, value_name = "OUT", help_heading = "Output")]
    output: Option<PathBuf>,
    /// The rows' format, whatever OUT's extension (needed for -o -).
    #[arg(long, value_name = "FORMAT", value_parser = ["parquet", "csv", "json"])]
    format: Option<String>,
    /// Overwrite OUT if it exists.
    #[arg(long, help_heading = "Output")]
    force: bool,
    /// Run only part I of N of the (trace, configuration) pairs (deterministic, disjoint);
    /// `auto` takes them from a Slurm job array (SLURM_ARRAY_TASK_ID, _COUNT, _MIN) or a
    /// Kubernetes Indexed Job (JOB_COMPLETION_INDEX, JITTERLAB_SHARD_COUNT); docs/cluster.md.
    #[arg(long, value_name = "I/N|auto", help_heading = "Sweep")]
    shard: Option<String>,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let shard: Shard = match args.shard.as_deref().map(str::trim) {
        Some("auto") => shard_from_process_env()?,
        Some(s) => s.parse()?,
        None => Shard::ALL,
    };
    // Everything that can be refused is checked before any trace is read.
    stdin_once(args.traces.iter().chain(&args.options.grid))?;
    let to_stdout = args.output.as_deref().is_some_and(is_stdio);
    if to_stdout && args.format.is_none() {
        bail!("-o -: standard output has no extension; give --format parquet|csv|json");
    }
    if args.format.is_some() && args.output.is_none() {
        bail!("--format applies to the rows written with -o OUT");
    }
    let policies = policies(&args.options, None)?;
    if let Some(out) = &args.output {
        check_results_output_as(out, args.format.as_deref(), args.force)?;
    }
    let started = Instant::now();
    let streamed = crate::streamed::sweep(&args.traces, &policies, &args.options, shard)?;
    let streaming = streamed.is_some();
    let (mode, names, rows, packets, load_secs, secs) = match streamed {
        Some(swept) => {
            let secs = started.elapsed().as_secs_f64();
            let packets = swept.packets as usize;
            (Mode::Snapshot, swept.names, swept.rows, packets, 0.0, secs)
        }
        None => in_memory(args, &policies, shard, started)?,
    };
    if let Some(out) = &args.output {
        // Every row says what made it, so shards concatenate and still tell their origin.
        let provenance = Provenance {
            shard,
            version: env!("JITTERLAB_VERSION").to_owned(),
            fps: (mode == Mode::Snapshot).then_some(args.options.fps),
            clock: args.options.clock.parse()?,
        };
        write_results_with(
            out,
            args.format.as_deref(),
            args.force,
            &names,
            &policies,
            &rows,
            Some(&provenance),
        )
        .with_context(|| format!("cannot write {}", shown_out(out)))?;
    }
    crate::say::note!(
        "{} {} ({} configurations × {} trace(s){}) in {secs:.2} s {}: \
         {:.1} M packet-configuration steps/s{}",
        rows.len(),
        if mode == Mode::Playout {
            "playouts"
        } else {
            "replays"
        },
        policies.len(),
        names.len(),
        if shard == Shard::ALL {
            String::new()
        } else {
            format!(", shard {shard}")
        },
        if streaming {
            "in streaming passes, reading included".to_owned()
        } else {
            format!("after {load_secs:.2} s reading")
        },
        packets as f64 / secs / 1e6,
        args.output.as_ref().map_or(String::new(), |o| format!(
            "; rows written to {}",
            shown_out(o)
        ))
    );
    // With the rows on standard output, the frontier goes to standard error.
    print_frontier(&mut report_out(to_stdout), &rows, &policies)?;
    Ok(())
}

/// What a sweep made: its mode, the traces' names, the rows, packets over the rows, seconds
/// reading and seconds replaying.
type Outcome = (Mode, Vec<String>, Vec<Row>, usize, f64, f64);

/// The sweep with every trace loaded whole.
fn in_memory(args: &Args, policies: &[Policy], shard: Shard, started: Instant) -> Result<Outcome> {
    let loaded = load_all(&args.traces, &args.options)?;
    let mode = Mode::choose(&args.options, &loaded);
    let names: Vec<String> = loaded.iter().map(|t| t.name.clone()).collect();
    let (rows, packets, load_secs, secs) = match mode {
        Mode::Snapshot => {
            let traces: Vec<SweepTrace<'_>> = loaded.iter().map(TraceStreams::prepare).collect();
            let load_secs = started.elapsed().as_secs_f64();
            let replaying = Instant::now();
            let rows = execute(&traces, policies, &args.options, shard)?;
            let packets: usize = rows.iter().map(|r| traces[r.trace].packets()).sum();
            (rows, packets, load_secs, replaying.elapsed().as_secs_f64())
        }
        Mode::Playout => {
            let load_secs = started.elapsed().as_secs_f64();
            let replaying = Instant::now();
            let rows = execute_playout(&loaded, policies, &args.options, shard)?;
            let per_trace: Vec<usize> = loaded
                .iter()
                .map(|l| l.views().iter().map(|v| v.samples.len()).sum())
                .collect();
            let packets: usize = rows.iter().map(|r| per_trace[r.trace]).sum();
            (rows, packets, load_secs, replaying.elapsed().as_secs_f64())
        }
    };
    Ok((mode, names, rows, packets, load_secs, secs))
}

/// The Pareto frontier of a playout sweep: worst mean playout delay against worst concealment.
fn print_playout_frontier(
    out: &mut impl Write,
    t: &jitterlab_replay::tune::Tuning,
    policies: &[Policy],
) -> Result<()> {
    writeln!(
        out,
        "Pareto frontier (worst trace; lower playout delay or less concealment): {} of {} configurations",
        t.frontier.len(),
        t.candidates.len()
    )?;
    writeln!(
        out,
        "{:>10}  {:>8}  {:>14}  {:>13}  {:>5}  policy",
        "conceal %", "late %", "mean delay ms", "p99 delay ms", "MOS"
    )?;
    let shown = t.frontier.len().min(15);
    for &config in &t.frontier[t.frontier.len() - shown..] {
        let Some(c) = t.candidate(config) else {
            continue;
        };
        let opt = |v: Option<f64>, d: usize| v.map_or_else(|| "–".into(), |v| format!("{v:.d$}"));
        writeln!(
            out,
            "{:>10.3}  {:>8.3}  {:>14}  {:>13}  {:>5}  {}",
            100.0 * c.worst.concealment_ratio,
            100.0 * c.worst.late_ratio,
            opt(c.worst.mean_delay_ms, 1),
            opt(c.worst.p99_delay_ms, 1),
            opt(c.worst.mos, 2),
            policies[config]
        )?;
    }
    Ok(())
}

/// The best rows: the Pareto frontier of worst display delay against worst hold ratio.
pub(crate) fn print_frontier(
    out: &mut impl Write,
    rows: &[Row],
    policies: &[Policy],
) -> Result<()> {
    let t = tune(rows, policies, &Constraints::default());
    if rows.iter().any(|r| r.playout.is_some()) {
        return print_playout_frontier(out, &t, policies);
    }
    writeln!(
        out,
        "Pareto frontier (worst trace; lower delay or fewer holds): {} of {} configurations",
        t.frontier.len(),
        t.candidates.len()
    )?;
    writeln!(
        out,
        "{:>10}  {:>14}  {:>13}  {:>10}  policy",
        "hold %", "mean delay ms", "p99 delay ms", "p99 error"
    )?;
    let shown = t.frontier.len().min(15);
    // Keep the low-hold end (the interesting one) when the frontier is long.
    for &config in &t.frontier[t.frontier.len() - shown..] {
        let Some(c) = t.candidates.iter().find(|c| c.config == config) else {
            continue;
        };
        let opt = |v: Option<f64>, d: usize| v.map_or_else(|| "–".into(), |v| format!("{v:.d$}"));
        writeln!(
            out,
            "{:>10.3}  {:>14}  {:>13}  {:>10}  {}",
            100.0 * c.worst.hold_ratio,
            opt(c.worst.mean_delay_ms, 1),
            opt(c.worst.p99_delay_ms, 1),
            opt(c.worst.p99_error, 4),
            policies[config]
        )?;
    }
    Ok(())
}
