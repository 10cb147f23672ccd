//! The `geckos` preset against the real `@geckos.io/snapshot-interpolation` package (npm,
//! 1.1.1), driven by Node over the same frames (`tests/peers/geckos_peer.cjs`): for every frame
//! the library interpolates, the preset interpolates between the same two snapshots at the
//! same percentage and shows the same value; where the library returns nothing, the preset
//! holds. Traces: synthetic Wi-Fi, LTE-while-driving (reordering, outages) and congested links,
//! and a recorded cellular link from the team's shared data when `JITTERLAB_SHARED_DATA` is set.
//!
//! The package is installed by `.ci/run` into `target/peers/npm` (or the directory named by
//! `JITTERLAB_NPM_PEERS`). Without Node or the package the test says so and passes, unless
//! `JITTERLAB_REQUIRE_PEERS` is set, when it fails.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use jitterlab_capture::decode::{DecoderConfig, DecoderKind, StreamDecoder};
use jitterlab_capture::synth::{Config, Motion, generate, profile};
use jitterlab_capture::testdata::shared_data;
use jitterlab_capture::{Nanos, RecordKind, Sample};
use jitterlab_replay::{ClockMapping, FrameClock, Mode, Policy, Replay, Stream};
use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The directory holding `node_modules/@geckos.io/snapshot-interpolation`, and Node, if both
/// are there.
fn peer() -> Option<PathBuf> {
    let dir = std::env::var_os("JITTERLAB_NPM_PEERS")
        .map_or_else(|| root().join("target/peers/npm"), PathBuf::from);
    let package = dir.join("node_modules/@geckos.io/snapshot-interpolation/package.json");
    let node = Command::new("node").arg("--version").output();
    let missing = if !node.is_ok_and(|o| o.status.success()) {
        Some("node is not installed".to_owned())
    } else if !package.exists() {
        Some(format!("{} is missing", package.display()))
    } else {
        None
    };
    match missing {
        None => Some(dir),
        Some(why) => {
            assert!(
                std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
                "JITTERLAB_REQUIRE_PEERS is set but {why} (npm install --prefix {} \
                 @geckos.io/snapshot-interpolation@1.1.1)",
                dir.display()
            );
            eprintln!("skipped: {why} (.ci/run installs it)");
            None
        }
    }
}

/// `seconds` of 20 or 60 Hz snapshots through `model`, the received ones in arrival order,
/// one per tick (geckos keeps copies; jitterlab drops them, so the traces have none).
fn trace(rate_hz: f64, seconds: i64, model: &str, seed: u64) -> Vec<Sample> {
    let config = Config {
        rate_hz,
        duration: Nanos::from_secs(seconds),
        seed,
        motion: Motion::Walk,
        model: profile(model)
            .or_else(|_| model.parse())
            .expect("a profile or a model"),
        profile: None,
    };
    let (_, records) = generate(&config).unwrap();
    let mut dec = StreamDecoder::new(DecoderConfig::new(DecoderKind::Probe), vec![]);
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<Sample> = records
        .iter()
        .filter(|r| r.kind() == RecordKind::Received)
        .map(|r| dec.decode(r).unwrap())
        .filter(|s| seen.insert(s.seq))
        .collect();
    out.sort_by_key(|s| s.arrival);
    out
}

struct Seen {
    at: Nanos,
    mode: Mode,
    from: Option<u32>,
    to: Option<u32>,
    alpha: Option<f64>,
    value: f64,
}

