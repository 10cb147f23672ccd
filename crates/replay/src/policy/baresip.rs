//! `baresip`: baresip's receive chain for audio (baresip 4.10, `v4.10.0-5-g044dd4e3`, BSD):
//! the jitter buffer `src/jbuf.c` (playout times, since baresip 4.1), the decode timer of
//! `src/rtprecv.c`, and re's audio buffer `rem/aubuf/aubuf.c` (re `v4.10.0-9-g848ed0b6`),
//! read by the audio device once per frame period (anchors-2.md §3.4 describes the older
//! jbuf of re ≤ 2.2, which this preset does not model).
//!
//! What follows the origin:
//! - **Playout time** (`calc_playout_time`): a packet plays at its timestamp plus the least
//!   transit (arrival less timestamp) seen so far plus a jitter offset held within
//!   `min..=max` (`audio_jitter_buffer_ms`, default 100–200 ms). With `type=fixed` (the
//!   default) the offset is `min`. With `type=adaptive` (`adjust_due_to_jitter`) an RFC 3550
//!   style jitter estimate (`J += |D| − J/16`, in sixteenths) takes in only transit changes
//!   larger than `min / 2`, and the offset becomes twice the estimate after every third late
//!   packet (`JBUF_LATE_TRESHOLD`).
//! - **Clock skew** (`adjust_due_to_skew`): a 1/32 average of the transit against the first
//!   one; every 10 s (`JBUF_DRIFT_WINDOW`) a skew beyond ±20 ms (`JBUF_MAX_DRIFT`) restarts
//!   the least-transit search, dropping the packet when the receiver is slower.
//! - **`jbuf_put`**: a packet at or before the last one played is too late and dropped
//!   (`n_late_lost`); packets are kept sorted by sequence number; duplicates are dropped;
//!   with `size` packets (`audio_jitter_buffer_size`, default 50) held the oldest is dropped
//!   (`n_overflow`); a packet put after its playout time is counted late (`n_late`, kept).
//! - **`jbuf_get`**: `ENOENT` when empty or the head is not due; else the head, with
//!   `EAGAIN` when the next packet is due too (the caller gets again at once). Gaps in the
//!   sequence played are counted lost (`n_lost`).
//! - **Decoding** (`decode_frames`): a timer, started at the first packet, gets until
//!   nothing is due, then re-arms for the head's playout time (`jbuf_next_play`, whole
//!   milliseconds) or in 10 ms when the head is not the next sequence number or the buffer
//!   is empty. Each frame decoded goes into the audio buffer; lost frames are not concealed
//!   there (the current decoder passes no loss count).
//! - **The audio buffer** (`aubuf`, fixed mode): the device reads one frame per period; a
//!   read short of a frame is silence and refills to `audio_buffer_min` (default 20 ms)
//!   before playing again; a write beyond `audio_buffer_max` (160 ms) drops the oldest frame
//!   (overrun); the first read drops frames beyond `audio_buffer_min` (live mode).
//!
//! The player ([`crate::playout::player`]): the device reads at the player's clock; jitterlab's
//! millisecond clock (`tmr_jiffies`) is the local time, timestamps are the slots' send times
//! in units of the RTP clock (`clock`). A frame is played when the device reads it; a slot
//! never decoded, or dropped by the audio buffer, is not heard (its media skipped,
//! `removed`); device reads of silence after the first frame are `inserted`.
//!
//! Where jitterlab departs: packets of one timestamp (video fragments) share no playout
//! time here (audio has one packet per timestamp); sequence numbers and timestamps do not
//! wrap; the audio buffer holds whole frames. The per-event target is the jitter buffer's
//! play delay (`c_delay`: the offset above the least transit). The counters are
//! `struct jbuf_stat`'s, with the audio buffer's overruns and underruns beside them.

use std::collections::VecDeque;
use std::sync::OnceLock;

use jitterlab_capture::Nanos;
use serde::Serialize;

use super::keys::{auto_duration, format_auto, key, number, print, print_duration};
use super::{DelayModel, Key, KeyError, Preset, duration_key};
use crate::playout::player::{self, Emitter};
use crate::playout::{PlayoutDetail, PlayoutRun, PlayoutStream};

/// `JBUF_LATE_TRESHOLD`.
const LATE_THRESHOLD: u32 = 3;
/// `JBUF_MAX_DRIFT`, ms.
const MAX_DRIFT_MS: i64 = 20;
/// `JBUF_DRIFT_WINDOW`, ms.
const DRIFT_WINDOW_MS: i64 = 10_000;
/// The decode timer's fallback when nothing is due next, ms.
const FALLBACK_MS: i64 = 10;

