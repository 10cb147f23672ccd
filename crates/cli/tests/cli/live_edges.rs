//! The live commands' edges: host names resolve (`localhost:PORT` for `--listen`, `--forward`
//! and `--to`), nothing is announced before its socket is up, and a command that fails before
//! recording anything leaves no output file.

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use jitterlab_capture::RecordKind;
use jitterlab_capture::decode::probe::Probe;

use crate::peers::{free_port, interrupt, records};

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("jitterlab")
}

fn run(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

fn spawn(args: &[&str]) -> Child {
    Command::new(bin())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (at most 10 s) until a capture's output exists, which it does once its socket is up.
fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The failure as printed: exit code 2 and exactly one line on stderr.
fn one_line_failure(res: &Output) -> String {
    let err = String::from_utf8_lossy(&res.stderr).into_owned();
    assert_eq!(res.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

/// `capture --listen` on a port already taken: exit code 2, one line naming the address, no
/// "capturing on" announcement, and no output file (an existing one given with `--force` is
/// left as it was); the same for the relay.
#[test]
fn capture_on_an_address_in_use_announces_nothing_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let busy = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let out = dir.path().join("c.jtr");
    let kept = dir.path().join("kept.jtr");
    std::fs::write(&kept, b"precious").unwrap();
    let upstream = free_port().to_string();
    let cases: [(&[&str], &Path); 3] = [
        (&[], &out),
        (&["--force"], &kept),
        (&["--forward", &upstream, "--impair", "loss=5%"], &out),
    ];
    for (extra, path) in cases {
        let mut args = vec!["capture", "--listen", &addr, "-o", path.to_str().unwrap()];
        args.extend_from_slice(extra);
        let err = one_line_failure(&run(&args));
        assert!(
            err.starts_with(&format!("error: cannot listen on {addr}: ")),
            "{extra:?}: {err}"
        );
        assert!(!err.contains("capturing on"), "{err}");
        assert!(!out.exists(), "{extra:?}: {} was created", out.display());
        assert_eq!(std::fs::read(&kept).unwrap(), b"precious");
    }
}

/// A destination that cannot be sent to (the broadcast address, which needs SO_BROADCAST):
/// `send` fails naming it, before its log exists.
#[test]
fn send_to_an_unreachable_destination_creates_no_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jtr");
    let err = one_line_failure(&run(&[
        "send",
        "--to",
        "255.255.255.255:9",
        "--duration",
        "1s",
        "--log",
        log.to_str().unwrap(),
    ]));
    assert!(
        err.starts_with("error: cannot send to 255.255.255.255:9: "),
        "{err}"
    );
    assert!(!log.exists(), "the log was created");
}

/// A host name that does not resolve is one line naming the host, and nothing is created.
#[test]
fn unknown_hosts_are_named_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.jtr");
    let port = free_port().to_string();
    let host = "no-such-host.invalid:7777";
    let runs: [(Vec<&str>, &str); 3] = [
        (
            vec!["capture", "--listen", &port, "--forward", host],
            "--forward",
        ),
        (vec!["capture", "--listen", host], "--listen"),
        (vec!["send", "--to", host, "--log"], "--to"),
    ];
    for (mut args, flag) in runs {
        if args[0] == "capture" {
            args.push("-o");
        }
        args.push(out.to_str().unwrap());
        let err = one_line_failure(&run(&args));
        assert!(
            err.starts_with(&format!(
                "error: {flag} {host}: cannot resolve host 'no-such-host.invalid': "
            )),
            "{err}"
        );
        assert!(!out.exists());
    }
}

/// `localhost:PORT` works for all three: a listener on `--listen localhost:P`, a relay
/// forwarding to `localhost:P`, and `send --to localhost:R`; every probe arrives, and the
/// relay names the host and the address it resolved to.
#[test]
fn host_names_resolve_for_listen_forward_and_to() {
    let dir = tempfile::tempdir().unwrap();
    let (p_listen, p_relay) = (free_port(), free_port());
    let (listen_out, relay_out) = (dir.path().join("listen.jtr"), dir.path().join("relay.jtr"));
    let listen = format!("localhost:{p_listen}");
    let listener = spawn(&[
        "capture",
        "--listen",
        &listen,
        "--count",
        "50",
        "-o",
        listen_out.to_str().unwrap(),
    ]);
    wait_for(&listen_out);
    let relay = spawn(&[
        "capture",
        "--listen",
        &p_relay.to_string(),
        "--forward",
        &listen,
        "-o",
        relay_out.to_str().unwrap(),
    ]);
    wait_for(&relay_out);
    std::thread::sleep(Duration::from_millis(200));
    let sent = run(&[
        "send",
        "--to",
        &format!("localhost:{p_relay}"),
        "--rate",
        "500",
        "--duration",
        "100ms",
    ]);
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    // The listener stops by itself after 50 datagrams; bounded, so a lost one fails the test
    // instead of hanging it.
    let mut listener = listener;
    let start = Instant::now();
    while listener.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = listener.kill();
            panic!("the listener never got its 50 datagrams");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let res = listener.wait_with_output().unwrap();
    let listen_err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{listen_err}");
    assert!(
        listen_err.starts_with(&format!("capturing on 127.0.0.1:{p_listen} into ")),
        "{listen_err}"
    );
    let relay_err = interrupt(relay);
    assert!(
        relay_err.contains(&format!(
            "relaying to localhost:{p_listen} (127.0.0.1:{p_listen})"
        )),
        "{relay_err}"
    );
    let ticks: Vec<u64> = records(&listen_out)
        .iter()
        .filter(|r| r.kind() == RecordKind::Received)
        .map(|r| Probe::parse(&r.payload).unwrap().tick)
        .collect();
    assert_eq!(ticks, (0..50).collect::<Vec<_>>());
}

/// A capture or a send whose very first write fails (a file-size limit of 0, which fails
/// writes as a full disk does) stops with exit code 2, names the file, and leaves no file.
#[test]
fn a_failure_before_anything_is_recorded_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.jtr");
    let port = free_port();
    // Ignore SIGXFSZ so the write fails with EFBIG instead of killing the process.
    let runs = [
        format!("capture --listen {port} --duration 5s -o"),
        format!("send --to {port} --duration 100ms --log"),
    ];
    for command in runs {
        let script = format!("trap '' XFSZ; ulimit -f 0; exec \"$0\" {command} \"$1\"");
        let res = Command::new("bash")
            .args(["-c", &script])
            .arg(bin())
            .arg(&out)
            .output()
            .unwrap();
        let err = one_line_failure(&res);
        assert!(err.contains(out.to_str().unwrap()), "{command}: {err}");
        assert!(err.contains("no file left"), "{command}: {err}");
        assert!(
            !out.exists(),
            "{command}: {} was left behind",
            out.display()
        );
    }
}
