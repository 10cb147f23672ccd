//! `info` in one streaming pass: a trace of 100,000 tiny streams (listed in part in the
//! text, in full in JSON), a trace cut mid-record, and running summaries (`--every`) of a
//! pipe that never ends, the last one on SIGTERM.

use std::path::{Path, PathBuf};

use jitterlab_capture::decode::probe::Probe;
use jitterlab_capture::{Nanos, Reader, Record, Writer};
use serde_json::Value;

use crate::util::{fixtures, jitterlab};

fn demo_trace() -> PathBuf {
    fixtures().join("traces/demo-wifi-20hz.jtr")
}

/// The demo trace's header and records.
fn demo_records() -> (jitterlab_capture::Header, Vec<Record>) {
    let bytes = std::fs::read(demo_trace()).unwrap();
    let mut reader = Reader::new(&bytes[..]).unwrap();
    let header = reader.header().clone();
    let mut records = Vec::new();
    while let Some(r) = reader.read_record().unwrap() {
        records.push(r);
    }
    (header, records)
}

/// A probe trace of `streams` streams of `each` packets, interleaved.
fn tiny_streams(path: &Path, streams: u32, each: u64) {
    let (header, _) = demo_records();
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = Writer::new(file, &header).unwrap();
    for tick in 0..each {
        for stream in 0..streams {
            let send = Nanos::from_millis(tick as i64 * 50);
            let probe = Probe {
                stream,
                tick,
                send,
                state: 0,
                event: None,
                values: vec![1.0].into(),
            };
            let at = send + Nanos::from_micros(i64::from(stream % 1000) + 3_000);
            w.write(&Record::received(at, probe.emit())).unwrap();
        }
    }
    w.flush().unwrap();
}

#[test]
fn a_hundred_thousand_tiny_streams_are_summarized_in_part_and_listed_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.jtr");
    tiny_streams(&path, 100_000, 2);
    let out = jitterlab().arg("info").arg(&path).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.starts_with(&format!(
            "{}: 100000 stream(s), 200000 packets received",
            path.display()
        )),
        "{}",
        &text[..200.min(text.len())]
    );
    assert_eq!(text.matches("\nstream ").count(), 100, "the first 100 only");
    assert!(
        text.contains(
            "... and 99900 more stream(s) (199800 packets): --json lists every one, --stream N \
             shows one, --max-streams 0 lists them all"
        ),
        "{}",
        &text[text.len().saturating_sub(400)..]
    );
    let out = jitterlab()
        .args(["info", "--json"])
        .arg(&path)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let streams = v["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 100_000);
    assert!(
        streams
            .iter()
            .all(|s| s["packets"] == 2 && s["lost"] == 0 && s["expected"] == 2)
    );
    assert_eq!(streams[99_999]["probe_stream"], 99_999);
}

#[test]
fn a_trace_cut_mid_record_is_summarized_up_to_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(demo_trace()).unwrap();
    let cut = dir.path().join("cut.jtr");
    std::fs::write(&cut, &bytes[..bytes.len() - 9]).unwrap();
    let whole = jitterlab()
        .args(["info", "--json"])
        .arg(demo_trace())
        .assert()
        .success();
    let whole: Value = serde_json::from_slice(&whole.get_output().stdout).unwrap();
    let out = jitterlab()
        .args(["info", "--json"])
        .arg(&cut)
        .assert()
        .success();
    let got: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(
        stderr.contains("bytes do not form a whole record"),
        "{stderr}"
    );
    assert!(got["trailing_bytes"].as_u64().unwrap() > 0);
    let total = |v: &Value| v["packets"].as_u64().unwrap() + v["truth_packets"].as_u64().unwrap();
    assert_eq!(total(&got) + 1, total(&whole), "all but the last record");
}

/// `--every` on a file: one final summary at its end, the same as without `--every`.
#[test]
fn every_on_a_file_prints_the_final_summary_at_its_end() {
    let plain = jitterlab()
        .args(["info", "--json"])
        .arg(demo_trace())
        .assert()
        .success();
    let mut want: Value = serde_json::from_slice(&plain.get_output().stdout).unwrap();
    let out = jitterlab()
        .args(["info", "--json", "--every", "60m"])
        .arg(demo_trace())
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let got: Value = serde_json::from_str(lines[0]).unwrap();
    want["final"] = Value::Bool(true);
    assert_eq!(got, want);
    jitterlab()
        .args(["info", "--every", "0s"])
        .arg(demo_trace())
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--every 0s: expected a duration > 0",
        ));
}

