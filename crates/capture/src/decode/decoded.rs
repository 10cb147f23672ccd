//! A decoded trace: every stream, its samples and ground truth, and what was skipped.

use super::{FlowSummary, Sample, StreamInfo};
use std::borrow::Cow;

/// A trace decoded into samples, per stream.
#[derive(Clone, Debug, Default)]
pub struct Decoded {
    /// Every stream seen, in order of first appearance.
    pub streams: Vec<StreamInfo>,
    /// Every flow of received packets (one direction of a 5-tuple), in order of first
    /// appearance: what it is and what was counted apart.
    pub flows: Vec<FlowSummary>,
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

    /// Keeps the streams `keep` accepts (their ids unchanged, so `--stream N` names the same
    /// stream before and after) with their samples and truth, and the flows they belong to
    /// (every flow when `keep_flow` is `None`, else those it accepts).
    pub fn retain(
        &mut self,
        keep: impl Fn(&StreamInfo) -> bool,
        keep_flow: Option<&dyn Fn(&FlowSummary) -> bool>,
    ) {
        let kept: std::collections::HashSet<u32> = self
            .streams
            .iter()
            .filter(|s| keep(s))
            .map(|s| s.id)
            .collect();
        self.streams.retain(|s| kept.contains(&s.id));
        self.samples.retain(|s| kept.contains(&s.stream));
        self.truth.retain(|s| kept.contains(&s.stream));
        if let Some(keep_flow) = keep_flow {
            self.flows.retain(|f| keep_flow(f));
        }
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
