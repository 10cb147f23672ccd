//! Command-line conventions: exit codes (0 done, 1 the answer is no, 2 bad input or usage),
//! `--quiet`, values and headings in `--help`, completions, the man pages, `--version`, the
//! old flag spellings, and I/O errors that name their path with nothing left behind.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Output};

use crate::util::{fixtures, jitterlab};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A short synthetic trace with ground truth; `model` is its network (`synth --model`).
fn synth(dir: &Path, name: &str, model: &str) -> PathBuf {
    let path = dir.join(name);
    jitterlab()
        .args(["synth", "--duration", "10s", "--model", model, "-o"])
        .arg(&path)
        .assert()
        .success();
    path
}

/// A lossy trace: every playout configuration conceals some frames.
fn lossy(dir: &Path) -> PathBuf {
    synth(
        dir,
        "lossy.jtr",
        "delay=20ms,jitter=10ms,loss=10%,burst=3,seed=3",
    )
}

/// The subcommands `jitterlab help` lists (so a new command is checked as soon as it exists).
fn subcommands() -> Vec<String> {
    let out = jitterlab().arg("help").output().unwrap();
    assert!(out.status.success());
    let text = stdout(&out);
    let names: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|n| n != "help")
        .collect();
    assert!(names.len() >= 13, "{text}");
    names
}

/// Whether `tool` runs here; without it the test is skipped with a message, unless
/// `JITTERLAB_REQUIRE_PEERS` is set (as `.ci/run` does after installing it).
fn have(tool: &str, probe: &[&str]) -> bool {
    let ok = Process::new(tool).args(probe).output().is_ok();
    if !ok {
        assert!(
            std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
            "JITTERLAB_REQUIRE_PEERS is set but {tool} is not installed"
        );
        eprintln!("skipped: {tool} is not installed");
    }
    ok
}

#[test]
fn exit_code_0_when_done() {
    let dir = tempfile::tempdir().unwrap();
    let trace = synth(dir.path(), "calm.jtr", "delay=20ms,jitter=2ms");
    let out = jitterlab().arg("tune").arg(&trace).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("Recommendation"), "{}", stdout(&out));
}

