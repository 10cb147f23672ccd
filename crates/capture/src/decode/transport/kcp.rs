//! Kcp: framing parser (in progress: it recognises nothing yet).

use super::{Datagram, Parser};
use crate::decode::DecodeError;

/// One Kcp flow's parser.
#[derive(Debug, Default)]
pub struct KcpParser {}

impl Parser for KcpParser {
    fn parse(&mut self, _payload: &[u8]) -> Result<Datagram, DecodeError> {
        Err(DecodeError::new("kcp decoding is not built yet"))
    }
}

/// Whether a datagram could be Kcp's (nothing is, until the parser is built).
pub fn resembles(_payload: &[u8]) -> bool {
    false
}
