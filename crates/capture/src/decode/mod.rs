//! Payload decoders: turn packet records into samples (stream, sequence, send time, values).
//!
//! Three decoders exist: [`rtp`] (RFC 3550 media), [`probe`] (jitterlab's own snapshot
//! packet, also what CSV imports become) and, for custom game protocols, `layout:SPEC`
//! (capture issue). A packet a decoder cannot read is counted and skipped, never silently
//! dropped: see [`Decoded::skipped`].

pub mod probe;
pub mod rtp;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Read;

use crate::Error;
use crate::time::Nanos;
use crate::trace::{Endpoint, Header, Reader, Record, RecordKind};

/// Why one packet could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError(String);

impl DecodeError {
    /// A decode error with a message.
    pub fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

/// A lifecycle event carried by a snapshot: interpolation never crosses one (C14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lifecycle {
    /// The entity appears at this snapshot.
    Spawn,
    /// The entity disappears at this snapshot.
    Despawn,
    /// The entity jumps to this snapshot's position.
    Teleport,
}

impl Lifecycle {
    /// The probe flag bit.
    pub const fn flag(self) -> u8 {
        match self {
            Self::Spawn => 1,
            Self::Despawn => 2,
            Self::Teleport => 4,
        }
    }

    /// The event for a single probe flag bit.
    pub const fn from_flag(flag: u8) -> Option<Self> {
        match flag {
            1 => Some(Self::Spawn),
            2 => Some(Self::Despawn),
            4 => Some(Self::Teleport),
            _ => None,
        }
    }

    /// A lowercase name for output.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Spawn => "spawn",
            Self::Despawn => "despawn",
            Self::Teleport => "teleport",
        }
    }
}

/// One decoded packet. The three clocks stay apart (C1, C2): `seq` identifies the sample,
/// `send` (sender clock) orders it, `arrival` (local clock) says when it became available.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Index into [`Decoded::streams`].
    pub stream: u32,
    /// Sequence number or tick, extended past 16/32-bit wrap-around.
    pub seq: i64,
    /// Send time on the sender's clock (RTP: extended timestamp / clock rate).
    pub send: Nanos,
    /// Arrival time on the local clock (for ground truth: the local send time).
    pub arrival: Nanos,
    /// Continuous values (empty for RTP).
    pub values: Vec<f64>,
    /// Discrete state, switched never averaged (C14).
    pub state: Option<u32>,
    /// Lifecycle event at this sample.
    pub event: Option<Lifecycle>,
    /// RTP marker bit (start of a talkspurt / end of a video frame).
    pub marker: bool,
    /// Payload type (RTP only).
    pub payload_type: Option<u8>,
}

impl Sample {
    /// A sample with no values, state, event or payload type.
    pub fn new(stream: u32, seq: i64, send: Nanos, arrival: Nanos) -> Self {
        Self {
            stream,
            seq,
            send,
            arrival,
            values: Vec::new(),
            state: None,
            event: None,
            marker: false,
            payload_type: None,
        }
    }

    /// The same sample carrying `values`.
    pub fn with_values(mut self, values: Vec<f64>) -> Self {
        self.values = values;
        self
    }
}

/// What identifies a stream and what is known about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamInfo {
    /// The stream's index, as used in [`Sample::stream`].
    pub id: u32,
    /// RTP SSRC.
    pub ssrc: Option<u32>,
    /// The probe's own stream id.
    pub probe_stream: Option<u32>,
    /// Source address, when known.
    pub src: Option<Endpoint>,
    /// Destination address, when known.
    pub dst: Option<Endpoint>,
    /// The first payload type seen (RTP).
    pub payload_type: Option<u8>,
    /// Media clock rate in Hz (RTP). `None` means send times are unknown: no jitter is made up.
    pub clock_rate: Option<u32>,
    /// Value channel names, from the trace's `channels` hint.
    pub channels: Vec<String>,
}

impl StreamInfo {
    /// Whether send times are meaningful (the clock rate is known, or the decoder carries times).
    pub fn has_send_times(&self) -> bool {
        self.ssrc.is_none() || self.clock_rate.is_some()
    }

    /// A short human label: `ssrc 0x1A2B3C4D 10.0.0.1:5004→10.0.0.2:5004` or `probe 3`.
    pub fn label(&self) -> String {
        let mut s = match (self.ssrc, self.probe_stream) {
            (Some(ssrc), _) => format!("ssrc {ssrc:#010X}"),
            (None, Some(p)) => format!("probe {p}"),
            _ => format!("stream {}", self.id),
        };
        if let (Some(src), Some(dst)) = (self.src, self.dst) {
            s.push_str(&format!(" {}→{}", src.0, dst.0));
        }
        s
    }
}

/// Which payload decoder to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecoderKind {
    /// RFC 3550 RTP.
    Rtp,
    /// jitterlab probe packets.
    Probe,
}

