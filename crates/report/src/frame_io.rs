//! Writing any DataFrame as Parquet, CSV or NDJSON, chosen by name or by a file's extension.
//!
//! CSV goes through polars' CSV writer (fields quoted where needed, a header row); NDJSON is
//! one JSON object per line, integers kept as integers and nulls as `null` (non-finite floats
//! become `null`, as JSON has no NaN). Shared by `jitterlab export --packets` and anything
//! else that writes a table for notebooks.

use std::io::Write;
use std::path::Path;

use polars::prelude::*;
use serde_json::Value;

use crate::Error;

/// A table file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableFormat {
    /// Apache Parquet (typed columns; polars, pandas, DuckDB, Arrow read it directly).
    Parquet,
    /// CSV with a header row.
    Csv,
    /// Newline-delimited JSON: one object per row.
    Ndjson,
}

impl TableFormat {
    /// The format a path's extension names: `.parquet`, `.csv`, `.ndjson` or `.jsonl`.
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "parquet" => Some(Self::Parquet),
            "csv" => Some(Self::Csv),
            "ndjson" | "jsonl" => Some(Self::Ndjson),
            _ => None,
        }
    }

    /// `parquet`, `csv` or `ndjson`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Parquet => "parquet",
            Self::Csv => "csv",
            Self::Ndjson => "ndjson",
        }
    }
}

/// Writes `df` to `out` in `format`.
///
/// # Errors
/// Polars or I/O failures.
pub fn write_frame(
    df: &mut DataFrame,
    format: TableFormat,
    mut out: impl Write,
) -> Result<(), Error> {
    match format {
        TableFormat::Parquet => {
            ParquetWriter::new(&mut out).finish(df)?;
        }
        TableFormat::Csv => {
            CsvWriter::new(&mut out).include_header(true).finish(df)?;
        }
        TableFormat::Ndjson => {
            df.rechunk_mut();
            let columns = df.columns();
            let names: Vec<String> = columns
                .iter()
                .map(|c| Value::from(c.name().as_str()).to_string())
                .collect();
            let mut line = Vec::new();
            for row in 0..df.height() {
                // Written by hand so that keys keep the columns' order.
                line.clear();
                line.push(b'{');
                for (i, (c, name)) in columns.iter().zip(&names).enumerate() {
                    if i > 0 {
                        line.push(b',');
                    }
                    line.extend_from_slice(name.as_bytes());
                    line.push(b':');
                    serde_json::to_writer(&mut line, &json_value(c.get(row)?))
                        .map_err(|e| Error::Table(e.to_string()))?;
                }
                line.extend_from_slice(b"}\n");
                out.write_all(&line)?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// One polars value as JSON: integers stay integers (counts read back as counts), text stays
/// text.
pub(crate) fn json_value(v: AnyValue<'_>) -> Value {
    match v {
        AnyValue::String(s) => Value::from(s),
        AnyValue::StringOwned(s) => Value::from(s.as_str()),
        AnyValue::Boolean(b) => Value::from(b),
        AnyValue::Null => Value::Null,
        AnyValue::UInt8(x) => Value::from(x),
        AnyValue::UInt16(x) => Value::from(x),
        AnyValue::UInt32(x) => Value::from(x),
        AnyValue::UInt64(x) => Value::from(x),
        AnyValue::Int8(x) => Value::from(x),
        AnyValue::Int16(x) => Value::from(x),
        AnyValue::Int32(x) => Value::from(x),
        AnyValue::Int64(x) => Value::from(x),
        other => other.extract::<f64>().map_or(Value::Null, Value::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> DataFrame {
        DataFrame::new_infer_height(vec![
            Column::new("name".into(), ["a,b", "quote\"d"]),
            Column::new("n".into(), [Some(1i64), None]),
            Column::new("x".into(), [0.5f64, f64::NAN]),
        ])
        .unwrap()
    }

    #[test]
    fn csv_quotes_and_ndjson_is_one_object_per_line() {
        let mut out = Vec::new();
        write_frame(&mut frame(), TableFormat::Csv, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().nth(1), Some("\"a,b\",1,0.5"), "{text}");
        assert!(text.contains("\"quote\"\"d\""), "{text}");
        let mut out = Vec::new();
        write_frame(&mut frame(), TableFormat::Ndjson, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            rows[0],
            serde_json::json!({"name": "a,b", "n": 1, "x": 0.5})
        );
        assert_eq!(
            rows[1],
            serde_json::json!({"name": "quote\"d", "n": null, "x": null})
        );
        assert!(
            text.starts_with(r#"{"name":"a,b","n":1,"x":0.5}"#),
            "keys keep the columns' order: {text}"
        );
    }

    #[test]
    fn formats_by_extension() {
        assert_eq!(
            TableFormat::from_path(Path::new("p.PARQUET")),
            Some(TableFormat::Parquet)
        );
        assert_eq!(
            TableFormat::from_path(Path::new("p.jsonl")),
            Some(TableFormat::Ndjson)
        );
        assert_eq!(TableFormat::from_path(Path::new("p.pcap")), None);
    }
}
