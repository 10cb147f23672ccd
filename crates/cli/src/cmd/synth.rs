//! `jitterlab synth`: seeded synthetic traces with ground truth.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use jitterlab_capture::netmodel::ModelSpec;
use jitterlab_capture::output::AtomicFile;
use jitterlab_capture::synth::{self, Config, Motion, PROFILES};
use jitterlab_capture::time::parse_duration;

/// Arguments of `jitterlab synth`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The trace to write.
    #[arg(
        short,
        long,
        value_name = "OUT",
        required_unless_present = "list_profiles"
    )]
    output: Option<PathBuf>,
    /// A named network profile (see --list-profiles).
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
    /// A network model, e.g. delay=40ms,jitter=10ms,loss=5%,burst=4; applied over --profile.
    #[arg(long, value_name = "SPEC")]
    model: Option<String>,
    /// Snapshots per second.
    #[arg(long, default_value_t = 20.0)]
    rate: f64,
    /// How long the sender sends, e.g. 60s or 10m.
    #[arg(long, default_value = "60s")]
    duration: String,
    /// The sender's motion: circle, walk, stop-go or teleport.
    #[arg(long, default_value = "circle")]
    motion: String,
    /// Random seed (a seed= key in the model wins).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Overwrite OUT if it exists.
    #[arg(long)]
    force: bool,
    /// List the profiles with their parameters and exit.
    #[arg(long)]
    list_profiles: bool,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    if args.list_profiles {
        for (name, about, spec) in PROFILES {
            println!("{name:<16} {about}\n{:<16} {spec}", "");
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
        motion: Motion::parse(&args.motion).context("--motion")?,
        model,
        profile: args.profile.clone(),
    };
    config.validate()?;
    let started = Instant::now();
    let out = AtomicFile::create(output, args.force)?;
    let (summary, out) = synth::write(&config, out)?;
    out.commit()
        .with_context(|| format!("cannot write {}", crate::input::shown_out(output)))?;
    eprintln!(
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
