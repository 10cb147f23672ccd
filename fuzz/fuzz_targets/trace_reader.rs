//! The trace reader: any bytes either read as a header and records or fail with an error.
#![no_main]

use jitterlab_capture::Reader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(reader) = Reader::new(data) else {
        return;
    };
    let mut last_good = reader.header_len();
    let mut reader = reader;
    while let Some(item) = reader.next() {
        if item.is_err() {
            break;
        }
        assert!(
            reader.valid_len() > last_good,
            "a record must advance the offset"
        );
        last_good = reader.valid_len();
    }
    assert!(reader.valid_len() <= data.len() as u64);
});
