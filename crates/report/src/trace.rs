//! The trace's own figures (network, jitter, playout) and the spikes the recovery figure
//! draws, built one received sample at a time, in arrival order, in two passes: what a
//! streaming report reads from a file twice instead of holding the stream.
//!
//! - [`Survey`] (the first pass) learns what the figures' axes and offsets need of the whole
//!   stream: its first and last arrival, its minimum transit, its range of sequence numbers
//!   and of inter-arrival times, and its spikes (the recovery figure's four largest, found
//!   with [`jitterlab_replay::recovery::Detector`] as `replay` finds them).
//! - [`Drawing`] (the second pass) draws the series, each reduced while it is recorded
//!   ([`Envelope`]: first, lowest, highest and last point of every column, so spikes survive)
//!   and counts the histograms and the playout figure's lateness exactly.
//!
//! [`TraceFigures::of`] runs both over a stream held in memory, so a report drawn from memory
//! and one drawn in passes over the file show the same figures. Whether a packet is lost,
//! reordered or a repeat is decided within a window of [`WINDOW`] sequence numbers behind the
//! highest seen: a copy that comes later than that is counted as it comes and the figures
//! say they are approximate ([`TraceFigures::approximate`]).

use std::collections::BTreeMap;

use jitterlab_capture::stats::Jitter;
use jitterlab_capture::{Nanos, Sample};
use jitterlab_replay::recovery::{Detector, Spike, SpikeRule};

use crate::envelope::Envelope;
use crate::figure::{Figure, Panel, Series, Style};

/// Sequence numbers a stream's packets may come behind the highest seen and still be placed
/// exactly (lost, reordered, repeat, send spacing).
pub const WINDOW: usize = 1 << 16;

/// At most this many spikes get a panel in the recovery figure (the largest, in time order).
pub const MAX_PANELS: usize = 4;

/// Bins of the inter-arrival histogram.
const IAT_BINS: usize = 80;

/// The playout figure's delays: 0 to this many ms, every 5 ms.
const PLAYOUT_MAX_MS: u32 = 300;

/// Distinct send spacings kept exactly for the nominal interval; beyond, they are kept
/// coarser (and the figure says approximate).
const SPACINGS: usize = 1 << 16;

/// The first pass over one stream's received samples (arrival order).
#[derive(Clone, Debug)]
pub struct Survey {
    first: Option<Nanos>,
    last: Nanos,
    min_transit: Nanos,
    max_offset: Nanos,
    seqs: (i64, i64),
    iat: (f64, f64),
    packets: u64,
    unordered: bool,
    detector: Detector,
    found: usize,
    largest: Vec<Spike>,
}

impl Default for Survey {
    fn default() -> Self {
        Self {
            first: None,
            last: Nanos::MIN,
            min_transit: Nanos::MAX,
            max_offset: Nanos::MIN,
            seqs: (i64::MAX, i64::MIN),
            iat: (f64::INFINITY, f64::NEG_INFINITY),
            packets: 0,
            unordered: false,
            detector: Detector::new(SpikeRule::default()),
            found: 0,
            largest: Vec::new(),
        }
    }
}

impl Survey {
    /// The next received sample of the stream.
    pub fn push(&mut self, s: &Sample) {
        if self.first.is_none() {
            self.first = Some(s.arrival);
        } else {
            if s.arrival < self.last {
                self.unordered = true;
            }
            let iat = (s.arrival - self.last).as_millis_f64();
            self.iat = (self.iat.0.min(iat), self.iat.1.max(iat));
        }
        self.last = self.last.max(s.arrival);
        self.packets += 1;
        self.min_transit = self.min_transit.min(s.arrival - s.send);
        self.max_offset = self.max_offset.max(s.send - s.arrival);
        self.seqs = (self.seqs.0.min(s.seq), self.seqs.1.max(s.seq));
        if let Some(spike) = self.detector.push(s.arrival, s.send) {
            self.spike(spike);
        }
    }

    /// Whether a sample came before the one pushed ahead of it: the passes need arrival order.
    pub fn unordered(&self) -> bool {
        self.unordered
    }

    /// Received samples pushed.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Keeps the [`MAX_PANELS`] largest spikes, earlier first among equals, as a stable sort
    /// of them all would.
    fn spike(&mut self, spike: Spike) {
        self.found += 1;
        self.largest.push(spike);
        self.largest
            .sort_by_key(|s| std::cmp::Reverse(s.peak.max(s.end - s.start)));
        self.largest.truncate(MAX_PANELS);
    }

