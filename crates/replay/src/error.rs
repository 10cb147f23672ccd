//! The replay crate's error type. Messages say what is wrong with the input and carry what is
//! needed to fix it; none names a command-line flag (the CLI adds those as context).

/// Invalid policies, frame clocks, grids and inputs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A policy string names an unknown policy or key, or a value out of range.
    #[error("policy {policy}{}: {reason}", if key.is_empty() { String::new() } else { format!(", key {key}") })]
    Policy {
        /// The policy name.
        policy: String,
        /// The offending key (empty for the policy name itself).
        key: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// An external policy (`exec:CMD`) failed: its child crashed, timed out or broke the
    /// protocol (`docs/external-policy.md`).
    #[error("policy {policy}: {at}: {reason}")]
    External {
        /// The policy string.
        policy: String,
        /// Where in the replay: the batch, frame or packet.
        at: String,
        /// What went wrong.
        reason: String,
    },
    /// A frame rate that is not finite and positive, or above the limit.
    #[error("frame rate {fps} fps is out of range (allowed: >0 to 10000)")]
    FrameRate {
        /// The rate given.
        fps: f64,
    },
    /// Frame times that go backwards.
    #[error("frame times must not decrease ({later_ms} ms comes after {earlier_ms} ms)")]
    FrameTimesDecrease {
        /// The earlier time, ms.
        earlier_ms: f64,
        /// The time after it that is smaller, ms.
        later_ms: f64,
    },
    /// A line of a frame-time list that is not a time in ms.
    #[error("line {line}: '{text}' is not a frame time in ms")]
    FrameTimeLine {
        /// The line, from 1.
        line: usize,
        /// Its text.
        text: String,
    },
    /// A frame-time list without any time.
    #[error("no frame times")]
    NoFrameTimes,
    /// A hitch spec that does not parse.
    #[error("hitches '{text}': {reason}")]
    Hitches {
        /// The text given.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// A hitch probability outside [0, 1).
    #[error("hitch chance {chance} is out of range (allowed: 0 to below 1)")]
    HitchChance {
        /// The probability given.
        chance: f64,
    },
    /// A negative hitch length.
    #[error("hitch length must not be negative")]
    HitchLength,
    /// A clock mapping that does not parse.
    #[error("clock mapping '{text}': {reason}")]
    ClockMapping {
        /// The text given.
        text: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// An RTP stream whose clock rate is unknown, so it has no send times to replay.
    #[error("{stream}: RTP clock rate for payload type {payload_type} is unknown")]
    ClockRateUnknown {
        /// The stream's label.
        stream: String,
        /// Its payload type.
        payload_type: u8,
    },
    /// A stream whose packets carry no send times (a plain UDP flow, a transport that stamps
    /// none).
    #[error(
        "{stream}: no send times to replay ({protocol} carries none; `jitterlab discover` may \
         find a layout, or --decoder periodic infers them from the arrivals)"
    )]
    NoSendTimes {
        /// The stream's label.
        stream: String,
        /// What its flow carries.
        protocol: &'static str,
    },
    /// A stream read with `--decoder periodic` whose arrivals show no steady send period to
    /// infer send times from.
    #[error(
        "{stream}: no send times to replay (its arrivals show no steady send period for \
         --decoder periodic to infer them from; `jitterlab discover` may find a layout)"
    )]
    NoSendPeriod {
        /// The stream's label.
        stream: String,
    },
    /// A trace none of whose streams can be replayed.
    #[error("{trace}: none of its {streams} stream(s) can be replayed: {reason}")]
    NothingToReplay {
        /// The trace's name.
        trace: String,
        /// How many streams it has.
        streams: usize,
        /// Why the first one cannot.
        reason: String,
    },
    /// A trace with nothing to replay.
    #[error("{trace}: the trace holds no decodable packets")]
    NoPackets {
        /// The trace's name.
        trace: String,
    },
    /// A stream the trace does not have.
    #[error("stream {stream}: {trace} has {count} stream(s)")]
    NoSuchStream {
        /// The stream asked for.
        stream: u32,
        /// The trace's name.
        trace: String,
        /// How many streams it has.
        count: usize,
    },
    /// Discrete playout asked of a policy that only interpolates snapshots.
    #[error(
        "'{policy}' interpolates snapshots; discrete playout takes fixed or adaptive delays \
         (fixed, source, jitter, quantile, neteq)"
    )]
    NotPlayout {
        /// The policy's name.
        policy: &'static str,
    },
    /// A media buffer's policy asked to interpolate snapshots.
    #[error("policy {policy} models a media buffer that plays discrete frames: use --playout")]
    PlayoutOnly {
        /// The policy's name.
        policy: &'static str,
    },
    /// A sweep grid that does not parse or expands too far.
    #[error("{0}")]
    Grid(String),
    /// A grid that makes more configurations than allowed.
    #[error(
        "the grid makes {count} configurations, more than the limit of {limit} (narrow it, or \
         raise the limit)"
    )]
    TooManyConfigs {
        /// Configurations the grid makes.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A codec name the quality figures do not know.
    #[error("codec '{text}' is not known (known: {known}; or ie=N,bpl=N for values of your own)")]
    UnknownCodec {
        /// The text given.
        text: String,
        /// The names that are known.
        known: String,
    },
    /// A shard that does not parse.
    #[error("shard '{text}': {reason}")]
    Shard {
        /// The text given.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// `--shard auto` found no scheduler's variables, or one missing or out of range
    /// ([`crate::shard`]).
    #[error("--shard auto: {variable} {reason}")]
    ShardEnv {
        /// The environment variable at fault.
        variable: String,
        /// What is wrong with it (its value quoted).
        reason: String,
    },
}
