//! `asterisk-fixed`: Asterisk's fixed jitter buffer (`jbimpl=fixed`, Asterisk's default), as
//! Asterisk runs it and as VoIPmonitor simulates it for its "f1" and "f2" MOS.
//!
//! Follows `main/fixedjitterbuf.c` and `main/fixedjitterbuf.h` of Asterisk (read at `f0c1c1a7`,
//! 2026-08; Slav Klenov's 2005 fixed buffer), driven by `main/abstract_jb.c`'s framehook; and
//! VoIPmonitor's modified copy, `jitterbuffer/fixedjitterbuf.c` (read at `2ec3c37a`, 2026.04,
//! with its `RESYNCH_V1` rules), driven by `rtp.cpp` (see [`crate::playout::asterisk`]).
//! Described here in jitterlab's words:
//!
//! - **Delivery.** The first frame fixes the receiver's reference, `rxcore = now − ts`; every
//!   frame is due at `delivery = rxcore + jbsize + ts` (`jbsize` is `jbmaxsize`), a constant
//!   delay of `jbsize` above the *first* frame's transit.
//! - **On put**, a frame is refused, or the buffer resynchronised, when it is late
//!   (`delivery < next_delivery`), too far ahead (`delivery > next_delivery + jbsize +
//!   resync_threshold`), or overlaps a queued frame. The buffer then compares the frame's
//!   timestamp with the last queued frame's end: a jump of at least `jbresyncthreshold` (or a
//!   forced resync) shifts `rxcore` so the frame follows the last one; anything smaller drops the
//!   frame. An empty buffer takes the frame as a new first frame.
//! - **On get** at `now`: nothing before `next_delivery` (`FIXED_JB_NOFRAME`); an interpolated
//!   frame when the buffer is empty or its head is not yet due (`FIXED_JB_INTERP`); the head
//!   dropped when `now` is past its end (`FIXED_JB_DROP`); otherwise the head plays
//!   (`FIXED_JB_OK`). `next_delivery` then moves to the played frame's end, or by one
//!   interpolation length.
//!
//! **Defaults** are Asterisk's (`FIXED_JB_SIZE_DEFAULT`, `FIXED_JB_RESYNCH_THRESHOLD_DEFAULT`
//! and `abstract_jb.c`'s): `jbmaxsize=200ms, jbresyncthreshold=1000ms, variant=asterisk,
//! ptime=auto, marker_resync=false`. `jbforce` (use a buffer even when the far end would not
//! need one) has nothing to decide in a replay: the buffer is always used.
//!
//! **VoIPmonitor** (`variant=voipmonitor`) changes the rules on put: a frame may overlap its
//! predecessor by up to 10 ms; a marker bit (and the first frame after comfort noise) whose
//! timestamp is more than two frames away from the last queued frame's end forces a resync; a
//! late frame is counted as lost; and within the threshold, a frame that is not early or
//! behind the last one restarts the buffer from it (after delivering what is queued), as does
//! a mean skew of the arrivals from the reference larger than half the buffer. Its two fixed
//! buffers are, exactly (`rtp.cpp` `channel_fix1`, `channel_fix2`; `jitterbuffer_f1`,
//! `jitterbuffer_f2`, both on by default, each resynchronising on marker bits):
//!
//! ```text
//! f1 (fixed 50 ms):  asterisk-fixed:variant=voipmonitor,jbmaxsize=50ms,jbresyncthreshold=100ms,marker_resync=true
//! f2 (fixed 200 ms): asterisk-fixed:variant=voipmonitor,jbmaxsize=200ms,jbresyncthreshold=200ms,marker_resync=true
//! ```
//!
//! **Where jitterlab departs.** The frame length is the stream's frame duration in whole ms
//! (`ptime=auto`), not each frame's sample count; the receiver clock starts at the first frame's
//! arrival; the framehook's timer ticks every frame length from that arrival (in Asterisk its
//! phase is wherever the channel's timer started). Frames VoIPmonitor "delivers" when it
//! flushes the buffer before a resync play at that moment.

use std::collections::VecDeque;
use std::sync::OnceLock;

use jitterlab_capture::Nanos;
use serde::Serialize;

use super::asterisk::{print_ptime, ptime_key};
use super::keys::{boolean, key, print, print_duration};
use super::{DelayModel, Key, Preset, duration_key};
use crate::playout::asterisk::{
    Core, Drive, DriverStats, Frame, Got, Put, Released, Variant, VoipmonitorMos, drive,
};
use crate::playout::{PlayoutDetail, PlayoutRun, PlayoutStream};

