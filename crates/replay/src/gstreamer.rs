//! A simulation of GStreamer's `rtpjitterbuffer` element (GStreamer 1.22.0,
//! `subprojects/gst-plugins-good/gst/rtpmanager/gstrtpjitterbuffer.c`, `rtpjitterbuffer.c`,
//! `rtptimerqueue.c` and `rtpstats.c`), driven by a capture's arrival times as a virtual clock.
//!
//! The element is fed one RTP stream (one SSRC, every payload type of it, as `rtpbin` feeds it)
//! with each packet's arrival as its DTS, on a clock whose running time is 0 at the stream's
//! first packet. What it does, in the order the element does it:
//!
//! - **Input** (the chain function): the RFC 3550-style jitter estimate and the equidistance
//!   score, the packet-rate estimate (which sets how big a sequence jump or reordering may be
//!   before the element parks packets and resets), the output PTS (below), the gap to the next
//!   expected sequence number (missing packets get LOST timers, or one lost item at once for
//!   those already past saving), the too-late check against the last sequence number popped,
//!   `drop-on-latency`, and sorted insertion (an equal sequence number queued is a duplicate).
//! - **Output PTS** in `slave` mode: the base is the first packet (arrival, RTP time); the PTS
//!   is base arrival + elapsed RTP time + skew, where the skew follows the minimum of
//!   arrival − RTP delta over a window of up to 512 in-sequence packets or 2 s (parabolically
//!   while it fills, then by 1/125 steps); a change of more than 1 s resyncs; PTS never go
//!   against the RTP time's direction; a packet whose PTS + latency is before its arrival
//!   resets the estimate to its arrival. In `none` mode the PTS is the elapsed RTP time from 0;
//!   in `synced` the first arrival plus elapsed RTP time.
//! - **Timers**: the first packet's DEADLINE (its PTS + latency, when output starts) and each
//!   missing packet's LOST timer (its estimated PTS + latency); a lost item goes in the queue
//!   where the packet would be.
//! - **Output**: the head of the queue leaves as soon as it is the next sequence number
//!   expected; an older one is dropped unseen; a newer one waits for its gap to fill or be
//!   declared lost. So a packet leaves at the latest of its arrival, the first deadline and the
//!   LOST timers before it. Playing at PTS + latency is the (clock-synchronised) sink's part.
//!
//! Timers fire in (timeout, sequence number) order before a packet arriving at the same time.
//! Arithmetic follows the element's types: unsigned 64-bit nanoseconds with wrapping where it
//! wraps, 16-bit sequence numbers compared as serial numbers, and 32-bit RTP timestamps
//! extended as `gst_rtp_buffer_ext_timestamp` does.
//!
//! Not modelled: retransmission (`do-retransmission`, which needs a sender), `buffer` mode (its
//! buffering messages need an application to pause the pipeline), RFC 7273 clocks and
//! `max-ts-offset-adjustment`, RTCP sender reports, caps with `seqnum-base`/`npt`, EOS, and the
//! queue-full stall (over 10000 packets spanning 32765 sequence numbers).

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

/// "None" for a clock time (`GST_CLOCK_TIME_NONE`).
const NONE: u64 = u64::MAX;
/// "None" for a sequence number kept in 32 bits (the element's `-1`).
const NO_SEQ: u32 = u32::MAX;
/// One second, ns.
const SECOND: u64 = 1_000_000_000;
/// The skew window's size in packets (`RTP_JITTER_BUFFER_MAX_WINDOW`).
const MAX_WINDOW: usize = 512;
/// The skew window's span while it fills (`MAX_TIME`), ns.
const MAX_TIME: u64 = 2 * SECOND;
/// Largest sequence jump and reordering before the packet rate is known (rtpstats.h).
const DEF_DROPOUT: u32 = 3000;
const MIN_DROPOUT: u32 = 30;
const DEF_MISORDER: u32 = 100;
const MIN_MISORDER: u32 = 10;
/// Consecutive packets beyond a big gap that make the element reset (4 parked + 1).
const BIG_GAP_RESET: usize = 4;

/// How the element times its output (the `mode` property).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// RTP timestamps only, from 0 (`none`).
    None,
    /// Arrival times slaved to the sender's clock with skew estimation (`slave`, the default).
    #[default]
    Slave,
    /// The first arrival, then RTP time: the clocks are assumed synchronised (`synced`).
    Synced,
}

impl Mode {
    /// The property's nickname.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Slave => "slave",
            Self::Synced => "synced",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Self::None),
            "slave" => Ok(Self::Slave),
            "synced" => Ok(Self::Synced),
            "buffer" => Err(
                "'buffer' is not modelled (it needs an application that pauses \
                 the pipeline on buffering messages; allowed: none, slave, synced)"
                    .to_owned(),
            ),
            other => Err(format!("'{other}' (allowed: none, slave, synced)")),
        }
    }
}

/// The element's properties that the simulation honours (defaults as in GStreamer 1.22).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `latency`, ms (default 200).
    pub latency_ms: u32,
    /// `drop-on-latency` (default false).
    pub drop_on_latency: bool,
    /// `do-lost`: push a `GstRTPPacketLost` event per lost item (default false).
    pub do_lost: bool,
    /// `mode` (default slave).
    pub mode: Mode,
    /// `ts-offset`, ns, added to output PTS and timers (default 0).
    pub ts_offset: i64,
    /// `max-dropout-time`, ms (default 60000).
    pub max_dropout_time: u32,
    /// `max-misorder-time`, ms (default 2000).
    pub max_misorder_time: u32,
    /// `faststart-min-packets`: start before the deadline once this many consecutive packets
    /// are queued (default 0: off).
    pub faststart_min_packets: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            latency_ms: 200,
            drop_on_latency: false,
            do_lost: false,
            mode: Mode::Slave,
            ts_offset: 0,
            max_dropout_time: 60_000,
            max_misorder_time: 2_000,
            faststart_min_packets: 0,
        }
    }
}

