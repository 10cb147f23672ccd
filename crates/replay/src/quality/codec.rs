//! Codecs for the E-model: each one's equipment impairment factor `Ie`, packet-loss robustness
//! factor `Bpl` and look-ahead, and where those values come from.
//!
//! The values are ITU-T G.113 Appendix I's provisional planning values for narrowband
//! codecs: Table I.1 (`Ie` of each codec without transmission errors) and Table I.3
//! (`Ie` and `Bpl` of the codecs tested under packet loss: G.711 with and without the
//! Appendix I/G.711 concealment, G.723.1 + VAD at 6.3 kbit/s, G.729A + VAD, GSM-EFR). Where
//! G.113 gives an `Ie` but no `Bpl`, or no value at all, the table says which value jitterlab
//! uses instead and why ([`Source::Assumed`]); every such value can be replaced with
//! `ie=N,bpl=N`.
//!
//! Codecs G.113 does not rate on the narrowband scale (Opus, G.722, AMR-WB, iLBC, Speex) get
//! the G.711-with-concealment figures (`Ie` 0, `Bpl` 25.1): the narrowband E-model cannot
//! credit a codec above G.711 (its best case is R = 93.2), and each of these codecs conceals a
//! lost frame at least as well as G.711's Appendix I concealment. No ITU-T Recommendation jitterlab
//! could read publishes narrowband-scale `Ie`/`Bpl` for Opus.

use std::fmt;
use std::str::FromStr;

use jitterlab_capture::Nanos;

use crate::Error;

/// Where a codec's `Ie` and `Bpl` come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Both from ITU-T G.113 Appendix I.
    G113,
    /// `Ie` from G.113 Appendix I, `Bpl` assumed (G.113 gives none for this codec).
    G113IeOnly,
    /// Neither is published on the narrowband scale: assumed (see the module documentation).
    Assumed,
    /// Given by the user (`ie=N,bpl=N`).
    Custom,
}

/// A speech codec, as the E-model sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Codec {
    /// G.711 (PCMA, PCMU) with packet-loss concealment (G.711 Appendix I).
    G711,
    /// G.711 without packet-loss concealment (silence for a lost frame).
    G711NoPlc,
    /// G.722 (wideband).
    G722,
    /// G.726 ADPCM at 40, 32, 24 or 16 kbit/s.
    G726(AdpcmRate),
    /// G.728 LD-CELP at 16 kbit/s.
    G728,
    /// G.728 LD-CELP at 12.8 kbit/s.
    G728At12k8,
    /// G.729 (RTP payload type 18: in practice G.729 Annex A, with Annex B VAD).
    G729,
    /// G.723.1 at 6.3 kbit/s (MP-MLQ), with VAD.
    G723,
    /// G.723.1 at 5.3 kbit/s (ACELP).
    G723At5k3,
    /// GSM 06.10 full rate.
    GsmFr,
    /// GSM 06.20 half rate.
    GsmHr,
    /// GSM 06.60 enhanced full rate.
    GsmEfr,
    /// AMR-NB at 12.2 kbit/s (the GSM-EFR algorithm).
    Amr12k2,
    /// AMR-NB at 7.4 kbit/s (the IS-641 algorithm).
    Amr7k4,
    /// AMR-WB (G.722.2).
    AmrWb,
    /// iLBC.
    Ilbc,
    /// Speex.
    Speex,
    /// Opus.
    Opus,
    /// Values given by the user.
    Custom {
        /// Equipment impairment factor.
        ie: f64,
        /// Packet-loss robustness factor.
        bpl: f64,
    },
}

/// G.726's four rates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdpcmRate {
    /// 40 kbit/s.
    K40,
    /// 32 kbit/s.
    K32,
    /// 24 kbit/s.
    K24,
    /// 16 kbit/s.
    K16,
}

