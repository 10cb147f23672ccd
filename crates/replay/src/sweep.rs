//! Sweeps: many (trace, configuration) pairs replayed in parallel.
//!
//! Each trace is decoded and [`Prepared`] once, then shared read-only by every configuration;
//! pairs run on all cores (rayon) and each keeps only its [`Summary`] once it finishes, so
//! memory does not grow with the number of configurations beyond one summary per row. A row's
//! metrics are exactly what `jitterlab replay` prints for that policy (the same
//! [`replay_metrics`] per stream, merged over the trace's streams).
//!
//! [`Shard`] picks a deterministic, disjoint part of the pairs, so a sweep can be spread over
//! machines and the parts concatenated.

use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;

use crate::Error;
use crate::clock::ClockMapping;
use crate::metrics::{Metrics, Summary};
use crate::policy::Policy;
use crate::run::{FrameClock, FramePlan, Prepared, replay_metrics, replay_planned};

/// One trace, prepared once: its streams.
#[derive(Clone, Debug)]
pub struct SweepTrace<'a> {
    /// The name rows carry (usually the file name).
    pub name: String,
    /// Every stream of the trace that is replayed.
    pub streams: Vec<Prepared<'a>>,
}

impl SweepTrace<'_> {
    /// Received samples over all streams (the packets one replay steps through).
    pub fn packets(&self) -> usize {
        self.streams.iter().map(Prepared::len).sum()
    }
}

/// Part `index` (0-based) of `count` disjoint parts of a sweep's pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which part, `0..count`.
    pub index: usize,
    /// How many parts.
    pub count: usize,
}

impl Shard {
    /// The whole sweep.
    pub const ALL: Self = Self { index: 0, count: 1 };

    /// Whether pair number `pair` (in trace-major, configuration-minor order) is in this part.
    pub fn contains(&self, pair: usize) -> bool {
        pair % self.count == self.index
    }
}

impl FromStr for Shard {
    type Err = Error;

    /// Parses `I/N` with `1 <= I <= N`.
    fn from_str(text: &str) -> Result<Self, Error> {
        let bad = || {
            Error::Invalid(format!(
                "--shard '{text}': expected I/N with 1 <= I <= N, e.g. 2/3"
            ))
        };
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (i, n): (usize, usize) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if n == 0 || i == 0 || i > n {
            return Err(bad());
        }
        Ok(Self {
            index: i - 1,
            count: n,
        })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

/// One result: which trace and configuration, and what a player would have seen.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Index into the traces.
    pub trace: usize,
    /// Index into the configurations.
    pub config: usize,
    /// The replay's metrics over every stream of the trace.
    pub summary: Summary,
}

/// Replays one trace through one policy: the metrics `jitterlab replay` reports.
///
/// # Errors
/// An invalid frame clock.
pub fn replay_one(
    trace: &SweepTrace<'_>,
    policy: &Policy,
    frames: &FrameClock,
    clock: ClockMapping,
) -> Result<Summary, Error> {
    let mut total = Metrics::default();
    for stream in &trace.streams {
        total.merge(&replay_metrics(stream, policy, frames, clock)?);
    }
    Ok(total.summary())
}

/// [`replay_one`] with each stream's frames read from its [`FramePlan`] (same result).
fn replay_one_planned(
    trace: &SweepTrace<'_>,
    plans: &[FramePlan],
    policy: &Policy,
) -> Result<Summary, Error> {
    let mut total = Metrics::default();
    for (stream, plan) in trace.streams.iter().zip(plans) {
        total.merge(&replay_planned(stream, plan, policy)?);
    }
    Ok(total.summary())
}

/// Runs every (trace, configuration) pair in `shard` on the current rayon pool, calling
/// `done` as each finishes (for progress), and returns the rows in trace-major,
/// configuration-minor order.
///
/// # Errors
/// The first replay error (an invalid frame clock).
pub fn run(
    traces: &[SweepTrace<'_>],
    policies: &[Policy],
    frames: &FrameClock,
    clock: ClockMapping,
    shard: Shard,
    done: &(dyn Fn() + Sync),
) -> Result<Vec<Row>, Error> {
    frames.validate()?;
    let pairs = traces.len() * policies.len();
    // Frame times and clock offsets do not depend on the policy: computed once per stream of
    // every trace this shard touches, for the longest delay among the policies.
    let max_delay = policies
        .iter()
        .map(Policy::max_delay)
        .max()
        .unwrap_or_default();
    let plans: Vec<Option<Vec<FramePlan>>> = (0..traces.len())
        .into_par_iter()
        .map(|t| {
            let touched = (0..policies.len()).any(|c| shard.contains(t * policies.len() + c));
            touched
                .then(|| {
                    traces[t]
                        .streams
                        .iter()
                        .map(|s| FramePlan::new(s, frames, clock, max_delay))
                        .collect::<Result<Vec<_>, _>>()
                })
                .transpose()
        })
        .collect::<Result<_, _>>()?;
    (0..pairs)
        .into_par_iter()
        .filter(|&p| shard.contains(p))
        .map(|p| {
            let (t, c) = (p / policies.len(), p % policies.len());
            let plans = plans[t].as_deref().unwrap_or_default();
            let summary = replay_one_planned(&traces[t], plans, &policies[c])?;
            done();
            Ok(Row {
                trace: t,
                config: c,
                summary,
            })
        })
        .collect()
}

/// How many pairs of a sweep fall in `shard`.
pub fn pairs_in(shard: Shard, traces: usize, configs: usize) -> usize {
    (0..traces * configs).filter(|&p| shard.contains(p)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_disjoint_and_cover_everything() {
        let parts: Vec<Shard> = ["1/3", "2/3", "3/3"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        for p in 0..100 {
            assert_eq!(parts.iter().filter(|s| s.contains(p)).count(), 1);
        }
        assert_eq!(
            pairs_in(parts[0], 5, 7) + pairs_in(parts[1], 5, 7) + pairs_in(parts[2], 5, 7),
            35
        );
        for bad in ["0/3", "4/3", "1/0", "x", "1-3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(parts[1].to_string(), "2/3");
    }
}
