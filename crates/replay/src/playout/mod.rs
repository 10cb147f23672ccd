//! Playout mode for discrete frames (audio, server input): each frame is played at its send
//! time plus the buffer delay, not at its arrival time (C21); a frame missing at its play time
//! is concealed, and one arriving after it is dropped as late (C22).

use std::collections::HashMap;

pub mod asterisk;
mod metrics;
pub mod player;
mod stream;

pub use metrics::{PlayoutMetrics, PlayoutReport, QualityOptions};
pub use stream::{Media, PlayoutStream, Prepared, Slot};

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

/// What happened to one frame slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlayoutEvent {
    /// Frame `seq` was played at local time `at`.
    Played {
        /// The frame's sequence number.
        seq: i64,
        /// Local play time.
        at: Nanos,
    },
    /// Frame `seq` was missing at `at` and concealed (an underrun, C22).
    Concealed {
        /// The frame's sequence number.
        seq: i64,
        /// Local play time of the slot.
        at: Nanos,
        /// Whether it arrived later (and was dropped as late) rather than never.
        arrived_late: bool,
    },
}

/// Plays one stream of frames with a fixed delay.
///
/// Slot `n`'s local play time is `send(n) − offset + delay` (C21), where `offset` maps local to
/// sender time (`sender = local + offset`). Missing frames' send times are interpolated from
/// their neighbours by sequence number. Duplicates play once.
pub fn playout_fixed(samples: &[Sample], delay: Nanos, offset: Nanos) -> Vec<PlayoutEvent> {
    let arrivals = first_arrivals(samples);
    frame_slots(samples)
        .into_iter()
        .map(|(seq, send)| due(seq, send - offset + delay, arrivals.get(&seq).copied()))
        .collect()
}

/// [`playout_fixed`] over a prepared stream's slots: the fast path a sweep takes for every
/// fixed delay (no map is built; one pass over the slots).
pub fn playout_slots(slots: &[Slot], delay: Nanos, offset: Nanos) -> Vec<PlayoutEvent> {
    slots
        .iter()
        .map(|s| due(s.seq, s.send - offset + delay, s.arrival))
        .collect()
}

/// Each sequence number's earliest arrival.
pub fn first_arrivals(samples: &[Sample]) -> HashMap<i64, Nanos> {
    let mut m: HashMap<i64, Nanos> = HashMap::new();
    for s in samples {
        m.entry(s.seq)
            .and_modify(|a| *a = (*a).min(s.arrival))
            .or_insert(s.arrival);
    }
    m
}

