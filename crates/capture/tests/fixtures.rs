//! The committed demo trace is exactly what the documented generator produces.
//!
//! Regenerate it after a deliberate change with `JITTERLAB_BLESS=1 cargo test -p
//! jitterlab-capture --test fixtures`.

use std::path::PathBuf;

use jitterlab_capture::synth::{Config, generate, to_bytes};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces/demo-wifi-20hz.jtr")
}

#[test]
fn demo_fixture_matches_its_generator() {
    let (header, records) = generate(&Config::demo()).unwrap();
    let bytes = to_bytes(&header, &records);
    if std::env::var_os("JITTERLAB_BLESS").is_some() {
        std::fs::write(fixture(), &bytes).unwrap();
    }
    let committed = std::fs::read(fixture()).expect("fixtures/traces/demo-wifi-20hz.jtr exists");
    assert!(
        committed == bytes,
        "the demo fixture differs from Config::demo(); re-bless it"
    );
}
