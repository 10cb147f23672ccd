//! The messages of an external policy, whatever their framing (`docs/external-policy.md`):
//! the hello, one message per batch of frames from jitterlab, one message per batch of picks
//! back. The framings are JSON Lines ([`super::json`]) and length-prefixed MessagePack
//! ([`super::msgpack`], replies read by [`super::msgpack_reply`]); both carry the same
//! document, key for key.

use std::fmt;
use std::str::FromStr;

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;
use serde::Deserialize;

use super::{Script, ScriptFrame};

/// The protocol version, sent in the hello and in every batch as `"v"`.
pub(super) const VERSION: u32 = 2;

/// How the messages of an external policy are framed (`exec(format=…)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// One JSON document per line (the default).
    #[default]
    Json,
    /// MessagePack, each message after its length as 4 bytes, big-endian.
    Msgpack,
}

impl Format {
    /// The name in `exec(format=…)` and in the hello.
    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Msgpack => "msgpack",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "json" | "jsonl" => Ok(Self::Json),
            "msgpack" | "messagepack" => Ok(Self::Msgpack),
            _ => Err(format!("unknown format {s} (allowed: json, msgpack)")),
        }
    }
}

/// The hello, jitterlab's first message in either format: one JSON line, so that a child can
/// check the framing before it reads a batch.
pub(super) fn hello(format: Format, values: bool) -> Vec<u8> {
    format!(
        "{{\"protocol\":\"jitterlab-exec\",\"v\":{VERSION},\"format\":\"{format}\",\"values\":{values}}}\n"
    )
    .into_bytes()
}

/// Where the protocol's times start: sender-clock times (send, now) count from the first
/// packet's send time, local times (arrival, at) from its arrival, so that they stay exact in
/// a double (a JavaScript number) for 104 days.
#[derive(Clone, Copy, Debug)]
pub(super) struct Origin {
    pub(super) send: Nanos,
    pub(super) local: Nanos,
}

impl Origin {
    pub(super) fn of(script: &Script) -> Self {
        script.packets.first().map_or(
            Self {
                send: Nanos::ZERO,
                local: Nanos::ZERO,
            },
            |&(p, at)| Self {
                send: p.send,
                local: at,
            },
        )
    }
}

/// What every batch of one replay is encoded from.
#[derive(Clone, Copy)]
pub(super) struct Encoder<'a> {
    pub(super) samples: &'a [Sample],
    pub(super) script: &'a Script,
    pub(super) origin: Origin,
    /// Whether pushes carry the values.
    pub(super) values: bool,
}

impl Encoder<'_> {
    /// Writes batch `batch` (frames `frames` of the script, their packets from
    /// `first_packet`) as one message of `format` into `out` (cleared first); an error when it cannot be framed.
    pub(super) fn batch(
        &self,
        format: Format,
        out: &mut Vec<u8>,
        batch: u64,
        frames: &[ScriptFrame],
        first_packet: usize,
    ) -> Result<(), String> {
        out.clear();
        match format {
            Format::Json => {
                super::json::encode_batch(out, self, batch, frames, first_packet);
                Ok(())
            }
            Format::Msgpack => super::msgpack::encode_batch(out, self, batch, frames, first_packet),
        }
    }
}

/// Reads one reply message of `format` (its framing removed); the error says why it is not one.
pub(super) fn decode_reply(format: Format, message: &[u8]) -> Result<Reply, String> {
    match format {
        Format::Json => serde_json::from_slice(message).map_err(|e| e.to_string()),
        Format::Msgpack => super::msgpack_reply::decode(message),
    }
}

/// One reply.
#[derive(Debug, Deserialize)]
pub(super) struct Reply {
    /// The batch answered.
    pub(super) batch: u64,
    /// One pick per frame of the batch, in order.
    pub(super) picks: Vec<PickMsg>,
    /// The child's own counters so far, if it keeps them.
    #[serde(default)]
    pub(super) counters: Option<CountersMsg>,
}

/// What the child showed at one frame.
#[derive(Debug, Deserialize)]
pub(super) struct PickMsg {
    /// How the frame is shown.
    pub(super) mode: ModeMsg,
    /// The playout delay in use, ns: the target is now − delay.
    pub(super) delay: i64,
    /// The left (or held) packet's id.
    #[serde(default)]
    pub(super) from: Option<u32>,
    /// The right packet's id.
    #[serde(default)]
    pub(super) to: Option<u32>,
    /// The interpolation factor.
    #[serde(default)]
    pub(super) alpha: Option<f64>,
    /// Why a hold.
    #[serde(default)]
    pub(super) hold: Option<HoldMsg>,
    /// Samples held at or after the target.
    #[serde(default)]
    pub(super) depth: Option<usize>,
    /// The display stood still at this frame.
    #[serde(default)]
    pub(super) frozen: bool,
    /// Playback ran faster or slower than real time.
    #[serde(default)]
    pub(super) scaled: bool,
}

/// A pick's mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ModeMsg {
    Interpolate,
    Hold,
    Extrapolate,
    Empty,
}

impl ModeMsg {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Interpolate => "interpolate",
            Self::Hold => "hold",
            Self::Extrapolate => "extrapolate",
            Self::Empty => "empty",
        }
    }
}

/// Why a hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum HoldMsg {
    Gap,
    AfterNewest,
    BeforeOldest,
}

/// The child's counters, cumulative.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct CountersMsg {
    pub(super) inserted: u64,
    pub(super) duplicates: u64,
    pub(super) late: u64,
    pub(super) stale: u64,
    pub(super) evicted: u64,
    pub(super) refused: u64,
}
