//! Payload decoders: turn packet records into samples (stream, sequence, send time, values).
//!
//! Three decoders exist: [`rtp`] (RFC 3550 media), [`probe`] (jitterlab's own snapshot
//! packet, also what CSV imports become) and, for custom game protocols, [`layout`]
//! (`layout:SPEC`, fields at fixed offsets). A packet a decoder cannot read is counted and skipped, never silently
//! dropped: see [`Decoded::skipped`].

pub mod layout;
pub mod probe;
pub mod rtp;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Read;

use crate::Error;
use crate::sdp::{self, RtpMap};
use crate::time::Nanos;
use crate::trace::{Direction, Endpoint, Header, Reader, Record, RecordKind};

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
    /// The extended RTP timestamp in media clock units (0 for other decoders).
    pub rtp_timestamp: i64,
    /// This packet's media clock rate in Hz as Wireshark sees it: 0 when unknown and for
    /// `telephone-event` packets, whose timestamps mark the event start (RFC 4733).
    pub rtp_clock: u32,
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
            rtp_timestamp: 0,
            rtp_clock: 0,
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

/// The largest magnitude a decoded sequence number or send time (ns, about 73 years) may
/// have. Beyond it, differences between two packets could overflow 64 bits, so a packet
/// claiming more is refused (counted with the reason) rather than decoded.
pub const MAX_MAGNITUDE: i64 = 1 << 61;

/// `value` if within ±[`MAX_MAGNITUDE`], else an error naming `what`.
pub(crate) fn in_range(what: &str, value: i128) -> Result<i64, DecodeError> {
    i64::try_from(value)
        .ok()
        .filter(|v| v.unsigned_abs() <= MAX_MAGNITUDE as u64)
        .ok_or_else(|| DecodeError::new(format!("{what} {value} is beyond ±2^61")))
}

