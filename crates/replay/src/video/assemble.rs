//! Frame assembly: one video stream's RTP packets grouped into the frames a decoder takes.
//!
//! Packets are taken in sequence-number order (duplicates dropped, the first arrival kept) and
//! split where the RTP timestamp changes; packets sharing a timestamp form one frame
//! (RFC 3550 §5.1: "several consecutive RTP packets may have equal timestamps if they are
//! (logically) generated at once, e.g., belong to the same video frame"). A frame is
//! *complete* when every sequence number from its first packet to its marker-bit packet
//! arrived (RFC 6184 §5.1: the marker is set on the last packet of an access unit); without a
//! marker the frame ends where the next timestamp begins, if that packet directly follows. It
//! *arrives* with its last packet and its size is the sum of its packets' payloads.
//!
//! Frames are numbered in sequence order (decode order), one number per frame the sender
//! sent as far as the packets tell: when sequence numbers are missing between two frames and
//! the timestamps step by more than the stream's usual frame spacing, the missing packets are
//! whole lost frames (one number each), up to one per missing packet.
//!
//! Bad input is counted, never fatal: see [`Incomplete`] (why a frame cannot be decoded) and
//! the stream-level counters of [`Assembly`].

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

/// How long a stream must go without any packet before libwebrtc calls it inactive
/// (`kInactiveDuration` in `video/video_receive_stream2.cc`): the playout gap around such a
/// silence is a pause, not a freeze (see [`crate::video::VideoStats`]).
pub const INACTIVE_AFTER: Nanos = Nanos::from_secs(5);

/// How far back a packet's timestamp is looked for among the frames before it when the
/// timestamps of two frames interleave in sequence order.
const INTERLEAVE_LOOKBACK: usize = 4;

/// Frames assembled from one video stream, and how the assembly went.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Assembly {
    /// One unit per complete frame, in completion order: `seq` is the frame's number in
    /// sequence order (with a number for every lost frame), `send` its timestamp's time,
    /// `arrival` its last packet's, `size` the sum of its packets', `rtp_timestamp` its
    /// timestamp, `marker` set.
    #[serde(skip)]
    pub frames: Vec<Sample>,
    /// When the stream was inactive: each span runs from [`INACTIVE_AFTER`] after a packet's
    /// arrival to the next packet's (the last runs to [`Nanos::MAX`]), in time order.
    #[serde(skip)]
    pub inactive: Vec<(Nanos, Nanos)>,
    /// Each received sequence number's frame number (complete or not), by sequence number:
    /// where a per-packet buffer (GStreamer's) plays each packet.
    #[serde(skip)]
    pub packet_frames: Vec<(i64, i64)>,
    /// Frames the sender sent, as far as the packets tell: complete + incomplete.
    #[serde(rename = "frames")]
    pub total: u64,
    /// Frames with every packet: decodable.
    pub complete: u64,
    /// Frames that cannot be decoded (a packet missing, or malformed): never shown.
    pub incomplete: u64,
    /// Why, one reason per incomplete frame.
    pub incomplete_reasons: Incomplete,
    /// Complete frames whose end was found by the next timestamp, not a marker bit.
    pub ended_by_timestamp: u64,
    /// Duplicate packets (the first arrival counts).
    pub duplicates: u64,
    /// Frames whose timestamp is below the previous frame's in sequence order (a sender
    /// restart, or B-frames; `PlayoutStream` re-bases the send times).
    pub timestamps_backwards: u64,
    /// Timestamp steps far beyond what the arrivals and the frame spacing explain (a sender
    /// restart); no lost frames are inferred across them.
    pub timestamp_jumps: u64,
    /// Changes of payload type between consecutive packets in sequence order.
    pub payload_type_switches: u64,
}

/// Why frames are incomplete: each incomplete frame is counted under one reason, the first
/// that applies in this order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Incomplete {
    /// No packet of the frame arrived: inferred from missing sequence numbers and a timestamp
    /// step of more than one frame spacing.
    pub lost: u64,
    /// Its packets interleave in sequence order with another timestamp's.
    pub interleaved: u64,
    /// Its packets carry more than one payload type.
    pub mixed_payload_types: u64,
    /// A sequence number within it, before it (after the previous frame's end) or after it
    /// (before the next frame's start) is missing.
    pub missing_packets: u64,
    /// The stream's last frame has no marker bit: whether it ended is unknown.
    pub unterminated: u64,
}

