//! Recorded link files: Mahimahi delivery traces and recorded delay series (ping CSVs, delay
//! lists), read with the line at fault in every error.

use std::path::Path;

use crate::Error;
use crate::time::Nanos;

/// Whether `text` looks like a Mahimahi delivery trace: whole milliseconds, one per line, never
/// decreasing, at least two lines. Anything else recorded (ping CSVs, delay lists) is a delay
/// series.
pub fn is_mahimahi_text(text: &str) -> bool {
    let mut last = 0u64;
    let mut lines = 0;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Ok(v) = line.parse::<u64>() else {
            return false;
        };
        if v < last {
            return false;
        }
        last = v;
        lines += 1;
    }
    lines > 1
}

/// An error about a file a model reads, at a one-based line if one is at fault.
fn model_file(what: &'static str, path: &Path, line: Option<usize>, reason: String) -> Error {
    Error::ModelFile {
        what,
        path: path.display().to_string(),
        line: line.map(|l| l as u64),
        reason,
    }
}

/// Reads a Mahimahi delivery trace: one millisecond timestamp per line, non-decreasing; each
/// line is one opportunity to deliver up to 1500 bytes. Returns the opportunities in ns.
///
/// # Errors
/// I/O errors, and a line that is not a whole number or goes backwards (naming the line).
pub fn read_mahimahi(path: &Path) -> Result<Vec<Nanos>, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| model_file("link trace", path, None, e.to_string()))?;
    let mut out = Vec::new();
    let mut prev = 0u64;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let ms: u64 = line.parse().map_err(|_| {
            model_file(
                "link trace",
                path,
                Some(i + 1),
                format!("'{line}' is not a whole number of milliseconds"),
            )
        })?;
        if ms < prev || ms > 1 << 40 {
            return Err(model_file(
                "link trace",
                path,
                Some(i + 1),
                format!("timestamp {ms} goes backwards or is absurd"),
            ));
        }
        prev = ms;
        out.push(Nanos::from_millis(ms as i64));
    }
    if out.is_empty() || prev == 0 {
        return Err(model_file(
            "link trace",
            path,
            None,
            "no delivery opportunity after 0 ms (the trace must span some time)".into(),
        ));
    }
    Ok(out)
}

/// Reads a recorded delay series: one delay in ms per line. A non-numeric first line is taken
/// as a header; in comma-separated lines the last field is the delay (e.g. `icmp_seq,rtt_ms`).
///
/// # Errors
/// I/O errors, and a malformed or negative value (naming the line).
pub fn read_delay_series(path: &Path) -> Result<Vec<Nanos>, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| model_file("delay series", path, None, e.to_string()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let field = line.rsplit(',').next().unwrap_or(line).trim();
        match field.parse::<f64>() {
            Ok(ms) if ms.is_finite() && ms >= 0.0 => out.push(Nanos::from_millis_f64(ms)),
            _ if i == 0 => continue, // a header row
            _ => {
                return Err(model_file(
                    "delay series",
                    path,
                    Some(i + 1),
                    format!("'{field}' is not a delay in ms (≥ 0)"),
                ));
            }
        }
    }
    if out.is_empty() {
        return Err(model_file("delay series", path, None, "no delays".into()));
    }
    Ok(out)
}
