//! What decoding yields: samples (sequence, send time, arrival, values), their lifecycle
//! events, per-stream information, and why a packet could not be decoded.

use std::fmt;

use crate::time::Nanos;
use crate::trace::{Direction, Endpoint};

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

/// How many values a [`Sample`] keeps inline, without an allocation: seven, a position and a
/// rotation quaternion (the probe's and `synth`'s channels).
pub const INLINE_VALUES: usize = 7;

/// A sample's values: a small vector (a slice when read; `Vec<f64>` converts with `.into()`).
pub type Values = smallvec::SmallVec<[f64; INLINE_VALUES]>;

/// One decoded packet. The three clocks stay apart (C1, C2): `seq` identifies the sample,
/// `send` (sender clock) orders it, `arrival` (local clock) says when it became available.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Index into [`Decoded::streams`](super::Decoded::streams).
    pub stream: u32,
    /// Sequence number or tick, extended past 16/32-bit wrap-around.
    pub seq: i64,
    /// Send time on the sender's clock (RTP: extended timestamp / clock rate).
    pub send: Nanos,
    /// Arrival time on the local clock (for ground truth: the local send time).
    pub arrival: Nanos,
    /// Continuous values (empty for RTP), inline up to [`INLINE_VALUES`].
    pub values: Values,
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
    /// Payload bytes: RTP's payload after the header and padding, a message's length for
    /// other decoders (0 when unknown). A video frame's size is the sum of its packets'.
    pub size: u32,
}

impl Sample {
    /// A sample with no values, state, event or payload type.
    pub fn new(stream: u32, seq: i64, send: Nanos, arrival: Nanos) -> Self {
        Self {
            stream,
            seq,
            send,
            arrival,
            values: Values::new(),
            state: None,
            event: None,
            marker: false,
            payload_type: None,
            rtp_timestamp: 0,
            rtp_clock: 0,
            size: 0,
        }
    }

    /// The same sample carrying `values`.
    pub fn with_values(mut self, values: impl Into<Values>) -> Self {
        self.values = values.into();
        self
    }
}

/// What identifies a stream and what is known about it.
#[derive(Clone, Debug, PartialEq)]
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
    /// Which way the stream's first record went (relay traces; [`Direction::Unknown`]
    /// elsewhere). Streams of different directions are kept apart by their addresses, or for
    /// probes by the direction itself.
    pub direction: Direction,
    /// The first payload type seen (RTP).
    pub payload_type: Option<u8>,
    /// Media clock rate in Hz (RTP). `None` means send times are unknown: no jitter is made up.
    pub clock_rate: Option<u32>,
    /// Value channel names, from the trace's `channels` hint.
    pub channels: Vec<String>,
    /// What the stream's flow carries: `rtp`, `probe`, `layout`, `enet`, `kcp`, `raknet`,
    /// `periodic` or `udp`.
    pub protocol: &'static str,
    /// Within a transport's flow, the lane this stream counts in (`channel 1 unreliable`).
    pub lane: Option<String>,
    /// Whether the packets carry send times (probe, layout, a transport's stamp, periodic
    /// inference); for RTP, the clock rate decides.
    pub send_times: bool,
    /// The clock rate inferred from RTP timestamps against arrival times, when neither
    /// `--clock-rate`, SDP nor the static table gave one.
    pub clock_inferred: Option<ClockInference>,
    /// How send times were inferred, when the packets carry none of their own.
    pub send_inferred: Option<SendInference>,
    /// The encoding (RTP): from the capture's SDP (`a=rtpmap`) or the static payload-type
    /// table, as it is spelt there (`PCMA`, `opus`, `H264`).
    pub encoding: Option<String>,
    /// Audio or video (RTP): from the SDP media line, else the static payload-type table or
    /// a known video encoding name; `None` when nothing says.
    pub media: Option<MediaKind>,
}

/// What an RTP stream carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    /// Sound: played out sample by sample.
    Audio,
    /// Pictures: packets sharing a timestamp form one frame.
    Video,
}

