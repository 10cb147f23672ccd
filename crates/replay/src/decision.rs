//! NetEq's playout decisions for discrete frames (anchors.md §4, `decision_logic.cc`): every
//! 10 ms of output, NetEq either plays what it has decoded, or decodes the next frame with one
//! of `Normal`, `Accelerate` (drop a pitch period to cut delay), `PreemptiveExpand` (add one to
//! grow it), `Expand` (conceal a missing frame) or `Merge` (join real audio again after a
//! concealment that covered a lost frame).
//!
//! What follows NetEq exactly: the target delay (the delay manager over the 2 s relative-delay
//! arrival history), the playout delay used for the decision (the arrival history's delay of
//! the timestamp being played, `GetPlayoutDelayMs`), the limits (`low = target`,
//! `high = low + max relative delay + 20 ms`, fast-accelerate at `4·high`), at least 5 ticks
//! between time-stretches, `FuturePacketAvailable` (keep concealing while the next frame is
//! ahead of the concealment and the buffer is within `target + 50 ms`, then merge), the 200-
//! packet buffer flushed whole when full, obsolete and duplicate frames discarded, and the
//! buffer-level filter with its 251…254/256 factors.
//!
//! What is modelled, since no audio is decoded here: an accelerate removes and a preemptive
//! expand inserts 15 ms (NetEq removes or inserts one pitch period, at most 15 ms, depending on
//! the signal; an accelerate never leaves less than 10 ms to play); after a concealment of at
//! least 30 ms (where NetEq's mute factor has fallen below one half on voiced audio), decoding
//! waits until the buffer holds half the target (`kPostponeDecodingLevel`).

use std::collections::{BTreeMap, HashMap};

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;
use serde::Serialize;

use crate::neteq::{ArrivalHistory, DelayManager};
use crate::playout::{PlayoutEvent, first_arrivals, frame_slots};
use crate::policy::NetEqConfig;

/// NetEq's output block: one `GetAudio` call.
pub const TICK_MS: i64 = 10;
/// `kMinTimescaleInterval`: ticks between two time-stretch operations.
pub const MIN_TIMESCALE_INTERVAL: u32 = 5;
/// `kDelayAdjustmentGranularityMs`.
pub const DELAY_ADJUSTMENT_GRANULARITY_MS: i64 = 20;
/// `kTargetLevelWindowMs`.
pub const TARGET_LEVEL_WINDOW_MS: i64 = 100;
/// `kPostponeDecodingLevel`, percent of the target.
pub const POSTPONE_DECODING_LEVEL: i64 = 50;
/// `NetEq::Config::max_packets_in_buffer`.
pub const MAX_PACKETS_IN_BUFFER: usize = 200;
/// What one accelerate removes or one preemptive expand inserts (NetEq: one pitch period,
/// at most 15 ms).
pub const STRETCH_MS: i64 = 15;
/// Concealment ticks after which decoding is postponed (mute factor below one half).
const POSTPONE_AFTER_EXPANDS: u32 = 3;

/// One decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// Decode the expected frame and play it.
    Normal,
    /// Decode the expected frame and drop a pitch period (the buffer is above the high limit).
    Accelerate,
    /// Decode the expected frame and add a pitch period (the buffer is below the target).
    PreemptiveExpand,
    /// Conceal: no frame to decode, or the next one is still ahead.
    Expand,
    /// Decode the next frame after a concealment that covered the missing ones.
    Merge,
}

/// NetEq's `BufferLevelFilter`: an exponential filter of the packet buffer's span in Q8,
/// less what time-stretching removed.
#[derive(Clone, Debug, Default)]
pub struct BufferLevelFilter {
    level_factor: i64,
    filtered_q8: i64,
}

impl BufferLevelFilter {
    /// `SetTargetBufferLevel`: the filter's factor for a target delay.
    pub fn set_target(&mut self, target_ms: i64) {
        self.level_factor = match target_ms {
            ..=20 => 251,
            21..=60 => 252,
            61..=140 => 253,
            _ => 254,
        };
    }

    /// `Update`: filters in `span_ms` and subtracts `stretched_ms` (positive when audio was
    /// removed), never below zero.
    pub fn update(&mut self, span_ms: i64, stretched_ms: i64) {
        let level =
            ((self.level_factor * self.filtered_q8) >> 8) + (256 - self.level_factor) * span_ms;
        self.filtered_q8 = (level - stretched_ms * 256).max(0);
    }

