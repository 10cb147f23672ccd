//! The error reference (ground truth, else hindsight) and the recent frames a late sample's
//! correction distance is measured against.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

use crate::buffer::Factor;

/// Reference values over send time, for error: ground truth, else hindsight. Flat arrays of
/// the error channels only, sorted by send time, one entry per sequence number.
#[derive(Clone, Debug, Default)]
pub(super) struct ReferenceTrack {
    pub(super) sends: Vec<Nanos>,
    pub(super) seqs: Vec<i64>,
    /// `width` values per entry.
    pub(super) values: Vec<f64>,
    pub(super) width: usize,
    pub(super) channels: Vec<usize>,
    /// `channels` is `0..width`.
    pub(super) contiguous: bool,
    /// Points were dropped from the front ([`Self::forget`]).
    pub(super) forgotten: bool,
}

impl ReferenceTrack {
    pub(super) fn new(samples: &[Sample], channels: Vec<usize>) -> Self {
        let mut points: Vec<&Sample> = samples.iter().filter(|s| !s.values.is_empty()).collect();
        points.sort_by_key(|s| (s.send, s.seq));
        points.dedup_by_key(|s| s.seq);
        let width = channels.len();
        let mut values = Vec::with_capacity(points.len() * width);
        for p in &points {
            values.extend(
                channels
                    .iter()
                    .map(|&i| p.values.get(i).copied().unwrap_or(0.0)),
            );
        }
        Self {
            sends: points.iter().map(|p| p.send).collect(),
            seqs: points.iter().map(|p| p.seq).collect(),
            values,
            width,
            contiguous: channels.iter().enumerate().all(|(k, &c)| k == c),
            channels,
            forgotten: false,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.sends.is_empty()
    }

    /// An empty reference over `channels` of streams `width` values wide, for a reader that
    /// inserts its points as they come ([`Self::insert`]).
    pub(super) fn empty(channels: Vec<usize>) -> Self {
        Self {
            sends: Vec::new(),
            seqs: Vec::new(),
            values: Vec::new(),
            width: channels.len(),
            contiguous: channels.iter().enumerate().all(|(k, &c)| k == c),
            channels,
            forgotten: false,
        }
    }

    /// Adds `s` as [`Self::new`] would have placed it among the points so far (by send time,
    /// then sequence number, after equal ones; the first of neighbours with one sequence
    /// number kept). Says where it went.
    pub(super) fn insert(&mut self, s: &Sample) -> Placed {
        if s.values.is_empty() {
            return Placed::NoValues;
        }
        let key = (s.send, s.seq);
        let n = self.sends.len();
        // Almost always at the end: points come in send order.
        let at = if n == 0 || (self.sends[n - 1], self.seqs[n - 1]) <= key {
            n
        } else {
            let (mut lo, mut hi) = (0, n);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if (self.sends[mid], self.seqs[mid]) <= key {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        if at > 0 && self.seqs[at - 1] == s.seq {
            return Placed::Repeat {
                same_send: self.sends[at - 1] == s.send,
            };
        }
        let w = self.width;
        let row = self
            .channels
            .iter()
            .map(|&i| s.values.get(i).copied().unwrap_or(0.0));
        if at < n && self.seqs[at] == s.seq {
            // It now leads its run of one sequence number: it replaces the old lead.
            self.sends[at] = s.send;
            for (slot, v) in self.values[at * w..(at + 1) * w].iter_mut().zip(row) {
                *slot = v;
            }
            return Placed::Replaced(at);
        } else if at == n {
            self.sends.push(s.send);
            self.seqs.push(s.seq);
            self.values.extend(row);
        } else {
            self.sends.insert(at, s.send);
            self.seqs.insert(at, s.seq);
            let row: Vec<f64> = row.collect();
            self.values.splice(at * w..at * w, row);
        }
        Placed::At(at)
    }

    /// Drops the first `count` points.
    pub(super) fn forget(&mut self, count: usize) {
        self.sends.drain(..count);
        self.seqs.drain(..count);
        self.values.drain(..count * self.width);
        self.forgotten |= count > 0;
    }

    /// Whether the point at or before `target` is still held (a reference that forgot its
    /// first points cannot tell what came before its first point).
    pub(super) fn holds_floor(&self, target: Nanos) -> bool {
        !self.forgotten || self.sends.first().is_some_and(|&s| s <= target)
    }

    /// Whether samples `a` and `b` are two consecutive points of the reference, exactly (send
    /// time, sequence number and error-channel values): a frame interpolating strictly between
    /// them at their own factor shows the reference itself, an error of exactly 0.
    /// `cursor` is where the search starts (as [`Self::error_at`]'s), left at `a` when they
    /// are.
    pub(super) fn consecutive(&self, cursor: &mut usize, a: &Sample, b: &Sample) -> bool {
        // The first point at or after `a`, by send time then sequence number: a step or two
        // from the cursor, as frames go.
        let n = self.sends.len();
        let key = |i: usize| (self.sends[i], self.seqs[i]);
        let want = (a.send, a.seq);
        let mut i = (*cursor).min(n);
        let mut steps = 0;
        while i > 0 && key(i - 1) >= want && steps < 4 {
            i -= 1;
            steps += 1;
        }
        while i < n && key(i) < want && steps < 4 {
            i += 1;
            steps += 1;
        }
        if steps == 4 {
            let (mut lo, mut hi) = (0, n);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if key(mid) < want {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            i = lo;
        }
        let w = self.width;
        let holds = |at: usize, s: &Sample| {
            self.sends.get(at) == Some(&s.send)
                && self.seqs[at] == s.seq
                && self.channels.iter().enumerate().all(|(k, &c)| {
                    s.values
                        .get(c)
                        .is_some_and(|v| v.to_bits() == self.values[at * w + k].to_bits())
                })
        };
        let found = holds(i, a) && holds(i + 1, b);
        if found {
            *cursor = i;
        }
        found
    }

    /// How many points.
    pub(super) fn len(&self) -> usize {
        self.sends.len()
    }

    /// The send time of the latest point before `t`, if any.
    pub(super) fn last_before(&self, t: Nanos) -> Option<Nanos> {
        let i = self.sends.partition_point(|&s| s < t);
        i.checked_sub(1).map(|i| self.sends[i])
    }

    /// For each sample, its index in the reference when the reference holds exactly it (same
    /// sequence number, send time and error-channel values), else `u32::MAX`.
    pub(super) fn positions(&self, samples: &[Sample]) -> Vec<u32> {
        // Sequence numbers almost always rise with send time: then a binary search finds each
        // one; otherwise a map (the last of equal sequence numbers wins either way).
        let index: Option<std::collections::HashMap<i64, u32>> =
            (!self.seqs.windows(2).all(|w| w[0] < w[1])).then(|| {
                self.seqs
                    .iter()
                    .enumerate()
                    .map(|(i, &q)| (q, i as u32))
                    .collect()
            });
        let find = |seq: i64| match &index {
            None => self.seqs.binary_search(&seq).ok().map(|i| i as u32),
            Some(index) => index.get(&seq).copied(),
        };
        let w = self.width;
        samples
            .iter()
            .map(|s| {
                let Some(i) = find(s.seq) else {
                    return u32::MAX;
                };
                let at = i as usize;
                let same = self.sends[at] == s.send
                    && self.channels.iter().enumerate().all(|(k, &c)| {
                        s.values
                            .get(c)
                            .is_some_and(|v| v.to_bits() == self.values[at * w + k].to_bits())
                    });
                if same { i } else { u32::MAX }
            })
            .collect()
    }

    /// Distance between what is shown (`a`, or `a + (b − a)·alpha` when `b` is given) and the
    /// reference at `target` (interpolated between the last point at or before it and the
    /// next; the first point before them all), over the error channels: a function of the
    /// target alone. `cursor` is where the search starts, and is left where it ended.
    pub(super) fn error_at(
        &self,
        cursor: &mut usize,
        target: Nanos,
        a: &[f64],
        b: Option<(&[f64], f64)>,
    ) -> Option<f64> {
        if self.sends.is_empty() || a.is_empty() {
            return None;
        }
        let n = self.sends.len();
        // The last point at or before the target (the first point when none is), whatever
        // targets came before: `cursor` only says where to start looking. Targets mostly
        // rise by less than a point: a step or two forward.
        *cursor = (*cursor).min(n - 1);
        if self.sends[*cursor] > target {
            // A target behind an earlier one (a step backwards).
            *cursor = self.sends[..*cursor]
                .partition_point(|&s| s <= target)
                .saturating_sub(1);
        } else if *cursor + 8 < n && self.sends[*cursor + 8] <= target {
            // Far ahead (a cursor left behind by frames measured without it).
            *cursor += self.sends[*cursor..].partition_point(|&s| s <= target) - 1;
        }
        while *cursor + 1 < n && self.sends[*cursor + 1] <= target {
            *cursor += 1;
        }
        let (i, w) = (*cursor, self.width);
        let ra = &self.values[i * w..(i + 1) * w];
        let (rb, t) = match self.sends.get(i + 1) {
            Some(&next) if target > self.sends[i] && next > self.sends[i] => (
                &self.values[(i + 1) * w..(i + 2) * w],
                (target - self.sends[i]).as_nanos() as f64
                    / (next - self.sends[i]).as_nanos() as f64,
            ),
            _ => (ra, 0.0),
        };
        // Fast path: the error channels are the first `w` values (no rotation channels named).
        if self.contiguous && a.len() >= w && b.is_none_or(|(b, _)| b.len() >= w) {
            let refs = ra.iter().zip(rb);
            let mut sq = 0.0;
            match b {
                Some((b, alpha)) => {
                    for ((&x, &y), (&ra, &rb)) in a.iter().zip(b).zip(refs) {
                        let v = x + (y - x) * alpha;
                        let want = ra + (rb - ra) * t;
                        sq += (v - want) * (v - want);
                    }
                }
                None => {
                    for (&x, (&ra, &rb)) in a.iter().zip(refs) {
                        let want = ra + (rb - ra) * t;
                        sq += (x - want) * (x - want);
                    }
                }
            }
            return (w > 0).then(|| sq.sqrt());
        }
        let shown = |ch: usize| -> Option<f64> {
            let x = *a.get(ch)?;
            match b {
                Some((b, alpha)) => Some(x + (b.get(ch)? - x) * alpha),
                None => Some(x),
            }
        };
        let mut sq = 0.0;
        let mut any = false;
        for (k, &ch) in self.channels.iter().enumerate() {
            let Some(v) = shown(ch) else { continue };
            any = true;
            let want = ra[k] + (rb[k] - ra[k]) * t;
            sq += (v - want) * (v - want);
        }
        any.then(|| sq.sqrt())
    }
}

/// Where [`ReferenceTrack::insert`] put a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Placed {
    /// A new point at this position.
    At(usize),
    /// In place of the point at this position, which had its sequence number and a later send
    /// time.
    Replaced(usize),
    /// Left out: the point before it has its sequence number (sent at the same time, or not).
    Repeat { same_send: bool },
    /// Left out: it has no values.
    NoValues,
}

/// What one recent frame showed: enough to recompute its value for a correction distance.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Shown {
    pub(super) target: Nanos,
    /// `u32::MAX` for none.
    pub(super) from: u32,
    /// `u32::MAX` for none.
    pub(super) to: u32,
    pub(super) factor: Factor,
}

impl Shown {
    #[inline(always)]
    pub(super) fn new(target: Nanos, from: u32, to: u32, factor: Factor) -> Self {
        Self {
            target,
            from,
            to,
            factor,
        }
    }
}

/// How a ring keeps a [`Shown`].
pub(super) trait Entry: Copy + Default {
    fn pack(f: Shown) -> Self;
    fn unpack(&self) -> Shown;
    fn target(&self) -> Nanos;
    /// `from` and `to`.
    fn indices(&self) -> [u32; 2];
}

impl Entry for Shown {
    #[inline(always)]
    fn pack(f: Shown) -> Self {
        f
    }

    #[inline(always)]
    fn unpack(&self) -> Shown {
        *self
    }

    #[inline(always)]
    fn target(&self) -> Nanos {
        self.target
    }

    #[inline(always)]
    fn indices(&self) -> [u32; 2] {
        [self.from, self.to]
    }
}

/// A [`Shown`] with its factor as two words, written field by field: a streaming pass's
/// ring. Copied whole, the frame went through a temporary on the stack there, written in
/// 4- and 8-byte parts and read back in wider loads: a store-forwarding stall at every frame
/// (a fifth of a streaming sweep's lane time in `perf annotate`; about 8 % of its CPU time).
/// The in-memory replay's code does not make the temporary and keeps [`Shown`] as it is.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Packed {
    target: Nanos,
    from: u32,
    to: u32,
    /// [`Factor::Ratio`]'s numerator, or [`Factor::Value`]'s bits when `den` is 0.
    num: i64,
    den: i64,
}

impl Entry for Packed {
    #[inline(always)]
    fn pack(f: Shown) -> Self {
        let (num, den) = match f.factor {
            Factor::Value(v) => (v.to_bits() as i64, 0),
            Factor::Ratio(num, den) => (num, den),
        };
        Self {
            target: f.target,
            from: f.from,
            to: f.to,
            num,
            den,
        }
    }

