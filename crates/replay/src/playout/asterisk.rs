//! The callers of Asterisk's two jitter buffers, shared by the `asterisk` and `asterisk-fixed`
//! presets: who calls `put` and `get`, when, and with what clock.
//!
//! Asterisk's buffers (`main/jitterbuf.c`, `main/fixedjitterbuf.c`) are passive: they are told
//! a frame arrived (`put`, with the frame's timestamp and the receiver's time, both whole
//! milliseconds) and are asked for a frame at a given time (`get`). Two programs drive them,
//! and they drive them differently, so both are modelled ([`Variant`]):
//!
//! - **Asterisk** (`main/abstract_jb.c`, the jitterbuffer framehook of Asterisk 12 and later,
//!   read at `f0c1c1a7`, 2026-08): every voice frame read from the channel is `put` at its
//!   arrival, and the buffer is asked for one frame on that same read when the next frame is
//!   due within one frame interval; a timer firing every frame interval asks again whenever a
//!   frame is due. A frame the buffer refuses on `put` is passed straight through to the
//!   channel (it is heard at its arrival, out of the buffer's timing).
//! - **VoIPmonitor** (`rtp.cpp` `RTP::jitterbuffer` and `jitterbuffer/abstract_jb.c`, read at
//!   `2ec3c37a`, 2026.04): the sniffer simulates the buffer from the capture. Its clock
//!   (`last_ts`) starts at the first packet's arrival and steps by one packetization at a
//!   time, and it only steps when a packet arrives: before a packet arriving at `A` is put, the
//!   buffer is asked for frames at every step up to `A − 2·ptime` (`msdiff ≥ ptime`, where
//!   `msdiff = A − (last_ts + ptime)`). A frame therefore still plays if it arrives up to two
//!   packetizations after the step that plays it. Every frame concealed, dropped or missing at
//!   a step counts in a loss-burst histogram, from which it computes MOS ([`VoipmonitorMos`]).
//!   A marker bit (and the first packet after comfort noise) forces a resynchronisation
//!   (`channel->resync = 1` for the three MOS buffers).
//!
//! Both run in one pass over the stream's units in arrival order with no allocation per
//! packet. The buffers' outcomes are turned into one [`PlayoutEvent`] per slot:
//! a frame returned by `get` is played then; a slot the buffer interpolates for (a missing or
//! late frame) is concealed then; a frame dropped (late, or to shrink the delay) is concealed
//! when dropped; comfort-noise slots (never put, as in both programs) count as played silence.
//! Slots still unplayed when the buffer is empty are concealed at the time of the slot before.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;
use serde::Serialize;

use super::{PlayoutEvent, PlayoutRun, PlayoutStream, Slot, Targets};

/// The `jb_next` value meaning "nothing scheduled" (`JB_LONGMAX`).
pub(crate) const NEVER: i64 = 2_147_483_647;

/// Steps one `get` loop may take before the driver gives up on a buffer that does not advance
/// (neither buffer does this on valid input; this bounds malformed input).
const MAX_GETS_PER_STEP: u32 = 10_000;

/// Who drives the buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// Asterisk's framehook (`abstract_jb.c`) around Asterisk's buffer code.
    #[default]
    Asterisk,
    /// VoIPmonitor's jitterbuffer simulation (`rtp.cpp`) around its copies of the buffers.
    Voipmonitor,
}

impl Variant {
    /// The key value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Asterisk => "asterisk",
            Self::Voipmonitor => "voipmonitor",
        }
    }

    /// Parses `asterisk` or `voipmonitor`.
    ///
    /// # Errors
    /// Any other text.
    pub fn parse(value: &str) -> Result<Self, String> {
        match value {
            "asterisk" => Ok(Self::Asterisk),
            "voipmonitor" => Ok(Self::Voipmonitor),
            _ => Err(format!(
                "'{value}' is not a variant (allowed: asterisk, voipmonitor)"
            )),
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One frame as the buffers hold it: timestamp and length in milliseconds, and the slot it
/// fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The frame's timestamp, ms (RTP timestamp / (clock / 1000), as both programs compute it).
    pub ts: i64,
    /// The media time it covers, ms.
    pub ms: i64,
    /// Index of its slot in [`PlayoutStream::slots`].
    pub slot: u32,
    /// RTP marker bit (VoIPmonitor also sets it on the first frame after comfort noise).
    pub marker: bool,
}

/// What `put` answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Put {
    /// Queued (`JB_OK`, `JB_SCHED`, `FIXED_JB_OK`).
    Queued,
    /// Refused (`JB_DROP`, `FIXED_JB_DROP`).
    Refused,
}

