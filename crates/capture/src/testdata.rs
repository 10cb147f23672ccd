//! Where tests find the team's shared data set (real captures and link traces, never copied
//! into the project), the packet framing the decoder fuzz targets and their regression tests
//! share, and the synthetic trace the replay benchmarks use.

use std::path::PathBuf;

use crate::decode::{Collector, Decoded, DecoderConfig, DecoderKind, Sample, StreamDecoder};
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

/// The replay benchmarks' trace: `packets` snapshots sent at 60 Hz through the `wifi` profile
/// with a walking motion (seed 1), the received ones decoded, in arrival order.
///
/// # Panics
/// Never: the profile is built in, generation writes to memory only and its probes decode.
pub fn snapshot_trace(packets: u64) -> Vec<Sample> {
    use crate::synth::{Config, Motion, generate_into, profile};
    let config = Config {
        rate_hz: 60.0,
        duration: Nanos::from_secs_f64(packets as f64 / 60.0),
        seed: 1,
        motion: Motion::Walk,
        model: profile("wifi").expect("the wifi profile is built in"),
        profile: None,
    };
    let mut dec = StreamDecoder::new(DecoderConfig::new(DecoderKind::Probe), vec![]);
    let mut out = Vec::new();
    generate_into(&config, |r| {
        if r.kind() == crate::RecordKind::Received {
            out.push(dec.decode(r).expect("synthetic probes decode"));
        }
        Ok(())
    })
    .expect("generating into memory does not fail");
    out
}
