//! Sweep results as a table: one row per (trace, configuration).
//!
//! Columns, in order: `trace`, `config` (the configuration's index in the grid), `policy` (the
//! exact string `jitterlab replay --policy` accepts), `policy_name`, one column per parameter
//! that any configuration has (numbers, or durations in milliseconds, when every value of the
//! column is one; the canonical text otherwise; empty for configurations without that key),
//! then every metric of `jitterlab replay --json` under the same name. Written as Parquet, CSV
//! or JSON by the output's extension.

use std::path::Path;

use jitterlab_capture::output::AtomicFile;
use jitterlab_replay::Policy;
use jitterlab_replay::sweep::Row;
use polars::prelude::*;
use serde_json::{Map, Value};

use crate::Error;

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

/// The rows as named columns of JSON values (the single source for every output format).
pub fn columns(trace_names: &[String], policies: &[Policy], rows: &[Row]) -> Vec<RawColumn> {
    // Each configuration's parameters, formatted once (not once per row and key).
    let params: Vec<Vec<(&'static str, String)>> = policies.iter().map(Policy::params).collect();
    let mut param_keys: Vec<&'static str> = Vec::new();
    let mut seen_policy = vec![false; policies.len()];
    for row in rows {
        if !seen_policy[row.config] {
            seen_policy[row.config] = true;
            for (k, _) in &params[row.config] {
                if !param_keys.contains(k) {
                    param_keys.push(k);
                }
            }
        }
    }
    let metric_rows: Vec<Map<String, Value>> = rows
        .iter()
        .map(|r| match serde_json::to_value(&r.summary) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        })
        .collect();
    let metric_keys: Vec<String> = metric_rows
        .first()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
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
        let all_numeric = texts.iter().flatten().all(|t| numeric(t).is_some());
        let values = texts
            .into_iter()
            .map(|t| match t {
                None => Value::Null,
                Some(t) if all_numeric => numeric(&t).map_or(Value::Null, Value::from),
                Some(t) => Value::from(t),
            })
            .collect();
        let name = if metric_keys.iter().any(|m| m == key) {
            format!("param_{key}")
        } else {
            key.to_owned()
        };
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
    cols
}

