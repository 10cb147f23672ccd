//! `jitterlab send`: probe packets at a steady rate with a known motion, logged as ground truth.
//!
//! Without the `live` feature the command is still there and says that this build cannot send.

use std::path::PathBuf;
#[cfg(feature = "live")]
use std::sync::Arc;
#[cfg(feature = "live")]
use std::sync::atomic::AtomicBool;

use anyhow::Result;
#[cfg(feature = "live")]
use anyhow::{Context, anyhow};
#[cfg(feature = "live")]
use jitterlab_capture::live::discard_if_empty;
#[cfg(feature = "live")]
use jitterlab_capture::sender::{SendConfig, Sender};
#[cfg(feature = "live")]
use jitterlab_capture::time::parse_duration;

#[cfg(feature = "live")]
use crate::input::parse_addr;

/// Arguments of `jitterlab send`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab send --to 127.0.0.1:7777 --rate 60 --duration 30s --log sender.jtr\n  jitterlab send --to 5004 --motion teleport --size 1200"
)]
#[cfg_attr(not(feature = "live"), allow(dead_code))]
#[cfg_attr(
    not(feature = "live"),
    command(before_help = "Not in this build: it was built without the `live` feature.")
)]
pub(crate) struct Args {
    /// Where to send: HOST:PORT (a host name or an IP address), or PORT alone for
    /// 127.0.0.1:PORT.
    #[arg(long, value_name = "ADDR", help_heading = "Sender")]
    to: String,
    /// Packets per second.
    #[arg(long, default_value_t = 20.0, help_heading = "Sender")]
    rate: f64,
    /// How long to send, e.g. 30s.
    #[arg(long, default_value = "30s", help_heading = "Sender")]
    duration: String,
    /// The motion the probe values follow: circle, walk, stop-go or teleport.
    #[arg(long, value_enum, default_value_t = crate::values::Motion::Circle, help_heading = "Sender")]
    motion: crate::values::Motion,
    /// Seed for the walk motion.
    #[arg(long, default_value_t = 1, help_heading = "Sender")]
    seed: u64,
    /// The probe stream id.
    #[arg(long, default_value_t = 0, help_heading = "Sender")]
    stream: u32,
    /// Pad each datagram with zeros to this many bytes (the probe itself is 88 bytes).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 0,
        help_heading = "Sender"
    )]
    size: usize,
    /// Record exactly what was sent (ground truth for replay) into this trace.
    #[arg(long, value_name = "SENDER.jtr", help_heading = "Output")]
    log: Option<PathBuf>,
    /// Overwrite the log if it exists.
    #[arg(long, help_heading = "Output")]
    force: bool,
}

/// Without the `live` feature: one line saying so.
#[cfg(not(feature = "live"))]
pub(crate) fn run(_args: &Args) -> Result<()> {
    anyhow::bail!(
        "send: this jitterlab was built without live capture (the `live` feature); rebuild \
         with default features"
    )
}

/// Connects first (a destination that cannot be reached fails here, before the log is
/// created), then sends.
#[cfg(feature = "live")]
pub(crate) fn run(args: &Args) -> Result<()> {
    let to = parse_addr(&args.to, "--to")?;
    let duration = parse_duration(&args.duration).map_err(|e| anyhow!("--duration {e}"))?;
    let config = SendConfig {
        to,
        rate_hz: args.rate,
        duration: std::time::Duration::from_nanos(u64::try_from(duration.as_nanos()).unwrap_or(0)),
        motion: args.motion.into(),
        seed: args.seed,
        stream: args.stream,
        size: args.size,
    };
    let sender = Sender::connect(&config)?;
    let log = args
        .log
        .as_deref()
        .map(|path| crate::input::create_output(path, args.force))
        .transpose()?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let s = sender.run(log, &stop).with_context(|| match &args.log {
        // A send that failed before logging a packet leaves no log behind.
        Some(path) if discard_if_empty(path) => {
            format!(
                "send to {to} (logging into {}: nothing logged, no file left)",
                path.display()
            )
        }
        Some(path) => format!("send to {to} (logging into {})", path.display()),
        None => format!("send to {to}"),
    })?;
    crate::say::note!(
        "sent {} probe packets to {to} over {:.3} s at {} Hz: drift {:+.1} ppm, latest send {:.3} ms behind schedule{}",
        s.sent,
        s.span.as_secs_f64(),
        args.rate,
        s.drift * 1e6,
        s.max_late.as_secs_f64() * 1e3,
        if s.refused > 0 {
            format!(", {} refused (nothing listening)", s.refused)
        } else {
            String::new()
        }
    );
    Ok(())
}