    /// `SetFilteredBufferLevel` (after a flush).
    pub fn set(&mut self, span_ms: i64) {
        self.filtered_q8 = span_ms * 256;
    }

    /// The filtered level, ms.
    pub fn level_ms(&self) -> f64 {
        self.filtered_q8 as f64 / 256.0
    }
}

/// NetEq's operation counts and rates over a run (its `NetEqNetworkStatistics` and lifetime
/// statistics, where they apply without audio).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct NetEqStats {
    /// 10 ms output blocks produced.
    pub ticks: u64,
    /// Decisions taken, by operation (a tick that plays already decoded audio takes none).
    pub normal: u64,
    /// Accelerates.
    pub accelerate: u64,
    /// Preemptive expands.
    pub preemptive_expand: u64,
    /// Expand (concealment) ticks.
    pub expand: u64,
    /// Merges.
    pub merge: u64,
    /// Share of output time that was concealment (NetEq's `expand_rate`).
    pub expand_rate: f64,
    /// Share of output time removed by accelerating (`accelerate_rate`).
    pub accelerate_rate: f64,
    /// Share of output time inserted by preemptive expansion (`preemptive_rate`).
    pub preemptive_rate: f64,
    /// Times the full packet buffer was flushed (`packet_buffer_flushes`).
    pub buffer_flushes: u64,
    /// Frames discarded because they arrived after their play time (`packets_discarded`).
    pub discarded: u64,
    /// Mean target delay over the ticks, ms.
    pub mean_target_ms: f64,
    /// Mean filtered buffer level over the decisions, ms (`current_buffer_size_ms`).
    pub mean_buffer_level_ms: f64,
    /// Mean time a played frame waited in the buffer, ms (`mean_waiting_time_ms`).
    pub mean_waiting_ms: f64,
}

/// A NetEq playout run: what happened to every frame slot, and NetEq's statistics.
#[derive(Clone, Debug, Default)]
pub struct NetEqPlayout {
    /// Per frame slot, in order of sequence number.
    pub events: Vec<PlayoutEvent>,
    /// Operation counts and rates.
    pub stats: NetEqStats,
    /// The operation of every decision, with its local time (for timelines).
    pub decisions: Vec<(Nanos, Operation)>,
    /// NetEq's target delay when each event happened, in `events` order.
    pub targets: Vec<Nanos>,
    /// Audio inserted by preemptive expansion.
    pub inserted: Nanos,
    /// Audio removed by acceleration.
    pub removed: Nanos,
}

struct Slot {
    seq: i64,
    ts_ms: i64,
    len_ms: i64,
}

/// Plays one stream of frames as NetEq does, with the delay manager configured by `config`.
/// Send times are the media timestamps; arrival times are local. Deterministic.
pub fn playout_neteq(samples: &[Sample], config: &NetEqConfig) -> NetEqPlayout {
    let raw = frame_slots(samples);
    if raw.is_empty() {
        return NetEqPlayout::default();
    }
    let base = raw[0].1;
    let to_ms = |t: Nanos| (t - base).as_nanos().div_euclid(1_000_000);
    let mut slots: Vec<Slot> = raw
        .iter()
        .map(|&(seq, send)| Slot {
            seq,
            ts_ms: to_ms(send),
            len_ms: 0,
        })
        .collect();
    for i in 0..slots.len() {
        let len = match slots.get(i + 1) {
            Some(next) => next.ts_ms - slots[i].ts_ms,
            None if i > 0 => slots[i].ts_ms - slots[i - 1].ts_ms,
            None => 20,
        };
        slots[i].len_ms = len.max(1);
    }
    let index_of: HashMap<i64, usize> = slots.iter().enumerate().map(|(i, s)| (s.seq, i)).collect();
    let arrival_of = first_arrivals(samples);
    // Each slot's first arrival, in arrival order.
    let mut arrivals: Vec<(Nanos, usize)> = arrival_of
        .iter()
        .filter_map(|(seq, &at)| index_of.get(seq).map(|&i| (at, i)))
        .collect();
    arrivals.sort_unstable();

    let mut sim = Sim::new(config, &slots);
    let start = arrivals[0].0;
    let tick = Nanos::from_millis(TICK_MS);
    // Every slot is decided within its arrival span plus the longest concealment NetEq could
    // need; the bound only guards against a modelling error looping forever.
    let span = arrivals.last().map_or(Nanos::ZERO, |a| a.0) - start;
    let limit =
        span + Nanos::from_millis(slots.len() as i64 * slots[0].len_ms.max(TICK_MS) + 10_000);
    let mut now = start;
    let mut fed = 0;
    while sim.next_slot < slots.len() && now - start <= limit {
        let now_ms = (now - start).as_nanos() / 1_000_000;
        while fed < arrivals.len() && arrivals[fed].0 <= now {
            sim.insert(arrivals[fed].1, now_ms);
            fed += 1;
        }
        if fed == arrivals.len() && sim.buffer.is_empty() && sim.sync_ms < TICK_MS {
            // Nothing more will arrive: the remaining slots were never received.
            break;
        }
        sim.tick(now, now_ms, &arrival_of);
        now += tick;
    }
    // Slots after the last frame that could be played: concealed, so each is counted.
    while sim.next_slot < slots.len() {
        let s = &slots[sim.next_slot];
        sim.conceal(s.seq, now, &arrival_of);
        sim.next_slot += 1;
    }
    sim.finish()
}

