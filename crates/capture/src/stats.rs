//! Per-stream receive statistics: counts, loss, duplicates, reordering and RFC 3550 jitter.
//!
//! Two ways to the same figures: [`stats_for`] over a stream's samples in memory, and
//! [`StreamAccumulator`], fed sample by sample in bounded memory (what `jitterlab info` uses,
//! through [`Accumulator`], on traces of any length; see [`summary`] for which figure is
//! computed how).

use std::collections::HashSet;

pub mod summary;
pub mod window;

pub use summary::{Accumulator, SecondPass, StreamSummary, Summary};
pub use window::{SeqCounts, SeqWindow};

/// The sequence numbers seen so far: a bitmap over the stream's range (one bit per number, up
/// to 64 Mi numbers), a hash set for streams whose numbers are spread wider than that.
#[derive(Debug)]
enum SeqSet {
    Bits { base: i64, words: Vec<u64> },
    Hash(HashSet<i64>),
}

impl SeqSet {
    const MAX_BITS: i64 = 1 << 26;

    fn new() -> Self {
        Self::Bits {
            base: i64::MIN,
            words: Vec::new(),
        }
    }

    /// Inserts `seq`; false if it was already there.
    fn insert(&mut self, seq: i64) -> bool {
        if let Self::Bits { base, words } = self {
            if *base == i64::MIN {
                *base = seq.saturating_sub(1 << 16);
            }
            let off = seq
                .checked_sub(*base)
                .filter(|o| (0..Self::MAX_BITS).contains(o));
            match off {
                Some(off) => {
                    let (w, b) = ((off / 64) as usize, off % 64);
                    if w >= words.len() {
                        words.resize((w + 1).next_power_of_two(), 0);
                    }
                    let fresh = words[w] & (1 << b) == 0;
                    words[w] |= 1 << b;
                    return fresh;
                }
                None => {
                    let mut set = HashSet::new();
                    for (i, word) in words.iter().enumerate() {
                        for b in 0..64 {
                            if word & (1 << b) != 0 {
                                set.insert(*base + i as i64 * 64 + b);
                            }
                        }
                    }
                    *self = Self::Hash(set);
                }
            }
        }
        match self {
            Self::Hash(set) => set.insert(seq),
            Self::Bits { .. } => unreachable!("converted above"),
        }
    }

    /// The distinct numbers in ascending order.
    fn sorted(&self) -> Vec<i64> {
        match self {
            Self::Bits { base, words } => {
                let mut out = Vec::new();
                for (i, word) in words.iter().enumerate() {
                    let mut w = *word;
                    while w != 0 {
                        let b = i64::from(w.trailing_zeros());
                        out.push(*base + i as i64 * 64 + b);
                        w &= w - 1;
                    }
                }
                out
            }
            Self::Hash(set) => {
                let mut v: Vec<i64> = set.iter().copied().collect();
                v.sort_unstable();
                v
            }
        }
    }
}

use crate::decode::{Decoded, Sample, StreamInfo};
use crate::time::Nanos;

/// Loss bursts: runs of consecutive sequence numbers never received.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LossBursts {
    /// How many runs.
    pub count: u64,
    /// Mean run length in packets (0 when there is none).
    pub mean_len: f64,
    /// Longest run in packets.
    pub max_len: u64,
}

/// RFC 3550 interarrival jitter (§6.4.1, A.8), in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JitterStats {
    /// The estimate after the last packet.
    pub last_ms: f64,
    /// Wireshark's mean: the sum of the estimate over regular packets divided by all packets.
    pub mean_ms: f64,
    /// The largest estimate over regular packets.
    pub max_ms: f64,
}

