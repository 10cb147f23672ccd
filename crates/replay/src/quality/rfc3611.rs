//! RFC 3611 (RTCP XR) §4.7.2 burst and gap metrics, from a discrete playout.
//!
//! RFC 3611 splits a stream into *bursts*, where a high share of packets are lost or discarded
//! as late, and the *gaps* between them. With `Gmin` = 16 (the RFC's recommended value), a
//! lost or discarded packet belongs to a gap if at least `Gmin` received packets lie between
//! it and the losses on either side; losses closer together than that form a burst, which
//! runs from its first loss to its last and may hold up to `Gmin − 1` received packets between
//! consecutive losses. A lone loss between long runs of received packets is a gap loss, not a
//! burst.
//!
//! Appendix A.2's algorithm decides this in one pass without looking back, by counting the
//! received packets since the last loss: at each loss, a count of `Gmin` or more closes the
//! cluster of losses before it (a burst if it held two losses or more, else an isolated gap
//! loss) and starts a new one; a shorter count extends the current cluster, the received
//! packets in between becoming part of the burst. jitterlab does the same and keeps the exact
//! counts and durations rather than A.2's Markov-chain estimates of them (for bursts that
//! ended, A.2's burst density `p23/(p23 + p32)` is the same ratio). Here a "lost or discarded
//! packet" is a concealed slot (never arrived, or arrived after its play time), and durations
//! are the slots' media time. The stream's start and end act as long gaps (A.2 has no
//! reporting-interval boundaries to look across either).
//!
//! - `burst_density`: lost or discarded packets in bursts over all packets in bursts (the XR
//!   block carries it ×256 in 8 bits; [`BurstGap::xr_burst_density`]);
//! - `gap_density`: the same within gaps;
//! - `burst_duration_ms`: the mean duration of a burst;
//! - `gap_duration_ms`: the mean duration of a gap.

use jitterlab_capture::Nanos;

use super::Step;

/// RFC 3611's recommended minimum gap length, in received packets.
pub const GMIN: u64 = 16;

/// RFC 3611 §4.7.2's burst and gap figures, with the counts they come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct BurstGap {
    /// Lost or discarded share of packets within bursts (0–1).
    pub burst_density: f64,
    /// Lost or discarded share of packets within gaps (0–1).
    pub gap_density: f64,
    /// Mean burst duration, ms.
    pub burst_duration_ms: f64,
    /// Mean gap duration, ms.
    pub gap_duration_ms: f64,
    /// Bursts.
    pub bursts: u64,
    /// Gaps.
    pub gaps: u64,
    /// Packets within bursts.
    pub burst_packets: u64,
    /// Of those, lost or discarded.
    pub burst_lost: u64,
    /// Packets within gaps.
    pub gap_packets: u64,
    /// Of those, lost or discarded.
    pub gap_lost: u64,
    /// Media time within bursts, ms.
    pub burst_ms: f64,
    /// Media time within gaps, ms.
    pub gap_ms: f64,
}

impl BurstGap {
    /// Adds another stream's counts and recomputes the densities and durations.
    pub fn merge(&mut self, o: &Self) {
        self.bursts += o.bursts;
        self.gaps += o.gaps;
        self.burst_packets += o.burst_packets;
        self.burst_lost += o.burst_lost;
        self.gap_packets += o.gap_packets;
        self.gap_lost += o.gap_lost;
        self.burst_ms += o.burst_ms;
        self.gap_ms += o.gap_ms;
        self.set_ratios();
    }

    /// The burst density as RFC 3611's XR block carries it: `⌊256 × density⌋`, at most 255.
    pub fn xr_burst_density(&self) -> u8 {
        xr(self.burst_density)
    }

    /// The gap density as RFC 3611's XR block carries it.
    pub fn xr_gap_density(&self) -> u8 {
        xr(self.gap_density)
    }

    fn set_ratios(&mut self) {
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let mean = |a: f64, n: u64| if n == 0 { 0.0 } else { a / n as f64 };
        self.burst_density = ratio(self.burst_lost, self.burst_packets);
        self.gap_density = ratio(self.gap_lost, self.gap_packets);
        self.burst_duration_ms = mean(self.burst_ms, self.bursts);
        self.gap_duration_ms = mean(self.gap_ms, self.gaps);
    }
}