/// What became of one input packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fate {
    /// Still queued when the input ended (waiting behind a gap, or never processed).
    #[default]
    Queued,
    /// Pushed downstream.
    Pushed,
    /// Dropped on input: its sequence number, or a later one, was already popped (`num-late`).
    Late,
    /// Dropped on input: the same sequence number was queued (`num-duplicates`).
    Duplicate,
    /// Dropped from the head by `drop-on-latency`.
    DroppedOnLatency,
    /// Dropped at the head of the queue, older than the next sequence number expected (after a
    /// multi-packet lost item, a drop on latency or the first deadline): counted nowhere.
    DroppedOld,
    /// Thrown away: by a reset (queued, or parked beyond a big gap and not re-sent), or for
    /// want of a valid PTS.
    Flushed,
}

/// One buffer the element pushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Output {
    /// The packet's index in the input.
    pub packet: u32,
    /// Its output PTS, local time.
    pub pts: Nanos,
    /// When it left the element, local time.
    pub leave: Nanos,
    /// Whether it carried the DISCONT flag (a lost item or a reset came before it).
    pub discont: bool,
}

/// The element's counters (its `stats` property) and what else the simulation saw.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Stats {
    /// `num-pushed`: buffers pushed.
    pub num_pushed: u64,
    /// `num-lost`: sequence numbers declared lost.
    pub num_lost: u64,
    /// `num-late`: packets that arrived after their sequence number (or a later one) left.
    pub num_late: u64,
    /// `num-duplicates`: packets whose sequence number was already queued.
    pub num_duplicates: u64,
    /// `avg-jitter`, ms: the element's interarrival jitter estimate at the end.
    pub avg_jitter_ms: f64,
    /// Lost items queued (one may cover several sequence numbers); with `do-lost` each is a
    /// `GstRTPPacketLost` event downstream.
    pub lost_items: u64,
    /// Queue heads dropped by `drop-on-latency` (its `drop-msg` messages; no stats field).
    pub dropped_on_latency: u64,
    /// Packets dropped unseen at the head of the queue (older than the next expected).
    pub dropped_old: u64,
    /// Packets thrown away by resets.
    pub flushed: u64,
    /// Resets: a big sequence jump confirmed by 5 consecutive packets, or too many timers.
    pub resets: u64,
    /// Buffers that left after PTS + latency: a clock-synchronised sink plays them late.
    pub late_for_sink: u64,
    /// Every buffer pushed, in push order (not in JSON output).
    #[serde(skip)]
    pub outputs: Vec<Output>,
    /// With `do-lost`, every `GstRTPPacketLost` event pushed, in push order (not in JSON
    /// output).
    #[serde(skip)]
    pub lost_events: Vec<LostEvent>,
}

/// One `GstRTPPacketLost` event (with `do-lost`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LostEvent {
    /// The first sequence number lost.
    pub seq: u16,
    /// How many from it.
    pub count: u32,
    /// The estimated PTS of the first, local time.
    pub timestamp: Nanos,
    /// The media time they cover.
    pub duration: Nanos,
    /// When the event left the element, local time.
    pub at: Nanos,
}

/// What one simulation gave: the counters, the pushed buffers, and each input packet's fate
/// and PTS.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Simulation {
    /// The element's counters and outputs.
    pub stats: Stats,
    /// Each input packet's fate, in input order.
    pub fates: Vec<Fate>,
    /// Each input packet's PTS as computed on input, ns of running time (`u64::MAX`: none).
    pts: Vec<u64>,
    /// Local time at running time 0 (the first packet's arrival).
    t0: Nanos,
}

impl Simulation {
    /// Packet `i`'s PTS as computed on input (before ts-offset), local time; `None` when the
    /// element computed none (it was parked, or is out of range).
    pub fn pts(&self, i: usize) -> Option<Nanos> {
        let p = *self.pts.get(i)?;
        (p != NONE).then(|| local(self.t0, p))
    }
}

/// Running time `t` as local time (`t0` is running time 0), saturating: the element's own
/// arithmetic can wrap to huge values.
fn local(t0: Nanos, t: u64) -> Nanos {
    Nanos(
        t0.as_nanos()
            .saturating_add(i64::try_from(t).unwrap_or(i64::MAX)),
    )
}

/// Serial-number comparison of 16-bit sequence numbers (`gst_rtp_buffer_compare_seqnum`):
/// positive when `b` is after `a`.
fn compare(a: u32, b: u32) -> i32 {
    i32::from((b as u16).wrapping_sub(a as u16) as i16)
}

/// `gst_util_uint64_scale_int(v, num, den)`: `v · num / den` rounded down, without overflow.
fn scale(v: u64, num: u64, den: u64) -> u64 {
    if den == 0 {
        return NONE;
    }
    if let Some(p) = v.checked_mul(num) {
        return p / den;
    }
    let r = u128::from(v) * u128::from(num) / u128::from(den);
    u64::try_from(r).unwrap_or(NONE)
}

/// `gst_rtp_buffer_ext_timestamp`: extends `ts` against the last extended value in `ext`.
fn ext_timestamp(ext: &mut u64, ts: u32) -> u64 {
    let ts = u64::from(ts);
    let prev = *ext;
    let result = if prev == NONE {
        (1u64 << 32) + ts
    } else {
        let mut r = ts + (prev & !0xffff_ffff);
        if r < prev {
            if prev - r > i32::MAX as u64 {
                r += 1u64 << 32;
            }
        } else if r - prev > i32::MAX as u64 {
            if r < (1u64 << 32) {
                return 0;
            }
            // Went forward across a wrap: unwrapped back, but the stored value never goes
            // back.
            return r - (1u64 << 32);
        }
        r
    };
    *ext = result;
    result
}

