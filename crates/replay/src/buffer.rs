//! The snapshot interpolation buffer of seed 000 (contracts C4–C11, C14).
//!
//! Samples are kept sorted by send time whatever their arrival order (C4); a tick already
//! received is rejected and leaves the buffer unchanged (C5); [`SnapshotBuffer::sample`] picks the
//! pair bracketing the target time and interpolates by send times only (C7), holds the older
//! sample across a gap wider than `max_gap` (C8), holds the newest after the end (C9) and the
//! oldest before the start (C10); a full buffer evicts the oldest by send time (C11).
//!
//! The buffer stores indices into the caller's sample slice, never copies of the samples.
//! It prunes what lies behind the playout point, so its memory is O(buffer window).

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{Lifecycle, Sample};

use crate::policy::{BufferConfig, MissPolicy};

/// What became of a pushed packet. Every packet gets exactly one outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Push {
    /// Held in the buffer.
    Inserted,
    /// Held, and the oldest sample was evicted to make room (C11).
    InsertedEvicting,
    /// Its tick was already received: rejected, buffer unchanged (C5, C12).
    Duplicate,
    /// It arrived behind the playout point: its time was already displayed (C22).
    Late,
    /// Not newer than the oldest held sample: dropped on arrival (seed 003's stale rule).
    Stale,
    /// The buffer was full and refuses new samples (Mirror's rule).
    Refused,
}

/// How a frame was shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Between two samples.
    Interpolate,
    /// A held sample (gap, after the newest, before the oldest).
    Hold,
    /// Past the newest sample, continued along the last two (C13, `miss=extrapolate:…`).
    Extrapolate,
    /// Nothing to show: the buffer is empty.
    Empty,
}

impl Mode {
    /// The name used in JSON and CSV output.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Interpolate => "interpolate",
            Self::Hold => "hold",
            Self::Extrapolate => "extrapolate",
            Self::Empty => "empty",
        }
    }
}

/// Why a hold happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldReason {
    /// The bracketing samples are further apart than `max_gap` (C8), or a lifecycle event
    /// lies between them (C14).
    Gap,
    /// The target is after the newest sample: underrun (C9).
    AfterNewest,
    /// The target is before the oldest sample: not enough buffered yet (C10).
    BeforeOldest,
}

impl HoldReason {
    /// The name used in CSV output.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Gap => "gap",
            Self::AfterNewest => "after_newest",
            Self::BeforeOldest => "before_oldest",
        }
    }
}

/// The buffer's choice for one target time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pick {
    /// How the frame is shown.
    pub mode: Mode,
    /// Why it is held, for [`Mode::Hold`].
    pub hold: Option<HoldReason>,
    /// The left sample (or the held one): an index into the caller's slice.
    pub from: Option<u32>,
    /// The right sample, when interpolating.
    pub to: Option<u32>,
    /// Interpolation factor: in [0, 1] between the pair (C7), above 1 when extrapolating.
    pub factor: Factor,
    /// The sender-clock time of what is displayed: the target when interpolating, the held
    /// sample's send time when holding.
    pub shown: Option<Nanos>,
    /// Samples held at or after the target: what is buffered ahead of playout.
    pub depth: usize,
}

/// An interpolation factor: the number, or the ratio of two nanosecond spans left undivided
/// until someone needs the number. A replay that only gathers metrics mostly never does,
/// and a division per frame is one of the longest stalls in the replay loop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Factor {
    /// The factor itself.
    Value(f64),
    /// `num / den` with `den > 0`, both in nanoseconds.
    Ratio(i64, i64),
}

impl Default for Factor {
    fn default() -> Self {
        Self::Value(0.0)
    }
}

impl Factor {
    /// The factor as a number.
    #[inline]
    pub fn get(self) -> f64 {
        match self {
            Self::Value(v) => v,
            Self::Ratio(num, den) => num as f64 / den as f64,
        }
    }

    /// Whether the factor is below 1, without dividing (exact for spans below 2⁵³ ns, about
    /// 104 days).
    #[inline]
    pub fn below_one(self) -> bool {
        match self {
            Self::Value(v) => v < 1.0,
            Self::Ratio(num, den) => num < den,
        }
    }
}

