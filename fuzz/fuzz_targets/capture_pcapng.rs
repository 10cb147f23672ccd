//! The pcapng reader. Odd first byte: the input is the whole file. Even: the rest follows a
//! section header and an Ethernet interface block, so the fuzzer works on the packet blocks.
#![no_main]

use jitterlab_capture::pcap::read_capture;
use libfuzzer_sys::fuzz_target;

const HEADER: [u8; 48] = [
    // Section header block: type, length 28, byte-order magic, version 1.0, section length -1.
    0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0,
    // Interface description block: type 1, length 20, Ethernet, snap length 65535.
    1, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0, 0, 20, 0, 0, 0,
];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let file = if mode & 1 == 1 {
        rest.to_vec()
    } else {
        [&HEADER[..], rest].concat()
    };
    let mut records = 0u64;
    if let Ok(summary) = read_capture(&file[..], None, |_| {
        records += 1;
        Ok(())
    }) {
        assert_eq!(summary.udp, records, "every UDP datagram reaches the sink");
        let _ = summary.problems();
    }
});
