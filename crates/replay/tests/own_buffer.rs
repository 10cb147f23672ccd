//! The `own_buffer` example (a user's buffer written in Rust, swept beside the presets) runs
//! and gives what its design says: more lag, more delay and fewer holds; and its configuration
//! strings parse back through the registry that knows it.

#[path = "../examples/own_buffer.rs"]
mod example;

use jitterlab_replay::Policy;

#[test]
fn a_users_buffer_sweeps_beside_the_presets() {
    let (policies, rows) = example::sweep(30);
    assert_eq!(rows.len(), policies.len());
    assert_eq!(policies.len(), 3 + 3 + 5);
    let summary = |text: &str| {
        let i = policies
            .iter()
            .position(|p| p.to_string().starts_with(text))
            .unwrap_or_else(|| panic!("{text} not swept"));
        rows.iter().find(|r| r.config == i).unwrap().summary.clone()
    };
    let (short, long) = (summary("lag:lag=50ms"), summary("lag:lag=150ms"));
    assert!(short.frames > 1000);
    assert!(short.mean_delay_ms < long.mean_delay_ms);
    assert!(short.hold_ratio >= long.hold_ratio);
    // The built-in presets swept beside it ran too.
    for name in ["fixed", "geckos", "lightyear", "n4e", "mirror"] {
        assert!(summary(name).frames > 1000, "{name}");
    }
    // Its strings round-trip through the registry; the built-in one does not know it.
    let r = example::registry();
    let lag = r.parse("lag:lag=80ms").unwrap();
    assert_eq!(r.parse(&lag.to_string()).unwrap(), lag);
    assert!("lag".parse::<Policy>().is_err());
}
