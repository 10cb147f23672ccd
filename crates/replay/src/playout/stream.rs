//! One stream prepared for discrete playout, once, for every policy that plays it.
//!
//! What plays is a stream of *units*: an audio stream's packets, a video stream's assembled
//! frames ([`crate::video`]), a game's input ticks. Preparing a stream does the work no policy
//! changes, so that a sweep pays it once per stream rather than once per configuration:
//!
//! - packets that are not the stream's media are set aside and counted: RFC 4733 DTMF events
//!   (`telephone-event`, whose timestamps mark the event's start), and payload types whose
//!   clock differs from the stream's; comfort noise (`CN`, payload type 13) stays, marked
//!   silent, since it fills a slot of the sequence;
//! - the units left are renumbered so that their sequence has no holes but real losses;
//! - timestamps that go backwards, or jump further than the arrivals do, are re-based onto the
//!   stream's usual frame spacing and counted (a sender restart, a switched source);
//! - every slot from the lowest to the highest sequence number gets its send time
//!   (interpolated for slots that never arrived), its first arrival, its media duration and
//!   its size.

use std::borrow::Cow;

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{MediaKind, Sample, StreamInfo};

/// What a stream carries, for playout and its quality figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Media {
    /// Audio or video; `None` for streams that are not RTP media (game input, probes).
    pub kind: Option<MediaKind>,
    /// The RTP clock rate, Hz.
    pub clock_rate: Option<u32>,
    /// The encoding name as the SDP or the static table spells it (`PCMA`, `opus`).
    pub encoding: Option<String>,
    /// The stream's payload type (its most common one).
    pub payload_type: Option<u8>,
}

impl Media {
    /// The media of a decoded stream: RTP streams are audio unless their SDP, payload type or
    /// encoding says video, or their clock is 90 kHz with no encoding known (RTP's video
    /// clock); other streams are not media.
    pub fn of(info: &StreamInfo) -> Self {
        let kind = match (info.ssrc, info.media) {
            (None, _) => None,
            (Some(_), Some(kind)) => Some(kind),
            (Some(_), None) if info.encoding.is_none() && info.clock_rate == Some(90_000) => {
                Some(MediaKind::Video)
            }
            (Some(_), None) if info.encoding.is_none() => Some(MediaKind::Audio),
            (Some(_), None) => None,
        };
        Self {
            kind,
            clock_rate: info.clock_rate,
            encoding: info.encoding.clone(),
            payload_type: info.payload_type,
        }
    }

    /// G.711 A-law audio at 8 kHz, payload type 8: the media of most SIP calls (and of tests).
    pub fn pcma() -> Self {
        Self {
            kind: Some(MediaKind::Audio),
            clock_rate: Some(8000),
            encoding: Some("PCMA".to_owned()),
            payload_type: Some(8),
        }
    }

    /// Whether the stream is video.
    pub fn is_video(&self) -> bool {
        self.kind == Some(MediaKind::Video)
    }

    /// Whether the stream is audio.
    pub fn is_audio(&self) -> bool {
        self.kind == Some(MediaKind::Audio)
    }
}

/// One slot of the sequence: a unit that should have played.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The unit's sequence number (after renumbering).
    pub seq: i64,
    /// Send time on the sender's clock (interpolated by sequence number if it never arrived).
    pub send: Nanos,
    /// Its first arrival, local clock; `None`: never arrived (for video: never complete).
    pub arrival: Option<Nanos>,
    /// The media time it covers: up to the next slot's send time (the last slot: the one
    /// before's).
    pub duration: Nanos,
    /// Payload bytes (a video frame: the sum of its packets').
    pub size: u32,
    /// Comfort noise: the sender was silent here.
    pub silent: bool,
    /// The slot starts a talkspurt: the first slot, one whose packet carries the RTP marker
    /// bit (RFC 3551 §4.1: the first packet after a silence), or the first sound after
    /// comfort noise. What the per-talkspurt bound ([`crate::bound`]) segments by.
    pub talkspurt: bool,
}

