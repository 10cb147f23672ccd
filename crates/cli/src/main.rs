//! `jitterlab`: record jitter, replay it through buffer policies, see what a player would see.
//!
//! The binary only parses arguments, opens files and prints; the work is in the
//! `jitterlab-capture`, `jitterlab-replay` and `jitterlab-report` crates.

mod cmd;
mod errors;
mod input;
mod say;
mod streamed;
mod sweeping;
mod values;

use std::io;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::errors::{AnswerIsNo, exit};

/// Record-and-replay toolkit for jitter buffers and snapshot interpolation.
#[derive(Debug, Parser)]
#[command(
    name = "jitterlab",
    version = env!("JITTERLAB_VERSION"),
    about,
    long_about = None,
    propagate_version = true,
    after_help = errors::EXIT_CODES_HELP,
)]
struct Cli {
    /// Print only the answer, warnings and errors: no notes, summaries or progress on stderr.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// How long an external policy (--policy exec:CMD) may take for each reply before it is
    /// stopped with an error (a policy's own exec(timeout=...) wins).
    #[arg(long, global = true, value_name = "DURATION", default_value = "5s", value_parser = exec_timeout)]
    exec_timeout: std::time::Duration,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Record live UDP traffic into a trace, or relay (and impair) it between a client and a
    /// server.
    #[cfg_attr(
        not(feature = "live"),
        command(about = "Not in this build (no `live` feature): record live UDP traffic")
    )]
    Capture(cmd::capture::Args),
    /// Replay the embedded demo trace through a few fixed delays and write a PNG report.
    Demo(cmd::demo::Args),
    /// Propose a layout:SPEC for an unknown protocol from a flow's payloads (sequence counter,
    /// send time, message types), with the evidence.
    Discover(cmd::discover::Args),
    /// Write a trace as a pcapng/pcap capture for Wireshark, or as a per-packet table
    /// (Parquet, CSV, NDJSON) for notebooks.
    Export(cmd::export::Args),
    /// Convert a pcap/pcapng capture or a CSV log into a jitterlab trace.
    Import(cmd::import::Args),
    /// Per-stream statistics: packets, loss, duplicates, reordering, RFC 3550 jitter.
    Info(cmd::info::Args),
    /// Replay a trace through a buffer policy and report what a player would have seen.
    Replay(cmd::replay::Args),
    /// PNG figures of delay, buffer depth and error for a trace, its replays and a sweep, with an
    /// index.html.
    Report(cmd::report::Args),
    /// Send probe packets at a steady rate with a known motion (and log them as ground truth).
    #[cfg_attr(
        not(feature = "live"),
        command(about = "Not in this build (no `live` feature): send probe packets")
    )]
    Send(cmd::send::Args),
    /// Replay many configurations (a grid) over traces in parallel; write the rows as a table.
    Sweep(cmd::sweep::Args),
    /// Sweep a sensible grid and recommend the configuration with the lowest delay that meets
    /// the limits on every trace.
    Tune(cmd::tune::Args),
    /// Generate a synthetic trace with ground truth from a seeded network model.
    Synth(cmd::synth::Args),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(cmd::completions::Args),
    /// Write the manual pages (jitterlab.1 and one per command), or print jitterlab.1.
    Man(cmd::man::Args),
}

/// `--exec-timeout`: a positive duration such as 5s or 500ms.
fn exec_timeout(text: &str) -> Result<std::time::Duration, String> {
    let d = jitterlab_capture::time::parse_duration(text)?;
    u64::try_from(d.as_nanos())
        .ok()
        .filter(|&n| n > 0)
        .map(std::time::Duration::from_nanos)
        .ok_or_else(|| format!("{text} is out of range (allowed: above 0, e.g. 5s)"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    say::set_quiet(cli.quiet);
    jitterlab_replay::external::set_default_timeout(cli.exec_timeout);
    let result = match cli.command {
        Command::Capture(args) => cmd::capture::run(&args),
        Command::Demo(args) => cmd::demo::run(&args),
        Command::Discover(args) => cmd::discover::run(&args),
        Command::Export(args) => cmd::export::run(&args),
        Command::Import(args) => cmd::import::run(&args),
        Command::Info(args) => cmd::info::run(&args),
        Command::Replay(args) => cmd::replay::run(&args),
        Command::Report(args) => cmd::report::run(&args),
        Command::Send(args) => cmd::send::run(&args),
        Command::Synth(args) => cmd::synth::run(&args),
        Command::Sweep(args) => cmd::sweep::run(&args),
        Command::Tune(args) => cmd::tune::run(&args),
        Command::Completions(args) => cmd::completions::run(&args, Cli::command()),
        Command::Man(args) => cmd::man::run(&args, Cli::command()),
    };
    match result {
        Ok(()) => ExitCode::from(exit::DONE),
        Err(err) if is_broken_pipe(&err) => ExitCode::from(exit::DONE), // `jitterlab … | head`
        Err(err) if err.is::<AnswerIsNo>() => {
            say::note!("{err}");
            ExitCode::from(exit::NO)
        }
        Err(err) => {
            eprintln!("error: {}", errors::describe(&err));
            ExitCode::from(exit::BAD_INPUT)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own checks of the definitions: no two flags share a name or short, every
    /// default parses, every heading and alias is sound.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
