//! The `webrtc-video` preset's playout: libwebrtc's frame buffer and decode scheduling
//! (`video/video_stream_buffer_controller.cc`, `video/frame_decode_timing.cc`,
//! `api/video/frame_buffer.cc`) over the models of [`super::jitter`] and [`super::timing`],
//! in one pass over a prepared stream's frames. See `policy/webrtc_video.rs` for what it
//! follows and where it departs.

use std::collections::VecDeque;

use jitterlab_capture::Nanos;

use super::jitter::{InterFrameDelay, JitterEstimator};
use super::timing::Timing;
use crate::playout::{PlayoutDetail, PlayoutEvent, PlayoutRun, PlayoutStream, Targets};
use crate::policy::WebRtcVideoConfig;

/// Frames the buffer holds (`kMaxFramesBuffered`).
const MAX_FRAMES_BUFFERED: usize = 800;
/// A frame whose hand-over is this far past is dropped if a newer one is ready
/// (`FrameDecodeTiming::kMaxAllowedFrameDelay`).
const MAX_ALLOWED_FRAME_DELAY: Nanos = Nanos::from_millis(5);
/// More queued frames than this let the low-latency renderer skip its pacing
/// (`kZeroPlayoutDelayDefaultMaxDecodeQueueSize`).
const MAX_DECODE_QUEUE: usize = 8;
/// The decoder waits at most this long for a frame (`kMaxWaitForFrame`).
const MAX_WAIT_FOR_FRAME: Nanos = Nanos::from_secs(3);
/// Render times further than this from now, or targets above it, reset the timing
/// (`kMaxVideoDelay` in `frame_helpers.cc`).
const MAX_VIDEO_DELAY: Nanos = Nanos::from_secs(10);

/// What libwebrtc's video timing did over one stream, beside the playout summary (JSON key
/// `"webrtc_video"`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct WebRtcVideoStats {
    /// Frames handed to the decoder and shown.
    pub frames_decoded: u64,
    /// Frames dropped because their hand-over time was over 5 ms past while a newer frame was
    /// ready (libwebrtc's fast-forward).
    pub dropped_too_late: u64,
    /// Frames that completed after a newer frame had been decoded.
    pub dropped_after_newer: u64,
    /// Frames refused by a full buffer (800 frames).
    pub dropped_buffer_full: u64,
    /// Frames decoded after their render time, so shown late.
    pub rendered_late: u64,
    /// Timing resets after a render time more than 10 s from now or a target above 10 s.
    pub timing_resets: u64,
    /// Whether frames were rendered as soon as decoded (min 0, max ≤ 500 ms).
    pub low_latency: bool,
    /// Mean target delay at each decode (jitter + decode time + render delay, at least min).
    pub mean_target_ms: f64,
    /// Mean current delay (what render times add to the expected completion).
    pub mean_current_delay_ms: f64,
    /// Mean jitter delay (the estimator's, with the operating-system jitter).
    pub mean_jitter_ms: f64,
    /// The last jitter delay.
    pub last_jitter_ms: f64,
}

/// What became of one frame slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Not (yet) complete.
    Waiting,
    /// In the buffer.
    Queued,
    /// Shown at this local time.
    Played(Nanos),
    /// Complete but dropped; its render time as then known.
    Dropped(Nanos),
}

/// A frame scheduled for hand-over to the decoder.
#[derive(Clone, Copy, Debug)]
struct Scheduled {
    slot: usize,
    at: Nanos,
    render: Option<Nanos>,
}

/// The 90 kHz timestamp of a send time.
fn ticks(send: Nanos) -> i64 {
    // Rounded to the nearest tick: send times are timestamps / clock rate, floored. Past
    // ±32 years of send time the product leaves i64 and i128 takes over.
    match send.as_nanos().checked_mul(9) {
        Some(t) => t.saturating_add(50_000).div_euclid(100_000),
        None => ((i128::from(send.as_nanos()) * 9 + 50_000).div_euclid(100_000)) as i64,
    }
}

struct Receiver<'s> {
    slots: &'s [crate::playout::Slot],
    config: &'s WebRtcVideoConfig,
    timing: Timing,
    jitter: JitterEstimator,
    ifdv: InterFrameDelay,
    fates: Vec<Fate>,
    targets: Vec<Nanos>,
    pending: VecDeque<usize>,
    scheduled: Option<Scheduled>,
    ready: bool,
    busy_until: Nanos,
    keyframe_required: bool,
    last_decoded: Option<usize>,
    last_release: Nanos,
    last_shown: Nanos,
    arrivals: Vec<Nanos>,
    stats: WebRtcVideoStats,
    sums: [f64; 3],
}

