//! The RTP decoder, its stream assignment, sequence extension and Wireshark statistics.
#![no_main]

use jitterlab_capture::decode::{DecoderConfig, DecoderKind};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let mut config = DecoderConfig::new(DecoderKind::Rtp);
    // A dynamic payload type with a clock, as `--clock-rate 96=90000` gives.
    let _ = config.add_clock_rate("96=90000");
    common::decode_packets(config, data);
});
