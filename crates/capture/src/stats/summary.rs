//! What `jitterlab info` reports for a whole trace, computed in one streaming pass:
//! [`Accumulator`] is a [`SampleSink`] that folds each decoded sample into its stream's state
//! and lets it go, so that memory grows with the number of streams, not of packets.
//! [`Summary::from_decoded`] computes the same figures from a [`Decoded`] in memory (the
//! reference the tests compare with).
//!
//! How each figure is had:
//!
//! - **Streamed, exact, bounded**: packets, arrivals, duration, rate; sequence-number
//!   accounting (expected, lost, duplicates, reordered, loss bursts) through a sliding
//!   [`SeqWindow`](super::SeqWindow) (exact but for packets more than about 64 Ki numbers late,
//!   counted in [`StreamSummary::beyond_window`]); RFC 3550 jitter; Wireshark's figures; the
//!   flows and the stream numbering (which needs only counts).
//! - **Held, then computed as in memory**: the post-passes that need a whole stream keep a
//!   small record per packet (40 bytes, not a sample's ~375) of the streams that need them,
//!   up to [`HELD_MAX`] packets each: the clock rate of an RTP stream whose rate nothing
//!   names, the send period of a transport lane that stamps few messages, `--decoder
//!   periodic`'s slots, and a plain UDP flow's send period. A stream longer than that is
//!   *settled* on its first [`HELD_MAX`] packets (the rate, period or grid inferred from them,
//!   then applied to the rest as they stream); the figures of such a stream are then marked
//!   in [`Summary::notes`].
//! - **Inter-arrival percentiles and gaps** (streams without SSRC): exact up to
//!   [`EXACT_INTERVALS`](crate::timing::EXACT_INTERVALS) intervals; beyond, a bounded
//!   histogram gives them within 1/2048 ([`TimingEstimate`]) and a [`SecondPass`] over the
//!   same input (a file can be read twice; a pipe cannot) makes them exact.

use std::collections::HashMap;

use crate::decode::periodic::{self, Estimate};
use crate::decode::{
    ClockInference, Decoded, Finished, Sample, SampleSink, SendInference, StreamInfo, clock,
};
use crate::stats::{StreamAccumulator, StreamStats, stats_for, stream_stats};
use crate::time::Nanos;
use crate::timing::{Refinement, Timing, TimingAccumulator, TimingEstimate, timing};

/// The most packets a stream's post-pass keeps before it is settled (see the module docs).
pub const HELD_MAX: usize = 1 << 20;

/// What `info` reports for a trace.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// The trace's streams, flows and counts; `samples` and `truth` are empty.
    pub decoded: Decoded,
    /// Received samples.
    pub packets: u64,
    /// Ground-truth samples.
    pub truth_packets: u64,
    /// Per stream of `decoded.streams`, in the same order.
    pub streams: Vec<StreamSummary>,
    /// The capture's summary, when the input is a pcap/pcapng capture (the caller's to set).
    pub capture: Option<crate::pcap::CaptureSummary>,
    /// Where a figure is not what the in-memory path gives (a stream settled on its first
    /// packets, an estimated percentile): one line each, for the user.
    pub notes: Vec<String>,
}

/// What `info` reports for one stream.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamSummary {
    /// Counts, loss, jitter, Wireshark's figures.
    pub stats: StreamStats,
    /// Arrival timing (streams without SSRC, when asked for).
    pub timing: Option<Timing>,
    /// Whether `timing`'s percentiles and gaps are the histogram's estimates.
    pub timing_approximate: bool,
    /// The send period inferred from the arrivals (plain UDP flows).
    pub period: Option<Estimate>,
    /// Packets too far behind the highest sequence number to be placed, counted as
    /// duplicates (0 on the in-memory path).
    pub beyond_window: u64,
    /// Ground-truth samples of the stream.
    pub truth_packets: u64,
}

/// A stream with arrivals only: a plain UDP flow, or one `--decoder periodic` found no
/// period in.
pub fn is_plain(info: &StreamInfo) -> bool {
    info.ssrc.is_none() && !info.has_send_times() && matches!(info.protocol, "udp" | "periodic")
}

/// Whether `info` asks for a stream's timing: every stream without SSRC when `all`
/// (`--json`), else the plain ones (the text shows no other's).
fn wants_timing(info: &StreamInfo, all: bool) -> bool {
    info.ssrc.is_none() && (all || is_plain(info))
}