struct Sim<'a> {
    slots: &'a [Slot],
    history: ArrivalHistory,
    manager: DelayManager,
    max_target_ms: i64,
    /// Waiting frames by timestamp: (slot index, arrival ms).
    buffer: BTreeMap<i64, (usize, i64)>,
    /// The next slot to decode or conceal.
    next_slot: usize,
    /// Decoded audio not yet played, ms.
    sync_ms: i64,
    last_mode: Operation,
    /// Concealment generated since the last decoded frame, ms.
    noise_ms: i64,
    expands_in_a_row: u32,
    timescale_countdown: u32,
    stretched_ms: i64,
    filter: BufferLevelFilter,
    flushed: bool,
    started: bool,
    out: NetEqPlayout,
    target_sum: f64,
    level_sum: f64,
    levels: u64,
    waiting_sum: f64,
    removed_ms: i64,
    inserted_ms: i64,
}

impl<'a> Sim<'a> {
    fn new(config: &NetEqConfig, slots: &'a [Slot]) -> Self {
        Self {
            slots,
            history: ArrivalHistory::new(config.window.as_nanos() / 1_000_000),
            manager: DelayManager::new(&config.delay),
            max_target_ms: config.max.as_nanos() / 1_000_000,
            buffer: BTreeMap::new(),
            next_slot: 0,
            sync_ms: 0,
            last_mode: Operation::Normal,
            noise_ms: 0,
            expands_in_a_row: 0,
            timescale_countdown: 0,
            stretched_ms: 0,
            filter: BufferLevelFilter::default(),
            flushed: false,
            started: false,
            out: NetEqPlayout::default(),
            target_sum: 0.0,
            level_sum: 0.0,
            levels: 0,
            waiting_sum: 0.0,
            removed_ms: 0,
            inserted_ms: 0,
        }
    }

    /// The expected frame's timestamp.
    fn target_ts(&self) -> i64 {
        self.slots.get(self.next_slot).map_or(i64::MAX, |s| s.ts_ms)
    }

    /// `DecisionLogic::TargetLevelMs`: the delay manager's target within the delay constraints
    /// (at most `max`, and at most 75 % of what the packet buffer can hold).
    fn target_ms(&self) -> i64 {
        let len = self.slots.first().map_or(20, |s| s.len_ms);
        let room = (MAX_PACKETS_IN_BUFFER as i64 * len * 3 / 4).max(TICK_MS);
        i64::from(self.manager.target_delay_ms())
            .min(self.max_target_ms)
            .min(room)
    }

    /// `InsertPacket` and `PacketArrived`: the history and delay manager learn from every new
    /// frame; an obsolete one (its slot already played or concealed) is discarded.
    fn insert(&mut self, slot: usize, now_ms: i64) {
        let s = &self.slots[slot];
        if self.history.insert(s.ts_ms, s.len_ms, now_ms) {
            let reordered = !self.history.is_newest(s.ts_ms);
            let delay = self.history.delay_ms(s.ts_ms, now_ms) as i32;
            self.manager.update(delay, reordered, now_ms);
        }
        if slot < self.next_slot {
            self.out.stats.discarded += 1;
            return;
        }
        if self.buffer.len() >= MAX_PACKETS_IN_BUFFER {
            // NetEq flushes the whole buffer; the frames lost here are concealed when their
            // slots come up.
            self.buffer.clear();
            self.out.stats.buffer_flushes += 1;
            self.flushed = true;
        }
        self.buffer.insert(s.ts_ms, (slot, now_ms));
    }

