//! `asterisk`: Asterisk's adaptive jitter buffer (`jbimpl=adaptive`), as Asterisk runs it and
//! as VoIPmonitor simulates it for its "adapt" MOS.
//!
//! Follows `main/jitterbuf.c` and `include/jitterbuf.h` of Asterisk (read at `f0c1c1a7`,
//! 2026-08; the algorithm is Steve Kann's 2004–2005 jitterbuf, unchanged in substance since
//! Asterisk 1.4), driven by `main/abstract_jb.c`'s framehook; and VoIPmonitor's copy,
//! `jitterbuffer/jitterbuf.c` (read at `2ec3c37a`, 2026.04), an older revision of the same file,
//! driven by `rtp.cpp` (see [`crate::playout::asterisk`]). Described here in jitterlab's words:
//!
//! - **Delay history.** Each voice frame's delay, `now − (ts − resync_offset)` in whole ms, goes
//!   into a history of the last `JB_HISTORY_SZ = 500`. The lowest and highest
//!   `JB_HISTORY_DROPPCT = 3 %` are ignored as outliers: `min` is the 3 % smallest, `jitter` the
//!   3 % largest less `min` (15 places in from either end of a full history).
//! - **Target.** `target = min + jitter + target_extra` (`jbtargetextra`, `JB_TARGET_EXTRA` =
//!   40 ms), at most `min + max_jitterbuf` (`jbmaxsize`). Frames play at `ts + current`, where
//!   `current` is the buffer's present delay.
//! - **Grow.** When `target > current`, one interpolated frame is inserted (`JB_INTERP`) and
//!   `current` grows by its length, at most every `JB_ADJUST_DELAY = 40 ms`, or at once when the
//!   shortfall exceeds what is queued.
//! - **Shrink.** When `current > target + target_extra`, one frame is dropped (`JB_DROP`) at
//!   most every 500 ms, or `current` shrinks by a frame every 80 ms when no frame is due
//!   (`JB_NOFRAME`).
//! - **Frames.** The frame due at `next_voice_ts − current` plays (`JB_OK`); one a little early
//!   plays too; a late one is dropped (`JB_DROP`); a missing one is interpolated (`JB_INTERP`),
//!   and after `max_contig_interp` interpolations in a row (10, set by `abstract_jb.c`) the
//!   buffer goes silent: it waits without interpolating, shrinks by a frame every 10 ms while
//!   above target, and on the next frame jumps `current` to `target`.
//! - **Refusals on put.** A frame that would make the queue span `max_jitterbuf` or more is
//!   refused; so is one whose delay differs from the last by more than
//!   `2·jitter + resync_threshold` (`jbresyncthreshold`), unless it is the fourth in a row, which
//!   resynchronises the buffer (history cleared, that frame taken as on time).
//!
//! **Defaults** are Asterisk's (`abstract_jb.c` `DEFAULT_SIZE`, `DEFAULT_RESYNC`,
//! `DEFAULT_TARGET_EXTRA`): `jbmaxsize=200ms, jbresyncthreshold=1000ms, jbtargetextra=40ms`,
//! `max_contig_interp=10`, `variant=asterisk`, `ptime=auto`, `marker_resync=false`.
//!
//! **VoIPmonitor.** `variant=voipmonitor` runs VoIPmonitor's revision: the resync check sits in
//! the history update (voice frames with a positive timestamp only) and resynchronises on the
//! first frame after a reset, `target_extra` is the compiled-in 40 ms, and the driver is
//! VoIPmonitor's. Its "adapt" buffer sets `jbmaxsize` and `jbresyncthreshold` to 500 ms
//! (`jitterbuffer_adapt`, `rtp.cpp` `channel_adapt`) and resynchronises — here, empties and
//! resets the buffer — on every marker bit and after comfort noise. So VoIPmonitor's adaptive
//! figure is:
//!
//! ```text
//! asterisk:variant=voipmonitor,jbmaxsize=500ms,jbresyncthreshold=500ms,marker_resync=true
//! ```
//!
//! **Where jitterlab departs.** Only voice frames are modelled (no control or silence frames
//! from IAX). The frame length is the stream's frame duration in whole ms (`ptime=auto`), not
//! each frame's sample count. The receiver clock starts at the first frame's arrival. The
//! outlier history is kept as a sorted window instead of Asterisk's two 20-entry insertion
//! buffers; it gives the same order statistics, including the stale values Asterisk reads right
//! after a resynchronisation. VoIPmonitor starts its buffers only once it knows the
//! packetization (at once for G.711, G.722, GSM and G.723; after two packets for other codecs)
//! and resets them after a DTMF event: jitterlab starts at the first packet and does not reset.

