//! The ITU-T G.107 E-model (06/2015 edition), fed from a discrete playout, and baresip's
//! simplified "pseudo-MOS".
//!
//! **The model** (G.107 §7): the transmission rating `R = Ro − Is − Id − Ie,eff + A`, with
//! `Ro` the basic signal-to-noise ratio (§7.2), `Is` the impairments simultaneous with speech
//! (§7.3: loudness, sidetone, quantisation), `Id` the delay impairments (§7.4: talker echo
//! `Idte`, listener echo `Idle`, absolute delay `Idd`), `Ie,eff` the codec and its packet
//! loss (§7.5), `A` the advantage factor (§7.6). [`Params::default`] holds §7.7's Table 3
//! defaults, with which `R` = 93.2; [`mos`] is Annex B's conversion (4.41 at 93.2).
//! [`Params`] lets every input be set, but jitterlab's own figures change only the delays,
//! the codec and the loss; G.107's adjustments for a sidetone masking rating below 9 dB
//! (`TERVs`) are applied, those beyond it (very high STMR) are not.
//!
//! **From a playout** ([`measure`]):
//! - *Mouth-to-ear delay* `Ta`: jitterlab knows each packet's send time on the sender's clock
//!   and its arrival and play times on the local clock, but not the offset between the clocks;
//!   the stream's `offset` makes the fastest packet's transit zero. So the delay from the
//!   sender's clock to the ear is the mean over played slots of `at + offset − send` (transit
//!   above the fastest packet's, plus the time waiting in the buffer), plus an **assumed
//!   one-way network delay** for the fastest packet (default 0: jitterlab does not invent a
//!   path; set it from a ping or RTCP's round trip), plus packetisation (the stream's usual
//!   frame duration) and the codec's look-ahead ([`Codec::lookahead`]).
//! - *Echo*: `T = Ta` and `Tr = 2·Ta` (the talker's echo path and the four-wire loop both
//!   span the connection), with G.107's default echo losses (TELR 65 dB, WEPL 110 dB): a
//!   connection whose echo is controlled.
//! - *Loss* `Ppl`: the share of slots concealed (lost or discarded as late), in percent.
//! - *Burstiness* `BurstR` (G.107 §7.5): `1/(p + q)` with `p` the probability that a slot is
//!   concealed after a played one and `q` that it is played after a concealed one, counted
//!   over the playout's sequence of played/concealed slots (a two-state Markov model); when a
//!   stream has only one of the two transitions, G.107's equivalent forms
//!   `BurstR = (Ppl/100)/p = (1 − Ppl/100)/q` are used; no loss gives 1.
//! - *Codec* `Ie`, `Bpl`: ITU-T G.113 Appendix I via [`Codec`], from the stream's encoding or
//!   payload type, or given.
//!
//! **baresip** ([`baresip_mos`]): the "pseudo-MOS" baresip's `src/mos.c` computed (removed in
//! baresip 1.1, commit 239c249b; after Perl's `Algorithm::MOS`): an effective latency
//! `rtt + 2·jitter + 10 ms`, `R = 93.2 − latency/40` below 160 ms and
//! `93.2 − (latency − 120)/10` from it, minus 2.5 per lost packet, clamped to [0, 100], and
//! `MOS = 1 + 0.035·R + 7·10⁻⁶·R·(R − 60)·(100 − R)` capped at 5 (not floored at 1). Its own
//! function, with its own inputs; [`measure`] does not use it.

use jitterlab_capture::Nanos;

use super::Step;
use super::codec::{Codec, Impairment};

/// Every input of the E-model (G.107 Table 3 names), in dB, ms and R-scale units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Send loudness rating, dB.
    pub slr: f64,
    /// Receive loudness rating, dB.
    pub rlr: f64,
    /// Sidetone masking rating, dB.
    pub stmr: f64,
    /// D-value of the telephone, send side.
    pub ds: f64,
    /// D-value of the telephone, receive side.
    pub dr: f64,
    /// Talker echo loudness rating, dB.
    pub telr: f64,
    /// Weighted echo path loss, dB.
    pub wepl: f64,
    /// Mean one-way delay of the echo path, ms.
    pub t: f64,
    /// Round-trip delay in a four-wire loop, ms.
    pub tr: f64,
    /// Absolute delay in echo-free connections, ms.
    pub ta: f64,
    /// Number of quantisation distortion units.
    pub qdu: f64,
    /// Equipment impairment factor.
    pub ie: f64,
    /// Packet-loss robustness factor.
    pub bpl: f64,
    /// Random packet-loss probability, percent.
    pub ppl: f64,
    /// Burst ratio.
    pub burst_r: f64,
    /// Circuit noise referred to the 0 dBr point, dBm0p.
    pub nc: f64,
    /// Noise floor at the receive side, dBmp.
    pub nfor: f64,
    /// Room noise at the send side, dB(A).
    pub ps: f64,
    /// Room noise at the receive side, dB(A).
    pub pr: f64,
    /// Advantage factor.
    pub a: f64,
    /// Delay sensitivity (G.107 §7.4, `sT`).
    pub s_t: f64,
    /// Minimum perceivable delay, ms (`mT`).
    pub m_t: f64,
}

