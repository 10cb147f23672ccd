//! Bad input: a clear one-line error naming what and where (clap's own format for the values
//! it checks), exit code 2, no panic, and no output file left behind as if it were complete.

use std::path::Path;

use crate::util::{fixtures, import, jitterlab, write};

/// Runs jitterlab with `args` and checks the failure contract; returns the error line.
fn fails(args: &[&str], cwd: &Path) -> String {
    let stderr = refused(args, cwd);
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "not one line: {stderr}"
    );
    stderr
}

/// As [`fails`] for a value clap checks: its "invalid value" error, with the values allowed or
/// the reason, then the hint to `--help`.
fn invalid_value(args: &[&str], cwd: &Path) -> String {
    let stderr = refused(args, cwd);
    assert!(stderr.starts_with("error: invalid value '"), "{stderr}");
    assert!(
        stderr.contains("For more information, try '--help'."),
        "{stderr}"
    );
    stderr
}

fn refused(args: &[&str], cwd: &Path) -> String {
    let out = jitterlab().current_dir(cwd).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "jitterlab {args:?}: {stderr}");
    assert!(
        !stderr.contains("panicked"),
        "jitterlab {args:?} panicked: {stderr}"
    );
    assert!(stderr.starts_with("error:"), "{stderr}");
    stderr
}

fn seed_trace(dir: &Path) -> std::path::PathBuf {
    import(
        dir,
        &fixtures().join("contracts/c07_seed000_interpolate.csv"),
    )
}

#[test]
fn missing_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let msg = fails(&["replay", "nope.jtr", "--policy", "fixed"], dir.path());
    assert!(msg.contains("nope.jtr"), "{msg}");
    let msg = fails(&["info", "nope.jtr"], dir.path());
    assert!(msg.contains("nope.jtr"), "{msg}");
}

#[test]
fn a_file_of_another_format_is_not_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "log.csv", b"seq,send_ms,arrival_ms\n1,2,3\n");
    let msg = fails(&["info", "log.csv"], dir.path());
    assert!(
        msg.contains("log.csv") && msg.contains("not a jitterlab trace"),
        "{msg}"
    );
    write(dir.path(), "empty.jtr", b"");
    let msg = fails(&["info", "empty.jtr"], dir.path());
    assert!(msg.contains("empty"), "{msg}");
    write(
        dir.path(),
        "cap.pcap",
        &[0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0],
    );
    let msg = fails(&["info", "cap.pcap"], dir.path());
    assert!(msg.contains("pcap"), "{msg}");
}

#[test]
fn corrupt_record_names_its_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let trace = seed_trace(dir.path());
    let mut bytes = std::fs::read(&trace).unwrap();
    let header_len = jitterlab_capture::Reader::new(&bytes[..])
        .unwrap()
        .header_len() as usize;
    bytes[header_len] = 0xc1; // a reserved MessagePack marker where a record starts
    std::fs::write(&trace, &bytes).unwrap();
    let msg = fails(
        &["replay", trace.to_str().unwrap(), "--policy", "fixed"],
        dir.path(),
    );
    assert!(msg.contains(&format!("byte offset {header_len}")), "{msg}");
}

