//! Distinct-sequence-number accounting in bounded memory: a bitmap over a sliding window of
//! [`WINDOW`] numbers ending at the highest seen, with the loss bursts of the numbers that
//! slid out of it counted as they leave.
//!
//! Exact (the same counts as sorting every distinct number, as [`super::stats_for`] does)
//! whenever each packet's number is less than `WINDOW − 64` behind the highest number seen
//! before it (the window is kept in 64-number words), or below every number seen so far (a
//! later packet inside the run between the two is then one the window cannot place). A
//! packet further behind the
//! highest and above the lowest is one the window can no longer place: it is counted as a
//! duplicate (and in [`SeqCounts::beyond`]), so that the loss figures already counted stand;
//! the exact method might have counted it as a late packet filling a hole.

use std::collections::VecDeque;

/// The numbers the window spans (64 Ki numbers, 8 KiB of bitmap at most per stream).
pub const WINDOW: i64 = 1 << 16;

/// Bits per word of the bitmap.
const BITS: i64 = 64;

/// The sequence numbers of one stream, counted as they arrive (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct SeqWindow {
    started: bool,
    /// The number bit 0 of `words[0]` stands for (a multiple of 64).
    base: i64,
    words: VecDeque<u64>,
    /// Whether any word slid out (then the window cannot grow downwards).
    slid: bool,
    min: i64,
    max: i64,
    distinct: u64,
    duplicates: u64,
    reordered: u64,
    beyond: u64,
    /// The highest received number already out of the window.
    prev: Option<i64>,
    bursts: Bursts,
}

/// Runs of missing numbers counted so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bursts {
    /// How many runs.
    pub count: u64,
    /// Numbers missing in them.
    pub total: u64,
    /// The longest run.
    pub max: u64,
}

impl Bursts {
    fn add(&mut self, gap: u64) {
        if gap > 0 {
            self.count += 1;
            self.total += gap;
            self.max = self.max.max(gap);
        }
    }
}

/// What a window says about its stream's numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SeqCounts {
    /// Lowest number received.
    pub first: i64,
    /// Highest number received.
    pub last: i64,
    /// Distinct numbers received.
    pub distinct: u64,
    /// Packets whose number had already been received (or could no longer be placed).
    pub duplicates: u64,
    /// Fresh packets that arrived after a higher number.
    pub reordered: u64,
    /// Runs of missing numbers between `first` and `last`.
    pub bursts: Bursts,
    /// Packets too far behind the highest number to be placed (counted as duplicates).
    pub beyond: u64,
}

fn floor64(n: i64) -> i64 {
    n.div_euclid(BITS) * BITS
}

impl SeqWindow {
    /// Counts one packet's number; `false` if it is a duplicate.
    pub fn insert(&mut self, seq: i64) -> bool {
        if !self.started {
            self.started = true;
            self.base = floor64(seq);
            self.words.push_back(0);
            self.min = seq;
            self.max = seq;
            self.set(seq);
            self.distinct = 1;
            return true;
        }
        let span = |w: &Self| w.words.len() as i128 * i128::from(BITS);
        let off = i128::from(seq) - i128::from(self.base);
        if off >= span(self) {
            if off >= span(self) + i128::from(WINDOW) {
                // A jump past the whole window: everything in it slides out.
                while !self.words.is_empty() {
                    self.slide();
                }
                self.base = floor64(seq);
                self.words.push_back(0);
            } else {
                while i128::from(seq) - i128::from(self.base) >= span(self) {
                    self.words.push_back(0);
                }
                while span(self) > i128::from(WINDOW) {
                    self.slide();
                }
            }
        } else if off < 0 {
            let lowest = floor64(seq);
            let grown = i128::from(self.base) - i128::from(lowest) + span(self);
            if !self.slid && grown <= i128::from(WINDOW) {
                while self.base > lowest {
                    self.words.push_front(0);
                    self.base -= BITS;
                }
            } else if seq < self.min {
                // Below everything seen: certainly fresh, and the run up to the old lowest
                // number is missing (see the module docs for what a later packet inside that
                // run does).
                self.bursts.add((self.min - seq - 1) as u64);
                self.min = seq;
                self.distinct += 1;
                self.reordered += 1;
                return true;
            } else {
                self.duplicates += 1;
                self.beyond += 1;
                return false;
            }
        }
        if !self.set(seq) {
            self.duplicates += 1;
            return false;
        }
        self.distinct += 1;
        if seq < self.max {
            self.reordered += 1;
        }
        self.max = self.max.max(seq);
        self.min = self.min.min(seq);
        true
    }

    /// Sets `seq`'s bit (within the window); false if it was set.
    fn set(&mut self, seq: i64) -> bool {
        let off = seq - self.base;
        let (w, b) = ((off / BITS) as usize, off % BITS);
        let fresh = self.words[w] & (1 << b) == 0;
        self.words[w] |= 1 << b;
        fresh
    }

