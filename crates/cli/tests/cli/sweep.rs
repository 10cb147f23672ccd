//! `jitterlab sweep` and `jitterlab tune` on real traces: rows equal single replays, shards
//! concatenate to the whole, bad grids are refused before any work, and a recommendation meets
//! its own constraints when replayed alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jitterlab_capture::testdata::shared_data;
use serde_json::Value;

use crate::util::{fixtures, import, jitterlab, json};

fn demo() -> PathBuf {
    fixtures().join("traces/demo-wifi-20hz.jtr")
}

fn sweep_json(dir: &Path, name: &str, args: &[&str]) -> Vec<Value> {
    let out = dir.join(name);
    let res = jitterlab()
        .arg("sweep")
        .args(args)
        .arg("-o")
        .arg(&out)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    serde_json::from_slice::<Vec<Value>>(&std::fs::read(&out).unwrap()).unwrap()
}

/// Every row's metrics are exactly what `jitterlab replay --policy <row's policy> --json` gives.
fn assert_rows_match_replay(rows: &[Value], extra: &[&str]) {
    for row in rows {
        let trace = row["trace"].as_str().unwrap();
        let policy = row["policy"].as_str().unwrap();
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "replay".as_ref(),
            trace.as_ref(),
            "--policy".as_ref(),
            policy.as_ref(),
            "--json".as_ref(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        let single = json(&args);
        for (k, v) in single["metrics"].as_object().unwrap() {
            match v {
                // A group (`recovery`) is one column per figure, `GROUP.FIGURE`.
                Value::Object(group) => {
                    for (f, v) in group {
                        let col = format!("{k}.{f}");
                        assert_eq!(&row[&col], v, "{trace} {policy}: {col}");
                    }
                }
                v => assert_eq!(&row[k], v, "{trace} {policy}: {k}"),
            }
        }
    }
}

#[test]
fn sweep_rows_equal_single_replays() {
    let dir = tempfile::tempdir().unwrap();
    let synth = dir.path().join("lte.jtr");
    jitterlab()
        .args([
            "synth",
            "--profile",
            "lte",
            "--duration",
            "20s",
            "--rate",
            "30",
            "--seed",
            "4",
            "-o",
        ])
        .arg(&synth)
        .assert()
        .success();
    let grid = dir.path().join("grid.toml");
    std::fs::write(
        &grid,
        "[fixed]\ndelay = \"40ms..160ms step 60ms\"\nmax_gap = [\"100ms\", \"250ms\"]\n\n[jitter]\nk = [2, 4]\n\n[mirror]\nbuffer_multiplier = [2]\n",
    )
    .unwrap();
    let rows = sweep_json(
        dir.path(),
        "rows.json",
        &[
            demo().to_str().unwrap(),
            synth.to_str().unwrap(),
            "--grid",
            grid.to_str().unwrap(),
        ],
    );
    assert_eq!(rows.len(), 2 * (3 * 2 + 2 + 1));
    // One column per parameter (durations in ms), trace and policy columns, every metric.
    assert_eq!(rows[0]["delay"], 40.0);
    assert_eq!(rows[1]["max_gap"], 250.0);
    assert!(rows[6]["k"].is_number() && rows[0]["k"].is_null());
    assert_eq!(rows[0]["policy_name"], "fixed");
    assert_rows_match_replay(&rows, &[]);

    // The Parquet file of the same sweep holds the same rows, metric for metric.
    let parquet = dir.path().join("rows.parquet");
    jitterlab()
        .args([
            "sweep",
            demo().to_str().unwrap(),
            synth.to_str().unwrap(),
            "--grid",
            grid.to_str().unwrap(),
            "-q",
            "-o",
        ])
        .arg(&parquet)
        .assert()
        .success();
    assert_parquet_equals_json(&parquet, &rows);
}

#[test]
fn sweep_rows_equal_single_replays_on_a_real_capture() {
    let Some(data) = shared_data() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = data.join("pcap/wiresharkwiki_nb6-telephone.pcap");
    let rows = sweep_json(
        dir.path(),
        "rows.json",
        &[
            cap.to_str().unwrap(),
            // Snapshot replays of a voice call (playout mode is the default there: media.rs).
            "--snapshot",
            "--sweep",
            "fixed:delay=20..80ms/30ms",
            "--sweep",
            "neteq:quantile=0.9|0.99",
        ],
    );
    assert_eq!(rows.len(), 5);
    assert_rows_match_replay(&rows, &[]);
    // And as Parquet: the same rows.
    let parquet = dir.path().join("rows.parquet");
    jitterlab()
        .args([
            "sweep",
            cap.to_str().unwrap(),
            "--snapshot",
            "--sweep",
            "fixed:delay=20..80ms/30ms",
            "--sweep",
            "neteq:quantile=0.9|0.99",
            "-q",
            "-o",
        ])
        .arg(&parquet)
        .assert()
        .success();
    assert_parquet_equals_json(&parquet, &rows);
}

/// The Parquet file holds the same rows as the JSON, metric for metric.
fn assert_parquet_equals_json(parquet: &Path, rows: &[Value]) {
    use polars::prelude::*;
    let df = ParquetReader::new(std::fs::File::open(parquet).unwrap())
        .finish()
        .unwrap();
    assert_eq!(df.height(), rows.len());
    for (i, row) in rows.iter().enumerate() {
        for (k, v) in row.as_object().unwrap() {
            let cell = df.column(k).unwrap().get(i).unwrap();
            let same = match (v, &cell) {
                (Value::Null, AnyValue::Null) => true,
                (Value::String(s), AnyValue::String(c)) => s == c,
                (Value::Bool(b), AnyValue::Boolean(c)) => b == c,
                // serde_json parses floats to within an ulp (no `float_roundtrip`).
                (Value::Number(n), c) => match (c.extract::<f64>(), n.as_f64()) {
                    (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                    _ => false,
                },
                _ => false,
            };
            assert!(same, "row {i} {k}: json {v} vs parquet {cell}");
        }
    }
}

#[test]
fn sweep_shards_concatenate_to_exactly_the_unsharded_rows() {
    let dir = tempfile::tempdir().unwrap();
    let t = demo();
    let args = [
        t.to_str().unwrap(),
        "--sweep",
        "fixed:delay=0..200ms/20ms",
        "--sweep",
        "ngo:ticks_ago=1|2|3",
    ];
    // Every row but its `shard` column (the shard that made it).
    let key = |rows: Vec<Value>, shard: &str| -> BTreeMap<(String, u64), Value> {
        rows.into_iter()
            .map(|mut r| {
                assert_eq!(r["shard"], shard);
                r.as_object_mut().unwrap().remove("shard");
                (
                    (
                        r["trace"].as_str().unwrap().to_owned(),
                        r["config"].as_u64().unwrap(),
                    ),
                    r,
                )
            })
            .collect()
    };
    let whole = key(sweep_json(dir.path(), "all.json", &args), "1/1");
    assert_eq!(whole.len(), 14);
    let mut parts = BTreeMap::new();
    for (i, shard) in ["1/3", "2/3", "3/3"].iter().enumerate() {
        let mut a = args.to_vec();
        a.extend(["--shard", shard]);
        let rows = key(sweep_json(dir.path(), &format!("part{i}.json"), &a), shard);
        assert!(!rows.is_empty());
        for (k, v) in rows {
            assert!(parts.insert(k, v).is_none(), "shards overlap");
        }
    }
    assert_eq!(parts, whole);
}

#[test]
fn sweep_writes_parquet_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let t = demo();
    for ext in ["parquet", "csv", "json"] {
        let out = dir.path().join(format!("rows.{ext}"));
        let res = jitterlab()
            .args([
                "sweep",
                t.to_str().unwrap(),
                "--sweep",
                "fixed:delay=50ms|100ms",
                "-q",
                "-o",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            res.status.success(),
            "{}",
            String::from_utf8_lossy(&res.stderr)
        );
        let bytes = std::fs::read(&out).unwrap();
        match ext {
            "parquet" => assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1")),
            "csv" => {
                let text = String::from_utf8(bytes).unwrap();
                assert_eq!(text.lines().count(), 3);
                let header = text.lines().next().unwrap();
                for col in [
                    "trace",
                    "config",
                    "policy",
                    "delay",
                    "hold_ratio",
                    "starved_ratio",
                    "extrapolated_ratio",
                    "recovery.spikes",
                    "recovery.mean_recovery_ms",
                    "recovery.max_recovery_ms",
                    "recovery.unrecovered",
                    "recovery.inflation_ms",
                    "recovery.worst_hold_run_after_spike",
                    "mean_delay_ms",
                    "p99_error",
                ] {
                    assert!(header.split(',').any(|c| c == col), "{col} in {header}");
                }
            }
            _ => assert_eq!(
                serde_json::from_slice::<Vec<Value>>(&bytes).unwrap().len(),
                2
            ),
        }
        // The summary on stdout names the best rows.
        assert!(String::from_utf8_lossy(&res.stdout).contains("Pareto frontier"));
    }
}

#[test]
fn sweep_bad_grids_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let t = demo();
    let out = dir.path().join("rows.json");
    let cases: &[(&[&str], &str)] = &[
        (&["--sweep", "fixed:delay=300..0ms/5ms"], "empty"),
        (&["--sweep", "fixed:delay=0..300ms/0ms"], "above zero"),
        (&["--sweep", "warp:delay=1ms"], "unknown policy"),
        (&["--sweep", "fixed:delya=1ms"], "delya"),
        (&["--sweep", "fixed:delay=-5ms"], "delay"),
        (
            &[
                "--sweep",
                "fixed:delay=0..1000ms/1ms",
                "--max-configs",
                "100",
            ],
            "more than the limit of 100",
        ),
        (&[], "give a grid"),
    ];
    for (extra, needle) in cases {
        let res = jitterlab()
            .arg("sweep")
            .arg(&t)
            .args(*extra)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(2), "{extra:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{extra:?}: {err}");
        assert!(!out.exists(), "{extra:?} wrote output");
    }
    let grid = dir.path().join("g.toml");
    std::fs::write(&grid, "[fixed]\ndelay = []\n").unwrap();
    let res = jitterlab()
        .arg("sweep")
        .arg(&t)
        .arg("--grid")
        .arg(&grid)
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("g.toml"));
}

