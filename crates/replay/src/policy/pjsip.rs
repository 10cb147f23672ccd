//! `pjsip`: PJSIP's adaptive jitter buffer (`pjmedia/src/pjmedia/jbuf.c`, pjproject
//! 2.17-203-gb7317ffca; defaults from `pjmedia/include/pjmedia/config.h` and the stream's
//! set-up in `pjmedia/src/pjmedia/stream.c`), played by the sound device's `get_frame` once
//! per frame period (anchors-2.md §3.5). PJSIP is GPL: this is a description in jitterlab's
//! own words, not a port.
//!
//! What follows the origin:
//! - **The frame list.** A ring of `max_count` frames indexed by frame number (the stream
//!   puts frame `timestamp / samples per frame`): a frame behind the head by fewer than 100
//!   (`MAX_MISORDER`) is too late and dropped; further behind, or more than 3000 ahead
//!   (`MAX_DROPOUT`), the list resets; beyond the capacity the oldest frames are removed to
//!   make room; a frame already held is a duplicate. An empty list takes any frame as its
//!   new origin, so a silence leaves no holes.
//! - **Burst level.** Each run of puts between gets is a burst; it counts only in the
//!   processing state, after 10 (`INIT_CYCLE`) put/get switches, and not when longer than
//!   `max(1000 ms / ptime, 3/4 max_count)` frames. A longer burst than the effective level
//!   raises the level at once to the recent maximum (at most 4/5 `max_count`); 20
//!   (`STABLE_HISTORY_LIMIT`) shorter ones in a row lower it by `max(1, (level − recent
//!   maximum) / 3)`. With a non-zero initial prefetch, the prefetch follows the level within
//!   `min_prefetch..=max_prefetch`.
//! - **Discard** (after each put, in the processing state). *Progressive* (the default):
//!   when the list holds more than the burst level (`max(effective, current)`) and the
//!   minimum delay, one frame is marked discarded every `T / excess / ptime` frames put (at
//!   least every 200 ms, `PJMEDIA_JBUF_DISC_MIN_GAP`), where `T` runs from 2000 ms at burst
//!   level 1 to 10000 ms at 100 (`PRO_DISC_T1/T2`, `MIN/MAX_BURST`). A discarded frame is
//!   skipped and the frame after it is returned as missing (ticket #1188, so that the
//!   concealment joins the signal). *Static*: after any put or get, when the list holds at
//!   least one frame more than twice the burst level, the head frame is removed, at most
//!   once per 200 ms of frames.
//! - **`get_frame`**: while prefetching (the list fills to `prefetch` after running empty),
//!   a zero-prefetch frame; with fewer frames than the minimum delay, missing; else the head
//!   frame (normal, or missing for a hole), or zero-empty when the list is empty (which
//!   starts prefetching again when the prefetch is non-zero).
//!
//! Defaults as a pjmedia stream sets them with `jb_init`, `jb_min_pre`, `jb_max_pre`,
//! `jb_max` all −1: `max_count` = 500 ms of frames (rounded up), `prefetch` 0 (no
//! prefetching, and the prefetch does not follow the burst level), `min_prefetch` 1,
//! `max_prefetch` 4/5 `max_count`, progressive discard, no minimum delay. `mode=fixed` is
//! `pjmedia_jbuf_set_fixed(prefetch)`: prefetch fixed and no discard.
//!
//! The player ([`crate::playout::player`]): one `get_frame` per frame period; frames are put
//! when they arrive, numbered by their send time in frame periods from the first slot. The
//! stream's soft start (`PJMEDIA_STREAM_SOFT_START`, a reset at the first `get_frame`) falls
//! before the first packet and changes nothing. Zero-prefetch and zero-empty frames are
//! concealment the stream did not ask for (`inserted`, once the first frame has played); a discarded frame and frames removed
//! to make room are media skipped (`removed`).
//!
//! Where jitterlab departs: settings that `pjmedia_jbuf_set_adaptive` would refuse (a
//! prefetch above `max_prefetch`, `max_prefetch` above `max_count`) are clamped instead; the
//! frame number does not wrap. The per-event target is the level the discard steers to
//! (the effective burst level and minimum delay for progressive, twice the level for static,
//! the prefetch without discard) in frames, as a delay. [`PjsipStats`] has the fields of
//! `pjmedia_jb_state`; PJSIP's own `discard` does not count progressive discards (they are
//! in `progressive_discard`), and its `lost` counts the frames returned as missing.

use std::sync::OnceLock;

use jitterlab_capture::Nanos;
use serde::Serialize;

use super::keys::{auto_duration, format_auto, key, number, print, print_duration};
use super::{DelayModel, Key, KeyError, Preset, duration_key};
use crate::playout::player::{self, Emitter};
use crate::playout::{PlayoutDetail, PlayoutRun, PlayoutStream};

/// `MAX_BURST_MSEC`.
const MAX_BURST_MSEC: i64 = 1000;
/// `INIT_CYCLE`.
const INIT_CYCLE: i64 = 10;
/// `STABLE_HISTORY_LIMIT`.
const STABLE_HISTORY_LIMIT: i64 = 20;
/// `PJMEDIA_JBUF_DISC_MIN_GAP`, ms.
const DISC_MIN_GAP_MS: i64 = 200;
/// `PJMEDIA_JBUF_PRO_DISC_MIN_BURST`, `..._MAX_BURST` (frames), `..._T1`, `..._T2` (ms).
const PRO_DISC: (i64, i64, i64, i64) = (1, 100, 2000, 10_000);
/// `MAX_MISORDER`, `MAX_DROPOUT`.
const MAX_MISORDER: i64 = 100;
const MAX_DROPOUT: i64 = 3000;
/// `MAX_FRAME_INDEX`.
const MAX_FRAME_INDEX: i64 = 0xFFFF_FFFF / 9000;
/// `INVALID_OFFSET`.
const INVALID_OFFSET: i64 = -9999;
/// `PJMEDIA_JB_DEFAULT_INIT_DELAY`, frames.
const DEFAULT_INIT_DELAY: i64 = 15;

