//! Prints the table of `docs/periodic.md`: for every synthetic profile, jitter, recommended
//! delay and hold ratio from true send times and from send times inferred by
//! `decode::periodic` with the true ones hidden.
//! `cargo run --release -p jitterlab-replay --example periodic -- [SECONDS] [SEED]`

#[path = "../tests/support/periodic.rs"]
#[allow(dead_code)]
mod measure;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: i64 = args.first().map_or(60, |s| s.parse().expect("SECONDS"));
    let seed: u64 = args.get(1).map_or(1, |s| s.parse().expect("SEED"));
    let opt =
        |v: Option<f64>, scale: f64| v.map_or("–".to_owned(), |v| format!("{:.2}", v * scale));
    println!(
        "| profile | rate | period true / inferred (ms) | drift (ppm) | slots right | missing | jitter true / inferred (ms) | tune: mean display delay true / inferred (ms) | tune: hold ratio true / inferred (%) | least fixed delay true / inferred (ms) | its hold ratio true / inferred (%) | within 5 ms or 10 % |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &(profile, ..) in jitterlab_capture::synth::PROFILES {
        for rate in [20.0, 60.0] {
            let c = measure::compare(profile, rate, seconds, seed);
            let (Some(e), Some(inf)) = (&c.estimate, &c.inferred) else {
                println!(
                    "| {profile} | {rate} Hz | {:.3} / none | – | – | – | {:.2} / – | {} / – | {} / – | {} / – | {} / – | no period found |",
                    c.truth.period_ms,
                    c.truth.jitter_ms,
                    opt(c.truth.delay_ms, 1.0),
                    opt(c.truth.hold_ratio, 100.0),
                    opt(c.truth.fixed_delay_ms, 1.0),
                    opt(c.truth.fixed_hold_ratio, 100.0),
                );
                continue;
            };
            println!(
                "| {profile} | {rate} Hz | {:.3} / {:.4} | {:+.1} | {:.2} % | {} | {:.2} / {:.2} | {} / {} | {} / {} | {} / {} | {} / {} | {} |",
                c.truth.period_ms,
                inf.period_ms,
                e.drift_ppm,
                100.0 * c.slots_right,
                e.missing,
                c.truth.jitter_ms,
                inf.jitter_ms,
                opt(c.truth.delay_ms, 1.0),
                opt(inf.delay_ms, 1.0),
                opt(c.truth.hold_ratio, 100.0),
                opt(inf.hold_ratio, 100.0),
                opt(c.truth.fixed_delay_ms, 1.0),
                opt(inf.fixed_delay_ms, 1.0),
                opt(c.truth.fixed_hold_ratio, 100.0),
                opt(inf.fixed_hold_ratio, 100.0),
                if measure::delay_close(&c) {
                    "yes"
                } else {
                    "no"
                },
            );
            if std::env::var_os("VERBOSE").is_some() {
                eprintln!(
                    "{profile} {rate}: {e:?}\n  true {:?}\n  inferred {:?}",
                    c.truth.policy, inf.policy
                );
            }
        }
    }
}