/// The names [`Codec::from_str`] takes, each with the codec it names.
const NAMES: &[(&str, Codec)] = &[
    ("g711", Codec::G711),
    ("pcma", Codec::G711),
    ("pcmu", Codec::G711),
    ("g711a", Codec::G711),
    ("g711u", Codec::G711),
    ("g711-noplc", Codec::G711NoPlc),
    ("g722", Codec::G722),
    ("g726-40", Codec::G726(AdpcmRate::K40)),
    ("g726-32", Codec::G726(AdpcmRate::K32)),
    ("g726", Codec::G726(AdpcmRate::K32)),
    ("g721", Codec::G726(AdpcmRate::K32)),
    ("g726-24", Codec::G726(AdpcmRate::K24)),
    ("g726-16", Codec::G726(AdpcmRate::K16)),
    ("g728", Codec::G728),
    ("g728-12.8", Codec::G728At12k8),
    ("g729", Codec::G729),
    ("g729a", Codec::G729),
    ("g729ab", Codec::G729),
    ("g723", Codec::G723),
    ("g723.1", Codec::G723),
    ("g723-6.3", Codec::G723),
    ("g723-5.3", Codec::G723At5k3),
    ("gsm", Codec::GsmFr),
    ("gsm-fr", Codec::GsmFr),
    ("gsm-hr", Codec::GsmHr),
    ("gsm-hr-08", Codec::GsmHr),
    ("gsm-efr", Codec::GsmEfr),
    ("amr", Codec::Amr12k2),
    ("amr-12.2", Codec::Amr12k2),
    ("amr-7.4", Codec::Amr7k4),
    ("amr-wb", Codec::AmrWb),
    ("g722.2", Codec::AmrWb),
    ("ilbc", Codec::Ilbc),
    ("speex", Codec::Speex),
    ("opus", Codec::Opus),
];

/// A codec's values for the E-model.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Impairment {
    /// Equipment impairment factor `Ie` (G.107 §7.5), R-scale units.
    pub ie: f64,
    /// Packet-loss robustness factor `Bpl` (G.107 §7.5).
    pub bpl: f64,
    /// Where the two come from.
    pub source: Source,
}

