//! From a decoded trace to replay inputs, the one way: each stream's received samples, its
//! ground truth and its channel names ([`StreamView`]), after the check that it can be replayed
//! at all (an RTP stream needs a known clock rate for send times).
//!
//! A view borrows the decoded trace's own samples when the trace holds one stream (the usual
//! case) and owns a copy otherwise, so a reader that feeds samples in arrival order can build
//! views of its own with [`StreamView::owned`]. [`TraceStreams`] keeps a decoded trace with its
//! views for sweeps, which prepare every stream once and replay it many times.

use std::borrow::Cow;

use jitterlab_capture::decode::{Decoded, Sample, StreamIndex, StreamInfo};

use crate::Error;
use crate::run::{Prepared, Stream};
use crate::sweep::SweepTrace;

/// One stream of a trace, ready to replay.
#[derive(Clone, Debug)]
pub struct StreamView<'a> {
    /// The stream's id (its index in `jitterlab info`).
    pub id: u32,
    /// Received samples, in arrival order.
    pub samples: Cow<'a, [Sample]>,
    /// Ground truth, if the trace has it.
    pub truth: Cow<'a, [Sample]>,
    /// Value channel names.
    pub channels: Cow<'a, [String]>,
}

impl<'a> StreamView<'a> {
    /// Stream `info` of `decoded`.
    ///
    /// # Errors
    /// An RTP stream whose clock rate is unknown (it has no send times).
    pub fn of(decoded: &'a Decoded, info: &'a StreamInfo) -> Result<Self, Error> {
        Self::indexed(decoded, &decoded.stream_index(), info)
    }

    /// Stream `info` of `decoded`, found through `index` (`decoded`'s own): how the views
    /// of many streams are made in one pass over the trace, not one per stream.
    ///
    /// # Errors
    /// As [`Self::of`].
    pub fn indexed(
        decoded: &'a Decoded,
        index: &StreamIndex,
        info: &'a StreamInfo,
    ) -> Result<Self, Error> {
        check(info)?;
        Ok(Self {
            id: info.id,
            // Borrowed, not copied, when the trace holds this stream only.
            samples: index.samples_of(decoded, info.id),
            truth: index.truth_of(decoded, info.id),
            channels: Cow::Borrowed(&info.channels),
        })
    }

    /// A view over samples gathered elsewhere (a reader feeding them in arrival order).
    pub fn owned(id: u32, samples: Vec<Sample>, truth: Vec<Sample>, channels: Vec<String>) -> Self {
        Self {
            id,
            samples: Cow::Owned(samples),
            truth: Cow::Owned(truth),
            channels: Cow::Owned(channels),
        }
    }

    /// The replay input.
    pub fn stream(&self) -> Stream<'_> {
        Stream::new(&self.samples)
            .with_truth(&self.truth)
            .with_channels(&self.channels)
    }
}

/// Whether a stream can be replayed: it needs send times (RTP: a known clock rate).
///
/// # Errors
/// It has none, with what would give them.
pub fn check(info: &StreamInfo) -> Result<(), Error> {
    if info.has_send_times() {
        Ok(())
    } else if info.ssrc.is_some() {
        Err(Error::ClockRateUnknown {
            stream: info.label(),
            payload_type: info.payload_type.unwrap_or(0),
        })
    } else if info.protocol == "periodic" {
        Err(Error::NoSendPeriod {
            stream: info.label(),
        })
    } else {
        Err(Error::NoSendTimes {
            stream: info.label(),
            protocol: info.protocol,
        })
    }
}

/// Why each stream of `decoded` that cannot be replayed is left out, one line each.
pub fn unreplayable(decoded: &Decoded) -> Vec<String> {
    decoded
        .streams
        .iter()
        .filter_map(|info| check(info).err())
        .map(|e| format!("stream skipped: {e}"))
        .collect()
}

/// The views of every stream of `decoded` that can be replayed (see [`unreplayable`] for the
/// others), or of stream `only`. The trace is read once to find every stream's samples; each
/// view is made (copied, when the trace holds several streams) as the iterator reaches it.
///
/// # Errors
/// `only` names a stream that cannot be replayed.
pub fn views<'a>(
    decoded: &'a Decoded,
    only: Option<u32>,
) -> impl Iterator<Item = Result<StreamView<'a>, Error>> + 'a {
    let index = decoded.stream_index();
    decoded
        .streams
        .iter()
        .filter(move |info| match only {
            Some(id) => id == info.id,
            None => check(info).is_ok(),
        })
        .map(move |info| StreamView::indexed(decoded, &index, info))
}