    /// The stream surveyed.
    pub fn finish(mut self) -> Surveyed {
        if let Some(open) = self.detector.open() {
            self.spike(open);
        }
        let start = self.first.unwrap_or_default();
        let mut spikes: Vec<(f64, f64, Spike)> = self
            .largest
            .into_iter()
            .map(|s| {
                (
                    (s.start - start).as_secs_f64(),
                    (s.end - start).as_secs_f64(),
                    s,
                )
            })
            .collect();
        spikes.sort_by(|a, b| a.0.total_cmp(&b.0));
        Surveyed {
            start,
            end: if self.first.is_some() {
                self.last
            } else {
                Nanos::ZERO
            },
            min_transit: if self.first.is_some() {
                self.min_transit
            } else {
                Nanos::ZERO
            },
            offset: if self.first.is_some() {
                self.max_offset
            } else {
                Nanos::ZERO
            },
            seqs: (self.first.is_some()).then_some(self.seqs),
            iat: self.iat,
            packets: self.packets,
            spikes: (self.found, spikes),
        }
    }
}

/// What the first pass learned of a stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Surveyed {
    /// The first arrival (the figures' time zero).
    pub start: Nanos,
    /// The last arrival.
    pub end: Nanos,
    /// The least `arrival − send`.
    pub min_transit: Nanos,
    /// The hindsight clock offset (the most `send − arrival`), as fixed-delay playout maps.
    pub offset: Nanos,
    /// The lowest and highest sequence numbers, when any packet came.
    pub seqs: Option<(i64, i64)>,
    /// The least and most time between consecutive arrivals, ms (infinite with fewer than
    /// two packets).
    pub iat: (f64, f64),
    /// Received samples.
    pub packets: u64,
    /// How many spikes were found, and the largest ([`MAX_PANELS`]) in time order, with
    /// their start and end in seconds since the first arrival.
    pub spikes: (usize, Vec<(f64, f64, Spike)>),
}

impl Surveyed {
    /// Seconds from the first arrival to the last: the span the series are reduced over.
    pub fn span(&self) -> (f64, f64) {
        (0.0, (self.end - self.start).as_secs_f64())
    }
}

/// A sequence number's place in the window: the least send time of its copies and the
/// first arrival.
#[derive(Clone, Copy, Debug)]
struct Slot {
    seq: i64,
    send: Nanos,
    arrival: Nanos,
}

const EMPTY: Slot = Slot {
    seq: i64::MIN,
    send: Nanos::ZERO,
    arrival: Nanos::ZERO,
};

/// The second pass over one stream's received samples (arrival order), drawing its figures.
#[derive(Clone, Debug)]
pub struct Drawing {
    survey: Surveyed,
    owd: Envelope,
    reordered: (Envelope, usize),
    lost: (Envelope, usize),
    jitter: Jitter,
    jitter_series: Envelope,
    iat_counts: Vec<u64>,
    iat_n: usize,
    prev_arrival: Option<Nanos>,
    /// Send spacing between consecutive sequence numbers: ns (shifted right by `shift`) →
    /// count.
    spacings: BTreeMap<i64, u64>,
    shift: u32,
    window: Vec<Slot>,
    highest: i64,
    /// The next sequence number to settle (lost or not), and the last one known before it.
    next: i64,
    known: Option<(i64, Nanos)>,
    /// Per playout delay threshold count (see [`Drawing::late`]), and slots lost.
    late_cells: Vec<u64>,
    slots: u64,
    slots_lost: u64,
    approximate: bool,
}

impl Drawing {
    /// A drawing of the stream `survey` describes.
    pub fn new(survey: Surveyed) -> Self {
        let span = survey.span();
        let next = survey.seqs.map_or(0, |s| s.0);
        Self {
            owd: Envelope::over(span),
            reordered: (Envelope::over(span), 0),
            lost: (Envelope::over(span), 0),
            jitter: Jitter::default(),
            jitter_series: Envelope::over(span),
            iat_counts: vec![0; IAT_BINS],
            iat_n: 0,
            prev_arrival: None,
            spacings: BTreeMap::new(),
            shift: 0,
            window: Vec::new(),
            highest: i64::MIN,
            next,
            known: None,
            late_cells: vec![0; (PLAYOUT_MAX_MS / 5 + 2) as usize],
            slots: 0,
            slots_lost: 0,
            approximate: false,
            survey,
        }
    }

