//! Real sockets on loopback: `jitterlab send` through `jitterlab capture --forward --impair`
//! into `jitterlab capture`, each a real process stopped with a real signal.

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use jitterlab_capture::decode::probe::Probe;
use jitterlab_capture::trace::{CaptureStats, Direction, RecordKind, flags};
use jitterlab_capture::{Reader, Record};
use nix::sys::resource::{Resource, getrlimit, setrlimit};

use crate::util::json;

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("jitterlab")
}

/// A free loopback UDP port (bound and released; the OS does not hand it out again at once).
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(args: &[&str]) -> Child {
    Command::new(bin())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Starts `jitterlab capture --listen PORT [extra…] -o OUT` and waits until it is listening.
fn start_capture(port: u16, out: &Path, extra: &[&str]) -> Child {
    let mut args = vec!["capture", "--listen"];
    let port = port.to_string();
    args.push(&port);
    args.extend_from_slice(extra);
    args.extend(["-o", out.to_str().unwrap()]);
    let child = spawn(&args);
    wait_for(out);
    child
}

/// Waits for a capture to bind: its output file appears once the socket is up.
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
    std::thread::sleep(Duration::from_millis(200));
}

/// Sends SIGINT and returns the process's stderr.
fn interrupt(child: Child) -> String {
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

fn records(path: &Path) -> Vec<Record> {
    let mut r = Reader::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.read_record().unwrap() {
        out.push(rec);
    }
    assert_eq!(r.trailing_bytes(), 0, "{} ended mid-record", path.display());
    out
}

fn ticks<'a>(recs: impl Iterator<Item = &'a Record>) -> BTreeMap<u64, usize> {
    let mut m = BTreeMap::new();
    for r in recs {
        *m.entry(Probe::parse(&r.payload).unwrap().tick).or_insert(0) += 1;
    }
    m
}

/// The acceptance test: 20,000 probes at 2,000/s through the relay with
/// `loss=5%,seed=1`; the listener's trace holds exactly the sender's log minus what the relay
/// recorded as dropped, and `info` reports that loss.
#[test]
fn relay_with_loss_delivers_exactly_the_log_minus_the_drops() {
    let dir = tempfile::tempdir().unwrap();
    let (p_listen, p_relay) = (free_port(), free_port());
    let (listen_out, relay_out, log) = (
        dir.path().join("listen.jtr"),
        dir.path().join("relay.jtr"),
        dir.path().join("sender.jtr"),
    );
    let listener = start_capture(p_listen, &listen_out, &[]);
    let forward = p_listen.to_string();
    let relay = start_capture(
        p_relay,
        &relay_out,
        &["--forward", &forward, "--impair", "loss=5%,seed=1"],
    );
    send_probes(p_relay, 2_000, 10, 0, &log);
    std::thread::sleep(Duration::from_millis(500));
    let relay_err = interrupt(relay);
    let listen_err = interrupt(listener);
    assert!(
        listen_err.contains("captured 2") || listen_err.contains("captured 1"),
        "{listen_err}"
    );

    let sender = records(&log);
    let relay = records(&relay_out);
    let listen = records(&listen_out);
    let logged = ticks(sender.iter().filter(|r| r.kind() == RecordKind::Sent));
    assert_eq!(logged.len(), 20_000);
    // The relay's ground truth is every datagram it took in; its receptions are what it sent on.
    let ingress = ticks(relay.iter().filter(|r| r.kind() == RecordKind::Sent));
    let forwarded = ticks(relay.iter().filter(|r| r.kind() == RecordKind::Received));
    assert_eq!(ingress, logged, "loopback lost nothing before the relay");
    let dropped: Vec<u64> = ingress
        .keys()
        .filter(|t| !forwarded.contains_key(t))
        .copied()
        .collect();
    let rate = dropped.len() as f64 / 20_000.0;
    assert!((0.04..0.06).contains(&rate), "relay dropped {rate}");
    let captured = ticks(listen.iter().filter(|r| r.kind() == RecordKind::Received));
    assert_eq!(
        captured, forwarded,
        "the listener holds exactly what the relay forwarded"
    );
    let mut expect = logged.clone();
    for t in &dropped {
        expect.remove(t);
    }
    assert_eq!(captured, expect);
    assert!(
        relay
            .iter()
            .all(|r| r.kind() == RecordKind::Stats || r.direction() == Direction::ToUpstream)
    );
    assert!(
        listen
            .iter()
            .filter(|r| r.kind() == RecordKind::Received)
            .all(|r| r.flags & flags::KERNEL_TIMESTAMP != 0)
    );
    assert!(
        relay_err.contains(&format!("impairment dropped {}", dropped.len())),
        "{relay_err}"
    );

    // `info` reports that loss (inside the received range; edge losses are invisible to any
    // receiver without the log).
    let info = json(&["info".as_ref(), "--json".as_ref(), listen_out.as_os_str()]);
    let (first, last) = (
        captured.keys().next().unwrap(),
        captured.keys().last().unwrap(),
    );
    let inside = dropped.iter().filter(|t| *t > first && *t < last).count();
    assert_eq!(
        info["streams"][0]["lost"].as_u64().unwrap() as usize,
        inside
    );
    assert_eq!(
        info["capture_stats"]["received"].as_u64().unwrap() as usize,
        20_000 - dropped.len()
    );
    assert_eq!(info["capture_stats"]["ended_cleanly"], true);
}