/// `audio_jitter_buffer_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JbufType {
    /// `JBUF_FIXED`: the jitter offset is `min`.
    Fixed,
    /// `JBUF_ADAPTIVE`: the offset follows the jitter estimate.
    Adaptive,
}

impl std::fmt::Display for JbufType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Fixed => "fixed",
            Self::Adaptive => "adaptive",
        })
    }
}

/// baresip's audio receive settings (its `config` file's names); `None` is `auto`.
#[derive(Clone, Debug, PartialEq)]
pub struct BaresipConfig {
    /// `audio_jitter_buffer_type`.
    pub jbtype: JbufType,
    /// `audio_jitter_buffer_ms` minimum.
    pub min: Nanos,
    /// `audio_jitter_buffer_ms` maximum.
    pub max: Nanos,
    /// `audio_jitter_buffer_size`, packets.
    pub size: u32,
    /// `audio_buffer` minimum (the audio buffer's wish size).
    pub audio_buffer_min: Nanos,
    /// `audio_buffer` maximum.
    pub audio_buffer_max: Nanos,
    /// The frame period the device reads; `auto`: the stream's usual frame duration.
    pub ptime: Option<Nanos>,
    /// The RTP clock, Hz; `auto`: the stream's, else 8000.
    pub clock: Option<u32>,
    /// Where the device clock falls after the first arrival, in frame periods.
    pub phase: f64,
}

impl Default for BaresipConfig {
    fn default() -> Self {
        Self {
            jbtype: JbufType::Fixed,
            min: Nanos::from_millis(100),
            max: Nanos::from_millis(200),
            size: 50,
            audio_buffer_min: Nanos::from_millis(20),
            audio_buffer_max: Nanos::from_millis(160),
            ptime: None,
            clock: None,
            phase: 0.5,
        }
    }
}

fn jbtype(v: &str) -> Result<JbufType, String> {
    match v {
        "fixed" => Ok(JbufType::Fixed),
        "adaptive" => Ok(JbufType::Adaptive),
        _ => Err(format!("'{v}' (allowed: fixed, adaptive)")),
    }
}

fn packets(v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(n) if (1..=10_000).contains(&n) => Ok(n),
        _ => Err(format!("{v} is out of range (allowed: 1..=10000 packets)")),
    }
}

fn clock(v: &str) -> Result<Option<u32>, String> {
    if v == "auto" {
        return Ok(None);
    }
    match v.parse::<u32>() {
        Ok(n) if (1000..=10_000_000).contains(&n) => Ok(Some(n)),
        _ => Err(format!("{v} is out of range (allowed: auto, 1000..=10000000 Hz)")),
    }
}

fn print_clock(c: &Option<u32>) -> String {
    c.map_or_else(|| "auto".to_owned(), |c| c.to_string())
}

impl Preset for BaresipConfig {
    const NAME: &'static str = "baresip";
    const PLAYOUT_ONLY: bool = true;
    const MEDIA: Option<jitterlab_capture::decode::MediaKind> =
        Some(jitterlab_capture::decode::MediaKind::Audio);
    const PLAYOUT_AXES: &'static str = "type = [\"fixed\", \"adaptive\"]\nmin = [\"20ms\", \"40ms\", \"60ms\", \"100ms\"]\nmax = [\"200ms\", \"400ms\"]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<BaresipConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "type", |c| c.jbtype, print, jbtype),
                key!(Self, "min", |c| c.min, print_duration, |v| {
                    duration_key(v, Nanos::ZERO)
                }),
                key!(Self, "max", |c| c.max, print_duration, |v| {
                    duration_key(v, Nanos::from_millis(1))
                }),
                key!(Self, "size", |c| c.size, print, packets),
                key!(Self, "audio_buffer_min", |c| c.audio_buffer_min, print_duration, |v| {
                    duration_key(v, Nanos::from_millis(1))
                }),
                key!(Self, "audio_buffer_max", |c| c.audio_buffer_max, print_duration, |v| {
                    duration_key(v, Nanos::from_millis(1))
                }),
                key!(Self, "ptime", |c| c.ptime, |d: &Option<Nanos>| format_auto(*d), |v| {
                    auto_duration(v, Nanos::from_millis(1))
                }),
                key!(Self, "clock", |c| c.clock, print_clock, clock),
                key!(Self, "phase", |c| c.phase, print, |v| {
                    number(v, |x| (0.0..1.0).contains(&x), "0 to below 1")
                }),
            ]
        })
    }

    fn validate(&self) -> Result<(), KeyError> {
        if self.min > self.max {
            return Err(KeyError {
                key: "min",
                reason: format!(
                    "{} is above max {}",
                    jitterlab_capture::spec::format_duration(self.min),
                    jitterlab_capture::spec::format_duration(self.max)
                ),
            });
        }
        if self.audio_buffer_min > self.audio_buffer_max {
            return Err(KeyError {
                key: "audio_buffer_min",
                reason: "is above audio_buffer_max".to_owned(),
            });
        }
        Ok(())
    }

    fn max_delay(&self) -> Nanos {
        self.max + self.audio_buffer_max
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }


    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        Some(playout_baresip(stream, self))
    }
}