/// How the buffer shrinks (`pjmedia_jb_discard_algo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discard {
    /// `PJMEDIA_JB_DISCARD_PROGRESSIVE` (the default).
    Progressive,
    /// `PJMEDIA_JB_DISCARD_STATIC`.
    Static,
    /// `PJMEDIA_JB_DISCARD_NONE`.
    None,
}

impl std::fmt::Display for Discard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Progressive => "progressive",
            Self::Static => "static",
            Self::None => "none",
        })
    }
}

/// Adaptive (`pjmedia_jbuf_set_adaptive`) or fixed (`pjmedia_jbuf_set_fixed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The prefetch follows the burst level (when non-zero) and the discard shrinks.
    Adaptive,
    /// `prefetch` fixed, no discard.
    Fixed,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Adaptive => "adaptive",
            Self::Fixed => "fixed",
        })
    }
}

/// PJSIP's jitter-buffer settings, in frames as `pjmedia_jbuf` takes them; `None` is `auto`.
#[derive(Clone, Debug, PartialEq)]
pub struct PjsipConfig {
    /// The frame period (the codec's ptime); `auto`: the stream's usual frame duration.
    pub ptime: Option<Nanos>,
    /// Capacity in frames; `auto`: 500 ms of frames, rounded up (`jb_max` −1).
    pub max_count: Option<u32>,
    /// Initial prefetch in frames (`jb_init`; 0: no prefetching).
    pub prefetch: u32,
    /// Least prefetch (`jb_min_pre`).
    pub min_prefetch: u32,
    /// Largest prefetch; `auto`: 4/5 of `max_count` (`jb_max_pre` −1).
    pub max_prefetch: Option<u32>,
    /// Adaptive or fixed.
    pub mode: Mode,
    /// The discard algorithm (adaptive mode).
    pub discard: Discard,
    /// `pjmedia_jbuf_set_min_delay` (rounded up to frames, at most half the capacity).
    pub min_delay: Nanos,
    /// Where the player's clock falls after the first arrival, in frame periods.
    pub phase: f64,
}

impl Default for PjsipConfig {
    fn default() -> Self {
        Self {
            ptime: None,
            max_count: None,
            prefetch: 0,
            min_prefetch: 1,
            max_prefetch: None,
            mode: Mode::Adaptive,
            discard: Discard::Progressive,
            min_delay: Nanos::ZERO,
            phase: 0.5,
        }
    }
}

fn frames(v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(n) if n <= 10_000 => Ok(n),
        _ => Err(format!("{v} is out of range (allowed: 0..=10000 frames)")),
    }
}

fn auto_frames(v: &str, min: u32) -> Result<Option<u32>, String> {
    if v == "auto" {
        return Ok(None);
    }
    match v.parse::<u32>() {
        Ok(n) if (min..=10_000).contains(&n) => Ok(Some(n)),
        _ => Err(format!("{v} is out of range (allowed: auto, {min}..=10000 frames)")),
    }
}

fn print_auto(n: &Option<u32>) -> String {
    n.map_or_else(|| "auto".to_owned(), |n| n.to_string())
}

fn discard(v: &str) -> Result<Discard, String> {
    match v {
        "progressive" => Ok(Discard::Progressive),
        "static" => Ok(Discard::Static),
        "none" => Ok(Discard::None),
        _ => Err(format!("'{v}' (allowed: progressive, static, none)")),
    }
}

fn mode(v: &str) -> Result<Mode, String> {
    match v {
        "adaptive" => Ok(Mode::Adaptive),
        "fixed" => Ok(Mode::Fixed),
        _ => Err(format!("'{v}' (allowed: adaptive, fixed)")),
    }
}

impl Preset for PjsipConfig {
    const NAME: &'static str = "pjsip";
    const PLAYOUT_ONLY: bool = true;
    const MEDIA: Option<jitterlab_capture::decode::MediaKind> =
        Some(jitterlab_capture::decode::MediaKind::Audio);
    const PLAYOUT_AXES: &'static str = "discard = [\"progressive\", \"static\"]\nprefetch = [0, 2, 4]\nmin_delay = [\"0ms\", \"40ms\", \"80ms\"]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<PjsipConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "ptime", |c| c.ptime, |d: &Option<Nanos>| format_auto(*d), |v| {
                    auto_duration(v, Nanos::from_millis(1))
                }),
                key!(Self, "max_count", |c| c.max_count, print_auto, |v| {
                    auto_frames(v, 1)
                }),
                key!(Self, "prefetch", |c| c.prefetch, print, frames),
                key!(Self, "min_prefetch", |c| c.min_prefetch, print, frames),
                key!(Self, "max_prefetch", |c| c.max_prefetch, print_auto, |v| {
                    auto_frames(v, 0)
                }),
                key!(Self, "mode", |c| c.mode, print, mode),
                key!(Self, "discard", |c| c.discard, print, discard),
                key!(Self, "min_delay", |c| c.min_delay, print_duration, |v| {
                    duration_key(v, Nanos::ZERO)
                }),
                key!(Self, "phase", |c| c.phase, print, |v| {
                    number(v, |x| (0.0..1.0).contains(&x), "0 to below 1")
                }),
            ]
        })
    }

    fn validate(&self) -> Result<(), KeyError> {
        if let Some(max) = self.max_prefetch {
            if self.min_prefetch > max {
                return Err(KeyError {
                    key: "min_prefetch",
                    reason: format!("{} is above max_prefetch {max}", self.min_prefetch),
                });
            }
            if self.prefetch > max {
                return Err(KeyError {
                    key: "prefetch",
                    reason: format!("{} is above max_prefetch {max}", self.prefetch),
                });
            }
        }
        if let (Some(max), Some(count)) = (self.max_prefetch, self.max_count)
            && max > count
        {
                return Err(KeyError {
                    key: "max_prefetch",
                    reason: format!("{max} is above max_count {count}"),
                });
        }
        Ok(())
    }

    fn max_delay(&self) -> Nanos {
        let ptime = self.ptime.unwrap_or(Nanos::from_millis(20));
        let count = self
            .max_count
            .map_or_else(|| {
                let ms = (ptime.as_nanos() / 1_000_000).max(1);
                (500 + ms - 1) / ms
            }, i64::from);
        ptime * count
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }


    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        Some(playout_pjsip(stream, self))
    }
}

