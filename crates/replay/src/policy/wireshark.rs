//! `wireshark`: the jitter buffer of Wireshark's RTP Player, so that a capture's drops can be
//! seen exactly as Wireshark marks them, and next to a better reference clock.
//!
//! Follows `ui/qt/rtp_audio_stream.cpp` `RtpAudioStream::decodeAudio` (Wireshark 3.6–4.x, read
//! at `476eb0e6` and `0048142e`; the rule was carried over from the GTK `rtp_player.c`
//! `decode_rtp_stream`, which `ui/rtp_media.c` cites) and `ui/rtp_media.c`
//! `decode_rtp_packet`. Described in jitterlab's words:
//!
//! - The player takes the stream's packets in capture (arrival) order. Both clocks are
//!   referenced to the **first packet**: `rtp_time = (ts − ts_first)/clock` and
//!   `arrive_time = arrival − arrival_first`.
//! - **Jitter buffer** (`timing=jitter_buffer`, the default, with the "Jitter Buffer" size
//!   `jitter_buffer=50ms`, the player's default `jitter_buffer_size_(50)`): a packet is marked
//!   dropped when `|arrive_time − rtp_time| > jitter_buffer`, early or late. If a dropped packet
//!   also follows a timestamp gap of more than two packet periods (a silence), the player
//!   resynchronises: that packet becomes the new reference for both clocks.
//! - Otherwise the timestamp step since the last kept packet, less that packet's length, is
//!   filled with silence ("wrong timestamp" when it is not zero; a negative step inserts
//!   nothing), and the packet's audio follows.
//! - Audio is written only for a sequence number above every one written before, so a
//!   reordered or duplicate packet never plays; packets that decode to nothing (comfort noise,
//!   one-byte G.711, payloads without a codec) are skipped. Any sequence number other than the
//!   previous one plus one is marked out of sequence.
//! - **RTP timestamp** (`timing=rtp_timestamp`): arrivals are ignored (`arrive_time =
//!   rtp_time`), so nothing is dropped: every packet plays at its timestamp, silence filling
//!   gaps. **Uninterrupted** (`timing=uninterrupted`): nothing is dropped and no silence is
//!   inserted; packets play back to back, so losses and gaps take no time.
//!
//! `reference=min_transit` replaces the first packet's reference with the stream's minimum
//! transit (arrival − send time, in hindsight), so a packet is dropped only when it arrived
//! more than `jitter_buffer` after the fastest packet's timing would have it; there is no
//! resynchronisation (it exists to recover from a wrong reference). With a slow first packet,
//! Wireshark's rule drops every packet that is on time as "early"; the detail's
//! `first_excess_ms` says how slow the first packet was.
//!
//! **Events.** A packet marked dropped is concealed (as late, whether early or late); a kept
//! packet plays. Each plays at its place in the player's audio: the first packet's arrival (or
//! its send time plus the minimum transit) plus the audio written before it, plus
//! `jitter_buffer` in jitter-buffer timing, since a live player applying this rule must hold
//! every packet that long. Reordered and duplicate packets are concealed; lost ones are
//! concealed in their place.
//!
//! **Defaults:** `jitter_buffer=50ms, timing=jitter_buffer, reference=first`.
//!
//! **Where jitterlab departs.** The Qt player still writes a dropped packet's audio to its
//! sample file (only the GTK player left it out); jitterlab counts it concealed, as the drop
//! marker says, while keeping its place in the timeline as the Qt player does. Decoded lengths
//! are the payload size for G.711 and G.722 (as their decoders give) and the stream's frame
//! duration for other codecs; every codec other than comfort noise is taken to decode.

use std::sync::OnceLock;

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;
use serde::Serialize;

use super::keys::{key, print, print_duration};
use super::{DelayModel, Key, Preset, duration_key};
use crate::playout::{PlayoutDetail, PlayoutEvent, PlayoutRun, PlayoutStream, Slot};

/// The player's "Playback Timing".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// "Jitter Buffer": arrivals are checked against the buffer size.
    #[default]
    JitterBuffer,
    /// "RTP Timestamp": arrivals ignored, packets placed at their timestamps.
    RtpTimestamp,
    /// "Uninterrupted Mode": packets back to back.
    Uninterrupted,
}

impl Timing {
    fn as_str(self) -> &'static str {
        match self {
            Self::JitterBuffer => "jitter_buffer",
            Self::RtpTimestamp => "rtp_timestamp",
            Self::Uninterrupted => "uninterrupted",
        }
    }

    fn parse(v: &str) -> Result<Self, String> {
        match v {
            "jitter_buffer" => Ok(Self::JitterBuffer),
            "rtp_timestamp" => Ok(Self::RtpTimestamp),
            "uninterrupted" => Ok(Self::Uninterrupted),
            _ => Err(format!(
                "'{v}' is not a timing mode (allowed: jitter_buffer, rtp_timestamp, uninterrupted)"
            )),
        }
    }
}

