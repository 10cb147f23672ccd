//! External policies (`exec:CMD`): seed 000's JavaScript SnapshotBuffer, used as printed, passes
//! the seed's four tests through the protocol; children that crash, hang or lie give clear
//! errors naming the policy and the frame, within the timeout, in either framing (JSON Lines,
//! MessagePack); the same child gives the same replay over both. Tests that need `node`,
//! `python3` or Python's `msgpack` skip (saying so) without them, and fail under
//! `JITTERLAB_REQUIRE_PEERS`.

use jitterlab_capture::{Nanos, Sample};
use jitterlab_replay::{ClockMapping, Error, FrameClock, Mode, Policy, Replay, Stream};

const SEED000: &str = "examples/external/seed000_snapshot_buffer.mjs";

/// The repository root, where the examples are.
fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `program --version` runs; `false` (after saying so) when it does not, a panic under
/// `JITTERLAB_REQUIRE_PEERS`.
fn have(program: &str) -> bool {
    let ok = std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
            "JITTERLAB_REQUIRE_PEERS is set but {program} does not run (apt-get install nodejs)"
        );
        eprintln!("skipped: {program} is not installed");
    }
    ok
}

/// Whether Python's `msgpack` package imports; like [`have`].
fn have_msgpack() -> bool {
    if !have("python3") {
        return false;
    }
    let ok = std::process::Command::new("python3")
        .args(["-c", "import msgpack"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
            "JITTERLAB_REQUIRE_PEERS is set but Python's msgpack does not import (pip install msgpack)"
        );
        eprintln!("skipped: Python's msgpack is not installed (pip install msgpack)");
    }
    ok
}

fn mk(seq: i64, send_ms: i64, arrival_ms: i64, v: f64) -> Sample {
    Sample::new(
        0,
        seq,
        Nanos::from_millis(send_ms),
        Nanos::from_millis(arrival_ms),
    )
    .with_values(vec![v])
}

/// One frame: its mode, alpha and values.
type Shown = (Mode, Option<f64>, Vec<f64>);

/// Replays `samples` at frame times `at_ms` (sender clock = local clock) through `policy`:
/// each frame's mode, alpha and value.
fn replay(samples: &[Sample], at_ms: &[i64], policy: &str) -> Result<Vec<Shown>, Error> {
    let policy: Policy = policy.parse()?;
    let mut shown = Vec::new();
    let times = at_ms.iter().map(|&t| Nanos::from_millis(t)).collect();
    Replay::new(FrameClock::At(times))
        .clock(ClockMapping::Fixed(Nanos::ZERO))
        .stream(&Stream::new(samples), &policy, |f| {
            shown.push((f.mode, f.alpha, f.value.to_vec()))
        })?;
    Ok(shown)
}

fn seed000() -> String {
    format!("exec:node {}", root().join(SEED000).display())
}

#[test]
fn seed000_normal_sample_interpolates_by_send_time() {
    if !have("node") {
        return;
    }
    // Arriving 150, 50, 100 ms: target 125 ms is halfway between 10 and 15.
    let samples = [
        mk(3, 150, 151, 15.0),
        mk(1, 50, 152, 5.0),
        mk(2, 100, 153, 10.0),
    ];
    let shown = replay(&samples, &[225], &seed000()).unwrap();
    assert_eq!(shown, [(Mode::Interpolate, Some(0.5), vec![12.5])]);
}

#[test]
fn seed000_large_gap_falls_back_to_hold() {
    if !have("node") {
        return;
    }
    let samples = [mk(1, 0, 1, 0.0), mk(2, 300, 2, 30.0)];
    let shown = replay(&samples, &[250], &seed000()).unwrap();
    assert_eq!(shown, [(Mode::Hold, None, vec![0.0])]);
}

#[test]
fn seed000_duplicate_tick_is_rejected() {
    if !have("node") {
        return;
    }
    // Tick 7 again at 90 ms: rejected, so after the newest the first one (7) is held.
    let samples = [mk(7, 70, 1, 7.0), mk(7, 90, 2, 9.0)];
    let policy: Policy = seed000().parse().unwrap();
    let metrics = Replay::new(FrameClock::At(vec![Nanos::from_millis(300)]))
        .clock(ClockMapping::Fixed(Nanos::ZERO))
        .stream(&Stream::new(&samples), &policy, |f| {
            assert_eq!((f.mode, f.value), (Mode::Hold, &[7.0][..]));
        })
        .unwrap();
    assert_eq!(
        (metrics.counters.inserted, metrics.counters.duplicates),
        (1, 1)
    );
}