fn xr(density: f64) -> u8 {
    (density * 256.0).floor().clamp(0.0, 255.0) as u8
}

/// The cluster of losses being gathered.
#[derive(Clone, Copy, Debug, Default)]
struct Cluster {
    losses: u64,
    /// Received packets between its losses.
    received: u64,
    /// From its first loss's start to its last loss's end.
    ns: i128,
    /// Whether its first loss is the stream's first slot.
    at_start: bool,
}

/// What [`measure`] counts in one pass.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Acc {
    index: u64,
    packets: u64,
    total_ns: i128,
    /// Received packets since the last loss, and their media time.
    since_loss: u64,
    since_loss_ns: i128,
    open: Option<Cluster>,
    bursts: u64,
    burst_packets: u64,
    burst_lost: u64,
    burst_ns: i128,
    isolated: u64,
    first_is_burst: bool,
    last_is_burst: bool,
}

impl Acc {
    #[inline]
    pub(crate) fn push(&mut self, s: &Step<'_>) {
        let d = i128::from(s.slot.duration.as_nanos().max(0));
        let first = self.index == 0;
        self.index += 1;
        self.packets += 1;
        self.total_ns += d;
        if s.played {
            self.since_loss += 1;
            self.since_loss_ns += d;
            return;
        }
        match &mut self.open {
            Some(c) if self.since_loss < GMIN => {
                c.losses += 1;
                c.received += self.since_loss;
                c.ns += self.since_loss_ns + d;
            }
            _ => {
                self.close();
                self.open = Some(Cluster {
                    losses: 1,
                    received: 0,
                    ns: d,
                    at_start: first,
                });
            }
        }
        self.since_loss = 0;
        self.since_loss_ns = 0;
    }

    /// Classifies the open cluster: a burst if it holds two losses or more.
    fn close(&mut self) {
        let Some(c) = self.open.take() else {
            return;
        };
        if c.losses >= 2 {
            self.bursts += 1;
            self.burst_packets += c.losses + c.received;
            self.burst_lost += c.losses;
            self.burst_ns += c.ns;
            if c.at_start {
                self.first_is_burst = true;
            }
            // Set again by a later burst that ends the stream.
            self.last_is_burst = self.since_loss == 0;
        } else {
            self.isolated += 1;
            self.last_is_burst = false;
        }
    }

    pub(crate) fn finish(mut self) -> BurstGap {
        self.close();
        let gaps = if self.packets == 0 {
            0
        } else {
            (self.bursts + 1)
                .saturating_sub(u64::from(self.first_is_burst))
                .saturating_sub(u64::from(self.last_is_burst))
        };
        let ms = |ns: i128| ns as f64 / 1e6;
        let mut b = BurstGap {
            bursts: self.bursts,
            gaps,
            burst_packets: self.burst_packets,
            burst_lost: self.burst_lost,
            gap_packets: self.packets - self.burst_packets,
            gap_lost: self.isolated,
            burst_ms: ms(self.burst_ns),
            gap_ms: ms(self.total_ns - self.burst_ns),
            ..BurstGap::default()
        };
        b.set_ratios();
        b
    }
}

