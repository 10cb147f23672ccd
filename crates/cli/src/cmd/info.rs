//! `jitterlab info`: what each stream's receiver saw.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use jitterlab_capture::decode::periodic::Estimate;
use jitterlab_capture::decode::{Collector, FlowSummary, SendInference};
use jitterlab_capture::pcap::CaptureSummary;
use jitterlab_capture::stats::summary::is_plain;
use jitterlab_capture::stats::{Accumulator, SecondPass, StreamSummary, Summary};
use jitterlab_capture::timing::Timing;
use jitterlab_capture::{Decoded, StreamInfo};
use serde_json::{Value, json};

use crate::input::{DecodeArgs, Push, read_trace, shown, warn_skipped};

mod running;

/// Arguments of `jitterlab info`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab info call.pcapng\n  jitterlab info call.jtr --stream 0 --json\n  \
                  tcpdump -i eth0 -U -w - udp port 5004 | jitterlab info - --every 10s\n\n\
                  The trace is read once, in memory that grows with its streams, not its \
                  packets (docs/streaming.md)."
)]
pub(crate) struct Args {
    /// The trace, or a pcap/pcapng capture, to describe (- reads standard input; .gz and
    /// .zst are decompressed).
    trace: PathBuf,
    /// Print JSON (the shape scripts rely on) instead of a table.
    #[arg(long, help_heading = "Output")]
    json: bool,
    /// Also print a running summary every DURATION while reading (e.g. 10s): a block of text
    /// each time, or one JSON object a line with --json; the last one at the end of the
    /// input or on Ctrl-C/SIGTERM.
    #[arg(long, value_name = "DURATION", help_heading = "Output")]
    every: Option<String>,
    /// The most streams and flows the text lists (the rest are counted; --json lists every
    /// one; 0: no limit).
    #[arg(long, value_name = "N", default_value_t = 100, help_heading = "Output")]
    max_streams: usize,
    #[command(flatten)]
    decode: DecodeArgs,
}

pub(crate) fn run(args: &Args) -> Result<()> {
    if let Some(every) = &args.every {
        let every = jitterlab_capture::time::parse_duration(every)
            .map_err(|e| anyhow::anyhow!("--every: {e}"))?;
        if every.0 <= 0 {
            anyhow::bail!(
                "--every {}: expected a duration > 0, e.g. 10s",
                args.every.as_deref().unwrap_or("")
            );
        }
        return running::run(args, std::time::Duration::from_nanos(every.0 as u64));
    }
    let summary = summarize(&args.trace, &args.decode, args.json)?;
    print(args, &summary, None)
}

/// Reads `path` once (twice for the few streams whose exact percentiles need it, when it is
/// a file) and summarizes it, narrowed to the streams `decode` selects; `all_timing` as
/// [`Accumulator::summarize`] takes it.
pub(crate) fn summarize(path: &Path, decode: &DecodeArgs, all_timing: bool) -> Result<Summary> {
    let read = crate::input::read_accumulated(path, decode, true)?;
    let records = read.records;
    let (mut summary, second) = Accumulator::summarize(read.finished, all_timing);
    summary.decoded.trailing_bytes = read.trailing_bytes;
    if let Some(second) = second {
        refine(path, decode, records, second, &mut summary)?;
    }
    finish_summary(path, decode, read.capture, summary)
}

/// The second pass: the same records again, for exact percentiles (a file only).
fn refine(
    path: &Path,
    decode: &DecodeArgs,
    records: u64,
    second: SecondPass,
    summary: &mut Summary,
) -> Result<()> {
    let again = !jitterlab_capture::source::is_stdio(path)
        && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if !again {
        summary.notes.push(format!(
            "the inter-arrival percentiles of {} stream(s) are estimates (within 1/2048): \
             standard input cannot be read twice (give a file for exact ones)",
            second.streams()
        ));
        return Ok(());
    }
    let read = read_trace(path, decode, false, |header, config| {
        Ok(Limited {
            collector: Collector::with_sink(header, config, second)?,
            left: records,
        })
    })?;
    read.push.collector.finish_parts().sink.apply(summary);
    Ok(())
}

/// A collector that takes only the first `left` records (a file that grew since the first
/// pass is read as it was).
struct Limited<S> {
    collector: Collector<S>,
    left: u64,
}

