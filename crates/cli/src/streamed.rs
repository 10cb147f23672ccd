//! Snapshot replays of a trace file in one streaming pass ([`StreamingReplay`]): memory that
//! grows with the streams and their windows, not with the trace. The `hindsight` clock mapping
//! takes a first pass for each stream's offset ([`HindsightOffsets`]). When the pass cannot
//! give the in-memory figures (an `exec:` policy, a trace out of arrival order, send times
//! inferred only once the whole stream is known), [`replay`] says why and the caller replays
//! the trace in memory, to the same figures.

use std::path::Path;

use anyhow::{Context, Result};
use jitterlab_capture::decode::Decoded;
use jitterlab_capture::source::is_stdio;
use jitterlab_replay::{
    ClockMapping, FrameClock, HindsightOffsets, Metrics, Policy, StreamingReplay, Unstreamable,
};

use crate::input::{DecodeArgs, shown, warn_skipped};

/// A trace replayed in one pass.
pub(crate) struct Streamed {
    /// The trace's streams, flows and counts (no samples), narrowed by the selection.
    pub(crate) decoded: Decoded,
    /// Per stream replayed, in the trace's stream order: its id and, per policy, the metrics.
    pub(crate) streams: Vec<(u32, Vec<Metrics>)>,
    /// Received samples over the streams selected.
    pub(crate) packets: u64,
    /// Per stream replayed, its frames' needs (for the bounds), when they were kept.
    pub(crate) needs: Option<Vec<Needs>>,
}

/// One stream's frames' needs, listed or sketched.
type Needs = jitterlab_replay::sweep::StreamNeeds;

/// Frames whose needs a sweep lists for its bounds, over one trace: 16 bytes each, 256 MB.
/// Beyond, the needs are sketched ([`jitterlab_replay::bound::NeedsSketch`]).
pub(crate) const NEEDS_CAP: usize = 16 << 20;

/// Trace bytes, over all traces, from which a sweep streams unless told (`--in-memory`,
/// `--streaming`): below, the whole traces fit in memory comfortably (~2 bytes of memory a
/// byte of probe trace) and the in-memory sweep is about 1.5–2× as fast per configuration.
pub(crate) const STREAM_FROM_BYTES: u64 = 512 << 20;

/// A snapshot sweep over trace files in streaming passes: the configurations of each trace
/// in `shard` split over `threads` passes side by side. `Ok(None)` when the traces are better
/// swept in memory (under [`STREAM_FROM_BYTES`] without `--streaming`) or one cannot be
/// streamed; traces that cannot be read stop the sweep or, with `keep_going`, are skipped
/// with a message, as in memory.
pub(crate) fn sweep(
    paths: &[std::path::PathBuf],
    policies: &[Policy],
    o: &crate::sweeping::SweepOptions,
    shard: jitterlab_replay::sweep::Shard,
) -> Result<Option<Swept>> {
    use jitterlab_replay::sweep::{Bounds, Row};
    let frames = FrameClock::Fps(o.fps);
    frames.validate()?;
    let clock: ClockMapping = o.clock.parse()?;
    if !should_stream(paths, o) {
        return Ok(None);
    }
    for policy in policies {
        if StreamingReplay::check(policy).is_err() {
            return Ok(None);
        }
    }
    if !streamable(&frames, clock, &[]) {
        return Ok(None);
    }
    let threads = o
        .threads
        .filter(|&n| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
        .unwrap_or(1);
    let mut out = Swept::default();
    for path in paths {
        let t = out.names.len();
        let configs: Vec<usize> = (0..policies.len())
            .filter(|&c| shard.contains(t * policies.len() + c))
            .collect();
        let chunks = split(&configs, threads);
        if chunks.is_empty() {
            // No configuration of this trace in the shard: nothing to read.
            out.names.push(path.display().to_string());
            continue;
        }
        let frames = &frames;
        // Each chunk in its own pass; the first also keeps the needs.
        let passes: Vec<Result<Option<Streamed>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunks
                .iter()
                .enumerate()
                .map(|(i, chunk)| {
                    let batch: Vec<Policy> = chunk.iter().map(|&c| policies[c].clone()).collect();
                    let cap = if i == 0 { NEEDS_CAP } else { 0 };
                    scope.spawn(move || pass(path, &o.decode, frames, clock, &batch, cap))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("a sweep pass panicked")))
                })
                .collect()
        });
        let display = path.display().to_string();
        let mut streamed = Vec::new();
        let mut failed = None;
        for p in passes {
            match p {
                Ok(Some(s)) => streamed.push(s),
                Ok(None) => return Ok(None),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        let checked = failed.map_or_else(|| check_replayable(&display, streamed.first()), Err);
        if let Err(e) = checked {
            if o.keep_going {
                eprintln!("skipped {display}: {e:#}");
                continue;
            }
            return Err(e.context(format!(
                "cannot sweep {display} (pass --keep-going to skip unreadable traces)"
            )));
        }
        let needs = streamed[0].needs.take();
        let first = &streamed[0];
        for note in jitterlab_replay::streams::unreplayable(&first.decoded) {
            eprintln!("warning: {}: {note}", shown(path));
        }
        let bounds = match needs {
            Some(needs) => {
                let bounds = Bounds::of_streams(needs);
                if bounds.any.sketched() {
                    crate::say::note!(
                        "note: {display}: more than {NEEDS_CAP} frames: the rows' bounds come \
                         from a sketch of the frames' needs: still floors, below the exact ones \
                         by at most 1/2047 of what the starved frames save (sweep --in-memory \
                         computes them exactly)"
                    );
                }
                bounds
            }
            None => Bounds::default(),
        };
        // Per configuration of this trace, its metrics merged over the streams in order.
        for (chunk, pass) in chunks.iter().zip(&streamed) {
            for (k, &config) in chunk.iter().enumerate() {
                let mut total = Metrics::default();
                for (_, metrics) in &pass.streams {
                    total.merge(&metrics[k]);
                }
                out.rows.push(Row::snapshot(t, config, &total, &bounds));
                out.packets += first.packets;
            }
        }
        out.names.push(display);
    }
    if out.names.is_empty() {
        anyhow::bail!("no readable trace to sweep");
    }
    // Trace-major, configuration-minor, as in memory.
    out.rows.sort_by_key(|r| (r.trace, r.config));
    Ok(Some(out))
}

