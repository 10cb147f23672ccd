//! `jitterlab replay`: one policy over a recorded trace.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use jitterlab_capture::Nanos;
use jitterlab_capture::output::AtomicFile;
use jitterlab_capture::source::is_stdio;
use jitterlab_replay::{ClockMapping, Frame, FrameClock, Policy, Replay, Summary};
use jitterlab_report::timeline::{PlayoutTimelineWriter, TableFormat, TimelineWriter};
use serde_json::{Value, json};

use crate::input::{DecodeArgs, load};

/// Arguments of `jitterlab replay`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  jitterlab replay log.jtr --policy fixed:delay=100ms,max_gap=120ms\n  jitterlab replay log.jtr --policy jitter:a=2,k=3 --fps 144 --hitches 2%:50ms --json\n  jitterlab replay call.jtr --playout --policy fixed:delay=60ms --timeline frames.csv"
)]
pub(crate) struct Args {
    /// The trace to replay.
    trace: PathBuf,
    /// The buffer policy, e.g. fixed:delay=100ms,max_gap=120ms,capacity=8.
    #[arg(long, value_name = "POLICY")]
    policy: String,
    /// Render frames at this rate over the whole trace.
    #[arg(
        long,
        default_value_t = 60.0,
        conflicts_with = "at",
        help_heading = "Frames"
    )]
    fps: f64,
    /// Render frames only at these local times, in ms (comma-separated, not decreasing).
    #[arg(
        long,
        value_name = "T1,T2,...",
        value_delimiter = ',',
        allow_hyphen_values = true,
        help_heading = "Frames"
    )]
    at: Option<Vec<f64>>,
    /// Render frames at the local times (ms) listed one per line in this file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["at", "hitches"], help_heading = "Frames")]
    frames: Option<PathBuf>,
    /// Frame hitches on top of --fps: CHANCE:LENGTH, e.g. 2%:50ms (a frame takes 50 ms longer
    /// with probability 2 %), seeded by --seed.
    #[arg(
        long,
        value_name = "CHANCE:LENGTH",
        conflicts_with = "at",
        help_heading = "Frames"
    )]
    hitches: Option<String>,
    /// Seed for --hitches.
    #[arg(long, default_value_t = 1, help_heading = "Frames")]
    seed: u64,
    /// Clock mapping: estimate (online minimum transit with drift, the default), hindsight
    /// (minimum transit over the whole stream), or offset=MS (sender time = local time + MS).
    #[arg(
        long,
        value_name = "MAPPING",
        default_value = "estimate",
        value_parser = crate::values::Clock
    )]
    clock: String,
    /// Print JSON: the frames sampled with --at, and the metrics.
    #[arg(long, help_heading = "Output")]
    json: bool,
    /// Playout mode for discrete frames (audio, server input): play each frame at its send
    /// time + the policy's delay, conceal missing ones, drop late ones (fixed delays: fixed, source).
    #[arg(long, conflicts_with_all = ["at", "frames", "hitches"])]
    playout: bool,
    /// Write every frame (with --playout, every slot) to this file: Parquet when it ends in
    /// .parquet, NDJSON in .ndjson or .jsonl, CSV otherwise. The timeline of one stream is
    /// written in passes over the trace, in memory that does not grow with it.
    #[arg(long, value_name = "OUT.csv|OUT.parquet", help_heading = "Output")]
    timeline: Option<PathBuf>,
    /// The timeline's format, whatever the file's extension.
    #[arg(long, value_enum, value_name = "FORMAT", requires = "timeline")]
    timeline_format: Option<TimelineFormat>,
    /// Replay the whole trace in memory instead of in one streaming pass (the same figures;
    /// memory grows with the trace).
    #[arg(long)]
    in_memory: bool,
    /// Overwrite the timeline file if it exists.
    #[arg(long, help_heading = "Output")]
    force: bool,
    #[command(flatten)]
    quality: crate::input::QualityArgs,
    #[command(flatten)]
    decode: DecodeArgs,
}

fn ms(t: Nanos) -> f64 {
    t.as_millis_f64()
}

fn sample_json(f: &Frame<'_>) -> Value {
    json!({
        "stream": f.stream,
        "at_ms": ms(f.at),
        "target_ms": ms(f.target),
        "mode": f.mode.name(),
        "alpha": f.alpha,
        "value": f.value,
        "state": f.state,
        "shown_ms": f.shown.map(ms),
        "depth": f.depth,
    })
}

/// The formats `--timeline-format` takes.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum TimelineFormat {
    /// Comma-separated values with a header line.
    Csv,
    /// Apache Parquet.
    Parquet,
    /// Newline-delimited JSON: one object per row.
    Ndjson,
}