impl Summary {
    /// The figures from a trace decoded in memory (the reference for [`Accumulator`]);
    /// `all_timing` as [`Accumulator::summarize`] takes it.
    pub fn from_decoded(decoded: &Decoded, all_timing: bool) -> Self {
        let stats = stream_stats(decoded);
        let streams = decoded
            .streams
            .iter()
            .zip(stats)
            .map(|(info, stats)| {
                let arrivals = || decoded.stream_samples(info.id).map(|s| s.arrival);
                StreamSummary {
                    stats,
                    timing: wants_timing(info, all_timing).then(|| timing(arrivals())),
                    timing_approximate: false,
                    period: is_plain(info)
                        .then(|| periodic::estimate(&arrivals().collect::<Vec<_>>()))
                        .flatten(),
                    beyond_window: 0,
                    truth_packets: decoded.stream_truth(info.id).count() as u64,
                }
            })
            .collect();
        Self {
            decoded: Decoded {
                streams: decoded.streams.clone(),
                flows: decoded.flows.clone(),
                samples: Vec::new(),
                truth: Vec::new(),
                skipped: decoded.skipped,
                skip_examples: decoded.skip_examples.clone(),
                unknown_records: decoded.unknown_records,
                trailing_bytes: decoded.trailing_bytes,
                capture_stats: decoded.capture_stats,
            },
            packets: decoded.samples.len() as u64,
            truth_packets: decoded.truth.len() as u64,
            streams,
            capture: None,
            notes: Vec::new(),
        }
    }

    /// Keeps the streams `decoded.streams` still lists (after a selection narrowed it).
    pub fn retain_listed(&mut self, before: &[u32]) {
        let kept: std::collections::HashSet<u32> =
            self.decoded.streams.iter().map(|s| s.id).collect();
        let mut i = 0;
        self.streams.retain(|_| {
            let keep = kept.contains(&before[i]);
            i += 1;
            keep
        });
        self.count_packets();
    }

    /// Sets `packets` and `truth_packets` from the streams listed (as a [`Decoded`]'s
    /// samples count those of the streams it keeps).
    fn count_packets(&mut self) {
        self.packets = self.streams.iter().map(|s| s.stats.packets).sum();
        self.truth_packets = self.streams.iter().map(|s| s.truth_packets).sum();
    }
}

/// Why a stream's packets are held (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Post {
    /// Nothing to infer.
    #[default]
    None,
    /// An RTP stream whose clock rate nothing names: inferred from its timestamps.
    ClockRate,
    /// A transport lane: send times inferred from its sequence numbers if it stamps few.
    Sequence,
    /// `--decoder periodic`: slots inferred from the arrivals.
    Periodic,
    /// A plain UDP flow: its send period inferred from the arrivals.
    Plain,
}

impl Post {
    fn of(info: &StreamInfo) -> Self {
        match info.protocol {
            "periodic" => Self::Periodic,
            "udp" => Self::Plain,
            "rtp" | "probe" | "layout" => {
                if info.ssrc.is_some() && info.clock_rate.is_none() && info.payload_type.is_some() {
                    Self::ClockRate
                } else {
                    Self::None
                }
            }
            _ => Self::Sequence,
        }
    }
}

/// What a post-pass needs of one packet.
#[derive(Clone, Copy, Debug)]
struct Point {
    seq: i64,
    send: Nanos,
    arrival: Nanos,
    rtp_timestamp: i64,
    rtp_clock: u32,
    payload_type: Option<u8>,
    marker: bool,
}

impl Point {
    fn of(s: &Sample) -> Self {
        Self {
            seq: s.seq,
            send: s.send,
            arrival: s.arrival,
            rtp_timestamp: s.rtp_timestamp,
            rtp_clock: s.rtp_clock,
            payload_type: s.payload_type,
            marker: s.marker,
        }
    }

    fn sample(&self, stream: u32) -> Sample {
        let mut s = Sample::new(stream, self.seq, self.send, self.arrival);
        s.rtp_timestamp = self.rtp_timestamp;
        s.rtp_clock = self.rtp_clock;
        s.payload_type = self.payload_type;
        s.marker = self.marker;
        s
    }
}

/// A stream's post-pass decided on its first [`HELD_MAX`] packets, applied to the rest.
#[derive(Clone, Debug)]
enum Settled {
    Clock(ClockInference, Option<u8>),
    Sequence(Option<f64>),
    Periodic(Option<Estimate>),
}

