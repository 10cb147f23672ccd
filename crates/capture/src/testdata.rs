//! Where tests find the team's shared data set (real captures and link traces, never copied
//! into the project), and the packet framing the decoder fuzz targets and their regression
//! tests share.

use std::path::PathBuf;

use crate::decode::{Collector, Decoded, DecoderConfig};
use crate::pcap::{CaptureSummary, header_for};
use crate::{Nanos, Record};

/// Decodes `data` as the decoder fuzz targets frame it: packets each prefixed by a one-byte
/// length and a one-byte time step in ms (255 steps 3 ms back: captures are not always in
/// order), through the same collector `jitterlab info` uses.
pub fn decode_packets(config: DecoderConfig, mut data: &[u8]) -> Option<Decoded> {
    let header = header_for("fuzz", &CaptureSummary::default(), &config.name());
    let mut collector = Collector::new(&header, Some(config)).ok()?;
    let mut time = Nanos::ZERO;
    while let [len, step, rest @ ..] = data {
        let len = usize::from(*len).min(rest.len());
        let (payload, tail) = rest.split_at(len);
        time = if *step == 255 {
            Nanos(time.0 - 3_000_000)
        } else {
            Nanos(time.0 + i64::from(*step) * 1_000_000)
        };
        collector.push(&Record::received(time, payload.to_vec()));
        data = tail;
    }
    Some(collector.finish())
}

/// The directory `JITTERLAB_SHARED_DATA` points to, for tests over the shared data.
///
/// Unset: prints that the test skipped and returns `None` (a user's clone). Set: returns the
/// directory (relative paths are taken from the repository root).
///
/// # Panics
/// When the variable is set but the directory does not exist: CI must not skip silently.
pub fn shared_data() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("JITTERLAB_SHARED_DATA") else {
        eprintln!("skipped: JITTERLAB_SHARED_DATA is not set (point it at shared/data)");
        return None;
    };
    let mut dir = PathBuf::from(dir);
    if dir.is_relative() {
        dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(dir);
    }
    assert!(
        dir.is_dir(),
        "JITTERLAB_SHARED_DATA={} is not a directory",
        dir.display()
    );
    Some(dir)
}
