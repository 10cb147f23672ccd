//! Sweep results as a table: one row per (trace, configuration).
//!
//! Columns, in order: `trace`, `config` (the configuration's index in the grid), `policy` (the
//! exact string `jitterlab replay --policy` accepts), `policy_name`, one column per parameter
//! that any configuration has (numbers, or durations in milliseconds, when every value of the
//! column is one; the canonical text otherwise; empty for configurations without that key),
//! then every metric of `jitterlab replay --json` under the same name. Written as Parquet, CSV
//! or JSON by the output's extension.
//!
//! A snapshot row's `recovery` figures are one column each, `recovery.spikes`,
//! `recovery.mean_recovery_ms`, … (see `jitterlab_replay::recovery`).
//!
//! Playout sweeps (`--playout`) carry `mode` = `playout` and the metrics of `jitterlab replay
//! --playout --json` instead; a group of figures nested there (`mos`, `webrtc`, `video`, …) is
//! one column per figure named `GROUP.FIGURE`.
//!
//! Rows written with a [`Provenance`] ([`write_results_with`], as `jitterlab sweep` does) end
//! with what made them: `shard` (`I/N`, 1-based as `--shard` takes it; `1/1` for a whole
//! sweep), `jitterlab_version` (what `jitterlab --version` prints, with the commit), `fps`
//! (the frame rate; empty in playout mode, which plays frames at send time) and `clock` (the
//! clock mapping, as `--clock` takes it). The parameter columns and their types follow the
//! whole grid, not the rows a shard happens to hold, so every shard of a sweep has the same
//! columns and merging them is a plain concatenation.

use std::path::Path;

use jitterlab_capture::output::AtomicFile;
use jitterlab_capture::source::is_stdio;
use jitterlab_replay::sweep::{Row, Shard};
use jitterlab_replay::tune::Tuning;
use jitterlab_replay::{ClockMapping, Policy, Summary};
use polars::prelude::*;
use serde_json::{Map, Value};

use crate::Error;
use crate::frame_io::json_value;

/// A column of JSON values before it gets a polars type.
type RawColumn = (String, Vec<Value>);

/// Parses a canonical duration or number into a float: `12.5ms` → 12.5 (durations in ms).
fn numeric(text: &str) -> Option<f64> {
    match text.parse::<f64>() {
        Ok(v) => v.is_finite().then_some(v),
        Err(_) => jitterlab_capture::time::parse_duration(text)
            .ok()
            .map(|d| d.as_millis_f64()),
    }
}

/// What made a sweep's rows, written on every row (the columns [`PROVENANCE_COLUMNS`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Provenance {
    /// The part of the sweep that made the rows ([`Shard::ALL`] for a whole sweep).
    pub shard: Shard,
    /// The tool's version, as `jitterlab --version` prints it (with the commit).
    pub version: String,
    /// The frame rate, frames per second; `None` in playout mode.
    pub fps: Option<f64>,
    /// The clock mapping.
    pub clock: ClockMapping,
}

/// The columns a [`Provenance`] adds, last, in this order.
pub const PROVENANCE_COLUMNS: [&str; 4] = ["shard", "jitterlab_version", "fps", "clock"];

impl Provenance {
    /// The provenance columns for `n` rows.
    fn columns(&self, n: usize) -> Vec<RawColumn> {
        let [shard, version, fps, clock] = PROVENANCE_COLUMNS;
        vec![
            (shard.into(), vec![Value::from(self.shard.to_string()); n]),
            (version.into(), vec![Value::from(self.version.clone()); n]),
            (
                fps.into(),
                vec![self.fps.map_or(Value::Null, Value::from); n],
            ),
            (clock.into(), vec![Value::from(self.clock.to_string()); n]),
        ]
    }
}

/// The rows as named columns of JSON values (the single source for every output format).
pub fn columns(trace_names: &[String], policies: &[Policy], rows: &[Row]) -> Vec<RawColumn> {
    columns_with(trace_names, policies, rows, None)
}

/// As [`columns`], ending with the [`Provenance`] columns when one is given.
pub fn columns_with(
    trace_names: &[String],
    policies: &[Policy],
    rows: &[Row],
    provenance: Option<&Provenance>,
) -> Vec<RawColumn> {
    typed_columns(trace_names, policies, rows, provenance).0
}

/// A column's type fixed by the grid rather than by the values a shard's rows hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Numbers (floats), even when every value is empty.
    Float,
    /// Text, even when every value is empty.
    Text,
}