/// A decoder choice plus its options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecoderConfig {
    /// Which decoder.
    pub kind: DecoderKind,
    /// Clock rates for dynamic RTP payload types (`--clock-rate PT=HZ`), over the static table.
    pub clock_rates: BTreeMap<u8, u32>,
}

impl DecoderConfig {
    /// A config for `kind` with no clock-rate overrides.
    pub fn new(kind: DecoderKind) -> Self {
        Self {
            kind,
            clock_rates: BTreeMap::new(),
        }
    }

    /// Parses a decoder name: `rtp` or `probe`.
    ///
    /// # Errors
    /// An unknown name, with the list of known ones.
    pub fn parse(name: &str) -> Result<Self, Error> {
        match name {
            "rtp" => Ok(Self::new(DecoderKind::Rtp)),
            "probe" => Ok(Self::new(DecoderKind::Probe)),
            other => Err(Error::Invalid(format!(
                "unknown decoder '{other}' (known: rtp, probe)"
            ))),
        }
    }

    /// The decoder a trace's header names, with its clock-rate hints (`clock_rate.PT`).
    ///
    /// # Errors
    /// The header names no decoder or an unknown one.
    pub fn from_header(header: &Header) -> Result<Self, Error> {
        let name = header.decoder.as_deref().ok_or_else(|| {
            Error::Invalid("the trace names no decoder; pass --decoder rtp|probe".into())
        })?;
        let mut config = Self::parse(name)?;
        for (key, value) in &header.hints {
            if let Some(pt) = key.strip_prefix("clock_rate.")
                && let (Ok(pt), Ok(hz)) = (pt.parse(), value.parse())
            {
                config.clock_rates.insert(pt, hz);
            }
        }
        Ok(config)
    }

    /// Parses `PT=HZ` and adds it as a clock-rate override.
    ///
    /// # Errors
    /// Not of the form `PT=HZ`, PT over 127, or HZ of 0.
    pub fn add_clock_rate(&mut self, spec: &str) -> Result<(), Error> {
        let bad = || {
            Error::Invalid(format!(
                "--clock-rate '{spec}': expected PT=HZ, e.g. 96=90000"
            ))
        };
        let (pt, hz) = spec.split_once('=').ok_or_else(bad)?;
        let pt: u8 = pt.trim().parse().map_err(|_| bad())?;
        let hz: u32 = hz.trim().parse().map_err(|_| bad())?;
        if pt > 127 || hz == 0 {
            return Err(Error::Invalid(format!(
                "--clock-rate '{spec}': payload type must be 0..=127 and rate above 0"
            )));
        }
        self.clock_rates.insert(pt, hz);
        Ok(())
    }

    fn clock_rate(&self, payload_type: u8) -> Option<u32> {
        self.clock_rates
            .get(&payload_type)
            .copied()
            .or_else(|| rtp::static_clock_rate(payload_type))
    }
}

/// A trace decoded into samples, per stream.
#[derive(Clone, Debug, Default)]
pub struct Decoded {
    /// Every stream seen, in order of first appearance.
    pub streams: Vec<StreamInfo>,
    /// Received samples in arrival (file) order.
    pub samples: Vec<Sample>,
    /// Ground-truth samples (as sent), in file order; empty when the trace has none.
    pub truth: Vec<Sample>,
    /// Packets the decoder could not read.
    pub skipped: u64,
    /// The first few reasons for skipping, for the summary.
    pub skip_examples: Vec<String>,
    /// Records of kinds this version does not know (skipped).
    pub unknown_records: u64,
    /// Bytes at the end of the file that did not form a whole record.
    pub trailing_bytes: u64,
}