/// What happens to frame `seq` due at local time `at`: played if it arrived by then,
/// concealed otherwise (late if it arrived after, C22).
fn due(seq: i64, at: Nanos, arrival: Option<Nanos>) -> PlayoutEvent {
    match arrival {
        Some(a) if a <= at => PlayoutEvent::Played { seq, at },
        Some(_) => PlayoutEvent::Concealed {
            seq,
            at,
            arrived_late: true,
        },
        None => PlayoutEvent::Concealed {
            seq,
            at,
            arrived_late: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: i64, send_ms: i64, arrival_ms: i64) -> Sample {
        Sample::new(
            0,
            seq,
            Nanos::from_millis(send_ms),
            Nanos::from_millis(arrival_ms),
        )
    }

    /// C21: sent every 20 ms, received intervals 35, −5, 40, 5 ms (out of order), delay 60 ms
    /// → played at 60, 80, 100, 120, 140 ms: an even 20 ms again.
    #[test]
    fn c21_playout_at_send_time_plus_delay() {
        let arrivals = [0, 35, 30, 70, 75];
        let samples: Vec<Sample> = (0..5)
            .map(|i| frame(i, i * 20, arrivals[i as usize]))
            .collect();
        let mut by_arrival = samples.clone();
        by_arrival.sort_by_key(|s| s.arrival);
        let events = playout_fixed(&by_arrival, Nanos::from_millis(60), Nanos::ZERO);
        let played: Vec<(i64, f64)> = events
            .iter()
            .map(|e| match e {
                PlayoutEvent::Played { seq, at } => (*seq, at.as_millis_f64()),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            played,
            vec![(0, 60.0), (1, 80.0), (2, 100.0), (3, 120.0), (4, 140.0)]
        );
    }

    /// C22: a frame missing at its play time is concealed; one arriving after it is late.
    #[test]
    fn c22_missing_frames_are_concealed_and_late_ones_dropped() {
        let samples = vec![frame(0, 0, 10), frame(1, 20, 95), frame(3, 60, 70)];
        let events = playout_fixed(&samples, Nanos::from_millis(60), Nanos::ZERO);
        assert_eq!(
            events,
            vec![
                PlayoutEvent::Played {
                    seq: 0,
                    at: Nanos::from_millis(60)
                },
                PlayoutEvent::Concealed {
                    seq: 1,
                    at: Nanos::from_millis(80),
                    arrived_late: true
                },
                PlayoutEvent::Concealed {
                    seq: 2,
                    at: Nanos::from_millis(100),
                    arrived_late: false
                },
                PlayoutEvent::Played {
                    seq: 3,
                    at: Nanos::from_millis(120)
                },
            ]
        );
    }
}

/// What one discrete playout gave: every slot's event, the policy's target delay, the
/// media time it stretched or compressed, and what the policy's own decision logic counted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlayoutRun {
    /// Each frame slot's event, in play order.
    pub events: Vec<PlayoutEvent>,
    /// The policy's own counters (NetEq's operations).
    pub detail: Option<PlayoutDetail>,
    /// The target delay the policy aimed at when each event happened.
    pub targets: Targets,
    /// Media time played beyond the stream's own by slowing down (deceleration, preemptive
    /// expansion): webrtc-stats' insertedSamplesForDeceleration, as time.
    pub inserted: Nanos,
    /// Media time skipped by speeding up (acceleration): removedSamplesForAcceleration.
    pub removed: Nanos,
}

impl PlayoutRun {
    /// A run with no counters of the policy's own and no target recorded.
    pub fn new(events: Vec<PlayoutEvent>) -> Self {
        Self {
            events,
            ..Self::default()
        }
    }

    /// A run at one target delay throughout.
    pub fn fixed(events: Vec<PlayoutEvent>, delay: Nanos) -> Self {
        Self {
            events,
            targets: Targets::Constant(delay),
            ..Self::default()
        }
    }

    /// The target delay at event `i`, if the policy recorded one.
    pub fn target(&self, i: usize) -> Option<Nanos> {
        match &self.targets {
            Targets::Unknown => None,
            Targets::Constant(d) => Some(*d),
            Targets::PerEvent(v) => v.get(i).copied(),
        }
    }
}

/// The target delay a policy aimed at, over a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Targets {
    /// Not recorded.
    #[default]
    Unknown,
    /// One delay throughout (a fixed buffer).
    Constant(Nanos),
    /// One per event, in the events' order.
    PerEvent(Vec<Nanos>),
}

/// Counters a policy's own playout logic keeps, reported beside the playout summary.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum PlayoutDetail {
    /// NetEq's operations and rates.
    NetEq(crate::decision::NetEqStats),
    /// The Speex jitter buffer's decisions.
    Speex(crate::policy::SpeexStats),
    /// PJSIP's `pjmedia_jb_state` and its get results.
    Pjsip(crate::policy::PjsipStats),
    /// baresip's `jbuf_stat` and its audio buffer's counters.
    Baresip(crate::policy::BaresipStats),
    /// Asterisk's adaptive buffer's counters (`asterisk`).
    Asterisk(crate::policy::AsteriskStats),
    /// Asterisk's fixed buffer's counters (`asterisk-fixed`).
    AsteriskFixed(crate::policy::AsteriskFixedStats),
    /// Wireshark's RTP player's markers and counts (`wireshark`).
    Wireshark(crate::policy::WiresharkStats),
    /// libwebrtc's video timing: its delays and the frames it dropped.
    WebRtcVideo(crate::video::WebRtcVideoStats),
    /// GStreamer `rtpjitterbuffer`'s `stats` and what else its model counted.
    GStreamer(crate::gstreamer::Stats),
}

