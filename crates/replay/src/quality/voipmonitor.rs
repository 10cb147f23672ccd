//! VoIPmonitor's MOS, as its sniffer computes it after each simulated jitter buffer (the
//! `mos_f1`, `mos_f2` and `mos_adapt` CDR columns), from a discrete playout.
//!
//! Follows `voipmonitor/sniffer` at commit 2ec3c37 (April 2026): `jitterbuffer/abstract_jb.c`
//! (`jb_get_and_deliver`: how concealed frames become loss bursts), `rtp.cpp`
//! (`burstr_calculate`, `calculate_mos_g711`, `calculate_mos`, `RTP::save_mos_graph`, the
//! 10-second interval logic in `RTP::read`, `update_seq`'s received count) and
//! `calltable.cpp` (the CDR columns), with the shipped `config/voipmonitor.conf`.
//!
//! **Loss bursts.** Each frame the buffer interpolates, drops as late or finds missing adds one
//! to a running burst length; the next frame delivered ends the burst and records its length
//! in a histogram `loss[len]`. Lengths of 1024 or more are not recorded (the default of
//! `ignore_mos_degradation_for_contiguous_packet_loss_greater_than`); longer than 128 are
//! recorded as 127 for every 128 frames, then the rest. A burst the call ends in is never
//! recorded.
//! jitterlab: a run of concealed slots ended by a played one.
//!
//! **Per interval.** `lost = Σ len·loss[len]`, `bursts = Σ loss[len]` over the bursts recorded
//! since the last interval, `received` the packets counted since then. Fewer than 5 lost
//! counts as no loss. Otherwise `Ppl = lost/received` and
//! `BurstR = (lost/bursts)/(1/(1 − lost/received))` (the mean burst length times the share
//! received), made positive and at least 1. MOS (`calculate_mos_g711`, "G.711 and PLC"):
//! 4.5 when there is no loss, 1 when `Ppl` > 0.5, otherwise
//! `R = 93.2062077233 − 95·Ppl%/(Ppl%/BurstR + 17.2647)` and
//! `MOS = 2.06405 + 0.031738·R − 0.000356641·R² + 2.93143·10⁻⁶·R³`, clamped to [1, 4.5],
//! kept ×10 rounded to an integer. Every codec gets this formula under the default
//! `mos_g729 = no` (the G.729 polynomial behind `mos_g729 = yes` is not implemented).
//!
//! **Intervals.** On each packet, once more than 10 s have passed since the first packet or
//! the last interval's start, VoIPmonitor waits 20 more packets (so that the buffer has
//! judged the packets just before) and closes an interval there. At the end of the call a last
//! interval is closed if more than 1 s has passed since the last one (the shipped config's
//! `savegraph = yes`). The call's figure is the interval MOS averaged over time (each interval
//! weighted by its length, in `float` as VoIPmonitor keeps it), the CDR's `mos_f2_mult10`
//! and `mos_adapt_mult10` (and `mos_min_mult10`, from F2 by default) rounded to an integer;
//! [`VoipMonitor::mos`] is that divided by 10. `mos_min` is the worst interval's.
//!
//! **Received count.** `update_seq`'s RFC 3550 probation: the first two packets of a stream
//! are not counted; every later one is (duplicates too). jitterlab counts the stream's units
//! in arrival order the same way.
//!
//! **Where jitterlab departs.** It does not see the marker bit or the frame type, so a burst
//! ended by a frame that starts a talkspurt (marker set) or follows DTMF is recorded, where
//! VoIPmonitor skips it (jitterlab's playout closes the sequence over DTMF, so the second case
//! does not arise); a burst of exactly 128 after splitting writes past VoIPmonitor's
//! 128-entry histogram (undefined behaviour in C; with its memory layout it takes one from
//! that interval's burst count, which jitterlab reproduces). The `mos_f1_mult10` column
//! truncates rather than rounds the average: [`VoipMonitor::mos_avg_x10`] keeps it unrounded.

use jitterlab_capture::Nanos;

use super::Step;

/// VoIPmonitor's per-call MOS and the loss figures behind it.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct VoipMonitor {
    /// The call's MOS as the CDR shows it (time-weighted interval MOS ×10, rounded, /10);
    /// `None` for a stream with no packets.
    pub mos: Option<f64>,
    /// The worst interval's MOS.
    pub mos_min: Option<f64>,
    /// The time-weighted interval MOS ×10, unrounded.
    pub mos_avg_x10: Option<f64>,
    /// Intervals the call was scored in.
    pub intervals: u32,
    /// Over the whole call: `lost / received` as `burstr_calculate` gives it.
    pub loss_rate: f64,
    /// Over the whole call: the burst ratio as `burstr_calculate` gives it.
    pub burst_ratio: f64,
    /// Frames recorded lost (`Σ len·loss[len]`) over the call.
    pub lost: u64,
    /// Bursts recorded over the call.
    pub bursts: u64,
    /// Packets counted received over the call.
    pub received: u64,
}

