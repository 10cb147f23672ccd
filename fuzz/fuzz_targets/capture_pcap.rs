//! The pcap reader, after a valid Ethernet pcap header (see `common::read_capture_after`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const HEADER: [u8; 24] = [
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0,
];

fuzz_target!(|data: &[u8]| common::read_capture_after(&HEADER, data));