/// Whether a sweep over `paths` streams: files (not standard input), in snapshot mode, with
/// `--streaming` or of [`STREAM_FROM_BYTES`] or more, and not `--in-memory`.
pub(crate) fn should_stream(
    paths: &[std::path::PathBuf],
    o: &crate::sweeping::SweepOptions,
) -> bool {
    if o.in_memory || o.playout || paths.is_empty() || paths.iter().any(is_stdio) {
        return false;
    }
    let bytes: u64 = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    o.streaming || bytes >= STREAM_FROM_BYTES
}

/// The figures of every stream of `path` selected by `decode` (one streaming `info` pass, no
/// notes: the sweep's own pass gives them), and whether one is RTP.
///
/// # Errors
/// The trace cannot be read, or the selection matches nothing.
pub(crate) fn stream_stats(
    path: &Path,
    decode: &DecodeArgs,
) -> Result<(Vec<jitterlab_capture::stats::StreamStats>, bool)> {
    use jitterlab_capture::stats::Accumulator;
    let read = crate::input::read_accumulated(path, decode, false)?;
    // The counts, loss and duration are final after one pass (a second refines only
    // inter-arrival percentiles).
    let (mut summary, _) = Accumulator::summarize(read.finished, false);
    let before: Vec<u32> = summary.decoded.streams.iter().map(|s| s.id).collect();
    decode.select.apply(&mut summary.decoded, &shown(path))?;
    summary.retain_listed(&before);
    let rtp = summary.decoded.streams.iter().any(|s| s.ssrc.is_some());
    Ok((summary.streams.into_iter().map(|s| s.stats).collect(), rtp))
}

/// A streamed sweep's rows.
#[derive(Default)]
pub(crate) struct Swept {
    /// The traces swept, by name.
    pub(crate) names: Vec<String>,
    /// Every row of the shard.
    pub(crate) rows: Vec<jitterlab_replay::sweep::Row>,
    /// Packets over the rows (each row's trace's received samples).
    pub(crate) packets: u64,
}