/// The columns, and the type of those whose type the grid fixes (parameters, the frame rate),
/// so that a shard whose rows leave a column empty still writes it with its type.
fn typed_columns(
    trace_names: &[String],
    policies: &[Policy],
    rows: &[Row],
    provenance: Option<&Provenance>,
) -> (Vec<RawColumn>, Vec<(String, Kind)>) {
    // Each configuration's parameters, formatted once (not once per row and key).
    let params: Vec<Vec<(&'static str, String)>> = policies.iter().map(Policy::params).collect();
    // Every key of the grid (not only the rows'), so every shard has the same columns.
    let mut param_keys: Vec<&'static str> = Vec::new();
    for (k, _) in params.iter().flatten() {
        if !param_keys.contains(k) {
            param_keys.push(k);
        }
    }
    let metric_rows: Vec<Map<String, Value>> = rows
        .iter()
        .map(|r| {
            let value = match &r.playout {
                Some(p) => serde_json::to_value(p).map(|v| {
                    let mut m = Map::new();
                    m.insert("mode".into(), Value::from("playout"));
                    flatten_into(&mut m, "", v);
                    Value::Object(m)
                }),
                // `recovery` is a group: `recovery.spikes`, `recovery.mean_recovery_ms`, …
                None => serde_json::to_value(&r.summary).map(|v| {
                    let mut m = Map::new();
                    flatten_into(&mut m, "", v);
                    Value::Object(m)
                }),
            };
            let mut m = match value {
                Ok(Value::Object(m)) => m,
                _ => Map::new(),
            };
            // The offline-optimal bound at the row's share and the distance to it.
            m.insert(
                "bound_ms".into(),
                r.bound_ms.map_or(Value::Null, Value::from),
            );
            m.insert(
                "window_bound_ms".into(),
                r.window_bound_ms.map_or(Value::Null, Value::from),
            );
            m.insert(
                "talkspurt_bound_ms".into(),
                r.talkspurt_bound_ms.map_or(Value::Null, Value::from),
            );
            m.insert(
                "regret_ms".into(),
                r.regret_ms.map_or(Value::Null, Value::from),
            );
            m
        })
        .collect();
    // Every key any row has, in first-seen order (playout rows' groups differ by media).
    let mut metric_keys: Vec<String> = Vec::new();
    for m in &metric_rows {
        for k in m.keys() {
            if !metric_keys.contains(k) {
                metric_keys.push(k.clone());
            }
        }
    }
    let mut cols: Vec<RawColumn> = vec![
        (
            "trace".into(),
            rows.iter()
                .map(|r| Value::from(trace_names[r.trace].clone()))
                .collect(),
        ),
        (
            "config".into(),
            rows.iter().map(|r| Value::from(r.config as u64)).collect(),
        ),
        (
            "policy".into(),
            rows.iter()
                .map(|r| Value::from(policies[r.config].to_string()))
                .collect(),
        ),
        (
            "policy_name".into(),
            rows.iter()
                .map(|r| Value::from(policies[r.config].name()))
                .collect(),
        ),
    ];
    let mut kinds: Vec<(String, Kind)> = Vec::new();
    for key in param_keys {
        let texts: Vec<Option<String>> = rows
            .iter()
            .map(|r| {
                params[r.config]
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| v.clone())
            })
            .collect();
        // Numbers when every configuration of the grid has one there.
        let all_numeric = params
            .iter()
            .flatten()
            .filter(|(k, _)| *k == key)
            .all(|(_, t)| numeric(t).is_some());
        let values = texts
            .into_iter()
            .map(|t| match t {
                None => Value::Null,
                Some(t) if all_numeric => numeric(&t).map_or(Value::Null, Value::from),
                Some(t) => Value::from(t),
            })
            .collect();
        let taken = metric_keys.iter().any(|m| m == key)
            || (provenance.is_some() && PROVENANCE_COLUMNS.contains(&key));
        let name = if taken {
            format!("param_{key}")
        } else {
            key.to_owned()
        };
        let kind = if all_numeric { Kind::Float } else { Kind::Text };
        kinds.push((name.clone(), kind));
        cols.push((name, values));
    }
    for key in metric_keys {
        cols.push((
            key.clone(),
            metric_rows
                .iter()
                .map(|m| m.get(&key).cloned().unwrap_or(Value::Null))
                .collect(),
        ));
    }
    if let Some(p) = provenance {
        cols.extend(p.columns(rows.len()));
        let [shard, version, fps, clock] = PROVENANCE_COLUMNS;
        kinds.extend([
            (shard.to_owned(), Kind::Text),
            (version.to_owned(), Kind::Text),
            (fps.to_owned(), Kind::Float),
            (clock.to_owned(), Kind::Text),
        ]);
    }
    (cols, kinds)
}