impl PlayoutDetail {
    /// The key the detail goes under in JSON output (`"neteq"`, `"webrtc_video"`).
    pub fn key(&self) -> &'static str {
        match self {
            Self::NetEq(_) => "neteq",
            Self::Speex(_) => "speex",
            Self::Pjsip(_) => "pjsip",
            Self::Baresip(_) => "baresip",
            Self::Asterisk(_) => "asterisk",
            Self::AsteriskFixed(_) => "asterisk-fixed",
            Self::Wireshark(_) => "wireshark",
            Self::WebRtcVideo(_) => "webrtc_video",
            Self::GStreamer(_) => "gstreamer",
        }
    }

    /// One line for a person.
    pub fn describe(&self) -> String {
        match self {
            Self::NetEq(n) => format!(
                "neteq expand {:.2} %, accelerate {:.2} %, preemptive expand {:.2} % of output; \
                 {} merges, {} buffer flushes, {} discarded; mean target {:.1} ms, mean wait {:.1} ms",
                100.0 * n.expand_rate,
                100.0 * n.accelerate_rate,
                100.0 * n.preemptive_rate,
                n.merge,
                n.buffer_flushes,
                n.discarded,
                n.mean_target_ms,
                n.mean_waiting_ms
            ),
            Self::Speex(s) => format!(
                "speex {} gets: {} ok, {} missing, {} insertions ({} forced), {} shrinks \
                 ({:.0} ms skipped); {} late, {} too late, {} resets; mean optimum {:.1} ms",
                s.gets,
                s.ok,
                s.missing,
                s.insertion,
                s.forced_insertion,
                s.shrink,
                s.skipped_ms,
                s.late,
                s.too_late,
                s.resets,
                s.mean_opt_ms
            ),
            Self::Pjsip(p) => format!(
                "pjsip burst {} (mean {}), prefetch {}; {} lost, {} discarded (+{} progressive), \
                 {} empty; delay {}/{}/{} ms (min/mean/max)",
                p.burst,
                p.avg_burst,
                p.prefetch,
                p.lost,
                p.discard,
                p.progressive_discard,
                p.empty,
                p.min_delay,
                p.avg_delay,
                p.max_delay
            ),
            Self::Baresip(b) => format!(
                "baresip {} put, {} late (kept), {} too late, {} lost, {} overflow, {} dups; \
                 delay {} ms, jitter {} ms; audio buffer {} underruns, {} overruns",
                b.n_put,
                b.n_late,
                b.n_late_lost,
                b.n_lost,
                b.n_overflow,
                b.n_dups,
                b.c_delay,
                b.c_jitter,
                b.aubuf_underrun,
                b.aubuf_overrun
            ),
            Self::Asterisk(a) => a.describe(),
            Self::AsteriskFixed(a) => a.describe(),
            Self::Wireshark(w) => w.describe(),
            Self::WebRtcVideo(w) => format!(
                "webrtc-video {} frames decoded ({} rendered late), dropped {} too late, {} after a newer frame, {} buffer full; \
                 mean target {:.1} ms, current delay {:.1} ms, jitter {:.1} ms{}{}",
                w.frames_decoded,
                w.rendered_late,
                w.dropped_too_late,
                w.dropped_after_newer,
                w.dropped_buffer_full,
                w.mean_target_ms,
                w.mean_current_delay_ms,
                w.mean_jitter_ms,
                if w.low_latency {
                    "; low-latency rendering"
                } else {
                    ""
                },
                if w.timing_resets > 0 {
                    format!("; {} timing resets", w.timing_resets)
                } else {
                    String::new()
                }
            ),
            Self::GStreamer(g) => format!(
                "rtpjitterbuffer pushed {}, lost {}, late {}, duplicates {}; {} pushed after \
                 PTS + latency; {} dropped on latency, {} resets; avg jitter {:.3} ms",
                g.num_pushed,
                g.num_lost,
                g.num_late,
                g.num_duplicates,
                g.late_for_sink,
                g.dropped_on_latency,
                g.resets,
                g.avg_jitter_ms
            ),
        }
    }
}