impl Default for Params {
    /// G.107 Table 3.
    fn default() -> Self {
        Self {
            slr: 8.0,
            rlr: 2.0,
            stmr: 15.0,
            ds: 3.0,
            dr: 3.0,
            telr: 65.0,
            wepl: 110.0,
            t: 0.0,
            tr: 0.0,
            ta: 0.0,
            qdu: 1.0,
            ie: 0.0,
            bpl: 4.3,
            ppl: 0.0,
            burst_r: 1.0,
            nc: -70.0,
            nfor: -64.0,
            ps: 35.0,
            pr: 35.0,
            a: 0.0,
            s_t: 1.0,
            m_t: 100.0,
        }
    }
}

/// The E-model's terms for one set of inputs.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Rating {
    /// Basic signal-to-noise ratio `Ro`.
    pub ro: f64,
    /// Simultaneous impairment factor `Is`.
    pub is: f64,
    /// Delay impairment factor `Id` (`Idte + Idle + Idd`).
    pub id: f64,
    /// Effective equipment impairment factor `Ie,eff`.
    pub ie_eff: f64,
    /// The transmission rating `R`.
    pub r: f64,
}

/// `10·lg(x)`.
fn db(x: f64) -> f64 {
    10.0 * x.log10()
}

/// `10^(x/10)`.
fn undb(x: f64) -> f64 {
    10f64.powf(x / 10.0)
}

/// The transmission rating factor for `p` (G.107 §7.1–7.6).
pub fn rating(p: &Params) -> Rating {
    // §7.2: basic signal-to-noise ratio.
    let olr = p.slr + p.rlr;
    let lstr = p.stmr + p.dr;
    let nfo = p.nfor + p.rlr;
    let pre = p.pr + db(1.0 + undb(10.0 - lstr));
    let nor = p.rlr - 121.0 + pre + 0.008 * (pre - 35.0).powi(2);
    let nos = p.ps - p.slr - p.ds - 100.0 + 0.004 * (p.ps - olr - p.ds - 14.0).powi(2);
    let no = db(undb(p.nc) + undb(nos) + undb(nor) + undb(nfo));
    let ro = 15.0 - 1.5 * (p.slr + no);

    // §7.3: simultaneous impairments.
    let q = 37.0 - 15.0 * p.qdu.max(f64::MIN_POSITIVE).log10();
    let g = 1.07 + 0.258 * q + 0.0602 * q * q;
    let z = 46.0 / 30.0 - g / 40.0;
    let y = (ro - 100.0) / 15.0 + 46.0 / 8.4 - g / 9.0;
    let iq = 15.0 * (1.0 + 10f64.powf(y) + 10f64.powf(z)).log10();
    let stmro = -db(undb(-p.stmr) + (-p.t / 4.0).exp() * undb(-p.telr));
    let ist = 12.0 * (1.0 + ((stmro - 13.0) / 6.0).powi(8)).powf(1.0 / 8.0)
        - 28.0 * (1.0 + ((stmro + 1.0) / 19.4).powi(35)).powf(1.0 / 35.0)
        - 13.0 * (1.0 + ((stmro - 3.0) / 33.0).powi(13)).powf(1.0 / 13.0)
        + 29.0;
    let xolr = olr + 0.2 * (64.0 + no - p.rlr);
    let iolr = 20.0 * ((1.0 + (xolr / 8.0).powi(8)).powf(1.0 / 8.0) - xolr / 8.0);
    let is = iolr + ist + iq;

    // §7.4: delay impairments.
    let idte = if p.t < 1.0 {
        // Echo this close is heard as sidetone.
        0.0
    } else {
        let mut terv = p.telr - 40.0 * ((1.0 + p.t / 10.0) / (1.0 + p.t / 150.0)).log10()
            + 6.0 * (-0.3 * p.t * p.t).exp();
        if p.stmr < 9.0 {
            terv += ist / 2.0;
        }
        let roe = -1.5 * (no - p.rlr);
        let re = 80.0 + 2.5 * (terv - 14.0);
        let d = roe - re;
        (d / 2.0 + (d * d / 4.0 + 100.0).sqrt() - 1.0) * (1.0 - (-p.t).exp())
    };
    let rle = 10.5 * (p.wepl + 7.0) * (p.tr + 1.0).powf(-0.25);
    let idle = (ro - rle) / 2.0 + ((ro - rle).powi(2) / 4.0 + 169.0).sqrt();
    let idd = if p.ta > p.m_t {
        let x = (p.ta / p.m_t).log10() / 2f64.log10();
        let k = 6.0 * p.s_t;
        25.0 * ((1.0 + x.powf(k)).powf(1.0 / k) - 3.0 * (1.0 + (x / 3.0).powf(k)).powf(1.0 / k)
            + 2.0)
    } else {
        0.0
    };
    let id = idte + idle + idd;

    // §7.5: equipment impairment under packet loss.
    let ie_eff = ie_eff(p.ie, p.bpl, p.ppl, p.burst_r);
    Rating {
        ro,
        is,
        id,
        ie_eff,
        r: ro - is - id - ie_eff + p.a,
    }
}