impl<S: jitterlab_capture::decode::SampleSink> Push for Limited<S> {
    fn add_rtpmaps(&mut self, maps: Vec<jitterlab_capture::sdp::RtpMap>) {
        if self.left > 0 {
            self.collector.add_rtpmaps(maps);
        }
    }
    fn push(&mut self, rec: &jitterlab_capture::trace::RecordRef<'_>) {
        if self.left > 0 {
            self.left -= 1;
            self.collector.push_ref(rec);
        }
    }
}

/// The warnings, the selection and `--video`/`--audio`, as [`crate::input::load`] applies
/// them.
fn finish_summary(
    path: &Path,
    decode: &DecodeArgs,
    capture: Option<CaptureSummary>,
    mut summary: Summary,
) -> Result<Summary> {
    let display = shown(path);
    warn_skipped(&display, &summary.decoded);
    for note in &summary.notes {
        crate::say::note!("note: {display}: {note}");
    }
    let before: Vec<u32> = summary.decoded.streams.iter().map(|s| s.id).collect();
    decode.select.apply(&mut summary.decoded, &display)?;
    summary.retain_listed(&before);
    if let Some(kind) = decode.forced_media() {
        for s in summary
            .decoded
            .streams
            .iter_mut()
            .filter(|s| s.ssrc.is_some())
        {
            s.media = Some(kind);
        }
    }
    summary.capture = capture;
    Ok(summary)
}

