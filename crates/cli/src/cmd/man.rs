//! `jitterlab man`: the manual pages, generated from the same definitions as `--help`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use jitterlab_capture::output::write_atomic;

/// Arguments of `jitterlab man`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  jitterlab man | man -l -                          # read it now
  jitterlab man -o ~/.local/share/man/man1          # install jitterlab.1 and jitterlab-*.1
  jitterlab man -o target/man && gzip -9 target/man/*.1   # for a package")]
pub(crate) struct Args {
    /// Write jitterlab.1 and jitterlab-COMMAND.1 for every command into DIR (created if
    /// needed; pages already there are replaced). Without it, jitterlab.1 goes to stdout.
    #[arg(short, long, value_name = "DIR")]
    output: Option<PathBuf>,
}

/// `command`'s page as roff.
fn render(command: clap::Command) -> Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command).render(&mut page)?;
    Ok(page)
}

pub(crate) fn run(args: &Args, command: clap::Command) -> Result<()> {
    let Some(dir) = &args.output else {
        let page = render(command)?;
        let mut out = crate::say::stdout();
        out.write_all(&page)?;
        out.flush()?;
        return Ok(());
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Built, every command knows its full name (`jitterlab tune`), and its page is named
    // after it (`jitterlab-tune.1`), as `man jitterlab-tune` finds it.
    let mut command = command.disable_help_subcommand(true);
    command.build();
    let mut pages = Vec::new();
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let man = clap_mangen::Man::new(sub.clone());
        pages.push((man.get_filename(), render(sub.clone())?));
    }
    pages.insert(
        0,
        (
            clap_mangen::Man::new(command.clone()).get_filename(),
            render(command)?,
        ),
    );
    for (name, page) in &pages {
        write_atomic(dir.join(name), page, true)?;
    }
    crate::say::note!("wrote {} manual pages into {}", pages.len(), dir.display());
    Ok(())
}
