//! The game transport parsers (ENet, KCP, RakNet), chosen by the first byte: their framing,
//! per-flow fragment and split-packet state, and the samples the stream decoder makes of them.
#![no_main]

use jitterlab_capture::decode::transport::Transport;
use jitterlab_capture::decode::{DecoderConfig, DecoderKind};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let transport = Transport::ALL[usize::from(which) % Transport::ALL.len()];
    common::decode_packets(DecoderConfig::new(DecoderKind::Transport(transport)), rest);
});
