//! `jitterlab export`: a trace back out as a pcapng/pcap capture (for Wireshark and tshark),
//! or as a per-packet table (Parquet, CSV, NDJSON) for notebooks.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use jitterlab_capture::export::{CaptureFormat, CaptureWriter, ExportSummary};
use jitterlab_capture::format::Format;
use jitterlab_capture::output::AtomicFile;
use jitterlab_capture::pcap::{self, CaptureSummary};
use jitterlab_capture::{Header, Reader};
use jitterlab_report::TableFormat;

use crate::input::{DecodeArgs, load, open_input};

/// What `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OutFormat {
    /// pcapng: received datagrams on interface 0, ground truth on interface 1, comments,
    /// capture statistics.
    Pcapng,
    /// pcap with nanosecond timestamps: received datagrams only.
    Pcap,
    /// The per-packet table as Apache Parquet.
    Parquet,
    /// The per-packet table as CSV.
    Csv,
    /// The per-packet table as newline-delimited JSON.
    Ndjson,
}

impl OutFormat {
    fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "pcapng" => Some(Self::Pcapng),
            "pcap" => Some(Self::Pcap),
            _ => TableFormat::from_path(path).map(Self::from_table),
        }
    }

    fn from_table(t: TableFormat) -> Self {
        match t {
            TableFormat::Parquet => Self::Parquet,
            TableFormat::Csv => Self::Csv,
            TableFormat::Ndjson => Self::Ndjson,
        }
    }

    /// What the format is: a capture or a table.
    fn target(self) -> Target {
        match self {
            Self::Pcapng => Target::Capture(CaptureFormat::Pcapng),
            Self::Pcap => Target::Capture(CaptureFormat::Pcap),
            Self::Parquet => Target::Table(TableFormat::Parquet),
            Self::Csv => Target::Table(TableFormat::Csv),
            Self::Ndjson => Target::Table(TableFormat::Ndjson),
        }
    }
}

/// A capture of the records, or a table of the decoded packets.
enum Target {
    Capture(CaptureFormat),
    Table(TableFormat),
}

/// Arguments of `jitterlab export`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    jitterlab export call.jtr -o call.pcapng        # open in Wireshark; ground truth on interface 1\n  \
    jitterlab export call.jtr -o call.pcap          # received datagrams only\n  \
    jitterlab export call.jtr --packets -o p.parquet  # one row per packet, for polars or DuckDB\n\
    Details: docs/export.md and docs/wireshark.md")]
pub(crate) struct Args {
    /// The trace (or a pcap/pcapng capture) to export.
    input: PathBuf,
    /// The file to write; its extension chooses the format (.pcapng, .pcap, .parquet, .csv,
    /// .ndjson) unless --format is given; `-` is standard output (pcapng by default).
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
    /// The output format, whatever OUT's extension says.
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<OutFormat>,
    /// Write the per-packet table (stream, flow, protocol, sequence, send, arrival, transit,
    /// size, marker, kind, direction, UTC time) instead of a capture.
    #[arg(long)]
    packets: bool,
    /// Overwrite OUT if it exists.
    #[arg(long)]
    force: bool,
    /// How the table's packets are decoded and which streams it keeps (--packets only).
    #[command(flatten)]
    decode: DecodeArgs,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let out = args.output.display();
    let to_stdout = args.output.as_os_str() == "-";
    let by_name = || match OutFormat::from_path(&args.output) {
        // `-o -` (standard output, e.g. into `wireshark -k -i -`): a capture, unless a table
        // was asked for, whose format must then be named.
        None if to_stdout && !args.packets => Some(OutFormat::Pcapng),
        f => f,
    };
    let format = match args.format.or_else(by_name) {
        Some(f) => f,
        None if args.packets => bail!(
            "{out}: cannot tell the table format from the extension (use .parquet, .csv or \
             .ndjson, or --format parquet|csv|ndjson)"
        ),
        None => bail!(
            "{out}: cannot tell the format from the extension (use .pcapng, .pcap, .parquet, \
             .csv or .ndjson, or --format)"
        ),
    };
    match format.target() {
        Target::Capture(capture) => {
            if args.packets {
                bail!(
                    "--packets writes a table (parquet, csv or ndjson), not a {} capture",
                    capture.name()
                );
            }
            if args.decode.decoder.is_some()
                || !args.decode.clock_rates.is_empty()
                || args.decode.select.is_some()
                || args.decode.video
                || args.decode.audio
            {
                bail!(
                    "--decoder, --clock-rate, --video, --audio, --stream, --ssrc, --flow and \
                     --filter apply to --packets tables; a capture export writes every record"
                );
            }
            export_capture(args, capture)
        }
        Target::Table(table) => export_table(args, table),
    }
}

