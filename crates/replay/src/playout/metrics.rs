//! What a listener or viewer got from one discrete playout, in figures a sweep can merge over
//! streams and compare across configurations.
//!
//! The **playout delay** of a slot is how long after its reference arrival it played: its
//! play time minus its send time mapped to the local clock (`send − offset`, the clock
//! mapping's minimum transit). It is the delay a buffer adds on top of the fastest packet, the
//! one figure every policy is judged by in playout mode (a fixed buffer's is its `delay`). The
//! **buffer delay** of a played slot is its play time minus its own arrival: how long it
//! waited in the buffer (webrtc-stats' jitterBufferDelay per emitted unit).

use jitterlab_capture::Nanos;

use super::{PlayoutEvent, PlayoutRun, PlayoutStream, PlayoutSummary, summarize};
use crate::metrics::LogHistogram;
use crate::quality::{Codec, Meter, Quality};
use crate::video::VideoStats;

/// One playout's figures, mergeable over streams.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlayoutMetrics {
    /// Slots played, concealed, lost and late.
    pub summary: PlayoutSummary,
    /// Playout delay per slot, ms.
    delay: Delays,
    /// Sum of buffer delays of played slots, ns, and how many.
    buffer: (i128, u64),
    /// Sum of the targets recorded, ns, and how many.
    target: (i128, u64),
    /// Audio: the quality figures (webrtc-stats, E-model, VoIPmonitor, RFC 3611).
    pub quality: Option<Quality>,
    /// Video: the webrtc-stats video figures (frames, freezes, pauses, inter-frame delays).
    pub video: Option<VideoStats>,
    /// Recovery after the network's spikes: the playout delay back within 5 ms of its level
    /// before, concealed slots in place of held frames (`docs/recovery.md`).
    pub recovery: crate::recovery::Recovery,
}

impl PlayoutMetrics {
    /// Measures one stream's playout, with its quality figures when it is audio (the codec
    /// and network delay of `options`).
    pub fn measure(stream: &PlayoutStream<'_>, run: &PlayoutRun, options: QualityOptions) -> Self {
        let meter = stream
            .media
            .is_audio()
            .then(|| Meter::new(stream, options.codec, options.network_delay));
        Self::measure_with(stream, run, meter.as_ref())
    }

    /// [`PlayoutMetrics::measure`] with the quality meter prepared once for the stream (a
    /// sweep's path); `None`: no quality figures.
    pub fn measure_with(
        stream: &PlayoutStream<'_>,
        run: &PlayoutRun,
        meter: Option<&Meter<'_>>,
    ) -> Self {
        let mut m = Self::timing(stream, run);
        m.quality = meter.map(|q| q.measure(run));
        m.video = stream
            .media
            .is_video()
            .then(|| VideoStats::measure(stream, run));
        m
    }

    fn timing(stream: &PlayoutStream<'_>, run: &PlayoutRun) -> Self {
        let slots = stream.slots();
        let first = slots.first().map_or(0, |s| s.seq);
        let mut m = Self {
            summary: summarize(&run.events),
            ..Self::default()
        };
        // Fixed delays (the common case in sweeps) need no histogram walk per slot.
        let constant = match run.targets {
            super::Targets::Constant(d) => Some(d),
            _ => None,
        };
        let mut all_at_target = constant.is_some();
        for (i, e) in run.events.iter().enumerate() {
            let (seq, at, played) = match *e {
                PlayoutEvent::Played { seq, at } => (seq, at, true),
                PlayoutEvent::Concealed { seq, at, .. } => (seq, at, false),
            };
            let Some(slot) = usize::try_from(seq - first).ok().and_then(|k| slots.get(k)) else {
                continue;
            };
            let delay = at - (slot.send - stream.offset);
            m.recovery.frame(stream.spikes(), at, Some(delay), !played);
            if all_at_target && Some(delay) == constant {
                // Counted below in one go.
            } else {
                if all_at_target {
                    // The first slot off the constant: count the ones before it now.
                    all_at_target = false;
                    if let Some(d) = constant {
                        m.delay.add_n(d.as_millis_f64(), i as u64);
                    }
                }
                m.delay.add_n(delay.as_millis_f64(), 1);
            }
            if played && let Some(arrival) = slot.arrival {
                m.buffer.0 += i128::from((at - arrival).as_nanos());
                m.buffer.1 += 1;
            }
            if let Some(t) = run.target(i) {
                m.target.0 += i128::from(t.as_nanos());
                m.target.1 += 1;
            }
        }
        if all_at_target && let Some(d) = constant {
            m.delay.add_n(d.as_millis_f64(), run.events.len() as u64);
        }
        m.recovery.finish();
        m
    }