impl Codec {
    /// The codec's canonical name (what [`Codec::from_str`] takes back).
    pub fn name(&self) -> &'static str {
        match self {
            Self::G711 => "g711",
            Self::G711NoPlc => "g711-noplc",
            Self::G722 => "g722",
            Self::G726(AdpcmRate::K40) => "g726-40",
            Self::G726(AdpcmRate::K32) => "g726-32",
            Self::G726(AdpcmRate::K24) => "g726-24",
            Self::G726(AdpcmRate::K16) => "g726-16",
            Self::G728 => "g728",
            Self::G728At12k8 => "g728-12.8",
            Self::G729 => "g729",
            Self::G723 => "g723",
            Self::G723At5k3 => "g723-5.3",
            Self::GsmFr => "gsm",
            Self::GsmHr => "gsm-hr",
            Self::GsmEfr => "gsm-efr",
            Self::Amr12k2 => "amr-12.2",
            Self::Amr7k4 => "amr-7.4",
            Self::AmrWb => "amr-wb",
            Self::Ilbc => "ilbc",
            Self::Speex => "speex",
            Self::Opus => "opus",
            Self::Custom { .. } => "custom",
        }
    }

    /// `Ie` and `Bpl`, with their source (see the module documentation).
    pub fn impairment(&self) -> Impairment {
        use Source::{Assumed, G113, G113IeOnly};
        // G.107's default Bpl (its Table 3) is G.711's without concealment, 4.3: used for
        // the waveform and LD-CELP codecs G.113 tested without loss.
        const NO_PLC: f64 = 4.3;
        // G.113 Table I.3's GSM-EFR value, for the GSM codecs that share its frame
        // substitution (GSM 06.11 / 06.61) but were not tested under loss.
        const GSM: f64 = 10.0;
        let (ie, bpl, source) = match *self {
            Self::G711 => (0.0, 25.1, G113),
            Self::G711NoPlc => (0.0, NO_PLC, G113),
            Self::G726(AdpcmRate::K40) => (2.0, NO_PLC, G113IeOnly),
            Self::G726(AdpcmRate::K32) => (7.0, NO_PLC, G113IeOnly),
            Self::G726(AdpcmRate::K24) => (25.0, NO_PLC, G113IeOnly),
            Self::G726(AdpcmRate::K16) => (50.0, NO_PLC, G113IeOnly),
            Self::G728 => (7.0, NO_PLC, G113IeOnly),
            Self::G728At12k8 => (20.0, NO_PLC, G113IeOnly),
            Self::G729 => (11.0, 19.0, G113),
            Self::G723 => (15.0, 16.1, G113),
            // G.113 tested only the 6.3 kbit/s mode under loss: its Bpl.
            Self::G723At5k3 => (19.0, 16.1, G113IeOnly),
            Self::GsmFr => (20.0, GSM, G113IeOnly),
            Self::GsmHr => (23.0, GSM, G113IeOnly),
            Self::GsmEfr => (5.0, 10.0, G113),
            // AMR's 12.2 kbit/s mode is GSM-EFR's algorithm (3GPP TS 26.071): its row.
            Self::Amr12k2 => (5.0, 10.0, G113),
            // AMR's 7.4 kbit/s mode is IS-641's algorithm: G.113's IS-641 Ie.
            Self::Amr7k4 => (10.0, GSM, G113IeOnly),
            Self::G722 | Self::AmrWb | Self::Ilbc | Self::Speex | Self::Opus => {
                (0.0, 25.1, Assumed)
            }
            Self::Custom { ie, bpl } => (ie, bpl, Source::Custom),
        };
        Impairment { ie, bpl, source }
    }

    /// The encoder's look-ahead: algorithmic delay beyond the frame itself, part of the
    /// mouth-to-ear delay (G.729 and G.723.1 from their Recommendations, AMR from 3GPP TS
    /// 26.090, Opus from RFC 6716 §2 (26.5 ms at 20 ms frames), iLBC from RFC 3951 (25 ms at
    /// 20 ms frames), Speex from its manual (10 ms), G.722's QMF (1.5 ms), G.728's 0.625 ms).
    pub fn lookahead(&self) -> Nanos {
        let us = match self {
            Self::G711
            | Self::G711NoPlc
            | Self::G726(_)
            | Self::GsmFr
            | Self::GsmHr
            | Self::GsmEfr
            | Self::Custom { .. } => 0,
            Self::G722 => 1_500,
            Self::G728 | Self::G728At12k8 => 625,
            Self::G729 | Self::Amr12k2 | Self::Amr7k4 | Self::AmrWb | Self::Ilbc => 5_000,
            Self::G723 | Self::G723At5k3 => 7_500,
            Self::Opus => 6_500,
            Self::Speex => 10_000,
        };
        Nanos::from_micros(us)
    }

    /// The codec a stream's media names: its encoding name (as SDP or the static payload
    /// type table spells it, any case), else its static payload type (RFC 3551). `None` for
    /// anything else.
    pub fn of_media(media: &crate::playout::Media) -> Option<Self> {
        if let Some(name) = media.encoding.as_deref() {
            let lower = name.trim().to_ascii_lowercase();
            if let Some(codec) = lookup(&lower) {
                return Some(codec);
            }
            // SDP spellings not in the name table.
            match lower.as_str() {
                "amr-nb" => return Some(Self::Amr12k2),
                "ilbc-20" | "ilbc-30" => return Some(Self::Ilbc),
                _ => {}
            }
        }
        match media.payload_type? {
            0 | 8 => Some(Self::G711),
            2 => Some(Self::G726(AdpcmRate::K32)),
            3 => Some(Self::GsmFr),
            4 => Some(Self::G723),
            9 => Some(Self::G722),
            15 => Some(Self::G728),
            18 => Some(Self::G729),
            _ => None,
        }
    }

    /// Every name [`Codec::from_str`] takes, comma-separated (for error messages).
    pub fn known_names() -> String {
        NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
    }
}

