//! `jitterlab discover`: propose a `layout:SPEC` for an unknown protocol from a flow's payloads.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use jitterlab_capture::discover::{
    self, Analysis, CONFIDENCE, Candidate, Discovery, Evidence, Role, discover,
};
use jitterlab_capture::filter::Filter;
use jitterlab_capture::pcap;
use jitterlab_capture::trace::Endpoint;
use jitterlab_capture::{Format, Nanos, Reader, RecordKind};
use serde_json::{Value, json};

use crate::input::{DecodeArgs, Selection, load, open_input, shown, spool_stdin};

/// Flows with fewer packets are not studied unless selected.
const MIN_FLOW_PACKETS: usize = 20;

/// Arguments of `jitterlab discover`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab discover game.pcapng\n  jitterlab discover game.pcapng --flow 10.0.0.1:5000-10.0.0.2:6000 --json"
)]
pub(crate) struct Args {
    /// The trace, or a pcap/pcapng capture, to study.
    trace: PathBuf,
    /// Which flows to study: the flow of `--stream N` or `--ssrc X` (as `jitterlab info`
    /// numbers streams), `--flow SRC-DST`, and `--filter EXPR` on the datagrams.
    #[command(flatten)]
    select: Selection,
    /// Print JSON instead of text.
    #[arg(long, help_heading = "Output")]
    json: bool,
}

/// One flow's packets: (src, dst) in one direction.
struct Flow {
    src: Option<Endpoint>,
    dst: Option<Endpoint>,
    packets: Vec<(Nanos, Vec<u8>)>,
    /// The first stream `jitterlab info` shows on this flow, if any.
    stream: Option<u32>,
}

impl Flow {
    /// `SRC-DST`, as `--flow` takes it, when both ends are known.
    fn name(&self) -> Option<String> {
        Some(format!("{}-{}", self.src?.0, self.dst?.0))
    }
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let filter = args.select.filter()?;
    // Read twice (the flows' payloads, then the streams as `info` decodes them).
    spool_stdin(&args.trace)?;
    let mut flows = read_flows(&args.trace, filter.as_ref())?;
    let display = shown(&args.trace);
    // The streams `info` shows (narrowed by the selection), to number flows as it does and to
    // find the flows of `--stream` and `--ssrc`.
    let decode = DecodeArgs {
        select: args.select.clone(),
        ..DecodeArgs::default()
    };
    let decoded = load(&args.trace, &decode)?;
    for f in &mut flows {
        f.stream = decoded
            .streams
            .iter()
            .find(|s| s.src == f.src && s.dst == f.dst)
            .map(|s| s.id);
    }
    let selected =
        args.select.stream.is_some() || args.select.ssrc.is_some() || args.select.flow.is_some();
    let chosen: Vec<usize> = if selected {
        let kept: Vec<usize> = (0..flows.len())
            .filter(|&i| {
                let f = &flows[i];
                f.stream.is_some()
                    || decoded
                        .flows
                        .iter()
                        .any(|d| d.src == f.src && d.dst == f.dst)
            })
            .collect();
        if kept.is_empty() {
            bail!(
                "{display}: no flow matches the selection (flows: {})",
                list(&flows)
            );
        }
        kept
    } else {
        (0..flows.len())
            .filter(|&i| flows[i].packets.len() >= MIN_FLOW_PACKETS)
            .collect()
    };
    let small = flows.len() - chosen.len();
    if !selected && small > 0 {
        crate::say::note!(
            "note: {display}: {small} flow(s) with fewer than {MIN_FLOW_PACKETS} packets not \
             studied (select one with --flow SRC-DST or --stream N)"
        );
    }
    let results: Vec<(usize, Discovery)> = chosen
        .iter()
        .map(|&i| {
            let packets: Vec<discover::Packet<'_>> = flows[i]
                .packets
                .iter()
                .map(|(t, p)| (*t, p.as_slice()))
                .collect();
            (i, discover(&packets))
        })
        .collect();
    let mut out = crate::say::stdout();
    if args.json {
        let streams: Vec<Value> = results
            .iter()
            .map(|(i, d)| stream_json(*i, &flows[*i], d))
            .collect();
        // Rendered first so that a closed pipe surfaces as the I/O error `main` recognises.
        let text = serde_json::to_string_pretty(&json!({ "streams": streams }))?;
        writeln!(out, "{text}")?;
        return Ok(());
    }
    if results.is_empty() {
        writeln!(
            out,
            "{display}: no flow with at least {MIN_FLOW_PACKETS} packets ({} flow(s) in all)",
            flows.len()
        )?;
    }
    for (k, (i, d)) in results.iter().enumerate() {
        if k > 0 {
            writeln!(out)?;
        }
        print_stream(&mut out, *i, &flows[*i], d)?;
    }
    Ok(())
}