use std::collections::VecDeque;
use std::sync::OnceLock;

use jitterlab_capture::Nanos;
use jitterlab_capture::spec::format_duration;
use serde::Serialize;

use super::keys::{boolean, key, print, print_duration};
use super::{DelayModel, Key, KeyError, Preset, duration_key};
use crate::playout::asterisk::{
    Core, Drive, DriverStats, Frame, Got, NEVER, Put, Released, Variant, VoipmonitorMos, drive,
};
use crate::playout::{PlayoutDetail, PlayoutRun, PlayoutStream};

/// `JB_HISTORY_SZ`: delays kept.
pub(crate) const HISTORY_SZ: usize = 500;
/// `JB_HISTORY_DROPPCT`: percent of the history ignored at either end.
pub(crate) const HISTORY_DROPPCT: usize = 3;
/// `JB_HISTORY_MAXBUF_SZ`: the deepest order statistic Asterisk keeps (500 · 4 %).
pub(crate) const HISTORY_MAXBUF_SZ: usize = HISTORY_SZ * 4 / 100;
/// `JB_TARGET_EXTRA`, ms.
pub(crate) const TARGET_EXTRA_MS: i64 = 40;
/// `JB_ADJUST_DELAY`: ms between two growths.
pub(crate) const ADJUST_DELAY_MS: i64 = 40;

/// Asterisk's adaptive jitter buffer as a playout policy: see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsteriskConfig {
    /// `jbmaxsize`: the hard clamp on the buffer's delay above the minimum, and on the span of
    /// queued timestamps (`max_jitterbuf`).
    pub max_size: Nanos,
    /// `jbresyncthreshold`: a delay jump beyond `2·jitter + this` is refused, and resyncs the
    /// buffer on the fourth in a row.
    pub resync_threshold: Nanos,
    /// `jbtargetextra`: added to the jitter for the target (`JB_TARGET_EXTRA`).
    pub target_extra: Nanos,
    /// Interpolated frames in a row before the buffer goes silent (`max_contig_interp`; 0: no
    /// limit).
    pub max_contig_interp: u32,
    /// Asterisk's own code and caller, or VoIPmonitor's.
    pub variant: Variant,
    /// Frame and interpolation length (`None`: the stream's frame duration).
    pub ptime: Option<Nanos>,
    /// Empty and reset the buffer on a marker bit (VoIPmonitor's `channel->resync`).
    pub marker_resync: bool,
}

impl Default for AsteriskConfig {
    /// Asterisk's `jbmaxsize=200`, `jbresyncthreshold=1000`, `jbtargetextra=40`.
    fn default() -> Self {
        Self {
            max_size: Nanos::from_millis(200),
            resync_threshold: Nanos::from_millis(1000),
            target_extra: Nanos::from_millis(TARGET_EXTRA_MS),
            max_contig_interp: 10,
            variant: Variant::Asterisk,
            ptime: None,
            marker_resync: false,
        }
    }
}

/// Whole milliseconds of a duration key (Asterisk's settings are integers of ms).
fn whole_ms(v: &str, min: Nanos) -> Result<Nanos, String> {
    let d = duration_key(v, min)?;
    if d.as_nanos() % 1_000_000 != 0 {
        return Err(format!("{v} is not a whole number of milliseconds"));
    }
    Ok(d)
}

/// `auto` or whole milliseconds of at least 2 ms (the buffers' shortest frame).
pub(crate) fn ptime_key(v: &str) -> Result<Option<Nanos>, String> {
    if v == "auto" {
        return Ok(None);
    }
    whole_ms(v, Nanos::from_millis(2)).map(Some)
}

/// Prints `auto` or the duration.
pub(crate) fn print_ptime(p: &Option<Nanos>) -> String {
    p.map_or_else(|| "auto".to_owned(), format_duration)
}

