//! `speex`: the Speex jitter buffer (libspeexdsp `libspeexdsp/jitter.c`, SpeexDSP 1.2.1 and the
//! repository head `SpeexDSP-1.2.1-15-g7a15878`, BSD), played by a device that calls
//! `jitter_buffer_get` and `jitter_buffer_tick` once per frame period (anchors-2.md §3.6).
//!
//! What follows the origin:
//! - **Timings.** A packet's *timing* is how far ahead of the playout position it arrived:
//!   its timestamp less `next_stop` (where the next `get` will start) when it is put, less
//!   `buffer_margin`; a late packet (timestamp before `next_stop`) records its (negative)
//!   timing on arrival, the others when they are played. Timings go into `MAX_BUFFERS` = 3
//!   sub-windows of `window_size / 3` packets each, where `window_size = 100·TOP_DELAY /
//!   max_late_rate` (1000 at the default `max_late_rate` of 4 %); each sub-window keeps its
//!   `MAX_TIMINGS` = 40 earliest-arriving (smallest) timings sorted, and the oldest
//!   sub-window is dropped when the newest is full.
//! - **The optimiser** (`compute_opt_delay`): over the `TOP_DELAY` = 40 smallest timings of
//!   all sub-windows, the delay (rounded down to `delay_step`) minimising `−timing +
//!   late_factor·(packets that would be late)`, with a 4-packet penalty the first time the
//!   candidate reaches a non-negative timing (hysteresis). `late_factor` is `late_cost·100 /
//!   packets seen` when `late_cost` is set, else `auto_tradeoff·window_size / packets seen`
//!   (integer), where `auto_tradeoff = 1 + (largest − smallest of those timings) / 40` (32000
//!   after a reset). With fewer than 40 packets seen it never shrinks.
//! - **`update_delay`** (every `tick` by default, `auto_adjust`): a negative optimum asks for
//!   an insertion of that much (the next `get` returns `INSERTION` and the position stays);
//!   a positive one moves the position forward by it (the frames it passes are skipped).
//!   Either way the timings shift by the same amount.
//! - **`get`**: the first call after a reset syncs the position to the oldest packet held;
//!   then a pending insertion; else the packet at the position spanning the frame, an older
//!   one spanning it, an older one spanning part of it, or the earliest starting within it
//!   (`OK`); else `MISSING` (the position advances by the frame rounded down to
//!   `concealment_size`), unless the optimiser then wants more delay, which returns an
//!   `INSERTION` instead and keeps the position.
//! - **`put`**: packets whose span ended before the position are cleaned out; a packet
//!   more than `delay_step` behind the position is dropped; with 200 packets
//!   (`SPEEX_JITTER_MAX_BUFFER_SIZE`) held the earliest is discarded; after more than 20
//!   `get`s in a row without a packet the buffer resets (as `jitter_buffer_reset` and
//!   `destroy` do: every packet freed, the timing windows emptied) and the next `get` syncs
//!   anew.
//!
//! Defaults (`jitter_buffer_init(step)`): `delay_step` = `concealment_size` = the frame (one
//! frame period in timestamp units), `buffer_margin` 0, `latency_tradeoff` 0 (automatic),
//! `max_late_rate` 4 %, `auto_adjust` on. `late_cutoff` (50) is set by the origin but never
//! read, so it has no key.
//!
//! The player ([`crate::playout::player`]): one `get` of one frame period then one `tick` per
//! frame period, as `testjitter.c` and Speex's own `speex_jitter_get` do; `adjust=miss` calls
//! `jitter_buffer_update_delay` after every `get` that did not return `OK` instead (as Mumble
//! does, which turns `auto_adjust` off). The player plays one frame per `get`: an
//! `INSERTION` is one frame of concealment inserted (`inserted`), whatever span it asks for.
//! Timestamps are the slots' send times in units of the stream's RTP clock (`clock`), from
//! the first slot; a packet's span is its slot's duration, at most one frame period (a longer
//! one is a silence the sender did not fill).
//!
//! Where jitterlab departs: packets are kept by slot rather than in a 200-entry array, so
//! among several packets that fit a `get` equally the lowest sequence number wins (the
//! origin takes whichever its array holds first) and a duplicate still held is not stored
//! twice (it is counted); timestamps do not wrap. The optimiser's per-event target is the
//! current delay (local play time less send time) less the last optimum: what the buffer is
//! steering to. Speex keeps no statistics; [`SpeexStats`] counts its decisions.

use std::sync::OnceLock;

use jitterlab_capture::Nanos;
use serde::Serialize;

use super::keys::{auto_duration, format_auto, key, number, print, print_duration};
use super::{DelayModel, Key, KeyError, Preset, duration_key};
use crate::playout::player::{self, Emitter};
use crate::playout::{PlayoutDetail, PlayoutRun, PlayoutStream};

/// `SPEEX_JITTER_MAX_BUFFER_SIZE`: packets held at most.
pub(crate) const MAX_BUFFER_SIZE: usize = 200;
/// `MAX_TIMINGS`: timings kept per sub-window.
pub(crate) const MAX_TIMINGS: usize = 40;
/// `MAX_BUFFERS`: sub-windows.
pub(crate) const MAX_BUFFERS: usize = 3;
/// `TOP_DELAY`: the smallest timings the optimiser looks at.
pub(crate) const TOP_DELAY: usize = 40;
/// `get`s in a row without a packet after which the next `put` resets the buffer.
pub(crate) const MAX_LOST_IN_A_ROW: u32 = 20;

