//! Which decoder a trace is read with, and its options (clock rates, SDP hints).

use std::collections::BTreeMap;

use super::transport::Transport;
use super::{layout, probe, rtp};
use crate::Error;
use crate::sdp::{self, RtpMap};
use crate::time::Nanos;
use crate::trace::{Endpoint, Header};

/// Which payload decoder to use.
#[derive(Clone, Debug, PartialEq)]
pub enum DecoderKind {
    /// RFC 3550 RTP.
    Rtp,
    /// jitterlab probe packets.
    Probe,
    /// Fields at fixed offsets (`layout:SPEC`).
    Layout(Box<layout::Layout>),
    /// A game transport's own framing (`enet`, `kcp`, `raknet`).
    Transport(Transport),
    /// Plain UDP: sizes and arrival times only, no send times.
    Udp,
    /// Plain UDP with send times inferred from the arrivals of a periodic sender (see
    /// [`super::periodic`]).
    Periodic,
    /// Each flow judged by its packets (`auto`, the default for captures): RTP, RTCP, STUN,
    /// DTLS, probe, a game transport or plain UDP (see [`super::flow`]).
    Auto,
}

/// The decoder names [`DecoderConfig::parse`] takes, for messages.
pub const DECODER_NAMES: &str = "auto, rtp, probe, enet, kcp, raknet, udp, periodic, layout:SPEC";

/// A decoder choice plus its options.
#[derive(Clone, Debug, PartialEq)]
pub struct DecoderConfig {
    /// Which decoder.
    pub kind: DecoderKind,
    /// Clock rates for dynamic RTP payload types (`--clock-rate PT=HZ`), over the static table.
    pub clock_rates: BTreeMap<u8, u32>,
    /// Payload maps announced by SDP in the capture (see [`sdp`]).
    pub rtpmaps: Vec<RtpMap>,
}

impl DecoderConfig {
    /// A config for `kind` with no clock-rate overrides.
    pub fn new(kind: DecoderKind) -> Self {
        Self {
            kind,
            clock_rates: BTreeMap::new(),
            rtpmaps: Vec::new(),
        }
    }

    /// Parses a decoder name: `auto`, `rtp`, `probe`, `enet`, `kcp`, `raknet`, `udp`,
    /// `periodic` or `layout:SPEC`.
    ///
    /// # Errors
    /// An unknown name, with the list of known ones, or a bad layout.
    pub fn parse(name: &str) -> Result<Self, Error> {
        if let Some(t) = Transport::from_name(name) {
            return Ok(Self::new(DecoderKind::Transport(t)));
        }
        match name {
            "auto" => Ok(Self::new(DecoderKind::Auto)),
            "rtp" => Ok(Self::new(DecoderKind::Rtp)),
            "probe" => Ok(Self::new(DecoderKind::Probe)),
            "udp" => Ok(Self::new(DecoderKind::Udp)),
            "periodic" => Ok(Self::new(DecoderKind::Periodic)),
            other => match other.strip_prefix("layout:") {
                Some(spec) => Ok(Self::new(DecoderKind::Layout(Box::new(
                    layout::Layout::parse(spec)?,
                )))),
                None => Err(Error::Unknown {
                    what: "decoder",
                    name: other.to_owned(),
                    known: DECODER_NAMES.to_owned(),
                }),
            },
        }
    }

    /// The decoder for a trace that names none, picked from its first payload: probe packets
    /// by their magic, anything else as RTP.
    pub fn sniff(payload: &[u8]) -> Self {
        Self::new(if payload.starts_with(&probe::MAGIC) {
            DecoderKind::Probe
        } else {
            DecoderKind::Rtp
        })
    }

    /// The decoder's name as [`DecoderConfig::parse`] reads it.
    pub fn name(&self) -> String {
        match &self.kind {
            DecoderKind::Rtp => "rtp".to_owned(),
            DecoderKind::Probe => "probe".to_owned(),
            DecoderKind::Layout(l) => format!("layout:{}", l.spec()),
            DecoderKind::Transport(t) => t.name().to_owned(),
            DecoderKind::Udp => "udp".to_owned(),
            DecoderKind::Periodic => "periodic".to_owned(),
            DecoderKind::Auto => "auto".to_owned(),
        }
    }