#[test]
fn header_cut_short_is_an_error_and_a_cut_tail_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let trace = seed_trace(dir.path());
    let bytes = std::fs::read(&trace).unwrap();
    std::fs::write(&trace, &bytes[..20]).unwrap();
    let msg = fails(&["info", trace.to_str().unwrap()], dir.path());
    assert!(msg.contains("cut short"), "{msg}");
    // A tail cut mid-record (a writer killed) keeps every complete record: a warning, not a loss.
    std::fs::write(&trace, &bytes[..bytes.len() - 3]).unwrap();
    let out = jitterlab()
        .args(["info", "--json"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("do not form a whole record"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["streams"][0]["packets"], 2);
    assert!(v["trailing_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn bad_policies_name_the_key_and_the_allowed_range() {
    let dir = tempfile::tempdir().unwrap();
    let trace = seed_trace(dir.path());
    let t = trace.to_str().unwrap();
    let msg = fails(
        &["replay", t, "--policy", "fixed:delay=100ms,colour=red"],
        dir.path(),
    );
    assert!(
        msg.contains("colour") && msg.contains("unknown key"),
        "{msg}"
    );
    let msg = fails(&["replay", t, "--policy", "fixed:delay=-5ms"], dir.path());
    assert!(msg.contains("delay") && msg.contains("≥ 0ms"), "{msg}");
    let msg = fails(&["replay", t, "--policy", "fixed:capacity=0"], dir.path());
    assert!(msg.contains("capacity") && msg.contains("1..="), "{msg}");
    let msg = fails(&["replay", t, "--policy", "wobbly"], dir.path());
    assert!(msg.contains("unknown policy"), "{msg}");
    let msg = fails(
        &["replay", t, "--policy", "fixed", "--fps", "0"],
        dir.path(),
    );
    assert!(msg.contains("fps"), "{msg}");
    let msg = fails(
        &["replay", t, "--policy", "fixed", "--at", "200,100"],
        dir.path(),
    );
    assert!(msg.contains("must not decrease"), "{msg}");
    let msg = invalid_value(
        &["replay", t, "--policy", "fixed", "--clock", "offset=soon"],
        dir.path(),
    );
    assert!(msg.contains("clock"), "{msg}");
    let msg = fails(
        &["replay", t, "--policy", "fixed", "--stream", "9"],
        dir.path(),
    );
    assert!(msg.contains("--stream 9"), "{msg}");
}

#[test]
fn malformed_csv_names_line_and_column_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.csv",
        b"seq,send_ms,arrival_ms,x\n1,0,5,1\n2,50,zz,2\n",
    );
    let msg = fails(&["import", "bad.csv", "-o", "out.jtr"], dir.path());
    assert!(
        msg.contains("line 3") && msg.contains("arrival_ms"),
        "{msg}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("bad.csv")],
        "partial output left behind"
    );
}

#[test]
fn import_never_overwrites_without_force() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ok.csv", b"seq,send_ms,arrival_ms\n1,0,5\n");
    write(dir.path(), "out.jtr", b"precious");
    let msg = fails(&["import", "ok.csv", "-o", "out.jtr"], dir.path());
    assert!(
        msg.contains("already exists") && msg.contains("--force"),
        "{msg}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("out.jtr")).unwrap(),
        b"precious"
    );
    jitterlab()
        .current_dir(dir.path())
        .args(["import", "ok.csv", "-o", "out.jtr", "--force"])
        .assert()
        .success();
    assert_ne!(
        std::fs::read(dir.path().join("out.jtr")).unwrap(),
        b"precious"
    );
}