/// What `get` answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Got {
    /// A frame to play (`JB_OK`).
    Frame(Frame),
    /// A frame to throw away (`JB_DROP`): late, or (`shrink`) dropped to cut the delay.
    Drop {
        /// The frame.
        frame: Frame,
        /// Dropped to shrink the buffer rather than for being late.
        shrink: bool,
    },
    /// Play an interpolated frame (`JB_INTERP`): to grow the delay (`grow`), or in place of
    /// the frame expected at timestamp `expected` (missing, or not due yet).
    Interp {
        /// The timestamp the buffer expected (in the buffer's own timestamps).
        expected: i64,
        /// Inserted to grow the delay, standing in for no frame.
        grow: bool,
    },
    /// Nothing to play now (`JB_NOFRAME`).
    NoFrame,
}

/// A frame a buffer let go of outside `get`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Released {
    /// The frame's slot.
    pub slot: u32,
    /// Delivered at once (VoIPmonitor's flush before a resynchronisation) rather than thrown
    /// away (VoIPmonitor's reset of the adaptive buffer on a marker bit).
    pub played: bool,
}

/// One of Asterisk's buffers, as the drivers see it.
pub(crate) trait Core {
    /// Queues a frame that arrived at `now` (`first`: the buffer's first frame, `put_first`).
    fn put(&mut self, frame: Frame, now: i64, first: bool) -> Put;
    /// Asks for the frame to play at `now`, interpolating `interpl` ms if there is none.
    fn get(&mut self, now: i64, interpl: i64) -> Got;
    /// When the next frame is due (`jb_next`), [`NEVER`] when nothing is scheduled.
    fn next(&mut self) -> i64;
    /// A forced resynchronisation (VoIPmonitor on a marker bit): the fixed buffer sets its
    /// `force_resynch` flag, the adaptive one is emptied and reset.
    fn force_resync(&mut self);
    /// Whether no frame is queued.
    fn is_empty(&self) -> bool;
    /// Frames let go of outside `get` since the last call (drained by the driver).
    fn released(&mut self) -> &mut Vec<Released>;
    /// The receiver time (ms) at which a frame with timestamp `ts` is scheduled to play now.
    fn scheduled(&self, ts: i64) -> i64;
    /// The media time inserted and removed so far by growing and shrinking, ms.
    fn stretched(&self) -> (i64, i64) {
        (0, 0)
    }
    /// Losses the buffer counted for VoIPmonitor inside `put` since the last call (its fixed
    /// buffer counts a late frame, `chan->last_loss_burst++` in `fixed_jb_put`).
    fn take_put_losses(&mut self) -> u64 {
        0
    }
}

/// What the driver saw, whatever the buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DriverStats {
    /// Who drove the buffer.
    pub variant: Variant,
    /// The frame length and interpolation length used, ms (`ptime`).
    pub ptime_ms: i64,
    /// Frames `put`.
    pub put: u64,
    /// Of those, refused by the buffer on `put`.
    pub put_refused: u64,
    /// Asterisk: refused frames passed straight through to the channel (heard at arrival).
    pub passed_through: u64,
    /// `get` calls answered with a frame (`JB_OK`).
    pub get_ok: u64,
    /// `get` calls answered `JB_DROP` (late frames and frames dropped to shrink).
    pub get_dropped: u64,
    /// `get` calls answered `JB_INTERP`.
    pub get_interpolated: u64,
    /// `get` calls answered `JB_NOFRAME`.
    pub get_noframe: u64,
    /// Forced resynchronisations (VoIPmonitor's marker-bit resync).
    pub forced_resyncs: u64,
    /// Frames VoIPmonitor delivered at once when it resynchronised the fixed buffer.
    pub flushed: u64,
    /// Frames thrown away when VoIPmonitor reset the adaptive buffer on a marker bit.
    pub reset_discarded: u64,
    /// Slots whose frame played after the buffer had already interpolated in its place.
    pub played_after_concealment: u64,
    /// Interpolations for no slot: growing the delay, or filling a timestamp gap.
    pub interpolated_no_slot: u64,
}

