//! Opening traces given on the command line, with the file name in every error, and the
//! flag names the library's errors leave to the command line.

use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result};
use jitterlab_capture::decode::{Collector, DecoderConfig, decode_trace};
use jitterlab_capture::filter::Filter;
use jitterlab_capture::pcap::{self, CaptureSummary};
use jitterlab_capture::sdp;
use jitterlab_capture::spec::parse_share;
use jitterlab_capture::{Decoded, Format, Header, Reader, Record};

/// Decoder options shared by commands that read traces.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct DecodeArgs {
    /// Payload decoder (default: the one the trace names; rtp for captures): rtp, probe or
    /// layout:SPEC (e.g. layout:seq=u32be@0,send=f64le@4:ms,value=f32le@12*3).
    #[arg(long, value_name = "NAME")]
    pub(crate) decoder: Option<String>,
    /// Clock rate for a dynamic RTP payload type, e.g. 96=90000 (repeatable).
    #[arg(long = "clock-rate", value_name = "PT=HZ")]
    pub(crate) clock_rates: Vec<String>,
}

/// A pcap/pcapng file read into records.
pub(crate) struct Capture {
    pub(crate) header: Header,
    pub(crate) records: Vec<Record>,
    pub(crate) summary: CaptureSummary,
}

/// The format `path` is in, from its first bytes (`None`: empty or unrecognised).
pub(crate) fn sniff(path: &Path) -> Result<Option<Format>> {
    let display = path.display();
    let file = File::open(path).with_context(|| format!("cannot open {display}"))?;
    Format::sniff_reader(file).with_context(|| format!("cannot read {display}"))
}

/// Whether `path` starts with a pcap or pcapng magic number.
pub(crate) fn is_capture(path: &Path) -> Result<bool> {
    Ok(sniff(path)?.is_some_and(Format::is_capture))
}

/// Reads a capture file, keeping the UDP datagrams that pass `filter`.
pub(crate) fn read_capture(path: &Path, filter: Option<&str>, decoder: &str) -> Result<Capture> {
    let display = path.display();
    let filter = filter.map(Filter::parse).transpose()?;
    let file = File::open(path).with_context(|| format!("cannot open {display}"))?;
    let (records, summary) =
        pcap::read_capture_all(file, filter.as_ref()).with_context(|| display.to_string())?;
    for problem in summary.problems() {
        eprintln!("note: {display}: {problem}");
    }
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let header = pcap::header_for(&name, &summary, decoder);
    Ok(Capture {
        header,
        records,
        summary,
    })
}

fn decoder_config(args: &DecodeArgs, header: &Header) -> Result<Option<DecoderConfig>> {
    let config = match &args.decoder {
        Some(name) => {
            let mut c = DecoderConfig::parse(name)?;
            c.add_hints(header);
            Some(c)
        }
        None if args.clock_rates.is_empty() => None,
        None => Some(DecoderConfig::from_header(header)?),
    };
    Ok(match config {
        Some(mut c) => {
            for spec in &args.clock_rates {
                c.add_clock_rate(spec)?;
            }
            Some(c)
        }
        None => None,
    })
}

/// Decodes an in-memory capture.
pub(crate) fn decode_capture(capture: &Capture, args: &DecodeArgs) -> Result<Decoded> {
    let config = decoder_config(args, &capture.header)?;
    let mut collector = Collector::new(&capture.header, config)?;
    for rec in &capture.records {
        collector.push(rec);
    }
    Ok(collector.finish())
}

/// Reads and decodes a trace file, or a pcap/pcapng capture directly.
pub(crate) fn load(path: &Path, args: &DecodeArgs) -> Result<Decoded> {
    Ok(load_with_capture(path, args, None)?.0)
}

/// As [`load`], also returning the capture summary when `path` is a capture.
pub(crate) fn load_with_capture(
    path: &Path,
    args: &DecodeArgs,
    filter: Option<&str>,
) -> Result<(Decoded, Option<CaptureSummary>)> {
    let display = path.display();
    if is_capture(path)? {
        // Decoded as it is read: no copy of the capture is kept. SDP applies to the packets
        // after it, as it does in Wireshark (and in traces imported from the capture).
        let filter = filter.map(Filter::parse).transpose()?;
        let header = pcap::header_for("", &CaptureSummary::default(), "rtp");
        let mut collector = Collector::new(&header, decoder_config(args, &header)?)?;
        let file = File::open(path).with_context(|| format!("cannot open {display}"))?;
        let summary = pcap::read_capture(file, filter.as_ref(), |rec| {
            if let (Some(src), Some(dst)) = (rec.src, rec.dst) {
                collector.add_rtpmaps(sdp::scan_sip(src.0, dst.0, &rec.payload, rec.time));
            }
            collector.push(&rec);
            Ok(())
        })
        .with_context(|| display.to_string())?;
        for problem in summary.problems() {
            eprintln!("note: {display}: {problem}");
        }
        let decoded = collector.finish();
        warn_skipped(path, &decoded);
        return Ok((decoded, Some(summary)));
    }
    if filter.is_some() {
        anyhow::bail!("{display}: --filter applies to pcap/pcapng captures, not traces");
    }
    let file = File::open(path).with_context(|| format!("cannot open {display}"))?;
    let reader = Reader::new(file).with_context(|| display.to_string())?;
    let config = decoder_config(args, reader.header())?;
    let decoded = decode_trace(reader, config).with_context(|| display.to_string())?;
    if decoded.trailing_bytes > 0 {
        eprintln!(
            "warning: {display}: the last {} bytes do not form a whole record (the writer \
             stopped mid-record); every complete record was read",
            decoded.trailing_bytes
        );
    }
    warn_skipped(path, &decoded);
    Ok((decoded, None))
}

fn warn_skipped(path: &Path, decoded: &Decoded) {
    let display = path.display();
    if decoded.skipped > 0 {
        eprintln!(
            "warning: {display}: {} packet(s) could not be decoded and were skipped, e.g. {}",
            decoded.skipped,
            decoded.skip_examples.first().map_or("", String::as_str)
        );
    }
}

/// Creates an output file that is appended to as it is written (captures, sender logs): never
/// over an existing file unless `force`.
pub(crate) fn create_output(path: &Path, force: bool) -> Result<File> {
    let mut open = std::fs::OpenOptions::new();
    open.write(true);
    if force {
        open.create(true).truncate(true);
    } else {
        open.create_new(true);
    }
    open.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            anyhow::anyhow!(
                "{} already exists (pass --force to overwrite)",
                path.display()
            )
        }
        _ => anyhow::anyhow!("cannot create {}: {e}", path.display()),
    })
}

/// Parses a ratio given as `1%` or `0.01`, within 0..=1.
pub(crate) fn parse_ratio(flag: &str, text: &str) -> Result<f64> {
    parse_share(text)
        .ok()
        .filter(|v| (0.0..=1.0).contains(v))
        .with_context(|| format!("{flag} '{text}': expected a ratio 0..1 or 0%..100%"))
}

/// Parses HOST:PORT, or PORT alone as loopback; `what` names the flag in the error.
pub(crate) fn parse_addr(text: &str, what: &str) -> Result<std::net::SocketAddr> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse()
        .with_context(|| format!("{what} '{text}': expected HOST:PORT or PORT"))
}
