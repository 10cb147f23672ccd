//! `jitterlab synth`: seeded synthetic traces with ground truth.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use jitterlab_capture::netmodel::ModelSpec;
use jitterlab_capture::output::AtomicFile;
use jitterlab_capture::synth::{self, Config, PROFILES};
use jitterlab_capture::time::parse_duration;

/// Arguments of `jitterlab synth`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab synth -o wifi.jtr --profile wifi\n  jitterlab synth -o lossy.jtr --model delay=40ms,jitter=10ms,loss=5%,burst=4 --duration 2m --seed 7\n  jitterlab synth --list-profiles"
)]
pub(crate) struct Args {
    /// The trace to write.
    #[arg(
        short,
        long,
        value_name = "OUT",
        required_unless_present = "list_profiles",
        help_heading = "Output"
    )]
    output: Option<PathBuf>,
    /// A named network profile (see --list-profiles).
    #[arg(long, value_name = "NAME", value_parser = crate::values::profiles(), help_heading = "Network")]
    profile: Option<String>,
    /// A network model, e.g. delay=40ms,jitter=10ms,loss=5%,burst=4; applied over --profile.
    #[arg(long, value_name = "SPEC", help_heading = "Network")]
    model: Option<String>,
    /// Snapshots per second.
    #[arg(long, default_value_t = 20.0, help_heading = "Sender")]
    rate: f64,
    /// How long the sender sends, e.g. 60s or 10m.
    #[arg(long, default_value = "60s", help_heading = "Sender")]
    duration: String,
    /// The sender's motion: circle, walk, stop-go or teleport.
    #[arg(long, value_enum, default_value_t = crate::values::Motion::Circle, help_heading = "Sender")]
    motion: crate::values::Motion,
    /// Random seed (a seed= key in the model wins).
    #[arg(long, default_value_t = 1, help_heading = "Sender")]
    seed: u64,
    /// Overwrite OUT if it exists.
    #[arg(long, help_heading = "Output")]
    force: bool,
    /// List the profiles with their parameters and exit.
    #[arg(long, help_heading = "Network")]
    list_profiles: bool,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    if args.list_profiles {
        let mut out = crate::say::stdout();
        for (name, about, spec) in PROFILES {
            writeln!(out, "{name:<16} {about}\n{:<16} {spec}", "")?;
        }
        return Ok(());
    }
    let Some(output) = &args.output else {
        bail!("-o OUT is required");
    };
    let mut model = match &args.profile {
        Some(name) => synth::profile(name)?,
        None => ModelSpec::default(),
    };
    if let Some(spec) = &args.model {
        model.apply(spec).context("--model")?;
    }
    let duration = parse_duration(&args.duration).map_err(|e| anyhow::anyhow!("--duration {e}"))?;
    let config = Config {
        rate_hz: args.rate,
        duration,
        seed: args.seed,
        motion: args.motion.into(),
        model,
        profile: args.profile.clone(),
    };
    config.validate()?;
    let started = Instant::now();
    let out = AtomicFile::create(output, args.force)?;
    let (summary, out) = synth::write(&config, out)?;
    // Every write error names the file (AtomicFile says which).
    out.commit()?;
    crate::say::note!(
        "wrote {}: {} snapshots sent, {} received ({} duplicates), {} lost, {} dropped by the bottleneck queue ({:.2} s)",
        crate::input::shown_out(output),
        summary.sent,
        summary.received,
        summary.duplicates,
        summary.lost,
        summary.queue_drops,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