fn ms(d: Nanos) -> i64 {
    d.as_nanos() / 1_000_000
}

impl Preset for AsteriskConfig {
    const NAME: &'static str = "asterisk";
    const PLAYOUT_ONLY: bool = true;
    const MEDIA: Option<jitterlab_capture::decode::MediaKind> =
        Some(jitterlab_capture::decode::MediaKind::Audio);
    const PLAYOUT_AXES: &'static str = "jbmaxsize = [\"100ms\", \"200ms\", \"500ms\"]\njbtargetextra = [\"0ms\", \"20ms\", \"40ms\", \"80ms\"]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<AsteriskConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "jbmaxsize", |c| c.max_size, print_duration, |v| {
                    whole_ms(v, Nanos::from_millis(1))
                }),
                key!(
                    Self,
                    "jbresyncthreshold",
                    |c| c.resync_threshold,
                    print_duration,
                    |v| whole_ms(v, Nanos::from_millis(1))
                ),
                key!(Self, "jbtargetextra", |c| c.target_extra, print_duration, |v| {
                    whole_ms(v, Nanos::ZERO)
                }),
                key!(
                    Self,
                    "max_contig_interp",
                    |c| c.max_contig_interp,
                    print,
                    |v: &str| v
                        .parse::<u32>()
                        .map_err(|_| format!("{v} is not a count (allowed: 0, 1, 2, …)"))
                ),
                key!(Self, "variant", |c| c.variant, print, Variant::parse),
                key!(Self, "ptime", |c| c.ptime, print_ptime, ptime_key),
                key!(Self, "marker_resync", |c| c.marker_resync, print, boolean),
            ]
        })
    }

    fn validate(&self) -> Result<(), KeyError> {
        Ok(())
    }

    fn max_delay(&self) -> Nanos {
        self.max_size + self.target_extra
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        let mut jb = Jitterbuf::new(self.conf(), self.variant);
        let driven = drive(
            stream,
            &mut jb,
            &Drive {
                variant: self.variant,
                ptime: self.ptime,
                marker_resync: self.marker_resync,
                max_delay_ms: ms(self.max_delay()),
            },
        );
        let mut run = driven.run;
        run.detail = Some(PlayoutDetail::Asterisk(AsteriskStats {
            driver: driven.stats,
            info: jb.info.counters(),
            resyncs: jb.resyncs,
            voipmonitor: driven.mos,
        }));
        Some(run)
    }
}

impl AsteriskConfig {
    /// The buffer's `jb_conf`.
    pub fn conf(&self) -> JbConf {
        JbConf {
            max_jitterbuf: ms(self.max_size),
            resync_threshold: ms(self.resync_threshold),
            max_contig_interp: i64::from(self.max_contig_interp),
            target_extra: ms(self.target_extra),
        }
    }
}

/// The `asterisk` preset's own counters, under `"asterisk"` in JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AsteriskStats {
    /// What the driver saw.
    pub driver: DriverStats,
    /// The buffer's `jb_info` counters at the end.
    pub info: JbCounters,
    /// Resynchronisations on delay jumps.
    pub resyncs: u64,
    /// VoIPmonitor's MOS after the buffer (`variant=voipmonitor`).
    pub voipmonitor: Option<VoipmonitorMos>,
}

impl AsteriskStats {
    /// One line for a person.
    pub fn describe(&self) -> String {
        let mut line = format!(
            "asterisk ({}) frames in {}, out {}, late {}, lost {}, dropped {}, out of order {}; \
             {} interpolated, {} resyncs, {} refused on put; jitter {} ms, current {} ms, target {} ms",
            self.driver.variant,
            self.info.frames_in,
            self.info.frames_out,
            self.info.frames_late,
            self.info.frames_lost,
            self.info.frames_dropped,
            self.info.frames_ooo,
            self.driver.get_interpolated,
            self.resyncs,
            self.driver.put_refused,
            self.info.jitter,
            self.info.current,
            self.info.target
        );
        if let Some(m) = &self.voipmonitor {
            line.push_str(&format!(
                "; voipmonitor MOS {:.2} (lost {}, bursts {})",
                m.mos, m.lost, m.bursts
            ));
        }
        line
    }
}