/// What `TraceStreams::new` refuses: a trace of no packets, or of no stream to replay.
fn check_replayable(display: &str, streamed: Option<&Streamed>) -> Result<()> {
    let Some(s) = streamed else {
        return Ok(());
    };
    if s.packets == 0 {
        return Err(jitterlab_replay::Error::NoPackets {
            trace: display.to_owned(),
        }
        .into());
    }
    if s.streams.is_empty() {
        let reason = s
            .decoded
            .streams
            .iter()
            .find_map(|i| jitterlab_replay::streams::check(i).err())
            .map_or_else(String::new, |e| e.to_string());
        return Err(jitterlab_replay::Error::NothingToReplay {
            trace: display.to_owned(),
            streams: s.decoded.streams.len(),
            reason,
        }
        .into());
    }
    Ok(())
}

/// `items` in at most `parts` runs of nearly equal length, in order (none empty).
fn split(items: &[usize], parts: usize) -> Vec<Vec<usize>> {
    let parts = parts.clamp(1, items.len().max(1));
    let (base, extra) = (items.len() / parts, items.len() % parts);
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..parts {
        let len = base + usize::from(i < extra);
        if len > 0 {
            out.push(items[start..start + len].to_vec());
        }
        start += len;
    }
    out
}

/// Replays `path` through each of `policies` in one pass; `Ok(None)` (with a note saying why)
/// when the pass cannot give the in-memory figures, so the caller replays it in memory.
///
/// # Errors
/// The trace cannot be read, or a selection matches nothing (as in memory).
pub(crate) fn replay(
    path: &Path,
    args: &DecodeArgs,
    frames: &FrameClock,
    clock: ClockMapping,
    policies: &[Policy],
) -> Result<Option<Streamed>> {
    pass(path, args, frames, clock, policies, 0)
}

/// [`replay`], also keeping each stream's frame needs for the bounds (up to `needs_cap`
/// frames; 0: none).
fn pass(
    path: &Path,
    args: &DecodeArgs,
    frames: &FrameClock,
    clock: ClockMapping,
    policies: &[Policy],
    needs_cap: usize,
) -> Result<Option<Streamed>> {
    if is_stdio(path) {
        // Standard input cannot be read again if the pass gives up.
        return Ok(None);
    }
    // What needs whole streams by its nature (an `exec:` policy) is replayed in memory
    // without a word: only a trace's surprises are worth a note.
    if !streamable(frames, clock, policies) {
        return Ok(None);
    }
    let offsets = hindsight_offsets(path, args, clock)?;
    let Ok(pass) = streaming_replay(frames, clock, offsets.as_ref(), policies) else {
        return Ok(None);
    };
    let pass = pass.needs(needs_cap);
    let display = shown(path);
    let read = crate::input::read_collected(path, args, false, pass)?;
    let finished = read.finished;
    let mut decoded = finished.decoded;
    decoded.trailing_bytes = read.trailing_bytes;
    warn_skipped(&display, &decoded);
    args.select.apply(&mut decoded, &display)?;
    let give_up = |why: String| {
        crate::say::note!("note: {display}: replaying in memory: {why}");
        Ok(None)
    };
    let streamed = match finished.sink.finish() {
        Ok(streamed) => streamed,
        Err(e) => return give_up(e.to_string()),
    };
    let slots = decoded.streams.iter().map(|i| i.id as usize + 1).max();
    // Where each stream id sits in `decoded.streams` (a trace may hold 100,000 streams).
    let mut place = vec![usize::MAX; slots.unwrap_or(0)];
    for (i, info) in decoded.streams.iter().enumerate() {
        place[info.id as usize] = i;
    }
    let info_of = |id: u32| place.get(id as usize).and_then(|&i| decoded.streams.get(i));
    let mut by_id: Vec<Option<(Vec<Metrics>, Option<Needs>)>> = vec![None; slots.unwrap_or(0)];
    for s in streamed {
        let old = s.stream as usize;
        let new = finished.new_id.get(old).copied().unwrap_or(u32::MAX);
        if new == u32::MAX {
            continue;
        }
        let Some(info) = info_of(new) else {
            // Left out by the selection.
            continue;
        };
        // Send times given only once the whole stream is known (inferred from sequence
        // numbers, send periods or RTP timestamps) are not those the pass replayed.
        if finished.unstamped.get(old).copied().unwrap_or(false)
            || info.protocol == "periodic"
            || info.ssrc.is_some()
        {
            return give_up(format!(
                "stream {new}'s send times are inferred from the whole stream"
            ));
        }
        if info.channels != s.channels {
            return give_up(format!("stream {new}'s channels changed while it was read"));
        }
        by_id[new as usize] = Some((s.metrics, s.needs));
    }
    // Received samples of the streams selected, replayable or not (as in memory).
    let packets = finished
        .counts
        .iter()
        .zip(&finished.new_id)
        .filter(|&(_, &new)| info_of(new).is_some())
        .map(|(&n, _)| n)
        .sum();
    let only = args.select.stream;
    let mut streams = Vec::new();
    let mut needs = (needs_cap > 0).then(Vec::new);
    for info in &decoded.streams {
        // As `jitterlab_replay::streams::views`: the streams that can be replayed, or the
        // one asked for (whose error, if it cannot, is the answer).
        match only {
            Some(id) if id != info.id => continue,
            Some(_) => jitterlab_replay::streams::check(info)?,
            None if jitterlab_replay::streams::check(info).is_err() => continue,
            None => {}
        }
        // A stream of no received samples replays to nothing, as in memory.
        let (metrics, stream_needs) = by_id
            .get_mut(info.id as usize)
            .and_then(Option::take)
            .unwrap_or_else(|| {
                let none = (needs_cap > 0).then(|| Needs::Listed(Vec::new()));
                (vec![Metrics::default(); policies.len()], none)
            });
        needs = needs.zip(stream_needs).map(|(mut all, n)| {
            all.push(n);
            all
        });
        streams.push((info.id, metrics));
    }
    Ok(Some(Streamed {
        decoded,
        streams,
        packets,
        needs,
    }))
}