/// The skew estimator and PTS calculation (`RTPJitterBuffer` in rtpjitterbuffer.c).
struct Clock {
    mode: Mode,
    clock_rate: u32,
    delay: u64,
    base_time: u64,
    base_rtptime: u64,
    ext_rtptime: u64,
    last_rtptime: u64,
    window: Box<[i64; MAX_WINDOW]>,
    window_pos: usize,
    window_size: usize,
    window_filling: bool,
    window_min: i64,
    skew: i64,
    prev_out_time: u64,
    prev_send_diff: u64,
    need_resync: bool,
}

impl Clock {
    fn new(mode: Mode, clock_rate: u32, delay: u64) -> Self {
        let mut c = Self {
            mode,
            clock_rate,
            delay,
            base_time: NONE,
            base_rtptime: NONE,
            ext_rtptime: NONE,
            last_rtptime: NONE,
            window: Box::new([0; MAX_WINDOW]),
            window_pos: 0,
            window_size: 0,
            window_filling: true,
            window_min: 0,
            skew: 0,
            prev_out_time: NONE,
            prev_send_diff: NONE,
            need_resync: true,
        };
        c.reset_skew();
        c
    }

    /// `rtp_jitter_buffer_reset_skew`.
    fn reset_skew(&mut self) {
        self.base_time = NONE;
        self.base_rtptime = NONE;
        self.ext_rtptime = NONE;
        self.last_rtptime = NONE;
        self.window_pos = 0;
        self.window_filling = true;
        self.window_min = 0;
        self.skew = 0;
        self.prev_send_diff = NONE;
        self.prev_out_time = NONE;
        self.need_resync = true;
    }

    /// `rtp_jitter_buffer_resync`.
    fn resync(&mut self, time: u64, gstrtptime: u64, reset_skew: bool) {
        self.base_time = time;
        self.base_rtptime = gstrtptime;
        self.prev_out_time = NONE;
        self.prev_send_diff = NONE;
        if reset_skew {
            self.window_filling = true;
            self.window_pos = 0;
            self.window_min = 0;
            self.window_size = 0;
            self.skew = 0;
        }
        self.need_resync = false;
    }

    /// `calculate_skew`: the skew-corrected output time of a packet sent at `gstrtptime` and
    /// received at `time` (`NONE`: no arrival to learn from).
    fn calculate_skew(&mut self, gstrtptime: u64, time: u64, mut gap: i32) -> u64 {
        let mut send_diff = gstrtptime.wrapping_sub(self.base_rtptime);
        if time != NONE && self.base_time != NONE {
            let recv_diff = time.wrapping_sub(self.base_time);
            let mut delta = (recv_diff as i64).wrapping_sub(send_diff as i64);
            if delta.wrapping_sub(self.skew).unsigned_abs() > SECOND {
                self.resync(time, gstrtptime, true);
                send_diff = 0;
                delta = 0;
                gap = 0;
            }
            if gap == 0 {
                self.learn(delta, send_diff);
            }
        }
        if self.base_time == NONE {
            return NONE;
        }
        let out = self.base_time.wrapping_add(send_diff);
        if self.skew < 0 && out < self.skew.unsigned_abs() {
            0
        } else {
            out.wrapping_add(self.skew as u64)
        }
    }

    /// The skew window: a new in-sequence delta.
    fn learn(&mut self, delta: i64, send_diff: u64) {
        let mut pos = self.window_pos;
        if self.window_filling {
            self.window[pos] = delta;
            pos += 1;
            if pos == 1 || delta < self.window_min {
                self.window_min = delta;
            }
            if send_diff >= MAX_TIME || pos >= MAX_WINDOW {
                self.window_size = pos;
                self.skew = self.window_min;
                self.window_filling = false;
            } else {
                // The C code keeps these percentages in a 32-bit int.
                let perc_time = send_diff.wrapping_mul(100).wrapping_div(MAX_TIME) as i32;
                let perc_window = (pos * 100 / MAX_WINDOW) as i32;
                let perc = perc_time.max(perc_window);
                let perc = i64::from(perc.wrapping_mul(perc));
                self.skew = (perc
                    .wrapping_mul(self.window_min)
                    .wrapping_add((10000 - perc).wrapping_mul(self.skew)))
                    / 10000;
                self.window_size = pos + 1;
            }
        } else {
            let old = self.window[pos];
            self.window[pos] = delta;
            pos += 1;
            if delta <= self.window_min {
                self.window_min = delta;
            } else if old == self.window_min {
                let mut min = i64::MAX;
                for &w in &self.window[..self.window_size] {
                    if w == old {
                        min = old;
                        break;
                    }
                    min = min.min(w);
                }
                self.window_min = min;
            }
            self.skew = (self.window_min.wrapping_add(self.skew.wrapping_mul(124))) / 125;
        }
        if pos >= self.window_size {
            pos = 0;
        }
        self.window_pos = pos;
    }