/// `struct jbuf_stat` at the end of a run, and the audio buffer's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct BaresipStats {
    /// Packets put.
    pub n_put: u64,
    /// `jbuf_get` calls.
    pub n_get: u64,
    /// Out-of-sequence packets.
    pub n_oos: u64,
    /// Duplicates.
    pub n_dups: u64,
    /// Packets put after their playout time (kept).
    pub n_late: u64,
    /// Packets too late by sequence number (dropped).
    pub n_late_lost: u64,
    /// Packets missing from the sequence played.
    pub n_lost: u64,
    /// Packets dropped because `size` were held.
    pub n_overflow: u64,
    /// Flushes (none: jitterlab replays one SSRC).
    pub n_flush: u64,
    /// The jitter buffer's play delay at the end, ms (`c_delay`).
    pub c_delay: u32,
    /// Packets held at the end (`c_packets`).
    pub c_packets: u32,
    /// The jitter estimate at the end, ms (`c_jitter`).
    pub c_jitter: u32,
    /// The clock skew at the end, ms (`c_skew`).
    pub c_skew: i32,
    /// Packets dropped by a skew correction.
    pub skew_drops: u64,
    /// Audio buffer overruns (oldest frame dropped).
    pub aubuf_overrun: u64,
    /// Audio buffer underruns (silence read).
    pub aubuf_underrun: u64,
    /// Mean play delay over the packets put, ms.
    pub mean_delay_ms: f64,
}

/// What `jbuf_get` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Got {
    /// 0: the packet with this index.
    Ok(usize),
    /// `EAGAIN`: the packet with this index, and the next is due too.
    Again(usize),
    /// `ENOENT`.
    NoEntry,
}

/// What `jbuf_put` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Put {
    /// 0.
    Ok,
    /// `ETIMEDOUT`: too late by sequence number.
    TimedOut,
    /// `EALREADY`: a duplicate.
    Already,
    /// `ETIME`: dropped by a skew correction.
    Time,
}

/// baresip's `struct jbuf` over packets numbered `0..n` (their sequence numbers, in order).
#[derive(Debug)]
pub(crate) struct Jbuf {
    srate: i64,
    mind: i64,
    maxd: i64,
    maxsz: usize,
    adaptive: bool,
    stored: Vec<bool>,
    playout: Vec<i64>,
    n: usize,
    head: usize,
    tail: Option<usize>,
    running: bool,
    seq_get: Option<usize>,
    seq_base: i64,
    seq_get16: u16,
    offset: Option<i64>,
    last_transit: Option<i64>,
    jitter: i64,
    jitter_offset: i64,
    delay_estimate: i64,
    active_delay: Option<i64>,
    late_pkts: u32,
    skewt: i64,
    max_skew_ms: i64,
    stats: BaresipStats,
    delay_sum: f64,
}

impl Jbuf {
    /// `jbuf_alloc(mind, maxd, maxsz)`, `jbuf_set_srate`, `jbuf_set_type`, for `count` packets.
    /// Packet `i` has sequence number `seq_base + i` (16 bits on the wire).
    pub(crate) fn new(
        count: usize,
        seq_base: i64,
        srate: i64,
        (mind, maxd): (i64, i64),
        maxsz: usize,
        adaptive: bool,
    ) -> Self {
        Self {
            srate: srate.max(1000),
            mind,
            maxd,
            maxsz: maxsz.max(1),
            adaptive,
            stored: vec![false; count],
            playout: vec![0; count],
            n: 0,
            head: count,
            tail: None,
            running: false,
            seq_get: None,
            seq_base,
            seq_get16: 0,
            offset: None,
            last_transit: None,
            jitter: 0,
            jitter_offset: 0,
            delay_estimate: 0,
            active_delay: None,
            late_pkts: 0,
            skewt: 0,
            max_skew_ms: i64::MIN,
            stats: BaresipStats::default(),
            delay_sum: 0.0,
        }
    }

    fn ms(&self, units: i64) -> i64 {
        units * 1000 / self.srate
    }

    /// `next_play`: the local time in timestamp units, from whole milliseconds.
    fn next_play(&self, now_ms: i64) -> i64 {
        now_ms * (self.srate / 1000)
    }