/// When the delay is re-optimised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adjust {
    /// At every `jitter_buffer_tick` (`auto_adjust`, the origin's default).
    Tick,
    /// `jitter_buffer_update_delay` after every `get` that did not return `OK` (Mumble).
    Miss,
}

impl std::fmt::Display for Adjust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Tick => "tick",
            Self::Miss => "miss",
        })
    }
}

/// The Speex jitter buffer's settings (`jitter_buffer_ctl`), in time rather than timestamp
/// units; `None` is `auto`.
#[derive(Clone, Debug, PartialEq)]
pub struct SpeexConfig {
    /// The frame period the player asks for (and `jitter_buffer_init`'s step); `auto`: the
    /// stream's usual frame duration.
    pub ptime: Option<Nanos>,
    /// Timestamp units per second; `auto`: the stream's RTP clock rate, else 8000.
    pub clock: Option<u32>,
    /// `JITTER_BUFFER_SET_DELAY_STEP`; `auto`: one frame period.
    pub step: Option<Nanos>,
    /// `JITTER_BUFFER_SET_CONCEALMENT_SIZE`; `auto`: one frame period.
    pub concealment_size: Option<Nanos>,
    /// `JITTER_BUFFER_SET_MARGIN`.
    pub margin: Nanos,
    /// `JITTER_BUFFER_SET_LATE_COST`: the delay worth one percent of late packets; `auto`
    /// (0 in the origin): the automatic trade-off.
    pub late_cost: Option<Nanos>,
    /// `JITTER_BUFFER_SET_MAX_LATE_RATE`, percent (1 to 100): sets the window length.
    pub max_late_rate: u32,
    /// When the delay is re-optimised.
    pub adjust: Adjust,
    /// Where the player's clock falls after the first arrival, in frame periods (0 to below
    /// 1).
    pub phase: f64,
}

impl Default for SpeexConfig {
    fn default() -> Self {
        Self {
            ptime: None,
            clock: None,
            step: None,
            concealment_size: None,
            margin: Nanos::ZERO,
            late_cost: None,
            max_late_rate: 4,
            adjust: Adjust::Tick,
            phase: 0.5,
        }
    }
}

fn adjust(v: &str) -> Result<Adjust, String> {
    match v {
        "tick" => Ok(Adjust::Tick),
        "miss" => Ok(Adjust::Miss),
        _ => Err(format!("'{v}' (allowed: tick, miss)")),
    }
}

fn clock(v: &str) -> Result<Option<u32>, String> {
    if v == "auto" {
        return Ok(None);
    }
    match v.parse::<u32>() {
        Ok(n) if (1..=10_000_000).contains(&n) => Ok(Some(n)),
        _ => Err(format!("{v} is out of range (allowed: auto, 1..=10000000 Hz)")),
    }
}

fn print_clock(c: &Option<u32>) -> String {
    c.map_or_else(|| "auto".to_owned(), |c| c.to_string())
}

fn percent(v: &str) -> Result<u32, String> {
    match v.trim_end_matches('%').parse::<u32>() {
        Ok(n) if (1..=100).contains(&n) => Ok(n),
        _ => Err(format!("{v} is out of range (allowed: 1..=100, percent)")),
    }
}

impl Preset for SpeexConfig {
    const NAME: &'static str = "speex";
    const PLAYOUT_ONLY: bool = true;
    const MEDIA: Option<jitterlab_capture::decode::MediaKind> =
        Some(jitterlab_capture::decode::MediaKind::Audio);
    const PLAYOUT_AXES: &'static str =
        "max_late_rate = [1, 2, 4, 8, 15]\nlate_cost = [\"auto\", \"10ms\", \"40ms\"]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<SpeexConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "ptime", |c| c.ptime, |d: &Option<Nanos>| format_auto(*d), |v| {
                    auto_duration(v, Nanos::from_millis(1))
                }),
                key!(Self, "clock", |c| c.clock, print_clock, clock),
                key!(Self, "step", |c| c.step, |d: &Option<Nanos>| format_auto(*d), |v| {
                    auto_duration(v, Nanos::from_micros(1))
                }),
                key!(
                    Self,
                    "concealment_size",
                    |c| c.concealment_size,
                    |d: &Option<Nanos>| format_auto(*d),
                    |v| { auto_duration(v, Nanos::from_micros(1)) }
                ),
                key!(Self, "margin", |c| c.margin, print_duration, |v| {
                    duration_key(v, Nanos::ZERO)
                }),
                key!(
                    Self,
                    "late_cost",
                    |c| c.late_cost,
                    |d: &Option<Nanos>| format_auto(*d),
                    |v| { auto_duration(v, Nanos::from_micros(1)) }
                ),
                key!(Self, "max_late_rate", |c| c.max_late_rate, print, percent),
                key!(Self, "adjust", |c| c.adjust, print, adjust),
                key!(Self, "phase", |c| c.phase, print, |v| {
                    number(v, |x| (0.0..1.0).contains(&x), "0 to below 1")
                }),
            ]
        })
    }

    fn validate(&self) -> Result<(), KeyError> {
        Ok(())
    }

    fn max_delay(&self) -> Nanos {
        self.ptime.unwrap_or(Nanos::from_millis(20)) * MAX_BUFFER_SIZE as i64
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }


    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        Some(playout_speex(stream, self))
    }
}