/// A pipe that never ends: running summaries (JSON Lines) while it stays open, and the last
/// one on SIGTERM.
#[cfg(all(unix, feature = "live"))]
#[test]
fn every_on_an_endless_pipe_prints_running_summaries_and_a_last_one_on_sigterm() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command as StdCommand, Stdio};
    use std::time::Duration;

    let (header, records) = demo_records();
    let received = records
        .iter()
        .filter(|r| r.kind() == jitterlab_capture::RecordKind::Received)
        .count() as u64;
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(["info", "-", "--json", "--every", "100ms"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    for r in &records {
        w.write(r).unwrap();
    }
    stdin.write_all(&w.into_inner()).unwrap();
    stdin.flush().unwrap();
    // The pipe stays open (`stdin` is kept): the input never ends.
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let next = || {
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("a summary line");
        serde_json::from_str::<Value>(&line).unwrap()
    };
    let mut running = 0;
    loop {
        let v = next();
        assert_eq!(v["final"], false, "{v}");
        running += 1;
        assert!(running < 100_000, "the summaries reach every record");
        if v["packets"] == received {
            break;
        }
    }
    let status = StdCommand::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let last = loop {
        let v = next();
        if v["final"] == true {
            break v;
        }
    };
    assert_eq!(last["packets"], received);
    assert!(last["streams"][0]["wireshark"].is_null());
    assert!(child.wait().unwrap().success());
    drop(stdin);
}

/// `replay --json` of `trace` with `args`, as the command prints it (stdout), and its stderr.
/// A `synth` trace of network `profile` with `seed`, lasting `duration`, in `dir`.
fn synth(dir: &Path, profile: &str, seed: u64, duration: &str) -> PathBuf {
    let path = dir.join(format!("{profile}.jtr"));
    jitterlab()
        .args([
            "synth",
            "--profile",
            profile,
            "--duration",
            duration,
            "--seed",
        ])
        .arg(seed.to_string())
        .arg("-o")
        .arg(&path)
        .assert()
        .success();
    path
}

fn replay_out(trace: &Path, args: &[&str]) -> (String, String) {
    let out = jitterlab()
        .arg("replay")
        .arg(trace)
        .args(args)
        .arg("--json")
        .assert()
        .success();
    let o = out.get_output();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `replay` in one streaming pass prints the in-memory replay's JSON byte for byte, over the
/// demo trace, synthetic traces of several networks, 300 interleaved tiny streams, a trace cut
/// mid-record and every shared capture, for snapshot-buffer and engine presets, every clock
/// mapping (`hindsight` after a first pass for the offsets) and a frame rate with hitches; the jitterlab traces really stream
/// (no note that they were replayed in memory).
#[test]
fn streamed_replay_prints_the_in_memory_json() {
    let dir = tempfile::tempdir().unwrap();
    let mut streamed = vec![demo_trace()];
    for (i, profile) in ["wifi", "congested", "lte-driving"].iter().enumerate() {
        streamed.push(synth(dir.path(), profile, i as u64 + 3, "40s"));
    }
    let tiny = dir.path().join("tiny.jtr");
    tiny_streams(&tiny, 300, 12);
    streamed.push(tiny);
    let bytes = std::fs::read(demo_trace()).unwrap();
    let cut = dir.path().join("cut.jtr");
    std::fs::write(&cut, &bytes[..bytes.len() - 9]).unwrap();
    streamed.push(cut);
    let mut others = Vec::new();
    if let Some(data) = jitterlab_capture::testdata::shared_data() {
        for entry in std::fs::read_dir(data.join("pcap")).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".pcap") || name.ends_with(".pcapng") {
                others.push(path);
            }
        }
        others.sort();
        assert!(others.len() >= 10, "{others:?}");
    }
    let runs: [&[&str]; 6] = [
        &["--policy", "fixed:delay=100ms,max_gap=120ms"],
        &["--policy", "jitter:a=2,k=3", "--clock", "offset=-20"],
        &["--policy", "fixed:delay=60ms", "--clock", "hindsight"],
        &["--policy", "mirror", "--hitches", "5%:40ms"],
        &["--policy", "n4e", "--fps", "144"],
        &["--policy", "quantile:q=0.95,apply=stretch:max_rate=10%"],
    ];
    for trace in streamed.iter().chain(&others) {
        for args in runs {
            let (stream, stderr) = replay_out(trace, args);
            let mut in_memory = args.to_vec();
            in_memory.push("--in-memory");
            let (memory, _) = replay_out(trace, &in_memory);
            assert_eq!(stream, memory, "{} {args:?}", trace.display());
            if streamed.contains(trace) {
                assert!(
                    !stderr.contains("in memory"),
                    "{} {args:?}: {stderr}",
                    trace.display()
                );
            }
        }
    }
}