    #[inline(always)]
    fn unpack(&self) -> Shown {
        let factor = if self.den == 0 {
            Factor::Value(f64::from_bits(self.num as u64))
        } else {
            Factor::Ratio(self.num, self.den)
        };
        Shown::new(self.target, self.from, self.to, factor)
    }

    #[inline(always)]
    fn target(&self) -> Nanos {
        self.target
    }

    #[inline(always)]
    fn indices(&self) -> [u32; 2] {
        [self.from, self.to]
    }
}

/// The last frames shown, in a fixed ring written once per frame (~8 s at 60 fps): cheap
/// enough for the replay loop, read only when a sample arrives late. Where the ring lives is
/// `R`'s choice: allocated whole ([`Fixed`], the in-memory replay's), or after a replay's
/// first frames ([`Growing`], a streaming pass's, where a stream of a few frames, one of
/// 100,000, holds a few).
pub(super) struct Recent<R = Fixed> {
    ring: R,
    written: usize,
}

/// Frames kept for correction distances.
const RECENT_LEN: usize = 512;

/// Where [`Recent`] keeps its frames.
pub(super) trait Ring {
    type Entry: Entry;
    fn new() -> Self;
    /// Writes frame number `i` (the next one).
    fn put(&mut self, i: usize, f: Shown);
    /// The frames kept, in no particular order, once `written` were.
    fn kept(&self, written: usize) -> &[Self::Entry];
    /// Frame number `i`, one of the last [`RECENT_LEN`].
    fn get(&self, i: usize) -> &Self::Entry;
}

/// The ring, allocated whole.
pub(super) struct Fixed<E = Shown>(Box<[E; RECENT_LEN]>);

impl<E: Entry> Ring for Fixed<E> {
    type Entry = E;

