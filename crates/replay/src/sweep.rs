//! Sweeps: many (trace, configuration) pairs replayed in parallel.
//!
//! Each trace is decoded and [`Prepared`] once, then shared read-only by every configuration,
//! and so is a [`FramePlan`] per stream: the frame times and clock offsets, which no policy
//! changes. Pairs run on all cores (rayon), a few configurations of a trace side by side in
//! one pass ([`crate::FramePlan::batch`]), and each keeps only its [`Summary`] once it finishes,
//! so memory does not grow with the number of configurations beyond one summary per row. A
//! row's metrics are exactly what `jitterlab replay` prints for that policy (the same metrics
//! as [`crate::Replay::metrics`] per stream, merged over the trace's streams;
//! property tests check the plan and the batches against it).
//!
//! [`Shard`] picks a deterministic, disjoint part of the pairs, so a sweep can be spread over
//! machines and the parts concatenated.

use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;

use crate::Error;
use crate::bound::{Curve, DEFAULT_WINDOW, NeedsSketch, Segments, starved_share};
use crate::clock::ClockMapping;
use crate::metrics::{Metrics, Summary};
use crate::playout::{PlayoutMetrics, PlayoutReport, PlayoutStream, QualityOptions};
use crate::policy::Policy;
use crate::quality::Meter;
use crate::run::{FrameClock, FramePlan, Prepared, replay_planned_batch};

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

/// One trace prepared for discrete playout (audio, video, input): its streams, each prepared
/// once ([`PlayoutStream`]) for every configuration.
#[derive(Clone, Debug)]
pub struct PlayoutTrace<'a> {
    /// The name rows carry (usually the file name).
    pub name: String,
    /// Every stream of the trace that is played.
    pub streams: Vec<PlayoutStream<'a>>,
}

impl PlayoutTrace<'_> {
    /// Frame slots over all streams (the units one playout steps through).
    pub fn slots(&self) -> usize {
        self.streams.iter().map(|s| s.slots().len()).sum()
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
            Error::Shard {
            text: text.to_owned(),
            reason: "expected I/N with 1 <= I <= N, e.g. 2/3, or auto (a Slurm job array's or a Kubernetes Indexed Job's)".to_owned(),
        }
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
    /// The replay's metrics over every stream of the trace (snapshot mode; the default in
    /// playout mode).
    pub summary: Summary,
    /// The playout's figures over every stream of the trace, in playout mode.
    pub playout: Option<PlayoutReport>,
    /// The offline-optimal bound at this row's starved share (snapshot: held, extrapolated
    /// and empty frames; playout: late slots), ms: the least mean delay any policy at all
    /// could reach on the trace with that share, its delay free to change at every frame
    /// ([`crate::bound`]). No configuration goes below it.
    pub bound_ms: Option<f64>,
    /// The least mean delay at the same share for a policy whose delay changes only between
    /// [`crate::bound::DEFAULT_WINDOW`] windows (Moon, Kurose and Towsley's per-talkspurt
    /// class), ms: a tighter floor for that class, which policies that adapt within a window
    /// can go below.
    pub window_bound_ms: Option<f64>,
    /// Playout rows: the least mean delay at the same share for a policy whose delay changes
    /// only when a talkspurt starts (the RTP marker bit, or sound after comfort noise): Moon,
    /// Kurose and Towsley's own class, ms. `None` for snapshot rows.
    pub talkspurt_bound_ms: Option<f64>,
    /// The row's mean delay minus [`Row::bound_ms`], ms: how far the configuration is from
    /// the best possible at its own share.
    pub regret_ms: Option<f64>,
}

impl Row {
    /// The snapshot row of configuration `config` on trace `trace`: `total` over the trace's
    /// streams, with the trace's `bounds`.
    pub fn snapshot(trace: usize, config: usize, total: &Metrics, bounds: &Bounds) -> Self {
        Self {
            trace,
            config,
            summary: total.summary(),
            playout: None,
            bound_ms: None,
            window_bound_ms: None,
            talkspurt_bound_ms: None,
            regret_ms: None,
        }
        .with_bound(bounds)
    }