/// A real client and a real server (an echo) on either side of the relay: both directions are
/// forwarded and recorded with their direction.
#[test]
fn relay_forwards_and_records_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let echo = UdpSocket::bind("127.0.0.1:0").unwrap();
    let echo_port = echo.local_addr().unwrap().port();
    echo.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let server = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut n = 0;
        let start = Instant::now();
        while n < 200 && start.elapsed() < Duration::from_secs(20) {
            if let Ok((len, from)) = echo.recv_from(&mut buf) {
                echo.send_to(&buf[..len], from).unwrap();
                n += 1;
            }
        }
        n
    });
    let p_relay = free_port();
    let out = dir.path().join("relay.jtr");
    let forward = echo_port.to_string();
    let relay = start_capture(p_relay, &out, &["--forward", &forward]);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect(("127.0.0.1", p_relay)).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut buf = [0u8; 64];
    for i in 0..200u32 {
        client.send(&i.to_be_bytes()).unwrap();
        let n = client.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], &i.to_be_bytes(), "echo through the relay");
    }
    assert_eq!(server.join().unwrap(), 200);
    interrupt(relay);
    let recs = records(&out);
    let up = recs
        .iter()
        .filter(|r| r.direction() == Direction::ToUpstream)
        .count();
    let down = recs
        .iter()
        .filter(|r| r.direction() == Direction::ToClient)
        .count();
    assert_eq!((up, down), (200, 200));
    let client_addr = client.local_addr().unwrap();
    assert!(
        recs.iter()
            .filter(|r| r.direction() == Direction::ToClient)
            .all(|r| r.dst.unwrap().0 == client_addr)
    );
}