/// What one stream's receiver saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamStats {
    /// Packets received, duplicates included (as Wireshark counts them).
    pub packets: u64,
    /// Distinct sequence numbers in `first_seq..=last_seq`.
    pub expected: u64,
    /// Distinct sequence numbers in that range never received: duplicates do not hide loss.
    pub lost: u64,
    /// Packets whose sequence number had already been received.
    pub duplicates: u64,
    /// Packets (not duplicates) that arrived after a higher sequence number.
    pub reordered: u64,
    /// Runs of lost packets.
    pub loss_bursts: LossBursts,
    /// Lowest sequence number received.
    pub first_seq: i64,
    /// Highest sequence number received.
    pub last_seq: i64,
    /// First arrival, local clock.
    pub first_arrival: Nanos,
    /// Last arrival, local clock.
    pub last_arrival: Nanos,
    /// Jitter, or `None` when send times are unknown (RTP without a clock rate).
    pub jitter: Option<JitterStats>,
    /// The figures Wireshark's `rtp,streams` prints (RTP streams only).
    pub wireshark: Option<WiresharkStats>,
}

/// What `tshark -z rtp,streams` reports for a stream, computed its way (Wireshark 4.0
/// `ui/tap-rtp-analysis.c`): see `docs/wireshark.md` for where these differ from jitterlab's own.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WiresharkStats {
    /// Packets, duplicates included.
    pub packets: u64,
    /// Expected (extended sequence range) minus received: negative when duplicates outnumber
    /// losses.
    pub lost: i64,
    /// Smallest inter-arrival time over regular packets, ms.
    pub min_delta_ms: f64,
    /// Running mean inter-arrival time, ms.
    pub mean_delta_ms: f64,
    /// Largest inter-arrival time over regular packets, ms.
    pub max_delta_ms: f64,
    /// Smallest jitter over regular packets, ms (`None`: no clock rate, Wireshark prints -1).
    pub min_jitter_ms: Option<f64>,
    /// Running mean jitter, ms.
    pub mean_jitter_ms: f64,
    /// Largest jitter, ms.
    pub max_jitter_ms: f64,
}

/// Wireshark's per-stream RTP analysis, packet by packet.
///
/// Matches tshark 4.0.17 on every stream of the shared captures (checked in
/// `tests/wireshark.rs`): the expected arrival is the previous packet's arrival plus the media
/// time since the last packet that had a clock rate; a packet whose timestamp is before the
/// stream's first one is "not in time sequence" and left out of min/max/mean, as are marker-bit
/// and comfort-noise packets and the one after comfort noise.
#[derive(Clone, Copy, Debug, Default)]
pub struct WiresharkRtp {
    started: bool,
    /// Times are kept relative to the first packet (as tshark's are), so an epoch-sized
    /// timestamp does not eat the f64's precision.
    base: Nanos,
    time_ms: f64,
    first_timestamp: i64,
    nominal_timestamp: i64,
    pt: u8,
    jitter: f64,
    delta: f64,
    total: u64,
    first_seq: i64,
    last_seq: i64,
    min_delta: Option<f64>,
    mean_delta: f64,
    max_delta: f64,
    min_jitter: Option<f64>,
    mean_jitter: f64,
    max_jitter: f64,
}

/// Comfort noise payload types (RFC 3389 and the old one), which Wireshark leaves out.
fn is_comfort_noise(pt: u8) -> bool {
    pt == 13 || pt == 19
}

impl WiresharkRtp {
    /// Feeds one packet in capture order: arrival time, extended sequence number and timestamp,
    /// payload type, marker bit and this packet's clock rate (0: unknown or telephone-event).
    pub fn push(
        &mut self,
        arrival: Nanos,
        seq: i64,
        timestamp: i64,
        pt: u8,
        marker: bool,
        clock: u32,
    ) {
        if !self.started {
            *self = Self {
                started: true,
                base: arrival,
                time_ms: 0.0,
                first_timestamp: timestamp,
                nominal_timestamp: timestamp,
                pt,
                total: 1,
                first_seq: seq,
                last_seq: seq,
                ..Self::default()
            };
            return;
        }
        let now = (arrival - self.base).as_millis_f64();
        let in_time_sequence = self.first_timestamp <= timestamp;
        let irregular =
            !in_time_sequence || marker || is_comfort_noise(pt) || is_comfort_noise(self.pt);
        self.pt = pt;
        let mut current_jitter = 0.0;
        if clock != 0 {
            // Wireshark divides by `clock_rate / 1000` in integer arithmetic (11025 Hz → 11).
            let per_ms = f64::from(clock / 1000);
            let expected = self.time_ms + (timestamp - self.nominal_timestamp) as f64 / per_ms;
            let diff = (now - expected).abs();
            current_jitter = (15.0 * self.jitter + diff) / 16.0;
            self.jitter = current_jitter;
            self.nominal_timestamp = timestamp;
        }
        self.delta = now - self.time_ms;
        if !irregular {
            let n = self.total as f64;
            self.max_delta = self.max_delta.max(self.delta);
            self.min_delta = Some(self.min_delta.map_or(self.delta, |m| m.min(self.delta)));
            self.mean_delta = (self.mean_delta * (n - 1.0) + self.delta) / n;
            if clock != 0 {
                self.max_jitter = self.max_jitter.max(self.jitter);
                self.mean_jitter = (self.mean_jitter * (n - 1.0) + current_jitter) / n;
                self.min_jitter = Some(self.min_jitter.map_or(self.jitter, |m| m.min(self.jitter)));
            }
        }
        self.time_ms = now;
        self.first_seq = self.first_seq.min(seq);
        self.last_seq = self.last_seq.max(seq);
        self.total += 1;
    }