impl Receiver<'_> {
    fn ts(&self, k: usize) -> i64 {
        ticks(self.slots[k].send)
    }

    /// A frame completed at `now` (`InsertFrame`).
    fn insert(&mut self, k: usize, now: Nanos) {
        if self.fates[k] != Fate::Waiting {
            return;
        }
        if self.last_decoded.is_some_and(|d| k <= d) {
            let hint = self.timing.render_time(self.ts(k), now).unwrap_or(now);
            self.fates[k] = Fate::Dropped(hint);
            self.stats.dropped_after_newer += 1;
            return;
        }
        if self.pending.len() >= MAX_FRAMES_BUFFERED {
            self.fates[k] = Fate::Dropped(now);
            self.stats.dropped_buffer_full += 1;
            return;
        }
        let at = self.pending.partition_point(|&p| p < k);
        self.pending.insert(at, k);
        self.fates[k] = Fate::Queued;
        self.arrivals[k] = now;
        let ts = self.ts(k);
        self.timing.incoming_timestamp(ts, now);
    }

    /// `MaybeScheduleFrameForRelease`: with the decoder free, the oldest frame is scheduled
    /// for hand-over (frames already too late dropped while a newer one waits).
    fn maybe_schedule(&mut self, now: Nanos) {
        if !self.ready || self.pending.is_empty() {
            return;
        }
        if self.keyframe_required {
            // The first frame stands in for the key frame, released at once.
            if let Some(k) = self.pending.pop_front() {
                let render = self.timing.render_time(self.ts(k), now);
                self.frame_ready(k, render, now);
            }
            return;
        }
        if self
            .scheduled
            .is_some_and(|s| Some(&s.slot) == self.pending.front())
        {
            return;
        }
        self.scheduled = None;
        let max_wait =
            (self.last_release + MAX_WAIT_FOR_FRAME - now - Nanos::from_millis(1)).max(Nanos::ZERO);
        while let Some(&k) = self.pending.front() {
            let render = self.timing.render_time(self.ts(k), now);
            let wait =
                self.timing
                    .max_waiting_time(render, now, self.pending.len() > MAX_DECODE_QUEUE);
            if wait <= -MAX_ALLOWED_FRAME_DELAY && self.pending.len() > 1 {
                self.pending.pop_front();
                self.fates[k] = Fate::Dropped(render.unwrap_or(now));
                self.stats.dropped_too_late += 1;
                continue;
            }
            self.scheduled = Some(Scheduled {
                slot: k,
                at: now + wait.clamp(Nanos::ZERO, max_wait),
                render,
            });
            return;
        }
    }

    /// `OnFrameReady`: frame `k` handed to the decoder at `now`, to render at `render`.
    fn frame_ready(&mut self, k: usize, render: Option<Nanos>, now: Nanos) {
        let mut render = render;
        let bad = render.is_some_and(|r| (r - now).abs() > MAX_VIDEO_DELAY);
        if bad || self.timing.target_delay() > MAX_VIDEO_DELAY {
            self.jitter.reset();
            self.timing.reset(now);
            render = self.timing.render_time(self.ts(k), now);
            self.stats.timing_resets += 1;
        }
        let ts = self.ts(k);
        if let Some(d) = self.ifdv.calculate(ts, self.arrivals[k]) {
            self.jitter.update(d, self.slots[k].size, now);
        }
        self.timing.set_jitter_delay(self.jitter.estimate());
        match self.config.slew {
            None => self.timing.update_current_delay_late(render, now),
            Some(rate) => self.timing.update_current_delay_slewed(ts, rate),
        }
        let decoded = now + self.config.decode_time;
        self.timing
            .stop_decode_timer(self.config.decode_time, decoded);
        self.timing.set_last_decode_scheduled(now);
        let shown = render
            .map_or(decoded, |r| r.max(decoded))
            .max(self.last_shown);
        if render.is_some_and(|r| r < decoded) {
            self.stats.rendered_late += 1;
        }
        self.last_shown = shown;
        self.fates[k] = Fate::Played(shown);
        let target = self.timing.target_delay();
        self.targets[k] = target;
        self.stats.frames_decoded += 1;
        self.sums[0] += target.as_millis_f64();
        self.sums[1] += self.timing.current_delay().as_millis_f64();
        self.sums[2] += self.timing.jitter_delay().as_millis_f64();
        self.stats.last_jitter_ms = self.timing.jitter_delay().as_millis_f64();
        self.keyframe_required = false;
        self.last_decoded = Some(k);
        self.last_release = now;
        self.ready = false;
        self.busy_until = decoded;
    }
}