    fn remove(&mut self, k: usize) {
        self.stored[k] = false;
        self.n -= 1;
        if self.n == 0 {
            self.head = self.stored.len();
            self.tail = None;
        } else if k == self.head {
            let mut h = k + 1;
            while h < self.stored.len() && !self.stored[h] {
                h += 1;
            }
            self.head = h;
        }
        if self.tail == Some(k) && self.n > 0 {
            let mut t = k;
            while t > 0 && !self.stored[t] {
                t -= 1;
            }
            self.tail = Some(t);
        }
    }

    /// `adjust_due_to_jitter`.
    fn adjust_due_to_jitter(&mut self, transit: i64) -> i64 {
        let Some(last) = self.last_transit else {
            self.last_transit = Some(transit);
            return 0;
        };
        let d = (transit - last).abs();
        if self.ms(d) > self.mind / 2 {
            self.jitter = (self.jitter + d - ((self.jitter + 8) >> 4)).max(0);
        }
        let jitter = self.jitter >> 4;
        self.stats.c_jitter = u32::try_from(self.ms(jitter)).unwrap_or(u32::MAX);
        if self.late_pkts >= LATE_THRESHOLD {
            self.late_pkts = 0;
            self.jitter_offset = 2 * jitter;
        }
        self.last_transit = Some(transit);
        self.jitter_offset
    }

    /// `adjust_due_to_skew`: +20 (receiver faster), −20 (slower) or 0.
    fn adjust_due_to_skew(&mut self, delay: i64, now_ms: i64) -> i64 {
        let Some(active) = self.active_delay else {
            self.active_delay = Some(delay);
            self.delay_estimate = delay;
            self.max_skew_ms = i64::MIN;
            self.skewt = now_ms;
            return 0;
        };
        self.delay_estimate = (31 * self.delay_estimate + delay) / 32;
        let skew_ms = self.ms(active - self.delay_estimate);
        self.stats.c_skew = i32::try_from(skew_ms).unwrap_or(0);
        self.max_skew_ms = self.max_skew_ms.max(skew_ms);
        if now_ms - self.skewt > DRIFT_WINDOW_MS {
            let max_skew = self.max_skew_ms;
            self.skewt = now_ms;
            self.max_skew_ms = i64::MIN;
            if max_skew > MAX_DRIFT_MS {
                self.active_delay = Some(self.delay_estimate);
                return -MAX_DRIFT_MS;
            }
            if max_skew < -MAX_DRIFT_MS {
                self.active_delay = Some(self.delay_estimate);
                return MAX_DRIFT_MS;
            }
        }
        0
    }

    /// `jbuf_put` of packet `i` with timestamp `ts`, arriving at `now_ms` (`ts_arrive` is
    /// `now_ms` in timestamp units).
    pub(crate) fn put(&mut self, i: usize, ts: i64, now_ms: i64) -> Put {
        if i >= self.stored.len() {
            return Put::TimedOut;
        }
        if self.running && self.seq_get.is_some_and(|g| i <= g) {
            self.stats.n_late_lost += 1;
            self.late_pkts += 1;
            return Put::TimedOut;
        }
        self.stats.n_put += 1;
        // `packet_alloc`: with the pool used up, the oldest packet is stolen.
        if self.n >= self.maxsz {
            self.stats.n_overflow += 1;
            let h = self.head;
            self.remove(h);
        }
        if self.stored[i] {
            self.stats.n_dups += 1;
            return Put::Already;
        }
        if self.tail.is_some_and(|t| i < t) {
            self.stats.n_oos += 1;
        }
        self.stored[i] = true;
        self.n += 1;
        self.head = self.head.min(i);
        self.tail = Some(self.tail.map_or(i, |t| t.max(i)));
        self.running = true;
        let arrive = self.next_play(now_ms);
        let transit = arrive - ts;
        self.offset = Some(self.offset.map_or(transit, |o| o.min(transit)));
        let base = ts + self.offset.unwrap_or(transit);
        let jitter_offset = if self.adaptive {
            self.adjust_due_to_jitter(transit)
        } else {
            0
        };
        let (min_lat, max_lat) = ((self.srate / 1000) * self.mind, (self.srate / 1000) * self.maxd);
        let jitter_offset = jitter_offset.max(min_lat).min(max_lat.max(min_lat));
        self.stats.c_delay = u32::try_from(self.ms(jitter_offset)).unwrap_or(u32::MAX);
        self.delay_sum += self.ms(jitter_offset) as f64;
        self.playout[i] = base + jitter_offset;
        let skew = self.adjust_due_to_skew(transit, now_ms);
        if skew > 0 {
            self.offset = None;
            return Put::Ok;
        } else if skew < 0 {
            self.offset = None;
            self.remove(i);
            self.stats.skew_drops += 1;
            return Put::Time;
        }
        if self.playout[i] < arrive {
            self.late_pkts += 1;
            self.stats.n_late += 1;
        }
        Put::Ok
    }