/// `tune` that finds nothing feasible has still run: its answer (the closest configurations)
/// is printed, and the exit code says no.
#[test]
fn exit_code_1_when_tune_finds_nothing_feasible() {
    let dir = tempfile::tempdir().unwrap();
    let trace = lossy(dir.path());
    // Snapshot mode: no hold and no error at all, on a trace that loses 10 %.
    let out = jitterlab()
        .arg("tune")
        .arg(&trace)
        .args(["--max-hold-ratio", "0", "--max-p99-error", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("No configuration meets the limits on every trace"),
        "{text}"
    );
    assert!(
        stderr(&out).contains("no configuration of"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("error:"), "{}", stderr(&out));
    // Playout mode, as JSON: the document is whole, with no recommendation; --quiet leaves
    // the exit code to say it.
    let out = jitterlab()
        .arg("tune")
        .arg(&trace)
        .args(["--playout", "--max-concealment", "0", "--json", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(doc["recommendation"].is_null(), "{doc}");
    assert_eq!(doc["mode"], "playout");
    assert!(doc["configurations"].as_u64().unwrap() > 10, "{doc}");
    assert_eq!(stderr(&out), "", "--quiet");
    // With --report, the report is written all the same.
    let report = dir.path().join("report");
    let out = jitterlab()
        .arg("tune")
        .arg(&trace)
        .args(["--max-hold-ratio", "0", "--max-p99-error", "0", "-q"])
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(report.join("index.html").is_file());
}

#[test]
fn exit_code_2_for_usage_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["tune", "--no-such-flag"][..],
        &["synth"],
        &["info", "nope.jtr"],
        &["completions", "tcsh"],
        &["synth", "-o", "x.jtr", "--motion", "moonwalk"],
    ] {
        let out = jitterlab()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).starts_with("error:"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // An empty answer set is a bad input, not a "no": no readable trace at all.
    let out = jitterlab()
        .current_dir(dir.path())
        .args(["tune", "nope.jtr"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn help_states_the_exit_codes() {
    let out = jitterlab().arg("--help").output().unwrap();
    let text = stdout(&out);
    assert!(text.contains("Exit codes:"), "{text}");
    for line in [
        "0  done",
        "1  ran, but the answer is no",
        "2  bad input or usage",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    let tune = stdout(&jitterlab().args(["tune", "--help"]).output().unwrap());
    assert!(tune.contains("Exit code 1"), "{tune}");
}

/// `--quiet` (anywhere on the line) leaves stderr empty on success, and errors still print.
#[test]
fn quiet_silences_notes_and_summaries_but_not_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let loud = jitterlab()
        .args(["synth", "--duration", "5s", "-o"])
        .arg(d.join("a.jtr"))
        .output()
        .unwrap();
    assert!(stderr(&loud).contains("wrote"), "{}", stderr(&loud));
    let csv = fixtures().join("contracts/c07_seed000_interpolate.csv");
    let trace = d.join("a.jtr");
    let runs: Vec<Vec<std::ffi::OsString>> = vec![
        vec![
            "-q".into(),
            "synth".into(),
            "--duration".into(),
            "5s".into(),
            "-o".into(),
            d.join("b.jtr").into(),
        ],
        vec![
            "synth".into(),
            "--quiet".into(),
            "--duration".into(),
            "5s".into(),
            "-o".into(),
            d.join("c.jtr").into(),
        ],
        vec![
            "import".into(),
            csv.into(),
            "-o".into(),
            d.join("d.jtr").into(),
            "-q".into(),
        ],
        vec![
            "sweep".into(),
            trace.clone().into(),
            "--sweep".into(),
            "fixed:delay=50..100ms/50ms".into(),
            "-o".into(),
            d.join("rows.csv").into(),
            "-q".into(),
        ],
        vec!["tune".into(), trace.clone().into(), "-q".into()],
        vec!["man".into(), "-o".into(), d.join("man").into(), "-q".into()],
    ];
    for args in runs {
        let out = jitterlab().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?} with --quiet");
    }
    // Without -q, the same sweep says what it did.
    let out = jitterlab()
        .arg("sweep")
        .arg(&trace)
        .args(["--sweep", "fixed:delay=50ms"])
        .output()
        .unwrap();
    assert!(stderr(&out).contains("replays"), "{}", stderr(&out));
    // Errors are not silenced.
    let out = jitterlab()
        .args(["-q", "info"])
        .arg(d.join("nope.jtr"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nope.jtr"), "{}", stderr(&out));
}

/// Enumerated values are listed by `--help` and refused in clap's format, naming the flag and
/// the values it takes; open values (`layout:SPEC`, `offset=MS`) are checked before anything
/// is read, the library's reason in the message.
#[test]
fn values_are_listed_and_checked_by_clap() {
    let synth_help = stdout(&jitterlab().args(["synth", "--help"]).output().unwrap());
    for v in ["circle", "walk", "stop-go", "teleport", "wifi", "lte"] {
        assert!(synth_help.contains(v), "{v}: {synth_help}");
    }
    let tune_help = stdout(&jitterlab().args(["tune", "--help"]).output().unwrap());
    for v in [
        "hindsight",
        "offset=MS",
        "layout:SPEC",
        "raknet",
        "Possible values",
    ] {
        assert!(tune_help.contains(v), "{v}: {tune_help}");
    }
    let out = jitterlab()
        .args(["synth", "-o", "x.jtr", "--motion", "moonwalk"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("invalid value 'moonwalk' for '--motion <MOTION>'"),
        "{err}"
    );
    assert!(
        err.contains("[possible values: circle, walk, stop-go, teleport]"),
        "{err}"
    );
    let out = jitterlab()
        .args(["tune", "--objective", "speed"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("[possible values: delay, error]"),
        "{}",
        stderr(&out)
    );
    let out = jitterlab()
        .args(["synth", "-o", "x.jtr", "--profile", "moon"])
        .output()
        .unwrap();
    assert!(stderr(&out).contains("lan, wifi"), "{}", stderr(&out));
    // Checked by clap, before the trace is opened (it does not exist).
    for (flag, value, reason) in [
        ("--clock", "offset=soon", "soon"),
        ("--decoder", "layout:bogus", "bogus"),
        ("--decoder", "tcp", "unknown decoder"),
        ("--codec", "g7111", "not known"),
    ] {
        let out = jitterlab()
            .args(["replay", "nope.jtr", "--policy", "fixed", flag, value])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.starts_with(&format!("error: invalid value '{value}' for '{flag} <")),
            "{err}"
        );
        assert!(err.contains(reason), "{err}");
        assert!(!err.contains("nope.jtr"), "checked before reading: {err}");
    }
}

/// Every command's help groups its flags under headings and ends with examples.
#[test]
fn help_has_headings_and_examples() {
    for name in subcommands() {
        let help = stdout(&jitterlab().args([&name, "--help"]).output().unwrap());
        assert!(help.contains("\nExamples:\n  jitterlab "), "{name}: {help}");
        let own = help
            .lines()
            .skip_while(|l| *l != "Examples:")
            .filter(|l| l.trim().starts_with(&format!("jitterlab {name}")))
            .count();
        assert!(own >= 1, "{name}: no example runs it: {help}");
    }
    let tune = stdout(&jitterlab().args(["tune", "--help"]).output().unwrap());
    for heading in ["Sweep:", "Decoding:", "Selection:", "Limits:", "Output:"] {
        assert!(
            tune.contains(&format!("\n{heading}\n")),
            "{heading}: {tune}"
        );
    }
    // Each flag under its own heading.
    let at = |text: &str| tune.find(text).unwrap_or_else(|| panic!("{text}: {tune}"));
    assert!(at("\nLimits:\n") < at("--max-late") && at("--max-late") < at("\nOutput:\n"));
    assert!(at("\nOutput:\n") < at("--json"));
}

#[test]
fn bash_completions_are_valid_and_name_every_command() {
    let out = jitterlab().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let script = stdout(&out);
    for name in subcommands() {
        assert!(
            script.contains(&format!("jitterlab__subcmd__{name})")),
            "{name} is not completed"
        );
    }
    // Values are completed too.
    assert!(script.contains("stop-go"), "motions");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jitterlab.bash");
    std::fs::write(&path, &script).unwrap();
    let check = Process::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(check.status.success(), "bash -n: {}", stderr(&check));
    // Sourced, it registers the completion function for the command.
    let probe = format!("source {} && complete -p jitterlab", path.display());
    let check = Process::new("bash").args(["-c", &probe]).output().unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
    assert!(stdout(&check).contains("_jitterlab"), "{}", stdout(&check));
}

#[test]
fn completions_for_every_shell() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef jitterlab"),
        ("fish", "complete -c jitterlab"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[jitterlab]"),
    ] {
        let out = jitterlab().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains(marker), "{shell}: {marker} missing");
        assert!(script.contains("tune"), "{shell}");
    }
    for (shell, flag) in [("zsh", "-n"), ("fish", "--no-execute")] {
        if Process::new(shell).arg("--version").output().is_err() {
            eprintln!("skipped: {shell} is not installed, its script is not parsed");
            continue;
        }
        let out = jitterlab().args(["completions", shell]).output().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script");
        std::fs::write(&path, &out.stdout).unwrap();
        let check = Process::new(shell).arg(flag).arg(&path).output().unwrap();
        assert!(check.status.success(), "{shell} {flag}: {}", stderr(&check));
    }
}

/// `man` prints jitterlab.1, and `man -o DIR` writes it with a page per command; every page
/// renders with groff without a warning.
#[test]
fn man_pages_render() {
    let out = jitterlab().arg("man").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.contains(".TH jitterlab 1"), "{page}");
    assert!(
        page.contains(".SH NAME") && page.contains(".SH SYNOPSIS"),
        "{page}"
    );
    assert!(
        page.contains("Exit codes"),
        "the exit codes are in the page"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = jitterlab()
        .args(["man", "-o"])
        .arg(dir.path().join("man1"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mut pages = vec!["jitterlab.1".to_owned()];
    pages.extend(subcommands().iter().map(|n| format!("jitterlab-{n}.1")));
    let written = std::fs::read_dir(dir.path().join("man1")).unwrap().count();
    assert_eq!(
        written,
        pages.len(),
        "one page per command and no other file"
    );
    let tune = std::fs::read_to_string(dir.path().join("man1/jitterlab-tune.1")).unwrap();
    assert!(tune.contains(".TH jitterlab-tune 1"), "{tune}");
    assert!(tune.contains("max\\-hold\\-ratio"), "{tune}");
    if !have("groff", &["--version"]) {
        return;
    }
    for name in &pages {
        let path = dir.path().join("man1").join(name);
        let out = Process::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-P-cbou"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{name}: groff warns");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("NAME") && text.contains("SYNOPSIS"),
            "{name}: {text}"
        );
    }
}

/// `--version` names the commit the binary was built from, when built in a git checkout.
#[test]
fn version_names_the_commit() {
    let out = jitterlab().arg("--version").output().unwrap();
    let line = stdout(&out);
    let version = env!("CARGO_PKG_VERSION");
    assert!(line.starts_with(&format!("jitterlab {version}")), "{line}");
    let head = Process::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    match head {
        Ok(h) if h.status.success() => {
            let commit = String::from_utf8_lossy(&h.stdout).trim().to_owned();
            assert!(
                line.starts_with(&format!("jitterlab {version} ({commit}")),
                "{line} does not name {commit}"
            );
        }
        _ => {
            eprintln!("no git checkout here: the version names no commit");
            assert_eq!(line.trim(), format!("jitterlab {version}"));
        }
    }
}

/// The old spellings still work: `demo --out`, `report --sweep FILE`.
#[test]
fn old_flag_names_are_aliases() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--results", "--sweep"] {
        let out = jitterlab()
            .current_dir(dir.path())
            .args(["report", "t.jtr", "-o", "r", flag, "rows.parquet"])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        // The results file is read first, under the flag's new name.
        assert!(
            err.contains("--results") && err.contains("rows.parquet"),
            "{flag}: {err}"
        );
    }
    for flag in ["--out", "--output", "-o"] {
        let target = dir.path().join(format!("demo{flag}"));
        let out = jitterlab()
            .args(["demo", flag])
            .arg(&target)
            .output()
            .unwrap();
        assert!(out.status.success(), "{flag}: {}", stderr(&out));
        assert!(target.join("index.html").is_file(), "{flag}");
    }
}

/// `-j/--threads` sizes the sweep's pool; the rows are the same with one thread as with two.
#[test]
fn threads_flag() {
    let dir = tempfile::tempdir().unwrap();
    let trace = lossy(dir.path());
    let mut rows = Vec::new();
    for (flag, n) in [("-j", "1"), ("--threads", "2")] {
        let out = dir.path().join(format!("rows{n}.csv"));
        jitterlab()
            .arg("sweep")
            .arg(&trace)
            .args(["--sweep", "fixed:delay=0..200ms/50ms", "-q", flag, n, "-o"])
            .arg(&out)
            .assert()
            .success();
        rows.push(std::fs::read_to_string(&out).unwrap());
    }
    assert_eq!(rows[0], rows[1]);
    assert_eq!(rows[0].lines().count(), 6, "{}", rows[0]);
}

/// Write errors name the file (or stdout), and the command exits 2.
#[test]
fn io_errors_name_their_path() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full here");
        return;
    }
    let csv = fixtures().join("contracts/c07_seed000_interpolate.csv");
    let runs: Vec<Vec<std::ffi::OsString>> = vec![
        vec!["synth".into(), "-o".into(), "/dev/full".into()],
        vec!["import".into(), csv.into(), "-o".into(), "/dev/full".into()],
    ];
    for args in runs {
        let out = jitterlab().args(&args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("error: cannot write /dev/full: No space left on device"),
            "{args:?}: {err}"
        );
    }
    // A directory that does not exist: the path, once.
    let dir = tempfile::tempdir().unwrap();
    let trace = synth(dir.path(), "t.jtr", "delay=20ms");
    let rows = dir.path().join("missing/rows.csv");
    let out = jitterlab()
        .arg("sweep")
        .arg(&trace)
        .args(["--sweep", "fixed:delay=50ms", "-q", "-o"])
        .arg(&rows)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("No such file or directory"), "{err}");
    assert_eq!(err.matches(&rows.display().to_string()).count(), 1, "{err}");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Process::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .args(["synth", "--list-profiles"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error: cannot write to stdout: No space left on device"),
        "{}",
        stderr(&out)
    );
}

/// A command that fails leaves no output file behind: not the final name, not a temporary.
#[test]
fn a_failed_command_creates_no_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The capture is corrupt past its first record: import has started its output by then.
    let mut pcap = Vec::new();
    for v in [
        0xa1b2_c3d4u32.to_le_bytes().to_vec(),
        vec![2, 0, 4, 0],
        vec![0; 8],
        65_535u32.to_le_bytes().to_vec(),
        1u32.to_le_bytes().to_vec(),
    ] {
        pcap.extend(v);
    }
    for v in [1u32, 0, 0x7fff_ffff, 0x7fff_ffff] {
        pcap.extend(v.to_le_bytes());
    }
    std::fs::write(d.join("bad.pcap"), &pcap).unwrap();
    let out = jitterlab()
        .current_dir(d)
        .args(["import", "bad.pcap", "-o", "out.jtr"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad.pcap"), "{}", stderr(&out));
    // A bad value found after parsing (the model's key), and a synth refused by its config.
    for args in [
        &["synth", "-o", "out.jtr", "--model", "wobble=3"][..],
        &["synth", "-o", "out.jtr", "--rate", "0"],
        &[
            "sweep",
            "missing.jtr",
            "--sweep",
            "fixed:delay=50ms",
            "-o",
            "rows.csv",
        ],
    ] {
        let out = jitterlab().current_dir(d).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    let left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["bad.pcap".to_owned()], "left behind: {left:?}");
}

/// `capture` on an address it cannot bind fails before recording, and leaves no file.
#[cfg(feature = "live")]
#[test]
fn capture_that_cannot_bind_leaves_no_file() {
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = jitterlab()
        .current_dir(dir.path())
        .args([
            "capture",
            "--listen",
            &port,
            "--duration",
            "1s",
            "-o",
            "c.jtr",
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot listen on 127.0.0.1:"), "{err}");
    assert_eq!(err.matches("in use").count(), 1, "said once: {err}");
    assert!(!dir.path().join("c.jtr").exists(), "{err}");
    drop(taken);
}