/// A server that goes away: datagrams the relay forwards to a closed port are refused (ICMP
/// port unreachable, reported on the relay's next receive); the relay counts them and keeps
/// recording instead of stopping.
#[test]
fn relay_counts_a_closed_upstream_and_keeps_recording() {
    let dir = tempfile::tempdir().unwrap();
    let closed = free_port();
    let p_relay = free_port();
    let out = dir.path().join("relay.jtr");
    let relay = start_capture(p_relay, &out, &["--forward", &closed.to_string()]);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    for i in 0..20u32 {
        client
            .send_to(&i.to_be_bytes(), ("127.0.0.1", p_relay))
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let err = interrupt(relay);
    assert!(err.contains("sends refused by the kernel"), "{err}");
    let up = records(&out)
        .iter()
        .filter(|r| r.direction() == Direction::ToUpstream)
        .count();
    assert_eq!(up, 20, "every datagram recorded: {err}");
}

/// Ctrl-C and SIGTERM both finish the file cleanly with a summary.
#[test]
fn capture_sigterm_and_sigint_finish_cleanly() {
    for signal in ["-INT", "-TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let out = dir.path().join("c.jtr");
        let child = start_capture(port, &out, &[]);
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        for i in 0..50u8 {
            sock.send_to(&[i; 20], ("127.0.0.1", port)).unwrap();
        }
        std::thread::sleep(Duration::from_millis(300));
        Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        let res = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(
            res.status.success() && err.contains("captured 50 datagrams"),
            "{signal}: {err}"
        );
        let recs = records(&out);
        assert_eq!(
            recs.iter()
                .filter(|r| r.kind() == RecordKind::Received)
                .count(),
            50
        );
        let last = recs.last().unwrap();
        assert_eq!(last.kind(), RecordKind::Stats);
        assert!(CaptureStats::from_record(last).unwrap().last);
    }
}

/// --count stops the capture by itself; the status of each datagram's clock is recorded.
#[test]
fn capture_count_stops_and_keeps_payload_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = dir.path().join("c.jtr");
    let child = spawn(&[
        "capture",
        "--listen",
        &port.to_string(),
        "-o",
        out.to_str().unwrap(),
        "--count",
        "10",
        "--snaplen",
        "8",
    ]);
    wait_for(&out);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..10 {
        sock.send_to(&[7u8; 100], ("127.0.0.1", port)).unwrap();
    }
    let res = child.wait_with_output().unwrap();
    assert!(res.status.success());
    let recs: Vec<_> = records(&out)
        .into_iter()
        .filter(|r| r.kind() == RecordKind::Received)
        .collect();
    assert_eq!(recs.len(), 10);
    assert!(
        recs.iter()
            .all(|r| r.payload.len() == 8 && r.orig_len == 100 && r.is_truncated())
    );
    assert!(recs.windows(2).all(|w| w[0].time <= w[1].time));
}

