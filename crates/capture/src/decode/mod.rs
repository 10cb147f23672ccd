//! Payload decoders: turn packet records into samples (stream, sequence, send time, values).
//!
//! Three decoders exist: [`rtp`] (RFC 3550 media), [`probe`] (jitterlab's own snapshot
//! packet, also what CSV imports become) and, for custom game protocols, [`layout`]
//! (`layout:SPEC`, fields at fixed offsets). A packet a decoder cannot read is counted and skipped, never silently
//! dropped: see [`Decoded::skipped`].

pub mod ahead;
pub mod clock;
mod collect;
mod config;
mod decoded;
pub mod flow;
pub mod layout;
pub mod periodic;
pub mod probe;
pub mod rtp;
mod sample;
mod stream;
pub mod transport;

pub use collect::{Collector, Finished, KeepAll, SampleSink, decode_trace};
pub use config::{DECODER_NAMES, DecoderConfig, DecoderKind};
pub use decoded::{Decoded, StreamIndex};
pub use flow::FlowSummary;
pub(crate) use sample::in_range;
pub use sample::{
    ClockInference, DecodeError, INLINE_VALUES, Lifecycle, MAX_MAGNITUDE, MediaKind, Sample,
    SendInference, StreamInfo, Values,
};
pub use stream::StreamDecoder;
pub(crate) use stream::send_time;

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::Nanos;

    #[test]
    fn a_stream_alone_is_lent_and_one_of_several_is_copied() {
        let at = |ms| Nanos::from_millis(ms);
        let mut decoded = Decoded {
            samples: (0..4)
                .map(|i| Sample::new(7, i, at(i), at(i + 1)))
                .collect(),
            ..Decoded::default()
        };
        let alone = decoded.samples_of(7);
        assert!(matches!(alone, Cow::Borrowed(_)));
        assert_eq!(alone.len(), 4);
        assert!(matches!(decoded.truth_of(7), Cow::Borrowed(s) if s.is_empty()));
        decoded.samples.insert(1, Sample::new(9, 0, at(0), at(1)));
        let mine = decoded.samples_of(7);
        assert!(matches!(mine, Cow::Owned(_)));
        assert_eq!(mine.iter().map(|s| s.seq).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(decoded.samples_of(9).len(), 1);
        assert!(decoded.samples_of(3).is_empty());
    }

    /// The one-pass index takes the streams apart as `samples_of` does, lending a stream
    /// alone and copying one of several in arrival order.
    #[test]
    fn the_stream_index_gives_what_samples_of_gives() {
        let at = |ms| Nanos::from_millis(ms);
        let mut decoded = Decoded {
            samples: (0..6)
                .map(|i| Sample::new(7, i, at(i), at(i + 1)))
                .collect(),
            truth: (0..6).map(|i| Sample::new(7, i, at(i), at(i))).collect(),
            ..Decoded::default()
        };
        let index = decoded.stream_index();
        assert!(matches!(index.samples_of(&decoded, 7), Cow::Borrowed(s) if s.len() == 6));
        assert!(matches!(index.truth_of(&decoded, 7), Cow::Borrowed(s) if s.len() == 6));
        assert!(index.samples_of(&decoded, 3).is_empty());
        decoded.samples.insert(1, Sample::new(9, 0, at(0), at(1)));
        decoded.samples.insert(4, Sample::new(9, 1, at(2), at(3)));
        decoded.truth.push(Sample::new(9, 0, at(0), at(0)));
        let index = decoded.stream_index();
        for stream in [7, 9, 3] {
            assert_eq!(
                index.samples_of(&decoded, stream),
                decoded.samples_of(stream)
            );
            assert_eq!(index.truth_of(&decoded, stream), decoded.truth_of(stream));
        }
        assert_eq!(index.samples_of(&decoded, 9).len(), 2);
    }

    /// A custom protocol's u16 sequence number and u16 tick send time wrap past 65,535 on a
    /// leg that lost nothing: decoded through the layout decoder they keep counting (no loss,
    /// no reordering), and a packet reordered across the wrap lands just before it.
    #[test]
    fn layout_counters_are_extended_across_their_wrap() {
        let config = DecoderConfig::parse("layout:seq=u16be@0,send=u16le@2/100").unwrap();
        let mut decoder = StreamDecoder::new(config, Vec::new());
        let packet = |seq: u64, tick: u64| {
            let mut p = (seq as u16).to_be_bytes().to_vec();
            p.extend_from_slice(&(tick as u16).to_le_bytes());
            p
        };
        // 65,530 to 65,545, with 65,537 arriving after 65,538.
        let mut order: Vec<u64> = (65_530..65_546).collect();
        order.swap(7, 8);
        let decoded: Vec<(i64, Nanos)> = order
            .iter()
            .map(|&n| {
                let rec =
                    crate::trace::Record::received(Nanos::from_millis(n as i64), packet(n, 3 * n));
                let s = decoder.decode(&rec).unwrap();
                (s.seq, s.send)
            })
            .collect();
        let want: Vec<(i64, Nanos)> = order
            .iter()
            .map(|&n| (n as i64, Nanos::from_millis(10 * (3 * n as i64 - 131_072))))
            .collect();
        // The first value sets the base: the send ticks started at 3·65,530 mod 65,536.
        let base = |v: &[(i64, Nanos)]| {
            v.iter()
                .map(|&(q, t)| (q - v[0].0, t - v[0].1))
                .collect::<Vec<_>>()
        };
        assert_eq!(base(&decoded), base(&want));
        assert_eq!(decoded[0].0, 65_530);
        assert_eq!(decoded[15].0, 65_545, "past the wrap, not 9");
    }
}
