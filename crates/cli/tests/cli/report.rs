//! `jitterlab report`: every figure on a real capture, a probe trace with ground truth and a
//! sweep; content in every panel; "no data" instead of failures on empty inputs; the summary
//! table against a golden file.

use std::path::{Path, PathBuf};

use jitterlab_capture::testdata::shared_data;

use crate::util::{decode_png, fixtures, jitterlab};

/// Share of clearly coloured pixels (data, not grey axes or text) in rows `y0..y1`.
fn colour(img: &(u32, u32, Vec<u8>), y0: u32, y1: u32) -> f64 {
    let (w, _, px) = img;
    let mut n = 0u32;
    for y in y0..y1 {
        for x in 90..w - 40 {
            let i = 3 * (y * w + x) as usize;
            let (r, g, b) = (px[i], px[i + 1], px[i + 2]);
            if r.max(g).max(b) - r.min(g).min(b) > 60 {
                n += 1;
            }
        }
    }
    f64::from(n) / f64::from((y1 - y0) * (w - 130))
}

/// Every panel (stacked in `rows` bands below the title) has drawn data.
fn assert_panels(dir: &Path, name: &str, rows: u32) {
    let img = decode_png(&dir.join(name));
    assert_eq!((img.0, img.1), (1600, 900), "{name}");
    let band = 850 / rows;
    for j in 0..rows {
        let (y0, y1) = (50 + j * band + 45, 50 + (j + 1) * band - 45);
        let share = colour(&img, y0, y1);
        assert!(share > 0.0005, "{name}: panel {j} looks blank ({share})");
    }
}

const ALL: [&str; 9] = [
    "network.png",
    "jitter.png",
    "timeline.png",
    "buffer-depth.png",
    "error.png",
    "error-cdf.png",
    "pareto.png",
    "heatmap.png",
    "playout.png",
];

fn report(trace: &Path, out: &Path, extra: &[&str]) -> String {
    let res = jitterlab()
        .arg("report")
        .arg(trace)
        .arg("-o")
        .arg(out)
        .arg("-q")
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{err}");
    assert!(!err.contains("panicked"));
    String::from_utf8_lossy(&res.stdout).into_owned()
}

fn demo() -> PathBuf {
    fixtures().join("traces/demo-wifi-20hz.jtr")
}

#[test]
fn report_on_a_probe_trace_with_ground_truth_and_a_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let rows = dir.path().join("rows.parquet");
    jitterlab()
        .arg("sweep")
        .arg(demo())
        .args([
            "--sweep",
            "fixed:delay=0..300ms/25ms,max_gap=60ms|120ms|250ms",
            "--sweep",
            "jitter:k=1|2|4",
            "-q",
            "-o",
        ])
        .arg(&rows)
        .assert()
        .success();
    let out = dir.path().join("report");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), b"mine").unwrap();
    let stdout = report(&demo(), &out, &["--sweep", rows.to_str().unwrap()]);
    assert!(stdout.contains("Recommended: --policy fixed:"), "{stdout}");
    for name in ALL {
        assert!(out.join(name).exists(), "{name}");
    }
    assert_panels(&out, "network.png", 1);
    assert_panels(&out, "jitter.png", 2);
    assert_panels(&out, "timeline.png", 2); // delay and depth bands; the strip may be blank
    assert_panels(&out, "error-cdf.png", 1);
    assert_panels(&out, "pareto.png", 1);
    assert_panels(&out, "heatmap.png", 1);
    assert_panels(&out, "playout.png", 1);
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    for name in ALL {
        assert!(
            index.contains(&format!("src=\"{name}\"")),
            "{name} not in the index"
        );
    }
    assert!(index.contains("Recommended configuration"));
    assert_eq!(
        std::fs::read(out.join("notes.txt")).unwrap(),
        b"mine",
        "unrelated files stay"
    );
    // Another input, other pictures.
    let other = dir.path().join("other");
    let lte = dir.path().join("lte.jtr");
    jitterlab()
        .args([
            "synth",
            "--profile",
            "lte",
            "--duration",
            "20s",
            "--seed",
            "9",
            "-o",
        ])
        .arg(&lte)
        .assert()
        .success();
    report(
        &lte,
        &other,
        &["--policy", "fixed:delay=100ms", "--policy", "jitter"],
    );
    for name in ["network.png", "timeline.png", "error.png"] {
        assert_ne!(
            decode_png(&out.join(name)).2,
            decode_png(&other.join(name)).2,
            "{name}"
        );
    }
}

#[test]
fn report_on_a_real_capture() {
    let Some(data) = shared_data() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nb6");
    report(
        &data.join("pcap/wiresharkwiki_nb6-telephone.pcap"),
        &out,
        // Snapshot figures of a voice call (its playout figures: media.rs).
        &["--stream", "1", "--snapshot"],
    );
    for name in ALL {
        assert!(out.join(name).exists(), "{name}");
    }
    assert_panels(&out, "network.png", 1);
    assert_panels(&out, "jitter.png", 2);
    assert_panels(&out, "pareto.png", 1);
    assert_panels(&out, "playout.png", 1);
}

