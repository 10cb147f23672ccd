//! The pcap reader. Odd first byte: the input is the whole file. Even: the rest follows a valid
//! Ethernet pcap header, so the fuzzer spends its time on records, IP and UDP.
#![no_main]

use jitterlab_capture::pcap::read_capture;
use libfuzzer_sys::fuzz_target;

const HEADER: [u8; 24] = [
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0,
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
