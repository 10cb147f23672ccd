//! Decoding one record at a time into per-stream samples: RTP sequence and timestamp
//! extension, probe, layout and transport streams, plain UDP flows, duplicates and ground
//! truth.

use std::collections::HashMap;

use super::flow::PacketKind;
use super::transport::{Counter, Parser, SendStamp, Transport};
use super::{
    DecodeError, DecoderConfig, DecoderKind, Sample, StreamInfo, in_range, layout, probe, rtp,
};
use crate::sdp::RtpMap;
use crate::time::Nanos;
use crate::trace::{Direction, Endpoint, Record, RecordKind, RecordRef};

/// What a stream is within its flow. Flows are numbered (`pair`: one per source and
/// destination), so that telling whether a packet belongs to the previous packet's stream
/// compares a few integers, not socket addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum StreamKey {
    Rtp {
        ssrc: u32,
        pair: u32,
    },
    Probe {
        stream: u32,
        direction: Direction,
    },
    Flow {
        stream: u32,
        pair: u32,
    },
    Lane {
        transport: Transport,
        lane: u32,
        pair: u32,
    },
    Plain {
        pair: u32,
    },
}

/// A flow's number and whether its records are ground truth.
type FlowSide = (u32, bool);

/// How one record is read: what its flow is (see [`super::flow`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Read {
    /// RTP, with RTCP, STUN, DTLS and TURN counted apart.
    Media,
    /// jitterlab probe packets.
    Probe,
    /// The configured `layout:` spec.
    Layout,
    /// A game transport's framing.
    Transport(Transport),
    /// Plain UDP: one stream per flow, numbered in arrival order, no send times.
    Plain,
}

#[derive(Debug)]
struct StreamState {
    seq: rtp::Extender,
    timestamp: rtp::Extender,
    /// Per payload type: the Wireshark clock (0 = none or telephone-event).
    clocks: Vec<(u8, u32)>,
    /// A layout's wrapping counters (made at the stream's first packet).
    layout: Option<layout::Wraps>,
    /// A transport lane's sequence extender, as wide as its counter (made at its first
    /// message).
    lane_seq: Option<rtp::Extender>,
    /// A transport stamp's extender (made at the stream's first stamped message).
    stamp: Option<rtp::Extender>,
    /// Packets so far (a plain flow's sequence numbers).
    packets: i64,
}

impl StreamState {
    fn new() -> Self {
        Self {
            seq: rtp::Extender::sequence(),
            timestamp: rtp::Extender::timestamp(),
            clocks: Vec::new(),
            layout: None,
            lane_seq: None,
            stamp: None,
            packets: 0,
        }
    }
}

/// What a stream is made of, for its [`StreamInfo`].
struct Origin {
    protocol: &'static str,
    ssrc: Option<u32>,
    own_id: Option<u32>,
    lane: Option<String>,
    payload_type: Option<u8>,
    send_times: bool,
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
    /// One transport parser per flow and direction of record (received, ground truth).
    parsers: HashMap<FlowSide, Box<dyn Parser>>,
    /// Per stream: whether a transport message came without a send time.
    unstamped: Vec<bool>,
    /// Flow numbers (see `pair_of`).
    pairs: HashMap<FlowEnds, u32>,
    /// The previous record's flow and number: most records belong to the flow before.
    last_pair: Option<(FlowEnds, u32)>,
}