    /// The decoder a trace's header names, with its clock-rate hints (`clock_rate.PT`).
    ///
    /// # Errors
    /// The header names no decoder or an unknown one.
    pub fn from_header(header: &Header) -> Result<Self, Error> {
        let name = header.decoder.as_deref().ok_or(Error::NoDecoder)?;
        let mut config = Self::parse(name)?;
        config.add_hints(header);
        Ok(config)
    }

    /// Adds the clock-rate and SDP hints of a trace header (`clock_rate.PT`, `rtpmap.N`).
    pub fn add_hints(&mut self, header: &Header) {
        for (key, value) in &header.hints {
            if key.starts_with("rtpmap.")
                && let Some(map) = RtpMap::from_hint(value)
            {
                self.rtpmaps.push(map);
            }
            if let Some(pt) = key.strip_prefix("clock_rate.")
                && let (Ok(pt), Ok(hz)) = (pt.parse(), value.parse())
            {
                self.clock_rates.insert(pt, hz);
            }
        }
    }

    /// Parses `PT=HZ` and adds it as a clock-rate override.
    ///
    /// # Errors
    /// Not of the form `PT=HZ`, PT over 127, or HZ of 0.
    pub fn add_clock_rate(&mut self, spec: &str) -> Result<(), Error> {
        let bad = || Error::ClockRate {
            spec: spec.to_owned(),
            reason: "expected PT=HZ, e.g. 96=90000",
        };
        let (pt, hz) = spec.split_once('=').ok_or_else(bad)?;
        let pt: u8 = pt.trim().parse().map_err(|_| bad())?;
        let hz: u32 = hz.trim().parse().map_err(|_| bad())?;
        if pt > 127 || hz == 0 {
            return Err(Error::ClockRate {
                spec: spec.to_owned(),
                reason: "payload type must be 0..=127 and rate above 0",
            });
        }
        self.clock_rates.insert(pt, hz);
        Ok(())
    }

    /// The encoding and media kind of `payload_type` for a packet between `src` and `dst` at
    /// `at`: the capture's SDP first, then the static table.
    pub(super) fn encoding(
        &self,
        payload_type: u8,
        src: Option<Endpoint>,
        dst: Option<Endpoint>,
        at: Nanos,
    ) -> (Option<String>, Option<super::MediaKind>) {
        use super::MediaKind;
        if let Some(map) = sdp::lookup(
            &self.rtpmaps,
            payload_type,
            src.map(|e| e.0),
            dst.map(|e| e.0),
            at,
        ) {
            let media = map
                .media
                .as_deref()
                .and_then(MediaKind::from_sdp)
                .or_else(|| MediaKind::of_encoding(&map.encoding));
            return (Some(map.encoding.clone()), media);
        }
        match rtp::static_name(payload_type) {
            Some(name) => (Some(name.to_owned()), MediaKind::of_encoding(name)),
            None => (None, None),
        }
    }

    /// The clock rate of `payload_type` for a packet between `src` and `dst` at `at`, and
    /// whether it is `telephone-event`: `--clock-rate` first, then the capture's SDP, then the
    /// static table.
    pub(super) fn clock_rate(
        &self,
        payload_type: u8,
        src: Option<Endpoint>,
        dst: Option<Endpoint>,
        at: Nanos,
    ) -> (Option<u32>, bool) {
        if let Some(&hz) = self.clock_rates.get(&payload_type) {
            return (Some(hz), false);
        }
        if let Some(map) = sdp::lookup(
            &self.rtpmaps,
            payload_type,
            src.map(|e| e.0),
            dst.map(|e| e.0),
            at,
        ) {
            return (Some(map.clock_rate), map.is_telephone_event());
        }
        (rtp::static_clock_rate(payload_type), false)
    }
}