    fn slot(&mut self, seq: i64) -> &mut Slot {
        if self.window.is_empty() {
            self.window = vec![EMPTY; WINDOW];
        }
        &mut self.window[seq.rem_euclid(WINDOW as i64) as usize]
    }

    /// The next received sample of the stream.
    pub fn push(&mut self, s: &Sample) {
        let start = self.survey.start;
        let x = (s.arrival - start).as_secs_f64();
        let y = (s.arrival - s.send - self.survey.min_transit).as_millis_f64();
        self.owd.push(x, y);
        self.jitter.push(s.send, s.arrival, !s.marker);
        self.jitter_series.push(x, self.jitter.current_ms());
        if let Some(prev) = self.prev_arrival {
            let iat = (s.arrival - prev).as_millis_f64();
            let (lo, hi) = self.survey.iat;
            if iat.is_finite() && lo.is_finite() {
                let width = if hi > lo {
                    (hi - lo) / IAT_BINS as f64
                } else {
                    1.0
                };
                let b = (((iat - lo) / width) as usize).min(IAT_BINS - 1);
                self.iat_counts[b] += 1;
            }
            self.iat_n += 1;
        }
        self.prev_arrival = Some(s.arrival);
        // Settle what fell out of the window before placing this one.
        while self.next.saturating_add(WINDOW as i64) <= s.seq {
            self.settle_next();
        }
        let seq = s.seq;
        let first_copy = if seq < self.next {
            // Settled already (lost, or seen): as if first seen, approximately.
            self.approximate = true;
            true
        } else {
            let slot = self.slot(seq);
            if slot.seq == seq {
                if s.send < slot.send {
                    // Its spacing was measured from a later send time.
                    slot.send = s.send;
                    self.approximate = true;
                }
                false
            } else {
                *slot = Slot {
                    seq,
                    send: s.send,
                    arrival: s.arrival,
                };
                true
            }
        };
        if first_copy {
            if seq < self.highest {
                self.reordered.0.push(x, y);
                self.reordered.1 += 1;
            }
            if seq >= self.next {
                for (a, b) in [(seq - 1, seq), (seq, seq + 1)] {
                    if let (Some(sa), Some(sb)) = (self.send_of(a), self.send_of(b)) {
                        self.spacing((sb - sa).as_nanos());
                    }
                }
            }
        }
        self.highest = self.highest.max(seq);
    }

    /// The send time of `seq` while it is in the window.
    fn send_of(&self, seq: i64) -> Option<Nanos> {
        if seq < self.next || self.window.is_empty() {
            return None;
        }
        let slot = &self.window[seq.rem_euclid(WINDOW as i64) as usize];
        (slot.seq == seq).then_some(slot.send)
    }

    fn spacing(&mut self, ns: i64) {
        *self.spacings.entry(ns >> self.shift).or_default() += 1;
        if self.spacings.len() > SPACINGS {
            // Too many distinct spacings to keep: coarser keys.
            self.shift += 4;
            self.approximate = true;
            let old = std::mem::take(&mut self.spacings);
            for (k, n) in old {
                *self.spacings.entry(k >> 4).or_default() += n;
            }
        }
    }

    /// Settles sequence number `next` (and, when it was lost, the run of lost ones after it):
    /// received or lost for good.
    fn settle_next(&mut self) {
        let q = self.next;
        let Some(slot) = self.send_of(q).map(|_| self.window_slot(q)) else {
            // Lost: the next known above it (there is one unless the stream is over).
            let above = (q + 1..=self.highest).find(|&r| self.send_of(r).is_some());
            let end = above.unwrap_or(self.highest + 1);
            let (below, after) = (self.known, above.map(|r| (r, self.window_slot(r).send)));
            for m in q..end {
                let send = match (below, after) {
                    (Some((sa, ta)), Some((sb, tb))) => {
                        ta + Nanos((tb - ta).as_nanos() * (m - sa) / (sb - sa))
                    }
                    (Some((_, t)), None) | (None, Some((_, t))) => {
                        self.approximate = true;
                        t
                    }
                    (None, None) => {
                        self.approximate = true;
                        self.survey.start
                    }
                };
                let x = (send + self.survey.min_transit - self.survey.start).as_secs_f64();
                self.lost.0.push(x, 0.0);
                self.lost.1 += 1;
                self.slots += 1;
                self.slots_lost += 1;
            }
            self.next = end;
            return;
        };
        self.slots += 1;
        let lateness = (slot.arrival - (slot.send - self.survey.offset)).as_millis_f64();
        self.late_cells[Self::late_cell(lateness)] += 1;
        self.known = Some((q, slot.send));
        let w = self.slot(q);
        *w = EMPTY;
        self.next = q + 1;
    }