fn lookup(lower: &str) -> Option<Codec> {
    NAMES.iter().find(|(n, _)| *n == lower).map(|(_, c)| *c)
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Custom { ie, bpl } => write!(f, "ie={ie},bpl={bpl}"),
            other => f.write_str(other.name()),
        }
    }
}

impl FromStr for Codec {
    type Err = Error;

    /// A codec name (`g711`, `pcma`, `opus`, `g729`, `amr-12.2`, …, any case) or
    /// `ie=N,bpl=N`.
    fn from_str(text: &str) -> Result<Self, Error> {
        let lower = text.trim().to_ascii_lowercase();
        if let Some(codec) = lookup(&lower) {
            return Ok(codec);
        }
        let unknown = || Error::UnknownCodec {
            text: text.to_owned(),
            known: Self::known_names(),
        };
        if lower.contains('=') {
            let (mut ie, mut bpl) = (None, None);
            for part in lower.split(',') {
                let (key, value) = part.split_once('=').ok_or_else(unknown)?;
                let value: f64 = value.trim().parse().map_err(|_| unknown())?;
                match key.trim() {
                    "ie" if (0.0..=95.0).contains(&value) => ie = Some(value),
                    "bpl" if value > 0.0 && value.is_finite() => bpl = Some(value),
                    _ => return Err(unknown()),
                }
            }
            if let (Some(ie), Some(bpl)) = (ie, bpl) {
                return Ok(Self::Custom { ie, bpl });
            }
        }
        Err(unknown())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playout::Media;

    #[test]
    fn names_parse_in_any_case_and_round_trip() {
        for (name, codec) in NAMES {
            assert_eq!(name.to_uppercase().parse::<Codec>().unwrap(), *codec);
            assert_eq!(codec.name().parse::<Codec>().unwrap(), *codec);
        }
        assert_eq!(
            "ie=11,bpl=19".parse::<Codec>().unwrap(),
            Codec::Custom {
                ie: 11.0,
                bpl: 19.0
            }
        );
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let err = "g799".parse::<Codec>().unwrap_err().to_string();
        assert!(err.contains("'g799'") && err.contains("pcma") && err.contains("opus"));
        assert!("ie=11".parse::<Codec>().is_err());
        assert!("ie=200,bpl=3".parse::<Codec>().is_err());
        assert!("ie=1,bpl=0".parse::<Codec>().is_err());
    }

    /// G.113 Appendix I, Table I.3: the codecs tested under packet loss.
    #[test]
    fn g113_table_i3_values() {
        let ie_bpl = |c: Codec| (c.impairment().ie, c.impairment().bpl);
        assert_eq!(ie_bpl(Codec::G711), (0.0, 25.1));
        assert_eq!(ie_bpl(Codec::G711NoPlc), (0.0, 4.3));
        assert_eq!(ie_bpl(Codec::G729), (11.0, 19.0));
        assert_eq!(ie_bpl(Codec::G723), (15.0, 16.1));
        assert_eq!(ie_bpl(Codec::GsmEfr), (5.0, 10.0));
        assert_eq!(Codec::Opus.impairment().source, Source::Assumed);
    }

    #[test]
    fn the_codec_comes_from_the_encoding_or_the_static_payload_type() {
        let media = |encoding: Option<&str>, pt: Option<u8>| Media {
            encoding: encoding.map(str::to_owned),
            payload_type: pt,
            ..Media::default()
        };
        assert_eq!(
            Codec::of_media(&media(Some("PCMA"), Some(8))),
            Some(Codec::G711)
        );
        assert_eq!(
            Codec::of_media(&media(Some("opus"), Some(111))),
            Some(Codec::Opus)
        );
        assert_eq!(
            Codec::of_media(&media(Some("AMR-WB"), Some(97))),
            Some(Codec::AmrWb)
        );
        assert_eq!(Codec::of_media(&media(None, Some(18))), Some(Codec::G729));
        assert_eq!(Codec::of_media(&media(Some("H264"), Some(96))), None);
        assert_eq!(Codec::of_media(&media(None, None)), None);
    }
}