/// VoIPmonitor's MOS after the simulated buffer (`rtp.cpp` `burstr_calculate` and
/// `calculate_mos_g711`), over the whole stream up to its last packet.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct VoipmonitorMos {
    /// Packets received (`s->received`: every RTP packet of the stream, DTMF and comfort noise
    /// included).
    pub received: u64,
    /// Frames lost after the buffer: Σ i·loss\[i\] over the burst histogram.
    pub lost: u64,
    /// Loss bursts: Σ loss\[i\].
    pub bursts: u64,
    /// The burst histogram as (burst length, count), lengths with a count only.
    pub loss_histogram: Vec<(u32, u64)>,
    /// `lost / received` (0 when fewer than 5 frames were lost, as VoIPmonitor ignores them).
    pub loss_ratio: f64,
    /// VoIPmonitor's burst ratio, `(lost/bursts) / (1 / (1 − lost/received))`, at least 1.
    pub burst_ratio: f64,
    /// MOS from VoIPmonitor's G.711-with-PLC E-model fit, in [1, 4.5].
    pub mos: f64,
}

impl VoipmonitorMos {
    /// Computes VoIPmonitor's figures from its loss histogram (`loss[i]`: bursts of `i`
    /// consecutive frames lost) and the packets received.
    pub fn from_histogram(loss: &[u64; LOSS_BINS], received: u64) -> Self {
        let (mut lost, mut bursts) = (0u64, 0u64);
        for (i, &n) in loss.iter().enumerate() {
            lost += i as u64 * n;
            bursts += n;
        }
        let loss_histogram = loss
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(i, &n)| (i as u32, n))
            .collect();
        let (loss_ratio, burst_ratio) = if lost < 5 {
            (0.0, 0.0)
        } else {
            let ratio = if received > 0 {
                lost as f64 / received as f64
            } else {
                0.0
            };
            let burst = if received > 0 && bursts > 0 {
                let b = (lost as f64 / bursts as f64) / (1.0 / (1.0 - ratio));
                if b < 0.0 { -b } else { b.max(1.0) }
            } else {
                0.0
            };
            (ratio, burst)
        };
        Self {
            received,
            lost,
            bursts,
            loss_histogram,
            loss_ratio,
            burst_ratio,
            mos: mos_g711(loss_ratio, burst_ratio),
        }
    }
}

/// VoIPmonitor's histogram size (`chan->loss[128]`).
pub const LOSS_BINS: usize = 128;

/// VoIPmonitor's `calculate_mos_g711` (version 2: G.711 with PLC, Bpl = 17.2647), for a
/// packet-loss ratio `ppl` and burst ratio `burstr` (anchors-2.md §1.2).
pub fn mos_g711(ppl: f64, burstr: f64) -> f64 {
    if ppl == 0.0 || burstr == 0.0 {
        return 4.5;
    }
    if ppl > 0.5 {
        return 1.0;
    }
    let bpl = 17.2647;
    let r = 93.206_207_723_3 - 95.0 * (ppl * 100.0 / (ppl * 100.0 / burstr + bpl));
    let mos = 2.06405 + 0.031738 * r - 0.000356641 * r * r + 2.93143e-6 * r * r * r;
    mos.clamp(1.0, 4.5)
}

/// The driver's configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Drive {
    /// Who drives the buffer.
    pub variant: Variant,
    /// Frame and interpolation length, ms (`None`: the stream's frame duration).
    pub ptime: Option<Nanos>,
    /// Resynchronise on a marker bit (VoIPmonitor's `channel->resync`).
    pub marker_resync: bool,
    /// How long the buffer may hold frames, ms (bounds the play-out after the last arrival).
    pub max_delay_ms: i64,
}

/// What a driven run gives back besides the events.
pub(crate) struct Driven {
    /// The playout run (events, targets, stretched time).
    pub run: PlayoutRun,
    /// What the driver counted.
    pub stats: DriverStats,
    /// VoIPmonitor's MOS (VoIPmonitor variant only).
    pub mos: Option<VoipmonitorMos>,
}

/// A slot's state while the buffer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not arrived, or refused, or thrown away: waiting for the timeline to pass it.
    Open,
    /// Its frame is in the buffer.
    Queued,
    /// Played at the event's time.
    Played,
    /// Concealed at the event's time.
    Concealed,
}