    /// The buffer's span of media time, ms (`span_samples`).
    fn span_ms(&self) -> i64 {
        match (self.buffer.first_key_value(), self.buffer.last_key_value()) {
            (Some((&first, _)), Some((&last, &(slot, _)))) => {
                last + self.slots[slot].len_ms - first
            }
            _ => 0,
        }
    }

    /// The span plus how long the oldest frame has waited (`span_samples_wait_time`).
    fn span_with_wait_ms(&self, now_ms: i64) -> i64 {
        self.span_ms()
            + self
                .buffer
                .first_key_value()
                .map_or(0, |(_, &(_, arrived))| now_ms - arrived)
    }

    fn conceal(&mut self, seq: i64, at: Nanos, arrival_of: &HashMap<i64, Nanos>) {
        self.out.targets.push(Nanos::from_millis(self.target_ms()));
        self.out.events.push(PlayoutEvent::Concealed {
            seq,
            at,
            arrived_late: arrival_of.contains_key(&seq),
        });
    }

    fn tick(&mut self, now: Nanos, now_ms: i64, arrival_of: &HashMap<i64, Nanos>) {
        let target = self.target_ms();
        self.out.stats.ticks += 1;
        self.target_sum += target as f64;
        self.timescale_countdown = self.timescale_countdown.saturating_sub(1);
        if self.started && self.sync_ms >= TICK_MS {
            self.sync_ms -= TICK_MS;
            return;
        }
        // Frames whose slots already passed are obsolete (by timestamp, or by slot when the
        // timestamps do not follow the sequence).
        let target_ts = self.target_ts();
        while let Some((&ts, &(slot, _))) = self.buffer.first_key_value() {
            if ts >= target_ts && slot >= self.next_slot {
                break;
            }
            self.buffer.pop_first();
            self.out.stats.discarded += 1;
        }
        self.filter.set_target(target);
        if self.last_mode != Operation::Expand {
            let span = self.span_ms();
            if self.flushed {
                self.filter.set(span);
                self.flushed = false;
            } else {
                self.filter.update(span, self.stretched_ms);
            }
            self.stretched_ms = 0;
            self.level_sum += self.filter.level_ms();
            self.levels += 1;
        }
        let op = self.decide(target, now_ms);
        self.out.decisions.push((now, op));
        match op {
            Operation::Expand => {
                self.out.stats.expand += 1;
                self.noise_ms += TICK_MS;
                self.expands_in_a_row += 1;
                self.sync_ms = 0;
            }
            _ => {
                let (&ts, &(slot, arrived)) = self
                    .buffer
                    .first_key_value()
                    .expect("a decision to decode has a frame");
                self.buffer.pop_first();
                // A merge joins after the concealment that covered the frames before this one.
                while self.next_slot < slot {
                    let seq = self.slots[self.next_slot].seq;
                    self.conceal(seq, now, arrival_of);
                    self.next_slot += 1;
                }
                let s = &self.slots[slot];
                self.out.targets.push(Nanos::from_millis(target));
                self.out.events.push(PlayoutEvent::Played {
                    seq: s.seq,
                    at: now,
                });
                self.waiting_sum += (now_ms - arrived) as f64;
                self.next_slot = slot + 1;
                self.sync_ms += s.len_ms;
                debug_assert_eq!(ts, s.ts_ms);
                self.noise_ms = 0;
                self.expands_in_a_row = 0;
                self.started = true;
                match op {
                    Operation::Normal => self.out.stats.normal += 1,
                    Operation::Merge => self.out.stats.merge += 1,
                    Operation::Accelerate => {
                        self.out.stats.accelerate += 1;
                        let removed = STRETCH_MS.min(self.sync_ms - TICK_MS).max(0);
                        self.sync_ms -= removed;
                        self.removed_ms += removed;
                        self.stretched_ms += removed;
                        self.timescale_countdown = MIN_TIMESCALE_INTERVAL;
                    }
                    Operation::PreemptiveExpand => {
                        self.out.stats.preemptive_expand += 1;
                        self.sync_ms += STRETCH_MS;
                        self.inserted_ms += STRETCH_MS;
                        self.stretched_ms -= STRETCH_MS;
                        self.timescale_countdown = MIN_TIMESCALE_INTERVAL;
                    }
                    Operation::Expand => unreachable!(),
                }
                self.sync_ms = (self.sync_ms - TICK_MS).max(0);
            }
        }
        self.last_mode = op;
    }

