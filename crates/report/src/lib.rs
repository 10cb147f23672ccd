//! Reports for jitterlab: PNG figures (plotters, embedded font) and summary tables (polars).
//!
//! [`run_policies`] replays one stream through several configurations and keeps per-frame
//! logs; [`write_report`] turns them into `network.png`, `buffer-depth.png`, `error.png`,
//! `summary.csv`, `index.md` and `index.html`. [`Figure`] is the small drawing model underneath:
//! titled panels of series, reduced per pixel column so long traces draw quickly.
//! [`timeline`] writes replay timelines (one row per frame or playout slot) as CSV or Parquet
//! in batches (also NDJSON), and any other table through [`write_frame`].
//!
//! # Example
//! ```
//! use jitterlab_report::figure::{Figure, Panel, Series, Style};
//!
//! let panel = Panel {
//!     title: "ramp".into(),
//!     x_label: "time (s)".into(),
//!     y_label: "value".into(),
//!     series: vec![Series { label: "x".into(), color: 0, style: Style::Line,
//!                           points: vec![(0.0, 0.0), (1.0, 1.0)] }],
//!     ..Panel::default()
//! };
//! let png = Figure { size: (320, 240), ..Figure::new("demo", vec![panel]) }.render_png()?;
//! assert_eq!(&png[1..4], b"PNG");
//! # Ok::<(), jitterlab_report::Error>(())
//! ```

pub mod envelope;
mod error;
pub mod figure;
pub mod figures;
pub mod frame_io;
pub mod packets;
pub mod pass;
pub mod recovery;
pub mod results;
pub mod runs;
pub mod table;
#[cfg(test)]
mod test_support;
pub mod timeline;
pub mod trace;
#[cfg(test)]
mod trace_oracle;
mod write;

pub use error::Error;
pub use figure::Figure;
pub use frame_io::{TableFormat, write_frame};
pub use packets::packet_table;
pub use runs::{FrameLog, PlayoutLog, Run, RunsPass, play_policies, run_policies};
pub use table::summary_frame;
pub use trace::TraceFigures;
pub use write::{ReportInput, Written, report_figures, write_full_report, write_report};
