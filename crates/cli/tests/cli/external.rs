//! External policies (`--policy exec:CMD`) through the binary: seed 000's JavaScript buffer
//! agrees frame for frame with `fixed:delay=100ms,max_gap=120ms,capacity=8` over the demo trace
//! and three shared captures; seed 003's Unity buffer (Python) with its matching built-in
//! configuration; a grid file naming exec is refused without `--allow-exec`. Tests needing
//! node or python3 skip without them, and fail under `JITTERLAB_REQUIRE_PEERS`.

use std::path::{Path, PathBuf};

use jitterlab_capture::testdata::shared_data;

use crate::util::{fixtures, jitterlab, write};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have(program: &str) -> bool {
    let ok = std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
            "JITTERLAB_REQUIRE_PEERS is set but {program} does not run (apt-get install nodejs python3)"
        );
        eprintln!("skipped: {program} is not installed");
    }
    ok
}

/// The timeline of `trace` replayed through `policy`: one map per frame.
fn timeline(dir: &Path, trace: &Path, policy: &str) -> Vec<Vec<(String, String)>> {
    let out = dir.join("t.csv");
    jitterlab()
        .arg("-q")
        .arg("replay")
        .arg(trace)
        .args(["--policy", policy, "--force", "--timeline"])
        .arg(&out)
        .assert()
        .success();
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_owned)
        .collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(str::to_owned))
                // The depth is what each buffer holds ahead: the seed's evicts, jitterlab's prunes.
                .filter(|(k, _)| k != "depth")
                .collect()
        })
        .collect()
}

fn demo() -> PathBuf {
    fixtures().join("traces/demo-wifi-20hz.jtr")
}

const FIXED8: &str = "fixed:delay=100ms,max_gap=120ms,capacity=8";

#[test]
fn seed000_javascript_buffer_agrees_frame_for_frame_with_fixed() {
    if !have("node") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exec = format!(
        "exec(max_delay=100ms):node {}",
        root()
            .join("examples/external/seed000_snapshot_buffer.mjs")
            .display()
    );
    let mut traces = vec![demo()];
    if let Some(data) = shared_data() {
        for c in [
            "saghul-sipp-scenarios_g711a.pcap",
            "ndpi_KakaoTalk_talk.pcap",
            "wiresharkwiki_SIP_DTMF2.pcap",
        ] {
            traces.push(data.join("pcap").join(c));
        }
    }
    for trace in &traces {
        let ours = timeline(dir.path(), trace, &exec);
        let builtin = timeline(dir.path(), trace, FIXED8);
        assert!(builtin.len() > 100, "{}", trace.display());
        assert_eq!(ours.len(), builtin.len(), "{}", trace.display());
        for (i, (a, b)) in ours.iter().zip(&builtin).enumerate() {
            assert_eq!(a, b, "{} frame {i}", trace.display());
        }
    }
}

#[test]
fn seed003_unity_buffer_agrees_with_its_builtin_configuration() {
    if !have("python3") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exec = format!(
        "exec(max_delay=100ms):python3 {} 100",
        root()
            .join("examples/external/seed003_unity_buffer.py")
            .display()
    );
    let ours = timeline(dir.path(), &demo(), &exec);
    let builtin = timeline(
        dir.path(),
        &demo(),
        "fixed:delay=100ms,max_gap=1000s,capacity=32,stale=true",
    );
    assert_eq!(ours.len(), builtin.len());
    let get = |f: &[(String, String)], k: &str| f.iter().find(|(n, _)| n == k).unwrap().1.clone();
    let mut differ = 0;
    for (i, (a, b)) in ours.iter().zip(&builtin).enumerate() {
        if a == b {
            continue;
        }
        // The one difference: a target exactly on the oldest sample. Unity interpolates at
        // alpha 0, jitterlab holds it as "before the oldest"; what is shown is the same.
        differ += 1;
        let alpha: f64 = get(a, "alpha").parse().unwrap();
        assert_eq!(
            (get(a, "mode").as_str(), alpha),
            ("interpolate", 0.0),
            "frame {i}"
        );
        assert_eq!(get(b, "hold"), "before_oldest", "frame {i}");
        for k in ["x", "y", "z", "delay_ms", "error"] {
            assert_eq!(get(a, k), get(b, k), "frame {i} {k}");
        }
    }
    assert!(differ <= 2, "{differ} frames differ");
}