/// What the Speex jitter buffer decided over a run (it keeps no statistics of its own:
/// these count its return codes and actions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SpeexStats {
    /// `get` calls once playing.
    pub gets: u64,
    /// `JITTER_BUFFER_OK`.
    pub ok: u64,
    /// `JITTER_BUFFER_MISSING` (a frame concealed).
    pub missing: u64,
    /// `JITTER_BUFFER_INSERTION` returned (a frame inserted to grow the delay).
    pub insertion: u64,
    /// Of those, forced by a missing packet (the optimiser wanted more delay at once).
    pub forced_insertion: u64,
    /// Delay optimisations that shrank the buffer (the position jumped forward).
    pub shrink: u64,
    /// Packets that arrived after `next_stop` (their negative timing was recorded).
    pub late: u64,
    /// Of the packets put, those too late to be kept (more than `delay_step` behind).
    pub too_late: u64,
    /// Packets held but passed by the position unplayed and cleaned out.
    pub cleaned: u64,
    /// Packets discarded because 200 were held.
    pub overflow: u64,
    /// Resets after more than 20 `get`s in a row without a packet.
    pub resets: u64,
    /// Duplicates of a packet still held (the origin would store both).
    pub duplicates: u64,
    /// Frames played a second time (a reset synced back to a packet already passed).
    pub replayed: u64,
    /// Media time skipped by shrinking, ms.
    pub skipped_ms: f64,
    /// Mean optimum over the `tick`s (negative: more delay wanted), ms.
    pub mean_opt_ms: f64,
}

/// What one `jitter_buffer_get` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Got {
    /// `JITTER_BUFFER_OK`: the packet with this index.
    Ok(usize),
    /// `JITTER_BUFFER_MISSING` with this span (the position advanced by it).
    Missing(i64),
    /// `JITTER_BUFFER_INSERTION` with this span (the position stayed).
    Insertion(i64),
    /// `JITTER_BUFFER_MISSING` before any packet to sync to (no position yet).
    Idle,
}

#[derive(Clone, Copy, Debug)]
struct TimingBuffer {
    filled: usize,
    curr_count: i32,
    timing: [i32; MAX_TIMINGS],
}

impl Default for TimingBuffer {
    fn default() -> Self {
        Self {
            filled: 0,
            curr_count: 0,
            timing: [0; MAX_TIMINGS],
        }
    }
}

impl TimingBuffer {
    /// `tb_add`: keeps the `MAX_TIMINGS` smallest timings, sorted.
    fn add(&mut self, timing: i32) {
        if self.filled >= MAX_TIMINGS && timing >= self.timing[self.filled - 1] {
            self.curr_count += 1;
            return;
        }
        let mut pos = 0;
        while pos < self.filled && timing >= self.timing[pos] {
            pos += 1;
        }
        if pos < self.filled {
            let mut moved = self.filled - pos;
            if self.filled == MAX_TIMINGS {
                moved -= 1;
            }
            self.timing.copy_within(pos..pos + moved, pos + 1);
        }
        self.timing[pos] = timing;
        self.curr_count += 1;
        if self.filled < MAX_TIMINGS {
            self.filled += 1;
        }
    }
}

/// The buffer's settings in timestamp units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Params {
    /// `delay_step`.
    pub(crate) delay_step: i64,
    /// `concealment_size`.
    pub(crate) concealment_size: i64,
    /// `buffer_margin`.
    pub(crate) margin: i64,
    /// `latency_tradeoff` (0: automatic).
    pub(crate) late_cost: i64,
    /// `max_late_rate`, percent.
    pub(crate) max_late_rate: u32,
}

impl Params {
    /// `jitter_buffer_init(step)`'s settings.
    #[cfg(test)]
    pub(crate) fn init(step: i64) -> Self {
        Self {
            delay_step: step,
            concealment_size: step,
            margin: 0,
            late_cost: 0,
            max_late_rate: 4,
        }
    }
}

const NO_ARRIVAL: i64 = i64::MIN;

/// The Speex jitter buffer's state over packets numbered `0..n` whose timestamps `ts` do not
/// decrease, each spanning `span` (timestamp units).
#[derive(Debug)]
pub(crate) struct JitterBuffer<'a> {
    ts: &'a [i64],
    span: &'a [i64],
    max_span: i64,
    p: Params,
    window_size: i32,
    subwindow_size: i32,
    stored: Vec<bool>,
    arrival: Vec<i64>,
    held: usize,
    lo: usize,
    hi: usize,
    pointer: i64,
    next_stop: i64,
    buffered: i64,
    reset_state: bool,
    interp_requested: i64,
    auto_adjust: bool,
    tb: [TimingBuffer; MAX_BUFFERS],
    order: [usize; MAX_BUFFERS],
    auto_tradeoff: i32,
    lost_count: u32,
    /// The last optimum computed (timestamp units).
    pub(crate) last_opt: i64,
    /// Decisions counted so far.
    pub(crate) stats: SpeexStats,
    opt_sum: f64,
    opt_n: u64,
}