/// Whether `policies` replay in a pass under `clock` at `frames` (`hindsight` does, after a
/// first pass for its offsets).
pub(crate) fn streamable(frames: &FrameClock, clock: ClockMapping, policies: &[Policy]) -> bool {
    let clock = match clock {
        ClockMapping::Hindsight => ClockMapping::Estimated,
        other => other,
    };
    StreamingReplay::new(frames, clock, policies).is_ok()
}

/// The first pass over `path` under the `hindsight` mapping: every stream's offset (`None`
/// under another mapping, which needs no first pass).
///
/// # Errors
/// The trace cannot be read.
fn hindsight_offsets(
    path: &Path,
    args: &DecodeArgs,
    clock: ClockMapping,
) -> Result<Option<HindsightOffsets>> {
    if clock != ClockMapping::Hindsight {
        return Ok(None);
    }
    let read = crate::input::read_collected(path, args, false, HindsightOffsets::new())?;
    Ok(Some(read.finished.sink))
}

/// The pass replaying through `policies` under `clock`, with `offsets` from a first pass
/// under `hindsight`.
fn streaming_replay(
    frames: &FrameClock,
    clock: ClockMapping,
    offsets: Option<&HindsightOffsets>,
    policies: &[Policy],
) -> std::result::Result<StreamingReplay, Unstreamable> {
    match (clock, offsets) {
        (ClockMapping::Hindsight, Some(offsets)) => {
            StreamingReplay::with_hindsight(frames, offsets, policies)
        }
        _ => StreamingReplay::new(frames, clock, policies),
    }
}

/// The first pass of a streaming report: the trace's streams and the survey of the one the
/// report shows.
pub(crate) struct Surveyed {
    /// The trace's streams, flows and counts (no samples), narrowed by the selection.
    pub(crate) decoded: Decoded,
    /// The stream shown, as `info` numbers it.
    pub(crate) stream: u32,
    /// The same stream as the reader numbers it (what the second pass selects).
    reader: u32,
    survey: jitterlab_report::trace::Surveyed,
}