#[test]
fn a_grid_file_naming_exec_is_refused_without_allow_exec() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let grid = write(
        dir.path(),
        "grid.toml",
        format!("[exec]\ncommand = \"touch {}\"\n", marker.display()).as_bytes(),
    );
    let out = jitterlab()
        .arg("sweep")
        .arg(demo())
        .arg("--grid")
        .arg(&grid)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("runs a command"), "{err}");
    assert!(err.contains("--allow-exec"), "{err}");
    assert!(!marker.exists(), "the command ran");
    // Allowed, it runs (and fails: touch speaks no protocol), naming the policy.
    let out = jitterlab()
        .arg("sweep")
        .arg(demo())
        .arg("--grid")
        .arg(&grid)
        .arg("--allow-exec")
        .assert()
        .failure()
        .get_output()
        .clone();
    assert!(marker.exists(), "the command did not run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("policy exec"), "{err}");
}

#[test]
fn the_docs_minimal_python_policy_runs() {
    if !have("python3") {
        return;
    }
    let docs = std::fs::read_to_string(root().join("docs/external-policy.md")).unwrap();
    let after = docs.split("A minimal Python policy").nth(1).unwrap();
    let code = after
        .split("```python\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = write(dir.path(), "newest.py", code.as_bytes());
    let out = jitterlab()
        .arg("replay")
        .arg(demo())
        .args([
            "--policy",
            &format!("exec:python3 {}", script.display()),
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["metrics"];
    // Holding the newest packet at no delay: every frame holds, after the first arrival.
    assert_eq!(m["holds"], m["frames"], "{m}");
    assert!(m["frames"].as_u64().unwrap() > 1000, "{m}");
    assert_eq!(m["inserted"], 466, "{m}");
}

#[test]
fn exec_timeout_bounds_a_hanging_child() {
    let out = jitterlab()
        .args(["--exec-timeout", "300ms", "replay"])
        .arg(demo())
        .args(["--policy", "exec:sleep 30"])
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("policy exec:sleep 30"), "{err}");
    assert!(err.contains("no complete reply within 300ms"), "{err}");
    assert!(err.contains("batch 0"), "{err}");
}

/// Whether Python's `msgpack` package imports; like [`have`].
fn have_msgpack() -> bool {
    let ok = have("python3")
        && std::process::Command::new("python3")
            .args(["-c", "import msgpack"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
            "JITTERLAB_REQUIRE_PEERS is set but Python's msgpack does not import (pip install msgpack)"
        );
        eprintln!("skipped: Python's msgpack is not installed (pip install msgpack)");
    }
    ok
}

/// `replay --json` through `policy` with the timeline written: the metrics (without the
/// policy's name) and the timeline's text.
fn replay_both(dir: &Path, policy: &str) -> (serde_json::Value, String) {
    let csv = dir.join("timeline.csv");
    let out = jitterlab()
        .arg("replay")
        .arg(demo())
        .args(["--policy", policy, "--json", "--force", "--timeline"])
        .arg(&csv)
        .assert()
        .success()
        .get_output()
        .clone();
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let metrics = v["metrics"].take();
    (metrics, std::fs::read_to_string(&csv).unwrap())
}

#[test]
fn seed003_gives_the_same_metrics_and_timeline_over_json_and_msgpack() {
    if !have_msgpack() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = root().join("examples/external/seed003_unity_buffer.py");
    let command = format!("python3 {} 100", script.display());
    let (json_metrics, json_timeline) =
        replay_both(dir.path(), &format!("exec(max_delay=100ms):{command}"));
    let (mp_metrics, mp_timeline) = replay_both(
        dir.path(),
        &format!("exec(max_delay=100ms,format=msgpack):{command}"),
    );
    assert!(json_timeline.lines().count() > 1000);
    assert_eq!(mp_timeline, json_timeline);
    assert_eq!(mp_metrics, json_metrics);
    assert_eq!(json_metrics["inserted"], 466, "{json_metrics}");
}

#[test]
fn the_docs_minimal_msgpack_python_policy_runs() {
    if !have_msgpack() {
        return;
    }
    let docs = std::fs::read_to_string(root().join("docs/external-policy.md")).unwrap();
    let after = docs
        .split("The same policy over MessagePack")
        .nth(1)
        .unwrap();
    let code = after
        .split("```python\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = write(dir.path(), "newest_msgpack.py", code.as_bytes());
    let (m, _) = replay_both(
        dir.path(),
        &format!("exec(format=msgpack):python3 {}", script.display()),
    );
    assert_eq!(m["holds"], m["frames"], "{m}");
    assert!(m["frames"].as_u64().unwrap() > 1000, "{m}");
    assert_eq!(m["inserted"], 466, "{m}");
}