/// `jb_conf`, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JbConf {
    /// Hard clamp on the delay above the minimum, and on the queued span.
    pub max_jitterbuf: i64,
    /// Resync threshold (−1: never check).
    pub resync_threshold: i64,
    /// Interpolations in a row before going silent (0: unlimited).
    pub max_contig_interp: i64,
    /// Added to the jitter for the target.
    pub target_extra: i64,
}

/// `jb_info`'s counters and state, in ms where they are times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct JbCounters {
    /// Frames put into the buffer.
    pub frames_in: i64,
    /// Frames taken out (played, or dropped by `get`).
    pub frames_out: i64,
    /// Frames dropped by `get` for being late.
    pub frames_late: i64,
    /// Frames interpolated for (missing), less the late ones that arrived after all.
    pub frames_lost: i64,
    /// Frames dropped: refused on put, or dropped to shrink.
    pub frames_dropped: i64,
    /// Frames received out of order.
    pub frames_ooo: i64,
    /// Frames queued at the end.
    pub frames_cur: i64,
    /// Jitter over the history (3 % outliers ignored).
    pub jitter: i64,
    /// Minimum delay over the history (3 % outliers ignored).
    pub min: i64,
    /// The delay at the end.
    pub current: i64,
    /// The target at the end.
    pub target: i64,
    /// Recent loss, per thousand and then some (`losspct`, an average with weight 1/500).
    pub losspct: i64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Info {
    frames_in: i64,
    frames_out: i64,
    frames_late: i64,
    frames_lost: i64,
    frames_dropped: i64,
    frames_ooo: i64,
    frames_cur: i64,
    jitter: i64,
    min: i64,
    current: i64,
    target: i64,
    losspct: i64,
    next_voice_ts: i64,
    last_voice_ms: i64,
    silence_begin_ts: i64,
    last_adjustment: i64,
    last_delay: i64,
    cnt_delay_discont: i64,
    resync_offset: i64,
    cnt_contig_interp: i64,
}

impl Info {
    fn counters(&self) -> JbCounters {
        JbCounters {
            frames_in: self.frames_in,
            frames_out: self.frames_out,
            frames_late: self.frames_late,
            frames_lost: self.frames_lost,
            frames_dropped: self.frames_dropped,
            frames_ooo: self.frames_ooo,
            frames_cur: self.frames_cur,
            jitter: self.jitter,
            min: self.min,
            current: self.current,
            target: self.target,
            losspct: self.losspct,
        }
    }

    fn increment_losspct(&mut self) {
        self.losspct = (100_000 + 499 * self.losspct) / 500;
    }

    fn decrement_losspct(&mut self) {
        self.losspct = (499 * self.losspct) / 500;
    }
}

/// The delay history: the last [`HISTORY_SZ`] delays in arrival order and the same values
/// sorted, so that the order statistics Asterisk reads are one index away.
#[derive(Clone, Debug)]
struct History {
    ring: Vec<i64>,
    head: usize,
    sorted: Vec<i64>,
    /// What Asterisk's buffers last held at either end: read when the history is empty right
    /// after a resynchronisation (its `history_calc_maxbuf` returns early then).
    stale: (i64, i64),
}

impl History {
    fn new() -> Self {
        Self {
            ring: Vec::with_capacity(HISTORY_SZ),
            head: 0,
            sorted: Vec::with_capacity(HISTORY_SZ),
            stale: (0, 0),
        }
    }

    fn clear(&mut self) {
        self.ring.clear();
        self.head = 0;
        self.sorted.clear();
    }

    fn push(&mut self, delay: i64) {
        if self.ring.len() == HISTORY_SZ {
            let kicked = std::mem::replace(&mut self.ring[self.head], delay);
            self.head = (self.head + 1) % HISTORY_SZ;
            if let Ok(i) = self.sorted.binary_search(&kicked) {
                self.sorted.remove(i);
            }
        } else {
            self.ring.push(delay);
        }
        let at = self.sorted.partition_point(|&d| d < delay);
        self.sorted.insert(at, delay);
    }