impl Settled {
    /// `s` as the decision makes it.
    fn adjust(&self, s: &mut Sample) {
        match self {
            Self::Clock(c, pt) => {
                if let Some(hz) = c.hz
                    && s.payload_type == *pt
                {
                    s.send = crate::decode::send_time(s.rtp_timestamp, hz);
                }
            }
            Self::Sequence(Some(period_ns)) => {
                s.send = Nanos((s.seq as f64 * period_ns).round() as i64);
            }
            Self::Sequence(None) | Self::Periodic(None) => {}
            Self::Periodic(Some(e)) => {
                let slot = ((s.arrival.0 as f64 - e.offset_ns) / e.period_ns).floor() as i64;
                s.seq = slot;
                s.send = Nanos((slot as f64 * e.period_ns).round() as i64);
            }
        }
    }
}

/// One stream's state in an [`Accumulator`].
#[derive(Debug, Default)]
struct Slot {
    started: bool,
    post: Post,
    acc: StreamAccumulator,
    timing: Option<TimingAccumulator>,
    /// The packets a post-pass needs, until settled.
    held: Vec<Point>,
    /// A plain flow's arrivals (the first [`HELD_MAX`]).
    arrivals: Vec<Nanos>,
    /// Whether a plain flow had more arrivals than were kept.
    arrivals_cut: bool,
    /// Past [`HELD_MAX`]: the decision, and the stream's figures with it applied.
    settled: Option<(Settled, StreamAccumulator)>,
    /// Ground-truth samples.
    truth: u64,
}

/// The [`SampleSink`] behind `jitterlab info`: per-stream state only (see the module docs).
#[derive(Debug, Default)]
pub struct Accumulator {
    slots: Vec<Slot>,
    received: u64,
    truth: u64,
}

impl SampleSink for Accumulator {
    fn samples(&mut self, samples: &mut Vec<Sample>, truth: bool, streams: &[StreamInfo]) {
        if truth {
            for s in samples.iter() {
                let id = s.stream as usize;
                if id >= self.slots.len() {
                    self.slots.resize_with(id + 1, Slot::default);
                }
                self.slots[id].truth += 1;
            }
            self.truth += samples.len() as u64;
            return;
        }
        for s in samples.drain(..) {
            let info = &streams[s.stream as usize];
            self.push(s, info);
        }
    }
}

impl Accumulator {
    /// Folds one received sample of stream `info` in.
    fn push(&mut self, mut s: Sample, info: &StreamInfo) {
        let id = s.stream as usize;
        if id >= self.slots.len() {
            self.slots.resize_with(id + 1, Slot::default);
        }
        self.received += 1;
        let slot = &mut self.slots[id];
        if !slot.started {
            slot.started = true;
            slot.post = Post::of(info);
            slot.timing = info.ssrc.is_none().then(TimingAccumulator::default);
        }
        if let Some(t) = &mut slot.timing {
            t.push(s.arrival);
        }
        slot.acc.push(&s);
        match slot.post {
            Post::None => {}
            Post::Plain => {
                if slot.arrivals.len() < HELD_MAX {
                    slot.arrivals.push(s.arrival);
                } else {
                    slot.arrivals_cut = true;
                }
            }
            Post::ClockRate | Post::Sequence | Post::Periodic => match &mut slot.settled {
                Some((decision, acc)) => {
                    decision.adjust(&mut s);
                    acc.push(&s);
                }
                None => {
                    slot.held.push(Point::of(&s));
                    if slot.held.len() >= HELD_MAX {
                        settle(slot, info);
                    }
                }
            },
        }
    }

    /// Received samples so far.
    pub fn packets(&self) -> u64 {
        self.received
    }

    /// A running summary: the figures so far of the streams `decoded` lists (from
    /// [`crate::decode::Collector::peek`]), before any inference (send times, clock rates and
    /// periods are the final summary's) and without the renumbering of the end.
    pub fn peek(&self, decoded: Decoded, all_timing: bool) -> Summary {
        let streams = decoded
            .streams
            .iter()
            .map(|info| match self.slots.get(info.id as usize) {
                Some(slot) => StreamSummary {
                    stats: slot.acc.stats(info),
                    timing: slot
                        .timing
                        .as_ref()
                        .filter(|_| wants_timing(info, all_timing))
                        .map(|t| t.finish().timing),
                    timing_approximate: slot
                        .timing
                        .as_ref()
                        .is_some_and(|t| t.finish().approximate),
                    period: None,
                    beyond_window: slot.acc.beyond_window(),
                    truth_packets: slot.truth,
                },
                None => StreamSummary::default(),
            })
            .collect();
        Summary {
            decoded,
            packets: self.received,
            truth_packets: self.truth,
            streams,
            capture: None,
            notes: Vec::new(),
        }
    }

