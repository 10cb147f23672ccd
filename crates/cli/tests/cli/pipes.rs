//! Pipes and compressed inputs: `-` as standard input and output, `.gz` and `.zst` read
//! transparently (told by their magic bytes), a real `tcpdump -U -w -` pipe, and the errors
//! of `-` given twice or of a corrupt compressed file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};

use jitterlab_capture::testdata::shared_data;
use serde_json::Value;

use crate::util::{fixtures, jitterlab};

/// The embedded demo trace (a jitterlab trace with ground truth).
fn demo_trace() -> PathBuf {
    fixtures().join("traces/demo-wifi-20hz.jtr")
}

/// A small real RTP capture (pcap) and a pcapng with SDP, from the shared data.
fn shared_captures(data: &Path) -> [PathBuf; 2] {
    [
        data.join("pcap/sipp_g711a.pcap"),
        data.join("pcap/withsdp/hdiniz-rtpdump_sample1_ipv4_amr-nb.withsdp.pcapng"),
    ]
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
}

/// `info --json` of `path`, with `stdin` fed when given.
fn info_json(path: &Path, stdin: Option<Vec<u8>>) -> Value {
    let mut cmd = jitterlab();
    cmd.arg("info").arg(path).arg("--json");
    if let Some(bytes) = stdin {
        cmd.write_stdin(bytes);
    }
    let out = cmd.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).expect("info --json prints JSON")
}

/// A run's stderr as text.
fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn info_of_standard_input_is_info_of_the_file() {
    let mut inputs = vec![demo_trace()];
    if let Some(data) = shared_data() {
        inputs.extend(shared_captures(&data));
    }
    for path in inputs {
        let from_file = info_json(&path, None);
        let piped = info_json(Path::new("-"), Some(std::fs::read(&path).unwrap()));
        assert_eq!(piped, from_file, "{}", path.display());
        assert!(
            from_file["streams"]
                .as_array()
                .is_some_and(|s| !s.is_empty())
        );
    }
}

#[test]
fn compressed_traces_and_captures_give_the_same_info() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = vec![demo_trace()];
    if let Some(data) = shared_data() {
        inputs.extend(shared_captures(&data));
    }
    for path in inputs {
        let plain = std::fs::read(&path).unwrap();
        let want = info_json(&path, None);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for (ext, bytes) in [("gz", gzip(&plain)), ("zst", zstd(&plain))] {
            let compressed = dir.path().join(format!("{name}.{ext}"));
            std::fs::write(&compressed, &bytes).unwrap();
            assert_eq!(
                info_json(&compressed, None),
                want,
                "{}",
                compressed.display()
            );
            // Told by the magic bytes, not the name: no extension, and through a pipe.
            let bare = dir.path().join(format!("{name}-{ext}-noext"));
            std::fs::write(&bare, &bytes).unwrap();
            assert_eq!(info_json(&bare, None), want, "{}", bare.display());
            assert_eq!(info_json(Path::new("-"), Some(bytes)), want, "{name} piped");
        }
    }
}

/// `import -` from standard input makes the trace `import FILE` makes (CSV, and a capture
/// compressed on the way).
#[test]
fn import_from_standard_input_is_import_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let csv = fixtures().join("contracts/c07_seed000_interpolate.csv");
    let mut inputs = vec![(csv.clone(), std::fs::read(&csv).unwrap())];
    if let Some(data) = shared_data() {
        let pcap = shared_captures(&data)[0].clone();
        let bytes = gzip(&std::fs::read(&pcap).unwrap());
        inputs.push((pcap, bytes));
    }
    for (path, stdin) in inputs {
        let from_file = dir.path().join("file.jtr");
        let from_stdin = dir.path().join("stdin.jtr");
        for p in [&from_file, &from_stdin] {
            let _ = std::fs::remove_file(p);
        }
        jitterlab()
            .arg("import")
            .arg(&path)
            .arg("-o")
            .arg(&from_file)
            .assert()
            .success();
        let out = jitterlab()
            .args(["import", "-", "-o"])
            .arg(&from_stdin)
            .write_stdin(stdin)
            .assert()
            .success()
            .get_output()
            .clone();
        assert!(out.stdout.is_empty());
        assert!(
            stderr_of(&out).contains("from standard input"),
            "{}",
            stderr_of(&out)
        );
        assert_eq!(
            info_json(&from_stdin, None),
            info_json(&from_file, None),
            "{}",
            path.display()
        );
    }
}