    /// The figures so far.
    pub fn stats(&self) -> WiresharkStats {
        let expected = if self.total == 0 {
            0
        } else {
            self.last_seq - self.first_seq + 1
        };
        WiresharkStats {
            packets: self.total,
            lost: expected - self.total as i64,
            min_delta_ms: self.min_delta.unwrap_or(0.0),
            mean_delta_ms: self.mean_delta,
            max_delta_ms: self.max_delta,
            min_jitter_ms: self.min_jitter,
            mean_jitter_ms: self.mean_jitter,
            max_jitter_ms: self.max_jitter,
        }
    }
}

impl StreamStats {
    /// `last_arrival − first_arrival`.
    pub fn duration(&self) -> Nanos {
        self.last_arrival - self.first_arrival
    }

    /// Packets per second over the duration (0 for a single packet).
    pub fn mean_rate(&self) -> f64 {
        let secs = self.duration().as_secs_f64();
        if secs > 0.0 {
            self.packets as f64 / secs
        } else {
            0.0
        }
    }
}

/// The RFC 3550 jitter estimator, with Wireshark's rules for which packets count.
///
/// `J ← J + (|D| − J)/16` with `D = (Rᵢ − Rᵢ₋₁) − (Sᵢ − Sᵢ₋₁)` over packets in send-time order
/// (C16): a packet whose send time goes backwards neither updates nor counts. Clock offset
/// between the hosts cancels in `D`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Jitter {
    prev: Option<(Nanos, Nanos)>,
    j_ms: f64,
    sum_ms: f64,
    max_ms: f64,
    packets: u64,
}

impl Jitter {
    /// Feeds one packet: its send time (sender clock), arrival (local clock), and whether it is
    /// "regular" (Wireshark skips marker-bit packets in min/max/mean).
    pub fn push(&mut self, send: Nanos, arrival: Nanos, regular: bool) {
        self.packets += 1;
        match self.prev {
            None => self.prev = Some((send, arrival)),
            Some((ps, _)) if send < ps => {}
            Some((ps, pa)) => {
                let d = ((arrival - pa) - (send - ps)).abs().as_millis_f64();
                self.j_ms += (d - self.j_ms) / 16.0;
                self.prev = Some((send, arrival));
                if regular {
                    self.sum_ms += self.j_ms;
                    self.max_ms = self.max_ms.max(self.j_ms);
                }
            }
        }
    }

    /// The current estimate in ms.
    pub fn current_ms(&self) -> f64 {
        self.j_ms
    }

    /// Last, mean and max.
    pub fn stats(&self) -> JitterStats {
        JitterStats {
            last_ms: self.j_ms,
            mean_ms: if self.packets > 0 {
                self.sum_ms / self.packets as f64
            } else {
                0.0
            },
            max_ms: self.max_ms,
        }
    }
}

/// One stream's [`StreamStats`], fed its samples one by one in arrival order: the same
/// figures as [`stats_for`] (see [`SeqWindow`] for the one case they may differ), in memory
/// that does not grow with the stream.
#[derive(Clone, Debug, Default)]
pub struct StreamAccumulator {
    packets: u64,
    first_arrival: Nanos,
    last_arrival: Nanos,
    seqs: SeqWindow,
    jitter: Jitter,
    wireshark: WiresharkRtp,
}