/// The timeline's path and format: `--timeline-format`, else the extension's, else CSV.
fn timeline_target(args: &Args) -> Option<(&Path, TableFormat)> {
    let path = args.timeline.as_deref()?;
    let format = match args.timeline_format {
        Some(TimelineFormat::Csv) => TableFormat::Csv,
        Some(TimelineFormat::Parquet) => TableFormat::Parquet,
        Some(TimelineFormat::Ndjson) => TableFormat::Ndjson,
        // Timelines were CSV whatever their name before Parquet came: any other name still is.
        None => TableFormat::from_path(path).unwrap_or(TableFormat::Csv),
    };
    Some((path, format))
}

pub(crate) fn run(args: &Args) -> Result<()> {
    crate::input::stdin_once(std::iter::once(&args.trace).chain(&args.frames))?;
    let policy: Policy = args.policy.parse().context("--policy")?;
    let clock: ClockMapping = args.clock.parse()?;
    let frames = match (&args.at, &args.frames, &args.hitches) {
        (Some(times), ..) => {
            if let Some(bad) = times.iter().find(|t| !t.is_finite()) {
                bail!("--at {bad} is not a finite time in ms");
            }
            FrameClock::At(times.iter().map(|&t| Nanos::from_millis_f64(t)).collect())
        }
        (None, Some(path), _) => {
            let text = crate::input::read_text(path)?;
            FrameClock::parse_times(&text).with_context(|| crate::input::shown(path))?
        }
        (None, None, Some(spec)) => FrameClock::parse_hitches(args.fps, spec, args.seed)?,
        (None, None, None) => FrameClock::Fps(args.fps),
    };
    frames.validate()?;
    let target = timeline_target(args);
    let keep_samples = args.json && args.at.is_some();
    if !args.playout
        && !args.in_memory
        && target.is_none()
        && !keep_samples
        && let Some(streamed) = crate::streamed::replay(
            &args.trace,
            &args.decode,
            &frames,
            clock,
            std::slice::from_ref(&policy),
        )?
    {
        if streamed.packets == 0 {
            bail!(
                "{}: the trace holds no decodable packets",
                args.trace.display()
            );
        }
        let mut result = jitterlab_replay::TraceReplay::default();
        for (id, mut metrics) in streamed.streams {
            let m = metrics.pop().unwrap_or_default();
            result.total.merge(&m);
            result.streams.push((id, m));
        }
        return print_replay(args, &policy, &result, Vec::new());
    }
    // A timeline of one stream is written in passes too, frame by frame as each is final.
    if !args.playout
        && !args.in_memory
        && !keep_samples
        && let Some((path, format)) = target
        && let Some(result) = crate::streamed::timeline(
            &args.trace,
            &args.decode,
            &frames,
            clock,
            &policy,
            path,
            format,
            args.force,
        )?
    {
        crate::say::note!("wrote the timeline to {}", path.display());
        return print_replay(args, &policy, &result, Vec::new());
    }
    let decoded = load(&args.trace, &args.decode)?;
    if args.playout {
        return run_playout(args, &policy, clock, &decoded, target);
    }
    if decoded.samples.is_empty() {
        bail!(
            "{}: the trace holds no decodable packets",
            args.trace.display()
        );
    }

    let width = decoded
        .streams
        .iter()
        .filter(|s| args.decode.select.stream.is_none_or(|id| id == s.id))
        .map(|s| s.channels.len())
        .max()
        .unwrap_or(0);
    let mut samples = Vec::new();
    let names: Vec<String> = match decoded.streams.first() {
        Some(s) if s.channels.len() == width && decoded.streams.len() == 1 => s.channels.clone(),
        _ => (0..width).map(|i| format!("value_{i}")).collect(),
    };
    let mut file = match target {
        Some((path, _)) => Some(AtomicFile::create(path, args.force)?),
        None => None,
    };
    let mut timeline = match (file.as_mut(), target) {
        (Some(file), Some((_, format))) => Some(TimelineWriter::new(file, format, &names)?),
        _ => None,
    };
    let mut write_error = None;
    let result = Replay::new(frames.clone()).clock(clock).trace(
        &decoded,
        args.decode.select.stream,
        &policy,
        |f| {
            if keep_samples {
                samples.push(sample_json(f));
            }
            if let Some(timeline) = timeline.as_mut()
                && write_error.is_none()
                && let Err(e) = timeline.push(f)
            {
                write_error = Some(e);
            }
        },
    )?;
    let finished = match (timeline, write_error) {
        (_, Some(e)) => Err(e),
        (Some(timeline), None) => timeline.finish().map(drop),
        (None, None) => Ok(()),
    };
    if let Some(file) = file {
        let path = file.path().display().to_string();
        finished.with_context(|| format!("cannot write {path}"))?;
        file.commit()
            .with_context(|| format!("cannot write {path}"))?;
        crate::say::note!("wrote the timeline to {path}");
    }
    print_replay(args, &policy, &result, samples)
}