impl Pick {
    /// The interpolation factor as a number: in [0, 1] between the pair (C7), above 1 when
    /// extrapolating, 0 when holding.
    #[inline]
    pub fn alpha(&self) -> f64 {
        self.factor.get()
    }

    /// Nothing to show.
    pub fn empty(depth: usize) -> Self {
        Self {
            mode: Mode::Empty,
            hold: None,
            from: None,
            to: None,
            factor: Factor::Value(0.0),
            shown: None,
            depth,
        }
    }

    /// Interpolating from sample `from` to `to` at factor `alpha`, showing sender time `shown`.
    pub fn between(from: u32, to: u32, alpha: f64, shown: Nanos, depth: usize) -> Self {
        Self::between_by(from, to, Factor::Value(alpha), shown, depth)
    }

    /// [`Pick::between`] with the factor as a [`Factor`].
    #[inline]
    pub fn between_by(from: u32, to: u32, factor: Factor, shown: Nanos, depth: usize) -> Self {
        Self {
            mode: Mode::Interpolate,
            hold: None,
            from: Some(from),
            to: Some(to),
            factor,
            shown: Some(shown),
            depth,
        }
    }

    /// Holding sample `idx`, sent at `send`, for `reason`.
    pub fn held(idx: u32, send: Nanos, reason: HoldReason, depth: usize) -> Self {
        Self {
            mode: Mode::Hold,
            hold: Some(reason),
            from: Some(idx),
            to: None,
            factor: Factor::Value(0.0),
            shown: Some(send),
            depth,
        }
    }
}

/// Counters a production buffer keeps (C12), one per [`Push`] outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Packets inserted (including those that caused an eviction).
    pub inserted: u64,
    /// Duplicates rejected.
    pub duplicates: u64,
    /// Late packets dropped.
    pub late: u64,
    /// Stale packets dropped.
    pub stale: u64,
    /// Samples evicted by capacity.
    pub evicted: u64,
    /// Packets refused by a full buffer (Mirror).
    pub refused: u64,
}

/// What the buffer needs of one sample: 24 bytes read once per arrival, instead of the
/// whole sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Send time on the sender's clock.
    pub send: Nanos,
    /// Sequence number or tick.
    pub seq: i64,
    /// The sample's index in the caller's slice.
    pub idx: u32,
    /// A spawn or teleport at this sample: never interpolate into it (C14).
    pub cuts_before: bool,
    /// A despawn at this sample: never interpolate out of it (C14).
    pub cuts_after: bool,
    /// Whether its tick had already arrived, when that is known from the arrival order (a
    /// [`crate::Prepared`] stream knows it for every packet, for every policy alike): the
    /// buffer's duplicate check then reads it instead of keeping its own window. `None`: the
    /// buffer checks. Give it for every packet offered to a buffer or for none.
    pub repeat: Option<bool>,
}

impl Packet {
    /// Sample `idx` of `samples`.
    pub fn of(samples: &[Sample], idx: u32) -> Self {
        Self::from_sample(&samples[idx as usize], idx)
    }

    /// Sample `s`, number `idx` of its stream.
    pub fn from_sample(s: &Sample, idx: u32) -> Self {
        Self {
            send: s.send,
            seq: s.seq,
            idx,
            cuts_before: matches!(s.event, Some(Lifecycle::Spawn | Lifecycle::Teleport)),
            cuts_after: s.event == Some(Lifecycle::Despawn),
            repeat: None,
        }
    }
}

/// A held sample.
type Held = Packet;

/// Remembers which ticks were received in a sliding window below the highest one, so that
/// duplicates are found even after the original left the buffer, in O(1) memory.
#[derive(Clone, Debug)]
pub(crate) struct SeqWindow {
    highest: Option<i64>,
    bits: Box<[u64; Self::WORDS]>,
}

impl SeqWindow {
    const WORDS: usize = 64;
    const SPAN: i64 = (Self::WORDS * 64) as i64;

    pub(crate) fn new() -> Self {
        Self {
            highest: None,
            bits: Box::new([0; Self::WORDS]),
        }
    }

    fn slot(seq: i64) -> (usize, u64) {
        let bit = seq.rem_euclid(Self::SPAN) as usize;
        (bit / 64, 1u64 << (bit % 64))
    }

