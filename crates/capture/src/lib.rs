//! Capture side of jitterlab: the trace file format, payload decoders and importers.
//!
//! A **trace** records when packets arrived (local clock, nanoseconds) and what they carried.
//! [`Writer`] appends records after a [`Header`]; [`Reader`] streams them back and tolerates a
//! file cut off mid-record. [`decode::decode_trace`] turns packets into [`Sample`]s, each with
//! its sequence number, send time (sender clock) and arrival time (local clock) kept apart
//! (contracts C1, C2). [`stats::stream_stats`] gives what `jitterlab info` prints.
//! [`discover::discover`] proposes a `layout:` spec for an unknown protocol from its payloads.
//!
//! # Features
//! All are on by default; a crate that only reads traces (the replay engine) turns them off
//! and builds without their dependencies.
//! - `import`: `import` (CSV logs, through `csv`) and `pcap::read_capture` (pcap and pcapng,
//!   through `pcap-parser` and `etherparse`).
//! - `export`: `export` (traces written back as pcapng or pcap captures; no dependencies).
//! - `live`: `live` (capture, the recording relay and its impairment) and `sender` (the probe
//!   sender): kernel receive timestamps through `nix` on Linux, macOS and the BSDs, the
//!   standard library's sockets (with `socket2` for the receive buffer) elsewhere, Windows
//!   among them (`live::TIMESTAMPS` says which).
//! - `compress`: gzip and zstd inputs opened through [`source::Source`] (pure Rust: flate2 on
//!   miniz_oxide, ruzstd); without it `source` still reads plain files and standard input.
//!
//! # Example
//! ```
//! # #[cfg(feature = "import")] {
//! use jitterlab_capture::{Reader, Writer, import::import_csv, decode::decode_trace};
//!
//! let csv = "seq,send_ms,arrival_ms,value\n3,150,151,15\n1,50,152,5\n2,100,153,10\n";
//! let imported = import_csv(csv.as_bytes(), "inline.csv")?;
//! let mut writer = Writer::new(Vec::new(), &imported.header)?;
//! for record in &imported.records {
//!     writer.write(record)?;
//! }
//! let bytes = writer.into_inner();
//! let decoded = decode_trace(Reader::new(&bytes[..])?, None)?;
//! let seqs: Vec<i64> = decoded.samples.iter().map(|s| s.seq).collect();
//! assert_eq!(seqs, [3, 1, 2]); // arrival order, as received
//! # }
//! # Ok::<(), jitterlab_capture::Error>(())
//! ```

pub mod decode;
pub mod discover;
mod error;
#[cfg(feature = "export")]
pub mod export;
pub mod filter;
pub mod format;
#[cfg(feature = "import")]
pub mod import;
#[cfg(feature = "live")]
pub mod live;
pub mod netmodel;
pub mod output;
pub mod pcap;
pub mod rng;
pub mod sdp;
#[cfg(feature = "live")]
pub mod sender;
pub mod source;
pub mod spec;
pub mod stats;
pub mod synth;
pub mod testdata;
pub mod time;
pub mod timing;
pub mod trace;

pub use decode::{Decoded, Sample, StreamInfo};
pub use error::Error;
pub use format::Format;
pub use time::Nanos;
pub use trace::{Header, Reader, Record, RecordKind, Writer};