#[test]
fn sweep_unreadable_traces_are_named_and_keep_going_skips_them() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken.jtr");
    std::fs::write(&bad, b"not a trace").unwrap();
    let t = demo();
    let res = jitterlab()
        .arg("sweep")
        .arg(&t)
        .arg(&bad)
        .args(["--sweep", "fixed:delay=50ms"])
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("broken.jtr"));
    let rows = sweep_json(
        dir.path(),
        "rows.json",
        &[
            t.to_str().unwrap(),
            bad.to_str().unwrap(),
            "--sweep",
            "fixed:delay=50ms",
            "--keep-going",
        ],
    );
    assert_eq!(rows.len(), 1);
}

/// The recommendation meets its constraints when replayed on its own.
fn assert_recommendation_holds(doc: &Value, trace: &Path, max_hold: f64) {
    let policy = doc["recommendation"]["policy"]
        .as_str()
        .expect("a recommendation");
    let single = json(&[
        "replay".as_ref(),
        trace.as_os_str(),
        "--policy".as_ref(),
        policy.as_ref(),
        "--json".as_ref(),
    ]);
    let hold = single["metrics"]["hold_ratio"].as_f64().unwrap();
    assert!(hold <= max_hold, "{policy}: hold ratio {hold}");
    assert_eq!(
        doc["recommendation"]["metrics"]["worst_hold_ratio"]
            .as_f64()
            .unwrap(),
        hold
    );
    assert!(doc["runners_up"].is_array() && doc["rejected"].is_array());
}

