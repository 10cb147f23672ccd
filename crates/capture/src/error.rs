//! The capture crate's error type.

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
    /// An argument or option value is out of range or malformed.
    #[error("{0}")]
    Invalid(String),
    /// An output file exists and overwriting was not asked for.
    #[error("{path} already exists (pass --force to overwrite)")]
    Exists {
        /// The path.
        path: String,
    },
    /// An I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