/// Prints a replay's figures: JSON (with the frames sampled by `--at`), or a summary.
fn print_replay(
    args: &Args,
    policy: &Policy,
    result: &jitterlab_replay::TraceReplay,
    samples: Vec<Value>,
) -> Result<()> {
    let keep_samples = args.json && args.at.is_some();
    let total = result.total.summary();
    // With the timeline on standard output (`--timeline -`), the summary goes to stderr.
    let mut out = crate::input::report_out(args.timeline.as_deref().is_some_and(is_stdio));
    if args.json {
        let streams: Vec<Value> = result
            .streams
            .iter()
            .map(|(id, m)| json!({"stream": id, "metrics": m.summary()}))
            .collect();
        let mut doc = json!({
            "policy": policy.to_string(),
            "metrics": total,
            "streams": streams,
        });
        if keep_samples {
            doc["samples"] = Value::Array(samples);
        }
        // Rendered first, so that a closed pipe is the I/O error `main` recognises.
        out.write_all(serde_json::to_string_pretty(&doc)?.as_bytes())?;
        writeln!(out)?;
    } else {
        writeln!(out, "policy {policy}")?;
        print_summary(&mut out, &total)?;
    }
    Ok(())
}

/// `--playout`: discrete frames at send time + delay (C21–C24), played as the policy plays them.
fn run_playout(
    args: &Args,
    policy: &Policy,
    clock: ClockMapping,
    decoded: &jitterlab_capture::Decoded,
    target: Option<(&Path, TableFormat)>,
) -> Result<()> {
    let played = Replay::new(FrameClock::Fps(60.0))
        .clock(clock)
        .quality(args.quality.options()?)
        .playout(decoded, args.decode.select.stream, policy)?;
    if let Some((path, format)) = target {
        let path_text = path.display().to_string();
        let mut file = AtomicFile::create(path, args.force)?;
        let mut timeline = PlayoutTimelineWriter::new(&mut file, format)?;
        for s in &played.streams {
            for e in &s.run.events {
                timeline
                    .push(s.stream, e)
                    .with_context(|| format!("cannot write {path_text}"))?;
            }
        }
        timeline
            .finish()
            .with_context(|| format!("cannot write {path_text}"))?;
        file.commit()
            .with_context(|| format!("cannot write {path_text}"))?;
        crate::say::note!("wrote the timeline to {path_text}");
    }
    let total = played.total;
    // With the timeline on standard output (`--timeline -`), the summary goes to stderr.
    let mut out = crate::input::report_out(args.timeline.as_deref().is_some_and(is_stdio));
    if args.json {
        let streams: Vec<Value> = played
            .streams
            .iter()
            .map(|s| {
                let mut v = json!({
                    "stream": s.stream,
                    "media": {
                        "kind": s.media.kind.map(|k| k.name()),
                        "encoding": s.media.encoding,
                        "clock_rate": s.media.clock_rate,
                        "payload_type": s.media.payload_type,
                    },
                    "prepared": s.prepared,
                    "metrics": s.metrics.report(),
                    "mos": s.metrics.report().mos,
                    "r_factor": s.metrics.report().r_factor,
                });
                if let Some(video) = &s.video {
                    v["video"] = serde_json::to_value(video).unwrap_or(Value::Null);
                }
                if let Some(frames) = &s.frames {
                    v["assembly"] = serde_json::to_value(frames).unwrap_or(Value::Null);
                }
                // Every stream says what the policy's own logic counted (null when nothing).
                v["neteq"] = Value::Null;
                if let Some(d) = &s.run.detail {
                    v[d.key()] = serde_json::to_value(d).unwrap_or(Value::Null);
                }
                v
            })
            .collect();
        let doc = json!({
            "mode": "playout",
            "policy": policy.to_string(),
            "metrics": played.metrics.report(),
            "streams": streams,
        });
        // Rendered first, so that a closed pipe is the I/O error `main` recognises.
        out.write_all(serde_json::to_string_pretty(&doc)?.as_bytes())?;
        writeln!(out)?;
    } else {
        writeln!(out, "playout, policy {policy}")?;
        writeln!(
            out,
            "frames {}   played {}   concealed {} ({:.2} %: {} lost, {} late)   longest stall {} frames",
            total.frames,
            total.played,
            total.concealed,
            100.0 * total.concealment_ratio,
            total.lost,
            total.late,
            total.max_consecutive_concealed
        )?;
        let r = played.metrics.report();
        let opt = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"));
        writeln!(
            out,
            "playout delay ms   mean {}  p50 {}  p95 {}  p99 {}  max {}   buffer wait mean {}",
            opt(r.mean_delay_ms),
            opt(r.p50_delay_ms),
            opt(r.p95_delay_ms),
            opt(r.p99_delay_ms),
            opt(r.max_delay_ms),
            opt(r.mean_buffer_delay_ms)
        )?;
        if let Some(q) = &r.quality {
            writeln!(
                out,
                "quality            MOS {:.2} (R {:.1}, {}{}, mouth-to-ear {:.0} ms)   VoIPmonitor MOS {}",
                q.emodel.mos,
                q.emodel.r_factor,
                q.emodel.codec,
                if q.emodel.codec_assumed {
                    " assumed"
                } else {
                    ""
                },
                q.emodel.mouth_to_ear_ms,
                q.voipmonitor
                    .mos
                    .map_or_else(|| "–".to_owned(), |m| format!("{m:.1}"))
            )?;
            writeln!(
                out,
                "webrtc-stats       jitterBufferDelay mean {:.1} ms, target mean {}, concealment events {}, \
                 interruptions {} ({:.2} s)",
                q.webrtc.mean_jitter_buffer_delay_ms,
                q.webrtc
                    .mean_jitter_buffer_target_delay_ms
                    .map_or_else(|| "–".to_owned(), |t| format!("{t:.1} ms")),
                q.webrtc.concealment_events,
                q.webrtc.interruption_count,
                q.webrtc.total_interruption_duration
            )?;
        }
        if let Some(v) = &r.video {
            writeln!(
                out,
                "video              {} frames: {} complete, {} incomplete, {} late; {} freezes ({:.2} s), \
                 {} pauses ({:.2} s)",
                v.frames,
                v.complete,
                v.incomplete,
                v.late,
                v.freeze_count,
                v.total_freezes_duration_ms / 1000.0,
                v.pause_count,
                v.total_pauses_duration_ms / 1000.0
            )?;
        }
        for s in &played.streams {
            if let Some(d) = &s.run.detail {
                writeln!(out, "stream {}: {}", s.stream, d.describe())?;
            }
        }
    }
    Ok(())
}

