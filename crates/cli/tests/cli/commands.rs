//! info, replay, timeline and demo on real files.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;

use jitterlab_capture::RecordKind;
use jitterlab_capture::decode::probe::Probe;
use jitterlab_capture::synth::{Config, generate};

use crate::util::{decode_png, fixtures, import, jitterlab, json, write};

fn demo_trace() -> std::path::PathBuf {
    fixtures().join("traces/demo-wifi-20hz.jtr")
}

/// `info --json` has the documented shape, and its counts agree with the generator's own
/// record of what it sent and delivered.
#[test]
fn info_json_matches_the_generators_ground_truth() {
    let v = json(&[
        OsStr::new("info"),
        demo_trace().as_os_str(),
        OsStr::new("--json"),
    ]);
    let s = &v["streams"][0];
    for key in [
        "stream",
        "ssrc",
        "src",
        "dst",
        "payload_type",
        "clock_rate",
        "packets",
        "lost",
        "duplicates",
        "reordered",
        "loss_bursts",
        "jitter_ms",
    ] {
        assert!(s.get(key).is_some(), "missing key {key}");
    }
    for key in ["count", "mean_len", "max_len"] {
        assert!(
            s["loss_bursts"].get(key).is_some(),
            "missing loss_bursts.{key}"
        );
    }
    for key in ["last", "mean", "max"] {
        assert!(
            s["jitter_ms"][key].as_f64().unwrap() >= 0.0,
            "jitter_ms.{key}"
        );
    }
    assert!(s["ssrc"].is_null());

    let (_, records) = generate(&Config::demo()).unwrap();
    let mut received: BTreeMap<u64, u64> = BTreeMap::new();
    let mut sent = BTreeSet::new();
    for r in &records {
        let p = Probe::parse(&r.payload).unwrap();
        if r.kind == RecordKind::Received {
            *received.entry(p.tick).or_default() += 1;
        } else {
            sent.insert(p.tick);
        }
    }
    let packets: u64 = received.values().sum();
    let first = *received.keys().next().unwrap();
    let last = *received.keys().last().unwrap();
    let lost = sent
        .iter()
        .filter(|t| (first..=last).contains(*t) && !received.contains_key(t))
        .count();
    let dups: u64 = received.values().map(|n| n - 1).sum();
    assert_eq!(s["packets"].as_u64().unwrap(), packets);
    assert_eq!(s["lost"].as_u64().unwrap(), lost as u64);
    assert_eq!(s["duplicates"].as_u64().unwrap(), dups);
    assert!(
        lost > 0 && dups > 0,
        "the demo trace shows loss and duplicates"
    );
    assert_eq!(v["truth_packets"].as_u64().unwrap(), sent.len() as u64);
}

#[test]
fn info_counts_duplicates_loss_and_reordering_from_a_csv() {
    let dir = tempfile::tempdir().unwrap();
    // 1 2 2 5 4 8 received: lost 3 6 7 (two bursts), one duplicate, one reordered.
    let csv = write(
        dir.path(),
        "x.csv",
        b"seq,send_ms,arrival_ms\n1,20,30\n2,40,50\n2,40,51\n5,100,110\n4,80,120\n8,160,170\n",
    );
    let trace = import(dir.path(), &csv);
    let v = json(&[OsStr::new("info"), trace.as_os_str(), OsStr::new("--json")]);
    let s = &v["streams"][0];
    assert_eq!(s["packets"], 6);
    assert_eq!(s["lost"], 3);
    assert_eq!(s["duplicates"], 1);
    assert_eq!(s["reordered"], 1);
    assert_eq!(s["loss_bursts"]["count"], 2);
    assert_eq!(s["loss_bursts"]["max_len"], 2);
    assert_eq!(s["loss_bursts"]["mean_len"], 1.5);
    let text = jitterlab().arg("info").arg(&trace).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("duplicates"));
}

