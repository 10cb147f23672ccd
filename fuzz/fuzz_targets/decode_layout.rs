//! The layout decoder: the first line is a `layout:` spec, the rest packets decoded with it.
#![no_main]

use jitterlab_capture::decode::DecoderConfig;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let (spec, packets) = data.split_at(split);
    let Ok(spec) = std::str::from_utf8(spec) else {
        return;
    };
    let Ok(config) = DecoderConfig::parse(&format!("layout:{spec}")) else {
        return;
    };
    // A parsed spec names itself in a form that parses to the same layout.
    let again = DecoderConfig::parse(&config.name()).expect("a layout's own name parses");
    assert_eq!(again, config);
    common::decode_packets(config, packets.get(1..).unwrap_or_default());
});