/// An existing output is refused without --force, before anything is received.
#[test]
fn capture_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.jtr");
    std::fs::write(&out, b"precious").unwrap();
    let res = Command::new(bin())
        .args(["capture", "--listen", &free_port().to_string(), "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("already exists"));
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
}

/// A real RTP source: GStreamer's `rtppcmupay` sends 100 G.711 packets of 20 ms to
/// `jitterlab capture`; the trace holds exactly what such a source sends. Skipped (with a
/// message) where `gst-launch-1.0` is not installed, unless `JITTERLAB_REQUIRE_PEERS` is set
/// (as `.ci/run` does after installing it).
#[test]
fn capture_a_real_gstreamer_rtp_source() {
    let have = Command::new("gst-launch-1.0")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
            "JITTERLAB_REQUIRE_PEERS is set but gst-launch-1.0 is not installed"
        );
        eprintln!(
            "skipped: gst-launch-1.0 is not installed (apt-get install gstreamer1.0-tools gstreamer1.0-plugins-good)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = dir.path().join("gst.jtr");
    let child = spawn(&[
        "capture",
        "--listen",
        &port.to_string(),
        "-o",
        out.to_str().unwrap(),
        "--count",
        "100",
    ]);
    wait_for(&out);
    let status = Command::new("gst-launch-1.0")
        .args([
            "-q",
            "audiotestsrc",
            "is-live=true",
            "num-buffers=100",
            "samplesperbuffer=160",
            "!",
        ])
        .args(["audio/x-raw,rate=8000,channels=1", "!", "mulawenc", "!"])
        .args([
            "rtppcmupay",
            "min-ptime=20000000",
            "max-ptime=20000000",
            "!",
        ])
        .args(["udpsink", "host=127.0.0.1", &format!("port={port}")])
        .status()
        .unwrap();
    assert!(status.success());
    let res = child.wait_with_output().unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let info = json(&["info".as_ref(), "--json".as_ref(), out.as_os_str()]);
    let s = &info["streams"][0];
    assert_eq!(info["streams"].as_array().unwrap().len(), 1);
    assert_eq!(
        (
            s["packets"].as_u64(),
            s["lost"].as_u64(),
            s["duplicates"].as_u64()
        ),
        (Some(100), Some(0), Some(0))
    );
    assert_eq!(
        (s["payload_type"].as_u64(), s["clock_rate"].as_u64()),
        (Some(0), Some(8000))
    );
    // 20 ms packets paced in real time: at least about 2 s from first to last (pacing cannot
    // run ahead of the clock; how far a loaded machine lets it fall behind, and the jitter
    // that makes, are printed, not asserted: no timed assertions in tests).
    let secs = s["duration_s"].as_f64().unwrap();
    assert!(secs >= 1.8, "{secs}");
    let jitter = s["jitter_ms"]["max"].as_f64().unwrap();
    assert!(jitter.is_finite() && jitter >= 0.0, "{jitter}");
    eprintln!("live GStreamer source: {secs:.3} s, max jitter {jitter:.3} ms");
    // Every packet: 12-byte header + 160 µ-law bytes, timestamps 160 apart.
    let recs: Vec<_> = records(&out)
        .into_iter()
        .filter(|r| r.kind() == RecordKind::Received)
        .collect();
    let ts: Vec<u32> = recs
        .iter()
        .map(|r| u32::from_be_bytes(r.payload[4..8].try_into().unwrap()))
        .collect();
    assert!(recs.iter().all(|r| r.payload.len() == 172));
    assert!(ts.windows(2).all(|w| w[1].wrapping_sub(w[0]) == 160));
}

/// Crash safety: a capture killed with SIGKILL at random moments (20 times) leaves a file that
/// reads back and holds every datagram sent more than 100 ms (plus 20 ms of scheduling slack)
/// before the kill.
#[test]
fn capture_survives_sigkill_losing_at_most_the_last_100ms() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = jitterlab_capture::synth::Rng::new(42);
    for round in 0..20 {
        let port = free_port();
        let out = dir.path().join(format!("kill{round}.jtr"));
        let child = start_capture(port, &out, &[]);
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let start = Instant::now();
        let run_for = Duration::from_millis(200 + (rng.uniform() * 600.0) as u64);
        let mut sent: Vec<(u64, Instant)> = Vec::new();
        let mut tick = 0u64;
        while start.elapsed() < run_for {
            sock.send_to(&tick.to_be_bytes(), ("127.0.0.1", port))
                .unwrap();
            sent.push((tick, Instant::now()));
            tick += 1;
            std::thread::sleep(Duration::from_millis(1));
        }
        let killed_at = Instant::now();
        Command::new("kill")
            .args(["-KILL", &child.id().to_string()])
            .status()
            .unwrap();
        let res = child.wait_with_output().unwrap();
        assert!(
            !res.status.success(),
            "round {round}: the capture was not killed"
        );
        let mut reader = Reader::new(std::fs::File::open(&out).unwrap())
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        let mut got = std::collections::HashSet::new();
        while let Some(rec) = reader
            .read_record()
            .unwrap_or_else(|e| panic!("round {round}: {e}"))
        {
            if rec.kind() == RecordKind::Received {
                got.insert(u64::from_be_bytes(rec.payload[..8].try_into().unwrap()));
            }
        }
        let deadline = killed_at - Duration::from_millis(120);
        let missing: Vec<u64> = sent
            .iter()
            .filter(|(t, at)| *at < deadline && !got.contains(t))
            .map(|(t, _)| *t)
            .collect();
        assert!(
            missing.is_empty(),
            "round {round}: {} datagrams older than 100 ms lost, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(5)]
        );
        assert!(got.len() <= sent.len());
    }
}