impl<'a> JitterBuffer<'a> {
    /// A fresh buffer (`jitter_buffer_init` then the `ctl` settings in `p`).
    pub(crate) fn new(ts: &'a [i64], span: &'a [i64], p: Params) -> Self {
        let window_size = (100 * TOP_DELAY as i32) / p.max_late_rate.max(1) as i32;
        let mut jb = Self {
            ts,
            span,
            max_span: span.iter().copied().max().unwrap_or(1).max(1),
            p,
            window_size,
            subwindow_size: window_size / MAX_BUFFERS as i32,
            stored: vec![false; ts.len()],
            arrival: vec![NO_ARRIVAL; ts.len()],
            held: 0,
            lo: 0,
            hi: 0,
            pointer: 0,
            next_stop: 0,
            buffered: 0,
            reset_state: true,
            interp_requested: 0,
            auto_adjust: true,
            tb: [TimingBuffer::default(); MAX_BUFFERS],
            order: [0, 1, 2],
            auto_tradeoff: 32000,
            lost_count: 0,
            last_opt: 0,
            stats: SpeexStats::default(),
            opt_sum: 0.0,
            opt_n: 0,
        };
        jb.reset();
        jb.stats.resets = 0;
        jb
    }

    /// `jitter_buffer_reset`: every packet freed, the timing windows emptied, the next
    /// `get` syncs anew.
    pub(crate) fn reset(&mut self) {
        for k in self.lo..self.hi {
            self.stored[k] = false;
        }
        self.held = 0;
        self.lo = self.ts.len();
        self.hi = 0;
        self.pointer = 0;
        self.next_stop = 0;
        self.reset_state = true;
        self.lost_count = 0;
        self.buffered = 0;
        self.auto_tradeoff = 32000;
        self.tb = [TimingBuffer::default(); MAX_BUFFERS];
        self.order = [0, 1, 2];
        self.stats.resets += 1;
    }

    /// The timestamp the next `get` starts at (`jitter_buffer_get_pointer_timestamp`).
    pub(crate) fn pointer(&self) -> i64 {
        self.pointer
    }

    fn remove(&mut self, k: usize) {
        self.stored[k] = false;
        self.held -= 1;
    }

    /// `update_timings`.
    fn update_timings(&mut self, timing: i64) {
        let timing = timing.clamp(-32767, 32767) as i32;
        if self.tb[self.order[0]].curr_count >= self.subwindow_size {
            self.order.rotate_right(1);
            self.tb[self.order[0]] = TimingBuffer::default();
        }
        self.tb[self.order[0]].add(timing);
    }

    /// `shift_timings`.
    fn shift_timings(&mut self, amount: i64) {
        let amount = amount as i32;
        for tb in &mut self.tb {
            for t in &mut tb.timing[..tb.filled] {
                *t = t.wrapping_add(amount);
            }
        }
    }

    /// `compute_opt_delay`.
    fn compute_opt_delay(&mut self) -> i64 {
        let tot_count: i32 = self.tb.iter().map(|t| t.curr_count).sum();
        if tot_count == 0 {
            self.last_opt = 0;
            return 0;
        }
        let late_factor: f32 = if self.p.late_cost != 0 {
            self.p.late_cost as f32 * 100.0 / tot_count as f32
        } else {
            (self.auto_tradeoff.saturating_mul(self.window_size) / tot_count) as f32
        };
        let step = self.p.delay_step.max(1) as i32;
        let round_down = |x: i32| {
            if x < 0 {
                (x - step + 1) / step * step
            } else {
                x / step * step
            }
        };
        let mut pos = [0usize; MAX_BUFFERS];
        let (mut opt, mut best_cost) = (0i32, i32::MAX);
        let (mut late, mut penalty_taken) = (0i32, false);
        let (mut best, mut worst) = (0i32, 0i32);
        for i in 0..TOP_DELAY {
            let mut next = None;
            let mut latest = 32767i32;
            for (j, tb) in self.tb.iter().enumerate() {
                if pos[j] < tb.filled && tb.timing[pos[j]] < latest {
                    next = Some(j);
                    latest = tb.timing[pos[j]];
                }
            }
            let Some(next) = next else { break };
            if i == 0 {
                worst = latest;
            }
            best = latest;
            let latest = round_down(latest);
            pos[next] += 1;
            let cost = (-(latest as f32) + late_factor * late as f32) as i32;
            if cost < best_cost {
                best_cost = cost;
                opt = latest;
            }
            late += 1;
            if latest >= 0 && !penalty_taken {
                penalty_taken = true;
                late += 4;
            }
        }
        self.auto_tradeoff = 1 + (best - worst) / TOP_DELAY as i32;
        // The origin returns a 16-bit value.
        let mut opt = i64::from(opt as i16);
        if tot_count < TOP_DELAY as i32 && opt > 0 {
            opt = 0;
        }
        self.last_opt = opt;
        self.opt_sum += opt as f64;
        self.opt_n += 1;
        opt
    }