#[test]
fn tune_recommends_on_the_embedded_default() {
    let doc = json(&["tune".as_ref(), "--json".as_ref(), "-q".as_ref()]);
    assert_recommendation_holds(&doc, &demo(), 0.01);
    assert_eq!(doc["configurations"], 135);
    // A stricter error limit changes the answer, and the answer still meets it.
    let strict = json(&[
        "tune".as_ref(),
        "--json".as_ref(),
        "-q".as_ref(),
        "--max-p99-error".as_ref(),
        "0.05".as_ref(),
    ]);
    let e = strict["recommendation"]["metrics"]["worst_p99_error"]
        .as_f64()
        .unwrap();
    assert!(e <= 0.05, "{e}");
    assert_ne!(
        strict["recommendation"]["policy"],
        doc["recommendation"]["policy"]
    );
}

/// Extrapolated frames are starved frames: on the demo, the `source` preset extrapolating a
/// third of its frames (0 holds) no longer wins; judged by holds alone (`--max-hold-ratio`,
/// limits apart) it still does, and `--max-extrapolated-ratio` caps it.
#[test]
fn tune_counts_every_starved_frame_on_the_demo() {
    let tune = |extra: &[&str]| {
        let mut args = vec!["tune", "--json", "-q"];
        args.extend_from_slice(extra);
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        json(&args)
    };
    let worst = |doc: &Value, key: &str| doc["recommendation"]["metrics"][key].as_f64().unwrap();
    let doc = tune(&[]);
    assert!(worst(&doc, "worst_starved_ratio") <= 0.01, "{doc}");
    assert!(worst(&doc, "worst_extrapolated_ratio") <= 0.01, "{doc}");
    assert_eq!(doc["constraints"]["max_starved_ratio"], 0.01);
    let policy = doc["recommendation"]["policy"].as_str().unwrap();
    let single = json(&[
        "replay".as_ref(),
        demo().as_os_str(),
        "--policy".as_ref(),
        policy.as_ref(),
        "--json".as_ref(),
    ]);
    let m = &single["metrics"];
    let frames = m["frames"].as_f64().unwrap();
    let starved = (m["holds"].as_f64().unwrap()
        + m["extrapolated"].as_f64().unwrap()
        + m["empty"].as_f64().unwrap())
        / frames;
    assert_eq!(m["starved_ratio"].as_f64().unwrap(), starved);
    assert_eq!(worst(&doc, "worst_starved_ratio"), starved);
    // Holds alone: the old rule, and the configuration it picked.
    let holds_only = tune(&["--max-hold-ratio", "1%"]);
    assert!(
        worst(&holds_only, "worst_extrapolated_ratio") > 0.3,
        "{holds_only}"
    );
    assert_eq!(holds_only["constraints"]["max_starved_ratio"], Value::Null);
    let capped = tune(&["--max-hold-ratio", "1%", "--max-extrapolated-ratio", "5%"]);
    assert!(
        worst(&capped, "worst_extrapolated_ratio") <= 0.05,
        "{capped}"
    );
    assert!(worst(&capped, "worst_hold_ratio") <= 0.01, "{capped}");
}