    fn window_slot(&self, seq: i64) -> Slot {
        self.window[seq.rem_euclid(WINDOW as i64) as usize]
    }

    /// How many of the playout delays 0, 5, …, [`PLAYOUT_MAX_MS`] ms `lateness` is above.
    fn late_cell(lateness: f64) -> usize {
        let top = (PLAYOUT_MAX_MS / 5 + 1) as usize;
        let d = |c: usize| f64::from(5 * c as u32);
        let mut c = ((lateness / 5.0).floor().max(0.0) as usize).min(top);
        while c > 0 && lateness <= d(c - 1) {
            c -= 1;
        }
        while c < top && lateness > d(c) {
            c += 1;
        }
        c
    }

    /// The figures, once every sample was pushed.
    pub fn finish(mut self, title: &str) -> TraceFigures {
        if let Some((_, hi)) = self.survey.seqs {
            while self.next <= hi {
                self.settle_next();
            }
        }
        let network = self.network_figure(&format!("{title}: network"));
        let jitter = self.jitter_figure(&format!("{title}: jitter"));
        let playout = self.playout_figure();
        TraceFigures {
            network,
            jitter,
            playout,
            spikes: self.survey.spikes.clone(),
            approximate: self.approximate,
        }
    }

    fn network_figure(&mut self, title: &str) -> Figure {
        let mut delay_series = vec![Series {
            label: "per packet".into(),
            color: 0,
            style: Style::Dots,
            points: std::mem::take(&mut self.owd).finish(),
        }];
        if self.reordered.1 > 0 {
            delay_series.push(Series {
                label: format!("reordered ({})", self.reordered.1),
                color: 1,
                style: Style::Dots,
                points: std::mem::take(&mut self.reordered.0).finish(),
            });
        }
        if self.lost.1 > 0 {
            delay_series.push(Series {
                label: format!("lost ({})", self.lost.1),
                color: 5,
                style: Style::Crosses,
                points: std::mem::take(&mut self.lost.0).finish(),
            });
        }
        Figure::new(
            title,
            vec![Panel {
                title: "One-way delay variation (arrival − send, minimum removed)".into(),
                x_label: "time since first arrival (s)".into(),
                y_label: "delay variation (ms)".into(),
                series: delay_series,
                note: (self.survey.packets == 0).then(|| "no packets in this stream".to_owned()),
                ..Panel::default()
            }],
        )
    }

    /// The median send spacing between consecutive sequence numbers (the upper one of an even
    /// count), ms.
    fn nominal(&self) -> Option<f64> {
        let n: u64 = self.spacings.values().sum();
        let mut want = n / 2;
        for (&k, &c) in &self.spacings {
            if want < c {
                let ns = if self.shift == 0 {
                    k
                } else {
                    (k << self.shift) + (1 << (self.shift - 1))
                };
                return Some(Nanos(ns).as_millis_f64());
            }
            want -= c;
        }
        None
    }

    fn jitter_figure(&mut self, title: &str) -> Figure {
        let (lo, hi) = self.survey.iat;
        let hist: Vec<(f64, f64)> = if self.iat_n == 0 || !lo.is_finite() {
            Vec::new()
        } else {
            let width = if hi > lo {
                (hi - lo) / IAT_BINS as f64
            } else {
                1.0
            };
            let mut pts: Vec<(f64, f64)> = self
                .iat_counts
                .iter()
                .enumerate()
                .map(|(i, &c)| (lo + i as f64 * width, c as f64))
                .collect();
            pts.push((
                lo + IAT_BINS as f64 * width,
                self.iat_counts[IAT_BINS - 1] as f64,
            ));
            pts
        };
        let peak = hist.iter().map(|p| p.1).fold(0.0, f64::max);
        let mut series = vec![Series {
            label: format!("{} inter-arrival times", self.iat_n),
            color: 0,
            style: Style::Step,
            points: hist,
        }];
        if let Some(n) = self.nominal().filter(|n| n.is_finite()) {
            series.push(Series {
                label: format!("nominal interval {n:.2} ms"),
                color: 5,
                style: Style::Line,
                points: vec![(n, 0.0), (n, peak.max(1.0))],
            });
        }
        Figure::new(
            title,
            vec![
                Panel {
                    title: "RFC 3550 interarrival jitter".into(),
                    x_label: "time since first arrival (s)".into(),
                    y_label: "jitter (ms)".into(),
                    series: vec![Series {
                        label: String::new(),
                        color: 0,
                        style: Style::Line,
                        points: std::mem::take(&mut self.jitter_series).finish(),
                    }],
                    ..Panel::default()
                },
                Panel {
                    title: "Inter-arrival times".into(),
                    x_label: "time between consecutive arrivals (ms)".into(),
                    y_label: "packets".into(),
                    series,
                    note: (self.iat_n == 0).then(|| "fewer than two packets".to_owned()),
                    ..Panel::default()
                },
            ],
        )
    }