/// `import CAPTURE -o -` writes the trace, and only the trace, to standard output: piped
/// into `info -` it is the trace `import -o FILE` writes.
#[test]
fn import_to_standard_output_pipes_into_info() {
    let Some(data) = shared_data() else { return };
    let dir = tempfile::tempdir().unwrap();
    for capture in shared_captures(&data) {
        let out = jitterlab()
            .arg("import")
            .arg(&capture)
            .args(["-o", "-"])
            .assert()
            .success()
            .get_output()
            .clone();
        assert!(
            out.stdout.starts_with(b"\x8b\xa6format\xafjitterlab-trace")
                || jitterlab_capture::trace::sniff(&out.stdout),
            "stdout holds the trace"
        );
        assert!(stderr_of(&out).contains("into standard output"));
        assert!(!Path::new("-").exists(), "no file named -");
        let file = dir.path().join("x.jtr");
        let _ = std::fs::remove_file(&file);
        jitterlab()
            .arg("import")
            .arg(&capture)
            .arg("-o")
            .arg(&file)
            .assert()
            .success();
        assert_eq!(
            info_json(Path::new("-"), Some(out.stdout)),
            info_json(&file, None)
        );
    }
}

/// `synth -o -` and `sweep - -o - --format csv`: the rows on standard output and nothing else
/// (the summary and the frontier go to standard error).
#[test]
fn sweep_to_standard_output_prints_the_csv_and_nothing_else() {
    let trace = jitterlab()
        .args(["synth", "-o", "-", "--duration", "5s", "--seed", "3"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(jitterlab_capture::trace::sniff(&trace));
    let out = jitterlab()
        .args(["sweep", "-", "--sweep", "fixed:delay=40..100ms/20ms"])
        .args(["-o", "-", "--format", "csv"])
        .write_stdin(trace)
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers().unwrap().clone();
    assert_eq!(
        header.iter().take(3).collect::<Vec<_>>(),
        ["trace", "config", "policy"]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 4, "one row per configuration:\n{text}");
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.len(), header.len());
        assert_eq!(&row[1], i.to_string());
        assert!(row[2].starts_with(&format!("fixed:delay={}ms", 40 + 20 * i)));
    }
    let err = stderr_of(&out);
    assert!(err.contains("rows written to standard output"), "{err}");
    assert!(err.contains("Pareto frontier"), "{err}");
    // Without --format, standard output has no extension to go by.
    let out = jitterlab()
        .arg("sweep")
        .arg(demo_trace())
        .args(["--sweep", "fixed:delay=50ms", "-o", "-"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(stderr_of(&out).contains("--format"), "{}", stderr_of(&out));
}

/// `replay --timeline -`: the CSV on standard output, the summary on standard error.
#[test]
fn a_timeline_on_standard_output_keeps_the_summary_off_it() {
    let out = jitterlab()
        .arg("replay")
        .arg(demo_trace())
        .args(["--policy", "fixed:delay=100ms", "--timeline", "-"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let mut lines = text.lines();
    assert!(
        lines.next().unwrap().starts_with("stream,at_ms,"),
        "{text:.200}"
    );
    let width = text.lines().next().unwrap().split(',').count();
    assert!(lines.all(|l| l.split(',').count() == width));
    assert!(stderr_of(&out).contains("policy fixed:delay=100ms"));
}

/// A real pipe: `tcpdump -r CAPTURE -U -w - | jitterlab import - -o x.jtr` makes the trace
/// importing the file makes.
#[test]
fn tcpdump_piped_into_import_is_import_of_the_file() {
    let Some(data) = shared_data() else { return };
    let found = StdCommand::new("tcpdump")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
            "JITTERLAB_REQUIRE_PEERS is set but tcpdump is not installed"
        );
        eprintln!("skipped: tcpdump is not installed (apt-get install tcpdump)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Captures of one link type (tcpdump writes pcap, one link type per file).
    for capture in [
        data.join("pcap/sipp_g711a.pcap"),
        data.join("pcap/wiresharkwiki_SIP_DTMF2.pcap"),
    ] {
        let piped = dir.path().join("piped.jtr");
        let file = dir.path().join("file.jtr");
        for p in [&piped, &file] {
            let _ = std::fs::remove_file(p);
        }
        let mut tcpdump = StdCommand::new("tcpdump")
            .arg("-r")
            .arg(&capture)
            .args(["-U", "-w", "-"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("tcpdump starts");
        let pipe = tcpdump.stdout.take().unwrap();
        let import = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
            .args(["import", "-", "-o"])
            .arg(&piped)
            .stdin(Stdio::from(pipe))
            .output()
            .unwrap();
        assert!(tcpdump.wait().unwrap().success());
        assert!(import.status.success(), "{}", stderr_of(&import));
        jitterlab()
            .arg("import")
            .arg(&capture)
            .arg("-o")
            .arg(&file)
            .assert()
            .success();
        let (a, b) = (info_json(&piped, None), info_json(&file, None));
        assert_eq!(a["streams"], b["streams"], "{}", capture.display());
        assert_eq!(a["flows"], b["flows"], "{}", capture.display());
        assert!(a["streams"].as_array().is_some_and(|s| !s.is_empty()));
    }
}

/// Standard input can be read once: `-` twice is refused before anything is read, and `-`
/// where a directory is written is refused too.
#[test]
fn a_dash_given_twice_or_for_a_directory_is_refused() {
    let demo = demo_trace();
    let demo = demo.to_str().unwrap();
    for args in [
        &["sweep", "-", "-", "--sweep", "fixed:delay=50ms"][..],
        &["sweep", "-", "--grid", "-"],
        &["tune", "-", "-"],
        &[
            "replay",
            "-",
            "--policy",
            "fixed:delay=50ms",
            "--frames",
            "-",
        ],
        &["report", "-", "--sweep", "-", "-o", "out"],
    ] {
        let out = jitterlab().args(args).assert().code(2).get_output().clone();
        let err = stderr_of(&out);
        assert!(
            err.contains("standard input") && err.contains("only once"),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    for args in [
        &["report", demo, "-o", "-"][..],
        &["tune", demo, "--report", "-"],
        &["demo", "--out", "-"],
    ] {
        let out = jitterlab().args(args).assert().code(2).get_output().clone();
        let err = stderr_of(&out);
        assert!(err.contains("directory"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!Path::new("-").exists());
    }
}

/// A corrupt or truncated compressed file is one line naming the file; a compressed trace
/// cut mid-record keeps its complete records, with a warning.
#[test]
fn corrupt_and_cut_compressed_files_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let trace = std::fs::read(demo_trace()).unwrap();
    let gz = gzip(&trace);
    // A flipped bit in the gzip trailer's CRC.
    let mut bad = gz.clone();
    let n = bad.len();
    bad[n - 8] ^= 1;
    let bad_path = dir.path().join("bad.jtr.gz");
    std::fs::write(&bad_path, &bad).unwrap();
    let out = jitterlab()
        .arg("info")
        .arg(&bad_path)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = stderr_of(&out);
    assert!(err.contains(&*bad_path.to_string_lossy()), "{err}");
    assert!(err.contains("corrupt gzip data"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // A CSV cut inside its zstd stream: an error, not a shorter log.
    let mut text = b"seq,send_ms,arrival_ms,value\n".to_vec();
    for i in 0..40_000 {
        text.extend_from_slice(format!("{i},{},{},{i}\n", i * 50, i * 50 + 7).as_bytes());
    }
    let zst = zstd(&text);
    let cut_csv = dir.path().join("cut.csv.zst");
    std::fs::write(&cut_csv, &zst[..zst.len() * 3 / 4]).unwrap();
    let out = jitterlab()
        .arg("import")
        .arg(&cut_csv)
        .arg("-o")
        .arg(dir.path().join("never.jtr"))
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = stderr_of(&out);
    assert!(err.contains(&*cut_csv.to_string_lossy()), "{err}");
    assert!(err.contains("zstd data is cut short"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!dir.path().join("never.jtr").exists());
    // A trace cut inside its gzip stream: every complete record before the cut, warned.
    let cut_trace = dir.path().join("cut.jtr.gz");
    std::fs::write(&cut_trace, &gz[..gz.len() / 2]).unwrap();
    let out = jitterlab()
        .arg("info")
        .arg(&cut_trace)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .clone();
    let err = stderr_of(&out);
    assert!(err.contains("gzip data is cut short"), "{err}");
    let cut: Value = serde_json::from_slice(&out.stdout).unwrap();
    let whole = info_json(&demo_trace(), None);
    let packets = |v: &Value| v["packets"].as_u64();
    assert!(
        packets(&cut).is_some_and(|p| p > 0 && Some(p) < packets(&whole)),
        "{:?} of {:?}",
        packets(&cut),
        packets(&whole)
    );
}

/// `discover` reads its input twice (payloads, then streams): from standard input, and
/// compressed on the way, it proposes what it proposes for the file.
#[test]
fn discover_reads_standard_input_twice_as_a_file() {
    let args = |path: &Path| {
        let mut cmd = jitterlab();
        cmd.arg("discover").arg(path).arg("--json");
        cmd
    };
    let from_file = args(&demo_trace())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let piped = args(Path::new("-"))
        .write_stdin(gzip(&std::fs::read(demo_trace()).unwrap()))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(
        String::from_utf8(piped).unwrap(),
        String::from_utf8(from_file).unwrap()
    );
}

/// A grid file from standard input, gzip-compressed: the rows of the same grid on the command
/// line.
#[test]
fn a_grid_from_standard_input_sweeps_as_the_command_line_grid() {
    let rows = |grid_on_stdin: bool| {
        let mut cmd = jitterlab();
        cmd.arg("sweep")
            .arg(demo_trace())
            .args(["-o", "-", "--format", "csv"]);
        if grid_on_stdin {
            cmd.args(["--grid", "-"])
                .write_stdin(gzip(b"[fixed]\ndelay = \"50ms..100ms step 25ms\"\n"));
        } else {
            cmd.args(["--sweep", "fixed:delay=50..100ms/25ms"]);
        }
        String::from_utf8(cmd.assert().success().get_output().stdout.clone()).unwrap()
    };
    let from_stdin = rows(true);
    assert_eq!(from_stdin.lines().count(), 4, "{from_stdin}");
    assert_eq!(from_stdin, rows(false));
}