#[test]
fn replay_is_deterministic_and_more_delay_means_fewer_holds() {
    let trace = demo_trace();
    let run = |delay: &str| {
        let policy = format!("fixed:delay={delay},max_gap=120ms");
        json(&[
            OsStr::new("replay"),
            trace.as_os_str(),
            OsStr::new("--policy"),
            OsStr::new(&policy),
            OsStr::new("--json"),
        ])
    };
    let a = run("100ms");
    assert_eq!(a, run("100ms"));
    assert!(a.get("samples").is_none(), "no --at: no samples");
    let m = &a["metrics"];
    for key in [
        "frames",
        "holds",
        "hold_ratio",
        "max_consecutive_holds",
        "duplicates_dropped",
        "mean_delay_ms",
    ] {
        assert!(m.get(key).is_some(), "missing metrics.{key}");
    }
    assert_eq!(
        a["policy"],
        "fixed:delay=100ms,max_gap=120ms,capacity=32,stale=false,dedup=true,miss=hold"
    );
    // Every packet is accounted for exactly once.
    let n = |k: &str| m[k].as_u64().unwrap();
    assert_eq!(
        n("packets"),
        n("inserted") + n("duplicates_dropped") + n("late") + n("stale_dropped")
    );
    assert!(n("duplicates_dropped") > 0);
    let holds = |v: &serde_json::Value| v["metrics"]["hold_ratio"].as_f64().unwrap();
    let (h50, h100, h200) = (holds(&run("50ms")), holds(&a), holds(&run("200ms")));
    assert!(h50 > h100 && h100 > h200, "{h50} {h100} {h200}");
    let d = |v: &serde_json::Value| v["metrics"]["mean_delay_ms"].as_f64().unwrap();
    assert!((d(&a) - 100.0).abs() < 10.0, "mean delay {}", d(&a));
}

