//! Enet: framing parser (in progress: it recognises nothing yet).

use super::{Datagram, Parser};
use crate::decode::DecodeError;

/// One Enet flow's parser.
#[derive(Debug, Default)]
pub struct EnetParser {}

impl Parser for EnetParser {
    fn parse(&mut self, _payload: &[u8]) -> Result<Datagram, DecodeError> {
        Err(DecodeError::new("enet decoding is not built yet"))
    }
}

/// Whether a datagram could be Enet's (nothing is, until the parser is built).
pub fn resembles(_payload: &[u8]) -> bool {
    false
}