    /// `history_get`: (min, jitter).
    fn get(&mut self) -> (i64, i64) {
        let count = self.sorted.len();
        if count == 0 {
            let (max, min) = self.stale;
            return (min, max - min);
        }
        let idx = (count * HISTORY_DROPPCT / 100).min(HISTORY_MAXBUF_SZ - 1);
        let max = self.sorted[count - 1 - idx];
        let min = self.sorted[idx];
        self.stale = (self.sorted[count - 1], self.sorted[0]);
        (min, max - min)
    }
}

/// Asterisk's adaptive `jitterbuf`: see the module documentation.
#[derive(Clone, Debug)]
pub struct Jitterbuf {
    conf: JbConf,
    voipmonitor: bool,
    info: Info,
    history: History,
    dropem: bool,
    /// Queued frames sorted by (resync-adjusted) timestamp.
    queue: VecDeque<Frame>,
    resyncs: u64,
    released: Vec<Released>,
    inserted: i64,
    removed: i64,
}

impl Jitterbuf {
    /// `jb_new` + `jb_setconf`; `voipmonitor` selects VoIPmonitor's revision.
    pub fn new(conf: JbConf, variant: Variant) -> Self {
        let mut jb = Self {
            conf,
            voipmonitor: variant == Variant::Voipmonitor,
            info: Info::default(),
            history: History::new(),
            dropem: false,
            queue: VecDeque::with_capacity(64),
            resyncs: 0,
            released: Vec::new(),
            inserted: 0,
            removed: 0,
        };
        jb.reset();
        jb
    }

    /// `jb_reset` (the queue is emptied first, as `jb_empty_and_reset` does).
    fn reset(&mut self) {
        for f in self.queue.drain(..) {
            self.released.push(Released {
                slot: f.slot,
                played: false,
            });
        }
        self.info = Info::default();
        self.history.clear();
        self.history.stale = (0, 0);
        self.dropem = false;
        self.info.current = self.conf.target_extra;
        self.info.target = self.conf.target_extra;
        self.info.silence_begin_ts = -1;
    }

    /// The counters and state now.
    pub fn counters(&self) -> JbCounters {
        self.info.counters()
    }

    /// The frame's timestamp after the last resynchronisation, as the queue holds it.
    fn resync_ts(&self, ts: i64) -> i64 {
        ts - self.info.resync_offset
    }

    fn resync_now(&mut self, ts: i64, now: i64) {
        self.info.cnt_delay_discont = 0;
        self.history.clear();
        self.info.resync_offset = ts - now;
        self.info.last_delay = 0;
        self.resyncs += 1;
    }

    /// Asterisk's `check_resync`: Some(delay) to go on with, None to refuse.
    fn check_resync(&mut self, delay: i64, ts: i64, now: i64) -> Option<i64> {
        if self.conf.resync_threshold == -1 {
            return Some(delay);
        }
        let threshold = 2 * self.info.jitter + self.conf.resync_threshold;
        if (delay - self.info.last_delay).abs() > threshold {
            self.info.cnt_delay_discont += 1;
            if self.info.cnt_delay_discont > 3 {
                self.resync_now(ts, now);
                return Some(0);
            }
            self.info.frames_dropped += 1;
            return None;
        }
        self.info.last_delay = delay;
        self.info.cnt_delay_discont = 0;
        Some(delay)
    }

    /// VoIPmonitor's `history_put`, with its resync check: Some(delay) added, None to refuse.
    fn history_put_voipmonitor(&mut self, ts: i64, now: i64) -> Option<()> {
        let mut delay = now - self.resync_ts(ts);
        let threshold = 2 * self.info.jitter + self.conf.resync_threshold;
        if ts <= 0 {
            return Some(());
        }
        if self.conf.resync_threshold != -1 {
            if self.info.frames_in == 0 {
                self.resync_now(ts, now);
                delay = 0;
            } else if (delay - self.info.last_delay).abs() > threshold {
                self.info.cnt_delay_discont += 1;
                if self.info.cnt_delay_discont > 3 {
                    self.resync_now(ts, now);
                    delay = 0;
                } else {
                    return None;
                }
            } else {
                self.info.last_delay = delay;
                self.info.cnt_delay_discont = 0;
            }
        }
        self.history.push(delay);
        Some(())
    }