/// The per-slot record of a run: state, event time and target delay.
struct Slots<'s> {
    slots: &'s [Slot],
    ts: Vec<i64>,
    state: Vec<State>,
    at: Vec<Nanos>,
    target: Vec<Nanos>,
    /// The first slot the play-out timeline has not passed yet.
    cursor: usize,
    /// Local time of the buffer's millisecond 0.
    base: Nanos,
    offset: Nanos,
    played_after_concealment: u64,
}

impl<'s> Slots<'s> {
    fn new(stream: &'s PlayoutStream<'_>, ts: Vec<i64>, base: Nanos) -> Self {
        let n = stream.slots().len();
        Self {
            slots: stream.slots(),
            ts,
            state: vec![State::Open; n],
            at: vec![Nanos::MIN; n],
            target: vec![Nanos::ZERO; n],
            cursor: 0,
            base,
            offset: stream.offset,
            played_after_concealment: 0,
        }
    }

    fn local(&self, ms: i64) -> Nanos {
        self.base + Nanos::from_millis(ms)
    }

    fn resolve(&mut self, k: usize, played: bool, now: i64, core: &dyn Core) {
        if self.state[k] == State::Played {
            return;
        }
        if played && self.state[k] == State::Concealed {
            self.played_after_concealment += 1;
        }
        self.state[k] = if played {
            State::Played
        } else {
            State::Concealed
        };
        self.at[k] = self.local(now);
        let scheduled = self.local(core.scheduled(self.ts[k]));
        self.target[k] = scheduled - (self.slots[k].send - self.offset);
    }

    /// Whether slot `k` is comfort noise that has arrived by `now`: its silence plays. Comfort
    /// noise still on its way is concealed like any missing frame (webrtc-stats counts it as
    /// silent concealment).
    fn silence_heard(&self, k: usize, now: i64) -> bool {
        let slot = &self.slots[k];
        slot.silent && slot.arrival.is_some_and(|a| a <= self.local(now))
    }

    /// The timeline has reached slot `k` at `now`: slots before it that it skipped without a
    /// frame or an interpolation are concealed then.
    fn pass(&mut self, k: usize, now: i64, core: &dyn Core) {
        while self.cursor < k {
            if self.state[self.cursor] == State::Open {
                let heard = self.silence_heard(self.cursor, now);
                self.resolve(self.cursor, heard, now, core);
            }
            self.cursor += 1;
        }
    }

    /// The buffer played or dropped slot `k`'s frame at `now`.
    fn frame(&mut self, k: usize, played: bool, now: i64, core: &dyn Core) {
        self.pass(k, now, core);
        self.resolve(k, played, now, core);
        self.cursor = self.cursor.max(k + 1);
    }

    /// The buffer interpolated at `now` for the frame it expected at `expected`: the first
    /// slot not yet passed stands concealed if it is due and its frame is not in the buffer.
    /// Returns whether a slot was concealed.
    fn interpolated(&mut self, expected: i64, interpl: i64, now: i64, core: &dyn Core) -> bool {
        while self.cursor < self.state.len()
            && (matches!(self.state[self.cursor], State::Played | State::Concealed)
                || self.slots[self.cursor].silent)
        {
            if self.state[self.cursor] == State::Open {
                // Comfort noise: the silence plays when the timeline reaches it (if it came).
                let heard = self.silence_heard(self.cursor, now);
                self.resolve(self.cursor, heard, now, core);
            }
            self.cursor += 1;
        }
        let k = self.cursor;
        if k < self.state.len()
            && self.state[k] == State::Open
            && self.ts[k] < expected + interpl.max(1)
        {
            self.resolve(k, false, now, core);
            self.cursor += 1;
            return true;
        }
        false
    }

