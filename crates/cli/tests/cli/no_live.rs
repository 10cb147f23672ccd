//! A build without the `live` feature (`cargo test -p jitterlab --no-default-features`, as
//! `.ci/run` does): `capture` and `send` are still commands, listed as not in this build, and
//! each says in one line that this build has no live capture, exit code 2, creating nothing.

use std::process::Command;

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("jitterlab")
}

#[test]
fn capture_and_send_say_this_build_has_no_live_capture() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.jtr");
    let log = dir.path().join("s.jtr");
    let runs = [
        (
            vec!["capture", "--listen", "5004", "-o", out.to_str().unwrap()],
            "capture",
        ),
        (
            vec!["send", "--to", "5004", "--log", log.to_str().unwrap()],
            "send",
        ),
    ];
    for (args, command) in runs {
        let res = Command::new(bin()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!(
                "error: {command}: this jitterlab was built without live capture"
            )),
            "{err}"
        );
        let help = Command::new(bin())
            .args([command, "--help"])
            .output()
            .unwrap();
        assert!(help.status.success());
        assert!(
            String::from_utf8_lossy(&help.stdout).contains("built without the `live` feature"),
            "{command} --help"
        );
    }
    assert!(!out.exists() && !log.exists());
    let help = Command::new(bin()).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for command in ["capture", "send"] {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(command))
            .unwrap_or_else(|| panic!("{command} missing from --help: {help}"));
        assert!(line.contains("Not in this build"), "{line}");
    }
}
