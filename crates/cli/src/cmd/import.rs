//! `jitterlab import`: CSV logs into traces.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use jitterlab_capture::Writer;
use jitterlab_capture::import::import_csv;
use jitterlab_capture::output::AtomicFile;

use crate::input::is_capture_magic;

/// Arguments of `jitterlab import`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The log to import: a CSV with columns seq, send_ms, arrival_ms, optional stream, values.
    input: PathBuf,
    /// The trace to write.
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
    /// Overwrite OUT if it exists.
    #[arg(long)]
    force: bool,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let display = args.input.display();
    let mut file = File::open(&args.input).with_context(|| format!("cannot open {display}"))?;
    let mut magic = [0u8; 4];
    let n = file
        .read(&mut magic)
        .with_context(|| format!("cannot read {display}"))?;
    if n == 4 && is_capture_magic(magic) {
        bail!("{display}: pcap/pcapng import is not in this build; only CSV logs can be imported");
    }
    if n >= 1 && jitterlab_capture::trace::sniff(&magic[..n]) {
        bail!("{display}: this is already a jitterlab trace");
    }
    let file = File::open(&args.input).with_context(|| format!("cannot open {display}"))?;
    let name = args
        .input
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let imported = import_csv(BufReader::new(file), &name).with_context(|| display.to_string())?;
    let out = AtomicFile::create(&args.output, args.force)?;
    let mut writer = Writer::new(out, &imported.header)?;
    for record in &imported.records {
        writer.write(record)?;
    }
    writer
        .into_inner()
        .commit()
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    let received = imported.records.iter().filter(|r| r.kind == 0).count();
    eprintln!(
        "imported {received} packets{} from {display} into {}",
        if imported.lost_rows > 0 {
            format!(" (+ ground truth; {} never arrived)", imported.lost_rows)
        } else {
            String::new()
        },
        args.output.display()
    );
    Ok(())
}