/// Plays one stream of frames with an adaptive policy (its controller and how it applies
/// changes), on a 10 ms-style tick: see [`playout_controlled`].
///
/// # Panics
/// `policy` has no adaptive delay model.
pub fn playout_adaptive(
    samples: &[Sample],
    policy: &crate::Policy,
    offset: Nanos,
    tick: Nanos,
) -> PlayoutRun {
    match policy.delay_model() {
        crate::policy::DelayModel::Adaptive { controller, apply } => {
            playout_controlled(samples, controller, apply, offset, tick)
        }
        _ => panic!("playout_adaptive: {policy} has no adaptive delay"),
    }
}

/// Plays one stream of frames with an adaptive delay, on a 10 ms-style tick.
///
/// A playout position on the sender's clock advances by one `tick` per tick of local time,
/// corrected toward the controller's target delay: under `stretch:max_rate=r` by at most `r·tick`
/// per tick (play-out compressed or stretched, the timeline continuous, C18), under `jump` at
/// once forward and never backward (the position waits while the delay grows). Every frame
/// whose send time the position passes is due at that tick: played if it has arrived,
/// concealed otherwise (late if it arrives after, C22). Playback starts once the first frame has
/// waited the initial target delay.
pub fn playout_controlled(
    samples: &[Sample],
    mut controller: Box<dyn crate::engine::Controller>,
    apply: crate::policy::Apply,
    offset: Nanos,
    tick: Nanos,
) -> PlayoutRun {
    use crate::policy::Apply;
    let slots = frame_slots(samples);
    let Some(&(_, first_send)) = slots.first() else {
        return PlayoutRun::default();
    };
    let mut by_arrival: Vec<&Sample> = samples.iter().collect();
    by_arrival.sort_by_key(|s| s.arrival);
    let arrival_of = first_arrivals(samples);
    let mut fed = 0usize;
    let mut feed = |until: Nanos, controller: &mut Box<dyn crate::engine::Controller>| {
        while fed < by_arrival.len() && by_arrival[fed].arrival <= until {
            controller.on_arrival(by_arrival[fed]);
            fed += 1;
        }
    };
    // Wait for the first frame and the initial target.
    let first_arrival = by_arrival.first().map_or(Nanos::ZERO, |s| s.arrival);
    feed(first_arrival, &mut controller);
    let mut t = first_arrival;
    while t + offset - first_send < controller.target(t) {
        t += tick;
        feed(t, &mut controller);
    }
    // The position is the media time played up to: a slot plays at the tick that carries the
    // position past its send time, so the first one plays at the tick its wait reaches the
    // target when the position starts a tick before it.
    let mut position = first_send - tick - Nanos(1);
    let mut events = Vec::with_capacity(slots.len());
    let mut targets = Vec::with_capacity(slots.len());
    let (mut inserted, mut removed) = (Nanos::ZERO, Nanos::ZERO);
    let mut next = 0usize;
    while next < slots.len() {
        feed(t, &mut controller);
        let target = controller.target(t);
        // How far the delay would stand above the target after a plain step of one tick: the
        // slots this tick plays are the ones the step carries the position past, so it is
        // their delay that must meet the target.
        let excess = t + offset - position - tick - target;
        let step = match apply {
            // Forward at once by any excess; a shortfall stops the position (never backwards).
            Apply::Jump => tick + excess.max(-tick),
            Apply::Stretch { max_rate } => {
                let room = Nanos::from_secs_f64(tick.as_secs_f64() * max_rate);
                tick + excess.max(-room).min(room)
            }
        };
        let step = step.max(Nanos::ZERO);
        // Media time beyond real time was skipped (accelerated); short of it, stretched.
        if step > tick {
            removed += step - tick;
        } else {
            inserted += tick - step;
        }
        position += step;
        while next < slots.len() && slots[next].1 <= position {
            let (seq, _) = slots[next];
            events.push(due(seq, t, arrival_of.get(&seq).copied()));
            targets.push(target);
            next += 1;
        }
        t += tick;
    }
    PlayoutRun {
        events,
        detail: None,
        targets: Targets::PerEvent(targets),
        inserted,
        removed,
    }
}