    /// One event per slot, in slot order, with event times filled for slots the run never
    /// reached (concealed, or played silence for comfort noise) and made non-decreasing.
    fn finish(mut self, core: &dyn Core) -> (Vec<PlayoutEvent>, Vec<Nanos>) {
        let n = self.state.len();
        let mut last = self.base;
        let mut events = Vec::with_capacity(n);
        for k in 0..n {
            if matches!(self.state[k], State::Open | State::Queued) {
                self.at[k] = last;
                let scheduled = self.local(core.scheduled(self.ts[k]));
                self.target[k] = scheduled - (self.slots[k].send - self.offset);
                self.state[k] = if self.slots[k].silent
                    && self.slots[k].arrival.is_some_and(|a| a <= self.at[k])
                {
                    State::Played
                } else {
                    State::Concealed
                };
            }
            if self.at[k] < last {
                self.at[k] = last;
            }
            last = self.at[k];
            let seq = self.slots[k].seq;
            events.push(match self.state[k] {
                State::Played => PlayoutEvent::Played { seq, at: last },
                _ => PlayoutEvent::Concealed {
                    seq,
                    at: last,
                    arrived_late: self.slots[k].arrival.is_some(),
                },
            });
        }
        // A target computed before the buffer had a reference (Asterisk's adaptive buffer
        // before its first resynchronisation measures against the raw timestamps) means
        // nothing: such slots take the nearest meaningful target.
        let sane = |t: &Nanos| t.abs() <= Nanos::from_secs(60);
        if let Some(first_good) = self.target.iter().copied().find(sane) {
            let mut last = first_good;
            for t in &mut self.target {
                if sane(t) {
                    last = *t;
                } else {
                    *t = last;
                }
            }
        }
        (events, self.target)
    }
}

/// Each slot's timestamp in the buffers' milliseconds: received slots from their unit (the RTP
/// timestamp divided by clock/1000, as Asterisk's `res_rtp_asterisk.c` and VoIPmonitor's
/// `RTP::jitterbuffer` compute it; the send time for streams that are not RTP), missing slots
/// interpolated between their neighbours by sequence number.
fn slot_timestamps(stream: &PlayoutStream<'_>) -> Vec<i64> {
    let slots = stream.slots();
    let Some(first) = slots.first() else {
        return Vec::new();
    };
    let mut ts = vec![i64::MIN; slots.len()];
    for u in stream.units() {
        if let Some(k) = slot_index(first.seq, u.seq, slots.len())
            && ts[k] == i64::MIN
        {
            ts[k] = ms_timestamp(u);
        }
    }
    // Interpolate the holes from the received neighbours.
    let mut prev: Option<usize> = None;
    let mut k = 0;
    while k < ts.len() {
        if ts[k] != i64::MIN {
            prev = Some(k);
            k += 1;
            continue;
        }
        let next = (k..ts.len()).find(|&j| ts[j] != i64::MIN);
        for j in k..next.unwrap_or(ts.len()) {
            ts[j] = match (prev, next) {
                (Some(a), Some(b)) => ts[a] + (ts[b] - ts[a]) * (j - a) as i64 / (b - a) as i64,
                (Some(a), None) => ts[a] + (slots[j].send - slots[a].send).as_nanos() / 1_000_000,
                (None, Some(b)) => ts[b] - (slots[b].send - slots[j].send).as_nanos() / 1_000_000,
                (None, None) => (slots[j].send - first.send).as_nanos() / 1_000_000,
            };
        }
        k = next.unwrap_or(ts.len());
    }
    ts
}

/// A unit's timestamp in milliseconds as Asterisk and VoIPmonitor derive it.
pub(crate) fn ms_timestamp(u: &Sample) -> i64 {
    let per_ms = i64::from(u.rtp_clock / 1000);
    if per_ms > 0 {
        u.rtp_timestamp.div_euclid(per_ms)
    } else {
        u.send.as_nanos().div_euclid(1_000_000)
    }
}

/// The slot of sequence number `seq` in slots starting at `first` (`None` outside).
fn slot_index(first: i64, seq: i64, n: usize) -> Option<usize> {
    usize::try_from(seq.checked_sub(first)?)
        .ok()
        .filter(|&k| k < n)
}

/// Whether a unit is comfort noise (RFC 3389 `CN`, or the old payload type 19): neither
/// program puts it in the buffer.
fn comfort_noise(u: &Sample) -> bool {
    matches!(u.payload_type, Some(13 | 19))
}

/// Milliseconds from `base` to `t`, rounded down (`ast_tvdiff_ms`).
fn ms_since(t: Nanos, base: Nanos) -> i64 {
    (t - base).as_nanos().div_euclid(1_000_000)
}

/// The stream's packetization in whole milliseconds (at least 2, the buffers' minimum).
fn ptime_ms(stream: &PlayoutStream<'_>, ptime: Option<Nanos>) -> i64 {
    let d = ptime.unwrap_or_else(|| stream.frame_duration());
    ((d.as_nanos() + 500_000) / 1_000_000).max(2)
}

