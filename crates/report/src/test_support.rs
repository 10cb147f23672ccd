//! What the unit tests of several modules build their traces from.

use jitterlab_capture::decode::{Decoded, Sample, StreamInfo};

/// A probe stream (id 0, send times known) with `channels`.
pub(crate) fn probe_stream(channels: &[&str]) -> StreamInfo {
    StreamInfo {
        id: 0,
        ssrc: None,
        probe_stream: None,
        src: None,
        dst: None,
        direction: jitterlab_capture::trace::Direction::Unknown,
        payload_type: None,
        clock_rate: None,
        channels: channels.iter().map(|&c| c.to_owned()).collect(),
        protocol: "probe",
        lane: None,
        send_times: true,
        clock_inferred: None,
        send_inferred: None,
        encoding: None,
        media: None,
    }
}

/// A decoded trace of one probe stream with one channel, `x`.
pub(crate) fn probe_decoded(samples: Vec<Sample>) -> Decoded {
    Decoded {
        streams: vec![probe_stream(&["x"])],
        samples,
        ..Decoded::default()
    }
}
