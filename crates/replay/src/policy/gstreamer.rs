//! `gstreamer`: GStreamer's `rtpjitterbuffer` (GStreamer 1.22.0,
//! `subprojects/gst-plugins-good/gst/rtpmanager/gstrtpjitterbuffer.c` and `rtpjitterbuffer.c`)
//! as a media-buffer preset; the element's model is in [`crate::gstreamer`].
//!
//! The element is fed the stream's packets as they arrived (every payload type of the SSRC,
//! DTMF included, as `rtpbin` feeds it; the stream's clock rate for all of them) with their
//! arrival times as DTS, on a clock whose running time starts at the stream's first packet.
//! Each slot plays when a clock-synchronised sink would play it: at its output PTS + latency.
//! A slot whose packet left the element after that, or never left (dropped as late, as a
//! duplicate, on latency, by a reset), is concealed as late; a slot that never arrived is
//! concealed as lost, at the time the neighbouring PTS put it. A video frame plays when every
//! packet of it left in time.
//!
//! Keys and defaults (the element's properties): `latency=200ms` (whole milliseconds, as the
//! property), `drop_on_latency=false`, `do_lost=false`, `mode=slave` (or `none`, `synced`),
//! `ts_offset=0ms`, `max_dropout_time=60000ms`, `max_misorder_time=2000ms`,
//! `faststart_min_packets=0`.
//!
//! Departures: retransmission and `buffer` mode are not modelled (see [`crate::gstreamer`]);
//! streams without an RTP clock rate (not RTP) are fed RTP timestamps made from their send
//! times at 90 kHz.

use std::sync::OnceLock;

use jitterlab_capture::Nanos;
use jitterlab_capture::spec::format_duration;

use super::keys::{boolean, key, print};
use super::{DelayModel, Key, Preset};
use crate::gstreamer::{Config, Mode, simulate};
use crate::playout::{PlayoutDetail, PlayoutEvent, PlayoutRun, PlayoutStream, Targets};

/// GStreamer's `rtpjitterbuffer` with the properties the model honours.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GStreamerConfig {
    /// The element's properties.
    pub element: Config,
}

/// A duration in whole milliseconds, from 0 to `u32::MAX` ms.
fn whole_ms(v: &str) -> Result<u32, String> {
    let d = jitterlab_capture::time::parse_duration(v)?;
    let ns = d.as_nanos();
    if ns < 0 || ns % 1_000_000 != 0 {
        return Err(format!(
            "'{v}' is not a whole number of milliseconds ≥ 0ms (the property is in ms)"
        ));
    }
    u32::try_from(ns / 1_000_000).map_err(|_| format!("'{v}' is out of range (allowed: 0ms to 4294967295ms)"))
}

fn print_ms(ms: &u32) -> String {
    format!("{ms}ms")
}

/// A signed duration of at most ±1 hour.
fn signed_duration(v: &str) -> Result<i64, String> {
    let d = jitterlab_capture::time::parse_duration(v)?;
    if d.as_nanos().unsigned_abs() > 3_600_000_000_000 {
        return Err(format!("'{v}' is out of range (allowed: -1h to 1h)"));
    }
    Ok(d.as_nanos())
}

fn print_signed(ns: &i64) -> String {
    if *ns < 0 {
        format!("-{}", format_duration(Nanos(-*ns)))
    } else {
        format_duration(Nanos(*ns))
    }
}

fn packets(v: &str) -> Result<u32, String> {
    v.parse::<u32>()
        .map_err(|_| format!("'{v}' is not a packet count (allowed: 0 to 4294967295)"))
}

impl Preset for GStreamerConfig {
    const NAME: &'static str = "gstreamer";
    const PLAYOUT_ONLY: bool = true;
    const PLAYOUT_AXES: &'static str = "latency = [\"20ms\", \"40ms\", \"60ms\", \"100ms\", \
        \"150ms\", \"200ms\", \"300ms\", \"400ms\"]\ndrop_on_latency = [false, true]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<GStreamerConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "latency", |c| c.element.latency_ms, print_ms, whole_ms),
                key!(Self, "drop_on_latency", |c| c.element.drop_on_latency, print, boolean),
                key!(Self, "do_lost", |c| c.element.do_lost, print, boolean),
                key!(Self, "mode", |c| c.element.mode, print, |v: &str| v.parse::<Mode>()),
                key!(Self, "ts_offset", |c| c.element.ts_offset, print_signed, signed_duration),
                key!(Self, "max_dropout_time", |c| c.element.max_dropout_time, print_ms, whole_ms),
                key!(Self, "max_misorder_time", |c| c.element.max_misorder_time, print_ms, whole_ms),
                key!(
                    Self,
                    "faststart_min_packets",
                    |c| c.element.faststart_min_packets,
                    print,
                    packets
                ),
            ]
        })
    }

    fn max_delay(&self) -> Nanos {
        self.latency() + Nanos(self.element.ts_offset.max(0))
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn playout(&self, stream: &PlayoutStream<'_>) -> Option<PlayoutRun> {
        Some(play(self, stream))
    }
}