/// Plays `stream` through `core` as `drive.variant` drives it.
pub(crate) fn drive(stream: &PlayoutStream<'_>, core: &mut dyn Core, drive: &Drive) -> Driven {
    let p = ptime_ms(stream, drive.ptime);
    let mut stats = DriverStats {
        variant: drive.variant,
        ptime_ms: p,
        ..DriverStats::default()
    };
    let units = stream.units();
    let (Some(first_slot), Some(base)) = (
        stream.slots().first(),
        units.iter().find(|u| !comfort_noise(u)).map(|u| u.arrival),
    ) else {
        let events = crate::playout::playout_slots(stream.slots(), Nanos::ZERO, stream.offset);
        return Driven {
            run: PlayoutRun::new(events),
            stats,
            mos: None,
        };
    };
    let first_seq = first_slot.seq;
    let ts = slot_timestamps(stream);
    let mut slots = Slots::new(stream, ts, base);
    let mut mos = None;
    match drive.variant {
        Variant::Asterisk => framehook(units, first_seq, core, &mut slots, &mut stats, p, drive),
        Variant::Voipmonitor => {
            mos = Some(voipmonitor(
                stream, first_seq, core, &mut slots, &mut stats, p, drive,
            ));
        }
    }
    stats.played_after_concealment = slots.played_after_concealment;
    let (inserted, removed) = core.stretched();
    let (events, targets) = slots.finish(core);
    Driven {
        run: PlayoutRun {
            events,
            detail: None,
            targets: Targets::PerEvent(targets),
            inserted: Nanos::from_millis(inserted),
            removed: Nanos::from_millis(removed),
        },
        stats,
        mos,
    }
}

/// Applies one `get` answer to the slots.
fn apply(
    got: Got,
    now: i64,
    p: i64,
    core: &dyn Core,
    slots: &mut Slots<'_>,
    stats: &mut DriverStats,
) {
    match got {
        Got::Frame(f) => {
            stats.get_ok += 1;
            slots.frame(f.slot as usize, true, now, core);
        }
        Got::Drop { frame, .. } => {
            stats.get_dropped += 1;
            let k = frame.slot as usize;
            if k >= slots.cursor {
                slots.frame(k, false, now, core);
            }
        }
        Got::Interp { expected, grow } => {
            stats.get_interpolated += 1;
            if grow || !slots.interpolated(expected, p, now, core) {
                stats.interpolated_no_slot += 1;
            }
        }
        Got::NoFrame => stats.get_noframe += 1,
    }
}

/// Drains the frames the buffer let go of outside `get`.
fn released(core: &mut dyn Core, now: i64, slots: &mut Slots<'_>, stats: &mut DriverStats) {
    let mut out = std::mem::take(core.released());
    for r in out.drain(..) {
        let k = r.slot as usize;
        if r.played {
            stats.flushed += 1;
            slots.frame(k, true, now, core);
        } else {
            stats.reset_discarded += 1;
            if slots.state[k] == State::Queued {
                slots.state[k] = State::Open;
            }
        }
    }
    *core.released() = out;
}

/// The frame of a unit, or `None` for comfort noise and units outside the slots.
fn frame_of(u: &Sample, first_seq: i64, n: usize, p: i64) -> Option<Frame> {
    if comfort_noise(u) {
        return None;
    }
    let k = slot_index(first_seq, u.seq, n)?;
    Some(Frame {
        ts: ms_timestamp(u),
        ms: p,
        slot: k as u32,
        marker: u.marker,
    })
}