/// RFC 3611's burst and gap metrics for one stream's playout: see the module documentation.
pub fn measure(
    stream: &crate::playout::PlayoutStream<'_>,
    run: &crate::playout::PlayoutRun,
) -> BurstGap {
    let meter = super::Meter::new(stream, None, Nanos::ZERO);
    let mut acc = Acc::default();
    meter.walk(run, |s| acc.push(s));
    acc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playout::PlayoutStream;
    use crate::quality::tests::{fixed, pcma, samples, twenty};

    fn of(lost: &'static [i64], n: i64) -> BurstGap {
        let s = samples(n, |i| (!lost.contains(&i)).then_some(10), |_| false);
        let stream = PlayoutStream::new(0, &s, pcma(), Nanos::ZERO);
        measure(&stream, &fixed(&stream, 50))
    }

    /// 60 slots of 20 ms, lost: 5, 30, 31, 40, 57. Slot 5 has 24 received after it before
    /// the next loss: an isolated gap loss. 30, 31 and 40 lie within Gmin of each other: one
    /// burst from 30 to 40 (11 packets, 3 lost, 220 ms). 57 comes 16 received packets after
    /// 40 — Gmin, so the burst has ended — and only two received follow it: isolated too.
    /// Gaps: 0–29 and 41–59, 49 packets (980 ms) with 2 lost.
    #[test]
    fn an_isolated_loss_is_a_gap_loss_and_gmin_received_ends_a_burst() {
        let b = of(&[5, 30, 31, 40, 57], 60);
        assert_eq!((b.bursts, b.burst_packets, b.burst_lost), (1, 11, 3));
        assert_eq!((b.gaps, b.gap_packets, b.gap_lost), (2, 49, 2));
        assert!((b.burst_density - 3.0 / 11.0).abs() < 1e-12);
        assert!((b.gap_density - 2.0 / 49.0).abs() < 1e-12);
        assert!((b.burst_duration_ms - 220.0).abs() < 1e-9);
        assert!((b.gap_duration_ms - 490.0).abs() < 1e-9);
        // XR's 8-bit forms: ⌊256·3/11⌋ = 69, ⌊256·2/49⌋ = 10.
        assert_eq!((b.xr_burst_density(), b.xr_gap_density()), (69, 10));
    }

    /// The same with the last loss at 56: 15 received after 40, fewer than Gmin, so it joins
    /// the burst (30–56: 27 packets, 4 lost) and the stream has gaps 0–29 and 57–59.
    #[test]
    fn fewer_than_gmin_received_keep_the_burst_going() {
        let b = of(&[5, 30, 31, 40, 56], 60);
        assert_eq!((b.bursts, b.burst_packets, b.burst_lost), (1, 27, 4));
        assert_eq!((b.gaps, b.gap_packets, b.gap_lost), (2, 33, 1));
        assert!((b.burst_duration_ms - 27.0 * 20.0).abs() < 1e-9);
    }

    /// Late packets count as losses ("discarded"), and a burst that reaches the stream's end
    /// leaves one gap before it.
    #[test]
    fn discarded_packets_count_and_a_burst_can_end_the_stream() {
        let s = twenty();
        let stream = PlayoutStream::new(0, &s, pcma(), Nanos::ZERO);
        // Concealed: 3 (late), 8–15, 18: all within Gmin: one burst 3–18 (16 packets, 10 lost).
        let b = measure(&stream, &fixed(&stream, 50));
        assert_eq!((b.bursts, b.burst_packets, b.burst_lost), (1, 16, 10));
        assert_eq!((b.gaps, b.gap_packets, b.gap_lost), (2, 4, 0));
        // At 100 ms slot 3 plays: the burst is 8–18 (11 packets, 9 lost).
        let b = measure(&stream, &fixed(&stream, 100));
        assert_eq!((b.bursts, b.burst_packets, b.burst_lost), (1, 11, 9));
        let tail = samples(
            40,
            |i| Some(if (30..39).contains(&i) { 100 } else { 10 }),
            |_| false,
        );
        let stream = PlayoutStream::new(0, &tail, pcma(), Nanos::ZERO);
        let b = measure(&stream, &fixed(&stream, 50));
        // 30–38 concealed, 39 played: the burst ends one slot before the stream does.
        assert_eq!((b.bursts, b.gaps), (1, 2));
        let tail = samples(40, |i| Some(if i >= 30 { 100 } else { 10 }), |_| false);
        let stream = PlayoutStream::new(0, &tail, pcma(), Nanos::ZERO);
        let b = measure(&stream, &fixed(&stream, 50));
        // 30–39 concealed: the burst ends the stream, one gap before it.
        assert_eq!((b.bursts, b.gaps, b.burst_packets), (1, 1, 10));
        let none = of(&[], 30);
        assert_eq!((none.bursts, none.gaps, none.gap_packets), (0, 1, 30));
        assert_eq!(none.burst_density, 0.0);
    }
}
