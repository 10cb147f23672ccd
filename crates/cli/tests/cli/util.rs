//! Helpers shared by the CLI tests.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

pub(crate) fn jitterlab() -> Command {
    Command::cargo_bin("jitterlab").expect("the jitterlab binary is built")
}

pub(crate) fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Imports a CSV into a trace in `dir` and returns the trace path.
pub(crate) fn import(dir: &Path, csv: &Path) -> PathBuf {
    let out = dir.join(format!(
        "{}.jtr",
        csv.file_stem().unwrap().to_string_lossy()
    ));
    jitterlab()
        .arg("import")
        .arg(csv)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    out
}

/// Writes `text` to `dir/name` and returns the path.
pub(crate) fn write(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs jitterlab with `args`, expects success and JSON on stdout.
pub(crate) fn json(args: &[&std::ffi::OsStr]) -> Value {
    let out = jitterlab().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "jitterlab {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// Asserts that every key and value in `expected` is in `actual` (arrays element-wise, numbers
/// within 1e-9 relative), and names the path of the first difference.
pub(crate) fn assert_subset(expected: &Value, actual: &Value, path: &str) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                let got = a
                    .get(k)
                    .unwrap_or_else(|| panic!("{path}.{k} is missing in {actual}"));
                assert_subset(v, got, &format!("{path}.{k}"));
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            assert_eq!(
                e.len(),
                a.len(),
                "{path}: length {} vs {} in {actual}",
                e.len(),
                a.len()
            );
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                assert_subset(x, y, &format!("{path}[{i}]"));
            }
        }
        (Value::Number(e), Value::Number(a)) => {
            let (e, a) = (e.as_f64().unwrap(), a.as_f64().unwrap());
            assert!(
                (e - a).abs() <= 1e-9 * e.abs().max(1.0),
                "{path}: expected {e}, got {a}"
            );
        }
        (e, a) => assert_eq!(e, a, "{path}"),
    }
}

/// Decodes a PNG into (width, height, RGB bytes).
pub(crate) fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![
        0;
        reader
            .output_buffer_size()
            .expect("the image fits in memory")
    ];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}