    /// The summary at the end of the trace, from what the collector finished with; with
    /// `all_timing`, the timing of every stream without SSRC (`--json`), else of the plain
    /// ones only. The [`SecondPass`], when some stream's timing needs one to be exact (its
    /// figures are the histogram's until [`SecondPass::apply`]).
    pub fn summarize(finished: Finished<Self>, all_timing: bool) -> (Summary, Option<SecondPass>) {
        let Finished {
            mut decoded,
            sink,
            new_id,
            unstamped,
            counts: _,
        } = finished;
        let Self {
            mut slots,
            received,
            truth,
        } = sink;
        slots.resize_with(new_id.len(), Slot::default);
        let mut old_of = vec![usize::MAX; decoded.streams.len()];
        for (old, &new) in new_id.iter().enumerate() {
            if let Some(o) = old_of.get_mut(new as usize) {
                *o = old;
            }
        }
        let mut notes = Vec::new();
        let mut second = SecondPass::default();
        let mut streams = Vec::with_capacity(decoded.streams.len());
        for (new, info) in decoded.streams.iter_mut().enumerate() {
            let old = old_of[new];
            let slot = &mut slots[old];
            let stats = post_pass(slot, info, unstamped.get(old).copied().unwrap_or(false));
            if slot.settled.is_some() {
                notes.push(format!(
                    "stream {new}: {} inferred from its first {HELD_MAX} packets (the rest \
                     streamed with it)",
                    match slot.post {
                        Post::ClockRate => "the clock rate",
                        Post::Periodic => "the send slots",
                        _ => "the send period",
                    }
                ));
            }
            let mut summary = StreamSummary {
                stats,
                beyond_window: slot.acc.beyond_window(),
                truth_packets: slot.truth,
                ..StreamSummary::default()
            };
            if wants_timing(info, all_timing) {
                let t = slot.timing.take().unwrap_or_default();
                let TimingEstimate {
                    timing,
                    approximate,
                } = t.finish();
                summary.timing = Some(timing);
                summary.timing_approximate = approximate;
                if let Some(r) = t.refinement() {
                    second.targets.insert(old as u32, (new, r));
                }
            }
            if is_plain(info) {
                let arrivals: Vec<Nanos> = match slot.post {
                    Post::Plain => std::mem::take(&mut slot.arrivals),
                    _ => slot.held.iter().map(|p| p.arrival).collect(),
                };
                summary.period = periodic::estimate(&arrivals);
                if slot.arrivals_cut {
                    notes.push(format!(
                        "stream {new}: the send period is inferred from its first {HELD_MAX} \
                         packets"
                    ));
                }
            }
            if summary.beyond_window > 0 {
                notes.push(format!(
                    "stream {new}: {} packet(s) arrived more than {} sequence numbers late and \
                     were counted as duplicates",
                    summary.beyond_window,
                    super::window::WINDOW - 64
                ));
            }
            *slot = Slot::default();
            streams.push(summary);
        }
        let mut summary = Summary {
            decoded,
            packets: received,
            truth_packets: truth,
            streams,
            capture: None,
            notes,
        };
        // Strays dropped in the renumbering leave the count, as their samples leave a
        // `Decoded`.
        summary.count_packets();
        let second = (!second.targets.is_empty()).then_some(second);
        (summary, second)
    }
}

/// Decides a stream's post-pass on its first [`HELD_MAX`] packets (see the module docs).
fn settle(slot: &mut Slot, info: &StreamInfo) {
    let held = std::mem::take(&mut slot.held);
    let mut samples: Vec<Sample> = held.iter().map(|p| p.sample(info.id)).collect();
    let decision = match slot.post {
        Post::ClockRate => {
            let pt = info.payload_type;
            let points: Vec<(i64, Nanos)> = held
                .iter()
                .filter(|p| p.payload_type == pt)
                .map(|p| (p.rtp_timestamp, p.arrival))
                .collect();
            Settled::Clock(clock::infer(&points), pt)
        }
        Post::Sequence => {
            let points: Vec<(i64, Nanos)> = held.iter().map(|p| (p.seq, p.arrival)).collect();
            let rate = clock::envelope_slope(&points);
            Settled::Sequence((rate > 0.0).then(|| 1e9 / rate))
        }
        _ => {
            let e = periodic::assign(&mut samples);
            let decision = Settled::Periodic(e);
            // Assigned already: the slots of the fit, not of the grid.
            let mut acc = StreamAccumulator::default();
            samples.iter().for_each(|s| acc.push(s));
            slot.settled = Some((decision, acc));
            slot.held = held;
            return;
        }
    };
    let mut acc = StreamAccumulator::default();
    for s in &mut samples {
        decision.adjust(s);
        acc.push(s);
    }
    slot.settled = Some((decision, acc));
    // Kept for a plain flow's period only (a periodic stream with no period): nothing else.
    slot.held = Vec::new();
}