#[test]
fn timeline_csv_has_a_row_per_frame() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    let v = json(&[
        OsStr::new("replay"),
        demo_trace().as_os_str(),
        OsStr::new("--policy"),
        OsStr::new("fixed"),
        OsStr::new("--fps"),
        OsStr::new("30"),
        OsStr::new("--json"),
        OsStr::new("--timeline"),
        out.as_os_str(),
    ]);
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "stream,at_ms,target_ms,mode,hold,alpha,depth,delay_ms,error,state,startup,buffer_delay_ms,frozen,ahead_ms,x,y,z,qx,qy,qz,qw"
    );
    let rows: Vec<&str> = lines.collect();
    let m = &v["metrics"];
    assert_eq!(
        rows.len() as u64,
        m["frames"].as_u64().unwrap() + m["startup_frames"].as_u64().unwrap()
    );
    let holds = rows
        .iter()
        .map(|r| r.split(',').collect::<Vec<_>>())
        .filter(|f| f[3] == "hold" && f[10] == "false")
        .count();
    assert_eq!(holds as u64, m["holds"].as_u64().unwrap());
    // Existing timeline is not overwritten without --force.
    let again = jitterlab()
        .arg("replay")
        .arg(demo_trace())
        .args(["--policy", "fixed", "--timeline"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
}

/// Share of non-white pixels in a rectangle of an RGB image.
fn ink(img: &(u32, u32, Vec<u8>), x0: u32, y0: u32, x1: u32, y1: u32) -> f64 {
    let (w, _, px) = img;
    let mut n = 0;
    for y in y0..y1 {
        for x in x0..x1 {
            let i = 3 * (y * w + x) as usize;
            if px[i..i + 3] != [255, 255, 255] {
                n += 1;
            }
        }
    }
    f64::from(n) / f64::from((x1 - x0) * (y1 - y0))
}

#[test]
fn demo_writes_real_pngs_with_content_in_every_panel() {
    let dir = tempfile::tempdir().unwrap();
    let out = jitterlab()
        .current_dir(dir.path())
        .arg("demo")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("jitterlab-report/buffer-depth.png"),
        "{stdout}"
    );
    assert!(stdout.contains("fixed 100 ms"), "{stdout}");
    let report = dir.path().join("jitterlab-report");
    let mut images = Vec::new();
    for name in ["network.png", "buffer-depth.png", "error.png"] {
        let img = decode_png(&report.join(name));
        assert_eq!((img.0, img.1), (1600, 900), "{name}");
        images.push(img);
    }
    // Each panel of the 2×2 figures has drawn content beyond axes and text.
    for img in &images[1..] {
        for (x0, y0) in [(0, 50), (800, 50), (0, 475), (800, 475)] {
            let share = ink(img, x0 + 100, y0 + 40, x0 + 780, y0 + 360);
            assert!(share > 0.02, "panel at {x0},{y0} looks blank ({share})");
        }
    }
    assert_ne!(images[1].2, images[2].2, "depth and error figures differ");
    let index = std::fs::read_to_string(report.join("index.html")).unwrap();
    for name in ["network.png", "buffer-depth.png", "error.png"] {
        assert!(index.contains(name));
    }
    let csv = std::fs::read_to_string(report.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    // Rerunning into the same directory reuses it and leaves other files alone.
    std::fs::write(report.join("notes.txt"), b"mine").unwrap();
    jitterlab()
        .current_dir(dir.path())
        .arg("demo")
        .assert()
        .success();
    assert_eq!(std::fs::read(report.join("notes.txt")).unwrap(), b"mine");
}

#[test]
fn synth_same_seed_same_bytes_and_info_sees_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let make = |name: &str, seed: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        jitterlab()
            .args([
                "synth",
                "--profile",
                "wifi",
                "--model",
                "loss=10%,burst=3",
                "--duration",
                "120s",
                "--seed",
                seed,
                "-o",
            ])
            .arg(&out)
            .args(extra)
            .assert()
            .success();
        std::fs::read(out).unwrap()
    };
    let a = make("a.jtr", "5", &[]);
    assert_eq!(a, make("b.jtr", "5", &[]), "same seed, same bytes");
    assert_ne!(a, make("c.jtr", "6", &[]), "another seed, another file");
    assert_ne!(a, make("d.jtr", "5", &["--motion", "teleport"]));
    let v = json(&[
        OsStr::new("info"),
        dir.path().join("a.jtr").as_os_str(),
        OsStr::new("--json"),
    ]);
    let s = &v["streams"][0];
    let sent = v["truth_packets"].as_u64().unwrap();
    assert_eq!(sent, 2400);
    let lost = s["lost"].as_f64().unwrap() / sent as f64;
    assert!((0.06..0.14).contains(&lost), "loss {lost}");
    assert!(s["loss_bursts"]["mean_len"].as_f64().unwrap() > 1.5);
    assert_eq!(
        s["channels"],
        serde_json::json!(["x", "y", "z", "qx", "qy", "qz", "qw"])
    );
    // The trace replays with error measured against the generator's ground truth.
    let r = json(&[
        OsStr::new("replay"),
        dir.path().join("a.jtr").as_os_str(),
        OsStr::new("--policy"),
        OsStr::new("fixed:delay=150ms"),
        OsStr::new("--json"),
    ]);
    assert_eq!(r["metrics"]["error_reference"], "truth");
}

