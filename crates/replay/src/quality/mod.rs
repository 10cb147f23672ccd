//! The quality figures media engineers read, from a discrete playout: pure functions over a
//! [`PlayoutStream`] and a [`PlayoutRun`].
//!
//! - [`webrtc`]: W3C webrtc-stats' receiver figures as NetEq counts them (jitter buffer delay,
//!   target and minimum delay, emitted, received, concealed and silent samples, concealment
//!   events, stretched samples, interruptions);
//! - [`emodel`]: the ITU-T G.107 E-model's R factor and MOS, with codec values from ITU-T
//!   G.113 ([`codec`]), and baresip's simplified pseudo-MOS;
//! - [`voipmonitor`]: VoIPmonitor's per-call MOS after its jitter-buffer simulations;
//! - [`rfc3611`]: RFC 3611's burst and gap density and duration.
//!
//! [`measure`] gives all four ([`Quality`]) in one pass over the run's events; [`Meter`]
//! prepares what depends only on the stream (its frame duration, transit spread, codec and
//! VoIPmonitor's interval boundaries) once, so that a sweep pays one pass per configuration
//! and no allocation. Streams add up with [`Quality::merge`]: sums add, means are re-weighted,
//! and MOS figures keep the worst stream's.
//!
//! Every definition, its source, and the sources of the tests: `docs/media/quality.md`.
//!
//! # Example
//! ```
//! use jitterlab_capture::{Nanos, Sample};
//! use jitterlab_capture::decode::MediaKind;
//! use jitterlab_replay::playout::{playout_slots, Media, PlayoutRun, PlayoutStream};
//! use jitterlab_replay::quality;
//!
//! // 50 PCMA packets of 20 ms, each arriving 5 ms after it was sent; packet 10 lost.
//! let samples: Vec<Sample> = (0..50)
//!     .filter(|&i| i != 10)
//!     .map(|i| Sample {
//!         payload_type: Some(8),
//!         rtp_clock: 8000,
//!         ..Sample::new(0, i, Nanos::from_millis(i * 20), Nanos::from_millis(i * 20 + 5))
//!     })
//!     .collect();
//! let media = Media {
//!     kind: Some(MediaKind::Audio),
//!     clock_rate: Some(8000),
//!     encoding: Some("PCMA".into()),
//!     payload_type: Some(8),
//! };
//! let stream = PlayoutStream::new(0, &samples, media, Nanos::from_millis(-5));
//! let delay = Nanos::from_millis(40);
//! let run = PlayoutRun::fixed(playout_slots(stream.slots(), delay, stream.offset), delay);
//! let q = quality::measure(&stream, &run, None, Nanos::ZERO);
//! assert_eq!(q.webrtc.concealed_samples, 160);
//! assert_eq!(q.webrtc.mean_jitter_buffer_delay_ms, 40.0);
//! assert_eq!(q.emodel.codec, "g711");
//! assert!(q.emodel.mos > 4.0 && q.emodel.mos < 4.41);
//! # Ok::<(), jitterlab_replay::Error>(())
//! ```

pub mod codec;
pub mod emodel;
pub mod rfc3611;
pub mod voipmonitor;
pub mod webrtc;

#[cfg(test)]
mod tests;

pub use codec::Codec;
pub use emodel::EModel;
pub use rfc3611::BurstGap;
pub use voipmonitor::VoipMonitor;
pub use webrtc::WebRtcStats;

use jitterlab_capture::Nanos;

use crate::playout::{PlayoutEvent, PlayoutRun, PlayoutStream, Slot};

/// One playout event with its slot, as every figure reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step<'a> {
    /// The slot that played or was concealed.
    pub(crate) slot: &'a Slot,
    /// Its local play time.
    pub(crate) at: Nanos,
    /// Played from a packet that arrived in time.
    pub(crate) played: bool,
    /// Concealed although its packet arrived (after its play time).
    pub(crate) late: bool,
    /// The policy's target delay at the event.
    pub(crate) target: Option<Nanos>,
}

/// All the quality figures for one stream's playout (or the merge over streams).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Quality {
    /// W3C webrtc-stats / NetEq lifetime statistics.
    pub webrtc: WebRtcStats,
    /// ITU-T G.107 E-model.
    pub emodel: EModel,
    /// VoIPmonitor's MOS.
    pub voipmonitor: VoipMonitor,
    /// RFC 3611 burst and gap metrics.
    pub burst_gap: BurstGap,
    /// Events whose sequence number is not a slot of the stream (a policy's bug), left out.
    pub skipped_events: u64,
}

impl Quality {
    /// Adds another stream's figures: webrtc-stats and RFC 3611 counts add (their means and
    /// densities re-weighted), the E-model and VoIPmonitor figures keep the worse stream's.
    pub fn merge(&mut self, o: &Self) {
        self.webrtc.merge(&o.webrtc);
        if o.emodel.mos < self.emodel.mos {
            self.emodel = o.emodel;
        }
        self.voipmonitor.merge(&o.voipmonitor);
        self.burst_gap.merge(&o.burst_gap);
        self.skipped_events += o.skipped_events;
    }
}