/// Checks that `decoded` (named `trace`) has stream `id`.
///
/// # Errors
/// It does not.
pub fn require_stream(decoded: &Decoded, trace: &str, id: u32) -> Result<(), Error> {
    if decoded.streams.iter().any(|s| s.id == id) {
        Ok(())
    } else {
        Err(Error::NoSuchStream {
            stream: id,
            trace: trace.to_owned(),
            count: decoded.streams.len(),
        })
    }
}

/// A decoded trace with every stream split for replay: what `sweep`, `tune` and `report`
/// replay many times.
#[derive(Debug)]
pub struct TraceStreams {
    /// The trace's name in results.
    pub name: String,
    /// The decoded trace.
    pub decoded: Decoded,
    /// Per stream that can be replayed, in the trace's order.
    split: Vec<Split>,
    /// Why each other stream is left out (see [`unreplayable`]).
    pub skipped: Vec<String>,
}

/// One stream of a [`TraceStreams`].
#[derive(Debug)]
struct Split {
    id: u32,
    /// Its place in the decoded trace's `streams`.
    at: usize,
    channels: Vec<String>,
    /// A copy of its samples and truth when the trace holds other streams too (`None`: the
    /// decoded trace's own are lent).
    copy: Option<(Vec<Sample>, Vec<Sample>)>,
}

impl Split {
    /// The samples and truth, from the copy or the decoded trace.
    fn slices<'a>(&'a self, decoded: &'a Decoded) -> (&'a [Sample], &'a [Sample]) {
        match &self.copy {
            Some((samples, truth)) => (samples, truth),
            None => (&decoded.samples, &decoded.truth),
        }
    }
}

impl TraceStreams {
    /// Splits `decoded` into the streams that can be replayed; the others are named in
    /// [`Self::skipped`].
    ///
    /// # Errors
    /// No packets, or no stream that can be replayed (the first reason is given).
    pub fn new(name: String, decoded: Decoded) -> Result<Self, Error> {
        if decoded.samples.is_empty() {
            return Err(Error::NoPackets { trace: name });
        }
        let mut split = Vec::new();
        let mut first_reason = None;
        let index = decoded.stream_index();
        for (at, info) in decoded.streams.iter().enumerate() {
            let view = match StreamView::indexed(&decoded, &index, info) {
                Ok(view) => view,
                Err(e) => {
                    first_reason.get_or_insert(e);
                    continue;
                }
            };
            let copy = match (view.samples, view.truth) {
                (Cow::Borrowed(_), Cow::Borrowed(_)) => None,
                (samples, truth) => Some((samples.into_owned(), truth.into_owned())),
            };
            split.push(Split {
                id: info.id,
                at,
                channels: info.channels.clone(),
                copy,
            });
        }
        if split.is_empty() {
            return Err(Error::NothingToReplay {
                trace: name,
                streams: decoded.streams.len(),
                reason: first_reason.map_or_else(String::new, |e| e.to_string()),
            });
        }
        Ok(Self {
            skipped: unreplayable(&decoded),
            name,
            decoded,
            split,
        })
    }

    /// Every stream's view, borrowing from `self`.
    pub fn views(&self) -> Vec<StreamView<'_>> {
        self.split
            .iter()
            .map(|s| {
                let (samples, truth) = s.slices(&self.decoded);
                StreamView {
                    id: s.id,
                    samples: Cow::Borrowed(samples),
                    truth: Cow::Borrowed(truth),
                    channels: Cow::Borrowed(&s.channels),
                }
            })
            .collect()
    }

    /// The streams prepared for a playout sweep (borrowing the samples), with `clock` mapping
    /// each stream's local to sender time.
    pub fn prepare_playout(&self, clock: crate::ClockMapping) -> crate::sweep::PlayoutTrace<'_> {
        crate::sweep::PlayoutTrace {
            name: self.name.clone(),
            streams: self
                .split
                .iter()
                .map(|s| {
                    let (samples, _) = s.slices(&self.decoded);
                    let media = crate::playout::Media::of(&self.decoded.streams[s.at]);
                    crate::playout::PlayoutStream::with_clock(s.id, samples, media, clock)
                })
                .collect(),
        }
    }

    /// The media of every stream replayed, in order.
    pub fn media(&self) -> Vec<crate::playout::Media> {
        self.split
            .iter()
            .map(|s| crate::playout::Media::of(&self.decoded.streams[s.at]))
            .collect()
    }

    /// The streams prepared for a sweep (borrowing the samples).
    pub fn prepare(&self) -> SweepTrace<'_> {
        SweepTrace {
            name: self.name.clone(),
            streams: self
                .split
                .iter()
                .map(|s| {
                    let (samples, truth) = s.slices(&self.decoded);
                    Prepared::new(
                        &Stream::new(samples)
                            .with_truth(truth)
                            .with_channels(&s.channels),
                    )
                })
                .collect(),
        }
    }
}