impl std::fmt::Display for Timing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The clock the drop rule measures arrivals against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reference {
    /// Wireshark's: the first packet (and the packet of each resynchronisation).
    #[default]
    First,
    /// The stream's minimum transit, in hindsight.
    MinTransit,
}

impl Reference {
    fn as_str(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::MinTransit => "min_transit",
        }
    }

    fn parse(v: &str) -> Result<Self, String> {
        match v {
            "first" => Ok(Self::First),
            "min_transit" => Ok(Self::MinTransit),
            _ => Err(format!(
                "'{v}' is not a reference (allowed: first, min_transit)"
            )),
        }
    }
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Wireshark's RTP Player jitter buffer as a playout policy: see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WiresharkConfig {
    /// The "Jitter Buffer" size (Wireshark takes whole ms).
    pub jitter_buffer: Nanos,
    /// "Playback Timing".
    pub timing: Timing,
    /// The drop rule's reference clock.
    pub reference: Reference,
}

impl Default for WiresharkConfig {
    /// The player's defaults: 50 ms, jitter-buffer timing, first-packet reference.
    fn default() -> Self {
        Self {
            jitter_buffer: Nanos::from_millis(50),
            timing: Timing::JitterBuffer,
            reference: Reference::First,
        }
    }
}

impl Preset for WiresharkConfig {
    const NAME: &'static str = "wireshark";
    const PLAYOUT_ONLY: bool = true;
    const MEDIA: Option<jitterlab_capture::decode::MediaKind> =
        Some(jitterlab_capture::decode::MediaKind::Audio);
    const PLAYOUT_AXES: &'static str = "jitter_buffer = [\"20ms\", \"50ms\", \"80ms\", \"100ms\", \"150ms\", \"200ms\", \"300ms\"]\nreference = [\"first\", \"min_transit\"]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<WiresharkConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(
                    Self,
                    "jitter_buffer",
                    |c| c.jitter_buffer,
                    print_duration,
                    |v| {
                        let d = duration_key(v, Nanos::ZERO)?;
                        if d.as_nanos() % 1_000_000 != 0 {
                            return Err(format!(
                                "{v} is not a whole number of milliseconds (the player's spin box)"
                            ));
                        }
                        Ok(d)
                    }
                ),
                key!(Self, "timing", |c| c.timing, print, Timing::parse),
                key!(Self, "reference", |c| c.reference, print, Reference::parse),
            ]
        })
    }

    fn max_delay(&self) -> Nanos {
        self.jitter_buffer
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        let (events, stats) = play(stream, self);
        Some(PlayoutRun {
            events,
            detail: Some(PlayoutDetail::Wireshark(stats)),
            ..PlayoutRun::default()
        })
    }
}

/// The `wireshark` preset's counts, under `"wireshark"` in JSON: the player's markers and
/// what it did with each packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct WiresharkStats {
    /// The timing mode.
    pub timing: Timing,
    /// The reference clock.
    pub reference: Reference,
    /// The buffer size, ms.
    pub jitter_buffer_ms: f64,
    /// Packets of the stream.
    pub packets: u64,
    /// Packets that decode to nothing (comfort noise, one-byte G.711, empty payloads).
    pub not_decoded: u64,
    /// "Jitter drops": packets outside the jitter buffer.
    pub jitter_drops: u64,
    /// Of those, packets that arrived later than the buffer allows.
    pub jitter_drops_late: u64,
    /// Of those, packets that arrived earlier than the buffer allows (ahead of the reference).
    pub jitter_drops_early: u64,
    /// Resynchronisations on a dropped packet after a silence.
    pub resyncs: u64,
    /// "Out of sequence" markers: a sequence number other than the previous plus one.
    pub out_of_sequence: u64,
    /// "Wrong timestamp" markers: the timestamp step did not match the audio written.
    pub wrong_timestamp: u64,
    /// "Inserted silence" markers.
    pub silence_inserted: u64,
    /// Silence inserted, ms.
    pub silence_ms: f64,
    /// Packets not written because a higher sequence number was written before (reordered or
    /// duplicated).
    pub not_written: u64,
    /// How much later the first packet arrived than the fastest packet's timing, ms: what the
    /// first-packet reference costs.
    pub first_excess_ms: f64,
}

