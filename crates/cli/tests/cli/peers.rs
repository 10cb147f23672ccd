//! What the tests against real peers share: the peers' folder, whether a Python module is
//! there (skip, or fail under `JITTERLAB_REQUIRE_PEERS`), the recording relay started and
//! stopped, dumpcap on loopback, and a trace's records.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use jitterlab_capture::{Reader, Record};

pub(crate) fn peers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers")
}

/// Whether `python3` can import `module`; skips (false) or fails under
/// `JITTERLAB_REQUIRE_PEERS` when it cannot.
pub(crate) fn have_python_module(module: &str, install: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
            "JITTERLAB_REQUIRE_PEERS is set but the Python module `{module}` is missing \
             ({install})"
        );
        eprintln!("skipped: the Python module `{module}` is not installed ({install})");
    }
    ok
}

pub(crate) fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The relay in front of `upstream`, impaired by `impair`; returns once it is listening.
pub(crate) fn start_relay(port: u16, upstream: u16, out: &Path, impair: &str) -> Child {
    let child = Command::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .args(["capture", "--listen", &port.to_string()])
        .args(["--forward", &format!("127.0.0.1:{upstream}")])
        .args(["--impair", impair])
        .arg("-o")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !out.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the relay never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    child
}

/// dumpcap (Wireshark's capture engine, from the tshark package) recording both legs of the
/// relay on loopback into a pcapng; `None` (skipped, with a message) where it is missing or
/// may not capture, unless `JITTERLAB_REQUIRE_PEERS` is set.
pub(crate) fn start_dumpcap(ports: [u16; 2], out: &Path) -> Option<Child> {
    let filter = format!("udp port {} or udp port {}", ports[0], ports[1]);
    let child = Command::new("dumpcap")
        .args(["-q", "-i", "lo", "-f", &filter, "-w"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            assert!(
                std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
                "JITTERLAB_REQUIRE_PEERS is set but dumpcap cannot start: {e}"
            );
            eprintln!("skipped the pcap leg: dumpcap cannot start ({e}; apt-get install tshark)");
            return None;
        }
    };
    let start = Instant::now();
    while !out.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            assert!(
                std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
                "JITTERLAB_REQUIRE_PEERS is set but dumpcap exited: {status}"
            );
            eprintln!("skipped the pcap leg: dumpcap may not capture here ({status})");
            return None;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "dumpcap never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The file exists once the capture is open; give the kernel filter a moment.
    std::thread::sleep(Duration::from_millis(300));
    Some(child)
}

/// Stops dumpcap with SIGINT, which makes it finish the file.
pub(crate) fn stop_dumpcap(child: Child) {
    std::thread::sleep(Duration::from_millis(200));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "dumpcap failed");
}

/// Stops the relay with SIGINT and returns its stderr (the summary).
pub(crate) fn interrupt(child: Child) -> String {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "capture failed: {err}");
    err
}

/// Stops the relay; returns how many datagrams its summary says the impairment dropped.
pub(crate) fn stop_relay(child: Child) -> usize {
    let err = interrupt(child);
    let tail = err
        .split("impairment dropped ")
        .nth(1)
        .unwrap_or_else(|| panic!("no 'impairment dropped' in the summary: {err}"));
    tail.split_whitespace().next().unwrap().parse().unwrap()
}

pub(crate) fn records(path: &Path) -> Vec<Record> {
    let mut r = Reader::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.read_record().unwrap() {
        out.push(rec);
    }
    out
}
