//! W3C webrtc-stats' receiver figures (`RTCInboundRtpStreamStats`,
//! <https://www.w3.org/TR/webrtc-stats/#dom-rtcinboundrtpstreamstats>), as NetEq's lifetime
//! statistics count them, from a discrete playout.
//!
//! A slot's *samples* are its media duration at the stream's clock rate (a 20 ms slot at 8 kHz
//! is 160 samples; rounded to the nearest sample). For video, and streams without an audio
//! clock, a slot counts as one frame instead ([`Unit::Frames`]), as the spec counts video's
//! emitted frames. A slot's receive (ingest) time is its first arrival; its emit time is its
//! event's `at`.
//!
//! Each field, with the spec's definition in jitterlab's terms:
//! - `jitter_buffer_delay`: "the sum of the time, in seconds, each audio sample or a video
//!   frame takes from the time the first packet is received by the jitter buffer (ingest
//!   timestamp) to the time it exits the jitter buffer (emit timestamp)": Σ over played slots
//!   of `(at − arrival) × samples`. All of a slot's samples share one emit time, as NetEq
//!   counts them (`StatisticsCalculator::JitterBufferDelay`: waiting time × samples), rather
//!   than the spec's per-sample exit times (which would add half a frame).
//! - `jitter_buffer_emitted_count`: "the total number of audio samples or video frames that
//!   have come out of the jitter buffer": the played slots' samples.
//! - `jitter_buffer_target_delay`: "increased by the target jitter buffer delay every time a
//!   sample is emitted": Σ over played slots of the run's target at that event × samples;
//!   `None` when the policy recorded no target.
//! - `jitter_buffer_minimum_delay`: "works the same way as jitterBufferTargetDelay, except that
//!   it is not affected by external mechanisms … purely based on the network characteristics
//!   such as jitter and packet loss, and can be seen as the minimum obtainable jitter buffer
//!   delay": jitterlab knows the whole stream, so the minimum it can name is the smallest
//!   fixed delay that plays every packet that arrived — the spread of transit over the stream,
//!   `max(arrival + offset − send) − min(…)` over slots that arrived, on the same scale as the
//!   targets (delay above the fastest packet's transit). The same for every policy on a
//!   stream: `target − minimum` is how much a policy's aim exceeded the need (negative: it aimed
//!   low and lost packets as late).
//! - `total_samples_received`: "the total number of samples that have been received …
//!   includes concealedSamples": as NetEq counts it, every sample played out — every slot's
//!   samples, played or concealed, plus those inserted by slowing down, less those removed by
//!   speeding up. `total_samples_duration` is the same in seconds (for frames: their media
//!   time, stretched).
//! - `concealed_samples`: samples "replaced with synthesized samples generated locally", from
//!   lost packets or packets "that arrive too late": the concealed slots' samples.
//! - `silent_concealed_samples`: concealed samples "that are silent … results in silence or
//!   comfort noise": concealed slots during the sender's silence (`Slot::silent`, comfort
//!   noise).
//! - `concealment_events`: "increases every time a concealed sample is synthesized after a
//!   non-concealed sample": runs of consecutive concealed slots (a run that opens the stream
//!   counts too: nothing played before it).
//! - `inserted_samples_for_deceleration`, `removed_samples_for_acceleration`: the run's
//!   `inserted` and `removed` media time, in samples.
//! - `interruption_count`, `total_interruption_duration`: not in the W3C spec (libwebrtc
//!   reports them, from webrtc-provisional-stats): a concealment run of 150 ms or more
//!   (`kInterruptionLenMs` in NetEq's `statistics_calculator.cc`) counted when playback
//!   resumes, and only after something was played before it, as `EndExpandEvent` does; a run
//!   still going when the stream ends is not counted.
//! - `packets_discarded`: "RTP packets discarded by the jitter buffer due to late or
//!   early-arrival": concealed slots whose packet arrived after its play time.
//!
//! Sums are in seconds as the spec has them; the `mean_…_ms` fields divide by
//! `jitter_buffer_emitted_count` (the spec's "average … delay"), in milliseconds.

use jitterlab_capture::Nanos;

use super::Step;

/// What webrtc-stats' counts count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Media samples at the stream's clock rate (audio).
    #[default]
    Samples,
    /// One per slot (video frames, or streams without an audio clock).
    Frames,
    /// Merged over streams counted in different units.
    Mixed,
}