/// `FIXED_JB_SIZE_DEFAULT`, ms.
pub(crate) const SIZE_DEFAULT_MS: i64 = 200;
/// `FIXED_JB_RESYNCH_THRESHOLD_DEFAULT`, ms.
pub(crate) const RESYNCH_THRESHOLD_DEFAULT_MS: i64 = 1000;
/// VoIPmonitor's overlap tolerance between consecutive frames, ms ("iLBC from asterisk is
/// coming 20/40/20/40/20 ms").
pub(crate) const VOIPMONITOR_OVERLAP_MS: i64 = 10;

/// Asterisk's fixed jitter buffer as a playout policy: see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsteriskFixedConfig {
    /// `jbmaxsize`: the fixed delay above the first frame's transit (`jbsize`).
    pub size: Nanos,
    /// `jbresyncthreshold`: a timestamp jump at least this large resynchronises the buffer.
    pub resync_threshold: Nanos,
    /// Asterisk's own code and caller, or VoIPmonitor's.
    pub variant: Variant,
    /// Frame and interpolation length (`None`: the stream's frame duration).
    pub ptime: Option<Nanos>,
    /// Force a resync on a marker bit (VoIPmonitor's `channel->resync`).
    pub marker_resync: bool,
}

impl Default for AsteriskFixedConfig {
    /// Asterisk's `jbmaxsize=200`, `jbresyncthreshold=1000`.
    fn default() -> Self {
        Self {
            size: Nanos::from_millis(SIZE_DEFAULT_MS),
            resync_threshold: Nanos::from_millis(RESYNCH_THRESHOLD_DEFAULT_MS),
            variant: Variant::Asterisk,
            ptime: None,
            marker_resync: false,
        }
    }
}

/// Whole milliseconds of at least 1 ms.
fn whole_ms(v: &str) -> Result<Nanos, String> {
    let d = duration_key(v, Nanos::from_millis(1))?;
    if d.as_nanos() % 1_000_000 != 0 {
        return Err(format!("{v} is not a whole number of milliseconds"));
    }
    Ok(d)
}

fn ms(d: Nanos) -> i64 {
    d.as_nanos() / 1_000_000
}

impl Preset for AsteriskFixedConfig {
    const NAME: &'static str = "asterisk-fixed";
    const PLAYOUT_ONLY: bool = true;
    const MEDIA: Option<jitterlab_capture::decode::MediaKind> =
        Some(jitterlab_capture::decode::MediaKind::Audio);
    const PLAYOUT_AXES: &'static str = "jbmaxsize = [\"20ms\", \"40ms\", \"50ms\", \"60ms\", \"80ms\", \"100ms\", \"120ms\", \"150ms\", \"200ms\", \"300ms\"]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<AsteriskFixedConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "jbmaxsize", |c| c.size, print_duration, whole_ms),
                key!(
                    Self,
                    "jbresyncthreshold",
                    |c| c.resync_threshold,
                    print_duration,
                    whole_ms
                ),
                key!(Self, "variant", |c| c.variant, print, Variant::parse),
                key!(Self, "ptime", |c| c.ptime, print_ptime, ptime_key),
                key!(Self, "marker_resync", |c| c.marker_resync, print, boolean),
            ]
        })
    }

    fn max_delay(&self) -> Nanos {
        self.size
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        let mut jb = FixedJb::new(ms(self.size), ms(self.resync_threshold), self.variant);
        let driven = drive(
            stream,
            &mut jb,
            &Drive {
                variant: self.variant,
                ptime: self.ptime,
                marker_resync: self.marker_resync,
                max_delay_ms: ms(self.size),
            },
        );
        let mut run = driven.run;
        run.detail = Some(PlayoutDetail::AsteriskFixed(AsteriskFixedStats {
            driver: driven.stats,
            buffer: jb.stats,
            voipmonitor: driven.mos,
        }));
        Some(run)
    }
}

/// What the fixed buffer itself counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FixedCounters {
    /// Frames queued.
    pub queued: u64,
    /// Frames refused on put as late (`delivery < next_delivery`, not resynced).
    pub refused_late: u64,
    /// Frames refused on put as too far ahead or overlapping (not resynced).
    pub refused_other: u64,
    /// Resynchronisations shifting `rxcore` after a timestamp jump (`resynch_jb`).
    pub resyncs: u64,
    /// Restarts from a frame as a new first frame (an empty buffer, or VoIPmonitor's restart
    /// rules).
    pub restarts: u64,
    /// VoIPmonitor: restarts for a mean skew above half the buffer.
    pub skew_restarts: u64,
}

/// The `asterisk-fixed` preset's own counters, under `"asterisk-fixed"` in JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AsteriskFixedStats {
    /// What the driver saw.
    pub driver: DriverStats,
    /// What the buffer counted.
    pub buffer: FixedCounters,
    /// VoIPmonitor's MOS after the buffer (`variant=voipmonitor`).
    pub voipmonitor: Option<VoipmonitorMos>,
}

