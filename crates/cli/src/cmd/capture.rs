//! `jitterlab capture`: record live UDP traffic, or relay it between a client and a server.
//!
//! Without the `live` feature the command is still there and says that this build has no live
//! capture, rather than leaving clap to call it an unknown command.

use std::path::PathBuf;

#[cfg(feature = "live")]
use std::io::{IsTerminal, Write};
#[cfg(feature = "live")]
use std::sync::Arc;
#[cfg(feature = "live")]
use std::sync::atomic::AtomicBool;

use anyhow::Result;
#[cfg(feature = "live")]
use anyhow::{Context, bail};
#[cfg(feature = "live")]
use jitterlab_capture::decode::DecoderConfig;
#[cfg(feature = "live")]
use jitterlab_capture::live::{self, Capture, Config, Status, TIMESTAMPS};
#[cfg(feature = "live")]
use jitterlab_capture::netmodel::ModelSpec;
#[cfg(feature = "live")]
use jitterlab_capture::time::parse_duration;
#[cfg(feature = "live")]
use jitterlab_capture::trace::{Clock, Header, Source};

#[cfg(feature = "live")]
use crate::input::parse_addr;

/// Arguments of `jitterlab capture`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab capture --listen 5004 -o call.jtr --duration 60s\n  jitterlab capture --listen 0.0.0.0:7777 --forward 10.0.0.2:7777 -o relay.jtr \\\n      --impair delay=40ms,jitter=15ms,loss=2%,seed=7"
)]
#[cfg_attr(not(feature = "live"), allow(dead_code))]
#[cfg_attr(
    not(feature = "live"),
    command(before_help = "Not in this build: it was built without the `live` feature.")
)]
pub(crate) struct Args {
    /// Where to listen: HOST:PORT (a host name or an IP address), or PORT alone for
    /// 127.0.0.1:PORT (loopback unless told otherwise).
    #[arg(long, value_name = "ADDR", help_heading = "Capture")]
    listen: String,
    /// The trace to write (appended to as packets arrive; readable even after a crash).
    #[arg(short, long, value_name = "FILE", help_heading = "Output")]
    output: PathBuf,
    /// Overwrite FILE if it exists.
    #[arg(long, help_heading = "Output")]
    force: bool,
    /// Stop after this long, e.g. 60s.
    #[arg(long, value_name = "TIME", help_heading = "Capture")]
    duration: Option<String>,
    /// Stop after this many datagrams.
    #[arg(long, value_name = "N", help_heading = "Capture")]
    count: Option<u64>,
    /// Bytes of each datagram's payload to keep (the full length is recorded).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 65_535,
        help_heading = "Capture"
    )]
    snaplen: usize,
    /// Relay mode: forward client datagrams to this server (HOST:PORT, a host name or an IP
    /// address) and its replies back.
    #[arg(long, value_name = "UPSTREAM", help_heading = "Relay")]
    forward: Option<String>,
    /// Relay mode: impair both directions with a seeded network model, e.g.
    /// delay=40ms,jitter=15ms,loss=2%,burst=4,reorder=1%,duplicate=0.5%,seed=7.
    #[arg(
        long,
        value_name = "SPEC",
        requires = "forward",
        help_heading = "Relay"
    )]
    impair: Option<String>,
    /// Relay mode: delay packets by a recorded series (one delay in ms per line, or a
    /// Mahimahi delivery trace).
    #[arg(
        long,
        value_name = "FILE",
        requires = "forward",
        help_heading = "Relay"
    )]
    impair_trace: Option<PathBuf>,
    /// Payload decoder named in the trace and used for the live status: rtp, probe or
    /// layout:SPEC (default: picked from the first datagram).
    #[arg(long, value_name = "NAME", value_parser = crate::values::Decoder, help_heading = "Decoding")]
    decoder: Option<String>,
}

/// Without the `live` feature: one line saying so.
#[cfg(not(feature = "live"))]
pub(crate) fn run(_args: &Args) -> Result<()> {
    anyhow::bail!(
        "capture: this jitterlab was built without live capture (the `live` feature); \
         record with tcpdump or Wireshark and `jitterlab import` the file, or rebuild with \
         default features"
    )
}