/// webrtc-stats' receiver figures for one stream (or the sum over several): see the module
/// documentation for each field's definition.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct WebRtcStats {
    /// What the counts count.
    pub unit: Unit,
    /// The clock rate samples are counted at (`None` for frames, or streams of different
    /// rates merged).
    pub clock_rate: Option<u32>,
    /// Σ time in the buffer × samples emitted, seconds.
    pub jitter_buffer_delay: f64,
    /// Σ target delay × samples emitted, seconds; `None` when the policy records no target.
    pub jitter_buffer_target_delay: Option<f64>,
    /// Σ minimum obtainable delay × samples emitted, seconds.
    pub jitter_buffer_minimum_delay: f64,
    /// Samples (or frames) emitted from the buffer.
    pub jitter_buffer_emitted_count: u64,
    /// `jitter_buffer_delay / jitter_buffer_emitted_count`, ms.
    pub mean_jitter_buffer_delay_ms: f64,
    /// `jitter_buffer_target_delay / jitter_buffer_emitted_count`, ms.
    pub mean_jitter_buffer_target_delay_ms: Option<f64>,
    /// `jitter_buffer_minimum_delay / jitter_buffer_emitted_count`, ms.
    pub mean_jitter_buffer_minimum_delay_ms: f64,
    /// Samples played out, concealed ones included.
    pub total_samples_received: u64,
    /// `total_samples_received` in seconds.
    pub total_samples_duration: f64,
    /// Samples synthesised for lost or late packets.
    pub concealed_samples: u64,
    /// Of those, during the sender's silence.
    pub silent_concealed_samples: u64,
    /// Runs of concealment.
    pub concealment_events: u64,
    /// Samples inserted by slowing playout down.
    pub inserted_samples_for_deceleration: u64,
    /// Samples removed by speeding playout up.
    pub removed_samples_for_acceleration: u64,
    /// Concealment runs of 150 ms or more (libwebrtc).
    pub interruption_count: u64,
    /// Their total duration, seconds.
    pub total_interruption_duration: f64,
    /// Packets that arrived after their play time.
    pub packets_discarded: u64,
}

impl WebRtcStats {
    /// Adds another stream's figures: sums and counts add, means are re-weighted by the
    /// emitted counts, units and clock rates that differ become `Mixed` and `None`.
    pub fn merge(&mut self, o: &Self) {
        if self.jitter_buffer_emitted_count == 0 && self.total_samples_received == 0 {
            let unit = o.unit;
            let rate = o.clock_rate;
            let target = o.jitter_buffer_target_delay;
            *self = Self {
                unit,
                clock_rate: rate,
                jitter_buffer_target_delay: target,
                ..Self::default()
            };
        } else {
            if self.unit != o.unit {
                self.unit = Unit::Mixed;
            }
            if self.clock_rate != o.clock_rate {
                self.clock_rate = None;
            }
            self.jitter_buffer_target_delay = match (
                self.jitter_buffer_target_delay,
                o.jitter_buffer_target_delay,
            ) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        self.jitter_buffer_delay += o.jitter_buffer_delay;
        self.jitter_buffer_minimum_delay += o.jitter_buffer_minimum_delay;
        self.jitter_buffer_emitted_count += o.jitter_buffer_emitted_count;
        self.total_samples_received += o.total_samples_received;
        self.total_samples_duration += o.total_samples_duration;
        self.concealed_samples += o.concealed_samples;
        self.silent_concealed_samples += o.silent_concealed_samples;
        self.concealment_events += o.concealment_events;
        self.inserted_samples_for_deceleration += o.inserted_samples_for_deceleration;
        self.removed_samples_for_acceleration += o.removed_samples_for_acceleration;
        self.interruption_count += o.interruption_count;
        self.total_interruption_duration += o.total_interruption_duration;
        self.packets_discarded += o.packets_discarded;
        self.set_means();
    }

    fn set_means(&mut self) {
        let n = self.jitter_buffer_emitted_count;
        let mean = |sum: f64| if n == 0 { 0.0 } else { 1e3 * sum / n as f64 };
        self.mean_jitter_buffer_delay_ms = mean(self.jitter_buffer_delay);
        self.mean_jitter_buffer_target_delay_ms = self.jitter_buffer_target_delay.map(mean);
        self.mean_jitter_buffer_minimum_delay_ms = mean(self.jitter_buffer_minimum_delay);
    }
}

/// How a stream's slots turn into samples.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Counting {
    /// The audio clock rate, or `None` to count frames.
    pub(crate) rate: Option<u32>,
    /// The minimum obtainable delay (see the module documentation).
    pub(crate) minimum: Nanos,
}

impl Counting {
    /// Samples in `d` (rounded to the nearest), or 1 for frames.
    fn units(&self, d: Nanos) -> u64 {
        match self.rate {
            Some(rate) => {
                let ns = d.as_nanos().max(0);
                match ns.checked_mul(i64::from(rate)) {
                    Some(n) => ((n + 500_000_000) / 1_000_000_000) as u64,
                    None => (ns as f64 * f64::from(rate) / 1e9).round() as u64,
                }
            }
            None => 1,
        }
    }
}