    /// Sets [`Row::bound_ms`] and [`Row::window_bound_ms`] from the trace's bounds, and
    /// [`Row::regret_ms`] from the first and the row's mean delay.
    pub fn with_bound(mut self, bounds: &Bounds) -> Self {
        let (share, delay) = match &self.playout {
            Some(p) => (p.summary.late_ratio, p.mean_delay_ms),
            None => (starved_share(&self.summary), self.summary.mean_delay_ms),
        };
        self.bound_ms = bounds.any.at_share(share);
        self.window_bound_ms = bounds.window.at_share(share);
        self.talkspurt_bound_ms = bounds.talkspurt.at_share(share);
        self.regret_ms = delay.zip(self.bound_ms).map(|(d, b)| d - b);
        self
    }
}

/// One trace's bounds, for every share.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bounds {
    /// Any policy: the delay free at every frame ([`Row::bound_ms`]).
    pub any: Curve,
    /// The delay constant within [`DEFAULT_WINDOW`] windows ([`Row::window_bound_ms`]).
    pub window: Curve,
    /// Playout only: the delay constant within each talkspurt
    /// ([`Row::talkspurt_bound_ms`]); empty for snapshot traces.
    pub talkspurt: Curve,
}

impl Bounds {
    /// Both bounds over every stream's `(local time, need ms)` frames.
    pub fn of(streams: &[Vec<(jitterlab_capture::Nanos, f64)>]) -> Self {
        let mut window = Segments::default();
        for frames in streams {
            window.extend(Segments::windows(frames, DEFAULT_WINDOW));
        }
        // One frame per segment, straight from the needs (a segment per frame would cost
        // ~60 bytes a frame).
        let any = Curve::of_singles(streams.iter().flatten().map(|&(_, need)| need));
        Self {
            any,
            window: window.curve(),
            talkspurt: Curve::default(),
        }
    }
}

/// One stream's frames' needs for [`Bounds::of_streams`]: listed, or (a trace of more frames
/// than a pass keeps) sketched.
#[derive(Clone, Debug)]
pub enum StreamNeeds {
    /// Every frame's `(local time, need ms)`, in time order.
    Listed(Vec<(jitterlab_capture::Nanos, f64)>),
    /// The frames reduced to their bounds' sketches.
    Sketched(Box<NeedsSketch>),
}

impl Bounds {
    /// The bounds of every stream's needs: [`Bounds::of`] when every stream's are listed
    /// (bit for bit), from their [`Sketch`](crate::bound::Sketch)es when some are sketched
    /// (a floor within the sketch's stated error).
    pub fn of_streams(streams: Vec<StreamNeeds>) -> Self {
        if streams.iter().all(|s| matches!(s, StreamNeeds::Listed(_))) {
            let listed: Vec<Vec<(jitterlab_capture::Nanos, f64)>> = streams
                .into_iter()
                .filter_map(|s| match s {
                    StreamNeeds::Listed(l) => Some(l),
                    StreamNeeds::Sketched(_) => None,
                })
                .collect();
            return Self::of(&listed);
        }
        let (any, window) = NeedsSketch::curves(streams.into_iter().map(|s| match s {
            StreamNeeds::Listed(l) => NeedsSketch::of(&l),
            StreamNeeds::Sketched(s) => *s,
        }));
        Self {
            any,
            window,
            talkspurt: Curve::default(),
        }
    }
}

/// The bounds of one snapshot trace (every stream's frames, from first to last arrival),
/// over its frame plans.
fn snapshot_curve(trace: &SweepTrace<'_>, plans: &[FramePlan]) -> Bounds {
    let frames: Vec<Vec<(jitterlab_capture::Nanos, f64)>> = trace
        .streams
        .iter()
        .zip(plans)
        .map(|(stream, plan)| plan.needs_ms(stream))
        .collect();
    Bounds::of(&frames)
}