/// `sweep` in streaming passes writes the in-memory sweep's rows byte for byte (bounds and
/// provenance included), over several traces, a shard, one thread or two, every clock mapping; `tune` with a grid
/// gives the same recommendation JSON.
#[test]
fn streamed_sweep_and_tune_write_the_in_memory_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut traces = vec![demo_trace()];
    for (i, profile) in ["congested", "lte-driving"].iter().enumerate() {
        traces.push(synth(dir.path(), profile, i as u64 + 7, "30s"));
    }
    let grid = [
        "--sweep",
        "fixed:delay=0..200ms/40ms,max_gap=100ms|300ms",
        "--sweep",
        "jitter:a=1|3,k=2",
        "--sweep",
        "mirror:buffer_limit=2|8",
    ];
    let sweep = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let o = jitterlab()
            .arg("sweep")
            .args(&traces)
            .args(grid)
            .args(extra)
            .arg("--streaming")
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        let stderr = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
        (std::fs::read_to_string(&out).unwrap(), stderr)
    };
    for extra in [
        &[][..],
        &["-j", "1"],
        &["--shard", "2/3", "-j", "2"],
        &["--clock", "offset=-15"],
        &["--clock", "hindsight"],
    ] {
        let (streamed, stderr) = sweep("s.json", extra);
        assert!(
            stderr.contains("in streaming passes"),
            "{extra:?}: {stderr}"
        );
        let memory = {
            let out = dir.path().join("m.json");
            jitterlab()
                .arg("sweep")
                .args(&traces)
                .args(grid)
                .args(extra)
                .args(["--in-memory", "-o"])
                .arg(&out)
                .assert()
                .success();
            std::fs::read_to_string(&out).unwrap()
        };
        assert_eq!(streamed, memory, "{extra:?}");
        assert!(streamed.contains("bound_ms"), "{streamed}");
        std::fs::remove_file(dir.path().join("s.json")).unwrap();
        std::fs::remove_file(dir.path().join("m.json")).unwrap();
    }
    let tune = |extra: &[&str]| {
        let o = jitterlab()
            .arg("tune")
            .args(&traces)
            .args(extra)
            .arg("--json")
            .assert()
            .success();
        String::from_utf8_lossy(&o.get_output().stdout).into_owned()
    };
    assert_eq!(
        tune(&[&grid[..], &["--streaming"]].concat()),
        tune(&[&grid[..], &["--in-memory"]].concat())
    );
    // The default grid, for the traces' packet rate (read in an `info` pass first).
    let default = tune(&["--streaming"]);
    assert!(default.contains("recommendation"), "{default}");
    assert_eq!(default, tune(&["--in-memory"]));
    // Small traces sweep in memory unless told: the note says which.
    let (_, stderr) = {
        let out = dir.path().join("d.json");
        let o = jitterlab()
            .arg("sweep")
            .args(&traces)
            .args(grid)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        (
            (),
            String::from_utf8_lossy(&o.get_output().stderr).into_owned(),
        )
    };
    assert!(stderr.contains("s reading"), "{stderr}");
}

/// `replay` of 100,000 two-packet streams, in one pass: every stream replayed, the summary
/// over them all, the in-memory replay's JSON byte for byte (in memory, the streams are taken
/// apart in one pass over the trace, not one per stream).
#[test]
fn a_hundred_thousand_tiny_streams_replay_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.jtr");
    tiny_streams(&path, 100_000, 2);
    let (streamed, stderr) = replay_out(&path, &["--policy", "fixed:delay=50ms"]);
    assert!(!stderr.contains("in memory"), "{stderr}");
    let (memory, _) = replay_out(&path, &["--policy", "fixed:delay=50ms", "--in-memory"]);
    assert!(streamed == memory, "the in-memory JSON differs");
    let v: Value = serde_json::from_str(&streamed).unwrap();
    assert_eq!(v["streams"].as_array().unwrap().len(), 100_000);
    assert_eq!(v["metrics"]["packets"], 200_000, "{}", v["metrics"]);
    assert!(
        v["streams"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["metrics"]["packets"] == 2)
    );
}