/// A disk that fills during a capture (here a file-size limit, which fails writes the same
/// way a full disk does): the capture stops at once with an error naming the file and what it
/// holds, exit code 2, and the file reads back: every complete record is a datagram that was
/// sent, in the order sent, with none missing before the failure.
#[test]
fn capture_on_a_full_disk_stops_with_a_clear_error_and_a_readable_file() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = dir.path().join("full.jtr");
    // Ignore SIGXFSZ so the write fails with EFBIG instead of killing the process.
    let script = format!(
        "trap '' XFSZ; ulimit -f 32; exec \"$0\" capture --listen {port} -o \"$1\" --duration 30s"
    );
    let mut child = Command::new("bash")
        .args(["-c", &script])
        .arg(bin())
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&out);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let start = Instant::now();
    let mut sent = 0u32;
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "capture never failed"
        );
        let mut payload = vec![0u8; 200];
        payload[..4].copy_from_slice(&sent.to_be_bytes());
        // Refused once the capture is gone; that is the end we wait for.
        let _ = sock.send_to(&payload, ("127.0.0.1", port));
        sent += 1;
        if sent.is_multiple_of(50) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let res = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(2), "{err}");
    assert!(err.contains(out.to_str().unwrap()), "{err}");
    assert!(err.contains("records written before the failure"), "{err}");
    assert!(std::fs::metadata(&out).unwrap().len() <= 32 * 1024);
    let mut reader = Reader::new(std::fs::File::open(&out).unwrap()).unwrap();
    let mut counters = Vec::new();
    while let Some(rec) = reader.read_record().unwrap() {
        if rec.kind() == RecordKind::Received {
            counters.push(u32::from_be_bytes(rec.payload[..4].try_into().unwrap()));
        }
    }
    assert!(
        counters.len() > 50,
        "only {} records survived",
        counters.len()
    );
    let expected: Vec<u32> = (0..counters.len() as u32).collect();
    assert_eq!(
        counters, expected,
        "the file must be the sent datagrams, in order"
    );
}

/// Outputs that cannot be written at all are refused at start, exit code 2: a directory that
/// does not exist, a path through a file, and a device that is always full (`--force` lets
/// the capture open it; the first flush fails).
#[test]
fn capture_unwritable_outputs_are_an_error_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let cases = [
        (dir.path().join("missing/c.jtr"), "cannot create"),
        (file.join("c.jtr"), "cannot create"),
        (
            Path::new("/dev/full").to_path_buf(),
            "No space left on device",
        ),
    ];
    for (out, expect) in cases {
        let res = Command::new(bin())
            .args(["capture", "--listen", &free_port().to_string(), "--force"])
            .args(["--duration", "10s", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(2), "{}: {err}", out.display());
        assert!(err.contains(expect), "{}: {err}", out.display());
    }
}

/// The last stats record of a capture: the counters it ended with.
fn final_stats(recs: &[Record]) -> CaptureStats {
    let last = recs
        .iter()
        .rev()
        .find(|r| r.kind() == RecordKind::Stats)
        .expect("a stats record");
    let stats = CaptureStats::from_record(last).unwrap();
    assert!(stats.last, "the capture did not end cleanly");
    stats
}

/// `jitterlab send` of probes padded to `size` bytes (0: unpadded) at `rate` for `secs`,
/// logged into `log`.
fn send_probes(port: u16, rate: u32, secs: u32, size: u32, log: &Path) {
    let sent = Command::new(bin())
        .args([
            "send",
            "--to",
            &port.to_string(),
            "--size",
            &size.to_string(),
        ])
        .args([
            "--rate",
            &rate.to_string(),
            "--duration",
            &format!("{secs}s"),
        ])
        .arg("--log")
        .arg(log)
        .output()
        .unwrap();
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
}

