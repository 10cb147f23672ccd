//! `jitterlab sweep`: many configurations over recorded traces, in parallel, as a table.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use jitterlab_capture::decode::Decoded;
use jitterlab_capture::{Reader, Sample};
use jitterlab_replay::grid::{DEFAULT_MAX_CONFIGS, Grid};
use jitterlab_replay::sweep::{self, Row, Shard, SweepTrace};
use jitterlab_replay::tune::{Constraints, tune};
use jitterlab_replay::{ClockMapping, FrameClock, Policy, Prepared, Stream};
use jitterlab_report::results::write_results;

use crate::input::{DecodeArgs, load};

/// Options shared by `sweep` and `tune`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SweepOptions {
    /// A grid file (TOML): one table per policy with the values to try per key, e.g.
    /// `[fixed]` `delay = "0ms..300ms step 5ms"` (see docs/sweep.md).
    #[arg(long, value_name = "GRID.toml")]
    pub(crate) grid: Vec<PathBuf>,
    /// A grid on the command line: POLICY:KEY=VALUES[,KEY=VALUES], VALUES being A..B/STEP,
    /// V1|V2|... or one value, e.g. fixed:delay=0..300ms/5ms,max_gap=100ms|250ms (repeatable).
    #[arg(long = "sweep", value_name = "SPEC")]
    pub(crate) sweeps: Vec<String>,
    /// Render frames at this rate.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) fps: f64,
    /// Clock mapping: estimate (default), hindsight or offset=MS, as for replay.
    #[arg(long, value_name = "MAPPING", default_value = "estimate")]
    pub(crate) clock: String,
    /// Refuse grids that make more configurations than this.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONFIGS)]
    pub(crate) max_configs: usize,
    /// Worker threads (default: every core).
    #[arg(long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// No progress bar.
    #[arg(long, short)]
    pub(crate) quiet: bool,
    /// Skip traces that cannot be read (each is reported) instead of stopping.
    #[arg(long)]
    pub(crate) keep_going: bool,
    #[command(flatten)]
    pub(crate) decode: DecodeArgs,
}

/// Arguments of `jitterlab sweep`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The traces (or pcap/pcapng captures) to sweep over.
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    #[command(flatten)]
    options: SweepOptions,
    /// Write every row here: .parquet, .csv or .json.
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,
    /// Overwrite OUT if it exists.
    #[arg(long)]
    force: bool,
    /// Run only part I of N of the (trace, configuration) pairs (deterministic, disjoint).
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
}

/// A trace decoded once, with its streams' samples kept for preparing.
pub(crate) struct Loaded {
    pub(crate) name: String,
    pub(crate) decoded: Decoded,
    /// Per stream: its channel names and, when the trace holds other streams too, a copy of
    /// its samples and ground truth (a trace of one stream lends `decoded`'s own, uncopied).
    streams: Vec<(Vec<String>, Option<SamplesAndTruth>)>,
}

/// One stream's received samples and ground truth.
type SamplesAndTruth = (Vec<Sample>, Vec<Sample>);

impl Loaded {
    /// Wraps a decoded trace; fails when it has no packets or an RTP clock rate is unknown.
    pub(crate) fn new(name: String, decoded: Decoded) -> Result<Self> {
        if decoded.samples.is_empty() {
            bail!("{name}: the trace holds no decodable packets");
        }
        let mut streams = Vec::new();
        for info in &decoded.streams {
            if !info.has_send_times() {
                bail!(
                    "{name}: {}: RTP clock rate for payload type {} is unknown; pass --clock-rate {}=HZ",
                    info.label(),
                    info.payload_type.unwrap_or(0),
                    info.payload_type.unwrap_or(0)
                );
            }
            let copy = match (decoded.samples_of(info.id), decoded.truth_of(info.id)) {
                (Cow::Borrowed(_), Cow::Borrowed(_)) => None,
                (samples, truth) => Some((samples.into_owned(), truth.into_owned())),
            };
            streams.push((info.channels.clone(), copy));
        }
        Ok(Self {
            name,
            decoded,
            streams,
        })
    }

    /// Decodes a trace file or capture.
    pub(crate) fn open(path: &Path, decode: &DecodeArgs) -> Result<Self> {
        let decoded = load(path, decode)?;
        Self::new(path.display().to_string(), decoded)
    }

    /// The embedded demo trace.
    pub(crate) fn demo() -> Result<Self> {
        let decoded = jitterlab_capture::decode::decode_trace(
            Reader::new(crate::cmd::demo::DEMO_TRACE)?,
            None,
        )?;
        Self::new("demo (embedded)".into(), decoded)
    }

    /// The streams prepared for replay (borrowing the samples).
    pub(crate) fn prepare(&self) -> SweepTrace<'_> {
        SweepTrace {
            name: self.name.clone(),
            streams: self
                .streams
                .iter()
                .map(|(channels, copy)| {
                    let (samples, truth) = match copy {
                        Some((samples, truth)) => (samples.as_slice(), truth.as_slice()),
                        None => (
                            self.decoded.samples.as_slice(),
                            self.decoded.truth.as_slice(),
                        ),
                    };
                    Prepared::new(
                        &Stream::new(samples)
                            .with_truth(truth)
                            .with_channels(channels),
                    )
                })
                .collect(),
        }
    }
}

