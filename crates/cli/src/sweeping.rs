//! What `sweep`, `tune` and `report` share: the sweep options, traces loaded and split for
//! replay, the configurations of a grid, and the sweep run with a progress bar.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use jitterlab_capture::Reader;
use jitterlab_capture::decode::decode_trace;
use jitterlab_replay::grid::{DEFAULT_MAX_CONFIGS, Grid};
use jitterlab_replay::sweep::{self, PlayoutTrace, Row, Shard, SweepTrace};
use jitterlab_replay::tune::{Constraints, Objective};
use jitterlab_replay::{ClockMapping, FrameClock, Policy, TraceStreams};

use crate::input::{DecodeArgs, load};

/// Options shared by `sweep` and `tune`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Sweep")]
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
    #[arg(long, value_name = "MAPPING", default_value = "estimate", value_parser = crate::values::Clock)]
    pub(crate) clock: String,
    /// Let grid files (--grid) name external policies (exec:CMD), which run a command.
    /// Without it a grid file that names one is refused; --sweep exec:... on the command line
    /// is always allowed.
    #[arg(long, help_heading = "Grid")]
    pub(crate) allow_exec: bool,
    /// Refuse grids that make more configurations than this.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONFIGS)]
    pub(crate) max_configs: usize,
    /// Worker threads (default or 0: every core).
    #[arg(short = 'j', long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Skip traces that cannot be read (each is reported) instead of stopping.
    #[arg(long)]
    pub(crate) keep_going: bool,
    /// Playout mode: play every stream as discrete frames at send time + delay (audio, video,
    /// input), with the playout metrics. The default when every stream is RTP audio or video.
    #[arg(long, conflicts_with = "snapshot")]
    pub(crate) playout: bool,
    /// Snapshot mode: interpolate snapshots on a frame clock, even for RTP audio or video.
    #[arg(long)]
    pub(crate) snapshot: bool,
    /// Replay every trace whole in memory instead of in streaming passes (the same rows;
    /// memory grows with the traces). The default for traces under 512 MB in all.
    #[arg(long, conflicts_with = "streaming")]
    pub(crate) in_memory: bool,
    /// Replay every trace in streaming passes, memory bounded by the streams' windows (the
    /// same rows; slower per configuration). The default for traces of 512 MB or more.
    #[arg(long)]
    pub(crate) streaming: bool,
    #[command(flatten)]
    pub(crate) quality: crate::input::QualityArgs,
    #[command(flatten)]
    pub(crate) decode: DecodeArgs,
}

/// The embedded trace: `jitterlab_capture::synth::Config::demo()`, committed as a fixture.
pub(crate) const DEMO_TRACE: &[u8] = include_bytes!("../../../fixtures/traces/demo-wifi-20hz.jtr");

/// The embedded demo trace, split for replay.
pub(crate) fn demo() -> Result<TraceStreams> {
    let decoded = decode_trace(Reader::new(DEMO_TRACE)?, None)?;
    Ok(TraceStreams::new("demo (embedded)".into(), decoded)?)
}

/// Decodes a trace file or capture and splits it for replay; each stream that cannot be
/// replayed is named in a one-line warning (printed even with `--quiet`: the answer leaves it
/// out) and left out.
pub(crate) fn open(path: &Path, decode: &DecodeArgs) -> Result<TraceStreams> {
    let decoded = load(path, decode)?;
    let streams = TraceStreams::new(path.display().to_string(), decoded)?;
    for note in &streams.skipped {
        eprintln!("warning: {}: {note}", crate::input::shown(path));
    }
    Ok(streams)
}

