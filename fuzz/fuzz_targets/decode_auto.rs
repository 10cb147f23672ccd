//! Flow classification without a decoder named: each packet sorted (RTP, RTCP, STUN, DTLS,
//! TURN, probe), the flow judged, then decoded as RTP, a game transport or plain UDP.
#![no_main]

use jitterlab_capture::decode::{DecoderConfig, DecoderKind};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::decode_packets(DecoderConfig::new(DecoderKind::Auto), data);
});