#[test]
fn synth_lists_its_profiles() {
    let out = jitterlab()
        .args(["synth", "--list-profiles"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "lan",
        "wifi",
        "lte",
        "lte-driving",
        "congested",
        "satellite",
        "mobile-handover",
    ] {
        assert!(text.contains(name), "{name} missing");
    }
}

#[test]
fn recorded_frame_times_replace_the_frame_rate() {
    let dir = tempfile::tempdir().unwrap();
    let trace = import(
        dir.path(),
        &fixtures().join("contracts/c07_seed000_interpolate.csv"),
    );
    let frames = write(dir.path(), "frames.txt", b"# frame times, ms\n225\n\n240\n");
    let v = json(&[
        OsStr::new("replay"),
        trace.as_os_str(),
        OsStr::new("--policy"),
        OsStr::new("fixed:delay=100ms"),
        OsStr::new("--clock"),
        OsStr::new("offset=0"),
        OsStr::new("--frames"),
        frames.as_os_str(),
        OsStr::new("--json"),
    ]);
    assert_eq!(v["metrics"]["frames"], 2);
    let hitchy = json(&[
        OsStr::new("replay"),
        demo_trace().as_os_str(),
        OsStr::new("--policy"),
        OsStr::new("fixed"),
        OsStr::new("--hitches"),
        OsStr::new("10%:100ms"),
        OsStr::new("--json"),
    ]);
    let plain = json(&[
        OsStr::new("replay"),
        demo_trace().as_os_str(),
        OsStr::new("--policy"),
        OsStr::new("fixed"),
        OsStr::new("--json"),
    ]);
    assert!(
        hitchy["metrics"]["frames"].as_u64().unwrap()
            < plain["metrics"]["frames"].as_u64().unwrap()
    );
}

/// C21 through the command line: sent every 20 ms, received out of order with intervals 35,
/// −5, 40, 5 ms; with a 60 ms buffer they play at 60, 80, 100, 120, 140 ms.
#[test]
fn c21_playout_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let trace = import(dir.path(), &fixtures().join("contracts/c21_playout.csv"));
    let timeline = dir.path().join("playout.csv");
    let v = json(&[
        OsStr::new("replay"),
        trace.as_os_str(),
        OsStr::new("--policy"),
        OsStr::new("fixed:delay=60ms"),
        OsStr::new("--clock"),
        OsStr::new("offset=0"),
        OsStr::new("--playout"),
        OsStr::new("--json"),
        OsStr::new("--timeline"),
        timeline.as_os_str(),
    ]);
    assert_eq!(v["metrics"]["frames"], 5);
    assert_eq!(v["metrics"]["played"], 5);
    let text = std::fs::read_to_string(&timeline).unwrap();
    let times: Vec<f64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse::<f64>().unwrap())
        .collect();
    assert_eq!(times, [60.0, 80.0, 100.0, 120.0, 140.0]);
    // A 10 ms buffer is too short: frame 1 plays at 30 ms but arrives at 35, late (C22).
    let v = json(&[
        OsStr::new("replay"),
        trace.as_os_str(),
        OsStr::new("--policy"),
        OsStr::new("fixed:delay=10ms"),
        OsStr::new("--clock"),
        OsStr::new("offset=0"),
        OsStr::new("--playout"),
        OsStr::new("--json"),
    ]);
    assert_eq!(v["metrics"]["late"], 1);
    // Adaptive policies stretch play-out; every slot is still accounted once.
    let adaptive = json(&[
        OsStr::new("replay"),
        trace.as_os_str(),
        OsStr::new("--policy"),
        OsStr::new("jitter"),
        OsStr::new("--playout"),
        OsStr::new("--json"),
    ]);
    assert_eq!(adaptive["metrics"]["frames"], 5);
    // Snapshot interpolators do not play discrete frames.
    let mirror = jitterlab()
        .arg("replay")
        .arg(&trace)
        .args(["--policy", "mirror", "--playout"])
        .output()
        .unwrap();
    assert_eq!(mirror.status.code(), Some(2));
}

/// `--playout --policy neteq` runs NetEq's own decisions and reports its operation rates: a
/// lost frame is expanded and merged, a delay spike is expanded and then accelerated away.
#[test]
fn neteq_playout_reports_its_operations() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("seq,send_ms,arrival_ms\n");
    for i in 0..1000 {
        if i == 300 {
            continue; // lost
        }
        let arrival = if (600..610).contains(&i) {
            30 + 610 * 20
        } else {
            30 + i * 20
        };
        csv.push_str(&format!("{i},{},{arrival}\n", i * 20));
    }
    let trace = import(dir.path(), &write(dir.path(), "voice.csv", csv.as_bytes()));
    let v = json(&[
        OsStr::new("replay"),
        trace.as_os_str(),
        OsStr::new("--policy"),
        OsStr::new("neteq"),
        OsStr::new("--playout"),
        OsStr::new("--json"),
    ]);
    assert_eq!(v["metrics"]["frames"], 1000);
    assert_eq!(v["metrics"]["lost"], 1);
    assert_eq!(v["metrics"]["late"], 0);
    let n = &v["streams"][0]["neteq"];
    assert!(n["merge"].as_u64().unwrap() >= 1, "{n}");
    assert!(n["expand_rate"].as_f64().unwrap() > 0.0, "{n}");
    assert!(n["accelerate"].as_u64().unwrap() > 0, "{n}");
    for key in [
        "preemptive_rate",
        "accelerate_rate",
        "buffer_flushes",
        "mean_target_ms",
    ] {
        assert!(n.get(key).is_some(), "{key} missing: {n}");
    }
}