/// Runs `report` on `trace` with `args` into a new directory under `dir`; its files by name
/// (bytes) and its standard error.
fn report_files(
    dir: &Path,
    name: &str,
    trace: &Path,
    args: &[&str],
) -> (std::collections::BTreeMap<String, Vec<u8>>, String) {
    let out_dir = dir.join(name);
    let out = jitterlab()
        .arg("report")
        .arg(trace)
        .args(args)
        .arg("-o")
        .arg(&out_dir)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    (files_in(&out_dir), stderr)
}

/// Every file of `dir` by name, with its bytes.
fn files_in(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

/// `report` in passes over the file (`--streaming`) writes the in-memory report byte for
/// byte — every figure, the summary table and the index — over the demo trace, synthetic
/// traces of two networks, a trace cut mid-record and one of 30 streams, with the default grid (tune's, swept
/// in passes), a sweep's results, chosen policies, a stream chosen and a fixed clock; the
/// jitterlab traces really stream (no note that they were drawn in memory). Traces whose send
/// times are inferred (the shared RTP and game captures) are drawn in memory, with a note.
#[test]
fn streamed_report_writes_the_in_memory_report() {
    let dir = tempfile::tempdir().unwrap();
    let mut traces = vec![demo_trace()];
    for (i, profile) in ["wifi", "lte-driving"].iter().enumerate() {
        traces.push(synth(dir.path(), profile, i as u64 + 11, "30s"));
    }
    let bytes = std::fs::read(demo_trace()).unwrap();
    let cut = dir.path().join("cut.jtr");
    std::fs::write(&cut, &bytes[..bytes.len() - 9]).unwrap();
    traces.push(cut);
    let tiny = dir.path().join("tiny.jtr");
    tiny_streams(&tiny, 30, 400);
    traces.push(tiny);
    let results = dir.path().join("rows.parquet");
    jitterlab()
        .arg("sweep")
        .arg(&traces[1])
        .args(["--sweep", "fixed:delay=0..200ms/20ms", "-o"])
        .arg(&results)
        .assert()
        .success();
    let results = results.to_string_lossy().into_owned();
    let runs: Vec<(usize, Vec<&str>)> = vec![
        (0, vec![]),
        (1, vec!["--results", &results]),
        (
            2,
            vec![
                "--results",
                &results,
                "--policy",
                "jitter:a=2,k=3",
                "--policy",
                "mirror",
            ],
        ),
        (
            3,
            vec![
                "--results",
                &results,
                "--policy",
                "fixed:delay=80ms",
                "--clock",
                "offset=-20",
                "--fps",
                "30",
            ],
        ),
        (1, vec!["--results", &results, "--stream", "0"]),
        (
            2,
            vec![
                "--results",
                &results,
                "--policy",
                "fixed:delay=50ms",
                "--clock",
                "hindsight",
            ],
        ),
        (4, vec!["--results", &results, "--stream", "7"]),
        (
            4,
            vec!["--results", &results, "--policy", "fixed:delay=60ms"],
        ),
    ];
    for (k, (trace, args)) in runs.iter().enumerate() {
        let trace = &traces[*trace];
        let mut streaming = args.clone();
        streaming.push("--streaming");
        let (streamed, stderr) = report_files(dir.path(), &format!("s{k}"), trace, &streaming);
        let mut in_memory = args.clone();
        in_memory.push("--in-memory");
        let (memory, _) = report_files(dir.path(), &format!("m{k}"), trace, &in_memory);
        assert!(
            !stderr.contains("in memory"),
            "{} {args:?}: {stderr}",
            trace.display()
        );
        assert_eq!(
            streamed.keys().collect::<Vec<_>>(),
            memory.keys().collect::<Vec<_>>(),
            "{} {args:?}",
            trace.display()
        );
        assert!(streamed.contains_key("network.png") && streamed.contains_key("recovery.png"));
        for (name, bytes) in &streamed {
            assert!(
                bytes == &memory[name],
                "{} {args:?}: {name} differs",
                trace.display()
            );
        }
    }
    // `tune --report` draws its report in passes when the traces stream: the same files.
    // (`tune` exits 1 when nothing meets its limits, with the report written all the same.)
    let mut tuned = Vec::new();
    for mode in ["--streaming", "--in-memory"] {
        let out_dir = dir.path().join(format!("tune{mode}"));
        let out = jitterlab()
            .arg("tune")
            .arg(&traces[2])
            .args([
                "--sweep",
                "fixed:delay=0..300ms/25ms",
                "--sweep",
                "jitter:k=2|4",
                mode,
            ])
            .arg("--report")
            .arg(&out_dir)
            .assert();
        // 1: nothing meets the limits on this network; the report is written all the same.
        assert!(matches!(out.get_output().status.code(), Some(0 | 1)));
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(!stderr.contains("in memory"), "{stderr}");
        tuned.push(files_in(&out_dir));
    }
    assert!(tuned[0].len() > 8);
    assert!(
        tuned[0] == tuned[1],
        "tune --report: the streamed report differs"
    );
    // A capture whose send times come from the whole stream: drawn in memory, said so.
    if let Some(data) = jitterlab_capture::testdata::shared_data() {
        let rtp = data.join("pcap/sipp_g711a.pcap");
        let (_, stderr) = report_files(
            dir.path(),
            "rtp",
            &rtp,
            &["--streaming", "--snapshot", "--policy", "fixed:delay=60ms"],
        );
        assert!(stderr.contains("reporting in memory"), "{stderr}");
    }
}

/// `replay --timeline` of one stream is written in passes over the file, frame by frame as
/// each is final, and is the in-memory timeline byte for byte (CSV and Parquet), with the same
/// JSON, over the demo trace, synthetic traces of two networks, a trace cut mid-record and one
/// stream of 30 (`--stream`), for several policies, frame rates and clocks (`hindsight`
/// too). A trace of several
/// streams without `--stream` writes its timeline in memory, and says so.
#[test]
fn streamed_timeline_is_the_in_memory_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let mut traces = vec![demo_trace()];
    for (i, profile) in ["wifi", "lte-driving"].iter().enumerate() {
        traces.push(synth(dir.path(), profile, i as u64 + 21, "20s"));
    }
    let bytes = std::fs::read(demo_trace()).unwrap();
    let cut = dir.path().join("cut.jtr");
    std::fs::write(&cut, &bytes[..bytes.len() - 9]).unwrap();
    traces.push(cut);
    let tiny = dir.path().join("tiny.jtr");
    tiny_streams(&tiny, 30, 300);
    let runs: Vec<(&Path, Vec<&str>, &str)> = vec![
        (&traces[0], vec!["--policy", "fixed:delay=100ms"], "csv"),
        (&traces[1], vec!["--policy", "jitter:a=2,k=3"], "parquet"),
        (
            &traces[2],
            vec!["--policy", "mirror", "--fps", "144"],
            "csv",
        ),
        (
            &traces[2],
            vec!["--policy", "n4e", "--clock", "offset=-20"],
            "csv",
        ),
        (&traces[3], vec!["--policy", "quantile:q=0.95"], "csv"),
        (
            &traces[1],
            vec!["--policy", "fixed:delay=70ms", "--clock", "hindsight"],
            "csv",
        ),
        (
            &tiny,
            vec!["--policy", "fixed:delay=80ms", "--stream", "7"],
            "csv",
        ),
    ];
    for (k, (trace, args, ext)) in runs.iter().enumerate() {
        let mut outputs = Vec::new();
        for mode in ["", "--in-memory"] {
            let out = dir.path().join(format!("t{k}{mode}.{ext}"));
            let run = jitterlab()
                .arg("replay")
                .arg(trace)
                .args(args)
                .args(["--json", "--timeline"])
                .arg(&out)
                .args((!mode.is_empty()).then_some(mode))
                .assert()
                .success();
            let o = run.get_output();
            let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            if mode.is_empty() {
                assert!(!stderr.contains("in memory"), "{args:?}: {stderr}");
            }
            outputs.push((o.stdout.clone(), std::fs::read(&out).unwrap()));
        }
        assert!(outputs[0].1.len() > 1000, "{args:?}");
        assert!(outputs[0].0 == outputs[1].0, "{args:?}: the JSON differs");
        assert!(
            outputs[0].1 == outputs[1].1,
            "{args:?}: the timeline differs"
        );
    }
    let out = dir.path().join("all.csv");
    let run = jitterlab()
        .arg("replay")
        .arg(&tiny)
        .args(["--policy", "fixed", "--timeline"])
        .arg(&out)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&run.get_output().stderr).into_owned();
    assert!(
        stderr.contains("the timeline of 30 streams is written in memory"),
        "{stderr}"
    );
}
