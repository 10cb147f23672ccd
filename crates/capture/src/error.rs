//! The capture crate's error type.
//!
//! Messages say what is wrong with the input and carry what is needed to fix it (the key, the
//! value, the line), but never name a command-line flag: the library does not know how a
//! value reached it. The CLI adds the flag where it prints the error.

use crate::spec::SpecError;

/// Everything that can go wrong reading, writing or importing traces.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is not a jitterlab trace (another format, empty, or a damaged header).
    #[error("not a jitterlab trace: {reason}")]
    NotATrace {
        /// What was found instead.
        reason: String,
    },
    /// The trace was written by a newer jitterlab.
    #[error("trace format version {found} is newer than this build reads ({supported})")]
    UnsupportedVersion {
        /// The file's version.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// A record in the middle of the file is malformed (not merely cut short).
    #[error("corrupt record #{index} at byte offset {offset}: {reason}")]
    CorruptRecord {
        /// Byte offset of the record's first byte.
        offset: u64,
        /// Zero-based index of the record.
        index: u64,
        /// What the decoder found.
        reason: String,
    },
    /// A pcap or pcapng file that cannot be read past this point.
    #[error("capture file, byte offset {offset}: {reason}")]
    Capture {
        /// Byte offset of the record (or header) at fault.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A CSV log has a malformed header or row.
    #[error("CSV line {line}, column {column}: {reason}")]
    Csv {
        /// One-based line number.
        line: u64,
        /// Column name (or number).
        column: String,
        /// What is wrong.
        reason: String,
    },
    /// A name that is not one of those known (a decoder, a motion, a profile).
    #[error("unknown {what} '{name}' (known: {known})")]
    Unknown {
        /// What kind of name: "decoder", "motion", "profile".
        what: &'static str,
        /// The name given.
        name: String,
        /// The names known, comma-separated.
        known: String,
    },
    /// A `layout:` decoder spec that does not parse.
    #[error("decoder layout:{spec}: {reason}")]
    Layout {
        /// The spec given.
        spec: String,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// A destination that cannot be reached.
    #[error("cannot send to {to}")]
    Unreachable {
        /// The destination.
        to: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// An output path without a file name (`/`, `..`).
    #[error("{path} is not a file name")]
    NotAFileName {
        /// The path given.
        path: String,
    },
    /// A setting (a rate, a size, a duration) is out of range.
    #[error("{setting} {value}: {reason}")]
    Setting {
        /// Which setting, e.g. `rate`.
        setting: &'static str,
        /// The value given, as text.
        value: String,
        /// What is allowed.
        reason: String,
    },
    /// A key of a network model string (`delay=40ms,loss=2%`) has a bad value, or an item is
    /// not `key=value`.
    #[error("model key {key}: {reason}")]
    ModelKey {
        /// The key (the whole item when it has no `=`).
        key: String,
        /// What is wrong with the value.
        reason: SpecError,
    },
    /// A network model string names a key that does not exist.
    #[error("model key {key}: unknown key (known: {known})")]
    UnknownModelKey {
        /// The key given.
        key: String,
        /// The keys a model may use.
        known: &'static str,
    },
    /// A file a network model reads (a link trace, a delay series) cannot be used.
    #[error("{what} {path}{}: {reason}", line_suffix(.line))]
    ModelFile {
        /// `link trace` or `delay series`.
        what: &'static str,
        /// The file.
        path: String,
        /// The one-based line at fault, if one is.
        line: Option<u64>,
        /// What is wrong.
        reason: String,
    },
    /// A model the relay's impairment cannot apply (a bad model, or receiver-side keys).
    #[error("impairment: {0}")]
    Impairment(Box<Self>),
    /// Receiver-side model keys given where only the network can be modelled (the relay).
    #[error("offset, drift and pause describe a receiver's clock; a relay cannot apply them")]
    ReceiverKeys,
    /// A packet filter expression does not parse.
    #[error("filter '{text}': {reason}")]
    Filter {
        /// The whole expression.
        text: String,
        /// The word that does not fit, and why.
        reason: String,
    },
    /// An RTP clock rate assignment (`PT=HZ`) does not parse or is out of range.
    #[error("clock rate '{spec}': {reason}")]
    ClockRate {
        /// The assignment given.
        spec: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The capture cannot listen on its address.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why not.
        source: std::io::Error,
    },
    /// A network address that is neither `HOST:PORT` nor a port.
    #[error("'{text}': expected HOST:PORT or PORT")]
    Address {
        /// The text given.
        text: String,
    },
    /// A host name that does not resolve (or resolves to no address).
    #[error("cannot resolve host '{host}': {source}")]
    Resolve {
        /// The host name.
        host: String,
        /// Why not.
        source: std::io::Error,
    },
    /// A socket option live capture needs cannot be set.
    #[error("cannot enable {option}: {source}")]
    SocketOption {
        /// The option, e.g. `SO_TIMESTAMPNS`.
        option: &'static str,
        /// Why not.
        source: std::io::Error,
    },
    /// A capture thread panicked (a bug; the trace written so far stays readable).
    #[error("{thread} panicked")]
    Panicked {
        /// Which thread, e.g. `the writer thread`.
        thread: &'static str,
    },
    /// A lock shared by the capture threads was poisoned by a panic (a bug).
    #[error("internal lock poisoned")]
    Poisoned,
    /// The trace names no payload decoder and none was given.
    #[error("the trace names no decoder")]
    NoDecoder,
    /// An output file exists and overwriting was not asked for.
    #[error("{path} already exists")]
    Exists {
        /// The path.
        path: String,
    },
    /// A record a capture file cannot hold (exporting to pcap or pcapng).
    #[error("record #{index}: {reason}")]
    Export {
        /// Zero-based index of the record in the trace.
        index: u64,
        /// What the format cannot hold.
        reason: String,
    },
    /// An input that cannot be opened, or whose first bytes cannot be read or decompressed.
    #[error("cannot {action} {path}: {error}")]
    Input {
        /// `open` or `read`.
        action: &'static str,
        /// The path, or `standard input`.
        path: String,
        /// Why not (in the message, not a separate cause, so it is said once).
        error: std::io::Error,
    },
    /// An I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// ` line N` after a file name, or nothing.
fn line_suffix(line: &Option<u64>) -> String {
    line.map(|l| format!(" line {l}")).unwrap_or_default()
}
