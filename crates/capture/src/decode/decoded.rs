//! A decoded trace: every stream, its samples and ground truth, and what was skipped.

use super::{FlowSummary, Sample, StreamInfo};
use std::borrow::Cow;
use std::collections::HashMap;

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

    /// Where every stream's samples and ground truth lie, found in one pass over each: what
    /// takes the streams of a trace of many apart ([`Self::samples_of`] per stream reads the
    /// whole trace each time, quadratic in the number of streams).
    pub fn stream_index(&self) -> StreamIndex {
        StreamIndex {
            samples: Positions::of(&self.samples),
            truth: Positions::of(&self.truth),
        }
    }
}

/// Where each stream's samples lie in a [`Decoded`] ([`Decoded::stream_index`]): 8 bytes a
/// sample when the trace holds several streams, nothing when it holds one.
#[derive(Clone, Debug)]
pub struct StreamIndex {
    samples: Positions,
    truth: Positions,
}

impl StreamIndex {
    /// The received samples of `stream` in arrival order, as [`Decoded::samples_of`] gives
    /// them (borrowed when the trace holds that stream only), without reading the others.
    pub fn samples_of<'a>(&self, decoded: &'a Decoded, stream: u32) -> Cow<'a, [Sample]> {
        self.samples.of_stream(&decoded.samples, stream)
    }

    /// The ground-truth samples of `stream`, as [`Decoded::truth_of`] gives them.
    pub fn truth_of<'a>(&self, decoded: &'a Decoded, stream: u32) -> Cow<'a, [Sample]> {
        self.truth.of_stream(&decoded.truth, stream)
    }
}

/// The positions of each stream's samples in one list of samples.
#[derive(Clone, Debug)]
enum Positions {
    /// Every sample belongs to this stream (or there are none: `None`).
    One(Option<u32>),
    /// Per stream, its samples' positions in order.
    Many(HashMap<u32, Vec<usize>>),
}

impl Positions {
    fn of(samples: &[Sample]) -> Self {
        let Some(first) = samples.first().map(|s| s.stream) else {
            return Self::One(None);
        };
        if samples.iter().all(|s| s.stream == first) {
            return Self::One(Some(first));
        }
        let mut at: HashMap<u32, Vec<usize>> = HashMap::new();
        for (i, s) in samples.iter().enumerate() {
            at.entry(s.stream).or_default().push(i);
        }
        Self::Many(at)
    }

    fn of_stream<'a>(&self, samples: &'a [Sample], stream: u32) -> Cow<'a, [Sample]> {
        match self {
            Self::One(Some(only)) if *only == stream => Cow::Borrowed(samples),
            Self::One(_) => Cow::Borrowed(&[]),
            Self::Many(at) => Cow::Owned(
                at.get(&stream)
                    .map(|at| at.iter().map(|&i| samples[i].clone()).collect())
                    .unwrap_or_default(),
            ),
        }
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
