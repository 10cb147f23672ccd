//! `replay --timeline`: the frame and playout timelines as CSV and Parquet, with the columns
//! the README documents.

use std::ffi::OsStr;
use std::path::Path;

use polars::prelude::*;

use crate::util::{fixtures, import, json, write};

/// The columns README.md documents for `--timeline OUT.csv`, up to `<channels>`.
fn readme_columns() -> Vec<String> {
    let readme = std::fs::read_to_string(fixtures().join("../README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("`--timeline OUT.csv` writes one row per frame"))
        .expect("README documents the timeline columns");
    let list = line.split('`').nth(3).expect("a backticked column list");
    let cols: Vec<String> = list.split(',').map(str::to_owned).collect();
    assert_eq!(cols.last().map(String::as_str), Some("<channels>"));
    cols[..cols.len() - 1].to_vec()
}

/// A trace whose channels are named `x` and `"hi" said` (a field a CSV writer must quote; the
/// importer refuses commas in names: the trace keeps them comma-separated).
fn quoted_trace(dir: &Path) -> std::path::PathBuf {
    let mut csv = String::from("seq,send_ms,arrival_ms,x,\"\"\"hi\"\" said\"\n");
    for i in 0..200 {
        let jitter = (i * 37) % 23;
        csv.push_str(&format!(
            "{i},{},{},{i},{}\n",
            i * 50,
            i * 50 + 30 + jitter,
            -i
        ));
    }
    import(dir, &write(dir, "quoted.csv", csv.as_bytes()))
}

/// `replay TRACE --json --timeline TIMELINE EXTRA...`, with `--policy jitter:apply=jump`
/// unless `extra` names one.
fn replay(trace: &Path, timeline: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args: Vec<&OsStr> = vec![OsStr::new("replay"), trace.as_os_str()];
    if !extra.contains(&"--policy") {
        args.extend([OsStr::new("--policy"), OsStr::new("jitter:apply=jump")]);
    }
    args.extend([
        OsStr::new("--json"),
        OsStr::new("--timeline"),
        timeline.as_os_str(),
    ]);
    args.extend(extra.iter().map(OsStr::new));
    json(&args)
}

fn read_parquet(path: &Path) -> DataFrame {
    ParquetReader::new(std::fs::File::open(path).unwrap())
        .finish()
        .unwrap()
}

/// Every README column is in the CSV, in order, then the channels under their own names (the
/// quote round-trips through a real CSV reader); one row per frame; `buffer_delay_ms` carries
/// the policy's delay and `frozen` marks at least one frame of an adaptive `apply=jump` run.
#[test]
fn csv_has_the_documented_columns_and_quoted_channel_names() {
    let dir = tempfile::tempdir().unwrap();
    let trace = quoted_trace(dir.path());
    let out = dir.path().join("t.csv");
    let v = replay(&trace, &out, &[]);
    let mut reader = csv::Reader::from_path(&out).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    let mut expected = readme_columns();
    expected.extend(["x".to_owned(), "\"hi\" said".to_owned()]);
    assert_eq!(header, expected);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let m = &v["metrics"];
    assert_eq!(
        rows.len() as u64,
        m["frames"].as_u64().unwrap() + m["startup_frames"].as_u64().unwrap()
    );
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (delay, frozen) = (col("buffer_delay_ms"), col("frozen"));
    let delays: Vec<f64> = rows.iter().map(|r| r[delay].parse().unwrap()).collect();
    assert!(delays.iter().all(|d| *d > 0.0), "buffer delays {delays:?}");
    let mean = delays.iter().sum::<f64>() / delays.len() as f64;
    let reported = m["mean_buffer_delay_ms"].as_f64().unwrap();
    assert!(
        (mean - reported).abs() < 0.05 * reported,
        "{mean} vs {reported}"
    );
    assert!(rows.iter().all(|r| ["true", "false"].contains(&&r[frozen])));
    let quoted = col("\"hi\" said");
    assert!(rows.iter().any(|r| r[quoted].starts_with('-')));
}

/// The Parquet timeline (by extension, or by --timeline-format whatever the name) holds the
/// same rows as the CSV one, column for column.
#[test]
fn parquet_holds_the_same_rows_as_the_csv() {
    let dir = tempfile::tempdir().unwrap();
    let trace = quoted_trace(dir.path());
    let (csv_path, pq, forced) = (
        dir.path().join("t.csv"),
        dir.path().join("t.parquet"),
        dir.path().join("t.table"),
    );
    replay(&trace, &csv_path, &[]);
    replay(&trace, &pq, &[]);
    replay(&trace, &forced, &["--timeline-format", "parquet"]);
    let parquet = read_parquet(&pq);
    assert_eq!(parquet, read_parquet(&forced));
    let mut reader = csv::Reader::from_path(&csv_path).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    let names: Vec<&str> = parquet
        .get_column_names()
        .iter()
        .map(|n| n.as_str())
        .collect();
    assert_eq!(names, header);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), parquet.height());
    for (c, column) in parquet.columns().iter().enumerate() {
        for (i, row) in rows.iter().enumerate() {
            let cell = column.get(i).unwrap();
            let text = &row[c];
            let same = match &cell {
                AnyValue::Null => text.is_empty(),
                AnyValue::String(s) => *s == text,
                AnyValue::Boolean(b) => b.to_string() == text,
                other => other.extract::<f64>() == text.parse::<f64>().ok(),
            };
            assert!(
                same,
                "{} row {i}: parquet {cell}, csv '{text}'",
                column.name()
            );
        }
    }
}

/// `--playout` timelines: one row per slot in either format, the same rows.
#[test]
fn playout_timeline_in_parquet_matches_the_csv() {
    let dir = tempfile::tempdir().unwrap();
    let trace = import(dir.path(), &fixtures().join("contracts/c21_playout.csv"));
    let (csv_path, pq) = (dir.path().join("p.csv"), dir.path().join("p.parquet"));
    for out in [&csv_path, &pq] {
        replay(
            &trace,
            out,
            &[
                "--playout",
                "--clock",
                "offset=0",
                "--policy",
                "fixed:delay=60ms",
            ],
        );
    }
    let df = read_parquet(&pq);
    let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
    assert_eq!(names, ["stream", "seq", "play_ms", "event"]);
    let play: Vec<f64> = df
        .column("play_ms")
        .unwrap()
        .f64()
        .unwrap()
        .into_no_null_iter()
        .collect();
    assert_eq!(play, [60.0, 80.0, 100.0, 120.0, 140.0]);
    let text = std::fs::read_to_string(&csv_path).unwrap();
    let csv_play: Vec<f64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
        .collect();
    assert_eq!(csv_play, play);
}

/// A name with another extension is a CSV timeline, as every timeline was before Parquet.
#[test]
fn another_extension_is_a_csv_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let trace = quoted_trace(dir.path());
    let out = dir.path().join("t.txt");
    replay(&trace, &out, &[]);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("stream,at_ms,"), "{}", &text[..40]);
}
