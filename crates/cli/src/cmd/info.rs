//! `jitterlab info`: what each stream's receiver saw.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use jitterlab_capture::decode::periodic::{self, Estimate};
use jitterlab_capture::decode::{FlowSummary, SendInference};
use jitterlab_capture::pcap::CaptureSummary;
use jitterlab_capture::stats::{StreamStats, stream_stats};
use jitterlab_capture::timing::{Timing, timing};
use jitterlab_capture::{Decoded, StreamInfo};
use serde_json::{Value, json};

use crate::input::{DecodeArgs, load_with_progress, shown};

/// Arguments of `jitterlab info`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab info call.pcapng\n  jitterlab info call.jtr --stream 0 --json"
)]
pub(crate) struct Args {
    /// The trace, or a pcap/pcapng capture, to describe (- reads standard input; .gz and
    /// .zst are decompressed).
    trace: PathBuf,
    /// Print JSON (the shape scripts rely on) instead of a table.
    #[arg(long, help_heading = "Output")]
    json: bool,
    #[command(flatten)]
    decode: DecodeArgs,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let (decoded, capture) = load_with_progress(&args.trace, &args.decode, true)?;
    let stats = stream_stats(&decoded);
    let mut out = crate::say::stdout();
    if args.json {
        // Rendered first, so that a closed pipe is the I/O error `main` recognises.
        out.write_all(
            serde_json::to_string_pretty(&info_json(&decoded, &stats, capture.as_ref()))?
                .as_bytes(),
        )?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "{}: {} stream(s), {} packets received{}",
        shown(&args.trace),
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
    write_flows(&mut out, &decoded.flows)?;
    for (info, s) in decoded.streams.iter().zip(&stats) {
        writeln!(out, "\nstream {} ({})", info.id, info.label())?;
        if is_plain(info) {
            write_timing(
                &mut out,
                &stream_timing(&decoded, info),
                flow_of(&decoded, info),
            )?;
            match plain_period(&decoded, info) {
                Some(e) => writeln!(out, "  send period (inferred): {}", describe_period(&e))?,
                None => writeln!(
                    out,
                    "  send period: none found (not a periodic sender, or too few packets)"
                )?,
            }
            writeln!(
                out,
                "  no sequence numbers or send times: loss and jitter unknown (try `jitterlab \
                 discover`, or --decoder periodic)"
            )?;
            continue;
        }
        writeln!(
            out,
            "  packets {:>8}   duration {:>9.3} s   rate {:>8.2} pkt/s",
            s.packets,
            s.duration().as_secs_f64(),
            s.mean_rate()
        )?;
        if let Some(inferred) = &info.send_inferred {
            writeln!(out, "  {}", describe_send(inferred))?;
        }
        if info.ssrc.is_some() && (info.encoding.is_some() || info.media.is_some()) {
            writeln!(
                out,
                "  {} {}",
                info.media.map_or("media", |m| m.name()),
                info.encoding.as_deref().unwrap_or("(encoding unknown)")
            )?;
        }
        if let Some(c) = info.clock_inferred {
            match c.hz {
                Some(hz) => writeln!(
                    out,
                    "  clock {hz} Hz, inferred: timestamps advance {} units/s over {} packets and {:.1} s (pass --clock-rate {}={hz} to set it)",
                    c.measured_hz,
                    c.packets,
                    c.span_ms as f64 / 1e3,
                    info.payload_type.unwrap_or(0)
                )?,
                None => writeln!(
                    out,
                    "  clock unknown: timestamps advance {} units/s over {} packets and {:.1} s, not clearly a standard rate (nearest {} Hz)",
                    c.measured_hz,
                    c.packets,
                    c.span_ms as f64 / 1e3,
                    c.nearest_hz
                )?,
            }
        }
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
            None if info.ssrc.is_some() => writeln!(
                out,
                "  jitter unknown: no clock rate for payload type {} (pass --clock-rate {}=HZ)",
                info.payload_type.unwrap_or(0),
                info.payload_type.unwrap_or(0)
            )?,
            None => writeln!(
                out,
                "  jitter unknown: the {} messages carry no send times (too few to infer them \
                 from their sequence numbers)",
                info.protocol
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

/// The flows of the capture, one line each, with what was counted apart.
fn write_flows(out: &mut impl Write, flows: &[FlowSummary]) -> io::Result<()> {
    if flows.is_empty() || (flows.len() == 1 && flows[0].src.is_none()) {
        return Ok(());
    }
    writeln!(out, "\n{} flow(s):", flows.len())?;
    for f in flows {
        let rate = if f.duration().0 > 0 {
            f.packets as f64 / f.duration().as_secs_f64()
        } else {
            0.0
        };
        let mut extra: Vec<String> = f.counted.iter().map(|(k, n)| format!("{k} {n}")).collect();
        if f.skipped > 0 {
            extra.push(format!("skipped {}", f.skipped));
        }
        writeln!(
            out,
            "  {:<47} {:<8} {:>8} pkts {:>10} bytes {:>8.2} pkt/s{}",
            f.label(),
            f.protocol,
            f.packets,
            f.bytes,
            rate,
            if extra.is_empty() {
                String::new()
            } else {
                format!("   counted apart: {}", extra.join(", "))
            }
        )?;
    }
    Ok(())
}

/// A stream with arrivals only: a plain UDP flow, or one `--decoder periodic` found no
/// period in.
fn is_plain(info: &StreamInfo) -> bool {
    info.ssrc.is_none() && !info.has_send_times() && matches!(info.protocol, "udp" | "periodic")
}

/// The flow a stream belongs to.
fn flow_of<'a>(decoded: &'a Decoded, info: &StreamInfo) -> Option<&'a FlowSummary> {
    decoded
        .flows
        .iter()
        .find(|f| f.src == info.src && f.dst == info.dst)
}

fn stream_timing(decoded: &Decoded, info: &StreamInfo) -> Timing {
    timing(decoded.stream_samples(info.id).map(|s| s.arrival))
}

/// A plain flow's statistics: no sequence numbers or send times, only arrivals.
fn write_timing(out: &mut impl Write, t: &Timing, flow: Option<&FlowSummary>) -> io::Result<()> {
    writeln!(
        out,
        "  packets {:>8}   bytes {:>10}   duration {:>9.3} s   rate {:>8.2} pkt/s",
        t.packets,
        flow.map_or(0, |f| f.bytes),
        t.duration_s,
        t.rate_pps
    )?;
    if let Some(iv) = t.intervals {
        writeln!(
            out,
            "  inter-arrival p50 {:.3} ms   p95 {:.3} ms   p99 {:.3} ms   max {:.3} ms",
            iv.p50_ms, iv.p95_ms, iv.p99_ms, iv.max_ms
        )?;
        writeln!(
            out,
            "  gaps over 3 median intervals {}   longest {:.3} ms",
            t.gaps, t.longest_gap_ms
        )?;
    }
    Ok(())
}

/// A plain flow's send period, inferred from its arrivals (marked as inferred wherever shown).
fn plain_period(decoded: &Decoded, info: &StreamInfo) -> Option<Estimate> {
    let arrivals: Vec<_> = decoded.stream_samples(info.id).map(|s| s.arrival).collect();
    periodic::estimate(&arrivals)
}

fn describe_period(e: &Estimate) -> String {
    format!(
        "{:.3} ms{}, drift {:+.0} ppm, confidence {:.2}, {} slots empty, {} late in {} burst(s)",
        e.period_ns / 1e6,
        e.nominal_period_ns
            .map_or(String::new(), |n| format!(" (nominal {:.3} ms)", n / 1e6)),
        e.drift_ppm,
        e.confidence,
        e.missing,
        e.late,
        e.bursts
    )
}

fn describe_send(s: &SendInference) -> String {
    match s {
        SendInference::Sequence { period_ns } => format!(
            "send times inferred from sequence numbers: one message every {:.3} ms",
            period_ns / 1e6
        ),
        SendInference::Periodic(e) => {
            format!(
                "send times inferred from arrivals (periodic): period {}",
                describe_period(e)
            )
        }
        SendInference::NoPeriod => "--decoder periodic found no period: no send times".to_owned(),
    }
}

fn period_json(e: &Estimate) -> Value {
    json!({
        "period_ms": e.period_ns / 1e6,
        "nominal_period_ms": e.nominal_period_ns.map(|n| n / 1e6),
        "drift_ppm": e.drift_ppm,
        "confidence": e.confidence,
        "packets": e.packets,
        "slots": e.slots,
        "missing": e.missing,
        "duplicates": e.duplicates,
        "late": e.late,
        "bursts": e.bursts,
        "reordered": e.reordered,
        "inferred": true,
    })
}

fn send_inferred_json(s: &SendInference) -> Value {
    match s {
        SendInference::Sequence { period_ns } => {
            json!({"method": "sequence", "period_ms": period_ns / 1e6})
        }
        SendInference::Periodic(e) => json!({"method": "periodic", "period": period_json(e)}),
        SendInference::NoPeriod => json!({"method": "periodic", "period": null}),
    }
}

fn timing_json(t: &Timing) -> Value {
    json!({
        "packets": t.packets,
        "duration_s": t.duration_s,
        "rate_pps": t.rate_pps,
        "iat_ms": t.intervals.map(|iv| json!({
            "mean": iv.mean_ms, "p50": iv.p50_ms, "p95": iv.p95_ms, "p99": iv.p99_ms, "max": iv.max_ms,
        })),
        "gaps": {"count": t.gaps, "longest_ms": t.longest_gap_ms},
    })
}

fn flow_json(f: &FlowSummary) -> Value {
    json!({
        "flow": f.label(),
        "src": f.src.map(|e| e.0.to_string()),
        "dst": f.dst.map(|e| e.0.to_string()),
        "protocol": f.protocol,
        "packets": f.packets,
        "bytes": f.bytes,
        "duration_s": f.duration().as_secs_f64(),
        "counted": f.counted,
        "skipped": f.skipped,
        "skip_example": f.skip_example,
    })
}

fn stream_json(decoded: &Decoded, info: &StreamInfo, s: &StreamStats) -> Value {
    let flow = flow_of(decoded, info);
    json!({
        "stream": info.id,
        "protocol": info.protocol,
        "flow": {
            "src": info.src.map(|e| e.0.to_string()),
            "dst": info.dst.map(|e| e.0.to_string()),
        },
        "lane": info.lane,
        "send_times": info.has_send_times(),
        "bytes": flow.map(|f| f.bytes),
        // RTP streams have their deltas in `wireshark`; their intervals would cost a pass and
        // a copy of every arrival (a million-packet call's worth) for figures already there.
        "timing": info.ssrc.is_none().then(|| timing_json(&stream_timing(decoded, info))),
        "period": is_plain(info)
            .then(|| plain_period(decoded, info))
            .flatten()
            .map(|e| period_json(&e)),
        "send_inferred": info.send_inferred.as_ref().map(send_inferred_json),
        "clock_inferred": info.clock_inferred.map(|c| json!({
            "hz": c.hz,
            "measured_hz": c.measured_hz,
            "nearest_hz": c.nearest_hz,
            "packets": c.packets,
            "span_s": c.span_ms as f64 / 1e3,
            "ambiguous": c.hz.is_none(),
        })),
        "ssrc": info.ssrc.map(|v| format!("0x{v:08X}")),
        "src": info.src.map(|e| e.0.to_string()),
        "dst": info.dst.map(|e| e.0.to_string()),
        "payload_type": info.payload_type,
        "encoding": info.encoding,
        "media": info.media.map(|m| m.name()),
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
        "streams": decoded.streams.iter().zip(stats).map(|(i, s)| stream_json(decoded, i, s)).collect::<Vec<_>>(),
        "flows": decoded.flows.iter().map(flow_json).collect::<Vec<_>>(),
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