    /// `jitter_buffer_put` of packet `i`.
    pub(crate) fn put(&mut self, i: usize) {
        if i >= self.ts.len() {
            return;
        }
        if !self.reset_state {
            // Clean out packets whose span ended before the position.
            let mut k = self.lo;
            let mut first_kept = None;
            while k < self.hi && self.ts[k] < self.pointer {
                if self.stored[k] {
                    if self.ts[k] + self.span[k] <= self.pointer {
                        self.remove(k);
                        self.stats.cleaned += 1;
                    } else if first_kept.is_none() {
                        first_kept = Some(k);
                    }
                }
                k += 1;
            }
            self.lo = first_kept.unwrap_or(k);
        }
        let (ts, span) = (self.ts[i], self.span[i]);
        let late = !self.reset_state && ts < self.next_stop;
        if late {
            self.update_timings(ts - self.next_stop - self.p.margin);
            self.stats.late += 1;
        }
        if self.lost_count > MAX_LOST_IN_A_ROW {
            self.reset();
        }
        if !(self.reset_state || ts + span + self.p.delay_step >= self.pointer) {
            self.stats.too_late += 1;
            return;
        }
        if self.stored[i] {
            self.stats.duplicates += 1;
            return;
        }
        if self.held >= MAX_BUFFER_SIZE {
            // Discard the earliest packet held.
            let mut k = self.lo;
            while k < self.hi && !self.stored[k] {
                k += 1;
            }
            if k < self.hi {
                self.remove(k);
                self.stats.overflow += 1;
                self.lo = k + 1;
            }
        }
        self.stored[i] = true;
        self.held += 1;
        self.lo = self.lo.min(i);
        self.hi = self.hi.max(i + 1);
        self.arrival[i] = if self.reset_state || late {
            NO_ARRIVAL
        } else {
            self.next_stop
        };
    }

    /// The lowest index `k` with `ts[k] > t`.
    fn after(&self, t: i64) -> usize {
        self.ts.partition_point(|&x| x <= t)
    }

    /// `jitter_buffer_get` of `desired` timestamp units (no `start_offset`).
    pub(crate) fn get(&mut self, desired: i64) -> Got {
        if self.reset_state {
            let mut k = self.lo;
            while k < self.hi && !self.stored[k] {
                k += 1;
            }
            if k >= self.hi {
                return Got::Idle;
            }
            self.reset_state = false;
            self.pointer = self.ts[k];
            self.next_stop = self.ts[k];
        }
        self.stats.gets += 1;
        if self.interp_requested != 0 {
            let span = self.interp_requested;
            self.pointer += span;
            self.interp_requested = 0;
            self.buffered = span - desired;
            self.stats.insertion += 1;
            return Got::Insertion(span);
        }
        let found = self.find(desired);
        if let Some(i) = found {
            self.lost_count = 0;
            if self.arrival[i] != NO_ARRIVAL {
                self.update_timings(self.ts[i] - self.arrival[i] - self.p.margin);
            }
            self.remove(i);
            self.pointer = self.ts[i] + self.span[i];
            self.buffered = self.span[i] - desired;
            self.stats.ok += 1;
            return Got::Ok(i);
        }
        self.lost_count += 1;
        let opt = self.compute_opt_delay();
        if opt < 0 {
            self.shift_timings(-opt);
            self.buffered = -opt - desired;
            self.stats.insertion += 1;
            self.stats.forced_insertion += 1;
            Got::Insertion(-opt)
        } else {
            let step = self.p.concealment_size.max(1);
            let span = desired / step * step;
            self.pointer += span;
            self.buffered = span - desired;
            self.stats.missing += 1;
            Got::Missing(span)
        }
    }

    /// The packet a `get` at the position returns, by the origin's four searches.
    fn find(&self, desired: i64) -> Option<usize> {
        let pointer = self.pointer;
        let start = self.after(pointer - self.max_span).max(self.lo);
        let held = |k: &usize| self.stored[*k];
        let window = || (start..self.hi.min(self.ts.len())).take_while(|&k| self.ts[k] < pointer + desired);
        let end = |k: usize| self.ts[k] + self.span[k];
        window()
            .filter(held)
            .find(|&k| self.ts[k] == pointer && end(k) >= pointer + desired)
            .or_else(|| {
                window()
                    .filter(held)
                    .find(|&k| self.ts[k] <= pointer && end(k) >= pointer + desired)
            })
            .or_else(|| {
                window()
                    .filter(held)
                    .find(|&k| self.ts[k] <= pointer && end(k) > pointer)
            })
            .or_else(|| {
                window()
                    .filter(held)
                    .filter(|&k| self.ts[k] >= pointer)
                    .min_by_key(|&k| (self.ts[k], -self.span[k], k))
            })
    }

    /// `jitter_buffer_update_delay` called by the application (turns `auto_adjust` off).
    pub(crate) fn update_delay(&mut self) -> i64 {
        self.auto_adjust = false;
        self.adjust_delay()
    }

    fn adjust_delay(&mut self) -> i64 {
        let opt = self.compute_opt_delay();
        if opt < 0 {
            self.shift_timings(-opt);
            self.pointer += opt;
            self.interp_requested = -opt;
        } else if opt > 0 {
            self.shift_timings(-opt);
            self.pointer += opt;
            self.stats.shrink += 1;
        }
        opt
    }

    /// `jitter_buffer_tick`: re-optimises when `auto_adjust` is on (returns the optimum),
    /// then sets where the next `get` starts.
    pub(crate) fn tick(&mut self) -> i64 {
        let opt = if self.auto_adjust {
            self.adjust_delay()
        } else {
            0
        };
        self.next_stop = if self.buffered >= 0 {
            self.pointer - self.buffered
        } else {
            self.pointer
        };
        self.buffered = 0;
        opt
    }

    /// The statistics with their means filled in.
    pub(crate) fn finish_stats(&self, unit_ms: f64) -> SpeexStats {
        let mut s = self.stats;
        if self.opt_n > 0 {
            s.mean_opt_ms = self.opt_sum / self.opt_n as f64 * unit_ms;
        }
        s
    }
}