fn list(flows: &[Flow]) -> String {
    let names: Vec<String> = flows
        .iter()
        .take(5)
        .map(|f| f.name().unwrap_or_else(|| "(no endpoints)".to_owned()))
        .collect();
    let more = if flows.len() > 5 { ", ..." } else { "" };
    format!("{}{more}", names.join(", "))
}

/// Reads the received packets of a capture or trace, grouped by (src, dst) in order of first
/// appearance.
fn read_flows(path: &Path, filter: Option<&Filter>) -> Result<Vec<Flow>> {
    let display = shown(path);
    let mut input = open_input(path, false)?;
    let mut flows: Vec<Flow> = Vec::new();
    let mut index: HashMap<(Option<Endpoint>, Option<Endpoint>), usize> = HashMap::new();
    let mut push = |src: Option<Endpoint>, dst: Option<Endpoint>, time: Nanos, payload: Vec<u8>| {
        let i = *index.entry((src, dst)).or_insert_with(|| {
            flows.push(Flow {
                src,
                dst,
                packets: Vec::new(),
                stream: None,
            });
            flows.len() - 1
        });
        flows[i].packets.push((time, payload));
    };
    if input.source.format().is_some_and(Format::is_capture) {
        let summary = pcap::read_capture(&mut input.source, filter, |rec| {
            push(rec.src, rec.dst, rec.time, rec.payload);
            Ok(())
        })
        .with_context(|| display.clone())?;
        for problem in summary.problems() {
            crate::say::note!("note: {display}: {problem}");
        }
    } else {
        let mut reader = Reader::new(&mut input.source).with_context(|| display.clone())?;
        let mut unmatched = 0u64;
        while let Some(rec) = reader.read_record().with_context(|| display.clone())? {
            if rec.kind() != RecordKind::Received {
                continue;
            }
            if let Some(f) = filter {
                match (rec.src, rec.dst) {
                    (Some(s), Some(d)) if f.matches(s.0, d.0) => {}
                    (Some(_), Some(_)) => continue,
                    _ => {
                        unmatched += 1;
                        continue;
                    }
                }
            }
            push(rec.src, rec.dst, rec.time, rec.payload);
        }
        if unmatched > 0 {
            crate::say::note!(
                "note: {display}: {unmatched} record(s) without endpoints left out by --filter"
            );
        }
        if reader.trailing_bytes() > 0 {
            eprintln!(
                "warning: {display}: the last {} bytes do not form a whole record; every \
                 complete record was read",
                reader.trailing_bytes()
            );
        }
    }
    // Discovery follows arrival order (captures are in file order, mostly the same).
    for f in &mut flows {
        f.packets.sort_by_key(|p| p.0);
    }
    Ok(flows)
}

fn unit_name(c: &Candidate) -> Option<String> {
    c.unit.map(|u| u.spec().trim_start_matches(':').to_owned())
}

fn candidate_json(c: &Candidate) -> Value {
    let evidence = match &c.evidence {
        Evidence::Counter {
            step,
            exact,
            skips,
            reordered,
            wraps,
        } => {
            json!({"step": step, "exact": exact, "skips": skips, "reordered": reordered, "wraps": wraps})
        }
        Evidence::Clock {
            rate,
            residual_p50,
            residual_p95,
            from_counter,
        } => json!({
            "rate": rate,
            "drift_ppm": (rate - 1.0) * 1e6,
            "residual_p50_ms": residual_p50.as_millis_f64(),
            "residual_p95_ms": residual_p95.as_millis_f64(),
            "from_counter": from_counter,
        }),
        Evidence::Constant { bytes } => json!({"constant": hex(bytes)}),
        Evidence::Values { values, changes } => json!({
            "values": values.iter().map(|(v, n)| json!({"value": v, "packets": n})).collect::<Vec<_>>(),
            "changes": changes,
        }),
        _ => Value::Null,
    };
    json!({
        "field": c.role.name(),
        "type": c.type_name(),
        "offset": c.offset,
        "unit": unit_name(c),
        "share": c.share,
        "chosen": c.chosen,
        "evidence": evidence,
    })
}

fn analysis_json(a: &Analysis) -> Value {
    json!({
        "packets": a.packets,
        "layout": a.layout,
        "confidence": a.confidence,
        "explained": a.explained,
        "misread": a.misread,
        "note": a.note,
        "candidates": a.candidates.iter().map(candidate_json).collect::<Vec<_>>(),
    })
}

