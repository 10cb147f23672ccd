//! Periodic inference measured where the truth is known: a synthetic trace decoded with its
//! true send times and sequence numbers, and again with both replaced by
//! `decode::periodic::assign` (the send times hidden), each tuned as `jitterlab tune` does
//! (default grid for the packet rate, 60 fps, estimated clock, hold ratio ≤ 1 %, least mean
//! display delay). Shared by `tests/periodic.rs` and `examples/periodic.rs`.

use jitterlab_capture::decode::{Decoded, decode_trace, periodic};
use jitterlab_capture::stats::stats_for;
use jitterlab_capture::synth::{self, Config, Motion};
use jitterlab_capture::{Nanos, Reader};
use jitterlab_replay::grid::{Grid, default_tune_grid_for, packet_rate};
use jitterlab_replay::sweep::{self, Shard};
use jitterlab_replay::tune::{Constraints, tune};
use jitterlab_replay::{ClockMapping, FrameClock, TraceStreams};

/// What one decoding of a trace gives.
#[derive(Clone, Debug)]
pub(crate) struct Side {
    /// Send period, ms.
    pub(crate) period_ms: f64,
    /// RFC 3550 jitter (Wireshark's mean), ms.
    pub(crate) jitter_ms: f64,
    /// The recommendation's mean display delay, ms.
    pub(crate) delay_ms: Option<f64>,
    /// The recommendation's hold ratio.
    pub(crate) hold_ratio: Option<f64>,
    /// The recommended policy.
    pub(crate) policy: Option<String>,
    /// The least fixed playout delay (ms, 1 ms steps) whose hold ratio stays ≤ 1 %.
    pub(crate) fixed_delay_ms: Option<f64>,
    /// That configuration's hold ratio.
    pub(crate) fixed_hold_ratio: Option<f64>,
}

/// One profile's comparison.
#[derive(Clone, Debug)]
pub(crate) struct Comparison {
    pub(crate) profile: String,
    pub(crate) rate_hz: f64,
    pub(crate) truth: Side,
    pub(crate) inferred: Option<Side>,
    /// `None`: no period found (the inferred side is then absent).
    pub(crate) estimate: Option<periodic::Estimate>,
    /// Share of received packets whose inferred slot is their true sequence number (up to
    /// the numbering's origin).
    pub(crate) slots_right: f64,
}

/// Decodes a synthetic trace of `profile` at `rate_hz` for `seconds`.
pub(crate) fn trace(profile: &str, rate_hz: f64, seconds: i64, seed: u64) -> Decoded {
    let config = Config {
        rate_hz,
        duration: Nanos::from_secs(seconds),
        seed,
        motion: Motion::Circle,
        model: synth::profile(profile).expect("a built-in profile"),
        profile: Some(profile.to_owned()),
    };
    let (header, records) = synth::generate(&config).expect("synth generates");
    let bytes = synth::to_bytes(&header, &records);
    let mut decoded =
        decode_trace(Reader::new(&bytes[..]).expect("a trace"), None).expect("decodes");
    // Both sides without the ground truth: only received samples are compared.
    decoded.truth.clear();
    decoded
}

fn side(decoded: &Decoded, period_ms: f64) -> Side {
    let info = &decoded.streams[0];
    let jitter_ms = stats_for(info, decoded.samples.iter())
        .jitter
        .map_or(f64::NAN, |j| j.mean_ms);
    let streams = TraceStreams::new("trace".into(), decoded.clone()).expect("replayable");
    let recommend = |grid: Grid| {
        let policies = grid.expand(usize::MAX).expect("the grid expands");
        let rows = sweep::run(
            &[streams.prepare()],
            &policies,
            &FrameClock::Fps(60.0),
            ClockMapping::Estimated,
            Shard::ALL,
            &|| {},
        )
        .expect("the sweep runs");
        let t = tune(&rows, &policies, &Constraints::default());
        t.recommendation
            .and_then(|r| t.candidate(r))
            .map(|c| (c.worst, policies[c.config].to_string()))
    };
    let default = recommend(default_tune_grid_for(packet_rate([decoded])));
    let mut fixed = Grid::default();
    fixed
        .add_cli("fixed:delay=0ms..400ms/1ms,max_gap=250ms")
        .expect("a fixed-delay grid");
    let fixed = recommend(fixed);
    Side {
        period_ms,
        jitter_ms,
        delay_ms: default.as_ref().and_then(|(w, _)| w.mean_delay_ms),
        hold_ratio: default.as_ref().map(|(w, _)| w.hold_ratio),
        policy: default.map(|(_, p)| p),
        fixed_delay_ms: fixed.as_ref().and_then(|(_, p)| {
            let ms = p.split("delay=").nth(1)?.split("ms").next()?;
            ms.parse().ok()
        }),
        fixed_hold_ratio: fixed.map(|(w, _)| w.hold_ratio),
    }
}

/// Compares true and inferred send times on one profile.
pub(crate) fn compare(profile: &str, rate_hz: f64, seconds: i64, seed: u64) -> Comparison {
    let decoded = trace(profile, rate_hz, seconds, seed);
    let truth = side(&decoded, 1000.0 / rate_hz);
    let mut hidden = decoded.clone();
    for s in &mut hidden.samples {
        s.seq = 0;
        s.send = Nanos::ZERO;
    }
    let Some(estimate) = periodic::assign(&mut hidden.samples) else {
        return Comparison {
            profile: profile.to_owned(),
            rate_hz,
            truth,
            inferred: None,
            estimate: None,
            slots_right: 0.0,
        };
    };
    let mut diffs: Vec<i64> = hidden
        .samples
        .iter()
        .zip(&decoded.samples)
        .map(|(a, b)| a.seq - b.seq)
        .collect();
    let all = diffs.len();
    diffs.sort_unstable();
    let origin = diffs[all / 2];
    let slots_right = diffs.iter().filter(|&&d| d == origin).count() as f64 / all as f64;
    let inferred = Some(side(&hidden, estimate.period_ns / 1e6));
    Comparison {
        profile: profile.to_owned(),
        rate_hz,
        truth,
        inferred,
        estimate: Some(estimate),
        slots_right,
    }
}

/// Whether `b` is within 5 ms or 10 % of `a`.
pub(crate) fn close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 5.0_f64.max(0.1 * a),
        _ => false,
    }
}

/// Whether both inferred recommendations (`tune`'s default grid, and the least fixed delay)
/// are within 5 ms or 10 % of the true ones.
pub(crate) fn delay_close(c: &Comparison) -> bool {
    c.inferred.as_ref().is_some_and(|i| {
        close(c.truth.delay_ms, i.delay_ms) && close(c.truth.fixed_delay_ms, i.fixed_delay_ms)
    })
}