    /// `DecisionLogic::GetDecision` for a tick that needs a new frame.
    fn decide(&self, target: i64, now_ms: i64) -> Operation {
        let Some((&next_ts, _)) = self.buffer.first_key_value() else {
            return Operation::Expand;
        };
        // `PostponeDecode`: after a long concealment, wait for half the target.
        if self.last_mode == Operation::Expand
            && self.expands_in_a_row >= POSTPONE_AFTER_EXPANDS
            && self.span_with_wait_ms(now_ms) < target * POSTPONE_DECODING_LEVEL / 100
        {
            return Operation::Expand;
        }
        let target_ts = self.target_ts();
        if next_ts == target_ts {
            // `ExpectedPacketAvailable`.
            if self.last_mode != Operation::Expand && self.started {
                let playout_ts = target_ts - self.sync_ms;
                let playout_delay = self.history.delay_ms(playout_ts, now_ms);
                let low = target;
                let high = low + self.history.max_delay_ms() + DELAY_ADJUSTMENT_GRANULARITY_MS;
                if playout_delay >= 4 * high {
                    // Fast accelerate is off by default and then acts as accelerate.
                    return Operation::Accelerate;
                }
                if self.timescale_countdown == 0 {
                    if playout_delay >= high {
                        return Operation::Accelerate;
                    }
                    if playout_delay < low {
                        return Operation::PreemptiveExpand;
                    }
                }
            }
            return Operation::Normal;
        }
        // `FuturePacketAvailable`: the expected frame is missing, a later one is here.
        let high = target + TARGET_LEVEL_WINDOW_MS / 2;
        let too_early = next_ts - target_ts > self.noise_ms;
        if too_early && self.span_with_wait_ms(now_ms) <= high {
            return Operation::Expand;
        }
        if self.last_mode == Operation::Expand {
            Operation::Merge
        } else {
            Operation::Expand
        }
    }