/// Asterisk's jitterbuffer framehook (`abstract_jb.c` `hook_event_cb`): a read event per
/// arriving frame and per timer tick (every `ptime`, from the first frame's arrival).
fn framehook(
    units: &[Sample],
    first_seq: i64,
    core: &mut dyn Core,
    slots: &mut Slots<'_>,
    stats: &mut DriverStats,
    p: i64,
    drive: &Drive,
) {
    let n = slots.state.len();
    let base = slots.base;
    let mut first = true;
    let mut tick = p;
    let mut last_now = 0;
    for u in units {
        let Some(mut f) = frame_of(u, first_seq, n, p) else {
            continue;
        };
        let now = ms_since(u.arrival, base);
        last_now = last_now.max(now);
        // Timer reads up to this arrival.
        while tick <= now {
            if tick >= core.next() {
                let got = core.get(tick, p);
                apply(got, tick, p, core, slots, stats);
            }
            tick += p;
        }
        if drive.marker_resync && f.marker && !first {
            core.force_resync();
            stats.forced_resyncs += 1;
        }
        f.marker = false;
        stats.put += 1;
        let put = core.put(f, now, first);
        first = false;
        released(core, now, slots, stats);
        if put == Put::Refused {
            stats.put_refused += 1;
            // The framehook hands a refused frame to the channel as it is.
            let k = f.slot as usize;
            if slots.state[k] == State::Open && k >= slots.cursor {
                stats.passed_through += 1;
                slots.frame(k, true, now, core);
            }
            continue;
        }
        if slots.state[f.slot as usize] == State::Open {
            slots.state[f.slot as usize] = State::Queued;
        }
        // A read that queued a frame asks for one when the next is due within an interval.
        if core.next() - now < p {
            let got = core.get(now, p);
            apply(got, now, p, core, slots, stats);
        }
    }
    // The timer keeps reading until the buffer is empty.
    let end = last_now + 2 * (drive.max_delay_ms + 1000);
    while !core.is_empty() && tick <= end {
        if tick >= core.next() {
            let got = core.get(tick, p);
            apply(got, tick, p, core, slots, stats);
        }
        tick += p;
    }
}

/// VoIPmonitor's simulation (`RTP::jitterbuffer` and `ast_jb_get_and_deliver`), with its
/// loss-burst accounting; returns its MOS over the stream up to the last packet.
fn voipmonitor(
    stream: &PlayoutStream<'_>,
    first_seq: i64,
    core: &mut dyn Core,
    slots: &mut Slots<'_>,
    stats: &mut DriverStats,
    p: i64,
    drive: &Drive,
) -> VoipmonitorMos {
    let units = stream.units();
    let n = slots.state.len();
    let base = slots.base;
    let mut acct = Accounting::default();
    // `last_ts` on the local clock; `None` until the first frame.
    let mut last_ts: Option<Nanos> = None;
    let step = Nanos::from_millis(p);
    let mut last_cng = false;
    let mut first = true;
    for u in units {
        let Some(mut f) = frame_of(u, first_seq, n, p) else {
            // Comfort noise: not put; the next frame is marked.
            last_cng = comfort_noise(u);
            continue;
        };
        if last_cng {
            f.marker = true;
        }
        last_cng = false;
        let now = ms_since(u.arrival, base);
        let Some(mut clock) = last_ts else {
            last_ts = Some(u.arrival);
            put_voipmonitor(core, f, now, &mut first, slots, stats, drive, &mut acct);
            continue;
        };
        let mut msdiff = ms_since(u.arrival, clock + step);
        if msdiff > p * 10_000 {
            // A jump too big to step through: the clock restarts here.
            last_ts = Some(u.arrival);
            put_voipmonitor(core, f, now, &mut first, slots, stats, drive, &mut acct);
            continue;
        }
        while msdiff >= p {
            if f.marker {
                acct.burst = 0;
            }
            deliver(core, ms_since(clock, base), p, slots, stats, &mut acct);
            clock += step;
            msdiff -= p;
        }
        last_ts = Some(clock);
        put_voipmonitor(core, f, now, &mut first, slots, stats, drive, &mut acct);
    }
    let received = units.len() as u64 + stream.prepared.dtmf_events;
    let mos = VoipmonitorMos::from_histogram(&acct.loss, received);
    // Past the last packet VoIPmonitor stops; jitterlab keeps stepping until the buffer is
    // empty so that every queued frame gets its event (the MOS above is already taken).
    if let Some(clock) = last_ts {
        let mut now = ms_since(clock, base);
        let end = now + 2 * (drive.max_delay_ms + 1000);
        while !core.is_empty() && now <= end {
            deliver(core, now, p, slots, stats, &mut acct);
            now += p;
        }
    }
    mos
}

/// VoIPmonitor's loss-burst accounting (`chan->last_loss_burst`, `chan->loss[]`).
struct Accounting {
    burst: u64,
    loss: [u64; LOSS_BINS],
    last_seq: Option<i64>,
    last_ts: i64,
}

impl Default for Accounting {
    fn default() -> Self {
        Self {
            burst: 0,
            loss: [0; LOSS_BINS],
            last_seq: None,
            last_ts: 0,
        }
    }
}

