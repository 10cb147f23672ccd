//! Policy and clock-mapping strings: whatever parses prints back as a string that parses to
//! the same policy.
#![no_main]

use jitterlab_replay::clock::ClockMapping;
use jitterlab_replay::policy::Policy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(policy) = text.parse::<Policy>() {
        let printed = policy.to_string();
        let again: Policy = printed
            .parse()
            .unwrap_or_else(|e| panic!("'{printed}' (from '{text}') does not parse: {e}"));
        assert_eq!(again.to_string(), printed);
    }
    let _ = text.parse::<ClockMapping>();
});