impl GStreamerConfig {
    /// The `latency` property as a duration.
    pub fn latency(&self) -> Nanos {
        Nanos::from_millis(i64::from(self.element.latency_ms))
    }
}

/// A slot no packet of which was pushed (its play time is not known yet).
const UNSET: Nanos = Nanos(i64::MIN);

/// Runs the element over the stream and turns what it pushed into one event per slot.
///
/// An audio slot is one packet: it plays when a copy of it left in time. A video slot is a
/// frame: it plays when as many of its packets left in time as it has distinct sequence
/// numbers. Only the pushed buffers are visited for audio (the sweep's path).
fn play(config: &GStreamerConfig, stream: &PlayoutStream<'_>) -> PlayoutRun {
    let latency = config.latency();
    let packets = stream.packets();
    let clock_rate = if stream.media.kind.is_some() {
        stream.media.clock_rate
    } else {
        None
    };
    let sim = simulate(&config.element, packets, clock_rate);
    let slots = stream.slots();
    let mut run = PlayoutRun {
        targets: Targets::Constant(latency),
        ..PlayoutRun::default()
    };
    if let Some(first) = slots.first() {
        let lo = first.seq;
        let n = slots.len();
        let slot_of = stream.packet_slots();
        let index = |p: usize| -> Option<usize> {
            let k = slot_of.get(p).copied().flatten()? - lo;
            usize::try_from(k).ok().filter(|&k| k < n)
        };
        // Per slot: packets that left in time, and when a synced sink plays it.
        let mut in_time = vec![0u32; n];
        let mut at: Vec<Nanos> = vec![UNSET; n];
        for o in &sim.stats.outputs {
            if let Some(k) = index(o.packet as usize) {
                let play = Nanos(o.pts.as_nanos().saturating_add(latency.as_nanos()));
                at[k] = at[k].max(play);
                in_time[k] += u32::from(o.leave <= play);
            }
        }
        let needed = if stream.media.is_video() {
            frame_sizes(packets, n, index)
        } else {
            Vec::new()
        };
        // Slots none of whose packets left play where the nearest earlier pushed slot's PTS
        // offset from its send time puts them (the nearest later one's before any; with none
        // pushed at all, the first arrival + latency).
        let mut offset = at
            .iter()
            .zip(slots)
            .find_map(|(&a, s)| (a != UNSET).then(|| a - s.send))
            .or_else(|| packets.first().map(|p| p.arrival + latency - first.send))
            .unwrap_or(latency - stream.offset);
        run.events = slots
            .iter()
            .enumerate()
            .map(|(k, slot)| {
                let at = if at[k] == UNSET {
                    slot.send + offset
                } else {
                    offset = at[k] - slot.send;
                    at[k]
                };
                let arrived = slot.arrival.is_some();
                let need = needed.get(k).copied().unwrap_or(1).max(1);
                if arrived && in_time[k] >= need {
                    PlayoutEvent::Played { seq: slot.seq, at }
                } else {
                    PlayoutEvent::Concealed {
                        seq: slot.seq,
                        at,
                        arrived_late: arrived,
                    }
                }
            })
            .collect();
    }
    run.detail = Some(PlayoutDetail::GStreamer(sim.stats));
    run
}

/// Each video frame's distinct sequence numbers (copies of a packet count once).
fn frame_sizes(
    packets: &[jitterlab_capture::Sample],
    n: usize,
    index: impl Fn(usize) -> Option<usize>,
) -> Vec<u32> {
    let mut order: Vec<(i64, usize)> = packets.iter().map(|s| s.seq).zip(0..).collect();
    order.sort_unstable();
    order.dedup_by_key(|e| e.0);
    let mut sizes = vec![0u32; n];
    for (_, p) in order {
        if let Some(k) = index(p) {
            sizes[k] += 1;
        }
    }
    sizes
}

#[cfg(test)]
mod tests;