    /// Adds another stream's figures.
    pub fn merge(&mut self, o: &Self) {
        self.summary.merge(&o.summary);
        self.delay.merge(&o.delay);
        self.recovery.merge(&o.recovery);
        self.buffer.0 += o.buffer.0;
        self.buffer.1 += o.buffer.1;
        self.target.0 += o.target.0;
        self.target.1 += o.target.1;
        self.quality = match (self.quality, o.quality) {
            (Some(mut a), Some(b)) => {
                a.merge(&b);
                Some(a)
            }
            (a, b) => a.or(b),
        };
        match (&mut self.video, &o.video) {
            (Some(a), Some(b)) => a.merge(b),
            (a @ None, b) => *a = *b,
            (Some(_), None) => {}
        }
    }

    /// The figures as a flat record (JSON, result tables).
    pub fn report(&self) -> PlayoutReport {
        let mean = |(sum, n): (i128, u64)| (n > 0).then(|| sum as f64 / n as f64 / 1e6);
        PlayoutReport {
            summary: self.summary,
            mean_delay_ms: self.delay.mean(),
            p50_delay_ms: self.delay.quantile(0.5),
            p95_delay_ms: self.delay.quantile(0.95),
            p99_delay_ms: self.delay.quantile(0.99),
            max_delay_ms: self.delay.max(),
            mean_buffer_delay_ms: mean(self.buffer),
            mean_target_ms: mean(self.target),
            mos: self.quality.map(|q| q.emodel.mos),
            r_factor: self.quality.map(|q| q.emodel.r_factor),
            quality: self.quality,
            video: self.video,
            recovery: self.recovery.summary(),
        }
    }
}

/// Playout delays, ms: one value many times (a fixed delay: no histogram to allocate), or a
/// histogram once they differ.
#[derive(Clone, Debug, Default, PartialEq)]
enum Delays {
    /// None yet.
    #[default]
    Empty,
    /// `n` times the same value.
    Constant(f64, u64),
    /// Any values.
    Spread(LogHistogram),
}

impl Delays {
    fn add_n(&mut self, value: f64, n: u64) {
        if n == 0 || value.is_nan() {
            return;
        }
        let value = value.max(0.0);
        match self {
            Self::Empty => *self = Self::Constant(value, n),
            Self::Constant(v, count) if *v == value => *count += n,
            Self::Constant(v, count) => {
                let mut h = LogHistogram::default();
                h.add_n(*v, *count);
                h.add_n(value, n);
                *self = Self::Spread(h);
            }
            Self::Spread(h) => h.add_n(value, n),
        }
    }

    fn merge(&mut self, o: &Self) {
        match o {
            Self::Empty => {}
            Self::Constant(v, n) => self.add_n(*v, *n),
            Self::Spread(theirs) => {
                let mut h = match std::mem::take(self) {
                    Self::Empty => LogHistogram::default(),
                    Self::Constant(v, n) => {
                        let mut h = LogHistogram::default();
                        h.add_n(v, n);
                        h
                    }
                    Self::Spread(h) => h,
                };
                h.merge(theirs);
                *self = Self::Spread(h);
            }
        }
    }

    fn mean(&self) -> Option<f64> {
        match self {
            Self::Empty => None,
            Self::Constant(v, _) => Some(*v),
            Self::Spread(h) => h.mean(),
        }
    }

    fn quantile(&self, q: f64) -> Option<f64> {
        match self {
            Self::Empty => None,
            Self::Constant(v, _) => Some(*v),
            Self::Spread(h) => h.quantile(q),
        }
    }

    fn max(&self) -> Option<f64> {
        match self {
            Self::Empty => None,
            Self::Constant(v, _) => Some(*v),
            Self::Spread(h) => h.max(),
        }
    }
}