impl VoipMonitor {
    /// Keeps the worse of two streams' figures (the lower MOS).
    pub fn merge(&mut self, o: &Self) {
        let worse = match (self.mos, o.mos) {
            (None, _) => true,
            (Some(a), Some(b)) => b < a,
            (Some(_), None) => false,
        };
        if worse {
            *self = *o;
        }
    }
}

/// `calculate_mos_g711`: MOS from a loss ratio (0–1) and a burst ratio.
pub fn mos_g711(ppl: f64, burst_r: f64) -> f64 {
    if ppl == 0.0 || burst_r == 0.0 {
        return 4.5;
    }
    if ppl > 0.5 {
        return 1.0;
    }
    let bpl = 17.2647;
    let r = 93.2062077233 - 95.0 * (ppl * 100.0 / (ppl * 100.0 / burst_r + bpl));
    let mos = 2.06405 + 0.031738 * r - 0.000356641 * r * r + 2.93143 * 1e-6 * r * r * r;
    mos.clamp(1.0, 4.5)
}

/// `burstr_calculate`: `(loss ratio, burst ratio)` from the lost frames and bursts recorded,
/// the packets received in all and since the last interval.
pub fn loss_and_burst(lost: i64, bursts: i64, received: u64, received_since: u64) -> (f64, f64) {
    if lost < 5 {
        return (0.0, 0.0);
    }
    let (lost, bursts, since) = (lost as f64, bursts as f64, received_since as f64);
    let burst_r = if received > 0 && bursts > 0.0 {
        let b = (lost / bursts) / (1.0 / (1.0 - lost / since));
        if b < 0.0 {
            -b
        } else if b < 1.0 {
            1.0
        } else {
            b
        }
    } else {
        0.0
    };
    let loss = if received > 0 { lost / since } else { 0.0 };
    (loss, burst_r)
}

/// Where VoIPmonitor closes an interval: a packet's arrival, the received count there and the
/// time since the first packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The arrival of the packet at which the interval closes.
    pub at: Nanos,
    /// Packets counted received by then.
    pub received: u64,
    /// Milliseconds from the first packet's arrival to this one (`new_mos_time_ms`).
    pub elapsed_ms: u64,
}

/// VoIPmonitor's interval boundaries for a stream's packets in arrival order: they depend on
/// arrivals only, so one list serves every playout of the stream.
pub fn checkpoints(arrivals: impl IntoIterator<Item = Nanos>) -> Vec<Checkpoint> {
    let ms = |t: Nanos| t.as_nanos().div_euclid(1_000_000);
    let mut out = Vec::new();
    let mut first: Option<Nanos> = None;
    let mut last: Option<Nanos> = None;
    let mut count = 0u64;
    let mut last_save: Option<i64> = None;
    let mut last_call_save: Option<i64> = None;
    let mut wait = 0u32;
    for at in arrivals {
        let first_at = *first.get_or_insert(at);
        last = Some(at);
        count += 1;
        let now = ms(at);
        if last_save.unwrap_or(ms(first_at)) + 10_000 < now || wait > 0 {
            if wait == 0 {
                wait = 20;
                last_save = Some(now);
            } else {
                wait -= 1;
                if wait == 0 {
                    out.push(Checkpoint {
                        at,
                        received: count.saturating_sub(2),
                        elapsed_ms: elapsed(first_at, at),
                    });
                    last_call_save = Some(now);
                }
            }
        }
    }
    if let (Some(first), Some(last)) = (first, last)
        && last_call_save.is_none_or(|s| s + 1000 < ms(last))
    {
        out.push(Checkpoint {
            at: last,
            received: count.saturating_sub(2),
            elapsed_ms: elapsed(first, last),
        });
    }
    out
}

fn elapsed(first: Nanos, at: Nanos) -> u64 {
    u64::try_from((at - first).as_nanos() / 1_000_000).unwrap_or(0)
}

/// VoIPmonitor's `ignore_mos_degradation_for_contiguous_packet_loss_greater_than` default.
const IGNORE_FROM: u64 = 1024;

/// What [`measure`] counts in one pass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Acc<'c> {
    checkpoints: &'c [Checkpoint],
    next: usize,
    run: u64,
    interval_lost: i64,
    interval_bursts: i64,
    lost: i64,
    bursts: i64,
    last_received: u64,
    total_received: u64,
    avg: f32,
    mos_time_ms: u64,
    min: u8,
    intervals: u32,
}