/// Builds a polars column from JSON values: unsigned integers, floats, booleans or text,
/// whichever every non-null value is.
fn to_column(name: &str, values: &[Value]) -> Column {
    let present = || values.iter().filter(|v| !v.is_null());
    let name = PlSmallStr::from(name);
    if present().all(Value::is_u64) {
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
    let cols: Vec<Column> = columns(trace_names, policies, rows)
        .iter()
        .map(|(n, v)| to_column(n, v))
        .collect();
    Ok(DataFrame::new_infer_height(cols)?)
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
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let kind = match ext.as_deref() {
        Some(k @ ("parquet" | "csv" | "json")) => k.to_owned(),
        _ => {
            return Err(Error::Table(format!(
                "{}: the output's extension must be .parquet, .csv or .json",
                path.display()
            )));
        }
    };
    let mut out = AtomicFile::create(path, force)?;
    match kind.as_str() {
        "json" => {
            let cols = columns(trace_names, policies, rows);
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
            let mut df = sweep_frame(trace_names, policies, rows)?;
            CsvWriter::new(&mut out)
                .include_header(true)
                .finish(&mut df)?;
        }
        _ => {
            let mut df = sweep_frame(trace_names, policies, rows)?;
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

/// One configuration of a sweep, judged by its worst trace.
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
}

/// A sweep's configurations, ready for the Pareto figure and heat map.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SweepPoints {
    /// In the order first seen.
    pub points: Vec<SweepPoint>,
    /// Rows read (pairs).
    pub rows: usize,
}

impl SweepPoints {
    /// Groups rows (as JSON objects with the results table's columns) by policy.
    pub fn from_objects(objects: &[Map<String, Value>]) -> Self {
        let metric_names: Vec<String> =
            match serde_json::to_value(jitterlab_replay::Summary::default()) {
                Ok(Value::Object(m)) => m.keys().cloned().collect(),
                _ => Vec::new(),
            };
        let meta = ["trace", "config", "policy", "policy_name"];
        let mut out = Self {
            points: Vec::new(),
            rows: objects.len(),
        };
        for row in objects {
            let Some(policy) = row.get("policy").and_then(Value::as_str) else {
                continue;
            };
            let hold = row
                .get("hold_ratio")
                .and_then(Value::as_f64)
                .unwrap_or(f64::NAN);
            let delay = row.get("mean_delay_ms").and_then(Value::as_f64);
            match out.points.iter_mut().find(|p| p.policy == policy) {
                Some(p) => {
                    p.worst_hold = p.worst_hold.max(hold);
                    p.worst_delay = match (p.worst_delay, delay) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    };
                }
                None => out.points.push(SweepPoint {
                    policy: policy.to_owned(),
                    name: row.get("policy_name").and_then(Value::as_str).map_or_else(
                        || policy.split(':').next().unwrap_or("").to_owned(),
                        str::to_owned,
                    ),
                    worst_hold: hold,
                    worst_delay: delay,
                    params: row
                        .iter()
                        .filter(|(k, _)| !meta.contains(&k.as_str()) && !metric_names.contains(k))
                        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                        .collect(),
                }),
            }
        }
        out
    }

    /// From sweep rows in memory.
    pub fn from_rows(trace_names: &[String], policies: &[Policy], rows: &[Row]) -> Self {
        let cols = columns(trace_names, policies, rows);
        let objects: Vec<Map<String, Value>> = (0..rows.len())
            .map(|i| {
                cols.iter()
                    .map(|(n, v)| (n.clone(), v[i].clone()))
                    .collect()
            })
            .collect();
        Self::from_objects(&objects)
    }

    /// The lowest worst delay among configurations whose worst hold ratio is at most
    /// `max_hold` (the tune rule).
    pub fn recommendation(&self, max_hold: f64) -> Option<usize> {
        self.points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.worst_hold <= max_hold && p.worst_delay.is_some())
            .min_by(|a, b| {
                (a.1.worst_delay, a.1.worst_hold)
                    .partial_cmp(&(b.1.worst_delay, b.1.worst_hold))
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .map(|(i, _)| i)
    }
}

/// Reads a results file written by `jitterlab sweep` (Parquet, CSV or JSON, by extension).
///
/// # Errors
/// Unreadable files, an unknown extension, a table without a `policy` column.
pub fn read_results(path: &Path) -> Result<SweepPoints, Error> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let objects: Vec<Map<String, Value>> = match ext.as_deref() {
        Some("json") => {
            let bytes = std::fs::read(path)?;
            serde_json::from_slice(&bytes).map_err(|e| {
                Error::Table(format!("{}: not a sweep JSON array: {e}", path.display()))
            })?
        }
        Some("parquet" | "csv") => {
            let file = std::fs::File::open(path)?;
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
                            let v = match c.get(i) {
                                Ok(AnyValue::String(s)) => Value::from(s),
                                Ok(AnyValue::StringOwned(s)) => Value::from(s.as_str()),
                                Ok(AnyValue::Boolean(b)) => Value::from(b),
                                Ok(AnyValue::Null) | Err(_) => Value::Null,
                                Ok(other) => {
                                    other.extract::<f64>().map_or(Value::Null, Value::from)
                                }
                            };
                            (c.name().to_string(), v)
                        })
                        .collect()
                })
                .collect()
        }
        _ => {
            return Err(Error::Table(format!(
                "{}: a sweep's results are .parquet, .csv or .json",
                path.display()
            )));
        }
    };
    if objects.first().is_some_and(|o| !o.contains_key("policy")) {
        return Err(Error::Table(format!(
            "{}: no policy column; is this a jitterlab sweep's output?",
            path.display()
        )));
    }
    Ok(SweepPoints::from_objects(&objects))
}
