//! The pcapng reader, after a section header and an Ethernet interface block (see
//! `common::read_capture_after`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const HEADER: [u8; 48] = [
    // Section header block: type, length 28, byte-order magic, version 1.0, section length -1.
    0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0,
    // Interface description block: type 1, length 20, Ethernet, snap length 65535.
    1, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0, 0, 20, 0, 0, 0,
];

fuzz_target!(|data: &[u8]| common::read_capture_after(&HEADER, data));