    /// `rtp_jitter_buffer_calculate_pts`.
    fn calculate_pts(&mut self, dts: u64, rtptime: u32, gap: i32) -> u64 {
        let rate = u64::from(self.clock_rate);
        if dts != NONE
            && self.mode != Mode::Slave
            && self.base_time != NONE
            && self.last_rtptime != NONE
        {
            let mut ext = self.ext_rtptime;
            let ext = ext_timestamp(&mut ext, rtptime);
            if ext > self.last_rtptime.wrapping_add(3 * rate)
                || ext.wrapping_add(3 * rate) < self.last_rtptime
            {
                self.reset_skew();
            }
        }
        let ext = ext_timestamp(&mut self.ext_rtptime, rtptime);
        if self.last_rtptime != NONE && ext == self.last_rtptime {
            return self.prev_out_time;
        }
        self.last_rtptime = ext;
        let gstrtptime = scale(ext, SECOND, rate);
        if self.base_rtptime != NONE && gstrtptime < self.base_rtptime {
            self.need_resync = true;
        }
        let dts = match self.mode {
            Mode::None if self.base_time == NONE => 0,
            Mode::None => NONE,
            Mode::Synced if self.base_time != NONE && !self.need_resync => NONE,
            _ => dts,
        };
        if self.need_resync && dts != NONE {
            self.resync(dts, gstrtptime, false);
        }
        let mut pts = self.calculate_skew(gstrtptime, dts, gap);
        let sd = gstrtptime.wrapping_sub(self.base_rtptime);
        if pts != NONE
            && self.prev_out_time != NONE
            && self.prev_send_diff != NONE
            && ((sd > self.prev_send_diff && pts < self.prev_out_time)
                || (sd < self.prev_send_diff && pts > self.prev_out_time)
                || sd == self.prev_send_diff)
        {
            pts = self.prev_out_time;
        }
        if gap == 0 && dts != NONE && pts.wrapping_add(self.delay) < dts {
            self.reset_skew();
            self.resync(dts, gstrtptime, true);
            pts = dts;
        }
        self.prev_out_time = pts;
        self.prev_send_diff = gstrtptime.wrapping_sub(self.base_rtptime);
        pts
    }
}

/// `RTPPacketRateCtx` (rtpstats.c): packets per second, for the dropout and misorder limits.
#[derive(Clone, Copy)]
struct PacketRate {
    probed: bool,
    clock_rate: u32,
    last_seqnum: u16,
    last_ts: u64,
    avg: u32,
}

impl PacketRate {
    fn new(clock_rate: u32) -> Self {
        Self {
            probed: false,
            clock_rate,
            last_seqnum: 0,
            last_ts: NONE,
            avg: u32::MAX,
        }
    }

    /// `gst_rtp_packet_rate_ctx_update`, in the C code's 32-bit arithmetic.
    fn update(&mut self, seqnum: u16, ts: u32) {
        if self.clock_rate == 0 {
            return;
        }
        let mut new_ts = self.last_ts;
        ext_timestamp(&mut new_ts, ts);
        if self.probed {
            let diff_seqnum = compare(u32::from(self.last_seqnum), u32::from(seqnum));
            if diff_seqnum <= 15000 {
                if diff_seqnum <= 0 || new_ts <= self.last_ts {
                    return;
                }
                let diff_ts = scale(new_ts - self.last_ts, SECOND, u64::from(self.clock_rate));
                let new_rate = scale(diff_seqnum as u64, SECOND, diff_ts) as i32;
                let base: i32 = if self.avg > new_rate as u32 {
                    ((self.avg / 3) as i32).max(8)
                } else {
                    ((self.avg / 15) as i32).max(2)
                };
                let diff = diff_seqnum.min(base - 1);
                let a = ((base - diff) as u32).wrapping_mul(self.avg);
                let b = new_rate.wrapping_mul(diff) as u32;
                self.avg = a.wrapping_add(b) / base as u32;
            }
        } else {
            self.probed = true;
        }
        self.last_seqnum = seqnum;
        self.last_ts = new_ts;
    }

    fn max_dropout(&self, time_ms: u32) -> u32 {
        if time_ms == 0 || !self.probed || self.avg == u32::MAX {
            return DEF_DROPOUT;
        }
        MIN_DROPOUT.max(self.avg.wrapping_mul(time_ms) / 1000)
    }

    fn max_misorder(&self, time_ms: u32) -> u32 {
        if time_ms == 0 || !self.probed || self.avg == u32::MAX {
            return DEF_MISORDER;
        }
        MIN_MISORDER.max(self.avg.wrapping_mul(time_ms) / 1000)
    }
}

/// An item of the packet queue.
#[derive(Clone, Copy)]
struct Item {
    seq: u32,
    /// Sequence numbers it covers (1 for a buffer).
    count: u32,
    /// The packet's index, or `u32::MAX` for a lost item.
    packet: u32,
    pts: u64,
    /// A lost item's duration, ns.
    duration: u64,
    /// RTP timestamp (lost items: 0xFFFFFFFF, as the element stores `-1`).
    rtptime: u32,
}

const LOST: u32 = u32::MAX;

#[derive(Clone, Copy, PartialEq, Eq)]
enum TimerKind {
    Deadline,
    Lost,
}

#[derive(Clone, Copy)]
struct Timer {
    kind: TimerKind,
    seq: u32,
    timeout: u64,
    offset: i64,
    duration: u64,
}

/// The element itself.
struct Element<'a> {
    cfg: &'a Config,
    packets: &'a [Sample],
    t0: Nanos,
    /// RTP timestamps are synthesised from send times at 90 kHz (no clock rate known).
    synth: bool,
    clock: Clock,
    rate: PacketRate,
    latency_ns: u64,
    // Jitter estimate.
    last_dts: u64,
    last_rtptime: u64,
    avg_jitter: u64,
    equidistant: i32,
    last_pt: i32,
    next_in_seqnum: u32,
    last_in_pts: u64,
    ips_rtptime: Option<u32>,
    ips_pts: u64,
    packet_spacing: u64,
    next_seqnum: u32,
    last_popped_seqnum: u32,
    discont: bool,
    gap_packets: [u32; 8],
    gap_len: usize,
    queue: std::collections::VecDeque<Item>,
    timers: std::collections::VecDeque<Timer>,
    /// One bit per 16-bit sequence number: whether it has a timer.
    timer_bits: Vec<u64>,
    stats: Stats,
    fates: Vec<Fate>,
    pts: Vec<u64>,
}