fn stream_json(i: usize, flow: &Flow, d: &Discovery) -> Value {
    let best = d.best();
    json!({
        "stream": flow.stream,
        "flow_index": i,
        "flow": flow.name(),
        "src": flow.src.map(|e| e.0.to_string()),
        "dst": flow.dst.map(|e| e.0.to_string()),
        "packets": d.packets,
        "layout": d.layout(),
        "confidence": d.confidence(),
        "threshold": CONFIDENCE,
        "note": best.unwrap_or(&d.flow).note,
        "candidates": d.candidates().into_iter().map(candidate_json).collect::<Vec<_>>(),
        "type_offset": d.split.as_ref().map(|s| s.offset),
        "kinds": d.split.as_ref().map(|s| s.kinds.iter().map(|k| {
            let mut v = analysis_json(&k.analysis);
            v["value"] = json!(k.value);
            v
        }).collect::<Vec<_>>()),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn describe(c: &Candidate) -> String {
    match &c.evidence {
        Evidence::Counter {
            step,
            skips,
            reordered,
            wraps,
            ..
        } => format!("step {step}; {skips} skips, {reordered} reordered, {wraps} wraps"),
        Evidence::Clock {
            rate,
            residual_p50,
            residual_p95,
            from_counter,
        } => {
            let from = if *from_counter {
                "; the counter read as ticks (no time field)"
            } else {
                ""
            };
            format!(
                "rate {rate:.6} ({:+.0} ppm); delay residual p50 {:.2} ms, p95 {:.2} ms{from}",
                (rate - 1.0) * 1e6,
                residual_p50.as_millis_f64(),
                residual_p95.as_millis_f64()
            )
        }
        Evidence::Constant { bytes } => format!("constant 0x{}", hex(bytes)),
        Evidence::Values { values, changes } => {
            let list: Vec<String> = values
                .iter()
                .take(8)
                .map(|(v, n)| format!("0x{v:02x} ({n})"))
                .collect();
            format!("values {}; changes {changes} times", list.join(", "))
        }
        _ => String::new(),
    }
}

fn print_candidates(out: &mut impl Write, candidates: &[&Candidate], indent: &str) -> Result<()> {
    if candidates.is_empty() {
        writeln!(out, "{indent}no candidates")?;
    }
    for c in candidates {
        let role = match c.role {
            Role::Seq => "seq",
            Role::Send => "send",
            Role::Type => "type",
        };
        writeln!(
            out,
            "{indent}{role:<5} {:<7} @{:<3} {:<3} {:>6.1} %  {}{}",
            c.type_name(),
            c.offset,
            unit_name(c).unwrap_or_default(),
            c.share * 100.0,
            describe(c),
            if c.chosen { "   [chosen]" } else { "" }
        )?;
    }
    Ok(())
}

fn print_analysis(out: &mut impl Write, a: &Analysis, indent: &str) -> Result<()> {
    match &a.layout {
        Some(l) => writeln!(
            out,
            "{indent}found {l}  (confidence {:.2}; explains {} of {} packets)",
            a.confidence, a.explained, a.packets
        )?,
        None => writeln!(
            out,
            "{indent}{} (confidence {:.2}, threshold {CONFIDENCE})",
            a.note, a.confidence
        )?,
    }
    if a.layout.is_some() && a.note.contains("guess") {
        writeln!(out, "{indent}note: {}", a.note)?;
    }
    Ok(())
}

fn print_stream(out: &mut impl Write, i: usize, flow: &Flow, d: &Discovery) -> Result<()> {
    let ends = match (flow.src, flow.dst) {
        (Some(s), Some(t)) => format!("{} -> {}", s.0, t.0),
        _ => "(no endpoints)".to_owned(),
    };
    let name = flow
        .stream
        .map_or_else(|| format!("flow {i}"), |s| format!("stream {s}"));
    writeln!(out, "{name}  {ends}  {} packets", d.packets)?;
    match &d.split {
        Some(s) => {
            writeln!(
                out,
                "  message kinds by the byte at {}: {} kind(s)",
                s.offset,
                s.kinds.len()
            )?;
            for k in &s.kinds {
                writeln!(
                    out,
                    "  kind 0x{:02x} ({} packets):",
                    k.value, k.analysis.packets
                )?;
                print_analysis(out, &k.analysis, "    ")?;
                let fields: Vec<&Candidate> = k
                    .analysis
                    .candidates
                    .iter()
                    .filter(|c| c.role != Role::Type)
                    .collect();
                print_candidates(out, &fields, "      ")?;
            }
        }
        None => {
            print_analysis(out, &d.flow, "  ")?;
            writeln!(out, "  candidates:")?;
            print_candidates(out, &d.candidates(), "    ")?;
        }
    }
    match d.layout() {
        Some(l) => writeln!(out, "  paste: --decoder 'layout:{l}'")?,
        None => writeln!(
            out,
            "  nothing to paste: no layout reaches confidence {CONFIDENCE}"
        )?,
    }
    Ok(())
}