/// The bounds of one playout trace: every slot's network delay (zero for a slot that never
/// arrived: no delay saves it), its windows by send time.
pub fn playout_curve(trace: &PlayoutTrace<'_>) -> Bounds {
    let mut all = Vec::new();
    let mut talkspurts = Segments::default();
    for stream in &trace.streams {
        let frames: Vec<(jitterlab_capture::Nanos, f64)> = stream
            .slots()
            .iter()
            .map(|s| {
                // A slot plays at send time + a delay that is never negative: a need below
                // zero (a packet "early" for the clock mapping) counts as zero.
                let need = s.arrival.map_or(0.0, |a| {
                    (a + stream.offset - s.send).as_nanos() as f64 * 1e-6
                });
                (s.send, need.max(0.0))
            })
            .collect();
        let starts: Vec<bool> = stream.slots().iter().map(|s| s.talkspurt).collect();
        talkspurts.extend(Segments::talkspurts(&frames, &starts));
        all.push(frames);
    }
    let mut bounds = Bounds::of(&all);
    bounds.talkspurt = talkspurts.curve();
    bounds
}

/// The bounds of one snapshot trace under `frames` and `clock` (what [`run`] attaches to
/// its rows), for callers that want to draw them.
///
/// # Errors
/// An invalid frame clock.
pub fn snapshot_bound(
    trace: &SweepTrace<'_>,
    frames: &FrameClock,
    clock: ClockMapping,
) -> Result<Bounds, Error> {
    let plans: Vec<FramePlan> = trace
        .streams
        .iter()
        .map(|s| FramePlan::new(s, frames, clock, jitterlab_capture::Nanos::ZERO))
        .collect::<Result<_, Error>>()?;
    Ok(snapshot_curve(trace, &plans))
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
    // Frame times and clock offsets do not depend on the policy: computed once per stream of
    // every trace this shard touches, for the longest delay among the policies.
    let max_delay = policies
        .iter()
        .map(Policy::max_delay)
        .max()
        .unwrap_or_default();
    // Each trace's configurations in this shard.
    let configs: Vec<Vec<usize>> = (0..traces.len())
        .map(|t| {
            (0..policies.len())
                .filter(|&c| shard.contains(t * policies.len() + c))
                .collect()
        })
        .collect();
    let plans: Vec<Vec<FramePlan>> = (0..traces.len())
        .into_par_iter()
        .map(|t| {
            if configs[t].is_empty() {
                return Ok(Vec::new());
            }
            traces[t]
                .streams
                .iter()
                .map(|s| FramePlan::new(s, frames, clock, max_delay))
                .collect()
        })
        .collect::<Result<_, Error>>()?;
    // The best possible on each trace, computed once for all its rows.
    let curves: Vec<Bounds> = (0..traces.len())
        .into_par_iter()
        .map(|t| {
            if configs[t].is_empty() {
                Bounds::default()
            } else {
                snapshot_curve(&traces[t], &plans[t])
            }
        })
        .collect();
    // Work units: a trace and a few of its configurations, replayed side by side in one pass
    // (`replay_planned_batch`), in as many units as keep every thread busy to the end.
    let threads = rayon::current_num_threads().max(1);
    let units: Vec<(usize, Vec<usize>)> = configs
        .iter()
        .enumerate()
        .flat_map(|(t, c)| balanced_chunks(c, threads).map(move |c| (t, c.to_vec())))
        .collect();
    debug_assert_eq!(
        units.iter().map(|u| u.1.len()).sum::<usize>(),
        pairs_in(shard, traces.len(), policies.len())
    );
    let rows: Vec<Vec<Row>> = units
        .into_par_iter()
        .map(|(t, configs)| {
            let batch: Vec<Policy> = configs.iter().map(|&c| policies[c].clone()).collect();
            let mut totals = vec![Metrics::default(); batch.len()];
            for (stream, plan) in traces[t].streams.iter().zip(&plans[t]) {
                let metrics = replay_planned_batch(stream, plan, &batch)?;
                for (total, m) in totals.iter_mut().zip(&metrics) {
                    total.merge(m);
                }
            }
            Ok(configs
                .iter()
                .zip(totals)
                .map(|(&config, total)| {
                    done();
                    Row::snapshot(t, config, &total, &curves[t])
                })
                .collect())
        })
        .collect::<Result<_, Error>>()?;
    Ok(rows.into_iter().flatten().collect())
}