/// Units set aside or repaired while preparing a stream, by reason, for the output to say.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Prepared {
    /// RFC 4733 DTMF event packets, not played as media.
    pub dtmf_events: u64,
    /// Comfort-noise packets (kept, played as silence).
    pub comfort_noise: u64,
    /// Packets of a payload type other than the stream's main one, kept (same clock).
    pub payload_type_switches: u64,
    /// Packets of another payload type whose clock rate differs, not played.
    pub other_clock: u64,
    /// Timestamps that went backwards and were re-based.
    pub timestamps_backwards: u64,
    /// Timestamp jumps not matched by the arrivals, re-based.
    pub timestamp_jumps: u64,
    /// Duplicate packets (the first arrival plays).
    pub duplicates: u64,
}

/// One stream prepared for discrete playout: see the module documentation.
#[derive(Clone, Debug)]
pub struct PlayoutStream<'a> {
    /// The stream's id.
    pub id: u32,
    /// What it carries.
    pub media: Media,
    /// Local to sender time: `sender = local + offset` (see [`crate::ClockMapping`]).
    pub offset: Nanos,
    units: Cow<'a, [Sample]>,
    slots: Vec<Slot>,
    packets: &'a [Sample],
    packet_slots: Vec<Option<i64>>,
    /// What was set aside or repaired.
    pub prepared: Prepared,
    /// Video: how frames were assembled (its counts and inactive spans; the frames
    /// themselves are the [`PlayoutStream::units`]).
    pub frames: Option<crate::video::Assembly>,
    /// The spikes and outages of the units' network delay ([`crate::recovery::detect`]),
    /// found once for every configuration's recovery figures.
    spikes: Vec<crate::recovery::Spike>,
}

impl<'a> PlayoutStream<'a> {
    /// Prepares `samples` (one stream, in arrival order) with `offset` mapping local to
    /// sender time.
    pub fn new(id: u32, samples: &'a [Sample], media: Media, offset: Nanos) -> Self {
        let mut prepared = Prepared::default();
        let (units, frames, packet_slots) = if media.is_video() {
            let mut assembly = crate::video::assemble(samples);
            let slots = frame_of_packets(samples, &assembly.packet_frames);
            // The frames become the units; the assembly keeps its counts and inactive spans.
            (
                Cow::Owned(std::mem::take(&mut assembly.frames)),
                Some(assembly),
                slots,
            )
        } else if media.kind.is_some() {
            let (units, slots) = clean_media(samples, &media, &mut prepared);
            (units, None, slots)
        } else {
            (
                Cow::Borrowed(samples),
                None,
                samples.iter().map(|s| Some(s.seq)).collect(),
            )
        };
        let units = rebase(units, &mut prepared);
        let slots = slots_of(&units, &media, &mut prepared);
        let spikes = crate::recovery::detect(
            units.iter().map(|u| (u.arrival, u.send)),
            &crate::recovery::SpikeRule::default(),
        );
        Self {
            spikes,
            id,
            media,
            offset,
            units,
            slots,
            packets: samples,
            packet_slots,
            prepared,
            frames,
        }
    }

    /// Prepares `samples` with `clock` mapping local to sender time, its offset taken over the
    /// units that play (a video frame's transit runs to its last packet) after re-basing.
    pub fn with_clock(
        id: u32,
        samples: &'a [Sample],
        media: Media,
        clock: crate::ClockMapping,
    ) -> Self {
        let mut s = Self::new(id, samples, media, Nanos::ZERO);
        s.offset = clock.offset(&s.units);
        s
    }

    /// A stream with no media information (tests, game input): the samples as they are.
    pub fn plain(samples: &'a [Sample], offset: Nanos) -> Self {
        Self::new(0, samples, Media::default(), offset)
    }

    /// The spikes and outages found in the units' network delay, on the local clock.
    pub fn spikes(&self) -> &[crate::recovery::Spike] {
        &self.spikes
    }

    /// The units that play, in arrival order.
    pub fn units(&self) -> &[Sample] {
        &self.units
    }