    /// `queue_put`: inserts by timestamp, counting frames out of order.
    fn queue_put(&mut self, mut f: Frame) {
        f.ts = self.resync_ts(f.ts);
        self.info.frames_cur += 1;
        match self.queue.front() {
            None => self.queue.push_back(f),
            Some(head) if f.ts < head.ts => {
                self.info.frames_ooo += 1;
                self.queue.push_front(f);
            }
            Some(_) => {
                if self.queue.back().is_some_and(|b| f.ts < b.ts) {
                    self.info.frames_ooo += 1;
                }
                // After the last queued frame whose timestamp is not above this one's (the
                // head stays first).
                let mut at = self.queue.len();
                while at > 1 && f.ts < self.queue[at - 1].ts {
                    at -= 1;
                }
                self.queue.insert(at, f);
            }
        }
    }

    /// `queue_get`: the head frame if its timestamp is at most `ts`.
    fn queue_get(&mut self, ts: i64) -> Option<Frame> {
        if self.queue.front()?.ts <= ts {
            self.info.frames_cur -= 1;
            self.queue.pop_front()
        } else {
            None
        }
    }

    fn queue_span(&self) -> i64 {
        match (self.queue.front(), self.queue.back()) {
            (Some(a), Some(b)) => b.ts - a.ts,
            _ => 0,
        }
    }

    fn history_get(&mut self) {
        let (min, jitter) = self.history.get();
        self.info.min = min;
        self.info.jitter = jitter;
    }

    /// `jb_put` for a voice frame that arrived at `now`.
    pub fn jb_put(&mut self, f: Frame, now: i64) -> Put {
        // Overfill: the queued timestamps may not span `max_jitterbuf`.
        if self.queue_span() >= self.conf.max_jitterbuf {
            self.dropem = true;
            self.info.frames_dropped += 1;
            return Put::Refused;
        }
        self.dropem = false;
        if self.voipmonitor {
            if self.history_put_voipmonitor(f.ts, now).is_none() {
                self.info.frames_dropped += 1;
                return Put::Refused;
            }
        } else {
            let delay = now - self.resync_ts(f.ts);
            let Some(delay) = self.check_resync(delay, f.ts, now) else {
                return Put::Refused;
            };
            if f.ts > 0 {
                self.history.push(delay);
            }
        }
        self.info.frames_in += 1;
        self.queue_put(f);
        Put::Queued
    }