/// Every frame slot from the lowest to the highest sequence number received, with its send
/// time (interpolated by sequence number for frames that never arrived).
pub fn frame_slots<'a>(samples: impl IntoIterator<Item = &'a Sample>) -> Vec<(i64, Nanos)> {
    let mut known: Vec<(i64, Nanos)> = samples.into_iter().map(|s| (s.seq, s.send)).collect();
    known.sort_unstable();
    known.dedup_by_key(|k| k.0);
    let (Some(&(lo, _)), Some(&(hi, _))) = (known.first(), known.last()) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity((hi - lo + 1) as usize);
    let mut k = 0;
    for seq in lo..=hi {
        while k + 1 < known.len() && known[k + 1].0 <= seq {
            k += 1;
        }
        let send = if known[k].0 == seq {
            known[k].1
        } else {
            let ((sa, ta), (sb, tb)) = (known[k], known[k + 1]);
            ta + Nanos((tb - ta).as_nanos() * (seq - sa) / (sb - sa))
        };
        out.push((seq, send));
    }
    out
}

/// What a listener heard: counts over a playout run (C22, C23).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlayoutSummary {
    /// Frame slots played out (from the first to the last sequence number received).
    pub frames: u64,
    /// Slots played from a frame that arrived in time.
    pub played: u64,
    /// Slots concealed (repeated or interpolated): the frame was missing at its play time.
    pub concealed: u64,
    /// Of those, frames that never arrived.
    pub lost: u64,
    /// Of those, frames that arrived after their play time and were dropped.
    pub late: u64,
    /// `concealed / frames`.
    pub concealment_ratio: f64,
    /// `late / frames`.
    pub late_ratio: f64,
    /// The longest run of consecutive concealed slots: a "buffering…" stall (C23).
    pub max_consecutive_concealed: u64,
}

impl PlayoutSummary {
    /// Adds another stream's summary.
    pub fn merge(&mut self, o: &Self) {
        self.frames += o.frames;
        self.played += o.played;
        self.concealed += o.concealed;
        self.lost += o.lost;
        self.late += o.late;
        self.max_consecutive_concealed = self
            .max_consecutive_concealed
            .max(o.max_consecutive_concealed);
        if self.frames > 0 {
            self.concealment_ratio = self.concealed as f64 / self.frames as f64;
            self.late_ratio = self.late as f64 / self.frames as f64;
        }
    }
}

/// Folds playout events into a summary.
pub fn summarize(events: &[PlayoutEvent]) -> PlayoutSummary {
    let mut s = PlayoutSummary::default();
    let mut run = 0u64;
    for e in events {
        s.frames += 1;
        match e {
            PlayoutEvent::Played { .. } => {
                s.played += 1;
                run = 0;
            }
            PlayoutEvent::Concealed { arrived_late, .. } => {
                s.concealed += 1;
                if *arrived_late {
                    s.late += 1;
                } else {
                    s.lost += 1;
                }
                run += 1;
                s.max_consecutive_concealed = s.max_consecutive_concealed.max(run);
            }
        }
    }
    if s.frames > 0 {
        s.concealment_ratio = s.concealed as f64 / s.frames as f64;
        s.late_ratio = s.late as f64 / s.frames as f64;
    }
    s
}

#[cfg(test)]
mod input_buffer_tests {
    use super::*;

    fn input(tick: i64, arrival_ms: f64) -> Sample {
        // 60 Hz ticks: tick n is sent at n·16.667 ms.
        Sample::new(
            0,
            tick,
            Nanos((tick as f64 * 1e9 / 60.0) as i64),
            Nanos::from_millis_f64(arrival_ms),
        )
    }