#[test]
fn seed000_after_latest_holds_latest_snapshot() {
    if !have("node") {
        return;
    }
    let samples = [mk(1, 100, 1, 10.0), mk(2, 150, 2, 15.0)];
    let shown = replay(&samples, &[400], &seed000()).unwrap();
    assert_eq!(shown, [(Mode::Hold, None, vec![15.0])]);
}

/// The error a child running `script` (a shell command) gives, as text.
fn failure(script: &str) -> String {
    failure_as("json", script)
}

/// The error a child running `script` gives when spoken to in `format`, as text, with a
/// timeout of 700 ms when the test expects one, else of 30 s (so that a loaded machine's slow
/// Python start-up is not taken for a hang).
fn failure_as(format: &str, script: &str) -> String {
    let expects_timeout = ["sleep 30", "while :"].iter().any(|s| script.contains(s));
    let timeout = if expects_timeout { "700ms" } else { "30000ms" };
    let samples: Vec<Sample> = (0..40)
        .map(|i| mk(i, i * 50, i * 50 + 30, i as f64))
        .collect();
    let at: Vec<i64> = (0..60).map(|i| i * 40).collect();
    let policy = if format == "json" {
        format!("exec(timeout={timeout},batch=16):{script}")
    } else {
        format!("exec(timeout={timeout},batch=16,format={format}):{script}")
    };
    let started = std::time::Instant::now();
    let err = replay(&samples, &at, &policy).expect_err("the child must fail");
    // Not a timed assertion on speed: a guard that it did not hang for good.
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    let text = err.to_string();
    assert!(matches!(err, Error::External { .. }), "{text}");
    assert!(text.starts_with(&format!("policy {policy}:")), "{text}");
    text
}

#[test]
fn a_child_that_crashes_names_its_exit_and_stderr() {
    let text = failure("echo broken buffer >&2; exit 3");
    assert!(text.contains("batch 0"), "{text}");
    assert!(text.contains("exit status: 3"), "{text}");
    assert!(text.contains("broken buffer"), "{text}");
}

#[test]
fn a_child_that_hangs_times_out() {
    let text = failure("sleep 30");
    assert!(text.contains("no complete reply within 700ms"), "{text}");
}

#[test]
fn a_reply_that_never_ends_times_out() {
    let text = failure("while :; do printf 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'; done");
    assert!(
        text.contains("no complete reply") || text.contains("without a newline"),
        "{text}"
    );
}

#[test]
fn a_child_speaking_another_protocol_is_refused() {
    let text = failure("echo hello; cat > /dev/null");
    assert!(text.contains("reply is not a protocol line"), "{text}");
    assert!(text.contains("'hello'"), "{text}");
}

/// A child in Python that answers every frame of each batch with `pick` (a JSON object, also
/// a Python literal), plus `extra` picks, over JSON Lines (after skipping the hello).
fn answering(pick: &str, extra: usize) -> String {
    format!(
        "python3 -c 'import sys, json\nsys.stdin.readline()\nfor l in sys.stdin:\n b = json.loads(l)\n \
         print(json.dumps({{\"batch\": b[\"batch\"], \"picks\": [{pick}] * (len(b[\"frames\"]) + {extra})}}), flush=True)'"
    )
}

/// [`answering`] over MessagePack, `batch_offset` added to the batch it answers.
fn answering_msgpack(pick: &str, extra: usize, batch_offset: u64) -> String {
    format!(
        "python3 -c 'import sys, msgpack\ni, o = sys.stdin.buffer, sys.stdout.buffer\ni.readline()\n\
         while len(h := i.read(4)) == 4:\n b = msgpack.unpackb(i.read(int.from_bytes(h, \"big\")))\n \
         r = msgpack.packb({{\"batch\": b[\"batch\"] + {batch_offset}, \"picks\": [{pick}] * (len(b[\"frames\"]) + {extra})}})\n \
         o.write(len(r).to_bytes(4, \"big\") + r)\n o.flush()'"
    )
}