impl StreamAccumulator {
    /// Feeds one received sample.
    pub fn push(&mut self, sample: &Sample) {
        if let Some(pt) = sample.payload_type {
            self.wireshark.push(
                sample.arrival,
                sample.seq,
                sample.rtp_timestamp,
                pt,
                sample.marker,
                sample.rtp_clock,
            );
        }
        if self.packets == 0 {
            self.first_arrival = sample.arrival;
            self.last_arrival = sample.arrival;
        }
        self.packets += 1;
        self.first_arrival = self.first_arrival.min(sample.arrival);
        self.last_arrival = self.last_arrival.max(sample.arrival);
        self.seqs.insert(sample.seq);
        self.jitter
            .push(sample.send, sample.arrival, !sample.marker);
    }

    /// Packets fed so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Packets too far behind the highest sequence number to be placed (see [`SeqWindow`]).
    pub fn beyond_window(&self) -> u64 {
        self.seqs.counts().beyond
    }

    /// The figures so far, for the stream `info` describes (as it is known now).
    pub fn stats(&self, info: &StreamInfo) -> StreamStats {
        if self.packets == 0 {
            return StreamStats::default();
        }
        let c = self.seqs.counts();
        let expected = (c.last - c.first) as u64 + 1;
        StreamStats {
            packets: self.packets,
            expected,
            lost: expected - c.distinct,
            duplicates: c.duplicates,
            reordered: c.reordered,
            loss_bursts: LossBursts {
                count: c.bursts.count,
                mean_len: if c.bursts.count > 0 {
                    c.bursts.total as f64 / c.bursts.count as f64
                } else {
                    0.0
                },
                max_len: c.bursts.max,
            },
            first_seq: c.first,
            last_seq: c.last,
            first_arrival: self.first_arrival,
            last_arrival: self.last_arrival,
            jitter: info.has_send_times().then(|| self.jitter.stats()),
            wireshark: info.ssrc.map(|_| self.wireshark.stats()),
        }
    }
}

/// Computes statistics for every stream of a decoded trace (received samples only).
pub fn stream_stats(decoded: &Decoded) -> Vec<StreamStats> {
    decoded
        .streams
        .iter()
        .map(|info| stats_for(info, decoded.stream_samples(info.id)))
        .collect()
}

