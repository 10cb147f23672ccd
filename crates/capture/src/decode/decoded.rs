//! A decoded trace: every stream, its samples and ground truth, and what was skipped.

use super::{Sample, StreamInfo};
use std::borrow::Cow;

/// A trace decoded into samples, per stream.
#[derive(Clone, Debug, Default)]
pub struct Decoded {
    /// Every stream seen, in order of first appearance.
    pub streams: Vec<StreamInfo>,
    /// Received samples in arrival (file) order.
    pub samples: Vec<Sample>,
    /// Ground-truth samples (as sent), in file order; empty when the trace has none.
    pub truth: Vec<Sample>,
    /// Packets the decoder could not read.
    pub skipped: u64,
    /// The first few reasons for skipping, for the summary.
    pub skip_examples: Vec<String>,
    /// Records of kinds this version does not know (skipped).
    pub unknown_records: u64,
    /// Bytes at the end of the file that did not form a whole record.
    pub trailing_bytes: u64,
    /// The last capture bookkeeping record (live captures and relays), if any.
    pub capture_stats: Option<crate::trace::CaptureStats>,
}

impl Decoded {
    /// The received samples of one stream, in arrival order.
    pub fn stream_samples(&self, stream: u32) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(move |s| s.stream == stream)
    }

    /// The ground-truth samples of one stream.
    pub fn stream_truth(&self, stream: u32) -> impl Iterator<Item = &Sample> {
        self.truth.iter().filter(move |s| s.stream == stream)
    }

    /// The received samples of one stream as a slice: all of them, borrowed, when the trace
    /// holds no other stream (the usual case, and no copy of what may be gigabytes); else a
    /// copy of that stream's, in arrival order.
    pub fn samples_of(&self, stream: u32) -> Cow<'_, [Sample]> {
        only_stream(&self.samples, stream)
    }

    /// The ground-truth samples of one stream as a slice, borrowed as [`Self::samples_of`].
    pub fn truth_of(&self, stream: u32) -> Cow<'_, [Sample]> {
        only_stream(&self.truth, stream)
    }
}

/// `samples` when every one belongs to `stream`, else a copy of those that do.
fn only_stream(samples: &[Sample], stream: u32) -> Cow<'_, [Sample]> {
    if samples.iter().all(|s| s.stream == stream) {
        Cow::Borrowed(samples)
    } else {
        Cow::Owned(
            samples
                .iter()
                .filter(|s| s.stream == stream)
                .cloned()
                .collect(),
        )
    }
}