/// Which payload decoder to use.
#[derive(Clone, Debug, PartialEq)]
pub enum DecoderKind {
    /// RFC 3550 RTP.
    Rtp,
    /// jitterlab probe packets.
    Probe,
    /// Fields at fixed offsets (`layout:SPEC`).
    Layout(Box<layout::Layout>),
}

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

    /// Parses a decoder name: `rtp`, `probe` or `layout:SPEC`.
    ///
    /// # Errors
    /// An unknown name, with the list of known ones, or a bad layout.
    pub fn parse(name: &str) -> Result<Self, Error> {
        match name {
            "rtp" => Ok(Self::new(DecoderKind::Rtp)),
            "probe" => Ok(Self::new(DecoderKind::Probe)),
            other => match other.strip_prefix("layout:") {
                Some(spec) => Ok(Self::new(DecoderKind::Layout(Box::new(
                    layout::Layout::parse(spec)?,
                )))),
                None => Err(Error::Unknown {
                    what: "decoder",
                    name: other.to_owned(),
                    known: "rtp, probe, layout:SPEC".to_owned(),
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

    /// The clock rate of `payload_type` for a packet between `src` and `dst` at `at`, and
    /// whether it is `telephone-event`: `--clock-rate` first, then the capture's SDP, then the
    /// static table.
    fn clock_rate(
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
    /// The last capture bookkeeping record (live captures and relays), if any.
    pub capture_stats: Option<crate::trace::CaptureStats>,
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

    /// The received samples of one stream as a slice: all of them, borrowed, when the trace
    /// holds no other stream (the usual case, and no copy of what may be gigabytes); else a
    /// copy of that stream's, in arrival order.
    pub fn samples_of(&self, stream: u32) -> Cow<'_, [Sample]> {
        only_stream(&self.samples, stream)
    }

    /// The ground-truth samples of one stream as a slice, borrowed as [`Self::samples_of`].
    pub fn truth_of(&self, stream: u32) -> Cow<'_, [Sample]> {
        only_stream(&self.truth, stream)
    }
}

/// `samples` when every one belongs to `stream`, else a copy of those that do.
fn only_stream(samples: &[Sample], stream: u32) -> Cow<'_, [Sample]> {
    if samples.iter().all(|s| s.stream == stream) {
        Cow::Borrowed(samples)
    } else {
        Cow::Owned(
            samples
                .iter()
                .filter(|s| s.stream == stream)
                .cloned()
                .collect(),
        )
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
        direction: Direction,
    },
    Flow {
        stream: u32,
        src: Option<Endpoint>,
        dst: Option<Endpoint>,
    },
}

#[derive(Debug)]
struct StreamState {
    seq: rtp::Extender,
    timestamp: rtp::Extender,
    /// Per payload type: the Wireshark clock (0 = none or telephone-event).
    clocks: Vec<(u8, u32)>,
}

/// Decodes records one at a time, assigning streams and extending sequence numbers.
#[derive(Debug)]
pub struct StreamDecoder {
    config: DecoderConfig,
    channels: Vec<String>,
    keys: HashMap<StreamKey, u32>,
    /// The previous packet's stream: most packets belong to the same stream as the one before.
    last: Option<(StreamKey, u32)>,
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
            last: None,
            state: Vec::new(),
            streams: Vec::new(),
        }
    }

    /// Adds payload maps found while reading (SDP seen before a stream's first packet applies
    /// to it, as in Wireshark).
    pub fn add_rtpmaps(&mut self, maps: impl IntoIterator<Item = RtpMap>) {
        self.config.rtpmaps.extend(maps);
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
        if let Some((k, id)) = self.last
            && k == key
        {
            return id;
        }
        if let Some(&id) = self.keys.get(&key) {
            self.last = Some((key, id));
            return id;
        }
        let id = self.streams.len() as u32;
        let (ssrc, probe_stream) = match key {
            StreamKey::Rtp { ssrc, .. } => (Some(ssrc), None),
            StreamKey::Probe { stream, .. } | StreamKey::Flow { stream, .. } => {
                (None, Some(stream))
            }
        };
        self.streams.push(StreamInfo {
            id,
            ssrc,
            probe_stream,
            src: rec.src,
            dst: rec.dst,
            payload_type: pt,
            clock_rate: pt.and_then(|pt| self.config.clock_rate(pt, rec.src, rec.dst, rec.time).0),
            channels: self.channels.clone(),
        });
        let fresh = || StreamState {
            seq: rtp::Extender::sequence(),
            timestamp: rtp::Extender::timestamp(),
            clocks: Vec::new(),
        };
        self.state.push([fresh(), fresh()]);
        self.keys.insert(key, id);
        self.last = Some((key, id));
        id
    }

    /// Decodes one record into a sample.
    ///
    /// # Errors
    /// The payload is not a valid packet for this decoder.
    pub fn decode(&mut self, rec: &Record) -> Result<Sample, DecodeError> {
        let slot = usize::from(rec.kind() == RecordKind::Sent);
        match &self.config.kind {
            DecoderKind::Probe => {
                let p = probe::Probe::parse(&rec.payload)?;
                let seq = in_range("probe tick", i128::from(p.tick))?;
                let key = StreamKey::Probe {
                    stream: p.stream,
                    direction: rec.direction,
                };
                let stream = self.stream_for(key, rec, None);
                Ok(Sample {
                    values: p.values,
                    state: Some(p.state),
                    event: p.event,
                    ..Sample::new(stream, seq, p.send, rec.time)
                })
            }
            DecoderKind::Layout(layout) => {
                let d = layout.decode(&rec.payload)?;
                let key = StreamKey::Flow {
                    stream: d.stream,
                    src: rec.src,
                    dst: rec.dst,
                };
                let stream = self.stream_for(key, rec, None);
                Ok(Sample {
                    values: d.values,
                    state: d.state,
                    ..Sample::new(stream, d.seq, d.send, rec.time)
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
                let rtp_clock = match state.clocks.iter().find(|(pt, _)| *pt == h.payload_type) {
                    Some(&(_, hz)) => hz,
                    None => {
                        let (hz, event) =
                            self.config
                                .clock_rate(h.payload_type, rec.src, rec.dst, rec.time);
                        let hz = if event { 0 } else { hz.unwrap_or(0) };
                        state.clocks.push((h.payload_type, hz));
                        hz
                    }
                };
                // Without a clock rate the send time is unknown; stats check
                // `StreamInfo::has_send_times` before using it.
                let send = match self.streams[stream as usize].clock_rate {
                    Some(hz) => Nanos(match ts.checked_mul(1_000_000_000) {
                        Some(ns) => ns / i64::from(hz),
                        None => (i128::from(ts) * 1_000_000_000 / i128::from(hz)) as i64,
                    }),
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
                    rtp_timestamp: ts,
                    rtp_clock,
                })
            }
        }
    }
}

/// The most skip reasons kept as examples.
const MAX_SKIP_EXAMPLES: usize = 5;

/// Decodes records one by one into a [`Decoded`], as [`decode_trace`] and capture imports do.
#[derive(Debug)]
pub struct Collector {
    /// `None` until the first packet when the header names no decoder (live captures without
    /// `--decoder`): the first payload then picks probe (by its magic) or RTP.
    decoder: Option<StreamDecoder>,
    header: Header,
    channels: Vec<String>,
    /// Payload maps found before the decoder exists.
    pending_maps: Vec<RtpMap>,
    out: Decoded,
    records: u64,
}

impl Collector {
    /// A collector for a trace with `header`; `config` overrides the decoder it names.
    ///
    /// # Errors
    /// The header names no usable decoder and none is given.
    pub fn new(header: &Header, config: Option<DecoderConfig>) -> Result<Self, Error> {
        let config = match config {
            Some(c) => Some(c),
            None if header.decoder.is_none() => None,
            None => Some(DecoderConfig::from_header(header)?),
        };
        let mut channels: Vec<String> = header
            .hints
            .get("channels")
            .map(|c| {
                c.split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(DecoderKind::Layout(l)) = config.as_ref().map(|c| &c.kind)
            && channels.is_empty()
        {
            channels = l.channels();
        }
        Ok(Self {
            decoder: config.map(|c| StreamDecoder::new(c, channels.clone())),
            header: header.clone(),
            channels,
            pending_maps: Vec::new(),
            out: Decoded::default(),
            records: 0,
        })
    }

    /// Adds payload maps found while reading (see [`StreamDecoder::add_rtpmaps`]).
    pub fn add_rtpmaps(&mut self, maps: Vec<RtpMap>) {
        if maps.is_empty() {
            return;
        }
        match &mut self.decoder {
            Some(d) => d.add_rtpmaps(maps),
            None => self.pending_maps.extend(maps),
        }
    }

    /// Decodes one record (skips and counts what cannot be decoded).
    pub fn push(&mut self, rec: &Record) {
        let index = self.records;
        self.records += 1;
        let kind = rec.kind();
        match kind {
            RecordKind::Other(_) => {
                self.out.unknown_records += 1;
                return;
            }
            RecordKind::Stats => {
                match crate::trace::CaptureStats::from_record(rec) {
                    Some(stats) => self.out.capture_stats = Some(stats),
                    None => self.out.unknown_records += 1,
                }
                return;
            }
            RecordKind::Received | RecordKind::Sent => {}
        }
        let (channels, header, pending) = (&self.channels, &self.header, &mut self.pending_maps);
        let decoder = self.decoder.get_or_insert_with(|| {
            let mut config = DecoderConfig::sniff(&rec.payload);
            config.add_hints(header);
            config.rtpmaps.append(pending);
            StreamDecoder::new(config, channels.clone())
        });
        match decoder.decode(rec) {
            Ok(sample) if kind == RecordKind::Sent => self.out.truth.push(sample),
            Ok(sample) => self.out.samples.push(sample),
            Err(err) => {
                self.out.skipped += 1;
                if self.out.skip_examples.len() < MAX_SKIP_EXAMPLES {
                    self.out
                        .skip_examples
                        .push(format!("record {index}: {err}"));
                }
            }
        }
    }

    /// The decoded trace.
    pub fn finish(mut self) -> Decoded {
        self.out.streams = self
            .decoder
            .map(StreamDecoder::into_streams)
            .unwrap_or_default();
        self.out
    }
}

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
    let mut collector = Collector::new(reader.header(), config)?;
    while let Some(rec) = reader.read_record()? {
        collector.push(&rec);
    }
    let mut out = collector.finish();
    out.trailing_bytes = reader.trailing_bytes();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_alone_is_lent_and_one_of_several_is_copied() {
        let at = |ms| Nanos::from_millis(ms);
        let mut decoded = Decoded {
            samples: (0..4)
                .map(|i| Sample::new(7, i, at(i), at(i + 1)))
                .collect(),
            ..Decoded::default()
        };
        let alone = decoded.samples_of(7);
        assert!(matches!(alone, Cow::Borrowed(_)));
        assert_eq!(alone.len(), 4);
        assert!(matches!(decoded.truth_of(7), Cow::Borrowed(s) if s.is_empty()));
        decoded.samples.insert(1, Sample::new(9, 0, at(0), at(1)));
        let mine = decoded.samples_of(7);
        assert!(matches!(mine, Cow::Owned(_)));
        assert_eq!(mine.iter().map(|s| s.seq).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(decoded.samples_of(9).len(), 1);
        assert!(decoded.samples_of(3).is_empty());
    }
}