fn print_summary(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    let opt = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.3}"));
    writeln!(
        out,
        "frames                {:>10}   (+{} before playback started)",
        s.frames, s.startup_frames
    )?;
    writeln!(
        out,
        "holds                 {:>10}   ratio {:.4}",
        s.holds, s.hold_ratio
    )?;
    writeln!(out, "  across gaps         {:>10}", s.gap_holds)?;
    writeln!(out, "  underruns           {:>10}", s.underruns)?;
    writeln!(out, "max consecutive holds {:>10}", s.max_consecutive_holds)?;
    writeln!(
        out,
        "starved frames        ratio {:.4}   (held, extrapolated {}, empty {})",
        s.starved_ratio, s.extrapolated, s.empty
    )?;
    let r = &s.recovery;
    writeln!(
        out,
        "recovery              spikes {}  mean {} ms  max {} ms  unrecovered {}  worst hold run {}  inflation {} ms",
        r.spikes,
        opt(r.mean_recovery_ms),
        opt(r.max_recovery_ms),
        r.unrecovered,
        r.worst_hold_run_after_spike,
        opt(r.inflation_ms)
    )?;
    writeln!(
        out,
        "display delay ms      mean {}  p50 {}  p95 {}  p99 {}  max {}",
        opt(s.mean_delay_ms),
        opt(s.p50_delay_ms),
        opt(s.p95_delay_ms),
        opt(s.p99_delay_ms),
        opt(s.max_delay_ms)
    )?;
    writeln!(
        out,
        "packets               {:>10}   inserted {}  duplicates {}  late {}  stale {}  evicted {}",
        s.packets, s.inserted, s.duplicates_dropped, s.late, s.stale_dropped, s.evicted
    )?;
    writeln!(
        out,
        "buffer depth          mean {}  min {}",
        opt(s.mean_depth),
        s.min_depth.map_or_else(|| "–".into(), |d| d.to_string())
    )?;
    if let Some(r) = s.error_reference {
        writeln!(
            out,
            "error vs {:<9}     mean {}  p95 {}  p99 {}  max {}",
            match r {
                jitterlab_replay::Reference::Truth => "truth",
                jitterlab_replay::Reference::Hindsight => "hindsight",
            },
            opt(s.mean_error),
            opt(s.p95_error),
            opt(s.p99_error),
            opt(s.max_error)
        )?;
    }
    Ok(())
}