/// Puts `value`'s fields into `out`, a nested object's as `GROUP.FIELD`.
fn flatten_into(out: &mut Map<String, Value>, prefix: &str, value: Value) {
    match value {
        Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k
                } else {
                    format!("{prefix}.{k}")
                };
                match v {
                    Value::Object(_) => flatten_into(out, &key, v),
                    v => {
                        out.insert(key, v);
                    }
                }
            }
        }
        v => {
            out.insert(prefix.to_owned(), v);
        }
    }
}

/// The inverse of [`flatten_into`]: `GROUP.FIELD` columns back into nested objects (a group
/// whose every field is empty is absent, as it was written).
fn unflatten(row: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in row {
        let mut parts = k.split('.').peekable();
        let mut at = &mut out;
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                at.insert(part.to_owned(), v.clone());
                break;
            }
            let entry = at
                .entry(part.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(next) = entry else {
                break;
            };
            at = next;
        }
    }
    // Nested groups all of whose values are null were a group that did not apply.
    out.retain(|_, v| match v {
        Value::Object(m) => m.values().any(|x| !x.is_null()),
        _ => true,
    });
    out
}

/// Builds a polars column from JSON values: of the `kind` given, else unsigned integers,
/// floats, booleans or text, whichever every non-null value is. A column with no value at all
/// is of floats, the type of nearly every metric that can be empty (`mean_delay_ms`,
/// `p99_error`, `bound_ms`, …), so a shard whose rows all leave one empty keeps the schema.
fn to_column(name: &str, values: &[Value], kind: Option<Kind>) -> Column {
    let present = || values.iter().filter(|v| !v.is_null());
    let name = PlSmallStr::from(name);
    let empty = present().next().is_none();
    if (empty || kind == Some(Kind::Float))
        && kind != Some(Kind::Text)
        && present().all(Value::is_number)
    {
        let v: Vec<Option<f64>> = values.iter().map(Value::as_f64).collect();
        Column::new(name, v)
    } else if kind == Some(Kind::Text) {
        let v: Vec<Option<String>> = values
            .iter()
            .map(|v| match v {
                Value::Null => None,
                Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            })
            .collect();
        Column::new(name, v)
    } else if present().all(Value::is_u64) {
        let v: Vec<Option<u64>> = values.iter().map(Value::as_u64).collect();
        Column::new(name, v)
    } else if present().all(Value::is_number) {
        let v: Vec<Option<f64>> = values.iter().map(Value::as_f64).collect();
        Column::new(name, v)
    } else if present().all(Value::is_boolean) {
        let v: Vec<Option<bool>> = values.iter().map(Value::as_bool).collect();
        Column::new(name, v)
    } else {
        let v: Vec<Option<String>> = values
            .iter()
            .map(|v| match v {
                Value::Null => None,
                Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            })
            .collect();
        Column::new(name, v)
    }
}

/// The rows as a DataFrame.
///
/// # Errors
/// Polars failures (none expected).
pub fn sweep_frame(
    trace_names: &[String],
    policies: &[Policy],
    rows: &[Row],
) -> Result<DataFrame, Error> {
    sweep_frame_with(trace_names, policies, rows, None)
}

/// As [`sweep_frame`], ending with the [`Provenance`] columns when one is given.
///
/// # Errors
/// Polars failures (none expected).
pub fn sweep_frame_with(
    trace_names: &[String],
    policies: &[Policy],
    rows: &[Row],
    provenance: Option<&Provenance>,
) -> Result<DataFrame, Error> {
    let (cols, kinds) = typed_columns(trace_names, policies, rows, provenance);
    let kind = |name: &str| kinds.iter().find(|(n, _)| n == name).map(|(_, k)| *k);
    let cols: Vec<Column> = cols.iter().map(|(n, v)| to_column(n, v, kind(n))).collect();
    Ok(DataFrame::new_infer_height(cols)?)
}

/// The format of a results file by its extension: `parquet`, `csv` or `json`.
///
/// # Errors
/// Any other extension.
pub fn results_format(path: &Path) -> Result<&'static str, Error> {
    results_format_as(path, None)
}

/// The format `format` names (`parquet`, `csv` or `json`), or else the one of `path`'s
/// extension; standard output (`-`) has no extension, so its format must be named.
///
/// # Errors
/// An unknown format name, or no format named and an unknown extension.
pub fn results_format_as(path: &Path, format: Option<&str>) -> Result<&'static str, Error> {
    const KNOWN: [&str; 3] = ["parquet", "csv", "json"];
    if let Some(name) = format {
        let name = name.to_ascii_lowercase();
        return KNOWN.into_iter().find(|k| *k == name).ok_or_else(|| {
            Error::Table(format!(
                "unknown results format '{name}' (known: parquet, csv, json)"
            ))
        });
    }
    if is_stdio(path) {
        return Err(Error::Table(
            "standard output has no extension to tell the format by: name it (parquet, csv or json)"
                .into(),
        ));
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("parquet") => Ok("parquet"),
        Some("csv") => Ok("csv"),
        Some("json") => Ok("json"),
        _ => Err(Error::Table(format!(
            "{}: the output's extension must be .parquet, .csv or .json",
            path.display()
        ))),
    }
}