/// A flow's source and destination, as records carry them.
type FlowEnds = (Option<Endpoint>, Option<Endpoint>);

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
            parsers: HashMap::new(),
            unstamped: Vec::new(),
            pairs: HashMap::new(),
            last_pair: None,
        }
    }

    /// The decoder's configuration.
    pub fn config(&self) -> &DecoderConfig {
        &self.config
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

    /// Consumes the decoder, returning its streams and, per stream, whether any of its
    /// transport messages came without a send time.
    pub(super) fn into_parts(self) -> (Vec<StreamInfo>, Vec<bool>) {
        (self.streams, self.unstamped)
    }

    fn stream_for(
        &mut self,
        key: StreamKey,
        rec: &RecordRef<'_>,
        origin: impl FnOnce() -> Origin,
    ) -> u32 {
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
        let o = origin();
        let (encoding, media) = match o.payload_type {
            Some(pt) => self.config.encoding(pt, rec.src, rec.dst, rec.time),
            None => (None, None),
        };
        self.streams.push(StreamInfo {
            id,
            ssrc: o.ssrc,
            probe_stream: o.own_id,
            src: rec.src,
            dst: rec.dst,
            direction: rec.direction,
            payload_type: o.payload_type,
            clock_rate: o
                .payload_type
                .and_then(|pt| self.config.clock_rate(pt, rec.src, rec.dst, rec.time).0),
            channels: self.channels.clone(),
            protocol: o.protocol,
            lane: o.lane,
            send_times: o.send_times,
            clock_inferred: None,
            send_inferred: None,
            encoding,
            media,
        });
        self.unstamped.push(false);
        self.state.push([StreamState::new(), StreamState::new()]);
        self.keys.insert(key, id);
        self.last = Some((key, id));
        id
    }

    /// Decodes one record into a sample, with the configured decoder (`rtp`, `probe` or
    /// `layout:`; a transport's datagram may hold several messages: see `decode_all`).
    ///
    /// # Errors
    /// The payload is not a valid packet for this decoder, or holds no single sample.
    pub fn decode(&mut self, rec: &Record) -> Result<Sample, DecodeError> {
        let read = match &self.config.kind {
            DecoderKind::Probe => Read::Probe,
            DecoderKind::Layout(_) => Read::Layout,
            DecoderKind::Transport(t) => Read::Transport(*t),
            DecoderKind::Udp | DecoderKind::Periodic => Read::Plain,
            DecoderKind::Rtp | DecoderKind::Auto => Read::Media,
        };
        let mut out = Vec::with_capacity(1);
        let mut counted = None;
        let pair = self.pair_of(rec.src, rec.dst);
        self.decode_all(read, &rec.view(), pair, &mut out, |what| {
            counted = Some(what)
        })?;
        match (out.pop(), counted) {
            (Some(sample), _) if out.is_empty() => Ok(sample),
            (Some(_), _) => Err(DecodeError::new("the datagram holds several messages")),
            (None, Some(what)) => Err(DecodeError::new(format!("a {what} packet, not media"))),
            (None, None) => Err(DecodeError::new("the datagram holds no message")),
        }
    }

    /// The number of the flow from `src` to `dst` (received and ground-truth records of one
    /// flow share it, so that their streams are the same).
    pub(super) fn pair_of(&mut self, src: Option<Endpoint>, dst: Option<Endpoint>) -> u32 {
        if let Some((flow, pair)) = self.last_pair
            && flow == (src, dst)
        {
            return pair;
        }
        let next = self.pairs.len() as u32;
        let pair = *self.pairs.entry((src, dst)).or_insert(next);
        self.last_pair = Some(((src, dst), pair));
        pair
    }

    /// Decodes one record of flow `pair` (see [`Self::pair_of`]) read as `read` into the samples it carries (none, one, or several
    /// for a transport), appended to `out`; packets or control messages that are counted
    /// apart (RTCP, STUN, a transport's acknowledgements) are passed to `counted` by name.
    ///
    /// # Errors
    /// The payload is not a valid packet for `read`.
    pub(super) fn decode_all(
        &mut self,
        read: Read,
        rec: &RecordRef<'_>,
        pair: u32,
        out: &mut Vec<Sample>,
        mut counted: impl FnMut(&'static str),
    ) -> Result<(), DecodeError> {
        let slot = usize::from(rec.kind() == RecordKind::Sent);
        match read {
            Read::Probe => out.push(self.probe(rec)?),
            Read::Layout => out.push(self.layout(rec, pair, slot)?),
            Read::Plain => {
                let key = StreamKey::Plain { pair };
                let periodic = matches!(self.config.kind, DecoderKind::Periodic);
                let stream = self.stream_for(key, rec, || Origin {
                    protocol: if periodic { "periodic" } else { "udp" },
                    ssrc: None,
                    own_id: None,
                    lane: None,
                    payload_type: None,
                    send_times: false,
                });
                let state = &mut self.state[stream as usize][slot];
                let seq = state.packets;
                state.packets += 1;
                out.push(Sample::new(stream, seq, Nanos::ZERO, rec.time));
            }
            Read::Transport(t) => self.transport(t, rec, pair, slot, out, &mut counted)?,
            // RTP's first byte, and not RTCP: straight to the RTP parser, which names what is
            // wrong (the common case, parsed once).
            Read::Media
                if matches!(rec.payload.first(), Some(128..=191))
                    && !super::flow::is_rtcp(rec.payload) =>
            {
                out.push(self.rtp(rec, pair, slot)?);
            }
            Read::Media => match PacketKind::of(rec.payload) {
                PacketKind::Rtp => out.push(self.rtp(rec, pair, slot)?),
                PacketKind::Probe if matches!(self.config.kind, DecoderKind::Auto) => {
                    out.push(self.probe(rec)?);
                }
                kind @ (PacketKind::Rtcp
                | PacketKind::Stun
                | PacketKind::Dtls
                | PacketKind::TurnChannel
                | PacketKind::Sip) => counted(kind.name()),
                // The RTP parser names what is wrong with it.
                PacketKind::Probe | PacketKind::Other => out.push(self.rtp(rec, pair, slot)?),
            },
        }
        Ok(())
    }

    fn probe(&mut self, rec: &RecordRef<'_>) -> Result<Sample, DecodeError> {
        let p = probe::Probe::parse(rec.payload)?;
        let seq = in_range("probe tick", i128::from(p.tick))?;
        let key = StreamKey::Probe {
            stream: p.stream,
            direction: rec.direction,
        };
        let stream = self.stream_for(key, rec, || Origin {
            protocol: "probe",
            ssrc: None,
            own_id: Some(p.stream),
            lane: None,
            payload_type: None,
            send_times: true,
        });
        Ok(Sample {
            values: p.values,
            state: Some(p.state),
            event: p.event,
            size: rec.orig_len,
            ..Sample::new(stream, seq, p.send, rec.time)
        })
    }

    fn layout(
        &mut self,
        rec: &RecordRef<'_>,
        pair: u32,
        slot: usize,
    ) -> Result<Sample, DecodeError> {
        let DecoderKind::Layout(layout) = &self.config.kind else {
            return Err(DecodeError::new("no layout spec given"));
        };
        let mut d = layout.decode(rec.payload)?;
        let fresh = layout.wraps();
        let key = StreamKey::Flow {
            stream: d.stream,
            pair,
        };
        let stream = self.stream_for(key, rec, || Origin {
            protocol: "layout",
            ssrc: None,
            own_id: Some(d.stream),
            lane: None,
            payload_type: None,
            send_times: true,
        });
        self.state[stream as usize][slot]
            .layout
            .get_or_insert(fresh)
            .extend(&mut d)?;
        Ok(Sample {
            values: d.values.into(),
            state: d.state,
            ..Sample::new(stream, d.seq, d.send, rec.time)
        })
    }

    fn transport(
        &mut self,
        t: Transport,
        rec: &RecordRef<'_>,
        pair: u32,
        slot: usize,
        out: &mut Vec<Sample>,
        counted: &mut impl FnMut(&'static str),
    ) -> Result<(), DecodeError> {
        let datagram = self
            .parsers
            .entry((pair, slot == 1))
            .or_insert_with(|| t.parser())
            .parse(rec.payload)?;
        for &what in &datagram.control {
            counted(what);
        }
        for m in datagram.messages {
            let key = StreamKey::Lane {
                transport: t,
                lane: m.lane,
                pair,
            };
            let stamped = m.send.is_some();
            let lane = m.lane_name;
            let stream = self.stream_for(key, rec, || Origin {
                protocol: t.name(),
                ssrc: None,
                own_id: None,
                lane: Some(lane),
                payload_type: None,
                send_times: stamped,
            });
            if !stamped {
                self.unstamped[stream as usize] = true;
            }
            let state = &mut self.state[stream as usize][slot];
            let e = state
                .lane_seq
                .get_or_insert_with(|| rtp::Extender::new(m.seq.bits.clamp(1, 32)));
            let seq = extend(e, m.seq, "transport sequence number")?;
            let send = match m.send {
                None => Nanos::ZERO,
                Some(SendStamp::Ticks { counter, unit_ns }) => {
                    let e = state
                        .stamp
                        .get_or_insert_with(|| rtp::Extender::new(counter.bits.clamp(1, 32)));
                    let ticks = extend(e, counter, "transport send time")?;
                    Nanos(in_range(
                        "transport send time (ns)",
                        i128::from(ticks) * i128::from(unit_ns),
                    )?)
                }
                Some(SendStamp::Seconds(s)) if s.is_finite() && s.abs() < 2.0e9 => {
                    Nanos::from_secs_f64(s)
                }
                Some(SendStamp::Seconds(s)) => {
                    return Err(DecodeError::new(format!("send time {s} s is not a time")));
                }
            };
            out.push(Sample::new(stream, seq, send, rec.time));
        }
        Ok(())
    }

    fn rtp(&mut self, rec: &RecordRef<'_>, pair: u32, slot: usize) -> Result<Sample, DecodeError> {
        let h = rtp::RtpHeader::parse(rec.payload)?;
        let key = StreamKey::Rtp { ssrc: h.ssrc, pair };
        let stream = self.stream_for(key, rec, || Origin {
            protocol: "rtp",
            ssrc: Some(h.ssrc),
            own_id: None,
            lane: None,
            payload_type: Some(h.payload_type),
            send_times: true,
        });
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
            Some(hz) => send_time(ts, hz),
            None => Nanos::ZERO,
        };
        Ok(Sample {
            stream,
            seq,
            send,
            arrival: rec.time,
            values: super::Values::new(),
            state: None,
            event: None,
            marker: h.marker,
            payload_type: Some(h.payload_type),
            rtp_timestamp: ts,
            rtp_clock,
            size: u32::try_from(h.payload_len).unwrap_or(u32::MAX),
        })
    }
}

/// An extended RTP timestamp at `hz` as a send time.
pub(crate) fn send_time(ts: i64, hz: u32) -> Nanos {
    Nanos(match ts.checked_mul(1_000_000_000) {
        Some(ns) => ns / i64::from(hz),
        None => (i128::from(ts) * 1_000_000_000 / i128::from(hz)) as i64,
    })
}

/// A transport counter extended past its width (64-bit counters are read as they are).
fn extend(e: &mut rtp::Extender, c: Counter, what: &str) -> Result<i64, DecodeError> {
    if c.bits > 32 {
        return in_range(what, i128::from(c.value));
    }
    Ok(e.extend(c.value as u32))
}