impl WiresharkStats {
    /// One line for a person.
    pub fn describe(&self) -> String {
        format!(
            "wireshark ({}, {} reference, {} ms) {} packets: {} jitter drops ({} late, {} early), \
             {} resyncs, {} out of sequence, {} wrong timestamp, {} not written; first packet \
             {:.1} ms slower than the fastest",
            self.timing,
            self.reference,
            self.jitter_buffer_ms,
            self.packets,
            self.jitter_drops,
            self.jitter_drops_late,
            self.jitter_drops_early,
            self.resyncs,
            self.out_of_sequence,
            self.wrong_timestamp,
            self.not_written,
            self.first_excess_ms
        )
    }
}

/// Whether Wireshark's decoder gives samples for the unit (`decode_rtp_packet` non-empty, and
/// not the one-byte G.711 "silence" the player skips).
fn decodes(u: &Sample) -> bool {
    if u.size == 0 || matches!(u.payload_type, Some(13 | 19)) {
        return false;
    }
    !(matches!(u.payload_type, Some(0 | 8)) && u.size == 1)
}

/// The decoder's sample rate: G.722 decodes at 16 kHz on an 8 kHz RTP clock.
fn sample_rate(u: &Sample) -> f64 {
    match u.payload_type {
        Some(9) => 16_000.0,
        _ if u.rtp_clock > 0 => f64::from(u.rtp_clock),
        _ => 8000.0,
    }
}

/// The RTP clock for timestamps (8 kHz for G.722, "for historic reasons").
fn rtp_clock(u: &Sample) -> f64 {
    if u.rtp_clock > 0 {
        f64::from(u.rtp_clock)
    } else {
        8000.0
    }
}

/// Samples one unit decodes to at `sample_rate`.
fn decoded_samples(u: &Sample, frame: Nanos) -> f64 {
    match u.payload_type {
        Some(0 | 8) => f64::from(u.size),
        Some(9) => 2.0 * f64::from(u.size),
        _ => (frame.as_secs_f64() * sample_rate(u)).round(),
    }
}

/// A unit's RTP timestamp in seconds relative to `start` (the send time for streams that are
/// not RTP).
fn rtp_seconds(u: &Sample, start: &Sample) -> f64 {
    if u.rtp_clock > 0 && start.rtp_clock > 0 {
        (u.rtp_timestamp - start.rtp_timestamp) as f64 / rtp_clock(u)
    } else {
        (u.send - start.send).as_secs_f64()
    }
}

/// Runs the player over `stream`.
fn play(stream: &PlayoutStream<'_>, config: &WiresharkConfig) -> (Vec<PlayoutEvent>, WiresharkStats) {
    let slots = stream.slots();
    let units = stream.units();
    let jb = config.jitter_buffer.as_secs_f64();
    let mut stats = WiresharkStats {
        timing: config.timing,
        reference: config.reference,
        jitter_buffer_ms: config.jitter_buffer.as_millis_f64(),
        packets: units.len() as u64,
        ..WiresharkStats::default()
    };
    let (Some(first_slot), Some(first)) = (slots.first(), units.first()) else {
        return (Vec::new(), stats);
    };
    let frame = stream.frame_duration();
    // The stream's minimum transit over the packets that decode.
    let min_transit = units
        .iter()
        .filter(|u| decodes(u))
        .map(|u| u.arrival - u.send)
        .min()
        .unwrap_or(first.arrival - first.send);
    stats.first_excess_ms = (first.arrival - first.send - min_transit).as_millis_f64();
    let hindsight = config.reference == Reference::MinTransit && config.timing == Timing::JitterBuffer;
    // Where the player's audio starts on the local clock.
    let origin = if hindsight {
        first.send + min_transit
    } else {
        first.arrival
    };
    let hold = if config.timing == Timing::JitterBuffer {
        config.jitter_buffer
    } else {
        Nanos::ZERO
    };
    let mut at: Vec<Nanos> = vec![Nanos::MIN; slots.len()];
    let mut played = vec![false; slots.len()];
    let mut start = first;
    let mut start_time = 0.0f64;
    let mut rtp_time_prev = 0.0f64;
    let mut arrive_time_prev = 0.0f64;
    let mut pack_period = 0.0f64;
    let mut decoded_prev = 0.0f64;
    let mut last_sequence = first.seq - 1;
    let mut last_written: Option<i64> = None;
    // Samples written so far, at the first decoded packet's rate.
    let mut position = 0.0f64;
    let mut rate: Option<f64> = None;
    for u in units {
        if !decodes(u) {
            stats.not_decoded += 1;
            last_sequence = u.seq;
            continue;
        }
        let r = *rate.get_or_insert_with(|| sample_rate(u));
        if u.seq != last_sequence + 1 {
            stats.out_of_sequence += 1;
        }
        last_sequence = u.seq;
        let decoded = decoded_samples(u, frame) * r / sample_rate(u);
        let rtp_time = rtp_seconds(u, start);
        let arrive_offset = (u.arrival - first.arrival).as_secs_f64();
        let (arrive_time, excess) = match (config.timing, hindsight) {
            (Timing::RtpTimestamp, _) => (rtp_time, 0.0),
            (_, true) => {
                let late = (u.arrival - u.send - min_transit).as_secs_f64();
                (arrive_offset - start_time, late)
            }
            (_, false) => {
                let a = arrive_offset - start_time;
                (a, a - rtp_time)
            }
        };
        let mut dropped = false;
        if excess.abs() * 1000.0 > jb * 1000.0 && config.timing != Timing::Uninterrupted {
            dropped = true;
            stats.jitter_drops += 1;
            if excess > 0.0 {
                stats.jitter_drops_late += 1;
            } else {
                stats.jitter_drops_early += 1;
            }
            if !hindsight && (rtp_time - rtp_time_prev) > pack_period * 2.0 {
                let silence = ((arrive_time - arrive_time_prev) * r - decoded_prev) as i64;
                if silence > 0 {
                    stats.silence_inserted += 1;
                    stats.silence_ms += silence as f64 / r * 1000.0;
                    position += silence as f64;
                }
                stats.resyncs += 1;
                decoded_prev = 0.0;
                start = u;
                start_time = arrive_offset;
                rtp_time_prev = 0.0;
            }
        } else {
            let silence = if config.timing == Timing::Uninterrupted {
                0
            } else {
                ((rtp_time - rtp_time_prev) * r - decoded_prev) as i64
            };
            if silence != 0 {
                stats.wrong_timestamp += 1;
            }
            if silence > 0 {
                stats.silence_inserted += 1;
                stats.silence_ms += silence as f64 / r * 1000.0;
                position += silence as f64;
            }
            rtp_time_prev = rtp_time;
            pack_period = decoded / r;
            decoded_prev = decoded;
            arrive_time_prev = arrive_time;
        }
        if last_written.is_none_or(|w| w < u.seq) {
            last_written = Some(u.seq);
            if let Some(k) = slot_of(first_slot.seq, u.seq, slots.len()) {
                at[k] = origin + Nanos::from_secs_f64(position / r) + hold;
                played[k] = !dropped;
            }
            position += decoded;
        } else {
            stats.not_written += 1;
        }
    }
    (
        events(slots, &at, &played, config.timing != Timing::Uninterrupted),
        stats,
    )
}

