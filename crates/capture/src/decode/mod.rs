//! Payload decoders: turn packet records into samples (stream, sequence, send time, values).
//!
//! Three decoders exist: [`rtp`] (RFC 3550 media), [`probe`] (jitterlab's own snapshot
//! packet, also what CSV imports become) and, for custom game protocols, [`layout`]
//! (`layout:SPEC`, fields at fixed offsets). A packet a decoder cannot read is counted and skipped, never silently
//! dropped: see [`Decoded::skipped`].

mod collect;
mod config;
mod decoded;
pub mod layout;
pub mod probe;
pub mod rtp;
mod sample;
mod stream;

pub use collect::{Collector, decode_trace};
pub use config::{DecoderConfig, DecoderKind};
pub use decoded::Decoded;
pub(crate) use sample::in_range;
pub use sample::{DecodeError, Lifecycle, MAX_MAGNITUDE, Sample, StreamInfo};
pub use stream::StreamDecoder;

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
}