#[test]
fn usage_errors_exit_2() {
    let out = jitterlab().args(["replay"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = jitterlab().args(["frobnicate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn synth_out_of_range_parameters_name_the_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (args, needle) in [
        (vec!["--model", "loss=100%"], "loss"),
        (vec!["--model", "delay=-4ms"], "delay"),
        (vec!["--model", "burst=0.5"], "burst"),
        (vec!["--model", "wobble=3"], "unknown key"),
        (vec!["--rate", "0"], "--rate"),
        (vec!["--duration", "soon"], "--duration"),
    ] {
        let mut all = vec!["synth", "-o", "x.jtr"];
        all.extend(args);
        let msg = fails(&all, d);
        assert!(msg.contains(needle), "{all:?}: {msg}");
    }
    for (args, needle) in [
        (["--profile", "moon"], "[possible values: lan, wifi"),
        (
            ["--motion", "moonwalk"],
            "[possible values: circle, walk, stop-go, teleport]",
        ),
    ] {
        let mut all = vec!["synth", "-o", "x.jtr"];
        all.extend(args);
        let msg = invalid_value(&all, d);
        assert!(msg.contains(needle), "{all:?}: {msg}");
    }
    write(d, "link.txt", b"0\n10\nten\n");
    let msg = fails(&["synth", "-o", "x.jtr", "--model", "link=link.txt"], d);
    assert!(msg.contains("line 3"), "{msg}");
    assert!(!d.join("x.jtr").exists(), "no output after an error");
}

#[test]
fn bad_frame_clocks_name_the_line_or_value() {
    let dir = tempfile::tempdir().unwrap();
    let trace = seed_trace(dir.path());
    let t = trace.to_str().unwrap();
    write(dir.path(), "frames.txt", b"100\nsoon\n");
    let msg = fails(
        &["replay", t, "--policy", "fixed", "--frames", "frames.txt"],
        dir.path(),
    );
    assert!(msg.contains("line 2"), "{msg}");
    write(dir.path(), "back.txt", b"200\n100\n");
    let msg = fails(
        &["replay", t, "--policy", "fixed", "--frames", "back.txt"],
        dir.path(),
    );
    assert!(msg.contains("must not decrease"), "{msg}");
    let msg = fails(
        &["replay", t, "--policy", "fixed", "--hitches", "150%:10ms"],
        dir.path(),
    );
    assert!(msg.contains("hitch chance"), "{msg}");
    let msg = fails(
        &["replay", t, "--policy", "fixed", "--hitches", "often"],
        dir.path(),
    );
    assert!(msg.contains("CHANCE:LENGTH"), "{msg}");
}

#[test]
fn non_finite_csv_values_name_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    for (text, needle) in [
        (
            "seq,send_ms,arrival_ms,x\n1,0,5,1\n2,20,25,NaN\n",
            "line 3, column x: 'NaN'",
        ),
        (
            "seq,send_ms,arrival_ms,x\n1,inf,5,1\n",
            "line 2, column send_ms: 'inf'",
        ),
    ] {
        write(dir.path(), "bad.csv", text.as_bytes());
        let msg = fails(&["import", "bad.csv", "-o", "bad.jtr"], dir.path());
        assert!(
            msg.contains(needle) && msg.contains("not a finite number"),
            "{msg}"
        );
        assert!(!dir.path().join("bad.jtr").exists());
    }
}

/// A full disk at the moment of writing (`/dev/full`): every command that writes says so in
/// one line naming the output, exit code 2, and the device is written, never replaced.
#[test]
fn a_full_output_device_is_a_one_line_error() {
    use std::os::unix::fs::FileTypeExt;
    let full = Path::new("/dev/full");
    if !std::fs::metadata(full).is_ok_and(|m| m.file_type().is_char_device()) {
        eprintln!("skipped: no /dev/full character device here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = seed_trace(dir.path());
    let trace = trace.to_str().unwrap();
    let csv = fixtures().join("contracts/c07_seed000_interpolate.csv");
    for args in [
        vec!["synth", "--duration", "2s", "-o", "/dev/full"],
        vec!["import", csv.to_str().unwrap(), "-o", "/dev/full"],
        vec![
            "replay",
            trace,
            "--policy",
            "fixed",
            "--timeline",
            "/dev/full",
        ],
    ] {
        let msg = fails(&args, dir.path());
        assert!(msg.contains("/dev/full"), "{args:?}: {msg}");
        assert!(msg.contains("No space left on device"), "{args:?}: {msg}");
        assert!(
            std::fs::metadata(full)
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }
}

/// `jitterlab info --json … | head -1`: the reader closing the pipe early is not an error
/// (exit 0, nothing on stderr), for a document far larger than the pipe's buffer.
#[test]
fn a_closed_pipe_ends_json_output_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let trace = seed_trace(dir.path());
    let bin = assert_cmd::cargo::cargo_bin("jitterlab");
    // 20,000 sampled frames: a document of megabytes, far beyond a pipe's 64 KiB.
    let at: Vec<String> = (0..20_000).map(|t| t.to_string()).collect();
    let replay = format!(
        "replay --json --policy fixed:delay=100ms --at {}",
        at.join(",")
    );
    for (name, cmd) in [("info", "info --json"), ("replay", replay.as_str())] {
        let script = format!(
            "'{}' {cmd} '{}' | head -c 1 > /dev/null; exit ${{PIPESTATUS[0]}}",
            bin.display(),
            trace.display()
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &script])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.is_empty(), "{name}: {err}");
    }
}