/// Loads every trace, reporting unreadable ones by name (skipping them with `keep_going`).
pub(crate) fn load_all(paths: &[PathBuf], o: &SweepOptions) -> Result<Vec<Loaded>> {
    let mut out = Vec::new();
    for path in paths {
        match Loaded::open(path, &o.decode) {
            Ok(l) => out.push(l),
            Err(e) if o.keep_going => eprintln!("skipped {}: {e:#}", path.display()),
            Err(e) => {
                return Err(e.context(format!(
                    "cannot sweep {} (pass --keep-going to skip unreadable traces)",
                    path.display()
                )));
            }
        }
    }
    if out.is_empty() {
        bail!("no readable trace to sweep");
    }
    Ok(out)
}

/// The configurations of `--grid` files and `--sweep` specs (or `fallback` when none given).
pub(crate) fn policies(o: &SweepOptions, fallback: Option<Grid>) -> Result<Vec<Policy>> {
    let mut grid = Grid::default();
    for path in &o.grid {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let g = Grid::from_toml(&text).with_context(|| path.display().to_string())?;
        grid.axes.extend(g.axes);
    }
    for spec in &o.sweeps {
        grid.add_cli(spec)?;
    }
    if grid.axes.is_empty() {
        match fallback {
            Some(g) => grid = g,
            None => bail!("give a grid: --grid GRID.toml or --sweep POLICY:KEY=VALUES"),
        }
    }
    Ok(grid.expand(o.max_configs)?)
}

/// Runs the sweep with a progress bar on a terminal.
pub(crate) fn execute(
    traces: &[SweepTrace<'_>],
    policies: &[Policy],
    o: &SweepOptions,
    shard: Shard,
) -> Result<Vec<Row>> {
    let frames = FrameClock::Fps(o.fps);
    frames.validate()?;
    let clock: ClockMapping = o.clock.parse()?;
    let total = sweep::pairs_in(shard, traces.len(), policies.len());
    let bar = if o.quiet || !std::io::stderr().is_terminal() {
        indicatif::ProgressBar::hidden()
    } else {
        let bar = indicatif::ProgressBar::new(total as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} replays  {per_sec}  ETA {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    };
    let done = || bar.inc(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(o.threads.unwrap_or(0))
        .build()
        .context("cannot start the worker threads")?;
    let rows = pool.install(|| sweep::run(traces, policies, &frames, clock, shard, &done))?;
    bar.finish_and_clear();
    Ok(rows)
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let shard: Shard = match &args.shard {
        Some(s) => s.parse()?,
        None => Shard::ALL,
    };
    // Everything that can be refused is checked before any trace is read.
    let policies = policies(&args.options, None)?;
    if let Some(out) = &args.output {
        let ok = out
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "parquet" | "csv" | "json"));
        if !ok {
            bail!(
                "{}: the output's extension must be .parquet, .csv or .json",
                out.display()
            );
        }
        if out.exists() && !args.force {
            bail!(
                "{} already exists (pass --force to overwrite)",
                out.display()
            );
        }
    }
    let started = Instant::now();
    let loaded = load_all(&args.traces, &args.options)?;
    let traces: Vec<SweepTrace<'_>> = loaded.iter().map(Loaded::prepare).collect();
    let load_secs = started.elapsed().as_secs_f64();
    let replaying = Instant::now();
    let rows = execute(&traces, &policies, &args.options, shard)?;
    let packets: usize = rows.iter().map(|r| traces[r.trace].packets()).sum();
    let secs = replaying.elapsed().as_secs_f64();
    let names: Vec<String> = traces.iter().map(|t| t.name.clone()).collect();
    if let Some(out) = &args.output {
        write_results(out, args.force, &names, &policies, &rows)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    eprintln!(
        "{} replays ({} configurations × {} trace(s){}) in {secs:.2} s after {load_secs:.2} s reading: \
         {:.1} M packet-configuration steps/s{}",
        rows.len(),
        policies.len(),
        traces.len(),
        if shard == Shard::ALL {
            String::new()
        } else {
            format!(", shard {shard}")
        },
        packets as f64 / secs / 1e6,
        args.output.as_ref().map_or(String::new(), |o| format!(
            "; rows written to {}",
            o.display()
        ))
    );
    print_frontier(&mut std::io::stdout().lock(), &rows, &policies)?;
    Ok(())
}

/// The best rows: the Pareto frontier of worst display delay against worst hold ratio.
pub(crate) fn print_frontier(
    out: &mut impl Write,
    rows: &[Row],
    policies: &[Policy],
) -> Result<()> {
    let t = tune(rows, policies, &Constraints::default());
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
