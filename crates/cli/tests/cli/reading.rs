//! The read path (issue 17): traces read through borrowed records, parsed on a second thread,
//! give exactly the figures the owned, one-thread reader gave. The golden file was written by
//! the binary before that change (`JITTERLAB_BLESS=1` rewrites it after a deliberate change
//! of the figures themselves).

use serde_json::{Value, json};

use crate::util::{fixtures, jitterlab};

const POLICY: &str = "fixed:delay=100ms,max_gap=120ms,capacity=8";

/// `replay --json` and `info --json` of the demo trace and of a synthetic trace with ground
/// truth (and the synthetic one read from standard input), against the golden file.
#[test]
fn replay_and_info_figures_are_those_of_the_owned_reader() {
    let dir = tempfile::tempdir().unwrap();
    let synth = dir.path().join("synth.jtr");
    jitterlab()
        .args(["synth", "--rate", "20", "--duration", "300s", "--seed", "7"])
        .args(["--profile", "wifi", "--motion", "walk", "-q", "-o"])
        .arg(&synth)
        .assert()
        .success();
    let demo = fixtures().join("traces/demo-wifi-20hz.jtr");
    let run = |args: &[&str], input: &std::path::Path| -> Value {
        let out = jitterlab().args(args).arg(input).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let replay = |input: &std::path::Path| {
        let v = run(&["replay", "--policy", POLICY, "--json"], input);
        json!({"metrics": v["metrics"], "streams": v["streams"]})
    };
    let info = |input: &std::path::Path| {
        let v = run(&["info", "--json"], input);
        json!({"packets": v["packets"], "streams": v["streams"], "flows": v["flows"]})
    };
    let got = json!({
        "demo replay": replay(&demo),
        "demo info": info(&demo),
        "synth replay": replay(&synth),
        "synth info": info(&synth),
    });
    // The same bytes from standard input (no length known, another read pattern).
    let piped = jitterlab()
        .args(["replay", "--policy", POLICY, "--json", "-"])
        .write_stdin(std::fs::read(&synth).unwrap())
        .output()
        .unwrap();
    assert!(piped.status.success());
    let piped: Value = serde_json::from_slice(&piped.stdout).unwrap();
    assert_eq!(piped["metrics"], got["synth replay"]["metrics"]);

    let golden = fixtures().join("golden/read-path.json");
    if std::env::var_os("JITTERLAB_BLESS").is_some() {
        std::fs::write(&golden, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&golden).unwrap()).unwrap();
    for key in ["demo replay", "demo info", "synth replay", "synth info"] {
        assert_eq!(
            got[key],
            want[key],
            "{key} differs from {}",
            golden.display()
        );
    }
}
