//! Opening traces given on the command line, with the file name in every error.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use jitterlab_capture::decode::{DecoderConfig, decode_trace};
use jitterlab_capture::{Decoded, Reader};

/// Decoder options shared by commands that read traces.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct DecodeArgs {
    /// Payload decoder (default: the one the trace names): rtp or probe.
    #[arg(long, value_name = "NAME")]
    pub(crate) decoder: Option<String>,
    /// Clock rate for a dynamic RTP payload type, e.g. 96=90000 (repeatable).
    #[arg(long = "clock-rate", value_name = "PT=HZ")]
    pub(crate) clock_rates: Vec<String>,
}

/// Reads and decodes a trace file.
pub(crate) fn load(path: &Path, args: &DecodeArgs) -> Result<Decoded> {
    let display = path.display();
    let mut file = File::open(path).with_context(|| format!("cannot open {display}"))?;
    let mut magic = [0u8; 4];
    let n = file
        .read(&mut magic)
        .with_context(|| format!("cannot read {display}"))?;
    if n == 4 && is_capture_magic(magic) {
        bail!(
            "{display}: this is a pcap/pcapng capture; import it into a trace first \
             (pcap import is not in this build)"
        );
    }
    let file = File::open(path).with_context(|| format!("cannot open {display}"))?;
    let reader = Reader::new(file).with_context(|| display.to_string())?;
    let config = match &args.decoder {
        Some(name) => Some(DecoderConfig::parse(name)?),
        None if args.clock_rates.is_empty() => None,
        None => Some(DecoderConfig::from_header(reader.header())?),
    };
    let config = match config {
        Some(mut c) => {
            for spec in &args.clock_rates {
                c.add_clock_rate(spec)?;
            }
            Some(c)
        }
        None => None,
    };
    let decoded = decode_trace(reader, config).with_context(|| display.to_string())?;
    if decoded.trailing_bytes > 0 {
        eprintln!(
            "warning: {display}: the last {} bytes do not form a whole record (the writer \
             stopped mid-record); every complete record was read",
            decoded.trailing_bytes
        );
    }
    if decoded.skipped > 0 {
        eprintln!(
            "warning: {display}: {} packet(s) could not be decoded and were skipped, e.g. {}",
            decoded.skipped,
            decoded.skip_examples.first().map_or("", String::as_str)
        );
    }
    Ok(decoded)
}

/// Whether the first four bytes are a pcap or pcapng magic number.
pub(crate) fn is_capture_magic(magic: [u8; 4]) -> bool {
    matches!(
        u32::from_le_bytes(magic),
        0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1 | 0x0a0d_0d0a
    )
}