/// Checks, before any work, that rows can be written to `path`: a known extension, and no
/// existing file unless `force`.
///
/// # Errors
/// An unknown extension, or an existing file without `force`.
pub fn check_results_output(path: &Path, force: bool) -> Result<(), Error> {
    check_results_output_as(path, None, force)
}

/// As [`check_results_output`], with the format named or else told by the extension (see
/// [`results_format_as`]); standard output (`-`) always can be written.
///
/// # Errors
/// As [`results_format_as`], or an existing file without `force`.
pub fn check_results_output_as(
    path: &Path,
    format: Option<&str>,
    force: bool,
) -> Result<(), Error> {
    results_format_as(path, format)?;
    if !is_stdio(path) && path.exists() && !force {
        return Err(Error::Capture(jitterlab_capture::Error::Exists {
            path: path.display().to_string(),
        }));
    }
    Ok(())
}

/// Writes the rows to `path` as Parquet (`.parquet`), CSV (`.csv`) or JSON (`.json`, an array
/// of row objects), atomically; an existing file needs `force`.
///
/// # Errors
/// An unknown extension, an existing file without `force`, polars or I/O failures.
pub fn write_results(
    path: &Path,
    force: bool,
    trace_names: &[String],
    policies: &[Policy],
    rows: &[Row],
) -> Result<(), Error> {
    write_results_as(path, None, force, trace_names, policies, rows)
}

/// As [`write_results`], in the format named (else by the extension, see
/// [`results_format_as`]); `-` writes standard output.
///
/// # Errors
/// As [`write_results`].
pub fn write_results_as(
    path: &Path,
    format: Option<&str>,
    force: bool,
    trace_names: &[String],
    policies: &[Policy],
    rows: &[Row],
) -> Result<(), Error> {
    write_results_with(path, format, force, trace_names, policies, rows, None)
}

