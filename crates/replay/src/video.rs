//! Video: RTP packets assembled into frames, which is what a video jitter buffer plays.
//!
//! Packets sharing an RTP timestamp form one frame. A frame is complete when every sequence
//! number from its first packet to its marker-bit packet has arrived (or, when the marker
//! never comes, to the packet before the next timestamp's first); it arrives with its last
//! packet, and its size is the sum of its packets'.

use jitterlab_capture::decode::Sample;

/// Frames assembled from one video stream, and how the assembly went.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Assembly {
    /// One unit per complete frame, in completion order: `seq` is the frame's index in
    /// timestamp order, `send` its timestamp's time, `arrival` its last packet's, `size` the
    /// sum of its packets', `rtp_timestamp` its timestamp.
    #[serde(skip)]
    pub frames: Vec<Sample>,
    /// Frames seen (distinct timestamps).
    pub total: u64,
    /// Frames with every packet.
    pub complete: u64,
    /// Frames missing a packet: never shown.
    pub incomplete: u64,
}

/// Assembles `packets` (one video stream, in arrival order) into frames.
pub fn assemble(packets: &[Sample]) -> Assembly {
    // Packets in sequence order, duplicates dropped (the first arrival counts).
    let mut by_seq: Vec<&Sample> = packets.iter().collect();
    by_seq.sort_by_key(|s| (s.seq, s.arrival));
    by_seq.dedup_by_key(|s| s.seq);
    let mut out = Assembly::default();
    let mut i = 0;
    let mut index = 0i64;
    while i < by_seq.len() {
        let first = by_seq[i];
        let mut j = i;
        let mut last_arrival = first.arrival;
        let mut size = 0u32;
        let mut contiguous = true;
        let mut marker = false;
        while j < by_seq.len() && by_seq[j].rtp_timestamp == first.rtp_timestamp {
            let p = by_seq[j];
            if j > i && p.seq != by_seq[j - 1].seq + 1 {
                contiguous = false;
            }
            last_arrival = last_arrival.max(p.arrival);
            size = size.saturating_add(p.size);
            marker |= p.marker;
            j += 1;
        }
        // Without the marker, the frame ends where the next timestamp begins: complete only if
        // no sequence number is missing before it.
        let ends = match by_seq.get(j) {
            Some(next) => marker || next.seq == by_seq[j - 1].seq + 1,
            None => marker,
        };
        out.total += 1;
        if contiguous && ends {
            out.complete += 1;
            out.frames.push(Sample {
                seq: index,
                arrival: last_arrival,
                size,
                marker: true,
                ..first.clone()
            });
        } else {
            out.incomplete += 1;
        }
        index += 1;
        i = j;
    }
    out.frames.sort_by_key(|f| (f.arrival, f.seq));
    out
}
