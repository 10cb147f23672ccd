//! A small sorted store of snapshots for the game presets whose timeline may step backwards
//! (a resync, a re-taken clock offset): unlike [`crate::buffer::SnapshotBuffer`] it never
//! forgets a sample because the display passed it, only when it is full (the oldest by send
//! time goes), so a later target can still find its pair.

use jitterlab_capture::Nanos;

use crate::buffer::{Counters, HoldReason, Packet, Pick};
use crate::engine::Applied;

/// Snapshots sorted by send time, at most `capacity` of them.
#[derive(Clone, Debug)]
pub(crate) struct Vault {
    items: Vec<Packet>,
    capacity: usize,
    max_gap: Option<Nanos>,
    counters: Counters,
}

impl Vault {
    /// The lowest sample index held.
    pub(crate) fn oldest_idx(&self) -> Option<u32> {
        self.items.iter().map(|p| p.idx).min()
    }

    /// An empty vault; `max_gap`: never interpolate across a wider pair (`None`: any pair).
    pub(crate) fn new(capacity: usize, max_gap: Option<Nanos>) -> Self {
        Self {
            items: Vec::with_capacity(capacity.min(1024)),
            capacity: capacity.max(1),
            max_gap,
            counters: Counters::default(),
        }
    }

    /// Stores `p`; returns whether it was a copy of a sample already held (same tick and
    /// send time), which is not stored again.
    pub(crate) fn add(&mut self, p: Packet) -> bool {
        if self
            .items
            .iter()
            .any(|h| h.seq == p.seq && h.send == p.send)
        {
            self.counters.duplicates += 1;
            return true;
        }
        if self.items.len() >= self.capacity {
            self.items.remove(0);
            self.counters.evicted += 1;
        }
        let at = self.items.partition_point(|h| h.send <= p.send);
        self.items.insert(at, p);
        self.counters.inserted += 1;
        false
    }

    /// What the packets came to.
    pub(crate) fn counters(&self) -> Counters {
        self.counters
    }

    /// The newest send time held.
    pub(crate) fn newest(&self) -> Option<Nanos> {
        self.items.last().map(|p| p.send)
    }

    /// The oldest send time held.
    pub(crate) fn oldest(&self) -> Option<Nanos> {
        self.items.first().map(|p| p.send)
    }

    /// Samples held.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// What an engine shows when it renders `target` at `now`: the delay it applies and the
    /// pair around `target`.
    pub(crate) fn show(
        &self,
        now: Nanos,
        target: Nanos,
        frozen: bool,
        scaled: bool,
    ) -> (Applied, Pick) {
        let applied = Applied {
            delay: now - target,
            target,
            frozen,
            scaled,
        };
        (applied, self.pick(target))
    }

    /// The pair around `target`: the newest sample sent at or before it and the one after.
    /// Before the oldest, the oldest is held; after the newest, the newest.
    pub(crate) fn pick(&self, target: Nanos) -> Pick {
        let n = self.items.len();
        if n == 0 {
            return Pick::empty(0);
        }
        let right = self.items.partition_point(|h| h.send <= target);
        let depth = n - self.items.partition_point(|h| h.send < target);
        if right == 0 {
            let h = self.items[0];
            return Pick::held(h.idx, h.send, HoldReason::BeforeOldest, depth);
        }
        let a = self.items[right - 1];
        if right == n {
            return Pick::held(a.idx, a.send, HoldReason::AfterNewest, depth);
        }
        let b = self.items[right];
        if self.max_gap.is_some_and(|g| b.send - a.send > g) || b.cuts_before || a.cuts_after {
            return Pick::held(a.idx, a.send, HoldReason::Gap, depth);
        }
        let alpha = (target - a.send).as_secs_f64() / (b.send - a.send).as_secs_f64();
        Pick::between(a.idx, b.idx, alpha, target, depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(idx: u32, ms: i64) -> Packet {
        Packet {
            send: Nanos::from_millis(ms),
            seq: i64::from(idx),
            idx,
            cuts_before: false,
            cuts_after: false,
            repeat: None,
        }
    }

    #[test]
    fn keeps_order_evicts_oldest_and_finds_pairs_backwards() {
        let mut v = Vault::new(3, None);
        for (i, ms) in [(0, 0), (2, 100), (1, 50), (3, 150)] {
            assert!(!v.add(p(i, ms)));
        }
        assert!(v.add(p(3, 150)));
        assert_eq!(v.len(), 3);
        assert_eq!(v.oldest(), Some(Nanos::from_millis(50)));
        let pick = v.pick(Nanos::from_millis(125));
        assert_eq!((pick.from, pick.to), (Some(2), Some(3)));
        assert!((pick.alpha() - 0.5).abs() < 1e-12);
        // A target behind the last one still finds its pair.
        let pick = v.pick(Nanos::from_millis(60));
        assert_eq!((pick.from, pick.to), (Some(1), Some(2)));
        assert_eq!(
            v.pick(Nanos::from_millis(10)).hold,
            Some(HoldReason::BeforeOldest)
        );
        assert_eq!(
            v.pick(Nanos::from_millis(151)).hold,
            Some(HoldReason::AfterNewest)
        );
    }
}