/// The soak, cut to CI's size (`bench/soak.sh capture` runs 100,000/s for 60 s): under a
/// steady 20,000 datagrams/s every datagram the socket received is in the file, the queue
/// between socket and writer dropped none, and every datagram sent is either in the file or
/// a drop the kernel reported.
#[test]
fn capture_under_load_loses_nothing_between_socket_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (out, log) = (dir.path().join("c.jtr"), dir.path().join("sender.jtr"));
    let child = start_capture(port, &out, &[]);
    send_probes(port, 20_000, 2, 200, &log);
    std::thread::sleep(Duration::from_millis(300));
    interrupt(child);
    let sent = ticks(
        records(&log)
            .iter()
            .filter(|r| r.kind() == RecordKind::Sent),
    );
    let recs = records(&out);
    let stats = final_stats(&recs);
    let got = ticks(recs.iter().filter(|r| r.kind() == RecordKind::Received));
    assert_eq!(stats.queue_drops, 0);
    assert_eq!(got.values().sum::<usize>() as u64, stats.received);
    assert!(got.values().all(|&n| n == 1), "no datagram twice");
    assert!(got.keys().all(|t| sent.contains_key(t)));
    assert_eq!(sent.len() as u64, stats.received + stats.kernel_drops);
    assert!(sent.len() > 30_000, "the sender sent only {}", sent.len());
}

/// The relay under load, cut to CI's size (`bench/soak.sh relay` runs 100,000/s for 60 s):
/// with `--impair delay=1ms` the relay records both legs, a Sent record as each datagram comes
/// in and a Received record as it leaves; none is lost inside the relay, and the listener
/// holds every one the relay sent but those its kernel reported dropping.
#[test]
fn relay_under_load_forwards_every_datagram_and_records_both_legs() {
    let dir = tempfile::tempdir().unwrap();
    let (p_listen, p_relay) = (free_port(), free_port());
    let out = |name: &str| dir.path().join(name);
    let listener = start_capture(p_listen, &out("listen.jtr"), &[]);
    let forward = p_listen.to_string();
    let relay = start_capture(
        p_relay,
        &out("relay.jtr"),
        &["--forward", &forward, "--impair", "delay=1ms"],
    );
    send_probes(p_relay, 10_000, 2, 200, &out("sender.jtr"));
    std::thread::sleep(Duration::from_millis(300));
    let relay_err = interrupt(relay);
    interrupt(listener);
    let sent = ticks(
        records(&out("sender.jtr"))
            .iter()
            .filter(|r| r.kind() == RecordKind::Sent),
    );
    let relay = records(&out("relay.jtr"));
    let relay_stats = final_stats(&relay);
    let ingress = ticks(relay.iter().filter(|r| r.kind() == RecordKind::Sent));
    let egress = ticks(relay.iter().filter(|r| r.kind() == RecordKind::Received));
    assert_eq!(relay_stats.queue_drops, 0);
    assert_eq!(ingress.len() as u64, relay_stats.received);
    assert_eq!(
        sent.len() as u64,
        relay_stats.received + relay_stats.kernel_drops
    );
    assert_eq!(egress, ingress, "nothing lost inside the relay");
    assert!(
        relay_err.contains(&format!("relay forwarded {}", egress.len())),
        "{relay_err}"
    );
    let listen = records(&out("listen.jtr"));
    let listen_stats = final_stats(&listen);
    let captured = ticks(listen.iter().filter(|r| r.kind() == RecordKind::Received));
    assert!(captured.keys().all(|t| egress.contains_key(t)));
    assert_eq!(
        captured.len() as u64 + listen_stats.kernel_drops,
        egress.len() as u64
    );
    assert!(sent.len() > 15_000, "the sender sent only {}", sent.len());
}

