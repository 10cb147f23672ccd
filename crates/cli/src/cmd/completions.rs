//! `jitterlab completions SHELL`: a completion script for the shell, on stdout.

use std::io::Write;

use anyhow::Result;
use clap_complete::Shell;

/// Arguments of `jitterlab completions`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  jitterlab completions bash > ~/.local/share/bash-completion/completions/jitterlab
  jitterlab completions zsh > ~/.zfunc/_jitterlab        # with fpath+=(~/.zfunc) in ~/.zshrc
  jitterlab completions fish > ~/.config/fish/completions/jitterlab.fish")]
pub(crate) struct Args {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    shell: Shell,
}

pub(crate) fn run(args: &Args, mut command: clap::Command) -> Result<()> {
    // Rendered first, so that a closed pipe is the I/O error `main` recognises (the generator
    // itself panics on write errors).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "jitterlab", &mut script);
    let mut out = crate::say::stdout();
    out.write_all(&script)?;
    out.flush()?;
    Ok(())
}
