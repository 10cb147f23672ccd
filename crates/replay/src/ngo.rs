//! Unity Netcode for GameObjects' `BufferedLinearInterpolator`, legacy lerp (anchors.md §2),
//! checked against NGO's own `InterpolatorTests.cs` vectors.
//!
//! Measurements are stamped with the sender's tick time. Render time is the server time minus
//! `ticks_ago` ticks. Whenever render time has reached the current target, every queued item
//! sent at or before the *server* time is consumed: the newest becomes the target and the old
//! target the start, so intermediate samples are skipped (a behaviour users notice). The value
//! is `lerp(start, target, clamp((render − start) / (target − start), 0, 1))`. A measurement not
//! newer than the last one added is dropped (late packets are never reordered in). More than
//! 100 queued in one frame clears the queue and snaps to the newest (pause/unpause). NGO's
//! optional second smoothing stage is not modelled.

use std::collections::VecDeque;

/// The NGO preset's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct NgoConfig {
    /// `NetworkConfig.TickRate` (30).
    pub tick_rate: f64,
    /// Ticks behind the server time that render time runs (1 for server authority, 2 for an
    /// owner-authoritative object seen on a non-server client; + `InterpolationBufferTickOffset`).
    pub ticks_ago: f64,
}

impl Default for NgoConfig {
    fn default() -> Self {
        Self {
            tick_rate: 30.0,
            ticks_ago: 1.0,
        }
    }
}

impl NgoConfig {
    /// Render delay: `ticks_ago / tick_rate` seconds.
    pub fn delay_secs(&self) -> f64 {
        self.ticks_ago / self.tick_rate
    }
}

/// One measurement: the caller's sample index and its sent time in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Item {
    /// The caller's sample index.
    pub idx: u32,
    /// Sender time, seconds.
    pub sent: f64,
}

/// What `add` did with a measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// Queued.
    Queued,
    /// Not newer than the last measurement added: dropped.
    Dropped,
}

/// The interpolator's state.
#[derive(Clone, Debug, Default)]
pub struct Interpolator {
    queue: VecDeque<Item>,
    last_added: Option<f64>,
    /// The interpolation's start.
    pub start: Option<Item>,
    /// The interpolation's target.
    pub target: Option<Item>,
}

/// The most measurements consumed in one frame before the queue is cleared.
pub const BUFFER_COUNT_LIMIT: usize = 100;

impl Interpolator {
    /// The lowest sample index held (queued, or the interpolation's start or target).
    pub fn oldest_idx(&self) -> Option<u32> {
        self.queue
            .iter()
            .chain(&self.start)
            .chain(&self.target)
            .map(|i| i.idx)
            .min()
    }

    /// Queues a measurement sent at `item.sent`.
    pub fn add(&mut self, item: Item) -> Added {
        if self.last_added.is_some_and(|last| item.sent <= last) {
            return Added::Dropped;
        }
        self.last_added = Some(item.sent);
        self.queue.push_back(item);
        Added::Queued
    }

    /// Queued measurements and the target that are at or after `render`: what is buffered.
    pub fn pending_after(&self, render: f64) -> usize {
        self.queue.iter().filter(|i| i.sent >= render).count()
            + usize::from(self.target.is_some_and(|t| t.sent >= render))
    }

    /// The newest measurement added.
    pub fn newest(&self) -> Option<f64> {
        self.last_added
    }

    /// Forgets everything (NGO's `ResetTo`): the next measurement starts afresh.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// `Update` at server time `server` (seconds) rendering `render = server − delay`:
    /// returns (start, target, t) or `None` before the first measurement is consumed.
    pub fn update(&mut self, server: f64, render: f64) -> Option<(Item, Item, f64)> {
        if self.queue.len() > BUFFER_COUNT_LIMIT {
            // Too many at once (a pause): clear and snap to the newest.
            let newest = self.queue.pop_back();
            self.queue.clear();
            self.start = newest;
            self.target = newest;
        }
        if self.target.is_none_or(|t| t.sent <= render) {
            let mut newest = None;
            while self.queue.front().is_some_and(|i| i.sent <= server) {
                newest = self.queue.pop_front();
            }
            if let Some(n) = newest {
                self.start = self.target.or(Some(n));
                self.target = Some(n);
            }
        }
        let (start, target) = (self.start?, self.target?);
        let span = target.sent - start.sent;
        let t = if span > 0.0 {
            ((render - start.sent) / span).clamp(0.0, 1.0)
        } else {
            1.0
        };
        Some((start, target, t))
    }
}

#[cfg(test)]
mod tests {
    //! `InterpolatorTests.cs` (develop-2.0.0; tickRate 1, so render time = server time − 1 s).

    use super::*;

    fn value(values: &[f64], r: Option<(Item, Item, f64)>) -> f64 {
        match r {
            None => 0.0,
            Some((a, b, t)) => {
                let (va, vb) = (values[a.idx as usize], values[b.idx as usize]);
                va + (vb - va) * t
            }
        }
    }

    fn at(i: &mut Interpolator, values: &[f64], server: f64) -> f64 {
        value(values, i.update(server, server - 1.0))
    }

    #[test]
    fn ngo_normal_usage() {
        let values = [0.0, 1.0];
        let mut i = Interpolator::default();
        i.add(Item { idx: 0, sent: 1.0 });
        i.add(Item { idx: 1, sent: 2.0 });
        let got: Vec<f64> = [0.01, 1.01, 2.01, 2.5, 3.0]
            .iter()
            .map(|&s| at(&mut i, &values, s))
            .collect();
        let want = [0.0, 0.0, 0.01, 0.5, 1.0];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-9, "{got:?}");
        }
    }

    #[test]
    fn ngo_out_of_order() {
        let values = [0.0, 2.0, 1.0];
        let mut i = Interpolator::default();
        i.add(Item { idx: 0, sent: 0.0 });
        i.add(Item { idx: 1, sent: 2.0 });
        assert_eq!(at(&mut i, &values, 1.5), 0.0);
        assert_eq!(at(&mut i, &values, 2.0), 1.0);
        assert_eq!(at(&mut i, &values, 2.5), 1.5);
        assert_eq!(i.add(Item { idx: 2, sent: 1.0 }), Added::Dropped);
        assert_eq!(at(&mut i, &values, 3.0), 2.0);
    }

    #[test]
    fn ngo_reset() {
        let values = [5.0, 100.0];
        let mut i = Interpolator::default();
        i.add(Item { idx: 0, sent: 1.0 });
        assert_eq!(at(&mut i, &values, 100.0), 5.0);
        i.reset();
        i.add(Item {
            idx: 1,
            sent: 100.0,
        });
        assert_eq!(at(&mut i, &values, 100.0), 100.0);
    }
}