/// The summary table of a fixed set of configurations, against a golden file
/// (`JITTERLAB_BLESS=1` rewrites it after a deliberate change).
#[test]
fn report_summary_table_matches_golden() {
    let dir = tempfile::tempdir().unwrap();
    report(
        &demo(),
        dir.path(),
        &[
            "--policy",
            "fixed:delay=100ms,max_gap=120ms",
            "--policy",
            "jitter:k=3",
            "--policy",
            "mirror:send_rate=20",
        ],
    );
    let got = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    let golden = fixtures().join("golden/report-summary.csv");
    if std::env::var_os("JITTERLAB_BLESS").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, &got).unwrap();
    }
    assert_eq!(got, std::fs::read_to_string(&golden).unwrap());
}

/// An empty trace, a one-packet trace and a one-row sweep render with "no data" notes.
#[test]
fn report_no_data_inputs_render() {
    let dir = tempfile::tempdir().unwrap();
    let empty_csv = dir.path().join("empty.csv");
    std::fs::write(&empty_csv, "seq,send_ms,arrival_ms,x\n").unwrap();
    let one_csv = dir.path().join("one.csv");
    std::fs::write(&one_csv, "seq,send_ms,arrival_ms,x\n1,0,5,1.5\n").unwrap();
    for (csv, name) in [(&empty_csv, "empty"), (&one_csv, "one")] {
        let trace = dir.path().join(format!("{name}.jtr"));
        let res = jitterlab()
            .arg("import")
            .arg(csv)
            .arg("-o")
            .arg(&trace)
            .output()
            .unwrap();
        assert!(
            res.status.success(),
            "{}",
            String::from_utf8_lossy(&res.stderr)
        );
        let out = dir.path().join(format!("r-{name}"));
        let res = jitterlab()
            .arg("report")
            .arg(&trace)
            .arg("-o")
            .arg(&out)
            .arg("-q")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(
            res.status.success() && !err.contains("panicked"),
            "{name}: {err}"
        );
        for fig in ["network.png", "jitter.png", "timeline.png", "playout.png"] {
            let img = decode_png(&out.join(fig));
            assert_eq!((img.0, img.1), (1600, 900), "{name} {fig}");
        }
        if name == "empty" {
            // The check that finds content in panels finds none here: it can fail.
            let img = decode_png(&out.join("network.png"));
            assert!(colour(&img, 95, 855) < 0.0005);
        }
    }
    // A sweep of a single row.
    let rows = dir.path().join("one-row.json");
    jitterlab()
        .arg("sweep")
        .arg(demo())
        .args(["--sweep", "fixed:delay=100ms", "-q", "-o"])
        .arg(&rows)
        .assert()
        .success();
    let out = dir.path().join("r-sweep");
    report(&demo(), &out, &["--sweep", rows.to_str().unwrap()]);
    assert!(out.join("pareto.png").exists() && out.join("heatmap.png").exists());
}

/// One tune rule: a sweep written to Parquet and read back by `report --sweep` with the limit
/// and objective flags names the same recommendation and runners-up as `tune` over the same
/// grid with the same flags, and the flags change the answer (so they are not ignored).
#[test]
fn report_on_a_sweep_file_recommends_what_tune_recommends() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fixtures().join("traces/demo-wifi-20hz.jtr");
    let grid = [
        "--sweep",
        "fixed:delay=0..300ms/20ms,max_gap=250ms",
        "--sweep",
        "jitter:k=1|2|4,max_gap=250ms",
        "--sweep",
        "quantile:q=0.9|0.99,max_gap=250ms",
    ];
    let rows = dir.path().join("rows.parquet");
    jitterlab()
        .arg("sweep")
        .arg(&trace)
        .args(grid)
        .arg("-o")
        .arg(&rows)
        .arg("-q")
        .assert()
        .success();
    let tune = |flags: &[&str]| -> (String, Vec<String>) {
        use std::ffi::OsStr;
        let mut args: Vec<&OsStr> = vec![OsStr::new("tune"), trace.as_os_str()];
        args.extend(grid.iter().map(OsStr::new));
        args.extend(flags.iter().map(OsStr::new));
        args.extend([OsStr::new("--json"), OsStr::new("-q")]);
        let doc = crate::util::json(&args);
        let policy = |v: &serde_json::Value| v["policy"].as_str().unwrap().to_owned();
        (
            policy(&doc["recommendation"]),
            doc["runners_up"]
                .as_array()
                .unwrap()
                .iter()
                .map(policy)
                .collect(),
        )
    };
    let report_on = |flags: &[&str], out: &str| -> (String, Vec<String>) {
        let stdout = report(
            &trace,
            &dir.path().join(out),
            &[&["--sweep", rows.to_str().unwrap()], flags].concat(),
        );
        let after = |prefix: &str| -> Vec<String> {
            stdout
                .lines()
                .filter_map(|l| l.strip_prefix(prefix))
                .map(str::to_owned)
                .collect()
        };
        let rec = after("Recommended: --policy ");
        assert_eq!(rec.len(), 1, "{stdout}");
        (rec[0].clone(), after("Runner-up: --policy "))
    };
    let strict = [
        "--max-hold-ratio",
        "5%",
        "--max-p99-error",
        "0.3",
        "--objective",
        "error",
    ];
    let by_tune = tune(&strict);
    assert!(!by_tune.1.is_empty(), "a runner-up to compare: {by_tune:?}");
    assert_eq!(report_on(&strict, "strict"), by_tune);
    let loose = ["--max-hold-ratio", "5%"];
    let by_tune_loose = tune(&loose);
    assert_eq!(report_on(&loose, "loose"), by_tune_loose);
    assert_ne!(
        by_tune.0, by_tune_loose.0,
        "the objective and error limit matter"
    );
}