/// G.107 §7.5: `Ie,eff = Ie + (95 − Ie)·Ppl/(Ppl/BurstR + Bpl)`, `ppl` in percent.
pub fn ie_eff(ie: f64, bpl: f64, ppl: f64, burst_r: f64) -> f64 {
    if ppl <= 0.0 {
        return ie;
    }
    ie + (95.0 - ie) * ppl / (ppl / burst_r + bpl)
}

/// G.107 Annex B: the estimated conversational MOS (MOS_CQE) of a rating `r`.
pub fn mos(r: f64) -> f64 {
    if r <= 0.0 {
        1.0
    } else if r >= 100.0 {
        4.5
    } else {
        1.0 + 0.035 * r + r * (r - 60.0) * (100.0 - r) * 7.0e-6
    }
}

/// baresip's pseudo-MOS (see the module documentation): `(R, MOS)` from the round trip and
/// jitter in ms and a count of lost packets.
pub fn baresip_mos(rtt_ms: f64, jitter_ms: f64, packets_lost: u32) -> (f64, f64) {
    let latency = rtt_ms + jitter_ms * 2.0 + 10.0;
    let r = if latency < 160.0 {
        93.2 - latency / 40.0
    } else {
        93.2 - (latency - 120.0) / 10.0
    };
    let r = (r - f64::from(packets_lost) * 2.5).clamp(0.0, 100.0);
    let mos = (1.0 + 0.035 * r + 0.000_007 * r * (r - 60.0) * (100.0 - r)).min(5.0);
    (r, mos)
}

/// The E-model's figures for one stream's playout.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct EModel {
    /// The codec the figures assume.
    pub codec: &'static str,
    /// Its `Ie`, `Bpl` and their source.
    pub impairment: Impairment,
    /// Whether the codec was not given nor known from the stream, and G.711 was assumed.
    pub codec_assumed: bool,
    /// Mouth-to-ear delay `Ta`, ms (see the module documentation).
    pub mouth_to_ear_ms: f64,
    /// Of which the assumed one-way network delay of the fastest packet, ms.
    pub network_delay_ms: f64,
    /// Packet loss `Ppl`: slots concealed, percent.
    pub ppl: f64,
    /// Burst ratio `BurstR`.
    pub burst_r: f64,
    /// The model's terms.
    pub rating: Rating,
    /// The transmission rating `R`.
    pub r_factor: f64,
    /// G.107 Annex B MOS.
    pub mos: f64,
}

/// What [`measure`] counts in one pass.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Acc {
    slots: u64,
    concealed: u64,
    /// Transitions played→played, played→concealed, concealed→played, concealed→concealed.
    pp: u64,
    pc: u64,
    cp: u64,
    cc: u64,
    last: Option<bool>,
    played: u64,
    /// Σ (at + offset − send) over played slots, ns.
    delay_sum: i128,
}

