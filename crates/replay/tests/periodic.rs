//! Periodic inference where the truth is known (issue 15's Done means): on the lan, wifi, lte
//! and congested synthetic profiles (synth's default 20 Hz, 60 s), the delay `tune`
//! recommends from send times inferred by `decode::periodic` (the true ones hidden) is within
//! 5 ms or 10 % of the one from the true send times, both for `tune`'s default grid and for the
//! least fixed playout delay that keeps the hold ratio at or below 1 %.

#[path = "support/periodic.rs"]
#[allow(dead_code)] // the example prints what the test does not check
mod measure;

#[test]
fn recommended_delay_from_inferred_send_times_is_within_5ms_or_10_percent() {
    let mut failed = Vec::new();
    for profile in ["lan", "wifi", "lte", "congested"] {
        let c = measure::compare(profile, 20.0, 60, 1);
        let e = c.estimate.as_ref().expect("a 20 Hz sender has a period");
        assert!(
            (e.period_ns / 50e6 - 1.0).abs() < 1e-4,
            "{profile}: period {} ns",
            e.period_ns
        );
        eprintln!(
            "{profile}: slots right {:.2} %, true {:?} / {:?} ms, inferred {:?}",
            100.0 * c.slots_right,
            c.truth.delay_ms,
            c.truth.fixed_delay_ms,
            c.inferred.as_ref().map(|i| (i.delay_ms, i.fixed_delay_ms)),
        );
        if !measure::delay_close(&c) {
            failed.push(profile);
        }
    }
    assert!(failed.is_empty(), "outside the bound: {failed:?}");
}
