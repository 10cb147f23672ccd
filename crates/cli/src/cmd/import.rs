//! `jitterlab import`: CSV logs and pcap/pcapng captures into traces.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use jitterlab_capture::decode::DecoderConfig;
use jitterlab_capture::import::import_csv;
use jitterlab_capture::output::AtomicFile;
use jitterlab_capture::{Format, RecordKind, Writer};

use crate::input::{
    DecodeArgs, Input, Selection, decode_capture, open_input, read_capture, shown, shown_out,
};

/// Arguments of `jitterlab import`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab import call.pcapng -o call.jtr --filter \"udp port 5004\"\n  jitterlab import game.pcap -o game.jtr --decoder 'layout:seq=u32be@0,send=f64le@4:ms,value=f32le@12*3'\n  jitterlab import log.csv -o log.jtr"
)]
pub(crate) struct Args {
    /// What to import: a pcap/pcapng capture, or a CSV log with columns seq, send_ms,
    /// arrival_ms, optional stream, values (- reads standard input; .gz and .zst are
    /// decompressed).
    input: PathBuf,
    /// The trace to write (- writes standard output).
    #[arg(short, long, value_name = "OUT", help_heading = "Output")]
    output: PathBuf,
    /// Overwrite OUT if it exists.
    #[arg(long, help_heading = "Output")]
    force: bool,
    /// Which datagrams to import (captures only): --stream, --ssrc, --flow, --filter.
    #[command(flatten)]
    select: Selection,
    /// The payload decoder the trace names (captures only): auto (default: each flow judged
    /// by its packets), rtp, probe, enet, kcp, raknet, udp or layout:SPEC, e.g.
    /// layout:seq=u32be@0,send=f64le@4:ms,value=f32le@12*3.
    #[arg(long, value_name = "NAME", value_parser = crate::values::Decoder, help_heading = "Decoding")]
    decoder: Option<String>,
    /// Clock rate for a dynamic RTP payload type, e.g. 96=90000 (repeatable; stored in the
    /// trace).
    #[arg(long = "clock-rate", value_name = "PT=HZ", help_heading = "Decoding")]
    clock_rates: Vec<String>,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let display = shown(&args.input);
    let mut input = open_input(&args.input, true)?;
    let format = input.source.format();
    if format.is_some_and(Format::is_capture) {
        return import_capture(args, &mut input);
    }
    if args.select.is_some() || args.decoder.is_some() || !args.clock_rates.is_empty() {
        bail!(
            "{display}: --stream, --ssrc, --flow, --filter, --decoder and --clock-rate apply \
             to pcap/pcapng captures"
        );
    }
    if format == Some(Format::Trace) {
        bail!("{display}: this is already a jitterlab trace");
    }
    let name = args
        .input
        .file_name()
        .map_or_else(|| "stdin".to_owned(), |n| n.to_string_lossy().into_owned());
    let imported = import_csv(&mut input.source, &name).with_context(|| display.clone())?;
    input.finish();
    let out = AtomicFile::create(&args.output, args.force)?;
    let mut writer = Writer::new(out, &imported.header)?;
    for record in &imported.records {
        writer.write(record)?;
    }
    writer.into_inner().commit()?;
    let received = imported
        .records
        .iter()
        .filter(|r| r.kind == RecordKind::Received)
        .count();
    crate::say::note!(
        "imported {received} packets{} from {display} into {}",
        if imported.lost_rows > 0 {
            format!(" (+ ground truth; {} never arrived)", imported.lost_rows)
        } else {
            String::new()
        },
        shown_out(&args.output)
    );
    Ok(())
}

fn import_capture(args: &Args, input: &mut Input) -> Result<()> {
    let display = shown(&args.input);
    let decoder = match &args.decoder {
        Some(name) => DecoderConfig::parse(name)?.name(),
        None => "auto".to_owned(),
    };
    // Check the clock rates before reading anything.
    let mut check = DecoderConfig::parse(&decoder)?;
    for spec in &args.clock_rates {
        check.add_clock_rate(spec)?;
    }
    let out = AtomicFile::create(&args.output, args.force)?;
    let mut capture = read_capture(input, args.select.filter.as_deref(), &decoder)?;
    for (pt, hz) in &check.clock_rates {
        capture
            .header
            .hints
            .insert(format!("clock_rate.{pt}"), hz.to_string());
    }
    let mut decoded =
        decode_capture(&capture, &DecodeArgs::default()).with_context(|| display.clone())?;
    if args.select.stream.is_some() || args.select.ssrc.is_some() || args.select.flow.is_some() {
        // Keep the datagrams of the selected streams' flows (of their SSRCs, for RTP).
        args.select.apply(&mut decoded, &display)?;
        let kept: Vec<_> = decoded
            .streams
            .iter()
            .map(|s| (s.src, s.dst, s.ssrc))
            .collect();
        capture.records.retain(|r| {
            kept.iter().any(|&(src, dst, ssrc)| {
                src == r.src
                    && dst == r.dst
                    && ssrc.is_none_or(|x| r.payload.get(8..12) == Some(&x.to_be_bytes()[..]))
            })
        });
        capture.header.notes.push(format!(
            "only the datagrams of {} stream(s) selected on import",
            decoded.streams.len()
        ));
    }
    let mut writer = Writer::new(out, &capture.header)?;
    for record in &capture.records {
        writer.write(record)?;
    }
    writer.into_inner().commit()?;
    crate::say::note!(
        "imported {} UDP datagrams{} ({} frames) from {display} into {}: {} stream(s) with the {decoder} decoder{}",
        capture.records.len(),
        match capture.summary.ground_truth {
            0 => String::new(),
            n => format!(
                ", {n} of them ground truth (a jitterlab export's jitterlab-sent interface)"
            ),
        },
        capture.summary.frames,
        shown_out(&args.output),
        decoded.streams.len(),
        if decoded.skipped > 0 {
            format!(
                ", {} datagram(s) it cannot decode (kept in the trace)",
                decoded.skipped
            )
        } else {
            String::new()
        }
    );
    Ok(())
}