/// `pjmedia_jb_state` at the end of a run, and what jitterlab counted beside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PjsipStats {
    /// Least prefetch, frames.
    pub min_prefetch: u32,
    /// Largest prefetch, frames.
    pub max_prefetch: u32,
    /// Capacity, frames.
    pub max_count: u32,
    /// Minimum delay set, frames (`min_delay_set`).
    pub min_delay_set: u32,
    /// Effective burst level, frames (`burst`).
    pub burst: u32,
    /// Current prefetch, frames.
    pub prefetch: u32,
    /// Frames held at the end (`size`).
    pub size: u32,
    /// Delay at the first get after puts, ms: mean, least, largest, deviation.
    pub avg_delay: u32,
    /// See `avg_delay`.
    pub min_delay: u32,
    /// See `avg_delay`.
    pub max_delay: u32,
    /// See `avg_delay`.
    pub dev_delay: u32,
    /// Mean burst level, frames.
    pub avg_burst: u32,
    /// Frames returned as missing (`lost`).
    pub lost: u32,
    /// Frames dropped on put (too late, duplicate) or removed (full buffer, static discard).
    pub discard: u32,
    /// Zero-prefetch and zero-empty frames returned (`empty`).
    pub empty: u32,
    /// Frames marked discarded by progressive discard (not in PJSIP's `discard`).
    pub progressive_discard: u32,
    /// `get_frame` calls.
    pub gets: u64,
    /// Normal frames returned.
    pub normal: u64,
    /// Zero-prefetch frames returned.
    pub zero_prefetch: u64,
    /// Zero-empty frames returned.
    pub zero_empty: u64,
    /// Frames too late on put.
    pub too_late: u64,
    /// Duplicate frames on put.
    pub duplicates: u64,
    /// Frames removed to make room.
    pub full: u64,
    /// Frame-list resets on a far jump.
    pub resets: u64,
}

/// A frame's kind in the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Missing,
    Normal,
    Discarded,
}

/// What one `get_frame` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// `PJMEDIA_JB_NORMAL_FRAME`: the frame numbered `.0`, put as slot `.1`.
    Normal(i64, usize),
    /// `PJMEDIA_JB_MISSING_FRAME` for the frame numbered `.0` (consumed).
    Missing(i64),
    /// `PJMEDIA_JB_MISSING_FRAME` with nothing consumed (below the minimum delay).
    Held,
    /// `PJMEDIA_JB_ZERO_PREFETCH_FRAME`.
    ZeroPrefetch,
    /// `PJMEDIA_JB_ZERO_EMPTY_FRAME`.
    ZeroEmpty,
}

/// What `put_frame` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Put {
    /// Stored.
    Stored,
    /// `PJ_ETOOSMALL`: too late.
    TooLate,
    /// `PJ_EEXISTS`: a duplicate.
    Duplicate,
}

/// `pj_math_stat`.
#[derive(Clone, Copy, Debug, Default)]
struct Stat {
    n: u64,
    min: i64,
    max: i64,
    mean: f64,
    m2: f64,
}