/// Plays `stream` as libwebrtc's video receiver would with `config`: every slot's event (a
/// frame shown at its render time, or concealed: dropped late, or never complete), the target
/// delay at each, and the timing's own counters.
pub fn playout_webrtc_video(stream: &PlayoutStream<'_>, config: &WebRtcVideoConfig) -> PlayoutRun {
    let slots = stream.slots();
    let n = slots.len();
    let mut timing = Timing::new(stream.units().first().map_or(Nanos::ZERO, |u| u.arrival));
    timing
        .set_render_delay(config.render_delay)
        .set_min_playout_delay(config.min)
        .set_max_playout_delay(config.max)
        .set_min_pacing(config.min_pacing);
    let mut r = Receiver {
        slots,
        config,
        stats: WebRtcVideoStats {
            low_latency: timing.low_latency(),
            ..WebRtcVideoStats::default()
        },
        timing,
        jitter: JitterEstimator::new(config.os_jitter),
        ifdv: InterFrameDelay::default(),
        fates: vec![Fate::Waiting; n],
        targets: vec![Nanos::ZERO; n],
        pending: VecDeque::new(),
        scheduled: None,
        ready: true,
        busy_until: Nanos::MIN,
        keyframe_required: true,
        last_decoded: None,
        last_release: Nanos::ZERO,
        last_shown: Nanos::MIN,
        arrivals: vec![Nanos::ZERO; n],
        sums: [0.0; 3],
    };
    let lo = slots.first().map_or(0, |s| s.seq);
    let units = stream.units();
    let mut next = 0usize;
    // Events in time order; at one instant arrivals first, then the decoder coming free,
    // then a hand-over.
    loop {
        let arrival = units.get(next).map(|u| u.arrival);
        let free = (!r.ready).then_some(r.busy_until);
        let handover = r.scheduled.map(|s| s.at);
        let earliest = [arrival, free, handover].into_iter().flatten().min();
        let Some(now) = earliest else { break };
        if arrival == Some(now) {
            let u = &units[next];
            next += 1;
            if let Some(k) = usize::try_from(u.seq - lo).ok().filter(|&k| k < n) {
                r.insert(k, u.arrival);
            }
            r.maybe_schedule(now);
        } else if free == Some(now) {
            r.ready = true;
            r.maybe_schedule(now);
        } else if let Some(s) = r.scheduled.take() {
            if r.pending.front() == Some(&s.slot) {
                r.pending.pop_front();
                r.frame_ready(s.slot, s.render, now);
            }
            r.maybe_schedule(now);
        }
    }
    let decoded = r.stats.frames_decoded.max(1) as f64;
    r.stats.mean_target_ms = r.sums[0] / decoded;
    r.stats.mean_current_delay_ms = r.sums[1] / decoded;
    r.stats.mean_jitter_ms = r.sums[2] / decoded;
    let (events, targets) = events_of(slots, &r.fates, &r.targets, stream.offset);
    PlayoutRun {
        events,
        detail: Some(PlayoutDetail::WebRtcVideo(r.stats)),
        targets: Targets::PerEvent(targets),
        ..PlayoutRun::default()
    }
}

/// One event per slot in sequence (play) order. A slot not shown is placed at its render
/// time as known when dropped, or, never complete, at the next shown frame's time less the
/// media time between them; either kept between its neighbours' times. Its target is the
/// next shown frame's (else the last one's).
fn events_of(
    slots: &[crate::playout::Slot],
    fates: &[Fate],
    targets: &[Nanos],
    offset: Nanos,
) -> (Vec<PlayoutEvent>, Vec<Nanos>) {
    let n = slots.len();
    // The next shown slot at or after each index.
    let mut next_shown: Vec<Option<usize>> = vec![None; n];
    let mut after = None;
    for k in (0..n).rev() {
        if matches!(fates[k], Fate::Played(_)) {
            after = Some(k);
        }
        next_shown[k] = after;
    }
    let mut events = Vec::with_capacity(n);
    let mut event_targets = Vec::with_capacity(n);
    let mut prev: Option<(Nanos, Nanos)> = None;
    let mut last_target = Nanos::ZERO;
    for (k, slot) in slots.iter().enumerate() {
        let seq = slot.seq;
        let following = next_shown[k].and_then(|j| match fates[j] {
            Fate::Played(at) => Some((j, at)),
            _ => None,
        });
        if let Fate::Played(at) = fates[k] {
            events.push(PlayoutEvent::Played { seq, at });
            last_target = targets[k];
            event_targets.push(last_target);
            prev = Some((at, slot.send));
            continue;
        }
        let hint = match (fates[k], following, prev) {
            (Fate::Dropped(h), _, _) => h,
            (_, Some((j, at)), _) => at - (slots[j].send - slot.send),
            (_, None, Some((at, send))) => at + (slot.send - send),
            (_, None, None) => slot.send - offset,
        };
        let lo = prev.map_or(Nanos::MIN, |p| p.0);
        let hi = following.map_or(Nanos::MAX, |(_, at)| at);
        let at = hint.max(lo).min(hi.max(lo));
        events.push(PlayoutEvent::Concealed {
            seq,
            at,
            arrived_late: matches!(fates[k], Fate::Dropped(_) | Fate::Queued),
        });
        event_targets.push(following.map_or(last_target, |(j, _)| targets[j]));
        prev = Some((at, slot.send));
    }
    (events, event_targets)
}

#[cfg(test)]
mod tests;