    /// Playout mode's view of the network: concealment and late-loss rates against a fixed
    /// delay (every frame slot played at its send time + the delay; C21).
    fn playout_figure(&self) -> Figure {
        let total = self.slots.max(1) as f64;
        let lost = self.slots_lost;
        let mut concealed = Vec::new();
        let mut late = Vec::new();
        if self.slots > 0 {
            // Slots whose lateness is above delay number i: those in cells after i.
            let mut after: u64 = self.late_cells.iter().sum();
            for (i, ms) in (0..=PLAYOUT_MAX_MS).step_by(5).enumerate() {
                after -= self.late_cells[i];
                let d = f64::from(ms);
                concealed.push((d, 100.0 * (lost as f64 + after as f64) / total));
                late.push((d, 100.0 * after as f64 / total));
            }
        }
        Figure::new(
            "Playout: frames played at send time + a fixed delay",
            vec![Panel {
                title: format!(
                    "Concealment and late loss against the playout delay ({lost} frames never arrived)"
                ),
                x_label: "playout delay beyond the minimum transit (ms)".into(),
                y_label: "frames (%)".into(),
                series: vec![
                    Series {
                        label: "concealed (lost or late)".into(),
                        color: 0,
                        style: Style::Line,
                        points: concealed,
                    },
                    Series {
                        label: "arrived too late".into(),
                        color: 5,
                        style: Style::Line,
                        points: late,
                    },
                ],
                ..Panel::default()
            }],
        )
    }
}

/// The figures of one stream of a trace that need no replay, and the spikes the recovery
/// figure draws.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceFigures {
    /// One-way delay variation with reordered and lost packets marked.
    pub network: Figure,
    /// RFC 3550 jitter over time and the inter-arrival histogram.
    pub jitter: Figure,
    /// Concealment and late loss against a fixed playout delay.
    pub playout: Figure,
    /// How many spikes were found, and the largest in time order (seconds since the first
    /// arrival).
    pub spikes: (usize, Vec<(f64, f64, Spike)>),
    /// A packet came more than [`WINDOW`] sequence numbers behind the highest seen, a repeat
    /// was sent earlier than its first copy, or the send spacings were too many to keep
    /// exactly: the lost and reordered marks, the playout figure or the nominal interval may
    /// be slightly off.
    pub approximate: bool,
}

impl TraceFigures {
    /// The figures of stream `stream` of `decoded`, titled `title`: both passes over its
    /// received samples in arrival order.
    pub fn of(decoded: &jitterlab_capture::Decoded, stream: u32, title: &str) -> Self {
        let mut samples: Vec<&Sample> = decoded.stream_samples(stream).collect();
        // Stable, as the replay orders arrivals.
        samples.sort_by_key(|s| s.arrival);
        let mut survey = Survey::default();
        for s in &samples {
            survey.push(s);
        }
        let mut drawing = Drawing::new(survey.finish());
        for s in &samples {
            drawing.push(s);
        }
        drawing.finish(title)
    }

    /// The time windows (s since the first arrival) the recovery figure's panels show.
    pub fn panel_windows(&self) -> Vec<(f64, f64)> {
        crate::recovery::windows_of(&self.spikes.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_cells_count_the_delays_a_lateness_is_above() {
        for (l, want) in [
            (-3.0, 0),
            (0.0, 0),
            (1e-9, 1),
            (5.0, 1),
            (5.000001, 2),
            (299.0, 60),
            (300.0, 60),
            (300.5, 61),
            (1e9, 61),
        ] {
            let brute = (0..=PLAYOUT_MAX_MS)
                .step_by(5)
                .filter(|&d| l > f64::from(d))
                .count();
            assert_eq!(brute, want, "{l}");
            assert_eq!(Drawing::late_cell(l), want, "{l}");
        }
    }
}