    /// Slides the lowest word out, counting the runs it ends.
    fn slide(&mut self) {
        if let Some(word) = self.words.pop_front() {
            walk(word, self.base, &mut self.prev, &mut self.bursts);
            self.base += BITS;
            self.slid = true;
        }
    }

    /// The counts so far (the window is walked, not changed).
    pub fn counts(&self) -> SeqCounts {
        let mut prev = self.prev;
        let mut bursts = self.bursts;
        for (i, &word) in self.words.iter().enumerate() {
            walk(word, self.base + i as i64 * BITS, &mut prev, &mut bursts);
        }
        SeqCounts {
            first: self.min,
            last: self.max,
            distinct: self.distinct,
            duplicates: self.duplicates,
            reordered: self.reordered,
            bursts,
            beyond: self.beyond,
        }
    }
}

/// Walks the set bits of `word` (numbers from `base`) in ascending order, counting the runs
/// of missing numbers since `prev`.
fn walk(mut word: u64, base: i64, prev: &mut Option<i64>, bursts: &mut Bursts) {
    while word != 0 {
        let q = base + i64::from(word.trailing_zeros());
        if let Some(p) = *prev {
            bursts.add((q - p - 1) as u64);
        }
        *prev = Some(q);
        word &= word - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact counts, from every distinct number sorted.
    fn exact(seqs: &[i64]) -> SeqCounts {
        let mut seen = std::collections::HashSet::new();
        let (mut dup, mut reo, mut hi) = (0, 0, i64::MIN);
        for &q in seqs {
            if !seen.insert(q) {
                dup += 1;
            } else if q < hi {
                reo += 1;
            }
            hi = hi.max(q);
        }
        let mut v: Vec<i64> = seen.into_iter().collect();
        v.sort_unstable();
        let mut bursts = Bursts::default();
        for w in v.windows(2) {
            bursts.add((w[1] - w[0] - 1) as u64);
        }
        SeqCounts {
            first: v[0],
            last: v[v.len() - 1],
            distinct: v.len() as u64,
            duplicates: dup,
            reordered: reo,
            bursts,
            beyond: 0,
        }
    }

    fn window(seqs: &[i64]) -> SeqCounts {
        let mut w = SeqWindow::default();
        for &q in seqs {
            w.insert(q);
        }
        w.counts()
    }

    /// Reordering, duplicates and loss across many window lengths, each packet late by up
    /// to the whole window: the same counts as the exact method.
    #[test]
    fn reordering_up_to_the_window_is_counted_exactly() {
        let mut rng = crate::rng::Rng::new(17);
        let n = 4 * WINDOW;
        let mut seqs: Vec<i64> = (0..n).filter(|_| rng.uniform() > 0.01).collect();
        // Late packets: each moved up to WINDOW − 1 places later (numbers are dense, so
        // that many places is under WINDOW numbers behind the highest).
        for k in 0..2_000 {
            let i = (rng.uniform() * (seqs.len() - WINDOW as usize) as f64) as usize;
            let by = if k % 10 == 0 {
                WINDOW as usize - 2_000
            } else {
                (rng.uniform() * 300.0) as usize
            };
            let q = seqs.remove(i);
            seqs.insert(i + by, q);
        }
        for _ in 0..500 {
            let i = (rng.uniform() * seqs.len() as f64) as usize;
            seqs.insert(i.min(seqs.len() - 1) + 1, seqs[i]);
        }
        let got = window(&seqs);
        assert_eq!(got, exact(&seqs));
        assert!(got.reordered > 1_000 && got.duplicates >= 500 && got.bursts.count > 100);
    }

    #[test]
    fn a_start_below_the_first_number_and_jumps_are_exact() {
        for seqs in [
            vec![100, 99, 5, 101, 103],
            vec![7, 9, 1 << 40, 8 - (1 << 40), (1 << 40) + 3, (1 << 40) + 1],
            vec![-3, -70, 200_000, -100_000_000, 200_001],
            vec![5, 5, 5],
        ] {
            assert_eq!(window(&seqs), exact(&seqs), "{seqs:?}");
        }
    }

    /// A packet further behind than the window, above the lowest number: counted as a
    /// duplicate, the loss figures unchanged.
    #[test]
    fn a_packet_older_than_the_window_is_counted_as_a_duplicate() {
        let mut seqs: Vec<i64> = (0..3 * WINDOW).filter(|q| q % 1000 != 500).collect();
        seqs.push(1500);
        let got = window(&seqs);
        let want = exact(&seqs);
        assert_eq!(got.duplicates, 1);
        assert_eq!(got.beyond, 1);
        assert_eq!(got.distinct, want.distinct - 1);
        assert_eq!(got.bursts, exact(&seqs[..seqs.len() - 1]).bursts);
        assert_eq!(want.duplicates, 0);
    }
}