/// The first pass of a streaming report (or timeline) over `path`: every stream surveyed,
/// the one shown chosen (`--stream`, else the first that replays). `Ok(None)`, with a note
/// saying why (`doing` in memory) when it is a surprise of the trace, when the work is better
/// done in memory: nothing to replay, send times inferred from the whole stream, records out
/// of arrival order.
///
/// # Errors
/// The trace cannot be read, or the selection matches nothing.
pub(crate) fn survey(path: &Path, args: &DecodeArgs, doing: &str) -> Result<Option<Surveyed>> {
    use jitterlab_report::pass::SurveyPass;
    if is_stdio(path) {
        return Ok(None);
    }
    let display = shown(path);
    let read = crate::input::read_collected(path, args, false, SurveyPass::default())?;
    let mut finished = read.finished;
    let mut decoded = finished.decoded;
    decoded.trailing_bytes = read.trailing_bytes;
    warn_skipped(&display, &decoded);
    args.select.apply(&mut decoded, &display)?;
    let stream = match args.select.stream {
        Some(id) => id,
        None => match decoded
            .streams
            .iter()
            .find(|i| jitterlab_replay::streams::check(i).is_ok())
        {
            Some(info) => info.id,
            // Nothing to replay: the in-memory report says so.
            None => return Ok(None),
        },
    };
    let Some(info) = decoded.streams.iter().find(|i| i.id == stream) else {
        return Ok(None);
    };
    jitterlab_replay::streams::check(info)
        .map_err(anyhow::Error::from)
        .map_err(|e| e.context(format!("--stream {stream}")))?;
    let Some(reader) = finished.new_id.iter().position(|&n| n == stream) else {
        return Ok(None);
    };
    let give_up = |why: String| {
        crate::say::note!("note: {display}: {doing} in memory: {why}");
        Ok(None)
    };
    if finished.unstamped.get(reader).copied().unwrap_or(false)
        || info.protocol == "periodic"
        || info.ssrc.is_some()
    {
        return give_up(format!(
            "stream {stream}'s send times are inferred from the whole stream"
        ));
    }
    let reader = reader as u32;
    let Some(survey) = finished.sink.take(reader) else {
        return Ok(None);
    };
    if survey.unordered() {
        return give_up(format!(
            "stream {stream}'s records are not in arrival order"
        ));
    }
    Ok(Some(Surveyed {
        decoded,
        stream,
        reader,
        survey: survey.finish(),
    }))
}

/// The second pass of a streaming report: the figures of the stream `surveyed` chose
/// (titled `title`) and its replays through `policies`. `Ok(None)`, with a note saying why,
/// when the replay's pass cannot give the in-memory figures.
///
/// # Errors
/// The trace cannot be read.
pub(crate) fn draw(
    path: &Path,
    args: &DecodeArgs,
    surveyed: &Surveyed,
    policies: &[(String, Policy)],
    frames: &FrameClock,
    clock: ClockMapping,
    title: &str,
) -> Result<Option<(jitterlab_report::TraceFigures, Vec<jitterlab_report::Run>)>> {
    use jitterlab_report::pass::ReportPass;
    let display = shown(path);
    let give_up = |why: String| {
        crate::say::note!("note: {display}: reporting in memory: {why}");
        Ok(None)
    };
    let pass = match ReportPass::new(
        surveyed.reader,
        surveyed.survey.clone(),
        policies,
        frames,
        clock,
    ) {
        Ok(pass) => pass,
        Err(e) => return give_up(e.to_string()),
    };
    let read = crate::input::read_collected(path, args, false, pass)?;
    match read.finished.sink.finish(title) {
        Ok((figures, runs)) => {
            if figures.approximate {
                crate::say::note!(
                    "note: {display}: stream {}: a packet came more than {} sequence numbers \
                     behind the highest, or a repeat was sent before its first copy: its lost \
                     and reordered marks and the playout figure are approximate",
                    surveyed.stream,
                    jitterlab_report::trace::WINDOW
                );
            }
            Ok(Some((figures, runs)))
        }
        Err(e) => give_up(e.to_string()),
    }
}

