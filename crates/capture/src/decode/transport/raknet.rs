//! Raknet: framing parser (in progress: it recognises nothing yet).

use super::{Datagram, Parser};
use crate::decode::DecodeError;

/// One Raknet flow's parser.
#[derive(Debug, Default)]
pub struct RaknetParser {}

impl Parser for RaknetParser {
    fn parse(&mut self, _payload: &[u8]) -> Result<Datagram, DecodeError> {
        Err(DecodeError::new("raknet decoding is not built yet"))
    }
}

/// Whether a datagram could be Raknet's (nothing is, until the parser is built).
pub fn resembles(_payload: &[u8]) -> bool {
    false
}