impl PlayoutReport {
    /// The E-model MOS, when the stream is audio (the worst stream's over a trace).
    pub fn mos(&self) -> Option<f64> {
        self.mos
    }
}

/// What the quality figures assume: the codec (`None`: the one the stream's encoding or
/// payload type names, G.711 when neither does) and the one-way network delay of the fastest
/// packet, which a capture at the receiver cannot know.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QualityOptions {
    /// The codec the E-model takes.
    pub codec: Option<Codec>,
    /// The fastest packet's one-way network delay.
    pub network_delay: Nanos,
}

/// A playout's figures: the slot counts and the delays.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlayoutReport {
    /// Slots played, concealed, lost and late.
    #[serde(flatten)]
    pub summary: PlayoutSummary,
    /// Mean playout delay over every slot, ms (see the module documentation).
    pub mean_delay_ms: Option<f64>,
    /// Median playout delay, ms.
    pub p50_delay_ms: Option<f64>,
    /// 95th percentile playout delay, ms.
    pub p95_delay_ms: Option<f64>,
    /// 99th percentile playout delay, ms.
    pub p99_delay_ms: Option<f64>,
    /// Largest playout delay, ms.
    pub max_delay_ms: Option<f64>,
    /// Mean time a played slot waited in the buffer after its own arrival, ms.
    pub mean_buffer_delay_ms: Option<f64>,
    /// Mean target delay the policy aimed at, ms (`None`: it records none).
    pub mean_target_ms: Option<f64>,
    /// Audio: the ITU-T G.107 E-model MOS (the worst stream's over a trace).
    pub mos: Option<f64>,
    /// Audio: the E-model's R factor (of the stream with the worst MOS).
    pub r_factor: Option<f64>,
    /// Audio: every quality figure (`docs/media/quality.md`); written, not read back from
    /// result files (`mos` and `r_factor` are).
    #[serde(skip_deserializing)]
    pub quality: Option<Quality>,
    /// Video: the webrtc-stats video figures (`docs/media/video.md`); written, not read back.
    #[serde(skip_deserializing)]
    pub video: Option<VideoStats>,
    /// Recovery after the network's spikes (`docs/recovery.md`): concealed slots count as
    /// held frames.
    #[serde(default)]
    pub recovery: crate::recovery::RecoverySummary,
}

#[cfg(test)]
mod tests {
    use jitterlab_capture::decode::Sample;

    use super::*;
    use crate::playout::{playout_fixed, playout_slots};

    fn frame(seq: i64, send_ms: i64, arrival_ms: i64) -> Sample {
        Sample::new(
            0,
            seq,
            Nanos::from_millis(send_ms),
            Nanos::from_millis(arrival_ms),
        )
    }

    /// Recovery in playout, by hand: 20 ms frames with a 20 ms transit, except that those sent
    /// from 1000 to 1340 ms all arrive at 1370 ms (an outage; the spike runs from the last
    /// normal arrival, 1000 ms, to 1370 ms, when the frame sent at 1340 ms is back within
    /// 25 ms of the baseline). A fixed 40 ms delay plays each frame at send + 60 ms: those sent
    /// 1000–1300 ms (16) are concealed in a row, the one sent at 1320 ms plays at 1380 ms at
    /// its old delay, 10 ms after the spike's end.
    #[test]
    fn playout_recovers_after_an_outage_as_computed_by_hand() {
        let samples: Vec<Sample> = (0..100)
            .map(|i| {
                let send = 20 * i;
                let arrival = if (1000..=1340).contains(&send) {
                    1370
                } else {
                    send + 20
                };
                frame(i, send, arrival)
            })
            .collect();
        let offset = Nanos::from_millis(-20);
        let stream = PlayoutStream::plain(&samples, offset);
        assert_eq!(stream.spikes().len(), 1);
        let delay = Nanos::from_millis(40);
        let events = playout_slots(stream.slots(), delay, offset);
        let m = PlayoutMetrics::measure(
            &stream,
            &PlayoutRun::fixed(events, delay),
            QualityOptions::default(),
        );
        let r = m.report().recovery;
        assert_eq!((r.spikes, r.unrecovered), (1, 0));
        assert_eq!(r.worst_hold_run_after_spike, 16);
        assert_eq!(r.max_recovery_ms, Some(10.0));
        assert_eq!(r.inflation_ms, Some(0.0));
    }