impl Decoded {
    /// The received samples of one stream, in arrival order.
    pub fn stream_samples(&self, stream: u32) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(move |s| s.stream == stream)
    }

    /// The ground-truth samples of one stream.
    pub fn stream_truth(&self, stream: u32) -> impl Iterator<Item = &Sample> {
        self.truth.iter().filter(move |s| s.stream == stream)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum StreamKey {
    Rtp {
        ssrc: u32,
        src: Option<Endpoint>,
        dst: Option<Endpoint>,
    },
    Probe {
        stream: u32,
        direction: u8,
    },
}

#[derive(Debug)]
struct StreamState {
    seq: rtp::Extender,
    timestamp: rtp::Extender,
}

/// Decodes records one at a time, assigning streams and extending sequence numbers.
#[derive(Debug)]
pub struct StreamDecoder {
    config: DecoderConfig,
    channels: Vec<String>,
    keys: HashMap<StreamKey, u32>,
    /// Separate extenders for received and ground-truth records, which arrive in different orders.
    state: Vec<[StreamState; 2]>,
    streams: Vec<StreamInfo>,
}

impl StreamDecoder {
    /// A decoder; `channels` names the value channels (from the trace's hints).
    pub fn new(config: DecoderConfig, channels: Vec<String>) -> Self {
        Self {
            config,
            channels,
            keys: HashMap::new(),
            state: Vec::new(),
            streams: Vec::new(),
        }
    }

    /// The streams seen so far.
    pub fn streams(&self) -> &[StreamInfo] {
        &self.streams
    }

    /// Consumes the decoder, returning its streams.
    pub fn into_streams(self) -> Vec<StreamInfo> {
        self.streams
    }

    fn stream_for(&mut self, key: StreamKey, rec: &Record, pt: Option<u8>) -> u32 {
        if let Some(&id) = self.keys.get(&key) {
            return id;
        }
        let id = self.streams.len() as u32;
        let (ssrc, probe_stream) = match key {
            StreamKey::Rtp { ssrc, .. } => (Some(ssrc), None),
            StreamKey::Probe { stream, .. } => (None, Some(stream)),
        };
        self.streams.push(StreamInfo {
            id,
            ssrc,
            probe_stream,
            src: rec.src,
            dst: rec.dst,
            payload_type: pt,
            clock_rate: pt.and_then(|pt| self.config.clock_rate(pt)),
            channels: self.channels.clone(),
        });
        let fresh = || StreamState {
            seq: rtp::Extender::sequence(),
            timestamp: rtp::Extender::timestamp(),
        };
        self.state.push([fresh(), fresh()]);
        self.keys.insert(key, id);
        id
    }

    /// Decodes one record into a sample.
    ///
    /// # Errors
    /// The payload is not a valid packet for this decoder.
    pub fn decode(&mut self, rec: &Record) -> Result<Sample, DecodeError> {
        let slot = usize::from(rec.kind() == RecordKind::Sent);
        match self.config.kind {
            DecoderKind::Probe => {
                let p = probe::Probe::parse(&rec.payload)?;
                let seq = i64::try_from(p.tick).map_err(|_| {
                    DecodeError::new(format!("probe tick {} is out of range", p.tick))
                })?;
                let key = StreamKey::Probe {
                    stream: p.stream,
                    direction: rec.direction,
                };
                let stream = self.stream_for(key, rec, None);
                Ok(Sample {
                    stream,
                    seq,
                    send: p.send,
                    arrival: rec.time,
                    values: p.values,
                    state: Some(p.state),
                    event: p.event,
                    marker: false,
                    payload_type: None,
                })
            }
            DecoderKind::Rtp => {
                let h = rtp::RtpHeader::parse(&rec.payload)?;
                let key = StreamKey::Rtp {
                    ssrc: h.ssrc,
                    src: rec.src,
                    dst: rec.dst,
                };
                let stream = self.stream_for(key, rec, Some(h.payload_type));
                let state = &mut self.state[stream as usize][slot];
                let seq = state.seq.extend(u32::from(h.seq));
                let ts = state.timestamp.extend(h.timestamp);
                // Without a clock rate the send time is unknown; stats check
                // `StreamInfo::has_send_times` before using it.
                let send = match self.streams[stream as usize].clock_rate {
                    Some(hz) => Nanos((i128::from(ts) * 1_000_000_000 / i128::from(hz)) as i64),
                    None => Nanos::ZERO,
                };
                Ok(Sample {
                    stream,
                    seq,
                    send,
                    arrival: rec.time,
                    values: Vec::new(),
                    state: None,
                    event: None,
                    marker: h.marker,
                    payload_type: Some(h.payload_type),
                })
            }
        }
    }
}

/// The most skip reasons kept as examples.
const MAX_SKIP_EXAMPLES: usize = 5;

/// Reads a whole trace and decodes it.
///
/// `config` overrides the decoder named in the header.
///
/// # Errors
/// Trace read errors ([`Error::CorruptRecord`], I/O) and a header with no usable decoder.
pub fn decode_trace<R: Read>(
    mut reader: Reader<R>,
    config: Option<DecoderConfig>,
) -> Result<Decoded, Error> {
    let header = reader.header().clone();
    let config = match config {
        Some(c) => c,
        None => DecoderConfig::from_header(&header)?,
    };
    let channels = header
        .hints
        .get("channels")
        .map(|c| {
            c.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut decoder = StreamDecoder::new(config, channels);
    let mut out = Decoded::default();
    while let Some(rec) = reader.read_record()? {
        let kind = rec.kind();
        if let RecordKind::Other(_) = kind {
            out.unknown_records += 1;
            continue;
        }
        match decoder.decode(&rec) {
            Ok(sample) if kind == RecordKind::Sent => out.truth.push(sample),
            Ok(sample) => out.samples.push(sample),
            Err(err) => {
                out.skipped += 1;
                if out.skip_examples.len() < MAX_SKIP_EXAMPLES {
                    out.skip_examples
                        .push(format!("record {}: {err}", reader.records() - 1));
                }
            }
        }
    }
    out.trailing_bytes = reader.trailing_bytes();
    out.streams = decoder.into_streams();
    Ok(out)
}