/// A progress bar of `total` steps on a terminal, hidden otherwise (or with --quiet).
fn progress(quiet: bool, total: u64, unit: &str) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    let template = format!("{{bar:40}} {{{unit}}}/{{total_{unit}}} exported  ETA {{eta}}");
    bar.set_style(
        indicatif::ProgressStyle::with_template(&template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

fn export_capture(args: &Args, format: CaptureFormat) -> Result<()> {
    let input = &args.input;
    let display = crate::input::shown(input);
    let out_display = crate::input::shown_out(&args.output);
    let mut opened = open_input(input, true)?;
    let capture_input = opened.source.format().is_some_and(Format::is_capture);
    let out = AtomicFile::create(&args.output, args.force)?;
    let reader = &mut opened.source;
    let (summary, header, trailing) = if capture_input {
        let name = input
            .file_name()
            .map_or_else(|| "stdin".to_owned(), |n| n.to_string_lossy().into_owned());
        let header = pcap::header_for(&name, &CaptureSummary::default(), "auto");
        let mut writer = CaptureWriter::new(out, format, &header)?;
        let read = pcap::read_capture(reader, None, |rec| writer.write(&rec))
            .with_context(|| display.clone())?;
        for problem in read.problems() {
            crate::say::note!("note: {display}: {problem}");
        }
        (finish(writer, args)?, header, 0)
    } else {
        let mut trace = Reader::new(reader).with_context(|| display.clone())?;
        let header = trace.header().clone();
        let mut writer = CaptureWriter::new(out, format, &header)?;
        while let Some(rec) = trace.read_record().with_context(|| display.clone())? {
            writer.write(&rec).with_context(|| display.clone())?;
        }
        let trailing = trace.trailing_bytes();
        (finish(writer, args)?, header, trailing)
    };
    opened.finish();
    if trailing > 0 {
        eprintln!(
            "warning: {display}: the last {trailing} bytes do not form a whole record (the \
             writer stopped mid-record); every complete record was exported"
        );
    }
    if !crate::say::quiet() {
        eprintln!(
            "{}",
            wrote(
                &summary,
                format,
                &display.to_string(),
                &out_display.to_string()
            )
        );
        if summary.placeholders > 0 {
            eprintln!(
                "note: {} packet(s) carry no addresses in the trace: written with placeholder \
                 addresses 192.0.2.1 → 192.0.2.2 (TEST-NET-1), ports 50000 + stream id \
                 (docs/wireshark.md)",
                summary.placeholders
            );
        }
        if summary.truncated > 0 {
            eprintln!(
                "note: {} packet(s) were cut to a snap length when captured: written as \
                 captured, with their original lengths",
                summary.truncated
            );
        }
        if header.clock.realtime_offset_ns.is_none() {
            eprintln!(
                "note: the trace's clock ({}) has no known realtime offset: timestamps are \
                 trace times counted from the Unix epoch",
                header.clock.name
            );
        }
    }
    for line in summary.left_out() {
        eprintln!("left out: {line}");
    }
    Ok(())
}

fn finish(writer: CaptureWriter<AtomicFile>, args: &Args) -> Result<ExportSummary> {
    let (out, summary) = writer
        .finish()
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    out.commit()
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    Ok(summary)
}

/// The summary line of a capture export.
fn wrote(s: &ExportSummary, format: CaptureFormat, input: &str, output: &str) -> String {
    let mut parts = vec![format!("{} received datagram(s)", s.received)];
    if s.sent > 0 {
        parts.push(format!("{} ground-truth record(s) on interface 1", s.sent));
    }
    if s.stats > 0 {
        parts.push(format!("{} capture statistics block(s)", s.stats));
    }
    format!(
        "exported {} from {input} to {output} ({}, nanosecond timestamps)",
        parts.join(", "),
        format.name()
    )
}

fn export_table(args: &Args, format: TableFormat) -> Result<()> {
    let display = crate::input::shown(&args.input);
    // The input is read twice (its header, then decoded): standard input is kept for that.
    crate::input::spool_stdin(&args.input)?;
    let mut out = AtomicFile::create(&args.output, args.force)?;
    let mut opened = open_input(&args.input, false)?;
    let offset = if opened.source.format().is_some_and(Format::is_capture) {
        Some(0)
    } else {
        trace_header(&mut opened.source)
            .with_context(|| display.clone())?
            .clock
            .realtime_offset_ns
    };
    drop(opened);
    let decoded = load(&args.input, &args.decode)?;
    let rows = (decoded.samples.len() + decoded.truth.len()) as u64;
    let bar = progress(crate::say::quiet(), rows, "pos");
    let mut df = jitterlab_report::packet_table(&decoded, offset, &|| bar.inc(1))?;
    jitterlab_report::write_frame(&mut df, format, &mut out)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    out.commit()
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    bar.finish_and_clear();
    if !crate::say::quiet() {
        eprintln!(
            "exported {} row(s) ({} received, {} ground truth) of {} stream(s) from {display} \
             to {} ({}){}",
            df.height(),
            decoded.samples.len(),
            decoded.truth.len(),
            decoded.streams.len(),
            crate::input::shown_out(&args.output),
            format.name(),
            if offset.is_none() {
                "; utc is null: the trace's clock has no known realtime offset"
            } else {
                ""
            }
        );
    }
    if decoded.skipped > 0 {
        eprintln!(
            "left out: {} packet(s) that could not be decoded (no sequence or times to put in \
             a row)",
            decoded.skipped
        );
    }
    if decoded.unknown_records > 0 {
        eprintln!(
            "left out: {} record(s) of a kind this version does not know",
            decoded.unknown_records
        );
    }
    Ok(())
}

/// The header of a trace, read without its records.
fn trace_header(input: impl Read) -> Result<Header> {
    Ok(Reader::new(input)?.header().clone())
}