    fn finish(mut self) -> NetEqPlayout {
        let s = &mut self.out.stats;
        if s.ticks > 0 {
            let out_ms = (s.ticks as i64 * TICK_MS) as f64;
            s.expand_rate = (s.expand as i64 * TICK_MS) as f64 / out_ms;
            s.accelerate_rate = self.removed_ms as f64 / out_ms;
            s.preemptive_rate = self.inserted_ms as f64 / out_ms;
            s.mean_target_ms = self.target_sum / s.ticks as f64;
        }
        self.out.inserted = Nanos::from_millis(self.inserted_ms);
        self.out.removed = Nanos::from_millis(self.removed_ms);
        if self.levels > 0 {
            s.mean_buffer_level_ms = self.level_sum / self.levels as f64;
        }
        let played = self
            .out
            .events
            .iter()
            .filter(|e| matches!(e, PlayoutEvent::Played { .. }))
            .count();
        if played > 0 {
            s.mean_waiting_ms = self.waiting_sum / played as f64;
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20 ms frames; `arrival(i)` gives frame i's arrival in ms, `None` for a lost frame.
    fn frames(n: i64, mut arrival: impl FnMut(i64) -> Option<f64>) -> Vec<Sample> {
        (0..n)
            .filter_map(|i| {
                arrival(i).map(|a| {
                    Sample::new(0, i, Nanos::from_millis(i * 20), Nanos::from_millis_f64(a))
                })
            })
            .collect()
    }

    fn run(samples: &[Sample]) -> NetEqPlayout {
        playout_neteq(samples, &NetEqConfig::default())
    }

    fn check_accounting(p: &NetEqPlayout, n: usize) {
        assert_eq!(p.events.len(), n, "every slot once");
        let seqs: Vec<i64> = p
            .events
            .iter()
            .map(|e| match e {
                PlayoutEvent::Played { seq, .. } | PlayoutEvent::Concealed { seq, .. } => *seq,
            })
            .collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "in order");
    }

    /// A clean stream: NetEq starts at its 80 ms start target, preemptively expands toward it,
    /// then (the target falling to 20 ms as the histogram learns there is no jitter)
    /// accelerates back; after that it only plays. Nothing is concealed.
    #[test]
    fn a_clean_stream_settles_and_only_plays() {
        let samples = frames(1500, |i| Some(30.0 + i as f64 * 20.0));
        let p = run(&samples);
        check_accounting(&p, 1500);
        assert_eq!(p.stats.expand, 0, "{:?}", p.stats);
        assert!(p.stats.preemptive_expand > 0, "{:?}", p.stats);
        assert!(p.stats.accelerate > 0, "{:?}", p.stats);
        let late: Vec<_> = p
            .decisions
            .iter()
            .filter(|(t, _)| *t > Nanos::from_secs(20))
            .collect();
        assert!(!late.is_empty());
        assert!(
            late.iter().all(|(_, op)| *op == Operation::Normal),
            "{late:?}"
        );
        assert!(
            p.events
                .iter()
                .all(|e| matches!(e, PlayoutEvent::Played { .. }))
        );
    }

    /// A lost frame: NetEq conceals (expand) until its concealment covers the gap, then merges
    /// into the next frame; only the lost slot is concealed.
    #[test]
    fn a_lost_frame_is_expanded_then_merged() {
        let samples = frames(600, |i| (i != 300).then_some(30.0 + i as f64 * 20.0));
        let p = run(&samples);
        check_accounting(&p, 600);
        let concealed: Vec<_> = p
            .events
            .iter()
            .filter(|e| matches!(e, PlayoutEvent::Concealed { .. }))
            .collect();
        assert_eq!(concealed.len(), 1);
        assert!(matches!(
            concealed[0],
            PlayoutEvent::Concealed {
                seq: 300,
                arrived_late: false,
                ..
            }
        ));
        assert!(p.stats.expand >= 2 && p.stats.merge == 1, "{:?}", p.stats);
    }

    /// A delay spike: ten frames held back 200 ms arrive together. NetEq conceals while the
    /// expected frame is missing, plays it when it comes (a delay increase, nothing lost), then
    /// accelerates the excess away.
    #[test]
    fn a_delay_spike_is_concealed_then_accelerated_away() {
        let spike = |i: i64| {
            let a = 30.0 + i as f64 * 20.0;
            Some(if (400..410).contains(&i) {
                30.0 + 410.0 * 20.0
            } else {
                a
            })
        };
        let samples = frames(1000, spike);
        let p = run(&samples);
        check_accounting(&p, 1000);
        assert!(
            p.events
                .iter()
                .all(|e| matches!(e, PlayoutEvent::Played { .. }))
        );
        let after = |op: Operation| {
            p.decisions
                .iter()
                .filter(|(t, o)| *o == op && *t > Nanos::from_millis(400 * 20))
                .count()
        };
        assert!(after(Operation::Expand) >= 5, "{:?}", p.stats);
        assert!(after(Operation::Accelerate) >= 3, "{:?}", p.stats);
        assert!(p.stats.expand_rate > 0.0 && p.stats.accelerate_rate > 0.0);
    }

    /// More than 200 frames arriving at once (a receiver stalled for 10 s, then everything
    /// since comes in a burst): the whole buffer is flushed when full, as NetEq does, and the
    /// flushed frames are concealed, counted.
    #[test]
    fn a_full_buffer_is_flushed_whole() {
        let samples = frames(600, |i| {
            Some(if i >= 100 {
                12_100.0
            } else {
                30.0 + i as f64 * 20.0
            })
        });
        let p = run(&samples);
        check_accounting(&p, 600);
        assert!(p.stats.buffer_flushes >= 1, "{:?}", p.stats);
        let concealed = p
            .events
            .iter()
            .filter(|e| matches!(e, PlayoutEvent::Concealed { .. }))
            .count();
        assert!(concealed >= 200, "{concealed}");
    }

    /// Frames arriving after their slot was concealed are discarded and counted as late.
    #[test]
    fn frames_after_their_slot_are_discarded_as_late() {
        let samples = frames(400, |i| {
            Some(30.0 + i as f64 * 20.0 + if i == 200 { 1_000.0 } else { 0.0 })
        });
        let p = run(&samples);
        check_accounting(&p, 400);
        assert!(p.events.iter().any(|e| matches!(
            e,
            PlayoutEvent::Concealed {
                seq: 200,
                arrived_late: true,
                ..
            }
        )));
        assert_eq!(p.stats.discarded, 1);
    }

    /// Same input, same decisions.
    #[test]
    fn playout_is_deterministic() {
        let mut x = 1u64;
        let samples = frames(2000, |i| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let jitter = (x >> 40) as f64 / (1u64 << 24) as f64 * 60.0;
            ((x >> 20) & 31 != 0).then_some(30.0 + i as f64 * 20.0 + jitter)
        });
        let (a, b) = (run(&samples), run(&samples));
        assert_eq!(a.events, b.events);
        assert_eq!(a.decisions, b.decisions);
        assert_eq!(a.stats, b.stats);
        check_accounting(&a, 2000);
    }
}
