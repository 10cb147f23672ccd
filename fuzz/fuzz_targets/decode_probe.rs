//! The probe decoder: parsing, and re-encoding what parsed.
#![no_main]

use jitterlab_capture::decode::probe::Probe;
use jitterlab_capture::decode::{DecoderConfig, DecoderKind};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Probe::parse(data) {
        let again = Probe::parse(&p.emit()).expect("an emitted probe parses");
        assert_eq!(again.stream, p.stream);
        assert_eq!(again.tick, p.tick);
        assert_eq!(again.values.len(), p.values.len());
    }
    common::decode_packets(DecoderConfig::new(DecoderKind::Probe), data);
});