/// Plays `stream` through the Speex jitter buffer configured by `config`.
pub(crate) fn playout_speex(stream: &PlayoutStream<'_>, config: &SpeexConfig) -> PlayoutRun {
    let slots = stream.slots();
    let period = player::ptime(stream, config.ptime);
    let Some(mut now) = player::first_call(stream, period, config.phase) else {
        return PlayoutRun::default();
    };
    let rate = i128::from(
        config
            .clock
            .or(stream.media.clock_rate)
            .filter(|&r| r > 0)
            .unwrap_or(8000),
    );
    let to_units = |d: Nanos| -> i64 { (i128::from(d.as_nanos()) * rate / 1_000_000_000) as i64 };
    let to_nanos = |u: i64| -> Nanos { Nanos((i128::from(u) * 1_000_000_000 / rate) as i64) };
    let frame = to_units(period).max(1);
    let base = slots[0].send;
    let mut ts: Vec<i64> = Vec::with_capacity(slots.len());
    let mut last = i64::MIN;
    for s in slots {
        let t = to_units(s.send - base).max(last);
        ts.push(t);
        last = t;
    }
    let span: Vec<i64> = slots
        .iter()
        .map(|s| {
            if s.duration > Nanos::ZERO {
                to_units(s.duration.min(period)).max(1)
            } else {
                frame
            }
        })
        .collect();
    let step = config.step.map_or(frame, |d| to_units(d).max(1));
    let params = Params {
        delay_step: step,
        concealment_size: config.concealment_size.map_or(frame, |d| to_units(d).max(1)),
        margin: to_units(config.margin),
        late_cost: config.late_cost.map_or(0, |d| to_units(d).max(1)),
        max_late_rate: config.max_late_rate,
    };
    let mut jb = JitterBuffer::new(&ts, &span, params);
    let arrivals = player::arrivals(stream);
    let mut emitter = Emitter::new(slots);
    let (mut inserted, mut removed) = (Nanos::ZERO, Nanos::ZERO);
    let mut fed = 0usize;
    let offset = stream.offset;
    // The delay of the frame just handed out (it started one frame before the position),
    // less the optimum: the delay the buffer steers to.
    let target_at = |now: Nanos, pointer: i64, opt: i64| {
        now + offset - (base + to_nanos(pointer - frame)) - to_nanos(opt)
    };
    let last_arrival = arrivals.last().map_or(now, |a| a.0);
    let limit = (last_arrival - now).as_nanos().max(0) / period.as_nanos()
        + 4 * slots.len() as i64
        + 1000;
    let mut target = Nanos::ZERO;
    for _ in 0..limit {
        while fed < arrivals.len() && arrivals[fed].0 <= now {
            jb.put(arrivals[fed].1);
            fed += 1;
        }
        let got = jb.get(frame);
        target = target_at(now, jb.pointer(), jb.last_opt);
        match got {
            Got::Idle => {
                if fed == arrivals.len() {
                    break;
                }
            }
            Got::Ok(i) => {
                if !emitter.played(i, now, target) {
                    jb.stats.replayed += 1;
                    inserted += period;
                }
            }
            Got::Missing(advance) => {
                conceal_before(&mut emitter, &ts, jb.pointer(), now, target);
                if advance < frame {
                    inserted += to_nanos(frame - advance);
                }
            }
            Got::Insertion(_) => inserted += period,
        }
        if config.adjust == Adjust::Miss && !matches!(got, Got::Ok(_) | Got::Idle) {
            let opt = jb.update_delay();
            if opt > 0 {
                removed += to_nanos(opt);
                jb.stats.skipped_ms += to_nanos(opt).as_millis_f64();
                conceal_before(&mut emitter, &ts, jb.pointer(), now, target);
            }
        }
        let opt = jb.tick();
        if opt > 0 {
            removed += to_nanos(opt);
            jb.stats.skipped_ms += to_nanos(opt).as_millis_f64();
            conceal_before(&mut emitter, &ts, jb.pointer(), now, target);
        }
        if emitter.done() {
            break;
        }
        now += period;
    }
    let unit_ms = 1000.0 / rate as f64;
    let stats = jb.finish_stats(unit_ms);
    let mut run = emitter.finish(now, target, inserted, removed);
    run.detail = Some(PlayoutDetail::Speex(stats));
    run
}

/// Conceals every slot not yet emitted whose timestamp the position has passed.
fn conceal_before(emitter: &mut Emitter<'_>, ts: &[i64], pointer: i64, at: Nanos, target: Nanos) {
    let end = ts.partition_point(|&t| t < pointer);
    let start = emitter.cursor();
    if end > start {
        emitter.concealed(end - 1, at, target);
    }
}

#[cfg(test)]
mod tests {
    use jitterlab_capture::decode::Sample;

    use super::*;
    use crate::Policy;
    use crate::playout::{PlayoutEvent, summarize};

    /// `testjitter.c`'s packets: timestamp `10·i`, span 10.
    fn testjitter_packets(n: usize) -> (Vec<i64>, Vec<i64>) {
        ((0..n as i64).map(|i| i * 10).collect(), vec![10; n])
    }