    /// Every slot from the lowest to the highest sequence number, in order.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The stream's packets as they arrived (in arrival order, before anything was set aside,
    /// renumbered or assembled): what a packet-level model such as GStreamer's
    /// `rtpjitterbuffer` is fed.
    pub fn packets(&self) -> &'a [Sample] {
        self.packets
    }

    /// For each of [`PlayoutStream::packets`], the sequence number of the slot it plays in
    /// (its renumbered unit, or its video frame's index); `None` for a packet set aside (DTMF,
    /// another clock).
    pub fn packet_slots(&self) -> &[Option<i64>] {
        &self.packet_slots
    }

    /// Whether nothing plays.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The media time one slot usually covers (the median duration), or 20 ms if unknown.
    pub fn frame_duration(&self) -> Nanos {
        let mut d: Vec<Nanos> = self
            .slots
            .iter()
            .map(|s| s.duration)
            .filter(|d| *d > Nanos::ZERO)
            .collect();
        if d.is_empty() {
            return Nanos::from_millis(20);
        }
        let mid = d.len() / 2;
        *d.select_nth_unstable(mid).1
    }
}

/// Whether `s` is a comfort-noise packet (payload type 13, RFC 3389).
fn is_comfort_noise(s: &Sample) -> bool {
    s.payload_type == Some(13)
}

/// The stream's audio packets: DTMF events and other-clock payload types set aside (counted),
/// the rest renumbered so that only real losses leave holes.
fn clean_media<'a>(
    samples: &'a [Sample],
    media: &Media,
    prepared: &mut Prepared,
) -> (Cow<'a, [Sample]>, Vec<Option<i64>>) {
    let main = media.payload_type;
    let main_clock = samples
        .iter()
        .find(|s| s.payload_type == main)
        .map(|s| s.rtp_clock);
    // A packet is media unless it is a DTMF event (its clock is 0, RFC 4733) or another
    // payload type on a different clock.
    let keep = |s: &Sample| -> Result<(), bool> {
        if s.payload_type == main || is_comfort_noise(s) {
            return Ok(());
        }
        if s.rtp_clock == 0 && main_clock != Some(0) {
            return Err(true);
        }
        if Some(s.rtp_clock) != main_clock {
            return Err(false);
        }
        Ok(())
    };
    let mut dropped: Vec<i64> = Vec::new();
    for s in samples {
        match keep(s) {
            Ok(()) if is_comfort_noise(s) && main != Some(13) => prepared.comfort_noise += 1,
            Ok(()) if s.payload_type != main => prepared.payload_type_switches += 1,
            Ok(()) => {}
            Err(dtmf) => {
                if dtmf {
                    prepared.dtmf_events += 1;
                } else {
                    prepared.other_clock += 1;
                }
                dropped.push(s.seq);
            }
        }
    }
    if dropped.is_empty() {
        return (
            Cow::Borrowed(samples),
            samples.iter().map(|s| Some(s.seq)).collect(),
        );
    }
    dropped.sort_unstable();
    dropped.dedup();
    let renumber = |s: &Sample| s.seq - dropped.partition_point(|&d| d < s.seq) as i64;
    let slots = samples
        .iter()
        .map(|s| keep(s).is_ok().then(|| renumber(s)))
        .collect();
    let units = samples
        .iter()
        .filter(|s| keep(s).is_ok())
        .map(|s| Sample {
            seq: renumber(s),
            ..s.clone()
        })
        .collect();
    (Cow::Owned(units), slots)
}

/// Each video packet's frame number, as [`crate::video::assemble`] numbered them (by
/// sequence number: a duplicate goes with its first copy).
fn frame_of_packets(packets: &[Sample], numbers: &[(i64, i64)]) -> Vec<Option<i64>> {
    packets
        .iter()
        .map(|p| {
            numbers
                .binary_search_by_key(&p.seq, |&(seq, _)| seq)
                .ok()
                .map(|k| numbers[k].1)
        })
        .collect()
}