impl Stat {
    fn update(&mut self, v: i64) {
        if self.n == 0 {
            (self.min, self.max) = (v, v);
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.n += 1;
        let delta = v as f64 - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (v as f64 - self.mean);
    }

    fn mean(&self) -> u32 {
        (self.mean + 0.5).max(0.0) as u32
    }

    fn dev(&self) -> u32 {
        if self.n == 0 {
            0
        } else {
            (self.m2 / self.n as f64).sqrt() as u32
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Init,
    Put,
    Get,
}

/// `pjmedia_jbuf`: the frame list and its burst-level and discard state.
#[derive(Debug)]
pub(crate) struct Jbuf {
    ptime_ms: i64,
    max_count: i64,
    init_prefetch: i64,
    min_prefetch: i64,
    max_prefetch: i64,
    max_burst: i64,
    min_shrink_gap: i64,
    discard_algo: Discard,
    min_delay: i64,
    kind: Vec<Kind>,
    slot: Vec<usize>,
    head: usize,
    size: i64,
    discarded_num: i64,
    origin: i64,
    level: i64,
    max_hist_level: i64,
    stable_hist: i64,
    last_op: Op,
    eff_level: i64,
    prefetch: i64,
    prefetching: bool,
    processing: bool,
    init_cycle_cnt: i64,
    discard_ref: i64,
    discard_dist: i64,
    delay: Stat,
    burst: Stat,
    lost: u32,
    discard: u32,
    empty: u32,
    /// Frames the last `get_frame` skipped as discarded.
    pub(crate) skipped: i64,
    /// Frames removed from the head by the last put or discard.
    pub(crate) removed: i64,
    stats: PjsipStats,
}

impl Jbuf {
    /// `pjmedia_jbuf_create(ptime, max_count)` then `pjmedia_jbuf_reset`.
    pub(crate) fn new(ptime_ms: i64, max_count: i64) -> Self {
        let ptime_ms = ptime_ms.max(1);
        let max_count = max_count.max(1);
        let mut jb = Self {
            ptime_ms,
            max_count,
            init_prefetch: 0,
            min_prefetch: 0,
            max_prefetch: max_count * 4 / 5,
            max_burst: (MAX_BURST_MSEC / ptime_ms).max(max_count * 3 / 4),
            min_shrink_gap: DISC_MIN_GAP_MS / ptime_ms,
            discard_algo: Discard::Progressive,
            min_delay: 0,
            kind: vec![Kind::Missing; max_count as usize],
            slot: vec![0; max_count as usize],
            head: 0,
            size: 0,
            discarded_num: 0,
            origin: INVALID_OFFSET,
            level: 0,
            max_hist_level: 0,
            stable_hist: 0,
            last_op: Op::Init,
            eff_level: 0,
            prefetch: DEFAULT_INIT_DELAY.min(max_count * 4 / 5),
            prefetching: false,
            processing: false,
            init_cycle_cnt: 0,
            discard_ref: 0,
            discard_dist: 0,
            delay: Stat::default(),
            burst: Stat::default(),
            lost: 0,
            discard: 0,
            empty: 0,
            skipped: 0,
            removed: 0,
            stats: PjsipStats::default(),
        };
        jb.reset();
        jb
    }

    /// `pjmedia_jbuf_set_adaptive`.
    pub(crate) fn set_adaptive(&mut self, prefetch: i64, min: i64, max: i64) {
        self.prefetch = prefetch;
        self.init_prefetch = prefetch;
        self.min_prefetch = min;
        self.max_prefetch = max;
    }

    /// `pjmedia_jbuf_set_fixed`.
    pub(crate) fn set_fixed(&mut self, prefetch: i64) {
        self.set_adaptive(prefetch, prefetch, prefetch);
        self.discard_algo = Discard::None;
    }

    /// `pjmedia_jbuf_set_discard`.
    pub(crate) fn set_discard(&mut self, algo: Discard) {
        self.discard_algo = algo;
    }

    /// `pjmedia_jbuf_set_min_delay`, ms.
    pub(crate) fn set_min_delay(&mut self, ms: i64) {
        self.min_delay = (ms.max(0) + self.ptime_ms - 1) / self.ptime_ms;
        self.min_delay = self.min_delay.min(self.max_count / 2);
    }

    /// `pjmedia_jbuf_reset`.
    pub(crate) fn reset(&mut self) {
        self.level = 0;
        self.last_op = Op::Init;
        self.stable_hist = 0;
        self.processing = false;
        self.init_cycle_cnt = 0;
        self.max_hist_level = 0;
        self.prefetching = self.prefetch != 0;
        self.discard_dist = 0;
        self.list_reset();
    }

    fn list_reset(&mut self) {
        self.head = 0;
        self.origin = INVALID_OFFSET;
        self.size = 0;
        self.discarded_num = 0;
        self.kind.fill(Kind::Missing);
    }

    fn eff_size(&self) -> i64 {
        self.size - self.discarded_num
    }

    fn pos(&self, distance: i64) -> usize {
        (self.head + distance as usize) % self.max_count as usize
    }

    fn remove_head(&mut self, count: i64) -> i64 {
        let count = count.min(self.size).max(0);
        for k in 0..count {
            let p = self.pos(k);
            if self.kind[p] == Kind::Discarded {
                self.discarded_num -= 1;
            }
            self.kind[p] = Kind::Missing;
        }
        self.origin += count;
        self.head = self.pos(count);
        self.size -= count;
        count
    }

    /// `jb_framelist_put_at`: `Err(true)` is `PJ_ETOOMANY` (no room).
    fn put_at(&mut self, index: i64, slot: usize) -> Result<Put, bool> {
        let mut distance = index - self.origin;
        if distance < 0 {
            if self.origin - index < MAX_MISORDER {
                return Ok(Put::TooLate);
            } else if self.origin + self.size >= MAX_FRAME_INDEX {
                self.origin = index - self.size;
                distance = self.size;
            } else {
                self.list_reset();
                self.stats.resets += 1;
                self.origin = index;
                distance = 0;
            }
        }
        if self.size == 0 {
            self.origin = index;
            distance = 0;
        }
        if distance >= self.max_count {
            if distance > MAX_DROPOUT {
                self.list_reset();
                self.stats.resets += 1;
                self.origin = index;
                distance = 0;
            } else {
                return Err(true);
            }
        }
        let p = self.pos(distance);
        if self.kind[p] != Kind::Missing {
            return Ok(Put::Duplicate);
        }
        self.kind[p] = Kind::Normal;
        self.slot[p] = slot;
        if self.origin + self.size <= index {
            self.size = distance + 1;
        }
        Ok(Put::Stored)
    }

    /// `pjmedia_jbuf_put_frame` of frame number `index` (slot `slot`).
    pub(crate) fn put(&mut self, index: i64, slot: usize) -> Put {
        let cur_size = self.eff_size();
        self.removed = 0;
        let mut status = self.put_at(index, slot);
        while status == Err(true) {
            let distance = (index - self.origin) - self.max_count + 1;
            let removed = self.remove_head(distance);
            self.removed += removed;
            self.stats.full += removed as u64;
            self.discard += removed as u32;
            status = self.put_at(index, slot);
            if removed == 0 {
                break;
            }
        }
        let new_size = self.eff_size();
        match status {
            Ok(Put::Stored) => {
                if self.prefetching && new_size >= self.prefetch {
                    self.prefetching = false;
                }
                self.level += if new_size > cur_size {
                    new_size - cur_size
                } else {
                    1
                };
                self.update(Op::Put);
                Put::Stored
            }
            Ok(other) => {
                self.discard += 1;
                match other {
                    Put::TooLate => self.stats.too_late += 1,
                    _ => self.stats.duplicates += 1,
                }
                other
            }
            Err(_) => {
                self.discard += 1;
                Put::TooLate
            }
        }
    }

    /// `pjmedia_jbuf_get_frame`.
    pub(crate) fn get(&mut self) -> Frame {
        self.skipped = 0;
        self.removed = 0;
        self.stats.gets += 1;
        let frame = if self.prefetching {
            self.empty += 1;
            self.stats.zero_prefetch += 1;
            Frame::ZeroPrefetch
        } else if self.eff_size() < self.min_delay {
            Frame::Held
        } else if self.size > 0 && {
            while self.size > 0 && self.kind[self.head] == Kind::Discarded {
                self.remove_head(1);
                self.skipped += 1;
            }
            self.size > 0
        } {
            let (kind, slot, index) = (self.kind[self.head], self.slot[self.head], self.origin);
            self.kind[self.head] = Kind::Missing;
            self.origin += 1;
            self.head = self.pos(1);
            self.size -= 1;
            let frame = if kind == Kind::Normal && self.skipped == 0 {
                self.stats.normal += 1;
                Frame::Normal(index, slot)
            } else {
                self.lost += 1;
                Frame::Missing(index)
            };
            if self.last_op == Op::Put {
                let size = self.eff_size() + 1;
                self.delay.update(size * self.ptime_ms);
            }
            frame
        } else {
            if self.prefetch != 0 {
                self.prefetching = true;
            }
            self.empty += 1;
            self.stats.zero_empty += 1;
            Frame::ZeroEmpty
        };
        self.level += 1;
        self.update(Op::Get);
        frame
    }

    /// `jbuf_update`.
    fn update(&mut self, op: Op) {
        if self.last_op != op {
            self.last_op = op;
            if !self.processing {
                self.init_cycle_cnt += 1;
                if self.init_cycle_cnt >= INIT_CYCLE && op == Op::Get {
                    self.processing = true;
                    self.level = self.level.min(self.max_burst);
                } else {
                    self.level = 0;
                    return;
                }
            }
            if op == Op::Get && self.level <= self.max_burst {
                self.calculate_jitter();
            }
            self.level = 0;
        }
        if self.processing {
            match self.discard_algo {
                Discard::Progressive => self.discard_progressive(),
                Discard::Static => self.discard_static(),
                Discard::None => {}
            }
        }
    }

    /// `jbuf_calculate_jitter`.
    fn calculate_jitter(&mut self) {
        self.burst.update(self.level);
        self.max_hist_level = self.max_hist_level.max(self.level);
        if self.level < self.eff_level {
            self.stable_hist += 1;
            if self.stable_hist > STABLE_HISTORY_LIMIT {
                let diff = ((self.eff_level - self.max_hist_level) / 3).max(1);
                self.eff_level -= diff;
                if self.init_prefetch != 0 {
                    self.prefetch = self.eff_level.max(self.min_prefetch).min(self.max_prefetch);
                }
                self.max_hist_level = 0;
                self.stable_hist = 0;
            }
        } else if self.level > self.eff_level {
            self.eff_level = self.max_hist_level.min(self.max_count * 4 / 5);
            if self.init_prefetch != 0 {
                self.prefetch = self.eff_level.min(self.max_prefetch).max(self.min_prefetch);
            }
            self.stable_hist = 0;
        } else {
            self.stable_hist = 0;
        }
    }

    /// `jbuf_discard_static`.
    fn discard_static(&mut self) {
        let burst_level = self.eff_level.max(self.level);
        let cur_size = self.eff_size();
        if cur_size <= self.min_delay {
            return;
        }
        if cur_size - burst_level * 2 >= 1 {
            if self.origin < self.discard_ref {
                self.discard_ref = self.origin;
            }
            if self.origin - self.discard_ref >= self.min_shrink_gap {
                let removed = self.remove_head(1);
                self.removed += removed;
                self.discard_ref = self.origin;
                self.discard += removed as u32;
            }
        }
    }

    /// `jbuf_discard_progressive`.
    fn discard_progressive(&mut self) {
        if self.last_op != Op::Put {
            return;
        }
        let cur_size = self.eff_size();
        let burst_level = self.eff_level.max(self.level);
        if cur_size <= burst_level || cur_size <= self.min_delay {
            self.discard_dist = 0;
            return;
        }
        let (min_burst, max_burst, t1, t2) = PRO_DISC;
        let t = if burst_level <= min_burst {
            t1
        } else if burst_level >= max_burst {
            t2
        } else {
            t1 + (t2 - t1) * (burst_level - min_burst) / (max_burst - min_burst)
        };
        let overflow = cur_size - burst_level.max(self.min_delay);
        let discard_dist = t / overflow / self.ptime_ms;
        let last_seq = self.origin + self.size - 1;
        if self.discard_dist == 0 || last_seq < self.discard_ref {
            self.discard_ref = last_seq;
        }
        self.discard_dist = self.min_shrink_gap.max(discard_dist);
        if last_seq >= self.discard_ref + self.discard_dist {
            let seq = (self.discard_ref + self.discard_dist).max(self.origin);
            let p = self.pos(seq - self.origin);
            if self.kind[p] != Kind::Discarded {
                self.discarded_num += 1;
            }
            self.kind[p] = Kind::Discarded;
            self.stats.progressive_discard += 1;
            self.discard_ref = seq;
        }
    }

    /// The level the discard steers to, frames.
    pub(crate) fn target_frames(&self) -> i64 {
        match self.discard_algo {
            Discard::Progressive => self.eff_level.max(self.min_delay),
            Discard::Static => (2 * self.eff_level).max(self.min_delay),
            Discard::None => self.prefetch.max(self.min_delay),
        }
    }

    /// Frames held (not discarded).
    pub(crate) fn held(&self) -> i64 {
        self.eff_size()
    }

    /// `pjmedia_jbuf_get_state`, with jitterlab's counters.
    pub(crate) fn state(&self) -> PjsipStats {
        let n = |x: i64| u32::try_from(x.max(0)).unwrap_or(u32::MAX);
        PjsipStats {
            min_prefetch: n(self.min_prefetch),
            max_prefetch: n(self.max_prefetch),
            max_count: n(self.max_count),
            min_delay_set: n(self.min_delay),
            burst: n(self.eff_level),
            prefetch: n(self.prefetch),
            size: n(self.eff_size()),
            avg_delay: self.delay.mean(),
            min_delay: n(self.delay.min),
            max_delay: n(self.delay.max),
            dev_delay: self.delay.dev(),
            avg_burst: self.burst.mean(),
            lost: self.lost,
            discard: self.discard,
            empty: self.empty,
            ..self.stats
        }
    }
}

/// Plays `stream` through PJSIP's jitter buffer configured by `config`.
pub(crate) fn playout_pjsip(stream: &PlayoutStream<'_>, config: &PjsipConfig) -> PlayoutRun {
    let slots = stream.slots();
    let period = player::ptime(stream, config.ptime);
    let Some(mut now) = player::first_call(stream, period, config.phase) else {
        return PlayoutRun::default();
    };
    let ptime_ms = (period.as_nanos() / 1_000_000).max(1);
    let max_count = config
        .max_count
        .map_or_else(|| (500 + ptime_ms - 1) / ptime_ms, i64::from)
        .max(1);
    let mut jb = Jbuf::new(ptime_ms, max_count);
    match config.mode {
        Mode::Adaptive => {
            let max = config
                .max_prefetch
                .map_or((max_count * 4 / 5).max(1), i64::from)
                .min(max_count);
            let prefetch = i64::from(config.prefetch).min(max);
            let min = i64::from(config.min_prefetch).min(max);
            jb.set_adaptive(prefetch, min, max);
            jb.set_discard(config.discard);
        }
        Mode::Fixed => jb.set_fixed(i64::from(config.prefetch).min(max_count)),
    }
    jb.set_min_delay(config.min_delay.as_nanos() / 1_000_000);
    jb.reset();
    let base = slots[0].send;
    let mut fidx: Vec<i64> = Vec::with_capacity(slots.len());
    let mut last = i64::MIN;
    for s in slots {
        let k = ((s.send - base).as_nanos() as f64 / period.as_nanos() as f64).round() as i64;
        let k = k.max(last);
        fidx.push(k);
        last = k;
    }
    let arrivals = player::arrivals(stream);
    let mut emitter = Emitter::new(slots);
    let (mut inserted, mut removed) = (Nanos::ZERO, Nanos::ZERO);
    let mut fed = 0;
    let last_arrival = arrivals.last().map_or(now, |a| a.0);
    let limit = (last_arrival - now).as_nanos().max(0) / period.as_nanos()
        + 2 * slots.len() as i64
        + 1000;
    let mut target = Nanos::ZERO;
    let mut playing = false;
    for _ in 0..limit {
        while fed < arrivals.len() && arrivals[fed].0 <= now {
            let (_, i) = arrivals[fed];
            jb.put(fidx[i], i);
            removed += period * jb.removed;
            fed += 1;
        }
        let frame = jb.get();
        removed += period * (jb.skipped + jb.removed);
        target = period * jb.target_frames();
        match frame {
            Frame::Normal(_, slot) => {
                emitter.played(slot, now, target);
                playing = true;
            }
            Frame::Missing(index) => {
                let end = fidx.partition_point(|&k| k <= index);
                if end > emitter.cursor() {
                    emitter.concealed(end - 1, now, target);
                }
            }
            // Before the first frame the player waits; after it, concealment is inserted.
            Frame::Held | Frame::ZeroPrefetch | Frame::ZeroEmpty if playing => inserted += period,
            Frame::Held | Frame::ZeroPrefetch | Frame::ZeroEmpty => {}
        }
        if emitter.done() || (fed == arrivals.len() && jb.held() == 0) {
            break;
        }
        now += period;
    }
    let stats = jb.state();
    let mut run = emitter.finish(now, target, inserted, removed);
    run.detail = Some(PlayoutDetail::Pjsip(stats));
    run
}

#[cfg(test)]
mod tests {
    use jitterlab_capture::decode::Sample;

    use super::*;
    use crate::Policy;
    use crate::playout::{PlayoutEvent, summarize};

    /// The three 20-event blocks pjproject's `pjmedia/build/Jbtest.dat` builds its random
    /// bursts from.
    const BLOCKS: [(char, &str); 3] = [
        ('A', "PGPGPPGGPPPPGGPGGGPG"),
        ('B', "PGGGGPPPGPPGPPPGGPGG"),
        ('C', "PGPGPPGGPPGGPPPGGGPG"),
    ];

    /// Expands a run-length scenario: `P51` is 51 puts, `(G1 P1)x3` repeats a group, `A`,
    /// `B`, `C` are the blocks.
    fn expand(rle: &str) -> String {
        fn token(t: &str, out: &mut String) {
            if let Some(&(_, block)) = BLOCKS.iter().find(|(c, _)| t.len() == 1 && t.starts_with(*c)) {
                out.push_str(block);
                return;
            }
            let (c, n) = t.split_at(1);
            let n: usize = if n.is_empty() { 1 } else { n.parse().unwrap() };
            out.push_str(&c.repeat(n));
        }
        let mut out = String::new();
        let mut rest = rle.trim();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('(') {
                let (group, after) = r.split_once(')').unwrap();
                let after = after.strip_prefix('x').unwrap();
                let end = after.find(' ').unwrap_or(after.len());
                let n: usize = after[..end].parse().unwrap();
                let mut one = String::new();
                for t in group.split_whitespace() {
                    token(t, &mut one);
                }
                out.push_str(&one.repeat(n));
                rest = after[end..].trim_start();
            } else {
                let end = rest.find(' ').unwrap_or(rest.len());
                token(&rest[..end], &mut out);
                rest = rest[end..].trim_start();
            }
        }
        out
    }

    /// `jbuf_test.c`: a 50-frame buffer of 20 ms frames, reset, then set adaptive or fixed;
    /// `P` puts the next frame, `G` gets, `L` loses one, `R` restarts at 1, `J` jumps 20, `D`
    /// puts the last frame again, `O` puts one at least 10 behind (the origin adds a random
    /// 0..40; every such frame is behind the buffer here).
    fn scenario(mode: (bool, i64, i64, i64), events: &str) -> PjsipStats {
        let mut jb = Jbuf::new(20, 50);
        jb.reset();
        let (adaptive, init, min, max) = mode;
        if adaptive {
            jb.set_adaptive(init, min, max);
        } else {
            jb.set_fixed(init);
        }
        let mut seq: i64 = 1;
        for c in events.chars() {
            match c {
                'G' => {
                    jb.get();
                }
                'P' => {
                    jb.put(seq, 0);
                    seq += 1;
                }
                'L' => seq += 1,
                'R' => seq = 1,
                'J' => seq += 20,
                'D' => {
                    jb.put(seq - 1, 0);
                }
                'O' => {
                    jb.put(seq - 10, 0);
                }
                other => panic!("unknown event {other}"),
            }
        }
        jb.state()
    }

    /// Every session of pjproject's `Jbtest.dat` (run by `pjmedia/src/test/jbuf_test.c`):
    /// its settings, its events (re-derived as runs) and its pass conditions, each the
    /// largest value the session tolerates (`burst`: mean burst level, `delay`: mean delay
    /// in frames, `delay_min`: least delay in frames; −1: no condition).
    #[test]
    fn jbtest_dat_sessions_meet_their_conditions() {
        let adaptive = |max| (true, 0, 0, max);
        #[rustfmt::skip]
        type Session<'a> = (&'a str, (bool, i64, i64, i64), &'a str, [i64; 6]);
        let sessions: &[Session] = &[
            ("Ideal condition", adaptive(10), "(P1 G1)x60", [1, 0, 0, 0, 1, -1]),
            ("DTX", adaptive(10), "(P1 G1)x30 G20 (P1 G1)x30", [1, 0, 0, 20, 1, -1]),
            ("Regular burst", adaptive(10), "(P3 G3)x24", [3, 0, 0, 0, 3, -1]),
            ("Random burst (no drift)", adaptive(10), "(A B A B C B)x26", [4, 1, 0, 4, 4, -1]),
            ("Random burst (drift, PUT > GET)", adaptive(10), "(P1 A B P1 A P1 B C P1 B)x17", [4, 68, 68, 4, 8, -1]),
            ("Random burst (drift, PUT < GET)", adaptive(10), "(G1 A B G1 A G1 B C G1 B)x16 G1 A B G1 A", [4, 0, 0, 70, 4, -1]),
            ("Packet lost", adaptive(10), "(P1 G1)x20 L1 (G1 P1)x2 G1 L1 (G1 P1)x3 G1 L1 (G1 P1)x23 L1 P1 G3 P3 G3 P1 L1 P1 G3 P1 G1 P1 L1 P1 G3 P3 G3 P1 L1 P1 G3 (P1 G1)x21", [1, 0, 7, 3, 3, -1]),
            ("Sequence restart", adaptive(10), "(P1 G1)x120 R1 (P1 G1)x60", [1, 0, 0, 0, 1, -1]),
            ("Duplicated frames", adaptive(10), "(P1 D1 G1)x40", [1, 40, 0, 0, 1, -1]),
            ("Late frames", adaptive(10), "(P1 G1)x60 (L1 G1)x2 P1 (G1 L1)x2 G1 P1 G1 O4 (P1 G1)x60", [1, 8, 4, 4, 4, -1]),
            ("PUT burst at the beginning", adaptive(10), "P51 (G1 P1)x774 G1", [1, 50, 50, 0, -1, 2]),
            ("Fixed mode prefetch 5, two empty events", (false, 5, 5, 5), "(G1 P1)x25 G6 (P1 G1)x25", [1, 0, 0, 10, 5, -1]),
            ("Fixed mode prefetch 5, random burst", (false, 5, 5, 5), "(A B A B C B)x4", [3, 0, 0, 5, 6, -1]),
            ("Fixed mode prefetch 10, PUT burst", (false, 10, 10, 10), "P51 (G1 P1)x349 G1", [1, 1, 1, 0, -1, 50]),
            ("Large PUT burst, burst level 10, spikes", adaptive(40), "P210 (G10 P10)x63 G10 P50 G50 (P10 G10)x32 P50 G50 (P10 G10)x48 P50 G50 (P10 G10)x14 P50 G50 (P10 G10)x56 P50 G50 (P10 G10)x126", [12, 300, 300, 60, 20, -1]),
        ];
        for (title, mode, rle, [burst, discard, lost, empty, delay, delay_min]) in sessions {
            let s = scenario(*mode, &expand(rle));
            let within = |got: u32, max: i64| max < 0 || i64::from(got) <= max;
            assert!(within(s.avg_burst, *burst), "{title}: burst {s:?}");
            assert!(within(s.discard, *discard), "{title}: discard {s:?}");
            assert!(within(s.lost, *lost), "{title}: lost {s:?}");
            assert!(within(s.empty, *empty), "{title}: empty {s:?}");
            assert!(within(s.avg_delay / 20, *delay), "{title}: delay {s:?}");
            assert!(within(s.min_delay / 20, *delay_min), "{title}: delay_min {s:?}");
        }
    }

    /// Exact figures that follow from the origin's rules by hand.
    #[test]
    fn jbtest_sessions_exact_where_the_rules_decide() {
        // Every duplicate is refused (`PJ_EEXISTS`) and counted as a discard.
        let s = scenario((true, 0, 0, 10), &expand("(P1 D1 G1)x40"));
        assert_eq!((s.discard, s.duplicates, s.lost, s.empty), (40, 40, 0, 0));
        // Ideal: one put then one get, always; the level is 1 and nothing is lost.
        let s = scenario((true, 0, 0, 10), &expand("(P1 G1)x60"));
        assert_eq!((s.avg_burst, s.burst, s.lost, s.discard, s.empty, s.size), (1, 1, 0, 0, 0, 0));
        // DTX: 20 gets on an empty buffer are 20 zero-empty frames.
        let s = scenario((true, 0, 0, 10), &expand("(P1 G1)x30 G20 (P1 G1)x30"));
        assert_eq!((s.empty, s.zero_empty, s.lost), (20, 20, 0));
        // Late frames: four old frames refused as too late; the four lost ones are holes.
        let s = scenario((true, 0, 0, 10), &expand("(P1 G1)x60 (L1 G1)x2 P1 (G1 L1)x2 G1 P1 G1 O4 (P1 G1)x60"));
        assert_eq!(s.too_late, 4, "{s:?}");
        // A fixed 10-frame prefetch never discards to adapt: 51 puts into 50 frames remove
        // exactly one (counted as a discard), and the frame after it plays.
        let s = scenario((false, 10, 10, 10), &expand("P51 (G1 P1)x349 G1"));
        assert_eq!((s.discard, s.full, s.progressive_discard, s.min_delay), (1, 1, 0, 1000), "{s:?}");
    }

    /// Progressive discard, worked example of the PJSIP documentation: burst level 3 and 10
    /// frames held give T = 2000 + 8000·2/99 = 2161 ms (integer), excess 7, so one frame per
    /// 2161 / 7 / 20 = 15 frames; the 200 ms floor is 10 frames.
    #[test]
    fn progressive_discard_spacing_follows_burst_and_excess() {
        let mut jb = Jbuf::new(20, 50);
        jb.eff_level = 3;
        jb.processing = true;
        jb.last_op = Op::Put;
        for k in 0..10 {
            jb.put_at(100 + k, 0).unwrap();
        }
        jb.discard_progressive();
        assert_eq!(jb.discard_dist, 15);
        // Far above the level, the 200 ms floor.
        for k in 10..40 {
            jb.put_at(100 + k, 0).unwrap();
        }
        jb.discard_dist = 0;
        jb.discard_progressive();
        assert_eq!(jb.discard_dist, 10);
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

    fn play(samples: &[Sample], policy: &str) -> (PlayoutRun, PjsipStats) {
        let policy: Policy = policy.parse().unwrap();
        let run = policy
            .playout(&PlayoutStream::plain(samples, Nanos::ZERO))
            .unwrap();
        let stats = match run.detail {
            Some(PlayoutDetail::Pjsip(s)) => s,
            ref other => panic!("no pjsip detail: {other:?}"),
        };
        (run, stats)
    }

    #[test]
    fn a_steady_stream_plays_every_frame_with_the_default_settings() {
        let samples = stream(&(0..500).map(|i| (i, i as f64 * 20.0 + 5.0)).collect::<Vec<_>>());
        let (run, st) = play(&samples, "pjsip");
        let s = summarize(&run.events);
        assert_eq!((s.frames, s.played), (500, 500), "{s:?} {st:?}");
        assert_eq!((st.max_count, st.max_prefetch, st.min_prefetch, st.prefetch), (25, 20, 1, 0));
        assert_eq!((st.burst, st.lost, st.empty), (1, 0, 0), "{st:?}");
        assert!(matches!(run.events[0], PlayoutEvent::Played { at, .. } if at == Nanos::from_millis(15)));
    }

    /// A 200 ms delay spike: the frames held up arrive in a burst, the buffer holds them,
    /// and progressive discard brings the delay back down, a frame at a time, each discard
    /// costing the frame after it too (returned as missing).
    #[test]
    fn a_delay_spike_is_absorbed_then_discarded_back() {
        let arrivals: Vec<(i64, f64)> = (0..1500)
            .map(|i| {
                let at = if (200..210).contains(&i) { 210.0 * 20.0 + 5.0 } else { i as f64 * 20.0 + 5.0 };
                (i, at)
            })
            .collect();
        let (run, st) = play(&stream(&arrivals), "pjsip");
        assert!(st.progressive_discard > 0 && run.removed > Nanos::ZERO, "{st:?}");
        assert_eq!(u64::from(st.lost), u64::from(st.progressive_discard), "{st:?}");
        let s = summarize(&run.events);
        assert_eq!(s.frames, 1500);
        // The empty gets while the frames were held up were inserted time.
        assert!(st.empty >= 9 && run.inserted >= Nanos::from_millis(180), "{st:?}");
        // After the discards, every frame plays at half a period after its arrival again.
        assert!(matches!(run.events[1499], PlayoutEvent::Played { at, .. } if at == Nanos::from_millis(1499 * 20 + 15)), "{:?}", run.events[1499]);
        // Static discard: the same spike, shrunk by removing head frames.
        let (again, st) = play(&stream(&arrivals), "pjsip:discard=static");
        let run = again;
        assert!(st.discard > 0 && st.progressive_discard == 0 && run.removed > Nanos::ZERO, "{st:?}");
    }

    /// A prefetch makes the buffer fill before it plays, at start and after running empty.
    #[test]
    fn prefetch_fills_before_playing() {
        let samples = stream(&(0..200).map(|i| (i, i as f64 * 20.0 + 5.0)).collect::<Vec<_>>());
        let (run, st) = play(&samples, "pjsip:prefetch=4,discard=none");
        assert!(st.zero_prefetch >= 3, "{st:?}");
        // Four frames buffered: played 3 periods later than without prefetch.
        assert!(matches!(run.events[0], PlayoutEvent::Played { at, .. } if at == Nanos::from_millis(75)), "{:?}", run.events[0]);
        // With a non-zero initial prefetch the prefetch follows the burst level: 1 frame.
        assert_eq!((st.prefetch, st.burst), (1, 1), "{st:?}");
        assert_eq!(run.target(100), Some(Nanos::from_millis(20)));
    }

    #[test]
    fn policy_strings_round_trip_and_bad_values_name_the_key() {
        let p: Policy = "pjsip".parse().unwrap();
        assert_eq!(
            p.to_string(),
            "pjsip:ptime=auto,max_count=auto,prefetch=0,min_prefetch=1,max_prefetch=auto,\
             mode=adaptive,discard=progressive,min_delay=0ms,phase=0.5"
        );
        let p: Policy = "pjsip:max_count=50,prefetch=5,max_prefetch=40,mode=fixed,discard=static,min_delay=60ms"
            .parse()
            .unwrap();
        assert_eq!(p.to_string().parse::<Policy>().unwrap(), p);
        assert!(p.playout_only());
        let msg = |s: &str| s.parse::<Policy>().unwrap_err().to_string();
        assert!(msg("pjsip:discard=often").contains("progressive, static, none"));
        assert!(msg("pjsip:prefetch=30,max_prefetch=20").contains("above max_prefetch"));
        assert!(msg("pjsip:max_prefetch=30,max_count=20").contains("above max_count"));
        assert!(msg("pjsip:max_count=0").contains("max_count"));
    }
}