    /// speexdsp `libspeexdsp/testjitter.c`: `jitterFill` puts packet `i` and gets 10 units,
    /// 100 times: every get is `OK` with timestamp `10·i`. Then the "frozen sender": 100
    /// gets with nothing put, then packet 100: the buffer resynchronises on it (`OK`,
    /// jitter 0), by the reset after more than 20 gets without a packet.
    #[test]
    fn testjitter_fill_then_frozen_sender_resynchronises() {
        let (ts, span) = testjitter_packets(101);
        let mut jb = JitterBuffer::new(&ts, &span, Params::init(10));
        for (i, &t) in ts.iter().enumerate().take(100) {
            jb.put(i);
            assert_eq!(jb.get(10), Got::Ok(i), "fill iteration {i}");
            assert_eq!(t, i as i64 * 10);
            jb.tick();
        }
        assert_eq!(jb.stats.ok, 100);
        for _ in 0..100 {
            assert!(matches!(jb.get(10), Got::Missing(_) | Got::Insertion(_)));
            jb.tick();
        }
        jb.put(100);
        assert_eq!(jb.stats.resets, 1, "more than 20 misses reset the buffer");
        assert_eq!(jb.get(10), Got::Ok(100), "frozen sender resynchronise");
        assert_eq!(jb.pointer() - span[100] - 100 * 10, 0, "jitter 0");
    }

    /// `compute_opt_delay` by hand: 39 packets arrived 20 units early and one 10 late, delay
    /// step 10, 40 packets seen. Candidates: −10 (cost 10, nothing late) and 20 (cost −20 +
    /// `late_factor`·1). `late_cost` 4 gives `late_factor` 4·100/40 = 10, so 20 wins (cost
    /// −10): shrink by 20 and accept one late packet in 40. `late_cost` 40 gives 100, so −10
    /// wins: grow by 10 so that none is late.
    #[test]
    fn the_optimiser_trades_delay_against_late_packets() {
        let (ts, span) = testjitter_packets(1);
        for (late_cost, want) in [(4, 20), (40, -10)] {
            let mut jb = JitterBuffer::new(
                &ts,
                &span,
                Params {
                    late_cost,
                    ..Params::init(10)
                },
            );
            for _ in 0..39 {
                jb.update_timings(20);
            }
            jb.update_timings(-10);
            assert_eq!(jb.compute_opt_delay(), want, "late_cost {late_cost}");
        }
        // Fewer than TOP_DELAY packets seen: never shrink.
        let mut jb = JitterBuffer::new(&ts, &span, Params { late_cost: 4, ..Params::init(10) });
        for _ in 0..10 {
            jb.update_timings(20);
        }
        assert_eq!(jb.compute_opt_delay(), 0);
        // The automatic trade-off after a reset (32000) makes any late packet too costly.
        let mut jb = JitterBuffer::new(&ts, &span, Params::init(10));
        for _ in 0..39 {
            jb.update_timings(20);
        }
        jb.update_timings(-10);
        assert_eq!(jb.compute_opt_delay(), -10);
        // ... and then becomes 1 + (20 − (−10)) / 40 = 1.
        assert_eq!(jb.auto_tradeoff, 1);
    }

    /// The window: 100·40/max_late_rate packets in three sub-windows; the oldest sub-window
    /// is dropped when the newest fills.
    #[test]
    fn timings_rotate_over_three_sub_windows() {
        let (ts, span) = testjitter_packets(1);
        let mut jb = JitterBuffer::new(&ts, &span, Params::init(10));
        assert_eq!((jb.window_size, jb.subwindow_size), (1000, 333));
        // 333 early timings, then 2·333 more at 0: the first sub-window is still counted ...
        for _ in 0..333 {
            jb.update_timings(50);
        }
        for _ in 0..666 {
            jb.update_timings(0);
        }
        let total: i32 = jb.tb.iter().map(|t| t.curr_count).sum();
        assert_eq!(total, 999);
        // ... and the next timing drops it.
        jb.update_timings(0);
        let total: i32 = jb.tb.iter().map(|t| t.curr_count).sum();
        assert_eq!(total, 667);
        assert!(jb.tb.iter().all(|t| t.timing[..t.filled].iter().all(|&x| x == 0)));
    }

    fn stream(arrivals_ms: &[(i64, f64)]) -> Vec<Sample> {
        let mut v: Vec<Sample> = arrivals_ms
            .iter()
            .map(|&(seq, at)| {
                Sample::new(0, seq, Nanos::from_millis(seq * 20), Nanos::from_millis_f64(at))
            })
            .collect();
        v.sort_by_key(|s| s.arrival);
        v
    }

    fn run(samples: &[Sample], policy: &str) -> PlayoutRun {
        let policy: Policy = policy.parse().unwrap();
        policy
            .playout(&PlayoutStream::plain(samples, Nanos::ZERO))
            .unwrap()
    }

    fn stats(run: &PlayoutRun) -> SpeexStats {
        match run.detail {
            Some(PlayoutDetail::Speex(s)) => s,
            ref other => panic!("no speex detail: {other:?}"),
        }
    }

    #[test]
    fn a_steady_stream_plays_every_frame_in_order_at_one_frame_a_period() {
        let samples = stream(&(0..200).map(|i| (i, i as f64 * 20.0 + 5.0)).collect::<Vec<_>>());
        let run = run(&samples, "speex");
        let s = summarize(&run.events);
        assert_eq!((s.frames, s.played), (200, 200), "{s:?}");
        let at: Vec<Nanos> = run
            .events
            .iter()
            .map(|e| match *e {
                PlayoutEvent::Played { at, .. } | PlayoutEvent::Concealed { at, .. } => at,
            })
            .collect();
        assert!(at.windows(2).all(|w| w[1] - w[0] == Nanos::from_millis(20)));
        // Played half a period after arrival: 5 + 10 ms after sending.
        assert_eq!(at[0], Nanos::from_millis(15));
        let st = stats(&run);
        assert_eq!((st.ok, st.missing, st.insertion, st.late), (200, 0, 0, 0));
        assert_eq!(run.inserted, Nanos::ZERO);
    }