#[test]
fn tune_recommends_on_a_real_capture() {
    let Some(data) = shared_data() else { return };
    let cap = data.join("pcap/saghul-sipp-scenarios_g711a.pcap");
    let doc = json(&[
        "tune".as_ref(),
        cap.as_os_str(),
        "--snapshot".as_ref(),
        "--json".as_ref(),
        "-q".as_ref(),
        "--max-hold-ratio".as_ref(),
        "2%".as_ref(),
    ]);
    assert_recommendation_holds(&doc, &cap, 0.02);
}

/// A grid file's tables and keys run in file order, not alphabetically: `[quantile]` before
/// `[fixed]`, and within a table the last key written varies fastest.
#[test]
fn sweep_runs_a_grid_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("order.toml");
    std::fs::write(
        &grid,
        "[quantile]\nwindow = [\"2s\", \"1s\"]\nq = [0.9, 0.5]\n\n\
         [fixed]\nmax_gap = [\"200ms\", \"100ms\"]\ndelay = [\"80ms\", \"40ms\"]\n",
    )
    .unwrap();
    let rows = sweep_json(
        dir.path(),
        "rows.json",
        &[demo().to_str().unwrap(), "--grid", grid.to_str().unwrap()],
    );
    let heads: Vec<String> = rows
        .iter()
        .map(|r| {
            let p = r["policy"].as_str().unwrap();
            let (name, rest) = p.split_once(':').unwrap();
            let keys: BTreeMap<&str, &str> = rest
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .collect();
            match name {
                "quantile" => format!("quantile window={} q={}", keys["window"], keys["q"]),
                _ => format!("fixed max_gap={} delay={}", keys["max_gap"], keys["delay"]),
            }
        })
        .collect();
    assert_eq!(
        heads,
        [
            "quantile window=2000ms q=0.9",
            "quantile window=2000ms q=0.5",
            "quantile window=1000ms q=0.9",
            "quantile window=1000ms q=0.5",
            "fixed max_gap=200ms delay=80ms",
            "fixed max_gap=200ms delay=40ms",
            "fixed max_gap=100ms delay=80ms",
            "fixed max_gap=100ms delay=40ms",
        ]
    );
}

/// A grid file with a TOML syntax error: the file, line and column, and the line with a caret
/// under the column; nothing is swept.
#[test]
fn sweep_grid_syntax_errors_point_at_the_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("bad.toml");
    std::fs::write(&grid, "[fixed]\ndelay = [\"50ms\" \"80ms\"]\n").unwrap();
    let out = dir.path().join("rows.json");
    let res = jitterlab()
        .arg("sweep")
        .arg(demo())
        .arg("--grid")
        .arg(&grid)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    let err = String::from_utf8_lossy(&res.stderr);
    let head = format!("{}: line 2, column 17: ", grid.display());
    assert!(err.lines().next().unwrap().contains(&head), "{err}");
    let caret = format!("  |{}^\n", " ".repeat(17));
    assert!(
        err.contains(&format!("2 | delay = [\"50ms\" \"80ms\"]\n{caret}")),
        "{err}"
    );
    assert!(!out.exists());
}