/// As [`write_results_as`], every row ending with the [`Provenance`] columns when one is
/// given.
///
/// # Errors
/// As [`write_results`].
pub fn write_results_with(
    path: &Path,
    format: Option<&str>,
    force: bool,
    trace_names: &[String],
    policies: &[Policy],
    rows: &[Row],
    provenance: Option<&Provenance>,
) -> Result<(), Error> {
    let kind = results_format_as(path, format)?;
    let mut out = AtomicFile::create(path, force)?;
    match kind {
        "json" => {
            let cols = columns_with(trace_names, policies, rows, provenance);
            let objects: Vec<Value> = (0..rows.len())
                .map(|i| {
                    Value::Object(
                        cols.iter()
                            .map(|(n, v)| (n.clone(), v[i].clone()))
                            .collect(),
                    )
                })
                .collect();
            serde_json::to_writer_pretty(&mut out, &objects)
                .map_err(|e| Error::Table(e.to_string()))?;
        }
        "csv" => {
            let mut df = sweep_frame_with(trace_names, policies, rows, provenance)?;
            CsvWriter::new(&mut out)
                .include_header(true)
                .finish(&mut df)?;
        }
        _ => {
            let mut df = sweep_frame_with(trace_names, policies, rows, provenance)?;
            ParquetWriter::new(&mut out).finish(&mut df)?;
        }
    }
    out.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_replay::Summary;

    /// Rows written in each format read back as the same typed rows: the same policies by
    /// index, trace names, and every metric (counts, ratios, absent values, the reference).
    #[test]
    fn every_format_reads_back_as_the_rows_written() {
        let policies: Vec<Policy> = ["fixed:delay=50ms", "jitter:k=3", "mirror"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let rows: Vec<Row> = (0..6)
            .map(|i| Row {
                trace: i / 3,
                config: i % 3,
                summary: Summary {
                    frames: 100 + i as u64,
                    holds: i as u64,
                    hold_ratio: 0.25 * i as f64,
                    mean_delay_ms: (i != 4).then_some(50.5 + i as f64),
                    min_depth: (i != 2).then_some(i as u64),
                    error_reference: (i % 2 == 0).then_some(jitterlab_replay::Reference::Truth),
                    ..Summary::default()
                },
                playout: None,
                bound_ms: (i != 3).then_some(40.25 + i as f64),
                window_bound_ms: (i != 3).then_some(45.5),
                talkspurt_bound_ms: None,
                regret_ms: (i != 3).then_some(10.25),
            })
            .collect();
        let names = vec!["a.jtr".to_owned(), "b, c.jtr".to_owned()];
        let dir = tempfile::tempdir().unwrap();
        for ext in ["parquet", "csv", "json"] {
            let path = dir.path().join(format!("rows.{ext}"));
            write_results(&path, false, &names, &policies, &rows).unwrap();
            let table = read_results(&path).unwrap();
            assert_eq!(table.traces, names, "{ext}");
            assert_eq!(table.policies, policies, "{ext}");
            assert_eq!(table.rows, rows, "{ext}");
        }
    }

    /// Shards of one sweep write one schema whatever rows each holds (one only `fixed`'s, one
    /// only `ngo`'s, one whose delays are all empty), so they concatenate as they are; the
    /// provenance columns end every row and read back as nothing else.
    #[test]
    fn every_shard_has_the_grids_schema_and_the_provenance_columns() {
        let policies: Vec<Policy> = ["fixed:delay=50ms", "fixed:delay=80ms", "ngo:ticks_ago=2"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let row = |config: usize, delay: Option<f64>| Row {
            trace: 0,
            config,
            summary: Summary {
                frames: 10,
                mean_delay_ms: delay,
                ..Summary::default()
            },
            playout: None,
            bound_ms: delay,
            window_bound_ms: None,
            talkspurt_bound_ms: None,
            regret_ms: None,
        };
        let shards = [
            vec![row(0, Some(50.0)), row(1, Some(80.0))],
            vec![row(2, Some(66.5))],
            vec![row(1, None)],
        ];
        let names = vec!["a.jtr".to_owned()];
        let provenance = |index: usize, fps: Option<f64>| Provenance {
            shard: Shard { index, count: 3 },
            version: "0.1.0 (abc1234)".into(),
            fps,
            clock: ClockMapping::Hindsight,
        };
        let frames: Vec<DataFrame> = shards
            .iter()
            .enumerate()
            .map(|(i, rows)| {
                sweep_frame_with(&names, &policies, rows, Some(&provenance(i, Some(60.0)))).unwrap()
            })
            .collect();
        for f in &frames[1..] {
            assert_eq!(f.schema(), frames[0].schema());
        }
        let names_of = |f: &DataFrame| -> Vec<String> {
            f.get_column_names().iter().map(|n| n.to_string()).collect()
        };
        let columns = names_of(&frames[0]);
        assert_eq!(columns[columns.len() - 4..], PROVENANCE_COLUMNS);
        assert!(columns.contains(&"ticks_ago".to_owned()), "{columns:?}");
        assert_eq!(
            frames[1].column("delay").unwrap().dtype(),
            &DataType::Float64
        );
        assert_eq!(
            frames[0].column("ticks_ago").unwrap().dtype(),
            &DataType::Float64
        );
        assert_eq!(frames[1].column("miss").unwrap().dtype(), &DataType::String);
        assert_eq!(
            frames[2].column("mean_delay_ms").unwrap().dtype(),
            &DataType::Float64
        );
        let cell =
            |f: &DataFrame, c: &str| f.column(c).unwrap().get(0).unwrap().str_value().to_string();
        assert_eq!(cell(&frames[1], "shard"), "2/3");
        assert_eq!(cell(&frames[1], "jitterlab_version"), "0.1.0 (abc1234)");
        assert_eq!(cell(&frames[1], "fps"), "60.0");
        assert_eq!(cell(&frames[1], "clock"), "hindsight");
        // Playout mode has no frame rate: still a column of floats.
        let playout =
            sweep_frame_with(&names, &policies, &shards[0], Some(&provenance(0, None))).unwrap();
        assert_eq!(playout.column("fps").unwrap().dtype(), &DataType::Float64);
        assert_eq!(playout.column("fps").unwrap().null_count(), 2);
        // Written with provenance, the rows read back as they were.
        let dir = tempfile::tempdir().unwrap();
        for ext in ["parquet", "csv", "json"] {
            let path = dir.path().join(format!("rows.{ext}"));
            let p = provenance(0, Some(60.0));
            write_results_with(&path, None, false, &names, &policies, &shards[0], Some(&p))
                .unwrap();
            assert_eq!(read_results(&path).unwrap().rows, shards[0], "{ext}");
        }
    }

    /// The bound line: per share, the largest over the traces of each trace's bound at the
    /// nearest sampled share at or above it; the Pareto figure draws it with its legend.
    #[test]
    fn the_bound_line_is_a_floor_over_traces_and_the_figure_draws_it() {
        let policies: Vec<Policy> = ["fixed:delay=50ms", "fixed:delay=100ms"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        // Trace 0: 10 % starved → bound 30, 0 % → 60; trace 1: 20 % → 20, 0 % → 80.
        let row = |trace, config, holds: u64, bound: f64| Row {
            trace,
            config,
            summary: Summary {
                frames: 100,
                holds,
                hold_ratio: holds as f64 / 100.0,
                mean_delay_ms: Some(bound + 5.0),
                ..Summary::default()
            },
            playout: None,
            bound_ms: Some(bound),
            window_bound_ms: Some(bound + 1.0),
            talkspurt_bound_ms: None,
            regret_ms: Some(5.0),
        };
        let rows = vec![
            row(0, 0, 10, 30.0),
            row(0, 1, 0, 60.0),
            row(1, 0, 20, 20.0),
            row(1, 1, 0, 80.0),
        ];
        let tuning = jitterlab_replay::tune::tune(
            &rows,
            &policies,
            &jitterlab_replay::tune::Constraints::default(),
        );
        let points = SweepPoints::new(&policies, &tuning, rows.len()).with_bound(&rows);
        // At 0 %: max(60, 80); at 10 %: max(30, trace 1's 20 % sample 20); at 20 %: trace 0
        // has no sample that far, trace 1's 20.
        assert_eq!(points.bound, vec![(80.0, 0.0), (30.0, 10.0), (20.0, 20.0)]);
        // Without rows carrying a bound, no line.
        assert!(SweepPoints::new(&policies, &tuning, 0).bound.is_empty());
        let figure = crate::figures::pareto_figure(&points);
        let series = &figure.panels[0].series;
        let line = series
            .iter()
            .find(|s| s.label.starts_with("offline-optimal bound"))
            .expect("the bound is drawn");
        assert_eq!(line.points, vec![(20.0, 20.0), (30.0, 10.0), (80.0, 0.0)]);
        assert!(
            figure
                .data()
                .contains("offline-optimal bound (at the starved share)")
        );
    }

    #[test]
    fn parquet_reads_back_with_the_same_rows_and_types() {
        let policies: Vec<Policy> = ["fixed:delay=50ms", "jitter:k=3", "fixed:delay=12.5ms"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let rows: Vec<Row> = (0..3)
            .map(|config| Row {
                trace: 0,
                config,
                summary: Summary {
                    frames: 100 + config as u64,
                    hold_ratio: 0.01 * config as f64,
                    mean_delay_ms: (config != 1).then_some(50.0),
                    ..Summary::default()
                },
                playout: None,
                bound_ms: None,
                window_bound_ms: None,
                talkspurt_bound_ms: None,
                regret_ms: None,
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.parquet");
        let names = vec!["a.jtr".to_owned()];
        write_results(&path, false, &names, &policies, &rows).unwrap();
        let df = ParquetReader::new(std::fs::File::open(&path).unwrap())
            .finish()
            .unwrap();
        assert_eq!(df.height(), 3);
        assert_eq!(df.column("delay").unwrap().dtype(), &DataType::Float64);
        let delay_col = df.column("delay").unwrap().f64().unwrap();
        let delay: Vec<Option<f64>> = (0..3).map(|i| delay_col.get(i)).collect();
        assert_eq!(delay, [Some(50.0), None, Some(12.5)]);
        let frames_col = df.column("frames").unwrap().u64().unwrap();
        let frames: Vec<Option<u64>> = (0..3).map(|i| frames_col.get(i)).collect();
        assert_eq!(frames, [Some(100), Some(101), Some(102)]);
        let policy = df
            .column("policy")
            .unwrap()
            .str()
            .unwrap()
            .get(1)
            .unwrap()
            .to_owned();
        assert_eq!(policy, policies[1].to_string());
        assert!(
            df.column("mean_delay_ms")
                .unwrap()
                .f64()
                .unwrap()
                .get(1)
                .is_none()
        );
        // No overwrite without force.
        assert!(write_results(&path, false, &names, &policies, &rows).is_err());
        assert!(
            write_results(
                &dir.path().join("rows.xlsx"),
                false,
                &names,
                &policies,
                &rows
            )
            .is_err()
        );
    }
}

/// One configuration of a sweep, judged by its worst trace (as [`Tuning`] judged it).
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    /// The exact policy string.
    pub policy: String,
    /// The policy's name (`fixed`, ...).
    pub name: String,
    /// Largest hold ratio over the traces.
    pub worst_hold: f64,
    /// Largest mean display delay over the traces, ms.
    pub worst_delay: Option<f64>,
    /// Numeric parameters (durations in ms).
    pub params: Vec<(String, f64)>,
    /// Playout mode: the largest concealment ratio over the traces.
    pub worst_concealment: f64,
    /// Playout mode: the lowest MOS over the traces.
    pub worst_mos: Option<f64>,
}

/// A sweep's configurations as the tune rule judged them, ready for the Pareto figure and the
/// heat map: the figures draw the [`Tuning`], they do not judge again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SweepPoints {
    /// One per judged configuration, in grid order.
    pub points: Vec<SweepPoint>,
    /// Rows behind them ((trace, configuration) pairs).
    pub rows: usize,
    /// Indices into `points` on the delay / hold-ratio Pareto frontier, by increasing delay.
    pub frontier: Vec<usize>,
    /// Index into `points` of the recommendation.
    pub recommendation: Option<usize>,
    /// The sweep played discrete frames: the frontier trades concealment, not holds.
    pub playout: bool,
    /// The offline-optimal bound under the frontier ([`SweepPoints::with_bound`]): (mean
    /// delay in ms, share in %) by increasing share, the largest over the traces of each
    /// trace's bound; empty when no row carries one.
    pub bound: Vec<(f64, f64)>,
}

impl SweepPoints {
    /// The points of `tuning`, made over `rows` rows of `policies`.
    pub fn new(policies: &[Policy], tuning: &Tuning, rows: usize) -> Self {
        Self::of(policies, tuning, rows, false)
    }

    /// [`SweepPoints::new`] of a playout sweep.
    pub fn playout(policies: &[Policy], tuning: &Tuning, rows: usize) -> Self {
        Self::of(policies, tuning, rows, true)
    }

    fn of(policies: &[Policy], tuning: &Tuning, rows: usize, playout: bool) -> Self {
        let points: Vec<SweepPoint> = tuning
            .candidates
            .iter()
            .map(|c| {
                let policy = &policies[c.config];
                SweepPoint {
                    policy: policy.to_string(),
                    name: policy.name().to_owned(),
                    worst_hold: c.worst.hold_ratio,
                    worst_delay: c.worst.mean_delay_ms,
                    worst_concealment: c.worst.concealment_ratio,
                    worst_mos: c.worst.mos,
                    params: policy
                        .params()
                        .into_iter()
                        .filter_map(|(k, v)| Some((k.to_owned(), numeric(&v)?)))
                        .collect(),
                }
            })
            .collect();
        // A point's index is its candidate's.
        let point_of = |config: usize| tuning.position(config);
        Self {
            points,
            rows,
            frontier: tuning
                .frontier
                .iter()
                .filter_map(|&c| point_of(c))
                .collect(),
            recommendation: tuning.recommendation.and_then(point_of),
            playout,
            bound: Vec::new(),
        }
    }

    /// These points with the bound line drawn under their frontier, from the rows'
    /// [`Row::bound_ms`] (each row gives one point of its trace's bound, at its starved or
    /// late share). At each share the line is the largest over the traces of the trace's
    /// bound at the nearest sampled share at or above it: as the bound never rises with the
    /// share, that stays a floor under every configuration's worst-trace delay.
    pub fn with_bound(mut self, rows: &[Row]) -> Self {
        self.bound = bound_line(rows);
        self
    }
}

/// The share a row's bound was taken at: late slots in playout mode, starved frames
/// (held, extrapolated, empty) in snapshot mode.
pub fn bound_share(row: &Row) -> f64 {
    match &row.playout {
        Some(p) => p.summary.late_ratio,
        None => jitterlab_replay::bound::starved_share(&row.summary),
    }
}

/// See [`SweepPoints::with_bound`].
fn bound_line(rows: &[Row]) -> Vec<(f64, f64)> {
    let traces = rows.iter().map(|r| r.trace + 1).max().unwrap_or(0);
    // Per trace: (share, bound) samples by increasing share.
    let mut samples: Vec<Vec<(f64, f64)>> = vec![Vec::new(); traces];
    for r in rows {
        if let Some(b) = r.bound_ms {
            let share = bound_share(r);
            if share.is_finite() && b.is_finite() {
                samples[r.trace].push((share, b));
            }
        }
    }
    for s in &mut samples {
        s.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let mut shares: Vec<f64> = samples.iter().flatten().map(|s| s.0).collect();
    shares.sort_by(f64::total_cmp);
    shares.dedup();
    shares
        .into_iter()
        .map(|share| {
            let floor = samples
                .iter()
                .filter_map(|s| {
                    let i = s.partition_point(|p| p.0 < share);
                    // Samples at one share agree; the smallest is the safe floor.
                    s[i..]
                        .iter()
                        .take_while(|p| p.0 == s[i].0)
                        .map(|p| p.1)
                        .reduce(f64::min)
                })
                .fold(0.0f64, f64::max);
            (floor, 100.0 * share)
        })
        .collect()
}

/// A sweep's results read back: the traces by name, the configurations and the rows, typed
/// exactly as `sweep` made them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SweepTable {
    /// Trace names, in the order first seen.
    pub traces: Vec<String>,
    /// Configurations, by their `config` index.
    pub policies: Vec<Policy>,
    /// The rows, `trace` and `config` indexing the two lists above.
    pub rows: Vec<Row>,
}

/// Reads a results file written by `jitterlab sweep` (Parquet, CSV or JSON, by extension) back
/// into typed rows: each row's policy string parsed again, its metrics into a [`Summary`].
///
/// # Errors
/// Unreadable files, an unknown extension, a table without the `trace`, `config` or `policy`
/// column, a policy that does not parse, a metric of the wrong type, or two policies under one
/// `config` index.
pub fn read_results(path: &Path) -> Result<SweepTable, Error> {
    let bad = |reason: String| Error::Results {
        path: path.to_owned(),
        reason,
    };
    let bytes = if is_stdio(path) {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)
            .map_err(|e| bad(format!("cannot read standard input: {e}")))?;
        bytes
    } else {
        std::fs::read(path).map_err(|e| bad(format!("cannot read: {e}")))?
    };
    let ext = if is_stdio(path) {
        // No extension: told by the content (Parquet's magic, a JSON array, else CSV).
        Some(
            if bytes.starts_with(b"PAR1") {
                "parquet"
            } else if bytes.trim_ascii_start().starts_with(b"[") {
                "json"
            } else {
                "csv"
            }
            .to_owned(),
        )
    } else {
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
    };
    let objects: Vec<Map<String, Value>> = match ext.as_deref() {
        Some("json") => serde_json::from_slice(&bytes)
            .map_err(|e| bad(format!("not a sweep JSON array: {e}")))?,
        Some("parquet" | "csv") => {
            let file = std::io::Cursor::new(bytes);
            let df = if ext.as_deref() == Some("csv") {
                CsvReadOptions::default()
                    .with_has_header(true)
                    .into_reader_with_file_handle(file)
                    .finish()?
            } else {
                ParquetReader::new(file).finish()?
            };
            (0..df.height())
                .map(|i| {
                    df.columns()
                        .iter()
                        .map(|c| {
                            let v = c.get(i).map_or(Value::Null, json_value);
                            (c.name().to_string(), v)
                        })
                        .collect()
                })
                .collect()
        }
        _ => {
            return Err(bad(
                "a sweep's results are .parquet, .csv or .json".to_owned()
            ));
        }
    };
    let mut table = SweepTable::default();
    // By `config` index; a shard's rows may leave some indices out.
    let mut policies: Vec<Option<Policy>> = Vec::new();
    for (line, row) in objects.iter().enumerate() {
        let text = |key: &str| -> Result<String, Error> {
            match row.get(key) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(Value::Null) | None => Err(bad(format!(
                    "row {}: no {key} column; is this a jitterlab sweep's output?",
                    line + 1
                ))),
                Some(other) => Ok(other.to_string()),
            }
        };
        let (trace_name, policy_text) = (text("trace")?, text("policy")?);
        let config = row
            .get("config")
            .and_then(Value::as_u64)
            .and_then(|c| usize::try_from(c).ok())
            .ok_or_else(|| bad(format!("row {}: no config index", line + 1)))?;
        let policy: Policy = policy_text
            .parse()
            .map_err(|e| bad(format!("row {}: {e}", line + 1)))?;
        let trace = match table.traces.iter().position(|t| *t == trace_name) {
            Some(t) => t,
            None => {
                table.traces.push(trace_name);
                table.traces.len() - 1
            }
        };
        if policies.len() <= config {
            policies.resize(config + 1, None);
        }
        match &policies[config] {
            Some(known) if *known != policy => {
                return Err(bad(format!(
                    "row {}: config {config} is {known} on another row, {policy} here",
                    line + 1
                )));
            }
            Some(_) => {}
            None => policies[config] = Some(policy),
        }
        let playout = row.get("mode").and_then(Value::as_str) == Some("playout");
        let (summary, playout) = if playout {
            let report = serde_json::from_value(Value::Object(unflatten(row)))
                .map_err(|e| bad(format!("row {}: {e}", line + 1)))?;
            (Summary::default(), Some(report))
        } else {
            let summary: Summary = serde_json::from_value(Value::Object(unflatten(row)))
                .map_err(|e| bad(format!("row {}: {e}", line + 1)))?;
            (summary, None)
        };
        let number = |key: &str| row.get(key).and_then(Value::as_f64);
        table.rows.push(Row {
            trace,
            config,
            summary,
            playout,
            bound_ms: number("bound_ms"),
            window_bound_ms: number("window_bound_ms"),
            talkspurt_bound_ms: number("talkspurt_bound_ms"),
            regret_ms: number("regret_ms"),
        });
    }
    // An index no row uses is never judged; any configuration holds its place.
    let filler = policies.iter().flatten().next().cloned();
    table.policies = policies
        .into_iter()
        .map(|p| p.or_else(|| filler.clone()))
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default();
    Ok(table)
}