/// Binds first (an address in use fails here, before anything is announced or created), then
/// creates the output, says so, and captures until stopped.
#[cfg(feature = "live")]
pub(crate) fn run(args: &Args) -> Result<()> {
    let listen = parse_addr(&args.listen, "--listen")?;
    let forward = args
        .forward
        .as_deref()
        .map(|f| parse_addr(f, "--forward"))
        .transpose()?;
    let mut impair = args
        .impair
        .as_deref()
        .map(str::parse::<ModelSpec>)
        .transpose()?;
    if let Some(path) = &args.impair_trace {
        if jitterlab_capture::source::is_stdio(path) {
            bail!("--impair-trace -: give a file (standard input is not read here)");
        }
        impair
            .get_or_insert_with(ModelSpec::default)
            .add_recorded(path.clone())
            .with_context(|| format!("cannot read {}", path.display()))?;
    }
    let decoder = args
        .decoder
        .as_deref()
        .map(DecoderConfig::parse)
        .transpose()?;
    if args.snaplen == 0 {
        bail!("--snaplen 0: must be at least 1 byte");
    }
    let mut config = Config::listen(listen);
    config.forward = forward;
    config.impair = impair.clone();
    config.snaplen = args.snaplen.min(65_535);
    config.duration = args
        .duration
        .as_deref()
        .map(parse_duration)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--duration {e}"))?
        .map(|d| std::time::Duration::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(0)));
    config.count = args.count;
    config.decoder = decoder.clone();
    let capture = Capture::bind(&config)?;
    let listen = capture.local_addr();
    let mut header = Header::new(
        Clock {
            name: "CLOCK_REALTIME".into(),
            realtime_offset_ns: Some(0),
        },
        Source {
            kind: if forward.is_some() { "relay" } else { "live" }.into(),
            detail: match forward {
                Some(up) => format!("relay {listen} ⇄ {up}"),
                None => format!("listening on {listen}"),
            },
        },
    );
    header.decoder = decoder.as_ref().map(DecoderConfig::name);
    header.notes.push(format!("timestamps: {TIMESTAMPS}"));
    if let Some(spec) = &impair {
        header.notes.push(format!("impairment: {spec}"));
    }
    let file = crate::input::create_output(&args.output, args.force)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let tty = std::io::stderr().is_terminal() && !crate::say::quiet();
    let relaying = match (forward, args.forward.as_deref()) {
        (Some(up), Some(text)) if text.trim() != up.to_string() => {
            format!(", relaying to {text} ({up})")
        }
        (Some(up), _) => format!(", relaying to {up}"),
        (None, _) => String::new(),
    };
    // A capture that fails before recording a datagram leaves no file behind.
    let failed = |e: jitterlab_capture::Error| {
        let removed = live::discard_if_empty(&args.output);
        anyhow::Error::new(e).context(format!(
            "capture into {}{}",
            args.output.display(),
            if removed {
                " (nothing recorded, no file left)"
            } else {
                ""
            }
        ))
    };
    let running = capture.start(file, &header).map_err(failed)?;
    crate::say::note!(
        "capturing on {listen}{relaying} into {} with {TIMESTAMPS} (Ctrl-C to stop)",
        args.output.display()
    );
    let summary = running
        .wait(&stop, |s| {
            if tty {
                eprint!("\r\x1b[2K{}", status_line(s));
                let _ = std::io::stderr().flush();
            }
        })
        .map_err(failed)?;
    if tty {
        eprintln!();
    }
    let st = summary.stats;
    crate::say::note!(
        "captured {} datagrams from {} stream(s) in {:.1} s into {} ({} records): {}, \
         {} queue drops, {} user-space timestamps{}",
        st.received,
        summary.status.streams,
        summary.status.elapsed.as_secs_f64(),
        args.output.display(),
        summary.records,
        if TIMESTAMPS.counts_kernel_drops() {
            format!("{} kernel drops", st.kernel_drops)
        } else {
            "kernel drops not counted on this platform".to_owned()
        },
        st.queue_drops,
        st.user_timestamps,
        if forward.is_some() {
            format!(
                "; relay forwarded {}, impairment dropped {} and duplicated {}{}{}{}",
                summary.forwarded,
                summary.impaired_drops,
                summary.duplicates_added,
                counted(summary.send_failures, "sends refused by the kernel"),
                counted(
                    summary.unreleased,
                    "still held by the impairment at the end"
                ),
                counted(
                    summary.unforwarded,
                    "not forwarded (more than 1024 clients)"
                ),
            )
        } else {
            String::new()
        }
    );
    Ok(())
}

/// `, N what` when `n` is not zero: a summary clause for a counter that is usually zero.
#[cfg(feature = "live")]
fn counted(n: u64, what: &str) -> String {
    if n > 0 {
        format!(", {n} {what}")
    } else {
        String::new()
    }
}

#[cfg(feature = "live")]
fn status_line(s: &Status) -> String {
    let secs = s.elapsed.as_secs_f64();
    format!(
        "{:>7.1} s  {:>9} pkts  {:>8.0} pkt/s  {} stream(s)  lost {}  drops {}  jitter {:.2} ms",
        secs,
        s.packets,
        if secs > 0.0 {
            s.packets as f64 / secs
        } else {
            0.0
        },
        s.streams,
        s.lost,
        s.drops,
        s.jitter_ms
    )
}