/// What [`measure`] counts in one pass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Acc {
    counting: Counting,
    last_duration: Nanos,
    last_units: u64,
    delay_ns_samples: i128,
    target_ns_samples: i128,
    targets_known: bool,
    emitted: u64,
    slots_total: u64,
    slots_ns: i128,
    concealed: u64,
    silent_concealed: u64,
    events: u64,
    interruptions: u64,
    interruption_ns: i128,
    discarded: u64,
    in_run: bool,
    run_ns: i128,
    played_before: bool,
}

/// NetEq's `kInterruptionLenMs`.
const INTERRUPTION: Nanos = Nanos::from_millis(150);

impl Acc {
    pub(crate) fn new(counting: Counting) -> Self {
        Self {
            counting,
            last_duration: Nanos::ZERO,
            last_units: counting.units(Nanos::ZERO),
            delay_ns_samples: 0,
            target_ns_samples: 0,
            targets_known: true,
            emitted: 0,
            slots_total: 0,
            slots_ns: 0,
            concealed: 0,
            silent_concealed: 0,
            events: 0,
            interruptions: 0,
            interruption_ns: 0,
            discarded: 0,
            in_run: false,
            run_ns: 0,
            played_before: false,
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, s: &Step<'_>) {
        // Slots mostly share one duration: convert it once.
        let n = if s.slot.duration == self.last_duration {
            self.last_units
        } else {
            self.last_duration = s.slot.duration;
            self.last_units = self.counting.units(s.slot.duration);
            self.last_units
        };
        self.slots_total += n;
        self.slots_ns += i128::from(s.slot.duration.as_nanos().max(0));
        if s.played {
            self.emitted += n;
            let wait = s.slot.arrival.map_or(0, |a| (s.at - a).as_nanos().max(0));
            self.delay_ns_samples += i128::from(wait) * i128::from(n);
            match s.target {
                Some(t) => self.target_ns_samples += i128::from(t.as_nanos()) * i128::from(n),
                None => self.targets_known = false,
            }
            if self.in_run
                && self.played_before
                && self.run_ns >= i128::from(INTERRUPTION.as_nanos())
            {
                self.interruptions += 1;
                self.interruption_ns += self.run_ns;
            }
            self.in_run = false;
            self.played_before = true;
        } else {
            self.concealed += n;
            if s.slot.silent {
                self.silent_concealed += n;
            }
            if s.late {
                self.discarded += 1;
            }
            if !self.in_run {
                self.events += 1;
                self.in_run = true;
                self.run_ns = 0;
            }
            self.run_ns += i128::from(s.slot.duration.as_nanos().max(0));
        }
    }

    pub(crate) fn finish(&self, inserted_ns: Nanos, removed_ns: Nanos) -> WebRtcStats {
        let c = self.counting;
        // Frames are not stretched one by one: only sample counts take the stretched time.
        let inserted = c.rate.map_or(0, |_| c.units(inserted_ns));
        let removed = c.rate.map_or(0, |_| c.units(removed_ns));
        let total = (self.slots_total + inserted).saturating_sub(removed);
        let secs = |ns_samples: i128| ns_samples as f64 / 1e9;
        let mut w = WebRtcStats {
            unit: if c.rate.is_some() {
                Unit::Samples
            } else {
                Unit::Frames
            },
            clock_rate: c.rate,
            jitter_buffer_delay: secs(self.delay_ns_samples),
            jitter_buffer_target_delay: self.targets_known.then(|| secs(self.target_ns_samples)),
            jitter_buffer_minimum_delay: secs(
                i128::from(c.minimum.as_nanos()) * i128::from(self.emitted),
            ),
            jitter_buffer_emitted_count: self.emitted,
            total_samples_received: total,
            total_samples_duration: match c.rate {
                Some(rate) => total as f64 / f64::from(rate),
                None => {
                    (self.slots_ns + i128::from(inserted_ns.as_nanos())
                        - i128::from(removed_ns.as_nanos()))
                    .max(0) as f64
                        / 1e9
                }
            },
            concealed_samples: self.concealed,
            silent_concealed_samples: self.silent_concealed,
            concealment_events: self.events,
            inserted_samples_for_deceleration: inserted,
            removed_samples_for_acceleration: removed,
            interruption_count: self.interruptions,
            total_interruption_duration: self.interruption_ns as f64 / 1e9,
            packets_discarded: self.discarded,
            ..WebRtcStats::default()
        };
        w.set_means();
        w
    }
}

/// webrtc-stats for one stream's playout: see the module documentation.
pub fn measure(
    stream: &crate::playout::PlayoutStream<'_>,
    run: &crate::playout::PlayoutRun,
) -> WebRtcStats {
    let meter = super::Meter::new(stream, None, Nanos::ZERO);
    let mut acc = Acc::new(meter.counting);
    meter.walk(run, |s| acc.push(s));
    acc.finish(run.inserted, run.removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playout::PlayoutStream;
    use crate::quality::tests::{fixed, pcma, twenty};

    /// Every figure by hand. Twenty 20 ms slots at 8 kHz (160 samples each), transit 10 ms,
    /// played 50 ms after sending. Slot 3 arrives 80 ms after it was sent (late: discarded),
    /// 8–15 are lost (160 ms), 17 is comfort noise and 18 is lost after it (silent).
    /// Played: 0–2, 4–7, 16, 17, 19 = 10 slots = 1600 samples, each having waited 40 ms.
    #[test]
    fn lifetime_statistics_by_hand() {
        let s = twenty();
        let stream = PlayoutStream::new(0, &s, pcma(), Nanos::ZERO);
        let mut run = fixed(&stream, 50);
        run.inserted = Nanos::from_millis(25);
        run.removed = Nanos::from_millis(5);
        let w = measure(&stream, &run);
        assert_eq!(w.unit, Unit::Samples);
        assert_eq!(w.jitter_buffer_emitted_count, 1600);
        assert!((w.jitter_buffer_delay - 1600.0 * 0.040).abs() < 1e-9);
        assert!((w.mean_jitter_buffer_delay_ms - 40.0).abs() < 1e-9);
        // Target: the fixed 50 ms.
        assert!((w.jitter_buffer_target_delay.unwrap() - 1600.0 * 0.050).abs() < 1e-9);
        assert_eq!(w.mean_jitter_buffer_target_delay_ms, Some(50.0));
        // Minimum: transit spreads from 10 to 80 ms: 70 ms would have played everything.
        assert!((w.mean_jitter_buffer_minimum_delay_ms - 70.0).abs() < 1e-9);
        assert!((w.jitter_buffer_minimum_delay - 1600.0 * 0.070).abs() < 1e-9);
        // 20 slots + 25 ms inserted (200 samples) − 5 ms removed (40).
        assert_eq!(w.total_samples_received, 3200 + 200 - 40);
        assert!((w.total_samples_duration - 0.42).abs() < 1e-12);
        assert_eq!(w.inserted_samples_for_deceleration, 200);
        assert_eq!(w.removed_samples_for_acceleration, 40);
        // Concealed: 3, 8–15, 18 = 10 slots; 18 during silence.
        assert_eq!(w.concealed_samples, 1600);
        assert_eq!(w.silent_concealed_samples, 160);
        assert_eq!(w.concealment_events, 3);
        // Only the 160 ms run is an interruption.
        assert_eq!(w.interruption_count, 1);
        assert!((w.total_interruption_duration - 0.160).abs() < 1e-12);
        assert_eq!(w.packets_discarded, 1);
    }

    /// libwebrtc's interruption rule: 150 ms or more, after audio has played, ended by
    /// playback resuming. 7 slots (140 ms) is not one; a run at the start or the end is not.
    #[test]
    fn interruptions_follow_libwebrtc() {
        use crate::quality::tests::samples;
        let lost = |r: std::ops::RangeInclusive<i64>| {
            move |i: i64| if r.contains(&i) { None } else { Some(10) }
        };
        let count = |s: Vec<jitterlab_capture::Sample>, delay: i64| {
            let stream = PlayoutStream::new(0, &s, pcma(), Nanos::ZERO);
            measure(&stream, &fixed(&stream, delay)).interruption_count
        };
        assert_eq!(count(samples(30, lost(10..=16), |_| false), 50), 0);
        assert_eq!(count(samples(30, lost(10..=17), |_| false), 50), 1);
        // The stream's last slot must arrive for the slots before it to exist: a run that
        // ends the stream is made by playing too early (every slot late from 20 on).
        let late_tail = samples(30, |i| Some(if i >= 20 { 100 } else { 10 }), |_| false);
        assert_eq!(count(late_tail, 50), 0);
        // Concealed from the start (played too early) then resuming: nothing played before.
        let late_head = samples(30, |i| Some(if i < 10 { 100 } else { 10 }), |_| false);
        assert_eq!(count(late_head, 50), 0);
    }

    /// A stream without an audio clock (video, game input) counts frames: one per slot.
    #[test]
    fn streams_without_an_audio_clock_count_frames() {
        let s = twenty();
        let stream = PlayoutStream::new(0, &s, crate::playout::Media::default(), Nanos::ZERO);
        let w = measure(&stream, &fixed(&stream, 50));
        assert_eq!(w.unit, Unit::Frames);
        assert_eq!(w.clock_rate, None);
        assert_eq!(w.jitter_buffer_emitted_count, 10);
        assert_eq!(w.concealed_samples, 10);
        assert!((w.total_samples_duration - 0.4).abs() < 1e-12);
    }
}
