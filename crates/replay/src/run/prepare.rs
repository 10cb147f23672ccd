//! A stream prepared once for many replays: arrival order with duplicates marked, the
//! minimum-transit clock offset and the error reference.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

use super::reference::ReferenceTrack;
use crate::buffer::Packet;
use crate::metrics::Reference;

/// One stream to replay: its received samples in arrival order, its ground truth if any, and
/// the names of its value channels.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stream<'a> {
    /// Received samples, in arrival order.
    pub samples: &'a [Sample],
    /// Ground-truth samples (as sent), if the trace has them.
    pub truth: &'a [Sample],
    /// Value channel names; rotation channels (`qx`, `qy`, `qz`, `qw`) are left out of the
    /// position error.
    pub channels: &'a [String],
}

impl<'a> Stream<'a> {
    /// A stream of received samples with no ground truth and unnamed channels.
    pub fn new(samples: &'a [Sample]) -> Self {
        Self {
            samples,
            truth: &[],
            channels: &[],
        }
    }

    /// The same stream with ground truth.
    pub fn with_truth(mut self, truth: &'a [Sample]) -> Self {
        self.truth = truth;
        self
    }

    /// The same stream with channel names.
    pub fn with_channels(mut self, channels: &'a [String]) -> Self {
        self.channels = channels;
        self
    }

    /// Indices of the channels that make up the position error.
    pub(super) fn error_channels(&self) -> Vec<usize> {
        let rotation = |n: &str| matches!(n, "qx" | "qy" | "qz" | "qw");
        let width = self.samples.first().map_or(0, |s| s.values.len());
        (0..width)
            .filter(|&i| !self.channels.get(i).is_some_and(|n| rotation(n)))
            .collect()
    }
}

/// One sample as the replay loop reads it, in arrival order.
#[derive(Clone, Copy, Debug)]
pub(super) struct Arrival {
    /// Arrival time on the local clock.
    pub(super) at: Nanos,
    pub(super) packet: Packet,
}

/// A stream with what every replay of it needs computed once: its arrival order (with the
/// duplicates in it), the minimum-transit clock offset and the error reference. Sweeps prepare a stream once and
/// replay it through many policies.
#[derive(Clone, Debug)]
pub struct Prepared<'a> {
    pub(super) samples: &'a [Sample],
    /// The samples by arrival time (stable), with what the replay loop reads of each: a
    /// compact array read front to back, instead of scattered reads of whole samples.
    pub(super) arrivals: Vec<Arrival>,
    pub(super) offset_estimate: Nanos,
    pub(super) reference: ReferenceTrack,
    pub(super) reference_kind: Option<Reference>,
    /// Each sample's index in the reference (see `ReferenceTrack::positions`).
    pub(super) ref_pos: Vec<u32>,
    /// The first of the `qx, qy, qz, qw` channels, interpolated by slerp (C14).
    pub(super) rotation: Option<usize>,
    /// The spikes and outages of the network delay series ([`crate::recovery::detect`]).
    pub(super) spikes: Vec<crate::recovery::Spike>,
}

impl<'a> Prepared<'a> {
    /// Prepares `stream` for replay.
    pub fn new(stream: &Stream<'a>) -> Self {
        let samples = stream.samples;
        // C1: a policy sees packets by arrival time; sort stably in case the file is not in order.
        let mut order: Vec<u32> = (0..samples.len() as u32).collect();
        if samples.windows(2).any(|w| w[1].arrival < w[0].arrival) {
            order.sort_by_key(|&i| samples[i as usize].arrival);
        }
        // Duplicates are a property of the arrival order, the same for every policy: found
        // once here, with the window a buffer would keep.
        let mut seen = crate::buffer::SeqWindow::new();
        let arrivals: Vec<Arrival> = order
            .iter()
            .map(|&i| {
                let mut packet = Packet::of(samples, i);
                packet.repeat = Some(!seen.insert(packet.seq));
                Arrival {
                    at: samples[i as usize].arrival,
                    packet,
                }
            })
            .collect();
        let truth = stream.truth;
        let reference = ReferenceTrack::new(
            if truth.is_empty() { samples } else { truth },
            stream.error_channels(),
        );
        let reference_kind = (!reference.is_empty()).then_some(if truth.is_empty() {
            Reference::Hindsight
        } else {
            Reference::Truth
        });
        let spikes = Self::find_spikes(&arrivals, &crate::recovery::SpikeRule::default());
        Self {
            samples,
            spikes,
            arrivals,
            offset_estimate: crate::clock::estimate_offset(samples),
            ref_pos: reference.positions(samples),
            rotation: crate::values::rotation_channels(stream.channels),
            reference,
            reference_kind,
        }
    }

    fn find_spikes(
        arrivals: &[Arrival],
        rule: &crate::recovery::SpikeRule,
    ) -> Vec<crate::recovery::Spike> {
        crate::recovery::detect(arrivals.iter().map(|a| (a.at, a.packet.send)), rule)
    }

    /// Finds the network's spikes by `rule` instead of [`crate::recovery::SpikeRule::default`]
    /// (what the recovery figures measure from).
    pub fn with_spike_rule(mut self, rule: &crate::recovery::SpikeRule) -> Self {
        self.spikes = Self::find_spikes(&self.arrivals, rule);
        self
    }

    /// The spikes and outages found in the network delay series, on the local clock.
    pub fn spikes(&self) -> &[crate::recovery::Spike] {
        &self.spikes
    }

    /// How many received samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}