    fn new() -> Self {
        Self(Box::new([E::default(); RECENT_LEN]))
    }

    #[inline(always)]
    fn put(&mut self, i: usize, f: Shown) {
        self.0[i % RECENT_LEN] = E::pack(f);
    }

    fn kept(&self, written: usize) -> &[E] {
        &self.0[..written.min(RECENT_LEN)]
    }

    fn get(&self, i: usize) -> &E {
        &self.0[i % RECENT_LEN]
    }
}

/// A short list of the first frames, then the ring.
pub(super) struct Growing {
    first: Vec<Packed>,
    ring: Option<Fixed<Packed>>,
}

/// Frames [`Growing`] keeps in its list before it allocates the ring.
const FIRST: usize = 64;

impl Ring for Growing {
    type Entry = Packed;

    fn new() -> Self {
        Self {
            first: Vec::new(),
            ring: None,
        }
    }

    #[inline(always)]
    fn put(&mut self, i: usize, f: Shown) {
        match &mut self.ring {
            Some(ring) => ring.put(i, f),
            None => self.put_first(i, f),
        }
    }

    fn kept(&self, written: usize) -> &[Packed] {
        match &self.ring {
            Some(ring) => ring.kept(written),
            None => &self.first,
        }
    }

    fn get(&self, i: usize) -> &Packed {
        match &self.ring {
            Some(ring) => ring.get(i),
            None => &self.first[i],
        }
    }
}

impl Growing {
    /// [`Ring::put`] before the ring is allocated.
    #[cold]
    #[inline(never)]
    fn put_first(&mut self, i: usize, f: Shown) {
        if self.first.len() < FIRST {
            self.first.push(Packed::pack(f));
        } else {
            let mut ring = Fixed::new();
            ring.0[..self.first.len()].copy_from_slice(&self.first);
            ring.put(i, f);
            self.ring = Some(ring);
            self.first = Vec::new();
        }
    }
}

impl<R: Ring> Recent<R> {
    pub(super) fn new() -> Self {
        Self {
            ring: R::new(),
            written: 0,
        }
    }