#[test]
fn a_reply_with_the_wrong_count_is_refused() {
    if !have("python3") {
        return;
    }
    let text = failure(&answering(r#"{"mode":"empty","delay":0}"#, 1));
    assert!(text.contains("reply has 17 picks for 16 frames"), "{text}");
}

#[test]
fn a_sample_from_the_future_is_refused() {
    if !have("python3") {
        return;
    }
    // Packet 39 arrives at 1980 ms: picked at the first frame, it has not arrived.
    let text = failure(&answering(r#"{"mode":"hold","from":39,"delay":0}"#, 0));
    assert!(text.contains("frame 0"), "{text}");
    assert!(
        text.contains("packet 39, which has not arrived yet"),
        "{text}"
    );
}

#[test]
fn a_trivial_child_runs() {
    if !have("python3") {
        return;
    }
    // The empty pick for every frame: a valid, if useless, buffer.
    let samples: Vec<Sample> = (0..10).map(|i| mk(i, i * 50, i * 50 + 30, 0.0)).collect();
    let policy = format!(
        "exec(batch=4):{}",
        answering(r#"{"mode":"empty","delay":0}"#, 0)
    );
    let shown = replay(&samples, &[0, 100, 200, 300, 400, 500], &policy).unwrap();
    assert_eq!(shown.len(), 6);
    assert!(shown.iter().all(|(m, _, _)| *m == Mode::Empty));
}

#[test]
fn exec_policies_print_as_they_parse() {
    let p: Policy = "exec:python3 my buffer.py --x=1,2".parse().unwrap();
    assert_eq!(p.to_string(), "exec:python3 my buffer.py --x=1,2");
    let q: Policy = "exec(timeout=2000ms,max_delay=300ms):node b.mjs"
        .parse()
        .unwrap();
    assert_eq!(
        q.to_string(),
        "exec(timeout=2000ms,max_delay=300ms):node b.mjs"
    );
    assert_eq!(q.to_string().parse::<Policy>().unwrap(), q);
    let err = "exec:".parse::<Policy>().unwrap_err().to_string();
    assert!(err.contains("no command"), "{err}");
    let err = "exec(speed=2):x".parse::<Policy>().unwrap_err().to_string();
    assert!(err.contains("key speed"), "{err}");
}

#[cfg(target_os = "linux")]
#[test]
fn what_a_hanging_child_started_is_killed_too() {
    let dir = std::env::temp_dir().join(format!("jitterlab-exec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("pid");
    // The shell starts a sleeper and waits: both must go when the timeout fires.
    let text = failure(&format!("sleep 30 & echo $! > {}; wait", pidfile.display()));
    assert!(text.contains("no complete reply"), "{text}");
    let pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_owned();
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    // Killed processes are reaped by init soon after; poll, bounded.
    let mut gone = false;
    for _ in 0..200 {
        let state = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
        if state.is_empty() || state.contains(") Z ") {
            gone = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(gone, "the sleeper {pid} is still running");
}

#[test]
fn the_hello_names_protocol_format_and_values() {
    let text = failure("head -n 1 >&2; exit 3");
    assert!(
        text.contains(r#"{"protocol":"jitterlab-exec","v":2,"format":"json","values":true}"#),
        "{text}"
    );
    let text = failure_as("msgpack", "head -n 1 >&2; exit 3");
    assert!(text.contains(r#""format":"msgpack""#), "{text}");
}

#[test]
fn a_negative_delay_is_refused_in_json() {
    if !have("python3") {
        return;
    }
    let text = failure(&answering(r#"{"mode":"empty","delay":-1}"#, 0));
    assert!(text.contains("frame 0"), "{text}");
    assert!(text.contains("delay -1 ns is negative"), "{text}");
}

#[test]
fn a_msgpack_child_that_crashes_names_its_exit_and_stderr() {
    let text = failure_as("msgpack", "echo broken buffer >&2; exit 3");
    assert!(text.contains("batch 0"), "{text}");
    assert!(text.contains("exit status: 3"), "{text}");
    assert!(text.contains("broken buffer"), "{text}");
}

#[test]
fn a_msgpack_child_that_hangs_times_out() {
    let text = failure_as("msgpack", "sleep 30");
    assert!(text.contains("no complete reply within 700ms"), "{text}");
}

#[test]
fn a_msgpack_reply_that_never_ends_times_out() {
    // 200 MiB announced (under the 256 MiB limit), then bytes that never add up in time.
    let text = failure_as(
        "msgpack",
        r"printf '\014\200\000\000'; while :; do printf xxxxxxxxxxxxxxxx; sleep 0.01; done",
    );
    assert!(text.contains("no complete reply within 700ms"), "{text}");
}

#[test]
fn an_oversized_msgpack_reply_is_refused() {
    // A length prefix of 2 GiB: refused at once, before any of it is read.
    let text = failure_as("msgpack", r"printf '\177\377\377\377'; cat > /dev/null");
    assert!(
        text.contains("length prefix announces more than 256 MiB"),
        "{text}"
    );
}

#[test]
fn a_child_speaking_another_protocol_is_refused_in_msgpack() {
    let text = failure_as("msgpack", "echo hello; cat > /dev/null");
    assert!(
        text.contains("reply is not a MessagePack message"),
        "{text}"
    );
    assert!(text.contains("'hello'"), "{text}");
}

#[test]
fn a_json_child_spoken_to_in_msgpack_is_told_so() {
    // The child skips one line (the hello) and answers the rest as if it were JSON Lines: the
    // first MessagePack batch is no JSON, so it just echoes a JSON reply.
    let text = failure_as(
        "msgpack",
        r#"read -r hello; echo '{"batch":0,"picks":[]}'; cat > /dev/null"#,
    );
    assert!(text.contains(r#"'{"batch":0,"picks":[]}'"#), "{text}");
    assert!(
        text.contains("exec(format=json) speaks JSON Lines"),
        "{text}"
    );
}

#[test]
fn a_framed_reply_that_is_not_messagepack_is_refused() {
    // A well-framed 3-byte message, then nothing valid inside.
    let text = failure_as(
        "msgpack",
        r"printf '\000\000\000\003\301ab'; cat > /dev/null",
    );
    assert!(text.contains("reply is not a protocol message"), "{text}");
    assert!(text.contains("3 bytes, c1 61 62"), "{text}");
}

#[test]
fn a_msgpack_reply_with_the_wrong_count_is_refused() {
    if !have_msgpack() {
        return;
    }
    let text = failure_as(
        "msgpack",
        &answering_msgpack(r#"{"mode":"empty","delay":0}"#, 1, 0),
    );
    assert!(text.contains("reply has 17 picks for 16 frames"), "{text}");
}

#[test]
fn a_msgpack_reply_to_another_batch_is_refused() {
    if !have_msgpack() {
        return;
    }
    let text = failure_as(
        "msgpack",
        &answering_msgpack(r#"{"mode":"empty","delay":0}"#, 0, 1),
    );
    assert!(text.contains("batch 0"), "{text}");
    assert!(text.contains("reply answers batch 1"), "{text}");
}

#[test]
fn a_sample_from_the_future_is_refused_in_msgpack() {
    if !have_msgpack() {
        return;
    }
    let text = failure_as(
        "msgpack",
        &answering_msgpack(r#"{"mode":"hold","from":39,"delay":0}"#, 0, 0),
    );
    assert!(text.contains("frame 0"), "{text}");
    assert!(
        text.contains("packet 39, which has not arrived yet"),
        "{text}"
    );
}

#[test]
fn a_negative_delay_is_refused_in_msgpack() {
    if !have_msgpack() {
        return;
    }
    let text = failure_as(
        "msgpack",
        &answering_msgpack(r#"{"mode":"empty","delay":-1}"#, 0, 0),
    );
    assert!(text.contains("delay -1 ns is negative"), "{text}");
}

#[cfg(target_os = "linux")]
#[test]
fn what_a_hanging_msgpack_child_started_is_killed_too() {
    let dir = std::env::temp_dir().join(format!("jitterlab-exec-mp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("pid");
    let text = failure_as(
        "msgpack",
        &format!("sleep 30 & echo $! > {}; wait", pidfile.display()),
    );
    assert!(text.contains("no complete reply"), "{text}");
    let pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_owned();
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    let mut gone = false;
    for _ in 0..200 {
        let state = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
        if state.is_empty() || state.contains(") Z ") {
            gone = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(gone, "the sleeper {pid} is still running");
}

/// A trace with what the framings must carry alike: reordering, a duplicate tick, a gap, a
/// negative value, states and lifecycle events.
fn rich_trace() -> Vec<Sample> {
    let mut samples = Vec::new();
    for i in 0..400i64 {
        // Every 7th packet 45 ms late (reordered), every 50th lost, one duplicate.
        if i % 50 == 49 {
            continue;
        }
        let late = if i % 7 == 3 { 45 } else { (i * 37) % 11 };
        let mut s = Sample::new(
            0,
            i,
            Nanos::from_millis(i * 20),
            Nanos::from_millis(i * 20 + 30 + late),
        )
        .with_values(vec![i as f64 * 0.37 - 20.0, (i as f64).sin(), 1e-300]);
        s.state = Some((i / 40) as u32);
        if i == 120 {
            s.event = Some(jitterlab_capture::decode::Lifecycle::Teleport);
        }
        samples.push(s);
        if i == 200 {
            samples.push(
                Sample::new(
                    0,
                    i,
                    Nanos::from_millis(i * 20),
                    Nanos::from_millis(i * 20 + 80),
                )
                .with_values(vec![0.0, 0.0, 0.0]),
            );
        }
    }
    samples
}

/// Every frame of a replay (all of `Frame`'s fields that a child decides) and its metrics.
fn full_replay(samples: &[Sample], policy: &str) -> (Vec<String>, String) {
    let policy: Policy = policy.parse().unwrap();
    let mut frames = Vec::new();
    let metrics = Replay::new(FrameClock::Fps(60.0))
        .clock(ClockMapping::Estimated)
        .stream(&Stream::new(samples), &policy, |f| {
            frames.push(format!(
                "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
                f.mode,
                f.hold,
                f.alpha,
                f.from,
                f.to,
                f.value,
                f.state,
                f.delay,
                f.target,
                f.shown,
                f.depth
            ))
        })
        .unwrap();
    (frames, format!("{metrics:?}"))
}

#[test]
fn the_same_child_gives_the_same_replay_over_json_and_msgpack() {
    if !have_msgpack() {
        return;
    }
    let samples = rich_trace();
    // Seed 003's buffer (its own counters, interpolation) and the trivial one (holds, no
    // counters), each speaking the framing its hello names.
    for child in ["seed003_unity_buffer.py 100", "trivial_newest.py"] {
        let command = format!(
            "python3 {}",
            root().join("examples/external").join(child).display()
        );
        let (json_frames, json_metrics) = full_replay(&samples, &format!("exec:{command}"));
        let (mp_frames, mp_metrics) =
            full_replay(&samples, &format!("exec(format=msgpack):{command}"));
        assert!(
            json_frames.len() > 400,
            "{child}: {} frames",
            json_frames.len()
        );
        assert_eq!(mp_frames, json_frames, "{child}: the timelines differ");
        assert_eq!(mp_metrics, json_metrics, "{child}: the metrics differ");
        if child.starts_with("seed003") {
            assert!(
                json_frames.iter().any(|f| f.starts_with("Interpolate")),
                "seed 003 interpolates"
            );
        }
    }
}

/// The Rust example child (`examples/exec_newest.rs`), which `cargo test` builds beside the
/// tests; `None` (after saying so) when it was not built (`cargo test --test external` alone).
fn rust_example() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let name = format!("exec_newest{}", std::env::consts::EXE_SUFFIX);
    let path = exe.parent()?.parent()?.join("examples").join(name);
    if path.exists() {
        Some(path)
    } else {
        eprintln!(
            "skipped: {} is not built (cargo test builds it with the examples)",
            path.display()
        );
        None
    }
}

#[test]
fn the_rust_example_child_agrees_over_both_framings_and_with_python() {
    let Some(rust) = rust_example() else {
        return;
    };
    let samples = rich_trace();
    let command = rust.display().to_string();
    let (json_frames, json_metrics) = full_replay(&samples, &format!("exec:{command}"));
    let (mp_frames, mp_metrics) = full_replay(&samples, &format!("exec(format=msgpack):{command}"));
    assert_eq!(mp_frames, json_frames);
    assert_eq!(mp_metrics, json_metrics);
    assert!(json_frames.iter().any(|f| f.starts_with("Hold")));
    // The same logic in Python gives the same replay.
    if have_msgpack() {
        let py = format!(
            "python3 {}",
            root().join("examples/external/trivial_newest.py").display()
        );
        let (py_frames, _) = full_replay(&samples, &format!("exec(format=msgpack):{py}"));
        assert_eq!(py_frames, json_frames);
    }
}