/// `replay --timeline OUT` in passes over `path`: a survey, then one stream (`--stream`, or
/// the trace's only one that replays) replayed through `policy` with every frame written to
/// `out` (a file, committed once whole) as soon as it is final, in frame order as in memory.
/// `Ok(None)`, with a note when it is the trace's doing, when the timeline is written in
/// memory instead: several streams (in memory their frames are written stream by stream),
/// what the pass cannot replay, or a pass that gives up (its file is discarded).
///
/// # Errors
/// The trace cannot be read, a selection matches nothing, or the timeline cannot be written.
#[allow(clippy::too_many_arguments)]
pub(crate) fn timeline(
    path: &Path,
    args: &DecodeArgs,
    frames: &FrameClock,
    clock: ClockMapping,
    policy: &Policy,
    out: &Path,
    format: jitterlab_report::timeline::TableFormat,
    force: bool,
) -> Result<Option<jitterlab_replay::TraceReplay>> {
    use jitterlab_capture::output::AtomicFile;
    use jitterlab_report::timeline::TimelineWriter;
    let policies = std::slice::from_ref(policy);
    if is_stdio(path) || is_stdio(out) || !streamable(frames, clock, policies) {
        return Ok(None);
    }
    let Some(surveyed) = survey(path, args, "replaying")? else {
        return Ok(None);
    };
    let display = shown(path);
    let decoded = &surveyed.decoded;
    let replayable = decoded
        .streams
        .iter()
        .filter(|i| jitterlab_replay::streams::check(i).is_ok())
        .count();
    if args.select.stream.is_none() && replayable != 1 {
        crate::say::note!(
            "note: {display}: the timeline of {replayable} streams is written in memory \
             (--stream N writes one stream's in passes)"
        );
        return Ok(None);
    }
    // The value columns, as in memory.
    let width = decoded
        .streams
        .iter()
        .filter(|s| args.select.stream.is_none_or(|id| id == s.id))
        .map(|s| s.channels.len())
        .max()
        .unwrap_or(0);
    let names: Vec<String> = match decoded.streams.first() {
        Some(s) if s.channels.len() == width && decoded.streams.len() == 1 => s.channels.clone(),
        _ => (0..width).map(|i| format!("value_{i}")).collect(),
    };
    let shown_out = out.display().to_string();
    let mut file = AtomicFile::create(out, force)?;
    let writer = TimelineWriter::new(&mut file, format, &names)
        .with_context(|| format!("cannot write {shown_out}"))?;
    // One stream is replayed: under `hindsight`, its offset is the survey's.
    let clock = match clock {
        ClockMapping::Hindsight => ClockMapping::Fixed(surveyed.survey.offset),
        other => other,
    };
    let pass = StreamingReplay::new(frames, clock, policies)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .log_frames(surveyed.reader, true);
    let sink = TimelineSink {
        stream: surveyed.reader,
        id: surveyed.stream,
        pass,
        writer,
        failed: None,
        pushed: 0,
    };
    let read = crate::input::read_collected(path, args, false, sink)?;
    let TimelineSink {
        pass,
        mut writer,
        failed,
        id,
        ..
    } = read.finished.sink;
    if let Some(e) = failed {
        return Err(anyhow::Error::from(e).context(format!("cannot write {shown_out}")));
    }
    let streamed = match pass.finish() {
        Ok(streamed) => streamed,
        Err(e) => {
            crate::say::note!("note: {display}: replaying in memory: {e}");
            return Ok(None);
        }
    };
    let mut result = jitterlab_replay::TraceReplay::default();
    if let Some(s) = streamed.into_iter().find(|s| s.stream == surveyed.reader) {
        for f in s.logged.into_iter().flatten() {
            writer
                .push(&f.frame(id))
                .with_context(|| format!("cannot write {shown_out}"))?;
        }
        let m = s.metrics.into_iter().next().unwrap_or_default();
        result.total.merge(&m);
        result.streams.push((id, m));
    }
    writer
        .finish()
        .with_context(|| format!("cannot write {shown_out}"))?;
    file.commit()
        .with_context(|| format!("cannot write {shown_out}"))?;
    Ok(Some(result))
}

/// The second pass of [`timeline`]: one stream's samples replayed, its final frames written.
struct TimelineSink<W: std::io::Write> {
    /// The stream, as the reader numbers it, and as `info` does (the rows' `stream`).
    stream: u32,
    id: u32,
    pass: StreamingReplay,
    writer: jitterlab_report::timeline::TimelineWriter<W>,
    failed: Option<jitterlab_report::Error>,
    pushed: u64,
}

impl<W: std::io::Write> jitterlab_capture::decode::SampleSink for TimelineSink<W> {
    fn samples(
        &mut self,
        samples: &mut Vec<jitterlab_capture::Sample>,
        truth: bool,
        streams: &[jitterlab_capture::StreamInfo],
    ) {
        for s in samples.drain(..) {
            if s.stream != self.stream {
                continue;
            }
            let channels = streams
                .get(s.stream as usize)
                .map(|i| i.channels.as_slice());
            self.pass.push(s, truth, channels);
            self.pushed += 1;
        }
        if self.pushed >= 256 {
            self.pushed = 0;
            let (writer, failed, id) = (&mut self.writer, &mut self.failed, self.id);
            self.pass.drain_frames(|_, f| {
                if failed.is_none()
                    && let Err(e) = writer.push(&f.frame(id))
                {
                    *failed = Some(e);
                }
            });
        }
    }
}