/// Re-bases timestamps that go backwards, or jump further ahead than the arrivals and the
/// sequence numbers explain, onto the stream's usual spacing (counted in `prepared`).
fn rebase<'a>(units: Cow<'a, [Sample]>, prepared: &mut Prepared) -> Cow<'a, [Sample]> {
    if units.len() < 3 {
        return units;
    }
    // Received units in sequence order (first arrival of each).
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&i| (units[i].seq, units[i].arrival));
    order.dedup_by_key(|i| units[*i].seq);
    let spacing = {
        let mut steps: Vec<i64> = order
            .windows(2)
            .filter_map(|w| {
                let (a, b) = (&units[w[0]], &units[w[1]]);
                let n = b.seq - a.seq;
                let d = (b.send - a.send).as_nanos();
                (n > 0 && d > 0).then_some(d / n)
            })
            .collect();
        if steps.is_empty() {
            return units;
        }
        let mid = steps.len() / 2;
        *steps.select_nth_unstable(mid).1
    };
    // The shift to add to each received seq's send time, changing at each discontinuity.
    let mut shifts: Vec<(i64, i64)> = Vec::new();
    let mut shift = 0i64;
    for w in order.windows(2) {
        let (a, b) = (&units[w[0]], &units[w[1]]);
        let n = b.seq - a.seq;
        let d = (b.send - a.send).as_nanos();
        let arrived = (b.arrival - a.arrival).as_nanos();
        let expected = spacing.saturating_mul(n);
        // A silence (DTX) jumps timestamps as far as the arrivals jump; a restart does not.
        let slack = expected.max(arrived.abs()) + Nanos::from_secs(1).as_nanos();
        let discontinuity = if d < 0 {
            prepared.timestamps_backwards += 1;
            true
        } else if d > slack.saturating_mul(2)
            && d > arrived.saturating_add(Nanos::from_secs(2).as_nanos())
        {
            prepared.timestamp_jumps += 1;
            true
        } else {
            false
        };
        if discontinuity {
            shift += expected.max(arrived.max(0)) - d;
            shifts.push((b.seq, shift));
        }
    }
    if shifts.is_empty() {
        return units;
    }
    let shift_of = |seq: i64| {
        let k = shifts.partition_point(|&(s, _)| s <= seq);
        if k == 0 { 0 } else { shifts[k - 1].1 }
    };
    Cow::Owned(
        units
            .iter()
            .map(|s| Sample {
                send: s.send + Nanos(shift_of(s.seq)),
                ..s.clone()
            })
            .collect(),
    )
}