impl Element<'_> {
    fn seq_of(&self, i: usize) -> u32 {
        u32::from(self.packets[i].seq as u16)
    }

    fn rtptime_of(&self, i: usize) -> u32 {
        let s = &self.packets[i];
        if self.synth {
            (i128::from(s.send.as_nanos()) * 90_000 / 1_000_000_000) as u32
        } else {
            s.rtp_timestamp as u32
        }
    }

    fn dts_of(&self, i: usize) -> u64 {
        (self.packets[i].arrival - self.t0).as_nanos().max(0) as u64
    }

    fn timeout_offset(&self) -> i64 {
        self.cfg.ts_offset.wrapping_add(self.latency_ns as i64)
    }

    /// `apply_offset`: ts-offset added, clamped at 0.
    fn apply_offset(&self, t: u64) -> u64 {
        if t == NONE {
            return NONE;
        }
        let off = self.cfg.ts_offset;
        if t <= i64::MAX as u64 {
            let r = (t as i64).wrapping_add(off);
            if r >= 0 { r as u64 } else { 0 }
        } else if off < 0 && t < off.unsigned_abs() {
            0
        } else {
            t.wrapping_add(off as u64)
        }
    }

    /// `calculate_jitter`.
    fn calculate_jitter(&mut self, dts: u64, rtptime: u32) {
        let dtsdiff = if self.last_dts != NONE {
            dts.wrapping_sub(self.last_dts) as i64
        } else {
            0
        };
        let rtpdiff = if self.last_rtptime != NONE {
            rtptime.wrapping_sub(self.last_rtptime as u32) as i32
        } else {
            0
        };
        if u64::from(rtptime) == self.last_rtptime {
            self.equidistant -= 2;
        } else {
            self.equidistant += 1;
        }
        self.equidistant = self.equidistant.clamp(-7, 7);
        self.last_dts = dts;
        self.last_rtptime = u64::from(rtptime);
        let rate = u64::from(self.clock.clock_rate);
        let rtpdiffns = if rtpdiff > 0 {
            scale(rtpdiff as u64, SECOND, rate) as i64
        } else {
            -(scale(u64::from(rtpdiff.unsigned_abs()), SECOND, rate) as i64)
        };
        let diff = dtsdiff.wrapping_sub(rtpdiffns).unsigned_abs();
        self.avg_jitter = (diff.wrapping_add(self.avg_jitter.wrapping_mul(15))) >> 4;
    }

    /// `calculate_packet_spacing`.
    fn packet_spacing(&mut self, rtptime: u32, pts: u64) {
        if self.ips_rtptime != Some(rtptime) {
            if self.ips_pts != NONE && pts != NONE && pts > self.ips_pts {
                let new = pts - self.ips_pts;
                let old = self.packet_spacing;
                self.packet_spacing = if old > new {
                    new.wrapping_add(old.wrapping_mul(3)) / 4
                } else if old > 0 {
                    new.wrapping_mul(3).wrapping_add(old) / 4
                } else {
                    new
                };
            }
            self.ips_rtptime = Some(rtptime);
            self.ips_pts = pts;
        }
    }

    /// The timer of `seq` (the element keeps at most one per sequence number), found through
    /// a bit per 16-bit sequence number so that packets without one cost no search.
    fn find_timer(&self, seq: u32) -> Option<usize> {
        let s = (seq & 0xffff) as usize;
        if self.timer_bits[s / 64] & (1 << (s % 64)) == 0 {
            return None;
        }
        self.timers.iter().position(|t| t.seq == seq)
    }

    fn mark_timer(&mut self, seq: u32, on: bool) {
        let s = (seq & 0xffff) as usize;
        if on {
            self.timer_bits[s / 64] |= 1 << (s % 64);
        } else {
            self.timer_bits[s / 64] &= !(1 << (s % 64));
        }
    }

    fn remove_timer(&mut self, k: usize) -> Option<Timer> {
        let t = self.timers.remove(k)?;
        self.mark_timer(t.seq, false);
        Some(t)
    }

    /// `rtp_timer_queue_set_timer`: creates or updates the timer of `seq`, kept sorted by
    /// timeout then sequence number.
    fn set_timer(&mut self, kind: TimerKind, seq: u32, timeout: u64, offset: i64, duration: u64) {
        if let Some(k) = self.find_timer(seq) {
            self.remove_timer(k);
        }
        let timer = Timer {
            kind,
            seq,
            timeout: timeout.wrapping_add(offset as u64),
            offset,
            duration,
        };
        self.insert_timer(timer);
    }

    /// Inserts where the element's tail-first scan puts it: after the last timer that is
    /// earlier, or as early with a lower sequence number (found by bisection on the timeout,
    /// then a walk over the equal ones).
    fn insert_timer(&mut self, timer: Timer) {
        let mut at = self
            .timers
            .partition_point(|it| it.timeout <= timer.timeout);
        while at > 0 {
            let it = &self.timers[at - 1];
            if it.timeout < timer.timeout || compare(timer.seq, it.seq) < 0 {
                break;
            }
            at -= 1;
        }
        self.mark_timer(timer.seq, true);
        self.timers.insert(at, timer);
    }

    /// `insert_lost_event`.
    fn insert_lost_event(&mut self, seq: u32, lost: u32, timestamp: u64, duration: u64) {
        self.stats.num_lost += u64::from(lost);
        let next_in = (seq + lost) & 0xffff;
        if compare(self.next_in_seqnum, next_in) > 0 {
            self.next_in_seqnum = next_in;
            self.last_in_pts = timestamp;
        }
        let item = Item {
            seq,
            count: lost,
            packet: LOST,
            pts: timestamp,
            duration,
            rtptime: u32::MAX,
        };
        if self.insert(item) {
            self.stats.lost_items += 1;
        }
    }

    /// `rtp_jitter_buffer_insert`: sorted by sequence number; `false` for a duplicate.
    fn insert(&mut self, item: Item) -> bool {
        let mut at = self.queue.len();
        while at > 0 {
            let gap = compare(item.seq, self.queue[at - 1].seq);
            if gap == 0 {
                return false;
            }
            if gap < 0 {
                break;
            }
            at -= 1;
        }
        self.queue.insert(at, item);
        true
    }

    /// `gst_rtp_jitter_buffer_handle_missing_packets` (retransmission off): LOST timers for
    /// `expected..current`, or one lost item at once for those already too late.
    fn handle_missing(&mut self, expected: u32, current: u32, pts: u64, gap: i32, now: u64) {
        let offset = self.timeout_offset();
        let mut missing = expected;
        let (est_dur, mut est_pts);
        if self.equidistant > 0 {
            let total = (pts as i64).wrapping_sub(self.last_in_pts as i64).max(0);
            let mut dur = (total / i64::from(gap + 1)) as u64;
            if total > 0 && self.packet_spacing != 0 {
                dur = self.packet_spacing;
            }
            est_dur = dur;
            est_pts = self.last_in_pts.wrapping_add(dur);
            if now > est_pts.wrapping_add(offset as u64) {
                let gap_time = (pts as i64).wrapping_sub(est_pts as i64).max(0) as u64;
                let saveable = (offset as u64).checked_div(dur).unwrap_or(0) as u32;
                let lost = gap.wrapping_sub(saveable as i32).max(1) as u32;
                let saveable = (gap as u32).wrapping_sub(lost);
                let saveable_dur = u64::from(saveable).wrapping_mul(dur).min(gap_time);
                let lost_dur = gap_time.wrapping_sub(saveable_dur);
                let ts = self.apply_offset(est_pts);
                self.insert_lost_event(missing, lost, ts, lost_dur);
                if let Some(k) = self.find_timer(missing)
                    && self.timers[k].kind != TimerKind::Deadline
                {
                    self.remove_timer(k);
                }
                missing = (missing + lost) & 0xffff;
                est_pts = est_pts.wrapping_add(lost_dur);
            }
        } else {
            est_dur = 0;
            est_pts = pts;
        }
        let remaining_gap = (current.wrapping_sub(missing)) as u16;
        let remaining = (pts as i64).wrapping_sub(est_pts as i64).max(0);
        let remainder = remaining
            .wrapping_sub(est_dur.wrapping_mul(u64::from(remaining_gap)) as i64)
            .max(0);
        for i in 0..remaining_gap {
            let mut duration = est_dur;
            if i == 0 {
                duration = duration.wrapping_add(remainder as u64);
            }
            let left = (pts as i64).wrapping_sub(est_pts as i64).max(0) as u64;
            duration = duration.min(left);
            // No timer can exist for it yet: missing numbers start at the next expected one,
            // which only moves forward until a reset clears every timer (so the element's
            // create-or-update lookup is skipped, keeping a long gap linear).
            self.insert_timer(Timer {
                kind: TimerKind::Lost,
                seq: missing,
                timeout: est_pts.wrapping_add(offset as u64),
                offset,
                duration,
            });
            missing = (missing + 1) & 0xffff;
            est_pts = est_pts.wrapping_add(duration);
        }
    }

    /// `handle_big_gap_buffer`: parks packet `i`; `true` when 5 consecutive ones of the same
    /// payload type call for a reset.
    fn big_gap(&mut self, i: usize, pt: u8) -> bool {
        if self.gap_len == 0 {
            self.gap_packets[0] = i as u32;
            self.gap_len = 1;
            return false;
        }
        let before = self.gap_len;
        self.park(i);
        let mut consecutive = true;
        let mut prev: Option<u32> = None;
        for k in 0..self.gap_len {
            let p = self.gap_packets[k] as usize;
            consecutive = self.packets[p].payload_type.unwrap_or(0) == pt;
            let s = self.seq_of(p);
            match prev {
                None => prev = Some(s),
                Some(ps) if compare(s, ps) != -1 => consecutive = false,
                Some(_) => prev = Some(s),
            }
            if !consecutive {
                break;
            }
        }
        if consecutive && before >= BIG_GAP_RESET {
            true
        } else {
            if !consecutive {
                self.drop_parked();
            }
            false
        }
    }

    /// Parks packet `i` among the gap packets, in sequence order.
    fn park(&mut self, i: usize) {
        if self.gap_len >= self.gap_packets.len() {
            let oldest = self.gap_packets[0] as usize;
            self.fates[oldest] = Fate::Flushed;
            self.stats.flushed += 1;
            self.gap_packets.copy_within(1.., 0);
            self.gap_len -= 1;
        }
        let s = self.seq_of(i);
        let mut at = self.gap_len;
        while at > 0 && compare(self.seq_of(self.gap_packets[at - 1] as usize), s) < 0 {
            at -= 1;
        }
        self.gap_packets.copy_within(at..self.gap_len, at + 1);
        self.gap_packets[at] = i as u32;
        self.gap_len += 1;
    }

    fn drop_parked(&mut self) {
        for k in 0..self.gap_len {
            let p = self.gap_packets[k] as usize;
            self.fates[p] = Fate::Flushed;
            self.stats.flushed += 1;
        }
        self.gap_len = 0;
    }

    /// `gst_rtp_jitter_buffer_reset`: flushes everything and re-sends the parked packets.
    fn reset(&mut self, seqnum: u32, now: u64) {
        self.stats.resets += 1;
        while let Some(item) = self.queue.pop_front() {
            if item.packet != LOST {
                self.fates[item.packet as usize] = Fate::Flushed;
                self.stats.flushed += 1;
            }
        }
        self.clock.reset_skew();
        while let Some(t) = self.timers.pop_front() {
            self.mark_timer(t.seq, false);
        }
        self.discont = true;
        self.last_popped_seqnum = NO_SEQ;
        self.next_seqnum = if self.gap_len > 0 {
            self.seq_of(self.gap_packets[0] as usize)
        } else {
            seqnum
        };
        self.last_in_pts = NONE;
        self.next_in_seqnum = NO_SEQ;
        self.ips_rtptime = None;
        self.ips_pts = NONE;
        let parked = self.gap_packets;
        let n = self.gap_len;
        self.gap_len = 0;
        for &p in &parked[..n] {
            self.chain(p as usize, now);
        }
    }

    /// `gst_rtp_jitter_buffer_chain` for packet `i` at clock time `now`.
    fn chain(&mut self, i: usize, now: u64) {
        let seqnum = self.seq_of(i);
        let rtptime = self.rtptime_of(i);
        let pt = self.packets[i].payload_type.unwrap_or(0);
        let dts = self.dts_of(i);
        if self.last_pt != i32::from(pt) {
            // The clock rate comes from caps again, and the packet rate starts over.
            self.last_pt = i32::from(pt);
            self.rate = PacketRate::new(self.clock.clock_rate);
        }
        self.calculate_jitter(dts, rtptime);
        let expected = self.next_in_seqnum;
        self.rate.update(seqnum as u16, rtptime);
        let max_dropout = self.rate.max_dropout(self.cfg.max_dropout_time);
        let max_misorder = self.rate.max_misorder(self.cfg.max_misorder_time);
        let pts;
        let mut do_next_seqnum = false;
        if expected == NO_SEQ {
            pts = self.clock.calculate_pts(dts, rtptime, 0);
            if pts == NONE {
                self.fates[i] = Fate::Flushed;
                return;
            }
            let offset = self.timeout_offset();
            self.set_timer(TimerKind::Deadline, seqnum, pts, offset, 0);
            do_next_seqnum = true;
            self.ips_rtptime = Some(rtptime);
            self.ips_pts = pts;
        } else {
            let gap = compare(expected, seqnum);
            if gap > 0 && self.timers.len() as u32 >= max_dropout {
                self.park(i);
                self.reset(seqnum, now);
                return;
            }
            if (gap != -1 && gap < -(max_misorder as i32)) || gap >= max_dropout as i32 {
                if self.big_gap(i, pt) {
                    self.reset(seqnum, now);
                }
                return;
            }
            if self.gap_len > 0 {
                self.drop_parked();
            }
            pts = self.clock.calculate_pts(dts, rtptime, gap);
            if pts == NONE {
                self.fates[i] = Fate::Flushed;
                return;
            }
            if gap == 0 {
                self.packet_spacing(rtptime, pts);
                do_next_seqnum = true;
            } else {
                if gap > 0 {
                    self.handle_missing(expected, seqnum, pts, gap, now);
                    do_next_seqnum = true;
                } else if let Some(k) = self.find_timer(seqnum)
                    && self.timers[k].kind == TimerKind::Lost
                {
                    self.remove_timer(k);
                }
                self.ips_rtptime = None;
                self.ips_pts = NONE;
            }
        }
        self.pts[i] = pts;
        if do_next_seqnum {
            self.last_in_pts = pts;
            self.next_in_seqnum = (seqnum + 1) & 0xffff;
        }
        if self.last_popped_seqnum != NO_SEQ && compare(self.last_popped_seqnum, seqnum) <= 0 {
            self.stats.num_late += 1;
            self.fates[i] = Fate::Late;
            return;
        }
        if self.cfg.latency_ms > 0 && self.cfg.drop_on_latency {
            let latency_ts = scale(
                u64::from(self.cfg.latency_ms),
                u64::from(self.clock.clock_rate),
                1000,
            );
            if u64::from(self.ts_diff()) >= latency_ts
                && let Some(old) = self.queue.pop_front()
            {
                self.next_seqnum = (old.seq + old.count) & 0xffff;
                self.stats.dropped_on_latency += 1;
                if old.packet != LOST {
                    self.fates[old.packet as usize] = Fate::DroppedOnLatency;
                }
            }
        }
        let item = Item {
            seq: seqnum,
            count: 1,
            packet: i as u32,
            pts,
            duration: 0,
            rtptime,
        };
        if !self.insert(item) {
            self.stats.num_duplicates += 1;
            self.fates[i] = Fate::Duplicate;
            return;
        }
        self.fast_start();
    }

    /// `rtp_jitter_buffer_get_ts_diff`: RTP time from the head of the queue to its tail.
    fn ts_diff(&self) -> u32 {
        match (self.queue.front(), self.queue.back()) {
            (Some(lo), Some(hi)) if self.queue.len() > 1 => hi.rtptime.wrapping_sub(lo.rtptime),
            _ => 0,
        }
    }

    /// `gst_rtp_jitter_buffer_fast_start`: the deadline fires now once enough consecutive
    /// packets are queued.
    fn fast_start(&mut self) {
        let n = self.cfg.faststart_min_packets as usize;
        if n == 0 {
            return;
        }
        let Some(head) = self.queue.front() else {
            return;
        };
        let Some(k) = self.find_timer(head.seq) else {
            return;
        };
        if self.timers[k].kind != TimerKind::Deadline || self.queue.len() < n {
            return;
        }
        let consecutive = self
            .queue
            .iter()
            .take(n)
            .zip(self.queue.iter().skip(1))
            .all(|(a, b)| (a.seq + 1) & 0xffff == b.seq);
        if consecutive && let Some(mut t) = self.remove_timer(k) {
            t.timeout = 0;
            self.mark_timer(t.seq, true);
            self.timers.push_front(t);
        }
    }

    /// Fires every timer due at or before `now`, each at its own time (or `now` if it was set
    /// in the past), pushing what each releases.
    fn fire_until(&mut self, now: u64, clock: &mut u64) {
        while let Some(t) = self.timers.front().copied() {
            if t.timeout > now {
                break;
            }
            self.timers.pop_front();
            self.mark_timer(t.seq, false);
            *clock = (*clock).max(t.timeout);
            match t.kind {
                TimerKind::Deadline => {
                    if self.next_seqnum == NO_SEQ {
                        self.next_seqnum = t.seq;
                    }
                }
                TimerKind::Lost => {
                    let ts = self.apply_offset(t.timeout.wrapping_sub(t.offset as u64));
                    self.insert_lost_event(t.seq, 1, ts, t.duration);
                }
            }
            self.push_ready(*clock);
        }
    }

    /// The output loop (`handle_next_buffer`, `pop_and_push_next`) at clock time `now`.
    fn push_ready(&mut self, now: u64) {
        while let Some(&head) = self.queue.front() {
            if self.next_seqnum == NO_SEQ {
                return;
            }
            let gap = compare(self.next_seqnum, head.seq);
            if gap > 0 {
                return;
            }
            self.queue.pop_front();
            if gap < 0 {
                if head.packet != LOST {
                    self.fates[head.packet as usize] = Fate::DroppedOld;
                    self.stats.dropped_old += 1;
                }
                continue;
            }
            if head.packet == LOST {
                self.discont = true;
                if self.cfg.do_lost {
                    self.stats.lost_events.push(LostEvent {
                        seq: head.seq as u16,
                        count: head.count,
                        timestamp: local(self.t0, head.pts),
                        duration: Nanos(head.duration.min(i64::MAX as u64) as i64),
                        at: local(self.t0, now),
                    });
                }
            } else {
                let pts = self.apply_offset(head.pts);
                let discont = std::mem::take(&mut self.discont);
                self.stats.num_pushed += 1;
                self.fates[head.packet as usize] = Fate::Pushed;
                if now > pts.saturating_add(self.latency_ns) {
                    self.stats.late_for_sink += 1;
                }
                self.stats.outputs.push(Output {
                    packet: head.packet,
                    pts: local(self.t0, pts),
                    leave: local(self.t0, now),
                    discont,
                });
            }
            self.last_popped_seqnum = head.seq;
            self.next_seqnum = (head.seq + head.count) & 0xffff;
        }
    }
}

