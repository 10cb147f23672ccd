//! Decoding one record at a time into per-stream samples: RTP sequence and timestamp
//! extension, probe and layout streams, duplicates and ground truth.

use std::collections::HashMap;

use super::{
    DecodeError, DecoderConfig, DecoderKind, Sample, StreamInfo, in_range, layout, probe, rtp,
};
use crate::sdp::RtpMap;
use crate::time::Nanos;
use crate::trace::{Direction, Endpoint, Record, RecordKind};

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
    /// A layout's wrapping counters (made at the stream's first packet).
    layout: Option<layout::Wraps>,
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
            layout: None,
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
                let mut d = layout.decode(&rec.payload)?;
                let fresh = layout.wraps();
                let key = StreamKey::Flow {
                    stream: d.stream,
                    src: rec.src,
                    dst: rec.dst,
                };
                let stream = self.stream_for(key, rec, None);
                self.state[stream as usize][slot]
                    .layout
                    .get_or_insert(fresh)
                    .extend(&mut d)?;
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