impl Acc {
    #[inline]
    pub(crate) fn push(&mut self, s: &Step<'_>, offset: Nanos) {
        self.slots += 1;
        match (self.last, s.played) {
            (Some(true), true) => self.pp += 1,
            (Some(true), false) => self.pc += 1,
            (Some(false), true) => self.cp += 1,
            (Some(false), false) => self.cc += 1,
            (None, _) => {}
        }
        self.last = Some(s.played);
        if s.played {
            self.played += 1;
            self.delay_sum += i128::from((s.at + offset - s.slot.send).as_nanos());
        } else {
            self.concealed += 1;
        }
    }

    pub(crate) fn finish(
        &self,
        codec: Codec,
        codec_assumed: bool,
        network_delay: Nanos,
        frame: Nanos,
    ) -> EModel {
        let ppl = if self.slots == 0 {
            0.0
        } else {
            100.0 * self.concealed as f64 / self.slots as f64
        };
        let burst_r = burst_ratio(ppl / 100.0, self.pp, self.pc, self.cp, self.cc);
        let buffer_ns = if self.played == 0 {
            0.0
        } else {
            self.delay_sum as f64 / self.played as f64
        };
        let ta = (buffer_ns + (network_delay + frame + codec.lookahead()).as_nanos() as f64) / 1e6;
        let impairment = codec.impairment();
        let params = Params {
            t: ta,
            ta,
            tr: 2.0 * ta,
            ie: impairment.ie,
            bpl: impairment.bpl,
            ppl,
            burst_r,
            ..Params::default()
        };
        let rating = rating(&params);
        EModel {
            codec: codec.name(),
            impairment,
            codec_assumed,
            mouth_to_ear_ms: ta,
            network_delay_ms: network_delay.as_nanos() as f64 / 1e6,
            ppl,
            burst_r,
            rating,
            r_factor: rating.r,
            mos: mos(rating.r),
        }
    }
}

/// G.107's burst ratio from a two-state Markov model's transition counts (see the module
/// documentation); `loss` is the loss probability (0–1).
pub fn burst_ratio(loss: f64, pp: u64, pc: u64, cp: u64, cc: u64) -> f64 {
    let p = if pp + pc > 0 {
        pc as f64 / (pp + pc) as f64
    } else {
        0.0
    };
    let q = if cp + cc > 0 {
        cp as f64 / (cp + cc) as f64
    } else {
        0.0
    };
    if p > 0.0 && q > 0.0 {
        1.0 / (p + q)
    } else if p > 0.0 {
        loss / p
    } else if q > 0.0 {
        (1.0 - loss) / q
    } else {
        1.0
    }
}

