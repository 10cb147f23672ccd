//! `jitterlab demo`: the main job on an embedded trace, with no argument and no network.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use jitterlab_capture::decode::decode_trace;
use jitterlab_capture::stats::stream_stats;
use jitterlab_capture::{Nanos, Reader};
use jitterlab_replay::policy::{BufferConfig, FixedConfig};
use jitterlab_replay::{ClockMapping, FrameClock, Policy};
use jitterlab_report::table::{rounded, summary_frame, to_text};
use jitterlab_report::{run_policies, write_report};

/// Arguments of `jitterlab demo`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab demo\n  jitterlab demo -o /tmp/demo-report --fps 144"
)]
pub(crate) struct Args {
    /// Where to write the report (`--out` is the old name).
    #[arg(
        short,
        long,
        alias = "out",
        default_value = "jitterlab-report",
        value_name = "DIR",
        help_heading = "Output"
    )]
    output: PathBuf,
    /// Frame rate of the simulated player.
    #[arg(long, default_value_t = 60.0)]
    fps: f64,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    crate::input::not_stdout_dir(&args.output, "--output")?;
    let started = Instant::now();
    let decoded = decode_trace(Reader::new(crate::sweeping::DEMO_TRACE)?, None)
        .context("the embedded demo trace")?;
    let stats = stream_stats(&decoded);
    let mut out = crate::say::stdout();
    if let Some(s) = stats.first() {
        writeln!(
            out,
            "Demo trace: {} snapshots of a circling entity at 20 Hz over {:.0} s of a Wi-Fi-like link",
            s.packets,
            s.duration().as_secs_f64()
        )?;
        writeln!(
            out,
            "  lost {} ({} bursts, longest {}), duplicates {}, reordered {}, RFC 3550 jitter mean {:.2} ms, max {:.2} ms\n",
            s.lost,
            s.loss_bursts.count,
            s.loss_bursts.max_len,
            s.duplicates,
            s.reordered,
            s.jitter.map_or(0.0, |j| j.mean_ms),
            s.jitter.map_or(0.0, |j| j.max_ms),
        )?;
    }
    let policies: Vec<(String, Policy)> = [50, 100, 150, 200]
        .into_iter()
        .map(|ms| {
            let config = FixedConfig {
                delay: Nanos::from_millis(ms),
                buffer: BufferConfig {
                    max_gap: Nanos::from_millis(120),
                    ..BufferConfig::default()
                },
            };
            (format!("fixed {ms} ms"), Policy::from(config))
        })
        .collect();
    let runs = run_policies(
        &decoded,
        0,
        &policies,
        &FrameClock::Fps(args.fps),
        ClockMapping::Estimated,
    )?;
    let table = rounded(&summary_frame(&runs)?, 3)?;
    writeln!(
        out,
        "Fixed delays replayed at {} fps (error against the sender's ground truth):",
        args.fps
    )?;
    write!(out, "{}", to_text(&table))?;
    let written = write_report(&args.output, "jitterlab demo", &decoded, 0, &runs)
        .with_context(|| format!("cannot write the report into {}", args.output.display()))?;
    writeln!(out, "\nReport written to {}/:", args.output.display())?;
    for f in &written.files {
        writeln!(out, "  {}", f.display())?;
    }
    writeln!(
        out,
        "Open {}/index.html to see the figures. ({:.2} s)",
        args.output.display(),
        started.elapsed().as_secs_f64()
    )?;
    Ok(())
}
