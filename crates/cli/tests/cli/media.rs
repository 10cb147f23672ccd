//! Media played as media: `tune`, `sweep` and `report` choose playout mode by themselves on
//! real calls, recommend a configuration that plays frames, and their rows are what `replay
//! --playout` says of the same policy.

use std::ffi::OsStr;
use std::path::PathBuf;

use jitterlab_capture::testdata::shared_data;
use serde_json::Value;

use crate::util::{jitterlab, json};

/// The shared calls the issue names: G.711, G.722, AMR, Opus and KakaoTalk.
const CALLS: &[&str] = &[
    "saghul-sipp-scenarios_g711a.pcap",
    "saghul-sipp-scenarios_g722.pcap",
    "withsdp/hdiniz-rtpdump_sample1_ipv4_amr-nb.withsdp.pcapng",
    "wiresharkwiki_sip-rtp-opus.pcap",
    "ndpi_KakaoTalk_talk.pcap",
];

fn call(data: &std::path::Path, name: &str) -> PathBuf {
    let p = data.join("pcap").join(name);
    assert!(
        p.exists(),
        "{} is missing from the shared data",
        p.display()
    );
    p
}

#[test]
fn tune_recommends_a_playout_configuration_on_every_shared_call() {
    let Some(data) = shared_data() else { return };
    for name in CALLS {
        let path = call(&data, name);
        let doc = json(&["tune".as_ref(), "--json".as_ref(), path.as_os_str()]);
        assert_eq!(doc["mode"], "playout", "{name}");
        let rec = &doc["recommendation"];
        let policy = rec["policy"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {doc}"));
        // Played as frames: no snapshot-only policy (source, mirror, ngo) is recommended.
        for snapshot in ["source:", "mirror:", "ngo:"] {
            assert!(!policy.starts_with(snapshot), "{name}: {policy}");
        }
        let m = &rec["metrics"];
        assert!(
            m["worst_late_ratio"].as_f64().unwrap() <= 0.01,
            "{name}: {m}"
        );
        // With its MOS (E-model, from the call's codec).
        let mos = m["worst_mos"]
            .as_f64()
            .unwrap_or_else(|| panic!("{name}: no MOS in {m}"));
        assert!((1.0..=4.5).contains(&mos), "{name}: MOS {mos}");
        // The recommendation replays to the figures tune judged it by.
        let replayed = json(&[
            "replay".as_ref(),
            path.as_os_str(),
            "--playout".as_ref(),
            "--policy".as_ref(),
            policy.as_ref(),
            "--json".as_ref(),
        ]);
        let per_trace = &m["traces"][0]["metrics"];
        for key in ["frames", "late", "lost", "concealed", "mos", "r_factor"] {
            assert_eq!(replayed["metrics"][key], per_trace[key], "{name}: {key}");
        }
        let (a, b) = (
            replayed["metrics"]["mean_delay_ms"].as_f64().unwrap(),
            per_trace["mean_delay_ms"].as_f64().unwrap(),
        );
        assert!((a - b).abs() < 1e-9, "{name}: {a} vs {b}");
        eprintln!(
            "{name}: {policy} late {} mean delay {b:.1} ms mos {}",
            m["worst_late_ratio"], m["worst_mos"]
        );
    }
}

#[test]
fn snapshot_mode_is_kept_on_request_and_media_buffers_refuse_it() {
    let Some(data) = shared_data() else { return };
    let path = call(&data, CALLS[0]);
    let doc = json(&[
        "tune".as_ref(),
        "--json".as_ref(),
        "--snapshot".as_ref(),
        path.as_os_str(),
    ]);
    assert_eq!(doc["mode"], "snapshot");
    assert!(
        doc["recommendation"]["metrics"]
            .get("worst_hold_ratio")
            .is_some()
    );
    // A policy that only interpolates snapshots cannot play frames.
    let out = jitterlab()
        .args([OsStr::new("sweep"), path.as_os_str()])
        .args(["--playout", "--sweep", "mirror:buffer_multiplier=1|2", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("interpolates snapshots"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn playout_sweep_rows_read_back_and_match_replay() {
    let Some(data) = shared_data() else { return };
    let path = call(&data, CALLS[1]);
    let dir = tempfile::tempdir().unwrap();
    for ext in ["json", "csv", "parquet"] {
        let out = dir.path().join(format!("rows.{ext}"));
        jitterlab()
            .args([OsStr::new("sweep"), path.as_os_str()])
            .args(["--sweep", "fixed:delay=0ms..60ms/20ms", "-q", "-o"])
            .arg(&out)
            .assert()
            .success();
        // The report reads them back as playout rows: its recommendation plays frames.
        let report = dir.path().join(format!("report-{ext}"));
        let shown = jitterlab()
            .arg("report")
            .arg(&path)
            .arg("--sweep")
            .arg(&out)
            .arg("-o")
            .arg(&report)
            .output()
            .unwrap();
        assert!(shown.status.success(), "{shown:?}");
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(
            text.contains("Recommended: --playout --policy fixed:delay="),
            "{text}"
        );
        assert!(report.join("playout-timeline.png").exists());
        assert!(report.join("pareto.png").exists());
        assert!(report.join("mos.png").exists());
        assert!(report.join("recovery.png").exists());
        assert!(!report.join("buffer-depth.png").exists());
    }
    let rows: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("rows.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for row in rows {
        assert_eq!(row["mode"], "playout");
        let policy = row["policy"].as_str().unwrap();
        let replayed = json(&[
            "replay".as_ref(),
            path.as_os_str(),
            "--playout".as_ref(),
            "--policy".as_ref(),
            policy.as_ref(),
            "--json".as_ref(),
        ]);
        for key in ["frames", "played", "late", "lost", "mean_delay_ms"] {
            assert_eq!(row[key], replayed["metrics"][key], "{policy}: {key}");
        }
    }
}