/// Runs the element over one stream's packets (in arrival order) with RTP clock `clock_rate`
/// (`None`: RTP timestamps are made from the send times at 90 kHz, for streams that are not
/// RTP).
pub fn simulate(cfg: &Config, packets: &[Sample], clock_rate: Option<u32>) -> Simulation {
    let t0 = packets.first().map_or(Nanos::ZERO, |s| s.arrival);
    let rate = clock_rate.filter(|&r| r > 0).unwrap_or(90_000);
    let latency_ns = u64::from(cfg.latency_ms) * 1_000_000;
    let mut el = Element {
        cfg,
        packets,
        t0,
        synth: clock_rate.is_none_or(|r| r == 0),
        clock: Clock::new(cfg.mode, rate, latency_ns),
        rate: PacketRate::new(rate),
        latency_ns,
        last_dts: NONE,
        last_rtptime: NONE,
        avg_jitter: 0,
        equidistant: 0,
        last_pt: -1,
        next_in_seqnum: NO_SEQ,
        last_in_pts: 0,
        ips_rtptime: None,
        ips_pts: NONE,
        packet_spacing: 0,
        next_seqnum: NO_SEQ,
        last_popped_seqnum: NO_SEQ,
        discont: false,
        gap_packets: [0; 8],
        gap_len: 0,
        queue: std::collections::VecDeque::with_capacity(64),
        timers: std::collections::VecDeque::with_capacity(16),
        timer_bits: vec![0; 1024],
        stats: Stats {
            outputs: Vec::with_capacity(packets.len()),
            ..Stats::default()
        },
        fates: vec![Fate::Queued; packets.len()],
        pts: vec![NONE; packets.len()],
    };
    let mut clock = 0u64;
    for i in 0..packets.len() {
        let t = el.dts_of(i);
        el.fire_until(t, &mut clock);
        clock = clock.max(t);
        el.chain(i, clock);
        el.fire_until(clock, &mut clock);
        el.push_ready(clock);
    }
    // The input ends: every timer left fires at its time.
    el.fire_until(NONE - 1, &mut clock);
    // Parked packets never re-sent are lost with the element.
    if el.gap_len > 0 {
        el.drop_parked();
    }
    el.stats.avg_jitter_ms = el.avg_jitter as f64 / 1e6;
    Simulation {
        stats: el.stats,
        fates: el.fates,
        pts: el.pts,
        t0,
    }
}

#[cfg(test)]
mod tests;