/// [`run`] in playout mode: every (trace, configuration) pair in `shard` played as discrete
/// frames, each row carrying the playout's figures merged over the trace's streams (exactly
/// what [`crate::Replay::playout`] gives for that policy).
///
/// # Errors
/// A policy that does not play discrete frames (named before any work is done).
pub fn run_playout(
    traces: &[PlayoutTrace<'_>],
    policies: &[Policy],
    options: QualityOptions,
    shard: Shard,
    done: &(dyn Fn() + Sync),
) -> Result<Vec<Row>, Error> {
    if let Some(p) = policies.iter().find(|p| !p.plays_frames()) {
        return Err(Error::NotPlayout { policy: p.name() });
    }
    // What the quality figures need from each audio stream, prepared once.
    let meters: Vec<Vec<Option<Meter<'_>>>> = traces
        .iter()
        .map(|t| {
            t.streams
                .iter()
                .map(|s| {
                    s.media
                        .is_audio()
                        .then(|| Meter::new(s, options.codec, options.network_delay))
                })
                .collect()
        })
        .collect();
    let curves: Vec<Bounds> = traces.par_iter().map(playout_curve).collect();
    let pairs: Vec<(usize, usize)> = (0..traces.len())
        .flat_map(|t| (0..policies.len()).map(move |c| (t, c)))
        .filter(|&(t, c)| shard.contains(t * policies.len() + c))
        .collect();
    pairs
        .into_par_iter()
        .map(|(t, config)| {
            let mut total = PlayoutMetrics::default();
            for (stream, meter) in traces[t].streams.iter().zip(&meters[t]) {
                let run = policies[config].playout(stream).ok_or(Error::NotPlayout {
                    policy: policies[config].name(),
                })?;
                total.merge(&PlayoutMetrics::measure_with(stream, &run, meter.as_ref()));
            }
            done();
            Ok(Row {
                trace: t,
                config,
                summary: Summary::default(),
                playout: Some(total.report()),
                bound_ms: None,
                window_bound_ms: None,
                talkspurt_bound_ms: None,
                regret_ms: None,
            }
            .with_bound(&curves[t]))
        })
        .collect()
}

/// The most configurations replayed side by side in one pass: on this project's 2-core
/// machine, 8 lanes ran the 100-delay fixed grid on one thread at 29.5 and 27.7 M steps/s
/// against 25.6 and 20.4 one at a time (medians of two sets of alternating runs); 16 were no
/// faster.
const MAX_LANES: usize = 8;

/// `items` in chunks of at most [`MAX_LANES`], as many as a multiple of `threads` and of
/// sizes that differ by at most one, so that threads finish together.
fn balanced_chunks<T>(items: &[T], threads: usize) -> impl Iterator<Item = &[T]> {
    let n = items.len();
    let parts = (threads * n.div_ceil(threads * MAX_LANES)).min(n);
    let (base, extra) = (
        n.checked_div(parts).unwrap_or(0),
        n.checked_rem(parts).unwrap_or(0),
    );
    let mut start = 0;
    (0..parts).map(move |i| {
        let len = base + usize::from(i < extra);
        let chunk = &items[start..start + len];
        start += len;
        chunk
    })
}

/// How many pairs of a sweep fall in `shard`.
pub fn pairs_in(shard: Shard, traces: usize, configs: usize) -> usize {
    (0..traces * configs).filter(|&p| shard.contains(p)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_chunks_cover_in_order_and_keep_threads_even() {
        for (n, threads) in [
            (0, 2),
            (1, 2),
            (3, 2),
            (100, 2),
            (100, 1),
            (17, 4),
            (1000, 2),
        ] {
            let items: Vec<usize> = (0..n).collect();
            let chunks: Vec<&[usize]> = balanced_chunks(&items, threads).collect();
            let flat: Vec<usize> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            assert_eq!(flat, items, "{n} items, {threads} threads");
            assert!(chunks.iter().all(|c| !c.is_empty() && c.len() <= MAX_LANES));
            let (lo, hi) = (
                chunks.iter().map(|c| c.len()).min().unwrap_or(0),
                chunks.iter().map(|c| c.len()).max().unwrap_or(0),
            );
            assert!(hi - lo <= 1, "{n} items: chunks of {lo} to {hi}");
            if n >= threads {
                assert_eq!(chunks.len() % threads, 0, "{n} items, {threads} threads");
            }
        }
        // The sweep benchmark: 100 configurations on 2 threads, 50 each.
        let items: Vec<usize> = (0..100).collect();
        assert_eq!(balanced_chunks(&items, 2).count(), 14);
    }

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
