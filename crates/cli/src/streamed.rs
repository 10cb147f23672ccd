//! Snapshot replays of a trace file in one streaming pass ([`StreamingReplay`]): memory that
//! grows with the streams and their windows, not with the trace. When the pass cannot give
//! the in-memory figures (the hindsight clock mapping, an `exec:` policy, a trace out of
//! arrival order, send times inferred only once the whole stream is known), [`replay`] says
//! why and the caller replays the trace in memory, to the same figures.

use std::path::Path;

use anyhow::Result;
use jitterlab_capture::decode::{Collector, Decoded};
use jitterlab_capture::source::is_stdio;
use jitterlab_replay::{ClockMapping, FrameClock, Metrics, Policy, StreamingReplay};

use crate::input::{DecodeArgs, read_trace, shown, warn_skipped};

/// A trace replayed in one pass.
pub(crate) struct Streamed {
    /// The trace's streams, flows and counts (no samples), narrowed by the selection.
    pub(crate) decoded: Decoded,
    /// Per stream replayed, in the trace's stream order: its id and, per policy, the metrics.
    pub(crate) streams: Vec<(u32, Vec<Metrics>)>,
    /// Received samples over the streams selected.
    pub(crate) packets: u64,
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
    if is_stdio(path) {
        // Standard input cannot be read again if the pass gives up.
        return Ok(None);
    }
    // What needs whole streams by its nature (the hindsight mapping, an `exec:` policy) is
    // replayed in memory without a word: only a trace's surprises are worth a note.
    let Ok(pass) = StreamingReplay::new(frames, clock, policies) else {
        return Ok(None);
    };
    let display = shown(path);
    let read = read_trace(path, args, false, |header, config| {
        Ok(Collector::with_sink(header, config, pass)?)
    })?;
    let finished = read.push.finish_parts();
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
    let mut by_id: Vec<Option<Vec<Metrics>>> = vec![None; slots.unwrap_or(0)];
    for s in streamed {
        let old = s.stream as usize;
        let new = finished.new_id.get(old).copied().unwrap_or(u32::MAX);
        if new == u32::MAX {
            continue;
        }
        let Some(info) = decoded.streams.iter().find(|i| i.id == new) else {
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
        by_id[new as usize] = Some(s.metrics);
    }
    // Received samples of the streams selected, replayable or not (as in memory).
    let packets = finished
        .counts
        .iter()
        .zip(&finished.new_id)
        .filter(|&(_, &new)| decoded.streams.iter().any(|i| i.id == new))
        .map(|(&n, _)| n)
        .sum();
    let only = args.select.stream;
    let mut streams = Vec::new();
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
        let metrics = by_id
            .get_mut(info.id as usize)
            .and_then(Option::take)
            .unwrap_or_else(|| vec![Metrics::default(); policies.len()]);
        streams.push((info.id, metrics));
    }
    Ok(Some(Streamed {
        decoded,
        streams,
        packets,
    }))
}
