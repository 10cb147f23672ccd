//! The report crate's error type.

/// Failures while replaying for, drawing or writing a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Drawing or encoding a figure failed.
    #[error("figure: {0}")]
    Plot(String),
    /// Building or writing a table failed.
    #[error("table: {0}")]
    Table(String),
    /// A sweep's results file that cannot be read back.
    #[error("{}: {reason}", path.display())]
    Results {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A replay failed.
    #[error(transparent)]
    Replay(#[from] jitterlab_replay::Error),
    /// Reading or writing a file failed.
    #[error(transparent)]
    Capture(#[from] jitterlab_capture::Error),
    /// An I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<polars::error::PolarsError> for Error {
    fn from(e: polars::error::PolarsError) -> Self {
        Self::Table(e.to_string())
    }
}