    #[inline]
    pub(super) fn push(&mut self, f: Shown) {
        self.ring.put(self.written, f);
        self.written += 1;
    }

    /// The lowest sample index the frames kept name, if any.
    pub(super) fn oldest_idx(&self) -> Option<u32> {
        self.ring
            .kept(self.written)
            .iter()
            .flat_map(Entry::indices)
            .filter(|&i| i != u32::MAX)
            .min()
    }

    /// The newest frame whose target is at or before `t`.
    fn at_or_before(&self, t: Nanos) -> Option<Shown> {
        let oldest = self.written.saturating_sub(RECENT_LEN);
        let mut i = self.written;
        while i > oldest {
            i -= 1;
            let f = self.ring.get(i);
            if f.target() <= t {
                return Some(f.unpack());
            }
        }
        None
    }
}

/// The distance between what the last frame at or before sample `idx`'s send time showed and
/// the sample itself, over the error channels: how far a late sample corrects the display.
/// `sample` gives a sample by its index.
pub(super) fn correction<'s, R: Ring>(
    sample: impl Fn(u32) -> &'s Sample,
    recent: &Recent<R>,
    reference: &ReferenceTrack,
    idx: u32,
) -> Option<f64> {
    let s = sample(idx);
    let f = recent.at_or_before(s.send)?;
    let (from, to, alpha) = (f.from, f.to, f.factor.get());
    if from == u32::MAX {
        return None;
    }
    let a = &sample(from).values;
    let b = (to != u32::MAX).then(|| &sample(to).values);
    let (channels, w) = (&reference.channels, reference.width);
    // Fast path: the error channels are the first `w` values of all three (the same sum in
    // the same order as below).
    if reference.contiguous
        && w > 0
        && a.len() >= w
        && s.values.len() >= w
        && b.is_none_or(|b| b.len() >= w)
    {
        let truth = &s.values[..w];
        let mut sq = 0.0;
        match b {
            Some(b) => {
                for ((&x, &y), &truth) in a.iter().zip(b).zip(truth) {
                    let shown = x + (y - x) * alpha;
                    sq += (shown - truth) * (shown - truth);
                }
            }
            None => {
                for (&x, &truth) in a.iter().zip(truth) {
                    sq += (x - truth) * (x - truth);
                }
            }
        }
        return Some(sq.sqrt());
    }
    let mut sq = 0.0;
    let mut any = false;
    for &ch in channels {
        let (Some(&x), Some(&truth)) = (a.get(ch), s.values.get(ch)) else {
            continue;
        };
        let shown = match b.and_then(|b| b.get(ch)) {
            Some(&y) => x + (y - x) * alpha,
            None => x,
        };
        sq += (shown - truth) * (shown - truth);
        any = true;
    }
    any.then(|| sq.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track() -> ReferenceTrack {
        let ms = Nanos::from_millis;
        let samples: Vec<Sample> = (0..40)
            .map(|i| Sample::new(0, i, ms(i * 10), ms(i * 10 + 5)).with_values(vec![i as f64]))
            .collect();
        ReferenceTrack::new(&samples, vec![0])
    }

    /// The error at a target is the same whatever targets were measured before: a target
    /// behind the last one (a step backwards) is measured against the reference at its own
    /// time, not at the point the search last reached.
    #[test]
    fn the_error_is_a_function_of_the_target_alone() {
        let r = track();
        let ms = Nanos::from_millis;
        for target in [
            ms(-5),
            ms(0),
            ms(33),
            ms(150),
            ms(151),
            ms(389),
            ms(390),
            ms(500),
        ] {
            let mut fresh = 0;
            let want = r.error_at(&mut fresh, target, &[1.5], None);
            for start in [0, 3, 15, 39, 60] {
                let mut cursor = start;
                assert_eq!(
                    r.error_at(&mut cursor, target, &[1.5], None),
                    want,
                    "{target:?} from {start}"
                );
                assert_eq!(cursor, fresh, "{target:?} from {start}");
            }
        }
        // Between points 15 and 16 (150 and 160 ms) the reference is 15.3 at 153 ms.
        let mut cursor = 30;
        let e = r.error_at(&mut cursor, ms(153), &[15.0], None).unwrap();
        assert!((e - 0.3).abs() < 1e-9, "{e}");
    }

    /// Two samples are consecutive points only when the reference holds both exactly, one
    /// right after the other; the search starts anywhere.
    #[test]
    fn consecutive_points_are_found_from_any_cursor() {
        let r = track();
        let ms = Nanos::from_millis;
        let point = |i: i64, v: f64| Sample::new(0, i, ms(i * 10), ms(0)).with_values(vec![v]);
        for start in [0, 7, 8, 9, 20, 39, 100] {
            let mut cursor = start;
            assert!(r.consecutive(&mut cursor, &point(8, 8.0), &point(9, 9.0)));
            assert_eq!(cursor, 8);
            let mut cursor = start;
            assert!(!r.consecutive(&mut cursor, &point(8, 8.0), &point(10, 10.0)));
            assert!(!r.consecutive(&mut cursor, &point(8, 8.5), &point(9, 9.0)));
            assert!(!r.consecutive(&mut cursor, &point(39, 39.0), &point(40, 40.0)));
        }
    }
}