/// The stream's statistics, the post-passes applied to `info` as [`Collector::finish`] applies
/// them (send inference, clock-rate inference).
///
/// [`Collector::finish`]: crate::decode::Collector::finish
fn post_pass(slot: &mut Slot, info: &mut StreamInfo, unstamped: bool) -> StreamStats {
    if let Some((decision, acc)) = &slot.settled {
        match (slot.post, decision) {
            (Post::ClockRate, Settled::Clock(c, _)) => {
                info.clock_inferred = Some(*c);
                if let Some(hz) = c.hz {
                    info.clock_rate = Some(hz);
                }
                return acc.stats(info);
            }
            (Post::Sequence, Settled::Sequence(period)) if unstamped => {
                match period {
                    Some(p) => {
                        info.send_times = true;
                        info.send_inferred = Some(SendInference::Sequence { period_ns: *p });
                    }
                    None => info.send_times = false,
                }
                return acc.stats(info);
            }
            (Post::Periodic, Settled::Periodic(e)) => {
                info.send_times = e.is_some();
                info.send_inferred = Some(
                    e.clone()
                        .map_or(SendInference::NoPeriod, SendInference::Periodic),
                );
                return acc.stats(info);
            }
            _ => return slot.acc.stats(info),
        }
    }
    let samples = || {
        slot.held
            .iter()
            .map(|p| p.sample(info.id))
            .collect::<Vec<_>>()
    };
    match slot.post {
        Post::None | Post::Plain => slot.acc.stats(info),
        Post::Sequence if !unstamped => slot.acc.stats(info),
        Post::Sequence => {
            let mut samples = samples();
            let points: Vec<(i64, Nanos)> = samples.iter().map(|s| (s.seq, s.arrival)).collect();
            let rate = clock::envelope_slope(&points);
            if points.len() < clock::MIN_PACKETS || rate <= 0.0 {
                info.send_times = false;
                return stats_for(info, samples.iter());
            }
            let period_ns = 1e9 / rate;
            for s in &mut samples {
                s.send = Nanos((s.seq as f64 * period_ns).round() as i64);
            }
            info.send_times = true;
            info.send_inferred = Some(SendInference::Sequence { period_ns });
            stats_for(info, samples.iter())
        }
        Post::Periodic => {
            let mut samples = samples();
            let estimate = periodic::assign(&mut samples);
            info.send_times = estimate.is_some();
            info.send_inferred =
                Some(estimate.map_or(SendInference::NoPeriod, SendInference::Periodic));
            stats_for(info, samples.iter())
        }
        Post::ClockRate => {
            let mut samples = samples();
            let pt = info.payload_type;
            let points: Vec<(i64, Nanos)> = samples
                .iter()
                .filter(|s| s.payload_type == pt)
                .map(|s| (s.rtp_timestamp, s.arrival))
                .collect();
            let inferred = clock::infer(&points);
            info.clock_inferred = Some(inferred);
            if let Some(hz) = inferred.hz {
                info.clock_rate = Some(hz);
                for s in samples.iter_mut().filter(|s| s.payload_type == pt) {
                    s.send = crate::decode::send_time(s.rtp_timestamp, hz);
                }
            }
            stats_for(info, samples.iter())
        }
    }
}

/// The second pass over the same input that makes the timing of the streams past
/// [`EXACT_INTERVALS`](crate::timing::EXACT_INTERVALS) exact: a [`SampleSink`] for a fresh
/// collector over the same trace, then [`Self::apply`].
#[derive(Debug, Default)]
pub struct SecondPass {
    /// By stream number as the sink sees it: the stream's index in the summary and its
    /// refinement.
    targets: HashMap<u32, (usize, Refinement)>,
}

impl SampleSink for SecondPass {
    fn samples(&mut self, samples: &mut Vec<Sample>, truth: bool, _: &[StreamInfo]) {
        if truth {
            return;
        }
        for s in samples.iter() {
            if let Some((_, r)) = self.targets.get_mut(&s.stream) {
                r.push(s.arrival);
            }
        }
    }
}

impl SecondPass {
    /// Puts the exact figures in `summary`.
    pub fn apply(self, summary: &mut Summary) {
        for (_, (i, r)) in self.targets {
            if let Some(s) = summary.streams.get_mut(i) {
                s.timing = Some(r.finish());
                s.timing_approximate = false;
            }
        }
    }

    /// How many streams it refines.
    pub fn streams(&self) -> usize {
        self.targets.len()
    }
}