/// One frame being assembled (indexes into the sequence-ordered packets).
#[derive(Clone, Copy, Debug)]
struct Open {
    ts: i64,
    send: Nanos,
    first_seq: i64,
    last_seq: i64,
    /// The first packet (sequence order), whose fields the frame's unit copies.
    first: usize,
    packets: u64,
    size: u32,
    arrival: Nanos,
    first_arrival: Nanos,
    /// The marker bit on its highest-numbered packet.
    marker_last: bool,
    payload_type: Option<u8>,
    mixed: bool,
    interleaved: bool,
}

/// Assembles `packets` (one video stream, in arrival order) into frames.
pub fn assemble(packets: &[Sample]) -> Assembly {
    let mut out = Assembly {
        inactive: inactive_spans(packets),
        ..Assembly::default()
    };
    let mut by_seq: Vec<&Sample> = packets.iter().collect();
    by_seq.sort_by_key(|s| (s.seq, s.arrival));
    let before = by_seq.len();
    by_seq.dedup_by_key(|s| s.seq);
    out.duplicates = (before - by_seq.len()) as u64;
    let (open, member) = group(&by_seq, &mut out);
    let spacing = frame_spacing(&open);
    let mut index = 0i64;
    let mut numbers = Vec::with_capacity(open.len());
    for (i, f) in open.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| &open[j]);
        let next = open.get(i + 1);
        // The gap before this frame: lost frames, or the head of this one.
        let mut head_intact = true;
        if let Some(p) = prev {
            let missing = f.first_seq - p.last_seq - 1;
            let step = f.ts - p.ts;
            if step < 0 {
                out.timestamps_backwards += 1;
            } else if is_jump(p, f, spacing) {
                out.timestamp_jumps += 1;
            }
            if missing > 0 {
                let lost = match spacing {
                    Some(s) if step > 0 && !is_jump(p, f, spacing) => {
                        // Rounded count of frame spacings in the step, less this frame.
                        ((step + s / 2) / s - 1).clamp(0, missing)
                    }
                    _ => 0,
                };
                out.incomplete_reasons.lost += lost as u64;
                out.total += lost as u64;
                out.incomplete += lost as u64;
                index += lost;
                // The missing packets are all whole lost frames only if the previous frame
                // ended with its marker and each lost frame had one packet.
                head_intact = p.marker_last && lost == missing;
            }
        }
        numbers.push(index);
        let tail = match next {
            _ if f.marker_last => Tail::Marker,
            Some(n) if n.first_seq == f.last_seq + 1 => Tail::NextTimestamp,
            Some(_) => Tail::Missing,
            None => Tail::Unknown,
        };
        let reason = if f.interleaved {
            Some(&mut out.incomplete_reasons.interleaved)
        } else if f.mixed {
            Some(&mut out.incomplete_reasons.mixed_payload_types)
        } else if f.packets as i64 != f.last_seq - f.first_seq + 1
            || !head_intact
            || tail == Tail::Missing
        {
            Some(&mut out.incomplete_reasons.missing_packets)
        } else if tail == Tail::Unknown {
            Some(&mut out.incomplete_reasons.unterminated)
        } else {
            None
        };
        out.total += 1;
        match reason {
            Some(count) => {
                *count += 1;
                out.incomplete += 1;
            }
            None => {
                out.complete += 1;
                if tail == Tail::NextTimestamp {
                    out.ended_by_timestamp += 1;
                }
                out.frames.push(Sample {
                    seq: index,
                    arrival: f.arrival,
                    size: f.size,
                    marker: true,
                    ..by_seq[f.first].clone()
                });
            }
        }
        index += 1;
    }
    out.frames.sort_by_key(|f| (f.arrival, f.seq));
    out.packet_frames = by_seq
        .iter()
        .zip(&member)
        .map(|(p, &j)| (p.seq, numbers[j]))
        .collect();
    out
}

/// How a frame's end was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tail {
    /// Its last packet carries the marker bit.
    Marker,
    /// The next packet in sequence starts another timestamp.
    NextTimestamp,
    /// Sequence numbers are missing after it.
    Missing,
    /// Nothing follows and no marker ended it.
    Unknown,
}