    /// Jitter up to 60 ms: the first late frames make the optimiser insert frames to grow the
    /// delay (two frames here), and no frame is late after that.
    #[test]
    fn jitter_grows_the_delay_by_insertion_and_late_frames_fall() {
        let mut rng = 11u64;
        let arrivals: Vec<(i64, f64)> = (0..1500)
            .map(|i| {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let jitter = ((rng >> 33) % 60) as f64;
                (i, i as f64 * 20.0 + 5.0 + jitter)
            })
            .collect();
        let samples = stream(&arrivals);
        let run = run(&samples, "speex");
        let st = stats(&run);
        assert!(st.insertion > 0 && run.inserted > Nanos::ZERO, "{st:?}");
        let late_in = |range: std::ops::Range<usize>| {
            run.events[range]
                .iter()
                .filter(|e| matches!(e, PlayoutEvent::Concealed { .. }))
                .count()
        };
        let (first, rest) = (late_in(0..100), late_in(100..1500));
        assert!(first > 0, "first two seconds: {first} concealed");
        assert_eq!(rest, 0, "after learning: {rest} concealed");
        assert_eq!(run.events.len(), 1500);
        // The target is the delay it steers to: above the 5 ms transit once grown.
        // Two insertions of one frame each: the delay steered to grew by 40 ms.
        assert_eq!(st.insertion, 2, "{st:?}");
        let grown = run.target(1400).unwrap() - run.target(0).unwrap();
        assert_eq!(grown, Nanos::from_millis(40));
    }

    /// After a jittery minute the network calms: the buffer shrinks (skips media) instead of
    /// keeping the delay it grew.
    #[test]
    fn calm_after_jitter_shrinks_the_delay() {
        let mut rng = 5u64;
        let arrivals: Vec<(i64, f64)> = (0..3000)
            .map(|i| {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let jitter = if i < 1000 { ((rng >> 33) % 80) as f64 } else { 0.0 };
                (i, i as f64 * 20.0 + 5.0 + jitter)
            })
            .collect();
        let run = run(&stream(&arrivals), "speex");
        let st = stats(&run);
        assert!(st.shrink > 0 && run.removed > Nanos::ZERO, "{st:?}");
        let (grown, settled) = (run.target(990).unwrap(), run.target(2990).unwrap());
        assert!(settled < grown, "target {grown} then {settled}");
    }

    /// A 30-frame outage whose packets arrive together afterwards: more than 20 gets without
    /// a packet reset the buffer, which syncs to the oldest packet held and plays on.
    #[test]
    fn a_long_outage_resets_and_resyncs() {
        let arrivals: Vec<(i64, f64)> = (0..300)
            .map(|i| {
                let at = if (100..130).contains(&i) { 130.0 * 20.0 + 5.0 } else { i as f64 * 20.0 + 5.0 };
                (i, at)
            })
            .collect();
        let run = run(&stream(&arrivals), "speex");
        let st = stats(&run);
        assert_eq!(st.resets, 1, "{st:?}");
        // The 30 held-back frames play again after their slots were concealed ...
        assert_eq!(st.replayed, 30, "{st:?}");
        // ... and once 40 timings are in, the 600 ms the resync added are skipped at once.
        assert_eq!((st.shrink, st.skipped_ms), (1, 600.0), "{st:?}");
        let s = summarize(&run.events);
        assert_eq!((s.concealed, s.played, s.max_consecutive_concealed), (60, 240, 30), "{s:?}");
        assert!(matches!(run.events[299], PlayoutEvent::Played { seq: 299, .. }));
    }

    #[test]
    fn policy_strings_round_trip_and_bad_values_name_the_key() {
        let p: Policy = "speex".parse().unwrap();
        assert_eq!(
            p.to_string(),
            "speex:ptime=auto,clock=auto,step=auto,concealment_size=auto,margin=0ms,\
             late_cost=auto,max_late_rate=4,adjust=tick,phase=0.5"
        );
        let text = "speex:ptime=30ms,clock=16000,step=10ms,late_cost=20ms,max_late_rate=10,adjust=miss,phase=0";
        let p: Policy = text.parse().unwrap();
        assert_eq!(p.to_string().parse::<Policy>().unwrap(), p);
        assert!(p.playout_only());
        let msg = |s: &str| s.parse::<Policy>().unwrap_err().to_string();
        assert!(msg("speex:max_late_rate=0").contains("max_late_rate"));
        assert!(msg("speex:adjust=often").contains("tick, miss"));
        assert!(msg("speex:phase=1").contains("phase"));
        assert!(msg("speex:clock=0").contains("clock"));
    }

    /// `adjust=miss` (Mumble) re-optimises only after a get without a packet: on a steady
    /// stream it never shrinks or grows.
    #[test]
    fn adjust_on_miss_leaves_a_steady_stream_alone() {
        let samples = stream(&(0..300).map(|i| (i, i as f64 * 20.0 + 5.0)).collect::<Vec<_>>());
        let run = run(&samples, "speex:adjust=miss");
        let st = stats(&run);
        assert_eq!((st.ok, st.shrink, st.insertion), (300, 0, 0));
    }
}