fn slot_of(first: i64, seq: i64, n: usize) -> Option<usize> {
    usize::try_from(seq.checked_sub(first)?).ok().filter(|&k| k < n)
}

/// One event per slot: slots the player wrote at their place; the others (lost, reordered,
/// not decoded) concealed where the timeline had them, after the slot before and no later
/// than the slot after; comfort noise played as silence. In `realtime` timing a frame the
/// timeline places before it arrived is concealed (the uninterrupted mode lays packets back to
/// back regardless of when they came, as the offline player does).
fn events(slots: &[Slot], at: &[Nanos], played: &[bool], realtime: bool) -> Vec<PlayoutEvent> {
    let n = slots.len();
    // The next written slot's time, from the end.
    let mut next_at = vec![Nanos::MAX; n];
    let mut next = Nanos::MAX;
    for k in (0..n).rev() {
        next_at[k] = next;
        if at[k] != Nanos::MIN {
            next = at[k];
        }
    }
    let mut out = Vec::with_capacity(n);
    let mut last: Option<(Nanos, Nanos)> = None;
    for (k, s) in slots.iter().enumerate() {
        let written = at[k] != Nanos::MIN;
        let mut t = if written {
            at[k]
        } else {
            let guess = last.map_or(next_at[k], |(t, d)| t + d);
            guess.min(next_at[k])
        };
        if let Some((prev, _)) = last {
            t = t.max(prev);
        }
        if t == Nanos::MAX {
            t = s.arrival.unwrap_or(s.send);
        }
        last = Some((t, s.duration));
        // Comfort noise the player reaches plays as silence, once it has arrived.
        let silence = !written && s.silent && s.arrival.is_some_and(|a| a <= t);
        // A frame the timeline places before it arrived (timestamps that went backwards and
        // were re-based) had not come when its place played.
        let in_time = !realtime || s.arrival.is_some_and(|a| a <= t);
        out.push(if (written && played[k] && in_time) || silence {
            PlayoutEvent::Played { seq: s.seq, at: t }
        } else {
            PlayoutEvent::Concealed {
                seq: s.seq,
                at: t,
                arrived_late: s.arrival.is_some(),
            }
        });
    }
    out
}

#[cfg(test)]
#[path = "wireshark_tests.rs"]
mod tests;