/// What the quality figures need from a stream, prepared once for every playout of it.
#[derive(Clone, Debug)]
pub struct Meter<'s> {
    stream: &'s PlayoutStream<'s>,
    /// The codec the E-model assumes.
    pub(crate) codec: Codec,
    /// Whether it was neither given nor known from the stream.
    pub(crate) codec_assumed: bool,
    /// The assumed one-way network delay of the fastest packet.
    pub(crate) network_delay: Nanos,
    /// The stream's usual frame duration (packetisation).
    pub(crate) frame: Nanos,
    /// Samples or frames, and the minimum obtainable buffer delay.
    pub(crate) counting: webrtc::Counting,
    /// VoIPmonitor's interval boundaries.
    pub(crate) checkpoints: Vec<voipmonitor::Checkpoint>,
    /// VoIPmonitor's received count for the whole stream.
    pub(crate) received: u64,
}

impl<'s> Meter<'s> {
    /// Prepares `stream`: `codec` overrides the one its media names (G.711 when neither
    /// does), `network_delay` is the assumed one-way network delay of its fastest packet.
    pub fn new(stream: &'s PlayoutStream<'s>, codec: Option<Codec>, network_delay: Nanos) -> Self {
        let known = codec.or_else(|| Codec::of_media(&stream.media));
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for s in stream.slots() {
            if let Some(a) = s.arrival {
                let transit = (a + stream.offset - s.send).as_nanos();
                lo = lo.min(transit);
                hi = hi.max(transit);
            }
        }
        let minimum = if lo <= hi {
            Nanos(hi - lo)
        } else {
            Nanos::ZERO
        };
        let rate = if stream.media.is_video() {
            None
        } else {
            stream.media.clock_rate.filter(|r| *r > 0)
        };
        let units = stream.units();
        Self {
            stream,
            codec: known.unwrap_or(Codec::G711),
            codec_assumed: known.is_none(),
            network_delay,
            frame: stream.frame_duration(),
            counting: webrtc::Counting { rate, minimum },
            checkpoints: voipmonitor::checkpoints(units.iter().map(|u| u.arrival)),
            received: (units.len() as u64).saturating_sub(2),
        }
    }

    /// Every figure for one playout of the stream, in one pass over its events.
    pub fn measure(&self, run: &PlayoutRun) -> Quality {
        let mut web = webrtc::Acc::new(self.counting);
        let mut em = emodel::Acc::default();
        let mut vm = voipmonitor::Acc::new(&self.checkpoints, self.received);
        let mut bg = rfc3611::Acc::default();
        let offset = self.stream.offset;
        let skipped = self.walk(run, |s| {
            web.push(s);
            em.push(s, offset);
            vm.push(s);
            bg.push(s);
        });
        Quality {
            webrtc: web.finish(run.inserted, run.removed),
            emodel: em.finish(
                self.codec,
                self.codec_assumed,
                self.network_delay,
                self.frame,
            ),
            voipmonitor: vm.finish(),
            burst_gap: bg.finish(),
            skipped_events: skipped,
        }
    }

    /// Calls `f` with every event of `run` and its slot, in play order; returns how many
    /// events name no slot of the stream (left out).
    pub(crate) fn walk(&self, run: &PlayoutRun, mut f: impl FnMut(&Step<'_>)) -> u64 {
        let slots = self.stream.slots();
        let Some(first) = slots.first() else {
            return run.events.len() as u64;
        };
        let lo = first.seq;
        let mut skipped = 0;
        for (i, e) in run.events.iter().enumerate() {
            let (seq, at, played, late) = match *e {
                PlayoutEvent::Played { seq, at } => (seq, at, true, false),
                PlayoutEvent::Concealed {
                    seq,
                    at,
                    arrived_late,
                } => (seq, at, false, arrived_late),
            };
            let slot = seq
                .checked_sub(lo)
                .and_then(|k| usize::try_from(k).ok())
                .and_then(|k| slots.get(k));
            let Some(slot) = slot else {
                skipped += 1;
                continue;
            };
            f(&Step {
                slot,
                at,
                played,
                late,
                target: run.target(i),
            });
        }
        skipped
    }
}

/// Every quality figure for one stream's playout: `codec` overrides the stream's own (G.711
/// when neither names one), `network_delay` is the assumed one-way network delay of its
/// fastest packet (see [`emodel`]). A sweep prepares a [`Meter`] once per stream instead.
pub fn measure(
    stream: &PlayoutStream<'_>,
    run: &PlayoutRun,
    codec: Option<Codec>,
    network_delay: Nanos,
) -> Quality {
    Meter::new(stream, codec, network_delay).measure(run)
}