/// Packets (sequence order, no duplicates) grouped into frames by timestamp, with a run of a
/// timestamp seen in one of the last few frames merged back into it (interleaving).
/// Returns the frames and, per packet, the frame it went into.
fn group(by_seq: &[&Sample], out: &mut Assembly) -> (Vec<Open>, Vec<usize>) {
    let mut open: Vec<Open> = Vec::new();
    let mut member = Vec::with_capacity(by_seq.len());
    let mut last_pt: Option<Option<u8>> = None;
    for (k, p) in by_seq.iter().enumerate() {
        if let Some(pt) = last_pt
            && pt != p.payload_type
        {
            out.payload_type_switches += 1;
        }
        last_pt = Some(p.payload_type);
        let n = open.len();
        let into = match open.last() {
            Some(f) if f.ts == p.rtp_timestamp => Some(n - 1),
            _ => {
                // A timestamp seen a few frames back: its packets interleave with the frames
                // after it.
                let from = n.saturating_sub(INTERLEAVE_LOOKBACK + 1);
                (from..n.saturating_sub(1)).find(|&j| open[j].ts == p.rtp_timestamp)
            }
        };
        member.push(into.unwrap_or(n));
        match into {
            Some(j) => {
                if j + 1 < n {
                    for f in &mut open[j..] {
                        f.interleaved = true;
                    }
                }
                let f = &mut open[j];
                f.packets += 1;
                f.size = f.size.saturating_add(p.size);
                f.arrival = f.arrival.max(p.arrival);
                f.first_arrival = f.first_arrival.min(p.arrival);
                if p.seq > f.last_seq {
                    f.last_seq = p.seq;
                    f.marker_last = p.marker;
                }
                f.mixed |= f.payload_type != p.payload_type;
            }
            None => open.push(Open {
                ts: p.rtp_timestamp,
                send: p.send,
                first_seq: p.seq,
                last_seq: p.seq,
                first: k,
                packets: 1,
                size: p.size,
                arrival: p.arrival,
                first_arrival: p.arrival,
                marker_last: p.marker,
                payload_type: p.payload_type,
                mixed: false,
                interleaved: false,
            }),
        }
    }
    (open, member)
}

/// The stream's usual timestamp step between adjacent frames (no sequence gap between them):
/// the median of the positive steps; `None` when there is none.
fn frame_spacing(open: &[Open]) -> Option<i64> {
    let mut steps: Vec<i64> = open
        .windows(2)
        .filter(|w| w[1].first_seq == w[0].last_seq + 1)
        .map(|w| w[1].ts - w[0].ts)
        .filter(|&d| d > 0)
        .collect();
    if steps.is_empty() {
        return None;
    }
    let mid = steps.len() / 2;
    Some(*steps.select_nth_unstable(mid).1)
}

/// Whether the step from frame `p` to frame `f` is a timestamp jump: more than ten frame
/// spacings, and more than the arrivals explain by over two seconds (the rule
/// `PlayoutStream` re-bases by). Without a spacing nothing is a jump.
fn is_jump(p: &Open, f: &Open, spacing: Option<i64>) -> bool {
    let Some(spacing) = spacing else {
        return false;
    };
    let sent = f.send - p.send;
    let arrived = f.first_arrival - p.first_arrival;
    f.ts - p.ts > spacing.saturating_mul(10)
        && sent > arrived.max(Nanos::ZERO) + Nanos::from_secs(2)
}

/// The spans during which `packets` (arrival order) had been silent for [`INACTIVE_AFTER`].
pub(super) fn inactive_spans(packets: &[Sample]) -> Vec<(Nanos, Nanos)> {
    let mut out = Vec::new();
    let mut last: Option<Nanos> = None;
    for p in packets {
        if let Some(l) = last {
            if p.arrival - l > INACTIVE_AFTER {
                out.push((l + INACTIVE_AFTER, p.arrival));
            }
            last = Some(l.max(p.arrival));
        } else {
            last = Some(p.arrival);
        }
    }
    if let Some(l) = last {
        out.push((l.saturating_add(INACTIVE_AFTER), Nanos::MAX));
    }
    out
}

#[cfg(test)]
mod tests;