    /// Records `seq`; returns false when it was already recorded (or is too old to tell,
    /// which only a packet thousands of ticks late can be).
    #[inline]
    pub(crate) fn insert(&mut self, seq: i64) -> bool {
        if let Some(highest) = self.highest
            && highest.checked_add(1) == Some(seq)
        {
            // The usual case, the next tick: its slot last held a tick SPAN ago.
            let (w, m) = Self::slot(seq);
            self.bits[w] |= m;
            self.highest = Some(seq);
            return true;
        }
        self.insert_other(seq)
    }

    /// [`Self::insert`] of anything but the tick after the highest.
    fn insert_other(&mut self, seq: i64) -> bool {
        let Some(highest) = self.highest else {
            self.highest = Some(seq);
            let (w, m) = Self::slot(seq);
            self.bits[w] |= m;
            return true;
        };
        if seq > highest {
            if seq - highest >= Self::SPAN {
                self.bits.fill(0);
            } else {
                for s in highest + 1..=seq {
                    let (w, m) = Self::slot(s);
                    self.bits[w] &= !m;
                }
            }
            self.highest = Some(seq);
        } else if highest - seq >= Self::SPAN {
            return false;
        }
        let (w, m) = Self::slot(seq);
        let fresh = self.bits[w] & m == 0;
        self.bits[w] |= m;
        fresh
    }
}

/// The held samples, oldest send time first: a `Vec` whose front is consumed by advancing a
/// head index (compacted now and then), so reads are plain slice accesses, without the
/// wrap-around arithmetic of a ring buffer.
#[derive(Clone, Debug, Default)]
struct Store {
    items: Vec<Held>,
    head: usize,
}

impl Store {
    fn with_capacity(n: usize) -> Self {
        Self {
            items: Vec::with_capacity(n),
            head: 0,
        }
    }

    fn slice(&self) -> &[Held] {
        &self.items[self.head..]
    }

    fn len(&self) -> usize {
        self.items.len() - self.head
    }

    /// Inserts `h` at position `at` of the held samples.
    fn insert(&mut self, at: usize, h: Held) {
        self.items.insert(self.head + at, h);
    }

    /// Appends `h` after the held samples.
    #[inline]
    fn push(&mut self, h: Held) {
        self.items.push(h);
    }

    /// Forgets the first `k` held samples.
    fn drop_front(&mut self, k: usize) {
        self.head += k;
        if self.head == self.items.len() {
            self.items.clear();
            self.head = 0;
        } else if self.head >= 64 && self.head * 2 >= self.items.len() {
            self.items.drain(..self.head);
            self.head = 0;
        }
    }
}

/// A snapshot interpolation buffer with a fixed configuration.
#[derive(Clone, Debug)]
pub struct SnapshotBuffer {
    config: BufferConfig,
    items: Store,
    seen: SeqWindow,
    /// Send time of the oldest sample the display may still need: older arrivals are late.
    watermark: Nanos,
    counters: Counters,
}

