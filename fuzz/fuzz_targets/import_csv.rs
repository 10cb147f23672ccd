//! The CSV importer.
#![no_main]

use jitterlab_capture::import::import_csv;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = import_csv(data, "fuzz.csv");
});