impl<'c> Acc<'c> {
    pub(crate) fn new(checkpoints: &'c [Checkpoint], total_received: u64) -> Self {
        Self {
            checkpoints,
            next: 0,
            run: 0,
            interval_lost: 0,
            interval_bursts: 0,
            lost: 0,
            bursts: 0,
            last_received: 0,
            total_received,
            avg: 0.0,
            mos_time_ms: 0,
            min: 45,
            intervals: 0,
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, s: &Step<'_>) {
        // Intervals that closed before this slot played.
        while self.next < self.checkpoints.len() && self.checkpoints[self.next].at < s.at {
            self.close(self.checkpoints[self.next]);
            self.next += 1;
        }
        if !s.played {
            self.run += 1;
            return;
        }
        let mut len = std::mem::take(&mut self.run);
        if len == 0 || len >= IGNORE_FROM {
            return;
        }
        while len > 128 {
            self.record(127);
            len -= 128;
        }
        if len == 128 {
            // loss[128] is the next array's first entry: that interval's bursts drop by one.
            self.interval_bursts -= 1;
        } else {
            self.record(len);
        }
    }

    #[inline]
    fn record(&mut self, len: u64) {
        let len = len as i64;
        self.interval_lost += len;
        self.interval_bursts += 1;
        self.lost += len;
        self.bursts += 1;
    }

    fn close(&mut self, cp: Checkpoint) {
        let (loss, burst_r) = loss_and_burst(
            self.interval_lost,
            self.interval_bursts,
            cp.received,
            cp.received.saturating_sub(self.last_received),
        );
        self.last_received = cp.received;
        let x10 = (mos_g711(loss, burst_r) * 10.0).round() as u8;
        self.min = self.min.min(x10);
        let diff = cp.elapsed_ms.saturating_sub(self.mos_time_ms);
        self.avg = if self.mos_time_ms != 0 && cp.elapsed_ms != 0 {
            (self.avg * self.mos_time_ms as f32 + (u64::from(x10) * diff) as f32)
                / cp.elapsed_ms as f32
        } else {
            f32::from(x10)
        };
        self.mos_time_ms = cp.elapsed_ms;
        self.interval_lost = 0;
        self.interval_bursts = 0;
        self.intervals += 1;
    }

    pub(crate) fn finish(mut self) -> VoipMonitor {
        while self.next < self.checkpoints.len() {
            self.close(self.checkpoints[self.next]);
            self.next += 1;
        }
        let (loss_rate, burst_ratio) = loss_and_burst(
            self.lost,
            self.bursts,
            self.total_received,
            self.total_received,
        );
        let scored = self.intervals > 0;
        VoipMonitor {
            mos: scored.then(|| f64::from(self.avg).round() / 10.0),
            mos_min: scored.then(|| f64::from(self.min) / 10.0),
            mos_avg_x10: scored.then_some(f64::from(self.avg)),
            intervals: self.intervals,
            loss_rate,
            burst_ratio,
            lost: u64::try_from(self.lost).unwrap_or(0),
            bursts: u64::try_from(self.bursts).unwrap_or(0),
            received: self.total_received,
        }
    }
}

/// VoIPmonitor's MOS for one stream's playout: see the module documentation.
pub fn measure(
    stream: &crate::playout::PlayoutStream<'_>,
    run: &crate::playout::PlayoutRun,
) -> VoipMonitor {
    let meter = super::Meter::new(stream, None, Nanos::ZERO);
    let mut acc = Acc::new(&meter.checkpoints, meter.received);
    meter.walk(run, |s| acc.push(s));
    acc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playout::PlayoutStream;
    use crate::quality::tests::{fixed, pcma, samples};

    /// `calculate_mos_g711` and `burstr_calculate` on values worked through their code by
    /// hand: 2 % random loss → R = 93.2062077233 − 95·2/(2 + 17.2647) = 83.3436 → MOS
    /// 3.92898; 10 frames lost in 2 bursts of 500 → BurstR = 5·(1 − 0.02) = 4.9.
    #[test]
    fn formulas_as_the_sniffer_computes_them() {
        assert!((mos_g711(0.02, 1.0) - 3.928982061561).abs() < 1e-9);
        let (loss, burst) = loss_and_burst(10, 2, 500, 500);
        assert!((loss - 0.02).abs() < 1e-15 && (burst - 4.9).abs() < 1e-12);
        // Fewer than 5 lost: no loss, MOS 4.5.
        assert_eq!(loss_and_burst(4, 4, 500, 500), (0.0, 0.0));
        assert_eq!(mos_g711(0.0, 0.0), 4.5);
        // More than half lost: 1. Isolated losses: BurstR clamped up to 1.
        assert_eq!(mos_g711(0.6, 1.0), 1.0);
        assert_eq!(loss_and_burst(10, 10, 500, 500).1, 1.0);
        // Nothing received since the last interval: MOS 1 (lost/0 is infinite).
        let (loss, burst) = loss_and_burst(10, 2, 500, 0);
        assert_eq!(mos_g711(loss, burst), 1.0);
    }

    /// 1500 packets of 20 ms, 10 ms transit, arrivals from 10 ms to 29 990 ms. VoIPmonitor's
    /// intervals: the first packet after 10 010 ms (10 030) starts a 20-packet wait, closed at
    /// 10 430 ms with 520 counted (1500 packets, the first two uncounted); then 20 050 →
    /// 20 450 ms (1021); the call ends at 29 990 ms, more than 1 s later: a last interval
    /// (1498). Late packets (arriving 200 ms after sending, so concealed at a 50 ms delay):
    /// 100–102 and 200–202 (interval 1: 6 lost in 2 bursts of 520: BurstR 3·(1 − 6/520),
    /// MOS 4.056 → 41), none in interval 2 (45), 1100, 1110, … 1190 (interval 3: 10 lost in
    /// 10 bursts of 477: BurstR 1, MOS 3.915 → 39). Time-weighted in float:
    /// (41·10 420 + 45·10 020)/20 440 = 42.96, then (42.96·20 440 + 39·9540)/29 980 = 41.70
    /// → 42 → MOS 4.2; the worst interval 3.9.
    #[test]
    fn a_call_is_scored_over_ten_second_intervals() {
        let late = |i: i64| {
            (100..=102).contains(&i)
                || (200..=202).contains(&i)
                || (1100..=1190).contains(&i) && i % 10 == 0
        };
        let s = samples(1500, |i| Some(if late(i) { 200 } else { 10 }), |_| false);
        let stream = PlayoutStream::new(0, &s, pcma(), Nanos::ZERO);
        let cps = checkpoints(stream.units().iter().map(|u| u.arrival));
        let ms = |c: &Checkpoint| c.at.as_nanos() / 1_000_000;
        assert_eq!(
            cps.iter()
                .map(|c| (ms(c), c.received, c.elapsed_ms))
                .collect::<Vec<_>>(),
            [
                (10_430, 520, 10_420),
                (20_450, 1021, 20_440),
                (29_990, 1498, 29_980)
            ]
        );
        let v = measure(&stream, &fixed(&stream, 50));
        assert_eq!(v.intervals, 3);
        assert_eq!(v.mos, Some(4.2));
        assert_eq!(v.mos_min, Some(3.9));
        assert!((v.mos_avg_x10.unwrap() - 41.700_466).abs() < 1e-4, "{v:?}");
        assert_eq!((v.lost, v.bursts, v.received), (16, 12, 1498));
        assert!((v.loss_rate - 16.0 / 1498.0).abs() < 1e-12);
        assert!((v.burst_ratio - 16.0 / 12.0 * (1.0 - 16.0 / 1498.0)).abs() < 1e-12);
    }

    /// A burst the call ends in is not recorded; a burst of 1024 or more is ignored; one of
    /// 300 is recorded as 127 + 127 + 44 (`while (last_loss_burst > 128)` in
    /// `jb_get_and_deliver`).
    #[test]
    fn burst_lengths_as_the_histogram_records_them() {
        let score = |late: &dyn Fn(i64) -> bool, n: i64| {
            let s = samples(n, |i| Some(if late(i) { 100_000 } else { 10 }), |_| false);
            let stream = PlayoutStream::new(0, &s, pcma(), Nanos::ZERO);
            measure(&stream, &fixed(&stream, 50))
        };
        let v = score(&|i| i >= 40, 50);
        assert_eq!((v.lost, v.bursts), (0, 0), "ends the call");
        let v = score(&|i| (100..1124).contains(&i), 1200);
        assert_eq!((v.lost, v.bursts), (0, 0), "1024: ignored");
        let v = score(&|i| (100..1123).contains(&i), 1200);
        assert_eq!((v.lost, v.bursts), (127 * 8, 8), "1023 = 7·128 + 127");
        let v = score(&|i| (100..400).contains(&i), 500);
        assert_eq!((v.lost, v.bursts), (127 + 127 + 44, 3));
        // Exactly 128 lands past the histogram: nothing recorded for the call.
        let v = score(&|i| (100..228).contains(&i), 500);
        assert_eq!((v.lost, v.bursts, v.mos), (0, 0, Some(4.5)));
    }
}
