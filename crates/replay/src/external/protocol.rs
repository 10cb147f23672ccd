//! The wire format of an external policy: one JSON line per batch of frames from jitterlab,
//! one JSON line per batch of picks back (`docs/external-policy.md`).

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{Lifecycle, Sample};
use serde::Deserialize;

use super::{Script, ScriptFrame};

/// The protocol version, sent in every batch as `"v"`.
pub(super) const VERSION: u32 = 1;

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
pub(super) struct Encoder<'a> {
    pub(super) samples: &'a [Sample],
    pub(super) script: &'a Script,
    pub(super) origin: Origin,
    /// Whether pushes carry the values.
    pub(super) values: bool,
}

/// Writes batch `batch` (frames `frames` of the script, their packets from `first_packet`) as
/// one line into `out`.
pub(super) fn encode_batch(
    out: &mut String,
    e: &Encoder<'_>,
    batch: u64,
    frames: &[ScriptFrame],
    mut first_packet: usize,
) {
    let Encoder {
        samples,
        script,
        origin,
        values,
    } = *e;
    // itoa and ryu rather than `write!`: the encoder is on the benchmark's critical path
    // (bench/exec.sh), and `fmt` is several times slower for numbers.
    let mut int = itoa::Buffer::new();
    let mut float = ryu::Buffer::new();
    let mut num = |out: &mut String, n: i64| out.push_str(int.format(n));
    out.clear();
    out.push_str("{\"v\":");
    num(out, i64::from(VERSION));
    out.push_str(",\"batch\":");
    num(out, i64::try_from(batch).unwrap_or(i64::MAX));
    out.push_str(",\"n\":");
    num(out, frames.len() as i64);
    out.push_str(",\"frames\":[");
    for (i, frame) in frames.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"at\":");
        num(out, (frame.at - origin.local).as_nanos());
        out.push_str(",\"now\":");
        num(out, (frame.now - origin.send).as_nanos());
        out.push_str(",\"push\":[");
        for (j, &(p, arrival)) in script.packets[first_packet..frame.pushed]
            .iter()
            .enumerate()
        {
            if j > 0 {
                out.push(',');
            }
            let s = &samples[p.idx as usize];
            out.push_str("{\"id\":");
            num(out, i64::from(p.idx));
            out.push_str(",\"seq\":");
            num(out, p.seq);
            out.push_str(",\"send\":");
            num(out, (p.send - origin.send).as_nanos());
            out.push_str(",\"arrival\":");
            num(out, (arrival - origin.local).as_nanos());
            if values {
                out.push_str(",\"values\":[");
                for (k, v) in s.values.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    if v.is_finite() {
                        out.push_str(float.format_finite(*v));
                    } else {
                        out.push_str("null");
                    }
                }
                out.push(']');
            }
            if p.repeat == Some(true) {
                out.push_str(",\"repeat\":true");
            }
            if let Some(state) = s.state {
                out.push_str(",\"state\":");
                num(out, i64::from(state));
            }
            if let Some(event) = s.event {
                out.push_str(match event {
                    Lifecycle::Spawn => ",\"event\":\"spawn\"",
                    Lifecycle::Teleport => ",\"event\":\"teleport\"",
                    Lifecycle::Despawn => ",\"event\":\"despawn\"",
                });
            }
            out.push('}');
        }
        first_packet = frame.pushed;
        out.push_str("]}");
    }
    out.push_str("]}\n");
}

/// One reply line.
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