/// 1,000 senders on distinct source ports into one listener at once, each an RTP stream of
/// its own with its own gaps: `info` reports 1,000 streams, each with exactly its packets and
/// its losses.
#[test]
fn a_thousand_concurrent_senders_keep_their_own_statistics() {
    const SENDERS: usize = 1_000;
    const PACKETS: u16 = 20;
    // Raise the soft open-file limit to the hard one: 1,000 sockets need more than the
    // common default of 1,024 descriptors leaves spare.
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let want = hard.min(4_096);
    setrlimit(Resource::RLIMIT_NOFILE, want, hard).unwrap();
    assert!(want > SENDERS as u64 + 64, "open-file limit {want} too low");
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = dir.path().join("many.jtr");
    let child = start_capture(port, &out, &["--decoder", "rtp"]);
    let socks: Vec<UdpSocket> = (0..SENDERS)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    // Sender i skips sequence number 5 when i % 3 == 0 and 7..=9 when i % 5 == 0.
    let skipped = |i: usize, seq: u16| {
        (i.is_multiple_of(3) && seq == 5) || (i.is_multiple_of(5) && (7..=9).contains(&seq))
    };
    let mut expected = BTreeMap::new();
    for seq in 0..PACKETS {
        for (i, sock) in socks.iter().enumerate() {
            let src_port = sock.local_addr().unwrap().port();
            let e = expected.entry(src_port).or_insert((0u64, 0u64));
            if skipped(i, seq) {
                e.1 += 1;
                continue;
            }
            let mut pkt = vec![0u8; 12 + 160];
            pkt[0] = 0x80;
            pkt[2..4].copy_from_slice(&(1_000 + seq).to_be_bytes());
            pkt[4..8].copy_from_slice(&(u32::from(seq) * 160).to_be_bytes());
            pkt[8..12].copy_from_slice(&(i as u32 + 1).to_be_bytes());
            sock.send_to(&pkt, ("127.0.0.1", port)).unwrap();
            e.0 += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    interrupt(child);
    let recs = records(&out);
    assert_eq!(final_stats(&recs).kernel_drops, 0);
    let info = json(&["info".as_ref(), "--json".as_ref(), out.as_os_str()]);
    let streams = info["streams"].as_array().unwrap();
    assert_eq!(streams.len(), SENDERS);
    for s in streams {
        let src = s["src"].as_str().unwrap();
        let port: u16 = src.rsplit(':').next().unwrap().parse().unwrap();
        let (packets, lost) = expected[&port];
        assert_eq!(s["packets"].as_u64().unwrap(), packets, "{src}");
        assert_eq!(s["lost"].as_u64().unwrap(), lost, "{src}");
    }
}

/// The relay talks to its configured upstream only: a stranger who learns the port of a
/// client's upstream socket cannot inject through it (the socket is connected to the
/// upstream, so the kernel discards the datagram), and nothing the stranger sends is recorded
/// or reaches the client; replies from the real upstream do.
#[test]
fn relay_accepts_replies_only_from_its_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let p_relay = free_port();
    let out = dir.path().join("relay.jtr");
    let upstream = server.local_addr().unwrap().to_string();
    let relay = start_capture(p_relay, &out, &["--forward", &upstream]);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    client.send_to(b"hello", ("127.0.0.1", p_relay)).unwrap();
    let mut buf = [0u8; 64];
    let (n, upstream_sock) = server.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"hello");
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..5 {
        stranger.send_to(b"evil", upstream_sock).unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    server.send_to(b"pong", upstream_sock).unwrap();
    let (n, from) = client.recv_from(&mut buf).unwrap();
    assert_eq!((&buf[..n], from.port()), (&b"pong"[..], p_relay));
    assert!(
        client.recv_from(&mut buf).is_err(),
        "the client got a second datagram"
    );
    std::thread::sleep(Duration::from_millis(200));
    interrupt(relay);
    let recs = records(&out);
    assert!(recs.iter().all(|r| r.payload != b"evil"));
    let payloads: Vec<&[u8]> = recs
        .iter()
        .filter(|r| r.kind() == RecordKind::Received)
        .map(|r| r.payload.as_slice())
        .collect();
    assert_eq!(payloads, [&b"hello"[..], &b"pong"[..]]);
}