    /// `jb_get` at `now`, interpolating `interpl` ms when there is no frame.
    pub fn jb_get(&mut self, now: i64, interpl: i64) -> Got {
        self.history_get();
        let extra = self.conf.target_extra;
        let info = &mut self.info;
        info.target = info.jitter + info.min + extra;
        if self.conf.max_jitterbuf != 0 && info.target - info.min > self.conf.max_jitterbuf {
            info.target = info.min + self.conf.max_jitterbuf;
        }
        let diff = info.target - info.current;
        if info.silence_begin_ts == 0 {
            let span = self.queue_span();
            let info = &mut self.info;
            if diff > 0 && (info.last_adjustment + ADJUST_DELAY_MS < now || diff > span) {
                // Grow by one interpolated frame.
                info.current += interpl;
                info.next_voice_ts += interpl;
                info.last_voice_ms = interpl;
                info.last_adjustment = now;
                info.cnt_contig_interp += 1;
                if self.conf.max_contig_interp != 0
                    && info.cnt_contig_interp >= self.conf.max_contig_interp
                {
                    info.silence_begin_ts = info.next_voice_ts - info.current;
                }
                self.inserted += interpl;
                return Got::Interp {
                    expected: info.next_voice_ts - info.current,
                    grow: true,
                };
            }
            let wanted = self.info.next_voice_ts - self.info.current;
            let frame = self.queue_get(wanted);
            let info = &mut self.info;
            if let Some(f) = frame {
                if f.ts + info.current < info.next_voice_ts {
                    info.frames_out += 1;
                    info.decrement_losspct();
                    if f.ts + info.current > info.next_voice_ts - info.last_voice_ms {
                        // Interpolated past it last time, or a little early: play it.
                        info.next_voice_ts = f.ts + info.current + f.ms;
                        info.cnt_contig_interp = 0;
                        return Got::Frame(f);
                    }
                    info.frames_late += 1;
                    info.frames_lost -= 1;
                    return Got::Drop {
                        frame: f,
                        shrink: false,
                    };
                }
                if f.ms > 0 {
                    info.last_voice_ms = f.ms;
                }
            }
            // Shrink: a frame every 500 ms, or without a frame every 80 ms.
            if diff < -extra
                && ((frame.is_none() && info.last_adjustment + 80 < now)
                    || info.last_adjustment + 500 < now)
            {
                info.last_adjustment = now;
                info.cnt_contig_interp = 0;
                if let Some(f) = frame {
                    info.current -= f.ms;
                    info.frames_out += 1;
                    info.decrement_losspct();
                    info.frames_dropped += 1;
                    self.removed += f.ms;
                    return Got::Drop {
                        frame: f,
                        shrink: true,
                    };
                }
                info.current -= info.last_voice_ms;
                info.frames_lost += 1;
                info.increment_losspct();
                self.removed += info.last_voice_ms;
                return Got::NoFrame;
            }
            let Some(f) = frame else {
                // A lost frame.
                info.frames_lost += 1;
                info.increment_losspct();
                info.next_voice_ts += interpl;
                info.last_voice_ms = interpl;
                info.cnt_contig_interp += 1;
                if self.conf.max_contig_interp != 0
                    && info.cnt_contig_interp >= self.conf.max_contig_interp
                {
                    info.silence_begin_ts = info.next_voice_ts - info.current;
                }
                return Got::Interp {
                    expected: wanted,
                    grow: false,
                };
            };
            info.next_voice_ts += f.ms;
            info.frames_out += 1;
            info.cnt_contig_interp = 0;
            info.decrement_losspct();
            return Got::Frame(f);
        }
        // Silent: shrink by one interpolation length every 10 ms while above target.
        if diff < -extra && self.info.last_adjustment + 10 <= now {
            self.info.current -= interpl;
            self.info.last_adjustment = now;
            self.removed += interpl;
        }
        let wanted = now - self.info.current;
        let Some(f) = self.queue_get(wanted) else {
            return Got::NoFrame;
        };
        let info = &mut self.info;
        info.frames_out += 1;
        info.decrement_losspct();
        if f.ts < info.silence_begin_ts {
            info.frames_late += 1;
            info.frames_lost -= 1;
            return Got::Drop {
                frame: f,
                shrink: false,
            };
        }
        // Talk again: straight to the target.
        let jump = info.target - info.current;
        if jump > 0 {
            self.inserted += jump;
        } else {
            self.removed -= jump;
        }
        info.current = info.target;
        info.silence_begin_ts = 0;
        info.next_voice_ts = f.ts + info.current + f.ms;
        info.last_voice_ms = f.ms;
        Got::Frame(f)
    }

    /// `jb_next`.
    pub fn jb_next(&mut self) -> i64 {
        if self.info.silence_begin_ts != 0 {
            let Some(head) = self.queue.front().copied() else {
                return NEVER;
            };
            self.history_get();
            if self.info.target - self.info.current < -self.conf.target_extra {
                return self.info.last_adjustment + 10;
            }
            return head.ts + self.info.target;
        }
        self.info.next_voice_ts
    }
}

impl Core for Jitterbuf {
    fn put(&mut self, frame: Frame, now: i64, _first: bool) -> Put {
        self.jb_put(frame, now)
    }

    fn get(&mut self, now: i64, interpl: i64) -> Got {
        self.jb_get(now, interpl)
    }

    fn next(&mut self) -> i64 {
        self.jb_next()
    }

    fn force_resync(&mut self) {
        // VoIPmonitor's `jb_force_resynch_adaptive` is `jb_empty_and_reset`; Asterisk's is a
        // no-op.
        if self.voipmonitor {
            self.reset();
        }
    }

    fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    fn released(&mut self) -> &mut Vec<Released> {
        &mut self.released
    }

    fn scheduled(&self, ts: i64) -> i64 {
        self.resync_ts(ts) + self.info.target
    }

    fn stretched(&self) -> (i64, i64) {
        (self.inserted, self.removed)
    }
}

#[cfg(test)]
#[path = "asterisk_tests.rs"]
mod tests;