/// Every slot from the lowest to the highest sequence number received.
fn slots_of(units: &[Sample], media: &Media, prepared: &mut Prepared) -> Vec<Slot> {
    let mut known: Vec<&Sample> = units.iter().collect();
    known.sort_by_key(|s| (s.seq, s.arrival));
    let before = known.len();
    known.dedup_by_key(|s| s.seq);
    prepared.duplicates += (before - known.len()) as u64;
    let (Some(lo), Some(hi)) = (known.first(), known.last()) else {
        return Vec::new();
    };
    let (lo, hi) = (lo.seq, hi.seq);
    let _ = media;
    let mut out: Vec<Slot> = Vec::with_capacity(usize::try_from(hi - lo + 1).unwrap_or(0));
    let mut k = 0;
    for seq in lo..=hi {
        while k + 1 < known.len() && known[k + 1].seq <= seq {
            k += 1;
        }
        let here = known[k];
        out.push(if here.seq == seq {
            Slot {
                seq,
                send: here.send,
                arrival: Some(here.arrival),
                duration: Nanos::ZERO,
                size: here.size,
                silent: is_comfort_noise(here),
                talkspurt: here.marker,
            }
        } else {
            let next = known[k + 1];
            let send = here.send
                + Nanos(
                    (next.send - here.send).as_nanos() * (seq - here.seq) / (next.seq - here.seq),
                );
            Slot {
                seq,
                send,
                arrival: None,
                duration: Nanos::ZERO,
                size: 0,
                silent: here.payload_type == Some(13),
                talkspurt: false,
            }
        });
    }
    for i in 0..out.len() {
        out[i].talkspurt |= i == 0 || (out[i - 1].silent && !out[i].silent);
        out[i].duration = match (out.get(i + 1), i.checked_sub(1).map(|j| out[j])) {
            (Some(next), _) => next.send - out[i].send,
            (None, Some(prev)) => out[i].send - prev.send,
            (None, None) => Nanos::from_millis(20),
        }
        .max(Nanos::ZERO);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtp(seq: i64, send_ms: i64, arrival_ms: i64, pt: u8, clock: u32) -> Sample {
        Sample {
            payload_type: Some(pt),
            rtp_clock: clock,
            size: 160,
            ..Sample::new(
                0,
                seq,
                Nanos::from_millis(send_ms),
                Nanos::from_millis(arrival_ms),
            )
        }
    }

    fn audio() -> Media {
        Media::pcma()
    }

    #[test]
    fn dtmf_events_are_set_aside_and_the_sequence_closes_over_them() {
        // 0, 1 audio; 2, 3 DTMF (clock 0); 4 audio; 6 audio (5 lost).
        let samples = vec![
            rtp(0, 0, 10, 8, 8000),
            rtp(1, 20, 30, 8, 8000),
            rtp(2, 40, 50, 101, 0),
            rtp(3, 40, 70, 101, 0),
            rtp(4, 40, 50, 8, 8000),
            rtp(6, 80, 90, 8, 8000),
        ];
        let s = PlayoutStream::new(0, &samples, audio(), Nanos::ZERO);
        assert_eq!(s.prepared.dtmf_events, 2);
        let seqs: Vec<(i64, bool)> = s
            .slots()
            .iter()
            .map(|s| (s.seq, s.arrival.is_some()))
            .collect();
        assert_eq!(
            seqs,
            [(0, true), (1, true), (2, true), (3, false), (4, true)]
        );
        assert_eq!(s.slots()[3].send, Nanos::from_millis(60));
        assert_eq!(s.frame_duration(), Nanos::from_millis(20));
    }

    #[test]
    fn a_timestamp_reset_is_rebased_and_counted() {
        // 20 ms frames; at seq 5 the timestamps restart from 0 (a sender restart).
        let samples: Vec<Sample> = (0..10)
            .map(|i| {
                let send = if i < 5 { i * 20 } else { (i - 5) * 20 };
                rtp(i, send, i * 20 + 5, 8, 8000)
            })
            .collect();
        let s = PlayoutStream::new(0, &samples, audio(), Nanos::ZERO);
        assert_eq!(s.prepared.timestamps_backwards, 1);
        let sends: Vec<i64> = s
            .slots()
            .iter()
            .map(|s| s.send.as_nanos() / 1_000_000)
            .collect();
        assert_eq!(sends, (0..10).map(|i| i * 20).collect::<Vec<_>>());
    }

    #[test]
    fn a_silence_is_not_a_jump_but_an_unexplained_leap_is() {
        // A 3 s talk pause: timestamps and arrivals both leap.
        let mut samples: Vec<Sample> = (0..5)
            .map(|i| rtp(i, i * 20, i * 20 + 5, 8, 8000))
            .collect();
        samples.extend((5..10).map(|i| rtp(i, 3000 + i * 20, 3000 + i * 20 + 5, 8, 8000)));
        let s = PlayoutStream::new(0, &samples, audio(), Nanos::ZERO);
        assert_eq!(s.prepared.timestamp_jumps, 0);
        // The same leap in timestamps while arrivals stay 20 ms apart: a jump.
        let leap: Vec<Sample> = (0..10)
            .map(|i| {
                rtp(
                    i,
                    if i < 5 { i * 20 } else { 60_000 + i * 20 },
                    i * 20 + 5,
                    8,
                    8000,
                )
            })
            .collect();
        let s = PlayoutStream::new(0, &leap, audio(), Nanos::ZERO);
        assert_eq!(s.prepared.timestamp_jumps, 1);
        assert_eq!(s.slots()[5].send, Nanos::from_millis(100));
    }

    #[test]
    fn comfort_noise_stays_marked_silent() {
        let samples = vec![
            rtp(0, 0, 5, 8, 8000),
            rtp(1, 20, 25, 13, 8000),
            rtp(2, 40, 45, 8, 8000),
        ];
        let s = PlayoutStream::new(0, &samples, audio(), Nanos::ZERO);
        assert_eq!(s.prepared.comfort_noise, 1);
        assert!(s.slots()[1].silent && !s.slots()[0].silent);
    }
}