/// The offline-optimal bound by hand (docs/bound.md): C21's five slots have network delays
/// 0, 15, −10, 10 and −5 ms (needs 0, 15, 0, 10, 0). Any policy with nothing late needs a
/// mean of 25 / 5 = 5 ms; with one late slot (20 %) the 15 goes: 2 ms. Constant over the
/// one-second window: 15 ms, and 10 ms with one late. A fixed 10 ms buffer (one late) and a
/// fixed 15 ms one (none late) sit on the window bound.
#[test]
fn playout_rows_carry_the_bound_and_the_regret_computed_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let trace = import(dir.path(), &fixtures().join("contracts/c21_playout.csv"));
    let trace = trace.to_str().unwrap();
    let rows = sweep_json(
        dir.path(),
        "rows.json",
        &[
            trace,
            "--playout",
            "--clock",
            "offset=0",
            "--sweep",
            "fixed:delay=10ms|15ms|60ms",
        ],
    );
    let got: Vec<(f64, f64, f64, f64, f64)> = rows
        .iter()
        .map(|r| {
            let f = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k}: {r}"));
            (
                f("mean_delay_ms"),
                f("bound_ms"),
                f("window_bound_ms"),
                f("talkspurt_bound_ms"),
                f("regret_ms"),
            )
        })
        .collect();
    // No marker bit: one talkspurt, the same as the one window.
    assert_eq!(
        got,
        [
            (10.0, 2.0, 10.0, 10.0, 8.0),
            (15.0, 5.0, 15.0, 15.0, 10.0),
            (60.0, 5.0, 15.0, 15.0, 55.0)
        ]
    );
}

/// Snapshot rows and `tune` carry the regret: the row's mean delay less the bound, never
/// negative; tune prints the recommendation's and gives it in JSON.
#[test]
fn snapshot_rows_and_tune_carry_the_regret() {
    let dir = tempfile::tempdir().unwrap();
    let demo = demo();
    let rows = sweep_json(
        dir.path(),
        "rows.json",
        &[
            demo.to_str().unwrap(),
            "--sweep",
            "fixed:delay=0ms..200ms/20ms",
            "--sweep",
            "jitter:k=1|3",
        ],
    );
    assert_eq!(rows.len(), 13);
    for r in &rows {
        let f = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k}: {r}"));
        let (delay, bound, window, regret) = (
            f("mean_delay_ms"),
            f("bound_ms"),
            f("window_bound_ms"),
            f("regret_ms"),
        );
        assert!((regret - (delay - bound)).abs() < 1e-9, "{r}");
        assert!(regret >= 0.0 && window >= bound - 1e-9, "{r}");
    }
    let doc = json(&["tune".as_ref(), "--json".as_ref(), "-q".as_ref()]);
    let metrics = &doc["recommendation"]["metrics"];
    let worst = metrics["worst_regret_ms"].as_f64().unwrap();
    let per_trace: Vec<f64> = metrics["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["regret_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(per_trace.iter().copied().reduce(f64::max), Some(worst));
    assert!(worst >= 0.0);
    let out = jitterlab().arg("tune").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "regret: {worst:.1} ms above the offline-optimal bound"
        )),
        "{text}"
    );
}

/// `replay --json` carries the recovery figures: the demo's two network events (a 249 ms
/// outage at 4.2 s, a queue draining at 22.7 s); a fixed 100 ms buffer is back within one
/// delay and a frame of each, and the text output has the same line.
#[test]
fn replay_reports_recovery_after_the_demos_spikes() {
    let doc = json(&[
        "replay".as_ref(),
        demo().as_os_str(),
        "--policy".as_ref(),
        "fixed:delay=100ms".as_ref(),
        "--json".as_ref(),
    ]);
    let r = &doc["metrics"]["recovery"];
    assert_eq!(r["spikes"], 2, "{r}");
    assert_eq!(r["unrecovered"], 0, "{r}");
    let max = r["max_recovery_ms"].as_f64().unwrap();
    assert!(max > 0.0 && max <= 100.0 + 1000.0 / 60.0, "{r}");
    assert!(r["worst_hold_run_after_spike"].as_u64().unwrap() > 0, "{r}");
    let out = jitterlab()
        .args([
            "replay",
            demo().to_str().unwrap(),
            "--policy",
            "fixed:delay=100ms",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("recovery              spikes 2"), "{text}");
}