/// Replays `samples` with `policy`, then runs the library over the same frames; returns the
/// frames compared and those the library interpolated.
fn compare(
    dir: &PathBuf,
    samples: &[Sample],
    policy: &str,
    fps: Option<f64>,
    auto: bool,
) -> (usize, usize) {
    let policy: Policy = policy.parse().unwrap();
    let mut seen = Vec::new();
    // A frame rate off the send rates, so that few targets land on a snapshot's time.
    Replay::new(FrameClock::Fps(61.3))
        .clock(ClockMapping::Fixed(Nanos::ZERO))
        .stream(&Stream::new(samples), &policy, |f| {
            seen.push(Seen {
                at: f.at,
                mode: f.mode,
                from: f.from,
                to: f.to,
                alpha: f.alpha,
                value: f.value.first().copied().unwrap_or(f64::NAN),
            });
        })
        .unwrap();
    // Each packet is processed in the first frame at or after its arrival, as the replay does.
    let mut next = 0;
    let frames: Vec<Value> = seen
        .iter()
        .map(|f| {
            let mut add = Vec::new();
            while next < samples.len() && samples[next].arrival <= f.at {
                let s = &samples[next];
                add.push(json!({"id": next, "time": s.send.as_millis_f64(), "x": s.values[0]}));
                next += 1;
            }
            json!({"at": f.at.as_millis_f64(), "add": add})
        })
        .collect();
    let job = json!({"fps": fps, "autoCorrect": auto, "frames": frames});
    let mut child = Command::new("node")
        .arg(root().join("tests/peers/geckos_peer.cjs"))
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(job.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "node failed");
    let peer: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(peer.len(), seen.len());
    let mut interpolated = 0;
    // Targets that land on a snapshot's time (to within float rounding: the library counts
    // in float milliseconds, jitterlab in integer nanoseconds) may be taken as the end of one
    // pair or the start of the next, or, at the newest, as nothing: compared by value there.
    let edge = |a: f64| !(1e-6..=1.0 - 1e-6).contains(&a);
    for (i, (ours, theirs)) in seen.iter().zip(&peer).enumerate() {
        let at = ours.at.as_millis_f64();
        if theirs.is_null() {
            assert!(
                ours.mode != Mode::Interpolate || edge(ours.alpha.unwrap()),
                "{policy} frame {i} at {at} ms: the library shows nothing, the preset interpolates"
            );
            continue;
        }
        let p = theirs["p"].as_f64().unwrap();
        let x = theirs["x"].as_f64().unwrap();
        if ours.mode != Mode::Interpolate && edge(p) {
            continue;
        }
        interpolated += 1;
        assert_eq!(
            ours.mode,
            Mode::Interpolate,
            "{policy} frame {i} at {at} ms: {theirs}"
        );
        assert!(
            (ours.value - x).abs() <= 1e-6 * x.abs().max(1.0),
            "{policy} frame {i} at {at} ms: {} vs {x}",
            ours.value
        );
        if !edge(p) {
            let older = theirs["older"].as_u64().unwrap() as u32;
            let newer = theirs["newer"].as_u64().unwrap() as u32;
            assert_eq!(
                (ours.from, ours.to),
                (Some(older), Some(newer)),
                "{policy} frame {i} at {at} ms"
            );
            assert!(
                (ours.alpha.unwrap() - p).abs() < 1e-6,
                "{policy} frame {i}: {:?} vs {p}",
                ours.alpha
            );
        }
    }
    (seen.len(), interpolated)
}

#[test]
fn the_preset_interpolates_as_the_npm_package_does() {
    let Some(dir) = peer() else { return };
    let mut traces = vec![
        ("wifi 60 Hz", trace(60.0, 40, "wifi", 1), 60.0),
        ("lte-driving 20 Hz", trace(20.0, 60, "lte-driving", 2), 20.0),
        ("congested 20 Hz", trace(20.0, 60, "congested", 3), 20.0),
    ];
    if let Some(data) = shared_data() {
        let link = data.join("traces/mahimahi/Verizon-LTE-short.down");
        let model = format!("delay=25ms,link={},queue=200", link.display());
        traces.push(("Verizon LTE link 20 Hz", trace(20.0, 60, &model, 4), 20.0));
    }
    for (name, samples, rate) in &traces {
        for (policy, fps, auto) in [
            (format!("geckos:server_fps={rate}"), Some(*rate), true),
            (
                format!("geckos:server_fps={rate},auto_correct=false"),
                Some(*rate),
                false,
            ),
            ("geckos".to_owned(), None, true),
        ] {
            let (frames, interpolated) = compare(&dir, samples, &policy, fps, auto);
            eprintln!("{name}, {policy}: {interpolated} of {frames} frames interpolated by both");
            assert!(
                interpolated * 2 > frames,
                "{name}, {policy}: {interpolated} of {frames}"
            );
        }
    }
}