/// The E-model for one stream's playout: see the module documentation. `codec` overrides the
/// stream's own; `network_delay` is the assumed one-way network delay of its fastest packet.
pub fn measure(
    stream: &crate::playout::PlayoutStream<'_>,
    run: &crate::playout::PlayoutRun,
    codec: Option<Codec>,
    network_delay: Nanos,
) -> EModel {
    let meter = super::Meter::new(stream, codec, network_delay);
    let mut acc = Acc::default();
    meter.walk(run, |s| acc.push(s, stream.offset));
    acc.finish(meter.codec, meter.codec_assumed, network_delay, meter.frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// G.107 §7.7: the default values "result in a very high quality with a rating factor of
    /// R = 93.2"; Annex B turns it into MOS 4.41. VoIPmonitor's G.711 formula (`rtp.cpp`
    /// `calculate_mos_g711`) starts from the same rating to ten digits: 93.2062077233.
    #[test]
    fn g107_defaults_give_r_93_2_and_mos_4_41() {
        let r = rating(&Params::default());
        assert!(close(r.r, 93.2062077233, 1e-9), "{r:?}");
        // The terms as G.107's defaults give them: Ro 94.77, Is 1.41, Id 0.15.
        assert!(close(r.ro, 94.77, 0.005) && close(r.is, 1.41, 0.005) && close(r.id, 0.15, 0.005));
        assert!(close(mos(r.r), 4.41, 0.005), "{}", mos(r.r));
        assert_eq!(r.ie_eff, 0.0);
    }

    /// G.109 Table 1 (its categories on G.107 Annex B's curve): R 90/80/70/60/50 are MOS
    /// 4.34/4.03/3.60/3.10/2.58; and the curve's ends.
    #[test]
    fn annex_b_conversion_matches_g109_categories() {
        for (r, m) in [
            (90.0, 4.34),
            (80.0, 4.03),
            (70.0, 3.60),
            (60.0, 3.10),
            (50.0, 2.58),
        ] {
            // G.109 rounds its limits to two decimals (80 → 4.024 is listed as 4.03).
            assert!(close(mos(r), m, 0.0061), "R {r}: {}", mos(r));
        }
        assert_eq!(mos(-3.0), 1.0);
        assert_eq!(mos(120.0), 4.5);
    }

    /// Ie,eff of G.729A + VAD (Ie 11, Bpl 19) and G.723.1 + VAD (Ie 15, Bpl 16.1) under
    /// random loss against G.113 Appendix I's Ie-versus-loss tables (rounded to integers).
    #[test]
    fn ie_eff_follows_g113_loss_tables() {
        for (ppl, want) in [
            (0.5, 13.0),
            (1.0, 15.0),
            (2.0, 19.0),
            (4.0, 26.0),
            (8.0, 36.0),
            (16.0, 49.0),
        ] {
            let got = ie_eff(11.0, 19.0, ppl, 1.0);
            assert!(close(got, want, 0.6), "G.729A {ppl} %: {got}");
        }
        for (ppl, want) in [(0.5, 17.0), (2.0, 24.0), (8.0, 41.0), (16.0, 55.0)] {
            let got = ie_eff(15.0, 16.1, ppl, 1.0);
            assert!(close(got, want, 0.6), "G.723.1 {ppl} %: {got}");
        }
        // Bursty loss hurts more at the same rate.
        assert!(ie_eff(0.0, 25.1, 5.0, 2.0) > ie_eff(0.0, 25.1, 5.0, 1.0));
    }

    /// Cole and Rosenbluth ("Voice over IP performance monitoring", ACM CCR 31(2), 2001)
    /// fitted `Id ≈ 0.024·d + 0.11·(d − 177.3)·H(d − 177.3)` to the E-model with its default
    /// echo values (T = Ta, Tr = 2·Ta): the full model stays within half an R unit of it.
    #[test]
    fn delay_impairment_follows_cole_rosenbluth() {
        let id = |d: f64| {
            rating(&Params {
                t: d,
                ta: d,
                tr: 2.0 * d,
                ..Params::default()
            })
            .id
        };
        let fit = |d: f64| 0.024 * d + if d > 177.3 { 0.11 * (d - 177.3) } else { 0.0 };
        // Their fit spans the delays VoIP planning cares about; past 300 ms the straight line
        // leaves the curve.
        for d in [50.0, 100.0, 150.0, 200.0, 250.0, 300.0] {
            assert!(close(id(d), fit(d), 0.5), "{d} ms: {} vs {}", id(d), fit(d));
        }
        assert!(id(300.0) > id(200.0) && id(200.0) > id(100.0));
    }

    /// baresip's own test vectors (test/mos.c, before commit 239c249b removed it), to its
    /// precision 0.001.
    #[test]
    fn baresip_vectors() {
        for (rtt, jitter, lost, r, m) in [
            (0.0, 0.0, 0, 92.95, 4.404),
            (500.0, 0.0, 0, 54.20, 2.796),
            (1000.0, 0.0, 0, 4.20, 0.990),
            (0.0, 100.0, 0, 84.20, 4.172),
            (0.0, 200.0, 0, 64.20, 3.315),
            (0.0, 0.0, 1, 90.45, 4.350),
            (0.0, 0.0, 10, 67.95, 3.499),
            (10.0, 10.0, 10, 67.20, 3.463),
        ] {
            let (gr, gm) = baresip_mos(rtt, jitter, lost);
            assert!(
                close(gr, r, 0.001) && close(gm, m, 0.001),
                "{rtt} {jitter} {lost}: {gr} {gm}"
            );
        }
    }

    #[test]
    fn burst_ratio_is_one_for_random_loss_and_larger_for_bursts() {
        // Alternating played/concealed: p = 1, q = 1 → 0.5 (smoother than random).
        assert!(close(burst_ratio(0.5, 0, 10, 10, 0), 0.5, 1e-12));
        // p = 0.1, q = 0.9: random loss at 10 %.
        assert!(close(burst_ratio(0.1, 81, 9, 9, 1), 1.0, 1e-12));
        // Loss in runs of 5: q = 0.2.
        assert!(burst_ratio(0.1, 90, 2, 2, 8) > 3.0);
        assert_eq!(burst_ratio(0.0, 100, 0, 0, 0), 1.0);
    }
}