impl MediaKind {
    /// `audio` or `video`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Audio => "audio",
            Self::Video => "video",
        }
    }

    /// The kind an SDP media line names (`m=audio …`, `m=video …`).
    pub fn from_sdp(media: &str) -> Option<Self> {
        match media {
            m if m.eq_ignore_ascii_case("audio") => Some(Self::Audio),
            m if m.eq_ignore_ascii_case("video") => Some(Self::Video),
            _ => None,
        }
    }

    /// The kind an encoding name implies: video for the video encodings RTP payload formats
    /// define, none for those that carry neither (DTMF, comfort noise, FEC, MPEG-TS), audio
    /// for every other name (RTP's audio encodings are far more numerous).
    pub fn of_encoding(encoding: &str) -> Option<Self> {
        const VIDEO: &[&str] = &[
            "H261",
            "H263",
            "H263-1998",
            "H263-2000",
            "H264",
            "H264-SVC",
            "H265",
            "HEVC",
            "VP8",
            "VP9",
            "AV1",
            "MP4V-ES",
            "JPEG",
            "MPV",
            "CelB",
            "nv",
            "theora",
            "raw",
            "jpeg2000",
            "vc2",
        ];
        const NOT_AUDIO: &[&str] = &["MP2T", "telephone-event", "CN", "red", "ulpfec", "rtx"];
        if VIDEO.iter().any(|v| v.eq_ignore_ascii_case(encoding)) {
            Some(Self::Video)
        } else if NOT_AUDIO.iter().any(|v| v.eq_ignore_ascii_case(encoding)) {
            None
        } else {
            Some(Self::Audio)
        }
    }
}

/// Send times inferred for a stream whose packets do not carry them.
#[derive(Clone, Debug, PartialEq)]
pub enum SendInference {
    /// From the stream's sequence numbers: message `n` sent at `n × period` (a transport
    /// that numbers every message but stamps few, as ENet's unreliable ones, or none, as
    /// RakNet's).
    Sequence {
        /// The period, fitted to the lower envelope of arrivals against sequence numbers, ns.
        period_ns: f64,
    },
    /// From the arrivals alone (`--decoder periodic`; see [`super::periodic`]).
    Periodic(super::periodic::Estimate),
    /// `--decoder periodic` found no period: the stream has no send times.
    NoPeriod,
}

/// A media clock rate inferred from a stream's RTP timestamps against its arrival times, with
/// its evidence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockInference {
    /// The standard rate taken (8, 16, 32, 44.1, 48 or 90 kHz); `None` when the measurement
    /// is near none of them, or the stream is too short to tell: no rate is made up.
    pub hz: Option<u32>,
    /// The measured rate: RTP timestamp units per second of arrival time (median of slopes).
    pub measured_hz: u32,
    /// The standard rate nearest the measurement.
    pub nearest_hz: u32,
    /// Packets the measurement used.
    pub packets: u64,
    /// The arrival-time span they cover, ms.
    pub span_ms: u64,
}

impl StreamInfo {
    /// Whether send times are meaningful (the clock rate is known, or the decoder carries times).
    pub fn has_send_times(&self) -> bool {
        if self.ssrc.is_some() {
            self.clock_rate.is_some()
        } else {
            self.send_times
        }
    }

    /// `SRC-DST`, as `--flow` takes it.
    pub fn flow(&self) -> String {
        super::flow::flow_label(self.src, self.dst)
    }

    /// A short human label: `ssrc 0x1A2B3C4D 10.0.0.1:5004→10.0.0.2:5004`, `probe 3`,
    /// `enet channel 0 unreliable …` or `udp …`.
    pub fn label(&self) -> String {
        let mut s = match (self.ssrc, self.probe_stream, &self.lane) {
            (Some(ssrc), _, _) => format!("ssrc {ssrc:#010X}"),
            (None, _, Some(lane)) => format!("{} {lane}", self.protocol),
            (None, Some(p), None) if self.protocol == "probe" => format!("probe {p}"),
            (None, Some(p), None) if self.protocol == "layout" && p != 0 => {
                format!("layout stream {p}")
            }
            (None, _, None) if self.protocol != "probe" => self.protocol.to_owned(),
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
