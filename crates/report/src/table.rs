//! Summary tables of replays as polars DataFrames.

use polars::prelude::*;

use crate::Error;
use crate::runs::Run;

/// One row per run with the metrics people compare first.
///
/// # Errors
/// Polars failures (none expected for well-formed runs).
pub fn summary_frame(runs: &[Run]) -> Result<DataFrame, Error> {
    if runs.iter().any(|r| r.playout.is_some()) {
        return playout_frame(runs);
    }
    let opt = |f: fn(&Run) -> Option<f64>| runs.iter().map(f).collect::<Vec<Option<f64>>>();
    let df = df!(
        "config" => runs.iter().map(|r| r.label.clone()).collect::<Vec<_>>(),
        "frames" => runs.iter().map(|r| r.summary.frames).collect::<Vec<_>>(),
        "hold_ratio" => runs.iter().map(|r| r.summary.hold_ratio).collect::<Vec<_>>(),
        "max_consecutive_holds" => runs.iter().map(|r| r.summary.max_consecutive_holds).collect::<Vec<_>>(),
        "mean_delay_ms" => opt(|r| r.summary.mean_delay_ms),
        "p99_delay_ms" => opt(|r| r.summary.p99_delay_ms),
        "mean_error" => opt(|r| r.summary.mean_error),
        "p99_error" => opt(|r| r.summary.p99_error),
    )?;
    Ok(df)
}

/// One row per discrete playout with the figures a listener's experience comes down to.
fn playout_frame(runs: &[Run]) -> Result<DataFrame, Error> {
    let report = |r: &Run| r.playout.as_ref().map(|p| p.report).unwrap_or_default();
    let opt = |f: fn(&jitterlab_replay::playout::PlayoutReport) -> Option<f64>| {
        runs.iter()
            .map(|r| f(&report(r)))
            .collect::<Vec<Option<f64>>>()
    };
    let df = df!(
        "config" => runs.iter().map(|r| r.label.clone()).collect::<Vec<_>>(),
        "frames" => runs.iter().map(|r| report(r).summary.frames).collect::<Vec<_>>(),
        "late_ratio" => runs.iter().map(|r| report(r).summary.late_ratio).collect::<Vec<_>>(),
        "concealment_ratio" => runs.iter().map(|r| report(r).summary.concealment_ratio).collect::<Vec<_>>(),
        "max_consecutive_concealed" => runs.iter().map(|r| report(r).summary.max_consecutive_concealed).collect::<Vec<_>>(),
        "mean_delay_ms" => opt(|p| p.mean_delay_ms),
        "p99_delay_ms" => opt(|p| p.p99_delay_ms),
        "mos" => opt(jitterlab_replay::playout::PlayoutReport::mos),
    )?;
    Ok(df)
}

/// Rounds every float column to `digits` decimals, for display.
///
/// # Errors
/// Polars failures.
pub fn rounded(df: &DataFrame, digits: u32) -> Result<DataFrame, Error> {
    let mut out = df.clone();
    let names: Vec<PlSmallStr> = df
        .columns()
        .iter()
        .filter(|c| c.dtype() == &DataType::Float64)
        .map(|c| c.name().clone())
        .collect();
    let scale = 10f64.powi(digits as i32);
    for name in names {
        let col = df.column(name.as_str())?.f64()?;
        let r: Float64Chunked = col.apply_values(|v| (v * scale).round() / scale);
        out.with_column(r.into_series().with_name(name).into_column())?;
    }
    Ok(out)
}

/// The table as CSV bytes.
///
/// # Errors
/// Polars failures.
pub fn to_csv(df: &DataFrame) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let mut df = df.clone();
    CsvWriter::new(&mut out)
        .include_header(true)
        .finish(&mut df)?;
    Ok(out)
}

/// The table as a Markdown table (for `index.md` and terminals that prefer plain text).
pub fn to_markdown(df: &DataFrame) -> String {
    let cols = df.columns();
    let mut s = String::new();
    s.push('|');
    for c in cols {
        s.push_str(&format!(" {} |", c.name()));
    }
    s.push_str("\n|");
    for c in cols {
        s.push_str(if c.dtype().is_primitive_numeric() {
            "---:|"
        } else {
            "---|"
        });
    }
    s.push('\n');
    for row in 0..df.height() {
        s.push('|');
        for c in cols {
            let v = c.get(row).map_or_else(|_| String::new(), |v| cell(&v));
            s.push_str(&format!(" {v} |"));
        }
        s.push('\n');
    }
    s
}

fn cell(v: &AnyValue<'_>) -> String {
    match v {
        AnyValue::Null => "–".into(),
        AnyValue::String(s) => (*s).to_owned(),
        AnyValue::StringOwned(s) => s.to_string(),
        AnyValue::Float64(f) => format!("{f}"),
        other => other.to_string(),
    }
}

/// The table as aligned plain text for terminals: text left-aligned, numbers right-aligned.
pub fn to_text(df: &DataFrame) -> String {
    let cols = df.columns();
    let mut cells: Vec<Vec<String>> = vec![cols.iter().map(|c| c.name().to_string()).collect()];
    for row in 0..df.height() {
        cells.push(
            cols.iter()
                .map(|c| c.get(row).map_or_else(|_| String::new(), |v| cell(&v)))
                .collect(),
        );
    }
    let widths: Vec<usize> = (0..cols.len())
        .map(|i| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for (r, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, v)| {
                if cols[i].dtype().is_primitive_numeric() {
                    format!("{v:>w$}", w = widths[i])
                } else {
                    format!("{v:<w$}", w = widths[i])
                }
            })
            .collect();
        s.push_str(line.join("  ").trim_end());
        s.push('\n');
        if r == 0 {
            let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
            s.push_str(&rule.join("  "));
            s.push('\n');
        }
    }
    s
}