    /// C24: a server holding 2 ticks of a player's input executes each at send + 2 ticks; an
    /// input that misses its tick is predicted (concealed, counted), a late one is dropped; a
    /// deeper buffer conceals less.
    #[test]
    fn c24_server_input_buffer_depth_trades_delay_for_misses() {
        // Transit 5 ms, except tick 3 (+30 ms: late at 2 ticks, in time at 3) and tick 6 (lost).
        let samples: Vec<Sample> = (0..10)
            .filter(|&t| t != 6)
            .map(|t| {
                input(
                    t,
                    t as f64 * 1000.0 / 60.0 + if t == 3 { 35.0 } else { 5.0 },
                )
            })
            .collect();
        let tick = Nanos((1e9 / 60.0) as i64);
        let two = summarize(&playout_fixed(&samples, tick * 2, Nanos::ZERO));
        assert_eq!((two.frames, two.played, two.late, two.lost), (10, 8, 1, 1));
        let three = summarize(&playout_fixed(&samples, tick * 3, Nanos::ZERO));
        assert_eq!((three.played, three.late, three.lost), (9, 0, 1));
        assert!(three.concealment_ratio < two.concealment_ratio);
    }

    /// C23: consecutive misses are one stall; the summary keeps the longest.
    #[test]
    fn c23_a_stall_is_the_longest_run_of_concealment() {
        let samples: Vec<Sample> = [0, 1, 5, 6]
            .iter()
            .map(|&t| input(t, t as f64 * 16.0))
            .collect();
        let s = summarize(&playout_fixed(
            &samples,
            Nanos::from_millis(40),
            Nanos::ZERO,
        ));
        assert_eq!((s.lost, s.max_consecutive_concealed), (3, 3));
    }
}

#[cfg(test)]
mod adaptive_tests {
    use super::tests_rng::Lcg;
    use super::*;

    /// 50 Hz frames with exponential-ish jitter: a fixed 20 ms buffer loses many frames as
    /// late; the RFC 3550 policy, stretching play-out, adapts and loses far fewer; every slot is
    /// accounted once, in order.
    #[test]
    fn c22_adaptive_playout_stretches_to_fewer_late_frames() {
        let mut rng = Lcg(7);
        let samples: Vec<Sample> = (0..3000)
            .map(|i| {
                let send = Nanos::from_millis(i * 20);
                let jitter = Nanos::from_micros((rng.next() % 40_000) as i64);
                Sample::new(0, i, send, send + Nanos::from_millis(10) + jitter)
            })
            .collect();
        let fixed = summarize(&playout_fixed(
            &samples,
            Nanos::from_millis(20),
            Nanos::ZERO,
        ));
        let policy: crate::Policy = "jitter:a=1,k=4,apply=stretch:max_rate=5%".parse().unwrap();
        let run = playout_adaptive(&samples, &policy, Nanos::ZERO, Nanos::from_millis(10));
        let adaptive = summarize(&run.events);
        assert_eq!(
            run.events.len(),
            run.target(run.events.len() - 1).map_or(0, |_| 3000)
        );
        let events = run.events;
        assert_eq!(adaptive.frames, 3000);
        let seqs: Vec<i64> = events
            .iter()
            .map(|e| match e {
                PlayoutEvent::Played { seq, .. } | PlayoutEvent::Concealed { seq, .. } => *seq,
            })
            .collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1));
        assert!(fixed.late_ratio > 0.2, "fixed {fixed:?}");
        assert!(
            adaptive.late_ratio < fixed.late_ratio / 4.0,
            "adaptive {adaptive:?} fixed {fixed:?}"
        );
    }
}

#[cfg(test)]
mod tests_rng {
    /// A tiny deterministic generator for tests (no dependency on the capture crate's).
    pub(super) struct Lcg(pub(super) u64);

    impl Lcg {
        pub(super) fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            self.0 >> 33
        }
    }
}