impl Accounting {
    /// A frame was delivered: the burst before it is recorded unless VoIPmonitor's exceptions
    /// apply (a marked frame; the next sequence number after a timestamp jump, which is a
    /// pause rather than a loss; bursts of 1024 frames or more,
    /// `opt_ignore_mos_degradation_for_contiguous_packet_loss_greater_than`).
    fn delivered(&mut self, f: &Frame, seq: i64, p: i64) {
        let pause = self.last_seq.is_some_and(|s| seq - s == 1) && (f.ts - self.last_ts).abs() > p;
        if !pause && !f.marker && self.burst > 0 && self.burst < 1024 {
            let mut b = self.burst;
            while b > 128 {
                self.loss[127] += 1;
                b -= 128;
            }
            self.loss[(b as usize).min(LOSS_BINS - 1)] += 1;
        }
        self.burst = 0;
        self.last_seq = Some(seq);
        self.last_ts = f.ts;
    }
}

/// `ast_jb_put` as VoIPmonitor calls it: the first frame creates the buffer; a marker bit
/// forces a resynchronisation first when `marker_resync` is set.
#[allow(clippy::too_many_arguments)]
fn put_voipmonitor(
    core: &mut dyn Core,
    f: Frame,
    now: i64,
    first: &mut bool,
    slots: &mut Slots<'_>,
    stats: &mut DriverStats,
    drive: &Drive,
    acct: &mut Accounting,
) {
    if drive.marker_resync && f.marker && !*first {
        core.force_resync();
        stats.forced_resyncs += 1;
    }
    stats.put += 1;
    let put = core.put(f, now, *first);
    *first = false;
    acct.burst += core.take_put_losses();
    released(core, now, slots, stats);
    if put == Put::Refused {
        stats.put_refused += 1;
    } else if slots.state[f.slot as usize] == State::Open {
        slots.state[f.slot as usize] = State::Queued;
    }
}

/// `ast_jb_get_and_deliver` as VoIPmonitor runs it at clock `now`.
fn deliver(
    core: &mut dyn Core,
    now: i64,
    p: i64,
    slots: &mut Slots<'_>,
    stats: &mut DriverStats,
    acct: &mut Accounting,
) {
    let next = core.next();
    if next == NEVER {
        // An empty adaptive buffer in silence: VoIPmonitor counts an interpolated frame.
        acct.burst += 1;
        return;
    }
    if now < next {
        return;
    }
    let mut guard = 0;
    while now >= core.next() && guard < MAX_GETS_PER_STEP {
        guard += 1;
        let got = core.get(now, p);
        match got {
            Got::Frame(f) => {
                let seq = slots.slots[f.slot as usize].seq;
                acct.delivered(&f, seq, p);
            }
            Got::Drop { .. } | Got::Interp { .. } => acct.burst += 1,
            Got::NoFrame => acct.burst += 1,
        }
        apply(got, now, p, core, slots, stats);
        if got == Got::NoFrame {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// VoIPmonitor's MOS formula at a few points (anchors-2.md §1.2): no loss is 4.5, more
    /// than half lost is 1, and 5 % random loss (burst ratio 1) gives the G.711 PLC curve.
    #[test]
    fn voipmonitor_mos_formula() {
        assert_eq!(mos_g711(0.0, 1.0), 4.5);
        assert_eq!(mos_g711(0.6, 1.0), 1.0);
        // R = 93.2062 − 95·(5/(5/1 + 17.2647)) = 71.872; MOS = 2.06405 + 2.28107 − 1.84225
        // + 1.08833 = 3.5912.
        let m = mos_g711(0.05, 1.0);
        assert!((m - 3.5912).abs() < 1e-3, "{m}");
        // Fewer than 5 frames lost count as none.
        let mut loss = [0u64; LOSS_BINS];
        loss[1] = 4;
        assert_eq!(VoipmonitorMos::from_histogram(&loss, 100).mos, 4.5);
        loss[1] = 5;
        let m = VoipmonitorMos::from_histogram(&loss, 100);
        assert_eq!((m.lost, m.bursts), (5, 5));
        assert!((m.loss_ratio - 0.05).abs() < 1e-12);
        // lost/bursts = 1, 1/(1 − 0.05) = 1.0526: the ratio is below 1, so it is 1.
        assert_eq!(m.burst_ratio, 1.0);
    }
}
