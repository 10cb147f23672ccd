//! `jitterlab info`: what each stream's receiver saw.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use jitterlab_capture::pcap::CaptureSummary;
use jitterlab_capture::stats::{StreamStats, stream_stats};
use jitterlab_capture::{Decoded, StreamInfo};
use serde_json::{Value, json};

use crate::input::{DecodeArgs, load_with_capture};

/// Arguments of `jitterlab info`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The trace, or a pcap/pcapng capture, to describe.
    trace: PathBuf,
    /// For captures: keep only datagrams this tcpdump-style expression accepts.
    #[arg(long, value_name = "EXPR")]
    filter: Option<String>,
    /// Print JSON (the shape scripts rely on) instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    decode: DecodeArgs,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let (decoded, capture) = load_with_capture(&args.trace, &args.decode, args.filter.as_deref())?;
    let stats = stream_stats(&decoded);
    let mut out = io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &info_json(&decoded, &stats, capture.as_ref()))?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "{}: {} stream(s), {} packets received{}",
        args.trace.display(),
        decoded.streams.len(),
        decoded.samples.len(),
        if decoded.truth.is_empty() {
            String::new()
        } else {
            format!(", ground truth for {} packets", decoded.truth.len())
        }
    )?;
    if let Some(c) = decoded.capture_stats {
        writeln!(
            out,
            "capture: {} datagrams received, {} kernel drops, {} queue drops, {} user-space \
             timestamps{}",
            c.received,
            c.kernel_drops,
            c.queue_drops,
            c.user_timestamps,
            if c.last {
                ""
            } else {
                " (the capture did not end cleanly)"
            }
        )?;
    }
    for (info, s) in decoded.streams.iter().zip(&stats) {
        writeln!(out, "\nstream {} ({})", info.id, info.label())?;
        writeln!(
            out,
            "  packets {:>8}   duration {:>9.3} s   rate {:>8.2} pkt/s",
            s.packets,
            s.duration().as_secs_f64(),
            s.mean_rate()
        )?;
        writeln!(
            out,
            "  lost    {:>8}   duplicates {:>7}   reordered {:>6}",
            s.lost, s.duplicates, s.reordered
        )?;
        writeln!(
            out,
            "  loss bursts {:>4}   mean length {:>6.2}   max length {:>5}",
            s.loss_bursts.count, s.loss_bursts.mean_len, s.loss_bursts.max_len
        )?;
        match s.jitter {
            Some(j) => writeln!(
                out,
                "  jitter (RFC 3550) last {:.3} ms   mean {:.3} ms   max {:.3} ms",
                j.last_ms, j.mean_ms, j.max_ms
            )?,
            None => writeln!(
                out,
                "  jitter unknown: no clock rate for payload type {} (pass --clock-rate {}=HZ)",
                info.payload_type.unwrap_or(0),
                info.payload_type.unwrap_or(0)
            )?,
        }
        if let Some(w) = s.wireshark {
            writeln!(
                out,
                "  wireshark: lost {}   max delta {:.3} ms   mean jitter {}   max jitter {}",
                w.lost,
                w.max_delta_ms,
                w.min_jitter_ms
                    .map_or("-".to_owned(), |_| format!("{:.3} ms", w.mean_jitter_ms)),
                w.min_jitter_ms
                    .map_or("-".to_owned(), |_| format!("{:.3} ms", w.max_jitter_ms)),
            )?;
        }
    }
    Ok(())
}

fn stream_json(info: &StreamInfo, s: &StreamStats) -> Value {
    json!({
        "stream": info.id,
        "ssrc": info.ssrc.map(|v| format!("0x{v:08X}")),
        "src": info.src.map(|e| e.0.to_string()),
        "dst": info.dst.map(|e| e.0.to_string()),
        "payload_type": info.payload_type,
        "clock_rate": info.clock_rate,
        "probe_stream": info.probe_stream,
        "channels": info.channels,
        "packets": s.packets,
        "expected": s.expected,
        "lost": s.lost,
        "duplicates": s.duplicates,
        "reordered": s.reordered,
        "loss_bursts": {
            "count": s.loss_bursts.count,
            "mean_len": s.loss_bursts.mean_len,
            "max_len": s.loss_bursts.max_len,
        },
        "jitter_ms": s.jitter.map(|j| json!({"last": j.last_ms, "mean": j.mean_ms, "max": j.max_ms})),
        "wireshark": s.wireshark.map(|w| json!({
            "packets": w.packets,
            "lost": w.lost,
            "min_delta_ms": w.min_delta_ms,
            "mean_delta_ms": w.mean_delta_ms,
            "max_delta_ms": w.max_delta_ms,
            "min_jitter_ms": w.min_jitter_ms,
            "mean_jitter_ms": w.min_jitter_ms.map(|_| w.mean_jitter_ms),
            "max_jitter_ms": w.min_jitter_ms.map(|_| w.max_jitter_ms),
        })),
        "first_seq": s.first_seq,
        "last_seq": s.last_seq,
        "duration_s": s.duration().as_secs_f64(),
        "mean_rate_pps": s.mean_rate(),
    })
}

fn info_json(decoded: &Decoded, stats: &[StreamStats], capture: Option<&CaptureSummary>) -> Value {
    json!({
        "capture": capture.map(|c| json!({
            "format": c.format,
            "link_types": c.link_types,
            "nanosecond": c.nanosecond,
            "frames": c.frames,
            "udp": c.udp,
            "filtered_out": c.filtered_out,
            "not_udp": c.not_udp,
            "truncated": c.truncated,
            "malformed": c.malformed,
            "unsupported_link": c.unsupported_link,
            "fragments": c.fragments,
            "reassembled": c.reassembled,
            "fragments_lost": c.fragments_lost,
            "trailing_bytes": c.trailing_bytes,
            "sdp_rtpmaps": c.rtpmaps.len(),
        })),
        "streams": decoded.streams.iter().zip(stats).map(|(i, s)| stream_json(i, s)).collect::<Vec<_>>(),
        "packets": decoded.samples.len(),
        "truth_packets": decoded.truth.len(),
        "skipped": decoded.skipped,
        "trailing_bytes": decoded.trailing_bytes,
        "capture_stats": decoded.capture_stats.map(|c| json!({
            "received": c.received,
            "kernel_drops": c.kernel_drops,
            "queue_drops": c.queue_drops,
            "user_timestamps": c.user_timestamps,
            "ended_cleanly": c.last,
        })),
    })
}