/// Loads every trace, reporting unreadable ones by name (skipping them with `keep_going`).
pub(crate) fn load_all(paths: &[PathBuf], o: &SweepOptions) -> Result<Vec<TraceStreams>> {
    let mut out = Vec::new();
    for path in paths {
        match open(path, &o.decode) {
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
        let text = crate::input::read_text(path)?;
        let g = Grid::from_toml_named(&text, &crate::input::shown(path))?;
        if !o.allow_exec
            && let Some(policy) = g.exec_policy()
        {
            bail!(
                "{}: the grid names policy {policy}, which runs a command; a grid file never runs one by surprise: pass --allow-exec to allow it",
                crate::input::shown(path)
            );
        }
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

/// Whether a sweep plays discrete frames or interpolates snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Snapshots on a frame clock (probes, layouts, game state).
    Snapshot,
    /// Discrete frames at send time + delay (audio, video, input).
    Playout,
}

impl Mode {
    /// `--playout` or `--snapshot` as given, else playout when every stream of every trace is
    /// RTP audio or video (said in a note).
    pub(crate) fn choose(o: &SweepOptions, loaded: &[TraceStreams]) -> Self {
        if o.playout {
            return Self::Playout;
        }
        if o.snapshot {
            return Self::Snapshot;
        }
        let media: Vec<jitterlab_replay::Media> =
            loaded.iter().flat_map(TraceStreams::media).collect();
        if !media.is_empty() && media.iter().all(|m| m.kind.is_some()) {
            let video = media.iter().filter(|m| m.is_video()).count();
            crate::say::note!(
                "note: playout mode: every stream is RTP {} (--snapshot interpolates snapshots \
                 instead)",
                match (video, media.len() - video) {
                    (0, _) => "audio",
                    (_, 0) => "video",
                    _ => "audio or video",
                }
            );
            Self::Playout
        } else {
            Self::Snapshot
        }
    }
}

/// What every stream of `loaded` carries, when it is one kind: the default playout grid then
/// holds the generic buffers and those made for it.
pub(crate) fn playout_media(
    loaded: &[TraceStreams],
) -> Option<jitterlab_capture::decode::MediaKind> {
    let kinds: Vec<Option<jitterlab_capture::decode::MediaKind>> = loaded
        .iter()
        .flat_map(TraceStreams::media)
        .map(|m| m.kind)
        .collect();
    let first = *kinds.first()?;
    kinds.iter().all(|k| *k == first).then_some(first).flatten()
}

/// Runs a playout sweep (every stream of every trace prepared once) with a progress bar.
pub(crate) fn execute_playout(
    loaded: &[TraceStreams],
    policies: &[Policy],
    o: &SweepOptions,
    shard: Shard,
) -> Result<Vec<Row>> {
    let clock: ClockMapping = o.clock.parse()?;
    let options = o.quality.options()?;
    let traces: Vec<PlayoutTrace<'_>> = loaded.iter().map(|l| l.prepare_playout(clock)).collect();
    let total = sweep::pairs_in(shard, traces.len(), policies.len());
    with_progress(o, total, |done| {
        sweep::run_playout(&traces, policies, options, shard, done)
    })
}

/// Sizes rayon's global pool, which renders the figures of `report` and `tune --report`, to
/// `-j N` (0 or none: every core); the sweeps run on a pool of the same size.
pub(crate) fn use_threads(threads: Option<usize>) -> Result<()> {
    if let Some(n) = threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .context("cannot start the worker threads")?;
    }
    Ok(())
}

/// Runs `work` on `o.threads` worker threads with a progress bar of `total` steps on a
/// terminal (`work` ticks it through the callback it is given).
fn with_progress(
    o: &SweepOptions,
    total: usize,
    work: impl FnOnce(&(dyn Fn() + Sync)) -> Result<Vec<Row>, jitterlab_replay::Error> + Send,
) -> Result<Vec<Row>> {
    let bar = progress(total);
    let done = || bar.inc(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(o.threads.unwrap_or(0))
        .build()
        .context("cannot start the worker threads")?;
    let rows = pool.install(|| work(&done))?;
    bar.finish_and_clear();
    Ok(rows)
}

fn progress(total: usize) -> indicatif::ProgressBar {
    if crate::say::quiet() || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} replays  {per_sec}  ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
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
    with_progress(o, total, |done| {
        sweep::run(traces, policies, &frames, clock, shard, done)
    })
}

/// The limits and objective of the tune rule, shared by `tune` and `report`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Limits")]
pub(crate) struct TuneLimits {
    /// The largest acceptable starved ratio (held, extrapolated or empty frames over frames),
    /// e.g. 1% or 0.01, on every trace [default: 1%, unless --max-hold-ratio or
    /// --max-extrapolated-ratio is given].
    #[arg(long, value_name = "RATIO")]
    pub(crate) max_starved_ratio: Option<String>,
    /// The largest acceptable hold ratio, holds alone, e.g. 1% or 0.01; given without
    /// --max-starved-ratio, it replaces the default starved-frame limit (tune's rule
    /// before starved frames were counted).
    #[arg(long, value_name = "RATIO")]
    pub(crate) max_hold_ratio: Option<String>,
    /// The largest acceptable extrapolated ratio, extrapolated frames alone, e.g. 5%; given
    /// without --max-starved-ratio, it replaces the default starved-frame limit.
    #[arg(long, value_name = "RATIO")]
    pub(crate) max_extrapolated_ratio: Option<String>,
    /// The largest acceptable p99 error (in the values' units), on every trace.
    #[arg(long, value_name = "X")]
    pub(crate) max_p99_error: Option<f64>,
    /// What to minimise among configurations that meet the limits.
    #[arg(long, value_name = "OBJECTIVE", default_value = "delay", value_parser = crate::values::objectives())]
    pub(crate) objective: String,
    /// Playout mode: the largest acceptable share of frames arriving after their play time,
    /// e.g. 1% or 0.01, on every trace.
    #[arg(long, value_name = "RATIO", default_value = "1%")]
    pub(crate) max_late: String,
    /// Playout mode: the largest acceptable share of frames concealed (late or never
    /// arrived), on every trace.
    #[arg(long, value_name = "RATIO")]
    pub(crate) max_concealment: Option<String>,
    /// Playout mode: the lowest acceptable MOS (E-model), on every trace, e.g. 4.0.
    #[arg(long, value_name = "MOS")]
    pub(crate) min_mos: Option<f64>,
}

impl TuneLimits {
    /// The constraints, each value checked with its flag named.
    pub(crate) fn constraints(&self) -> Result<Constraints> {
        let ratio = |flag: &str, v: &Option<String>| {
            v.as_deref()
                .map(|r| crate::input::parse_ratio(flag, r))
                .transpose()
        };
        let hold = ratio("--max-hold-ratio", &self.max_hold_ratio)?;
        let extrapolated = ratio("--max-extrapolated-ratio", &self.max_extrapolated_ratio)?;
        // The default limit counts every starved frame; limits given apart replace it.
        let starved = match ratio("--max-starved-ratio", &self.max_starved_ratio)? {
            Some(s) => Some(s),
            None if hold.is_some() || extrapolated.is_some() => None,
            None => Constraints::default().max_starved_ratio,
        };
        Ok(Constraints {
            max_hold_ratio: hold.unwrap_or(1.0),
            max_starved_ratio: starved,
            max_extrapolated_ratio: extrapolated,
            max_p99_error: match self.max_p99_error {
                Some(e) if !(e.is_finite() && e >= 0.0) => {
                    bail!("--max-p99-error {e}: expected a finite value ≥ 0")
                }
                e => e,
            },
            objective: self
                .objective
                .parse::<Objective>()
                .map_err(|e| anyhow::anyhow!("--objective {e}"))?,
            max_late: crate::input::parse_ratio("--max-late", &self.max_late)?,
            max_concealment: self
                .max_concealment
                .as_deref()
                .map(|r| crate::input::parse_ratio("--max-concealment", r))
                .transpose()?,
            min_mos: match self.min_mos {
                Some(m) if !(1.0..=5.0).contains(&m) => {
                    bail!("--min-mos {m}: expected a MOS from 1 to 5")
                }
                m => m,
            },
        })
    }
}