impl AsteriskFixedStats {
    /// One line for a person.
    pub fn describe(&self) -> String {
        let mut line = format!(
            "asterisk-fixed ({}) {} played, {} dropped, {} interpolated; {} refused on put \
             ({} late), {} resyncs, {} restarts",
            self.driver.variant,
            self.driver.get_ok,
            self.driver.get_dropped,
            self.driver.get_interpolated,
            self.driver.put_refused,
            self.buffer.refused_late,
            self.buffer.resyncs,
            self.buffer.restarts
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

/// A queued frame and its delivery time.
#[derive(Clone, Copy, Debug)]
struct Queued {
    frame: Frame,
    delivery: i64,
}

/// Why `put` went to `resynch_jb`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    Late,
    Other,
}

/// Asterisk's `fixed_jb`: see the module documentation.
#[derive(Clone, Debug)]
pub struct FixedJb {
    /// Queued frames sorted by delivery time.
    frames: VecDeque<Queued>,
    jbsize: i64,
    resync_threshold: i64,
    rxcore: i64,
    next_delivery: i64,
    force_resynch: bool,
    voipmonitor: bool,
    skew_sum: i64,
    skew_counter: i64,
    stats: FixedCounters,
    released: Vec<Released>,
    put_losses: u64,
}

impl FixedJb {
    /// `fixed_jb_new` with `jbsize` and `resync_threshold` in ms (below 1: Asterisk's
    /// defaults); `variant` selects VoIPmonitor's rules.
    pub fn new(jbsize: i64, resync_threshold: i64, variant: Variant) -> Self {
        Self {
            frames: VecDeque::with_capacity(64),
            jbsize: if jbsize < 1 { SIZE_DEFAULT_MS } else { jbsize },
            resync_threshold: if resync_threshold < 1 {
                RESYNCH_THRESHOLD_DEFAULT_MS
            } else {
                resync_threshold
            },
            rxcore: 0,
            next_delivery: 0,
            force_resynch: false,
            voipmonitor: variant == Variant::Voipmonitor,
            skew_sum: 0,
            skew_counter: 0,
            stats: FixedCounters::default(),
            released: Vec::new(),
            put_losses: 0,
        }
    }

    /// What the buffer counted so far.
    pub fn counters(&self) -> FixedCounters {
        self.stats
    }

    /// `fixed_jb_put_first`.
    pub fn put_first(&mut self, f: Frame, now: i64) -> Put {
        self.rxcore = now - f.ts;
        self.next_delivery = now + self.jbsize;
        self.put(f, now, 0)
    }

    /// `fixed_jb_put` (`depth` bounds the put → resync → put recursion).
    pub fn put_frame(&mut self, f: Frame, now: i64) -> Put {
        self.put(f, now, 0)
    }

    fn put(&mut self, f: Frame, now: i64, depth: u32) -> Put {
        let delivery = self.rxcore + self.jbsize + f.ts;
        if self.voipmonitor {
            self.skew_sum += f.ts - (now - self.rxcore);
            self.skew_counter += 1;
        }
        if delivery < self.next_delivery {
            if self.voipmonitor {
                if !f.marker {
                    self.put_losses += 1;
                }
                let put = self.resynch(f, now, Why::Late, depth);
                if f.marker {
                    self.rxcore = now - f.ts;
                }
                return put;
            }
            return self.resynch(f, now, Why::Late, depth);
        }
        if self.voipmonitor
            && f.marker
            && let Some(tail) = self.frames.back()
        {
            let end = tail.frame.ts + tail.frame.ms;
            let k = 2 * tail.frame.ms;
            if f.ts > end + k || f.ts < end - k {
                self.force_resynch = true;
                return self.resynch(f, now, Why::Other, depth);
            }
        }
        if delivery > self.next_delivery + self.jbsize + self.resync_threshold {
            return self.resynch(f, now, Why::Other, depth);
        }
        // The last queued frame due at or before this one.
        let mut at = self.frames.len();
        while at > 0 && self.frames[at - 1].delivery > delivery {
            at -= 1;
        }
        let overlap = if self.voipmonitor { VOIPMONITOR_OVERLAP_MS } else { 0 };
        let covered = at > 0 && {
            let before = self.frames[at - 1];
            before.delivery == delivery
                || delivery + overlap < before.delivery + before.frame.ms
                || self
                    .frames
                    .get(at)
                    .is_some_and(|next| delivery + f.ms > next.delivery)
        };
        if covered || (self.voipmonitor && self.force_resynch) {
            let put = self.resynch(f, now, Why::Other, depth);
            if self.voipmonitor {
                self.force_resynch = false;
            }
            return put;
        }
        self.force_resynch = false;
        self.frames.insert(at, Queued { frame: f, delivery });
        self.stats.queued += 1;
        Put::Queued
    }

    fn refuse(&mut self, why: Why) -> Put {
        match why {
            Why::Late => self.stats.refused_late += 1,
            Why::Other => self.stats.refused_other += 1,
        }
        Put::Refused
    }

    /// `resynch_jb`.
    fn resynch(&mut self, f: Frame, now: i64, why: Why, depth: u32) -> Put {
        let Some(tail) = self.frames.back().map(|q| q.frame) else {
            self.stats.restarts += 1;
            if self.voipmonitor {
                self.force_resynch = false;
            }
            let mut f = f;
            f.marker = false;
            return self.put_first(f, now);
        };
        if depth > 1 {
            return self.refuse(why);
        }
        let offset = f.ts - tail.ts - tail.ms;
        let small = offset < self.resync_threshold && offset > -self.resync_threshold;
        if self.voipmonitor {
            if small {
                if !self.force_resynch {
                    if self.skew_counter > 10
                        && (self.skew_sum / self.skew_counter).abs() > self.jbsize / 2
                    {
                        self.skew_sum = 0;
                        self.skew_counter = 0;
                        self.stats.skew_restarts += 1;
                        return self.restart(f, now);
                    }
                    if offset < 0 || now - f.ts < self.rxcore - self.jbsize {
                        return self.refuse(why);
                    }
                    return self.restart(f, now);
                }
                self.force_resynch = false;
                if offset < 0 {
                    return self.refuse(why);
                }
                return self.restart(f, now);
            }
        } else if !self.force_resynch && small {
            return self.refuse(why);
        }
        self.force_resynch = false;
        self.stats.resyncs += 1;
        self.rxcore -= offset;
        for q in &mut self.frames {
            q.frame.ts += offset;
        }
        let mut f = f;
        f.marker = false;
        self.put(f, now, depth + 1)
    }

    /// VoIPmonitor's `jb_fixed_flush_deliver` then `fixed_jb_put_first`.
    fn restart(&mut self, f: Frame, now: i64) -> Put {
        while let Some(q) = self.frames.pop_front() {
            self.next_delivery = q.delivery + q.frame.ms;
            self.released.push(Released {
                slot: q.frame.slot,
                played: true,
            });
        }
        self.stats.restarts += 1;
        let mut f = f;
        f.marker = false;
        self.put_first(f, now)
    }

    /// `fixed_jb_get`.
    pub fn get_frame(&mut self, now: i64, interpl: i64) -> Got {
        if now < self.next_delivery {
            return Got::NoFrame;
        }
        let expected = self.next_delivery - self.rxcore - self.jbsize;
        let Some(&head) = self.frames.front() else {
            self.next_delivery += interpl;
            return Got::Interp {
                expected,
                grow: false,
            };
        };
        if now > head.delivery + head.frame.ms {
            self.frames.pop_front();
            self.next_delivery = head.delivery + head.frame.ms;
            return Got::Drop {
                frame: head.frame,
                shrink: false,
            };
        }
        if now < head.delivery {
            self.next_delivery += interpl;
            return Got::Interp {
                expected,
                grow: false,
            };
        }
        self.frames.pop_front();
        self.next_delivery = head.delivery + head.frame.ms;
        Got::Frame(head.frame)
    }

    /// `fixed_jb_next`.
    pub fn next_delivery(&self) -> i64 {
        self.next_delivery
    }

    /// `fixed_jb_set_force_resynch`.
    pub fn set_force_resynch(&mut self) {
        self.force_resynch = true;
    }

    /// `fixed_jb_remove`: the head frame, whatever its time.
    pub fn remove(&mut self) -> Option<Frame> {
        let q = self.frames.pop_front()?;
        self.next_delivery = q.delivery + q.frame.ms;
        Some(q.frame)
    }
}

impl Core for FixedJb {
    fn put(&mut self, frame: Frame, now: i64, first: bool) -> Put {
        if first {
            self.put_first(frame, now)
        } else {
            self.put(frame, now, 0)
        }
    }

    fn get(&mut self, now: i64, interpl: i64) -> Got {
        self.get_frame(now, interpl)
    }

    fn next(&mut self) -> i64 {
        self.next_delivery
    }

    fn force_resync(&mut self) {
        self.force_resynch = true;
    }

    fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    fn released(&mut self) -> &mut Vec<Released> {
        &mut self.released
    }

    fn scheduled(&self, ts: i64) -> i64 {
        self.rxcore + self.jbsize + ts
    }

    fn take_put_losses(&mut self) -> u64 {
        std::mem::take(&mut self.put_losses)
    }
}

#[cfg(test)]
#[path = "asterisk_fixed_tests.rs"]
mod tests;