    /// `jbuf_get` at `now_ms`.
    pub(crate) fn get(&mut self, now_ms: i64) -> Got {
        self.stats.n_get += 1;
        if self.n == 0 {
            return Got::NoEntry;
        }
        let h = self.head;
        let next = self.next_play(now_ms);
        if self.playout[h] > next {
            return Got::NoEntry;
        }
        if let Some(g) = self.seq_get
            && h > g + 1
        {
                self.stats.n_lost += (h - g - 1) as u64;
        }
        self.seq_get = Some(h);
        self.seq_get16 = (self.seq_base + h as i64) as u16;
        self.remove(h);
        if self.n > 0 && self.playout[self.head] <= next {
            return Got::Again(h);
        }
        Got::Ok(h)
    }

    /// `jbuf_next_play`: milliseconds until the head is due (0: due), or `None` (`-ENOENT`,
    /// `-EPROTO`).
    pub(crate) fn next_play_ms(&self, now_ms: i64) -> Option<i64> {
        if self.n == 0 {
            return None;
        }
        let h = self.head;
        // The origin compares 16-bit sequence numbers; 0 before anything was played.
        if self.seq_get16.wrapping_add(1) != (self.seq_base + h as i64) as u16 {
            return None;
        }
        let current = self.next_play(now_ms);
        if self.playout[h] <= current {
            return Some(0);
        }
        Some(self.ms(self.playout[h] - current).max(1))
    }

    /// The play delay above the least transit, ms (`c_delay`).
    pub(crate) fn delay_ms(&self) -> i64 {
        i64::from(self.stats.c_delay)
    }

    /// The statistics, with the packets held and the mean delay.
    pub(crate) fn state(&self) -> BaresipStats {
        let mut s = self.stats;
        s.c_packets = u32::try_from(self.n).unwrap_or(u32::MAX);
        if s.n_put > 0 {
            s.mean_delay_ms = self.delay_sum / s.n_put as f64;
        }
        s
    }
}

/// re's `aubuf` in fixed mode, in whole frames of one period.
#[derive(Debug)]
struct AudioBuffer {
    frames: VecDeque<usize>,
    wish: i64,
    max: i64,
    fill: i64,
    started: bool,
    overrun: u64,
    underrun: u64,
}

/// What one device read gave.
enum Read {
    Frame(usize),
    Silence,
}

impl AudioBuffer {
    fn new(wish: i64, max: i64, frame: i64) -> Self {
        Self {
            frames: VecDeque::with_capacity((max / frame.max(1)) as usize + 2),
            wish,
            max,
            fill: wish,
            started: false,
            overrun: 0,
            underrun: 0,
        }
    }

    fn cur(&self, frame: i64) -> i64 {
        self.frames.len() as i64 * frame
    }

    /// `aubuf_write`: returns the frame dropped by an overrun.
    fn write(&mut self, slot: usize, frame: i64) -> Option<usize> {
        if self.fill >= frame {
            self.fill -= frame;
        }
        self.frames.push_back(slot);
        if self.max > 0 && self.cur(frame) > self.max {
            self.overrun += 1;
            return self.frames.pop_front();
        }
        None
    }

    /// `aubuf_read` of one frame; frames the first read drops go to `dropped`.
    fn read(&mut self, frame: i64, dropped: &mut Vec<usize>) -> Read {
        let mut out = Read::Silence;
        if self.fill > 0 || self.cur(frame) < frame {
            if self.fill == 0 {
                self.underrun += 1;
                self.fill = self.wish;
                self.started = true;
            }
        } else {
            if !self.started && self.wish > 0 {
                while self.cur(frame) > self.wish {
                    if let Some(f) = self.frames.pop_front() {
                        dropped.push(f);
                    }
                }
            }
            self.started = true;
            if let Some(f) = self.frames.pop_front() {
                out = Read::Frame(f);
            }
        }
        if self.fill > 0 && self.fill < frame {
            self.fill -= frame.min(self.fill);
        }
        out
    }
}