    /// 20 ms frames with transit 10 ms, except frame 2 (40 ms late) and frame 4 (lost); the
    /// offset maps local to sender time by the minimum transit (−10 ms), the delay is 30 ms.
    #[test]
    fn delays_are_measured_from_the_minimum_transit() {
        let samples = vec![
            frame(0, 0, 10),
            frame(1, 20, 30),
            frame(2, 40, 90),
            frame(3, 60, 70),
            frame(5, 100, 110),
        ];
        let offset = Nanos::from_millis(-10);
        let stream = PlayoutStream::plain(&samples, offset);
        let delay = Nanos::from_millis(30);
        let events = playout_slots(stream.slots(), delay, offset);
        assert_eq!(events, playout_fixed(&samples, delay, offset));
        let m = PlayoutMetrics::measure(
            &stream,
            &PlayoutRun::fixed(events, delay),
            QualityOptions::default(),
        );
        let r = m.report();
        assert_eq!(
            (r.summary.frames, r.summary.late, r.summary.lost),
            (6, 1, 1)
        );
        assert_eq!(r.mean_delay_ms.map(f64::round), Some(30.0));
        assert_eq!(r.mean_target_ms, Some(30.0));
        // The frames played all arrived at the minimum transit: each waited the whole delay.
        assert_eq!(r.mean_buffer_delay_ms, Some(30.0));

        // Two streams merge: counts add, means re-weight.
        let mut both = m.clone();
        both.merge(&m);
        assert_eq!(both.report().summary.frames, 12);
        assert_eq!(both.report().mean_buffer_delay_ms, Some(30.0));
    }

    /// An adaptive run's delays follow its play times, not a constant.
    #[test]
    fn varying_delays_are_histogrammed() {
        let samples: Vec<Sample> = (0..4).map(|i| frame(i, i * 20, i * 20)).collect();
        let stream = PlayoutStream::plain(&samples, Nanos::ZERO);
        let events: Vec<PlayoutEvent> = (0..4)
            .map(|i| PlayoutEvent::Played {
                seq: i,
                at: Nanos::from_millis(i * 20 + 10 * (i + 1)),
            })
            .collect();
        let run = PlayoutRun {
            targets: crate::playout::Targets::Constant(Nanos::from_millis(10)),
            ..PlayoutRun::new(events)
        };
        let r = PlayoutMetrics::measure(&stream, &run, QualityOptions::default()).report();
        assert_eq!(r.max_delay_ms.map(f64::round), Some(40.0));
        assert_eq!(r.mean_buffer_delay_ms, Some(25.0));
        assert!(
            r.mean_delay_ms.is_some_and(|d| (d - 25.0).abs() < 0.5),
            "{r:?}"
        );
    }
}

#[cfg(test)]
mod adaptive_delay_tests {
    use jitterlab_capture::decode::Sample;

    use super::*;

    /// An adaptive policy settles at its target: on a stream with constant transit, the
    /// measured playout delay is the target the policy recorded.
    #[test]
    fn an_adaptive_playout_plays_at_its_target() {
        let samples: Vec<Sample> = (0..500)
            .map(|i| {
                Sample::new(
                    0,
                    i,
                    Nanos::from_millis(20 * i),
                    Nanos::from_millis(20 * i + 10),
                )
            })
            .collect();
        let stream = PlayoutStream::with_clock(
            0,
            &samples,
            crate::Media::default(),
            crate::ClockMapping::Hindsight,
        );
        let policy: crate::Policy = "jitter:a=1,k=1,apply=stretch:max_rate=5%".parse().unwrap();
        let run = policy.playout(&stream).unwrap();
        let r = PlayoutMetrics::measure(&stream, &run, QualityOptions::default()).report();
        let (delay, target) = (r.mean_delay_ms.unwrap(), r.mean_target_ms.unwrap());
        // Each slot plays at the first 10 ms tick at or after its target time.
        assert!(
            (0.0..10.0).contains(&(delay - target)),
            "delay {delay} target {target}"
        );
    }
}