/// Prints a summary: pretty JSON, or one line of JSON for a running summary (`running`:
/// whether it is the last), or the text.
fn print(args: &Args, summary: &Summary, running: Option<bool>) -> Result<()> {
    let mut out = crate::say::stdout();
    if args.json {
        // Rendered first, so that a closed pipe is the I/O error `main` recognises.
        let text = match running {
            None => pretty_json(summary)?,
            Some(last) => {
                let mut v = info_json(summary);
                v["final"] = json!(last);
                serde_json::to_string(&v)?
            }
        };
        out.write_all(text.as_bytes())?;
        writeln!(out)?;
        out.flush()?;
        return Ok(());
    }
    if let Some(last) = running {
        writeln!(
            out,
            "{}",
            if last {
                "== final summary =="
            } else {
                "== running summary =="
            }
        )?;
    }
    write_text(&mut out, args, summary)?;
    if running.is_some() {
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

fn write_text(out: &mut impl Write, args: &Args, summary: &Summary) -> Result<()> {
    let decoded = &summary.decoded;
    writeln!(
        out,
        "{}: {} stream(s), {} packets received{}",
        shown(&args.trace),
        decoded.streams.len(),
        summary.packets,
        if summary.truth_packets == 0 {
            String::new()
        } else {
            format!(", ground truth for {} packets", summary.truth_packets)
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
    let limit = if args.max_streams == 0 {
        usize::MAX
    } else {
        args.max_streams
    };
    write_flows(out, &decoded.flows, limit)?;
    for (n, (info, st)) in decoded.streams.iter().zip(&summary.streams).enumerate() {
        if n == limit {
            writeln!(
                out,
                "\n... and {} more stream(s) ({} packets): --json lists every one, --stream N \
                 shows one, --max-streams 0 lists them all",
                decoded.streams.len() - n,
                summary.streams[n..]
                    .iter()
                    .map(|s| s.stats.packets)
                    .sum::<u64>()
            )?;
            break;
        }
        let s = &st.stats;
        writeln!(out, "\nstream {} ({})", info.id, info.label())?;
        if is_plain(info) {
            write_timing(
                out,
                &st.timing.unwrap_or_default(),
                st.timing_approximate,
                flow_of(decoded, info),
            )?;
            match &st.period {
                Some(e) => writeln!(out, "  send period (inferred): {}", describe_period(e))?,
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
fn write_flows(out: &mut impl Write, flows: &[FlowSummary], limit: usize) -> io::Result<()> {
    if flows.is_empty() || (flows.len() == 1 && flows[0].src.is_none()) {
        return Ok(());
    }
    writeln!(out, "\n{} flow(s):", flows.len())?;
    for (n, f) in flows.iter().enumerate() {
        if n == limit {
            writeln!(
                out,
                "  ... and {} more flow(s) ({} packets)",
                flows.len() - n,
                flows[n..].iter().map(|f| f.packets).sum::<u64>()
            )?;
            break;
        }
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

/// The flow a stream belongs to.
fn flow_of<'a>(decoded: &'a Decoded, info: &StreamInfo) -> Option<&'a FlowSummary> {
    decoded
        .flows
        .iter()
        .find(|f| f.src == info.src && f.dst == info.dst)
}

/// A plain flow's statistics: no sequence numbers or send times, only arrivals.
fn write_timing(
    out: &mut impl Write,
    t: &Timing,
    approximate: bool,
    flow: Option<&FlowSummary>,
) -> io::Result<()> {
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
            "  inter-arrival p50 {:.3} ms   p95 {:.3} ms   p99 {:.3} ms   max {:.3} ms{}",
            iv.p50_ms,
            iv.p95_ms,
            iv.p99_ms,
            iv.max_ms,
            if approximate {
                "   (percentiles estimated)"
            } else {
                ""
            }
        )?;
        writeln!(
            out,
            "  gaps over 3 median intervals {}   longest {:.3} ms",
            t.gaps, t.longest_gap_ms
        )?;
    }
    Ok(())
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

fn timing_json(t: &Timing, approximate: bool) -> Value {
    let mut v = json!({
        "packets": t.packets,
        "duration_s": t.duration_s,
        "rate_pps": t.rate_pps,
        "iat_ms": t.intervals.map(|iv| json!({
            "mean": iv.mean_ms, "p50": iv.p50_ms, "p95": iv.p95_ms, "p99": iv.p99_ms, "max": iv.max_ms,
        })),
        "gaps": {"count": t.gaps, "longest_ms": t.longest_gap_ms},
    });
    if approximate {
        v["approximate"] = json!(true);
    }
    v
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

fn stream_json(decoded: &Decoded, info: &StreamInfo, st: &StreamSummary) -> Value {
    let flow = flow_of(decoded, info);
    let s = &st.stats;
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
        "timing": st.timing.as_ref().map(|t| timing_json(t, st.timing_approximate)),
        "period": st.period.as_ref().map(period_json),
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

/// `info_json` pretty-printed as `serde_json::to_string_pretty` prints it, byte for byte,
/// with each stream's object built and printed in turn: 100,000 streams do not make a tree of
/// 100,000 objects in memory.
fn pretty_json(summary: &Summary) -> Result<String> {
    let indent = |text: String, by: &str| text.replace('\n', &format!("\n{by}"));
    let mut top = info_json_without_streams(summary);
    let mut out = String::from("{");
    let Value::Object(map) = &mut top else {
        return Ok(serde_json::to_string_pretty(&top)?);
    };
    let mut keys: Vec<String> = map.keys().cloned().collect();
    keys.push("streams".to_owned());
    keys.sort();
    for (i, key) in keys.iter().enumerate() {
        out.push_str(if i == 0 { "\n  " } else { ",\n  " });
        out.push_str(&serde_json::to_string(key)?);
        out.push_str(": ");
        if key == "streams" {
            let decoded = &summary.decoded;
            if decoded.streams.is_empty() {
                out.push_str("[]");
                continue;
            }
            out.push('[');
            for (n, (info, st)) in decoded.streams.iter().zip(&summary.streams).enumerate() {
                out.push_str(if n == 0 { "\n    " } else { ",\n    " });
                let v = stream_json(decoded, info, st);
                out.push_str(&indent(serde_json::to_string_pretty(&v)?, "    "));
            }
            out.push_str("\n  ]");
        } else {
            out.push_str(&indent(serde_json::to_string_pretty(&map[key])?, "  "));
        }
    }
    out.push_str("\n}");
    Ok(out)
}

fn info_json(summary: &Summary) -> Value {
    let mut v = info_json_without_streams(summary);
    let decoded = &summary.decoded;
    v["streams"] = decoded
        .streams
        .iter()
        .zip(&summary.streams)
        .map(|(i, s)| stream_json(decoded, i, s))
        .collect();
    v
}

fn info_json_without_streams(summary: &Summary) -> Value {
    let decoded = &summary.decoded;
    json!({
        "capture": summary.capture.as_ref().map(|c| json!({
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
        "flows": decoded.flows.iter().map(flow_json).collect::<Vec<_>>(),
        "packets": summary.packets,
        "truth_packets": summary.truth_packets,
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