impl SnapshotBuffer {
    /// An empty buffer.
    pub fn new(config: BufferConfig) -> Self {
        Self {
            items: Store::with_capacity(config.capacity.min(1024) + 1),
            config,
            seen: SeqWindow::new(),
            watermark: Nanos::MIN,
            counters: Counters::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &BufferConfig {
        &self.config
    }

    /// How many samples are held.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no sample is held.
    pub fn is_empty(&self) -> bool {
        self.items.len() == 0
    }

    /// The held samples' indices, oldest send time first.
    pub fn indices(&self) -> impl Iterator<Item = u32> + '_ {
        self.items.slice().iter().map(|h| h.idx)
    }

    /// The lowest sample index held: every pick names a held sample, so a reader that keeps
    /// samples from this index on keeps all a pick can name.
    pub fn oldest_idx(&self) -> Option<u32> {
        self.items.slice().iter().map(|h| h.idx).min()
    }

    /// Send time of the newest held sample.
    pub fn newest_send(&self) -> Option<Nanos> {
        self.items.slice().last().map(|h| h.send)
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Offers sample `idx` of `samples` to the buffer.
    #[inline]
    pub fn push(&mut self, samples: &[Sample], idx: u32) -> Push {
        self.offer(Packet::of(samples, idx))
    }

    /// Offers a packet to the buffer ([`SnapshotBuffer::push`] of a sample taken apart).
    // Always inlined, as `sample` is: they are the replay loop's inner steps (see
    // `engine::SnapshotEngine`).
    #[inline(always)]
    pub fn offer(&mut self, s: Packet) -> Push {
        if self.config.dedup && s.repeat.unwrap_or_else(|| !self.seen.insert(s.seq)) {
            self.counters.duplicates += 1;
            return Push::Duplicate;
        }
        if s.send < self.watermark {
            self.counters.late += 1;
            return Push::Late;
        }
        if self.config.stale_drop && self.items.slice().first().is_some_and(|h| s.send <= h.send) {
            self.counters.stale += 1;
            return Push::Stale;
        }
        let items = self.items.slice();
        if !self.config.dedup && items.iter().any(|h| h.seq == s.seq && h.send == s.send) {
            // Without dedup an exact copy is still one sample; keep the first.
            self.counters.duplicates += 1;
            return Push::Duplicate;
        }
        // Stable for equal send times: the newcomer goes after those already held. Arrivals
        // are mostly the newest: an append, else a binary search.
        if items.last().is_none_or(|h| h.send <= s.send) {
            self.items.push(s);
        } else {
            let at = items.partition_point(|h| h.send <= s.send);
            self.items.insert(at, s);
        }
        self.counters.inserted += 1;
        if self.items.len() > self.config.capacity {
            self.items.drop_front(1);
            self.counters.evicted += 1;
            return Push::InsertedEvicting;
        }
        Push::Inserted
    }

    /// Chooses what to show at sender-clock time `target`, then forgets samples the display
    /// can no longer need. Targets must not decrease between calls.
    #[inline(always)]
    pub fn sample(&mut self, target: Nanos) -> Pick {
        let items = self.items.slice();
        let n = items.len();
        if n == 0 {
            return Pick::empty(0);
        }
        // Pruning keeps at most the left bracket behind the target, so scan from the front.
        let mut right = 0;
        while right < n && items[right].send < target {
            right += 1;
        }
        let depth = n - right;
        let hold = |h: Held, reason| Pick::held(h.idx, h.send, reason, depth);
        if right == n
            && let MissPolicy::Extrapolate(horizon) = self.config.miss
            && n >= 2
        {
            let (a, b) = (items[n - 2], items[n - 1]);
            if b.send > a.send
                && b.send - a.send <= self.config.max_gap
                && !b.cuts_before
                && !a.cuts_after
            {
                // C13: continue along the last two samples, for at most `horizon`; past it,
                // hold the state extrapolated to the horizon (bounded error) as an underrun.
                let past = (target - b.send).min(horizon);
                let alpha = 1.0 + past.as_nanos() as f64 / (b.send - a.send).as_nanos() as f64;
                let within = target - b.send <= horizon;
                self.prune_before(n - 2);
                return Pick {
                    mode: if within {
                        Mode::Extrapolate
                    } else {
                        Mode::Hold
                    },
                    hold: (!within).then_some(HoldReason::AfterNewest),
                    from: Some(a.idx),
                    to: Some(b.idx),
                    factor: Factor::Value(alpha),
                    shown: Some(b.send + past),
                    depth,
                };
            }
        }
        if right == n {
            // C9: after the newest, hold the newest, never the oldest.
            let newest = items[n - 1];
            self.prune_before(n - 1);
            return hold(newest, HoldReason::AfterNewest);
        }
        if right == 0 {
            // C10: before the oldest, hold the oldest.
            return hold(items[0], HoldReason::BeforeOldest);
        }
        let a = items[right - 1];
        let b = items[right];
        self.prune_before(right - 1);
        if b.send - a.send > self.config.max_gap || b.cuts_before || a.cuts_after {
            // C8: never interpolate (or extrapolate) across the gap; hold the left sample.
            return hold(a, HoldReason::Gap);
        }
        let factor = Factor::Ratio((target - a.send).as_nanos(), (b.send - a.send).as_nanos());
        Pick::between_by(a.idx, b.idx, factor, target, depth)
    }

    fn prune_before(&mut self, keep_from: usize) {
        self.items.drop_front(keep_from);
        if let Some(front) = self.items.slice().first() {
            self.watermark = self.watermark.max(front.send);
        }
    }
}

#[cfg(test)]
mod tests;