/// Computes one stream's statistics from its samples in arrival order.
pub fn stats_for<'a>(info: &StreamInfo, samples: impl Iterator<Item = &'a Sample>) -> StreamStats {
    let mut s = StreamStats {
        first_seq: i64::MAX,
        last_seq: i64::MIN,
        first_arrival: Nanos::MAX,
        last_arrival: Nanos::MIN,
        ..StreamStats::default()
    };
    let mut seen = SeqSet::new();
    let mut jitter = Jitter::default();
    let mut highest = i64::MIN;
    let mut wireshark = info.ssrc.map(|_| WiresharkRtp::default());
    for sample in samples {
        if let (Some(w), Some(pt)) = (&mut wireshark, sample.payload_type) {
            w.push(
                sample.arrival,
                sample.seq,
                sample.rtp_timestamp,
                pt,
                sample.marker,
                sample.rtp_clock,
            );
        }
        s.packets += 1;
        s.first_arrival = s.first_arrival.min(sample.arrival);
        s.last_arrival = s.last_arrival.max(sample.arrival);
        if !seen.insert(sample.seq) {
            s.duplicates += 1;
        } else if sample.seq < highest {
            s.reordered += 1;
        }
        highest = highest.max(sample.seq);
        jitter.push(sample.send, sample.arrival, !sample.marker);
    }
    if s.packets == 0 {
        return StreamStats::default();
    }
    let seqs = seen.sorted();
    s.first_seq = seqs[0];
    s.last_seq = seqs[seqs.len() - 1];
    s.expected = (s.last_seq - s.first_seq) as u64 + 1;
    s.lost = s.expected - seqs.len() as u64;
    let mut burst_total = 0u64;
    for pair in seqs.windows(2) {
        let gap = (pair[1] - pair[0] - 1) as u64;
        if gap > 0 {
            s.loss_bursts.count += 1;
            s.loss_bursts.max_len = s.loss_bursts.max_len.max(gap);
            burst_total += gap;
        }
    }
    if s.loss_bursts.count > 0 {
        s.loss_bursts.mean_len = burst_total as f64 / s.loss_bursts.count as f64;
    }
    s.jitter = info.has_send_times().then(|| jitter.stats());
    s.wireshark = wireshark.map(|w| w.stats());
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 3550 example from anchors.md §7: 8 kHz, ts 0/160/320/480, arrivals 0/20/45/60 ms
    /// → J = 0, 2.5, 4.84375 in RTP timestamp units (C16); this estimator reports ms, so
    /// the values are converted at 8 units per ms.
    #[test]
    fn c16_rfc3550_jitter_vector() {
        let mut j = Jitter::default();
        let mut got = Vec::new();
        for (ts, arr) in [(0, 0), (160, 20), (320, 45), (480, 60)] {
            j.push(
                Nanos(ts * 1_000_000_000 / 8000),
                Nanos::from_millis(arr),
                true,
            );
            got.push(j.current_ms() * 8.0);
        }
        assert_eq!(got, vec![0.0, 0.0, 2.5, 4.84375]);
    }

    #[test]
    fn c16_clock_offset_cancels() {
        let mut a = Jitter::default();
        let mut b = Jitter::default();
        for (send, arr) in [(0, 3), (20, 27), (40, 41), (60, 70)] {
            a.push(Nanos::from_millis(send), Nanos::from_millis(arr), true);
            b.push(
                Nanos::from_millis(send + 5_000),
                Nanos::from_millis(arr),
                true,
            );
        }
        assert_eq!(a.stats(), b.stats());
    }

    fn probe_info() -> StreamInfo {
        StreamInfo {
            id: 0,
            ssrc: None,
            probe_stream: Some(0),
            src: None,
            dst: None,
            direction: crate::trace::Direction::Unknown,
            payload_type: None,
            clock_rate: None,
            channels: vec![],
            protocol: "probe",
            lane: None,
            send_times: true,
            clock_inferred: None,
            send_inferred: None,
            encoding: None,
            media: None,
        }
    }

    fn sample(seq: i64, send_ms: i64, arr_ms: i64) -> Sample {
        Sample::new(
            0,
            seq,
            Nanos::from_millis(send_ms),
            Nanos::from_millis(arr_ms),
        )
    }

    #[test]
    fn widely_spread_sequence_numbers_are_counted_exactly() {
        let info = probe_info();
        // Beyond the bitmap's range: the set switches to hashing without losing what it saw.
        let seqs = [5, 7, 5, 1 << 40, 6, 1 << 40, -3];
        let samples: Vec<Sample> = seqs.iter().map(|&q| sample(q, 0, 0)).collect();
        let s = stats_for(&info, samples.iter());
        assert_eq!(
            (s.packets, s.duplicates, s.first_seq, s.last_seq),
            (7, 2, -3, 1 << 40)
        );
        assert_eq!(s.lost, (1u64 << 40) + 4 - 5);
        assert_eq!(s.reordered, 2);
    }

    #[test]
    fn duplicates_do_not_hide_loss() {
        let info = probe_info();
        // 1 2 2 5 4 8: lost 3, 6, 7 (bursts of 1 and 2), one duplicate, one reordered.
        let samples: Vec<Sample> = [1, 2, 2, 5, 4, 8]
            .iter()
            .enumerate()
            .map(|(i, &q)| sample(q, q * 20, i as i64 * 20 + 30))
            .collect();
        let s = stats_for(&info, samples.iter());
        assert_eq!(
            (s.packets, s.expected, s.lost, s.duplicates, s.reordered),
            (6, 8, 3, 1, 1)
        );
        assert_eq!(
            s.loss_bursts,
            LossBursts {
                count: 2,
                mean_len: 1.5,
                max_len: 2
            }
        );
        assert!(s.jitter.is_some());
    }
}