/// Plays `stream` through baresip's receive chain configured by `config`.
pub(crate) fn playout_baresip(stream: &PlayoutStream<'_>, config: &BaresipConfig) -> PlayoutRun {
    let slots = stream.slots();
    let period = player::ptime(stream, config.ptime);
    let Some(mut tick) = player::first_call(stream, period, config.phase) else {
        return PlayoutRun::default();
    };
    let srate = i64::from(
        config
            .clock
            .or(stream.media.clock_rate)
            .filter(|&r| r >= 1000)
            .unwrap_or(8000),
    );
    let arrivals = player::arrivals(stream);
    let Some(&(first, _)) = arrivals.first() else {
        return PlayoutRun::default();
    };
    // tmr_jiffies: whole milliseconds, from an arbitrary start before the first packet.
    let jiffies = |t: Nanos| (t - first).as_nanos().div_euclid(1_000_000) + 1000;
    let at_jiffies = |ms: i64| first + Nanos::from_millis(ms - 1000);
    let base = slots[0].send;
    let ts: Vec<i64> = slots
        .iter()
        .map(|s| (i128::from((s.send - base).as_nanos()) * i128::from(srate) / 1_000_000_000) as i64)
        .collect();
    let ms = |d: Nanos| d.as_nanos() / 1_000_000;
    let mut jb = Jbuf::new(
        slots.len(),
        slots[0].seq,
        srate,
        (ms(config.min), ms(config.max)),
        config.size as usize,
        config.jbtype == JbufType::Adaptive,
    );
    let frame = period.as_nanos();
    let mut ab = AudioBuffer::new(
        config.audio_buffer_min.as_nanos(),
        config.audio_buffer_max.as_nanos(),
        frame,
    );
    let mut emitter = Emitter::new(slots);
    let (mut inserted, mut removed) = (Nanos::ZERO, Nanos::ZERO);
    let mut fed = 0;
    let mut timer: Option<i64> = None;
    let mut dropped: Vec<usize> = Vec::with_capacity(16);
    let mut played_any = false;
    let last_arrival = arrivals.last().map_or(first, |a| a.0);
    let limit = 4 * ((last_arrival - first).as_nanos() / frame + slots.len() as i64) + 10_000;
    let mut target = Nanos::ZERO;
    for _ in 0..limit {
        let next_arrival = arrivals.get(fed).map(|a| a.0);
        let next_timer = timer.map(at_jiffies);
        let now = [next_arrival, next_timer, Some(tick)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(tick);
        if next_arrival == Some(now) {
            let (_, i) = arrivals[fed];
            fed += 1;
            let j = jiffies(now);
            jb.put(i, ts[i], j);
            if timer.is_none() {
                timer = Some(j);
            }
            continue;
        }
        if next_timer == Some(now) {
            // decode_frames
            let j = timer.unwrap_or_default();
            let mut n = 1u32;
            loop {
                let got = jb.get(j);
                let slot = match got {
                    Got::Again(s) => {
                        n += 1;
                        s
                    }
                    Got::Ok(s) => s,
                    Got::NoEntry => break,
                };
                if let Some(d) = ab.write(slot, frame) {
                    removed += period;
                    emitter.concealed(d, now, target);
                }
                n -= 1;
                if n == 0 {
                    break;
                }
            }
            let delay = jb.next_play_ms(j).unwrap_or(FALLBACK_MS);
            timer = Some(j + delay);
            continue;
        }
        // The device reads one frame.
        target = Nanos::from_millis(jb.delay_ms());
        match ab.read(frame, &mut dropped) {
            Read::Frame(s) => {
                for d in dropped.drain(..) {
                    removed += period;
                    emitter.concealed(d, tick, target);
                }
                let skipped = s.saturating_sub(emitter.cursor());
                removed += period * skipped as i64;
                emitter.played(s, tick, target);
                played_any = true;
            }
            Read::Silence => {
                if played_any {
                    inserted += period;
                }
            }
        }
        if emitter.done() || (fed == arrivals.len() && jb.n == 0 && ab.frames.is_empty()) {
            break;
        }
        tick += period;
    }
    let mut stats = jb.state();
    stats.aubuf_overrun = ab.overrun;
    stats.aubuf_underrun = ab.underrun;
    let mut run = emitter.finish(tick, target, inserted, removed);
    run.detail = Some(PlayoutDetail::Baresip(stats));
    run
}

#[cfg(test)]
mod tests {
    use jitterlab_capture::decode::Sample;

    use super::*;
    use crate::Policy;
    use crate::playout::{PlayoutEvent, summarize};

    /// baresip `test/jbuf.c` runs at 8 kHz, where a timestamp unit is 1/8 ms: its
    /// `ts_arrive` and `next_play` values are jiffies (ms) times 8.
    const MS: i64 = 8;

    /// `test_jbuf`'s `testv_20ms` (`jbuf_alloc(0, 100, 10)`, fixed): each packet plays at its
    /// timestamp plus the least transit (160), `jbuf_next_play` is 0 there ("already late"),
    /// and a `get` before the put finds the list empty.
    #[test]
    fn test_jbuf_20ms_vectors() {
        let mut jb = Jbuf::new(4, 1, 8000, (0, 100), 10, false);
        for (i, (ts, arrive, playout)) in [(0, 160, 160), (160, 320, 320), (320, 480, 480), (480, 640, 640)]
            .into_iter()
            .enumerate()
        {
            assert_eq!(jb.get(playout / MS), Got::NoEntry, "empty list");
            assert_eq!(jb.put(i, ts, arrive / MS), Put::Ok);
            assert_eq!(jb.next_play_ms(playout / MS), Some(0), "already late");
            assert_eq!(jb.get(playout / MS), Got::Ok(i));
        }
    }

    /// `testv_20ms_late_loss`: seq 3 before seq 2; seq 2 arrives after 3 was played and is
    /// refused (`ETIMEDOUT`), the get then finds nothing (`ENOENT`); seq 2 is counted lost.
    #[test]
    fn test_jbuf_20ms_late_loss_vectors() {
        let mut jb = Jbuf::new(4, 1, 8000, (0, 100), 10, false);
        // (index, ts, ts_arrive, playout, put, get)
        let steps = [
            (0, 0, 160, 160, Put::Ok, Got::Ok(0)),
            (2, 320, 480, 480, Put::Ok, Got::Ok(2)),
            (1, 160, 488, 320, Put::TimedOut, Got::NoEntry),
            (3, 480, 640, 640, Put::Ok, Got::Ok(3)),
        ];
        for (i, ts, arrive, playout, put, got) in steps {
            assert_eq!(jb.put(i, ts, arrive / MS), put, "put {i}");
            assert_eq!(jb.get(playout / MS), got, "get after {i}");
        }
        assert_eq!(jb.get(640 / MS), Got::NoEntry);
        let s = jb.state();
        assert_eq!((s.n_late_lost, s.n_lost, s.n_put), (1, 1, 3));
    }

    /// `test_jbuf`'s `jbuf_next_play` block: two packets 20 ms apart with no transit; after
    /// the first is played the second is 20 ms away.
    #[test]
    fn test_jbuf_next_play_vector() {
        let mut jb = Jbuf::new(2, 1, 8000, (0, 100), 10, false);
        assert_eq!(jb.next_play_ms(20), None, "-ENOENT on an empty list");
        assert_eq!(jb.put(0, 160, 160 / MS), Put::Ok);
        assert_eq!(jb.put(1, 320, 320 / MS), Put::Ok);
        assert_eq!(jb.get(160 / MS), Got::Ok(0));
        assert_eq!(jb.get(160 / MS), Got::NoEntry);
        assert_eq!(jb.next_play_ms(160 / MS), Some(20));
        assert_eq!(jb.get(320 / MS), Got::Ok(1));
    }

    /// `test_jbuf_adaptive` (`jbuf_alloc(100, 500, 50)`, adaptive): without late packets the
    /// jitter offset stays at the 100 ms minimum, so each packet is due at `playout + 100 ms`.
    #[test]
    fn test_jbuf_adaptive_vectors() {
        let mut jb = Jbuf::new(4, 1, 8000, (100, 500), 50, true);
        for (i, (ts, arrive, playout)) in [(0, 160, 160), (160, 320, 320), (320, 480, 480), (480, 640, 640)]
            .into_iter()
            .enumerate()
        {
            assert_eq!(jb.get(arrive / MS), Got::NoEntry);
            assert_eq!(jb.put(i, ts, arrive / MS), Put::Ok);
            assert_eq!(jb.get((playout - 1) / MS + 100), Got::NoEntry, "not due 1 ms early");
            assert_eq!(jb.get(playout / MS + 100), Got::Ok(i));
        }
        assert_eq!(jb.state().c_delay, 100);
    }

    /// Adaptive mode: only transit changes above `min / 2` feed the jitter estimate, and the
    /// offset moves to twice the estimate at the third late packet.
    #[test]
    fn adaptive_offset_follows_the_jitter_after_three_late_packets() {
        let mut jb = Jbuf::new(100, 1, 8000, (20, 500), 50, true);
        // 20 ms packets, transit 10 ms, except every fifth 100 ms late.
        let mut late_seen = 0;
        for i in 0..40usize {
            let ts = i as i64 * 160;
            let extra = if i % 5 == 4 { 100 } else { 0 };
            let arrive_ms = i as i64 * 20 + 10 + extra;
            jb.put(i, ts, arrive_ms);
            late_seen = jb.state().n_late;
            let _ = jb.get(arrive_ms);
        }
        assert!(late_seen >= 3, "{:?}", jb.state());
        // d = 800 units (100 ms) each time, above min/2: J grows by 800 − J/16 per jump.
        assert!(jb.delay_ms() > 20, "{:?}", jb.state());
        assert!(jb.state().c_jitter > 10, "{:?}", jb.state());
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

    fn play(samples: &[Sample], policy: &str) -> (PlayoutRun, BaresipStats) {
        let policy: Policy = policy.parse().unwrap();
        let run = policy
            .playout(&PlayoutStream::plain(samples, Nanos::ZERO))
            .unwrap();
        let stats = match run.detail {
            Some(PlayoutDetail::Baresip(s)) => s,
            ref other => panic!("no baresip detail: {other:?}"),
        };
        (run, stats)
    }

    /// The defaults on a steady stream: the jitter buffer holds each packet 100 ms past the
    /// least transit, then the device reads it from the audio buffer; every frame plays.
    #[test]
    fn a_steady_stream_plays_every_frame_100ms_behind() {
        let samples = stream(&(0..500).map(|i| (i, i as f64 * 20.0 + 5.0)).collect::<Vec<_>>());
        let (run, st) = play(&samples, "baresip");
        let s = summarize(&run.events);
        assert_eq!((s.frames, s.played), (500, 500), "{s:?} {st:?}");
        assert_eq!((st.n_put, st.n_late, st.n_lost, st.c_delay), (500, 0, 0, 100));
        // Decoded at 105 ms, read at the next device tick (15 + 20k ms).
        assert!(matches!(run.events[0], PlayoutEvent::Played { at, .. } if at == Nanos::from_millis(115)), "{:?}", run.events[0]);
        assert_eq!(run.target(10), Some(Nanos::from_millis(100)));
    }

    /// A 300 ms spike with the fixed 100 ms offset: the held-up packets are late (kept,
    /// `n_late`), the device reads silence meanwhile (underruns), and the burst that follows
    /// overruns nothing at 160 ms of audio buffer but is played late.
    #[test]
    fn a_spike_beyond_the_offset_underruns_the_audio_buffer() {
        let arrivals: Vec<(i64, f64)> = (0..400)
            .map(|i| {
                let at = if (100..115).contains(&i) { 115.0 * 20.0 + 5.0 } else { i as f64 * 20.0 + 5.0 };
                (i, at)
            })
            .collect();
        let (run, st) = play(&stream(&arrivals), "baresip");
        assert!(st.n_late > 0 && st.aubuf_underrun > 0, "{st:?}");
        assert!(run.inserted > Nanos::ZERO, "{st:?}");
        assert_eq!(summarize(&run.events).frames, 400);
        // A larger minimum absorbs it.
        let (run, st) = play(&stream(&arrivals), "baresip:min=400ms,max=500ms");
        assert_eq!((st.n_late, st.aubuf_underrun), (0, 0), "{st:?}");
        assert_eq!(summarize(&run.events).played, 400);
    }

    /// The least transit falls from 100 ms to 5 ms: the packets after the drop are due at
    /// once, decoded together (`EAGAIN`), and a 40 ms audio buffer overruns, dropping the
    /// oldest frames (media skipped).
    #[test]
    fn a_drop_in_transit_overruns_a_small_audio_buffer() {
        let arrivals: Vec<(i64, f64)> = (0..300)
            .map(|i| (i, i as f64 * 20.0 + if i < 100 { 100.0 } else { 5.0 }))
            .collect();
        let (run, st) = play(&stream(&arrivals), "baresip:audio_buffer_max=40ms");
        assert!(st.aubuf_overrun > 0 && run.removed > Nanos::ZERO, "{st:?}");
        let s = summarize(&run.events);
        assert_eq!(s.frames, 300);
        assert!(s.concealed >= st.aubuf_overrun, "{s:?} {st:?}");
        // 160 ms holds the catch-up.
        let (_, st) = play(&stream(&arrivals), "baresip");
        assert_eq!(st.aubuf_overrun, 0, "{st:?}");
    }

    /// A full jitter buffer drops its oldest packet (`n_overflow`).
    #[test]
    fn a_full_jitter_buffer_drops_the_oldest() {
        let samples = stream(&(0..200).map(|i| (i, i as f64 * 20.0 + 5.0)).collect::<Vec<_>>());
        let (run, st) = play(&samples, "baresip:size=3");
        assert!(st.n_overflow > 0, "{st:?}");
        assert!(summarize(&run.events).concealed > 0);
    }

    #[test]
    fn policy_strings_round_trip_and_bad_values_name_the_key() {
        let p: Policy = "baresip".parse().unwrap();
        assert_eq!(
            p.to_string(),
            "baresip:type=fixed,min=100ms,max=200ms,size=50,audio_buffer_min=20ms,\
             audio_buffer_max=160ms,ptime=auto,clock=auto,phase=0.5"
        );
        let p: Policy = "baresip:type=adaptive,min=40ms,max=400ms,size=100,clock=48000".parse().unwrap();
        assert_eq!(p.to_string().parse::<Policy>().unwrap(), p);
        assert!(p.playout_only());
        let msg = |s: &str| s.parse::<Policy>().unwrap_err().to_string();
        assert!(msg("baresip:type=minimize").contains("fixed, adaptive"));
        assert!(msg("baresip:min=300ms").contains("above max"));
        assert!(msg("baresip:size=0").contains("size"));
    }
}
