//! The `gstreamer` preset against the real GStreamer `rtpjitterbuffer`, on every audio (and
//! video) stream of the shared captures at latencies 20, 60 and 200 ms, and with
//! `drop-on-latency` at 20 and 60 ms (once with `do-lost`).
//!
//! The peer is `shared/tools/gst_jitterbuffer.py`: GStreamer's own element in a GstHarness on a
//! GstTestClock driven by the capture's arrival times. For each (stream, configuration) it is
//! run once; the element's `num-pushed`, `num-lost`, `num-late` and `num-duplicates`, its
//! drop-on-latency and late-for-sink counts must equal the model's, `avg-jitter` to the
//! nanosecond, and every pushed buffer (in push order) must have the same sequence number and
//! an output PTS and leave time within 1 ms of the model's; with `do-lost`, so must every lost
//! event. It skips (with a message) when Python's `gi` with GStreamer and GstCheck is missing,
//! and fails then under `JITTERLAB_REQUIRE_PEERS`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use jitterlab_capture::decode::Collector;
use jitterlab_capture::pcap::{self, CaptureSummary};
use jitterlab_capture::testdata::shared_data;
use jitterlab_capture::{Decoded, Nanos, StreamInfo, sdp};
use jitterlab_replay::gstreamer::Stats;
use jitterlab_replay::playout::PlayoutDetail;
use jitterlab_replay::streams::views;
use jitterlab_replay::{Media, PlayoutStream, Policy};
use serde_json::Value;

use crate::util::json;

const PYTHON: &str = "/usr/bin/python3";
/// Configurations compared (latency ms, drop-on-latency, do-lost): the three latencies with
/// the defaults, and `drop-on-latency` at the two shortest (where it drops), once with
/// `do-lost` (whose lost events are compared too).
const CONFIGS: [(u32, bool, bool); 5] = [
    (20, false, false),
    (60, false, false),
    (200, false, false),
    (20, true, true),
    (60, true, false),
];
/// 1 ms, the agreement asked of every PTS and leave time.
const TOLERANCE: i64 = 1_000_000;

/// Whether Debian's Python can run the peer (gi with Gst, GstCheck and rtpjitterbuffer).
fn have_peer(tool: &Path) -> bool {
    let probe = "import gi; gi.require_version('Gst', '1.0'); gi.require_version('GstCheck', '1.0'); \
                 from gi.repository import Gst, GstCheck; Gst.init(None); \
                 assert Gst.ElementFactory.find('rtpjitterbuffer')";
    let ok = tool.is_file()
        && Command::new(PYTHON)
            .args(["-c", probe])
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
            "JITTERLAB_REQUIRE_PEERS is set but {PYTHON} cannot run {} (apt-get install \
             python3-gi gir1.2-gstreamer-1.0 gstreamer1.0-plugins-good)",
            tool.display()
        );
        eprintln!(
            "skipped: {PYTHON} with gi, GStreamer's GstCheck and rtpjitterbuffer is needed for {}",
            tool.display()
        );
    }
    ok
}

/// Decodes a capture as `jitterlab` does (SDP in SIP packets gives dynamic payload types
/// their clock rates).
fn decode(path: &Path) -> Decoded {
    let header = pcap::header_for("", &CaptureSummary::default(), "auto");
    let mut collector = Collector::new(&header, None).expect("the default decoder");
    let file = File::open(path).expect("the capture opens");
    pcap::read_capture(file, None, |rec| {
        if let (Some(src), Some(dst)) = (rec.src, rec.dst) {
            collector.add_rtpmaps(sdp::scan_sip(src.0, dst.0, &rec.payload, rec.time));
        }
        collector.push(&rec);
        Ok(())
    })
    .expect("the capture reads");
    collector.finish()
}

/// The captures the test covers: `pcap/*.pcap` and `pcap/withsdp/*.pcapng`.
fn captures(data: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (dir, ext) in [("pcap", "pcap"), ("pcap/withsdp", "pcapng")] {
        let dir = data.join(dir);
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{} cannot be read: {e}", dir.display()));
        for e in entries {
            let p = e.expect("a directory entry").path();
            if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// An endpoint as the peer's --src/--dst take it (the IP only for IPv4: the peer spells
/// IPv6 addresses uncompressed).
fn endpoint(e: std::net::SocketAddr) -> String {
    match e {
        std::net::SocketAddr::V4(a) => a.to_string(),
        std::net::SocketAddr::V6(a) => format!("*:{}", a.port()),
    }
}

/// One audio stream of one capture.
struct Case {
    file: PathBuf,
    decoded: usize,
    info: StreamInfo,
    latency: u32,
    drop_on_latency: bool,
    do_lost: bool,
}

impl Case {
    fn policy(&self) -> String {
        format!(
            "gstreamer:latency={}ms,drop_on_latency={},do_lost={}",
            self.latency, self.drop_on_latency, self.do_lost
        )
    }
}

/// What one comparison found.
#[derive(Default)]
struct Outcome {
    packets: usize,
    matched: usize,
    /// The largest PTS or leave-time difference among matched buffers, ns.
    max_dev: i64,
    /// Lost events compared (with `do-lost`).
    lost_events: usize,
    problems: Vec<String>,
}

fn run_peer(case: &Case, tool: &Path) -> Value {
    let info = &case.info;
    let mut cmd = Command::new(PYTHON);
    cmd.arg(tool)
        .arg(&case.file)
        .arg("--ssrc")
        .arg(format!("0x{:08X}", info.ssrc.expect("an RTP stream")))
        .arg("--latency")
        .arg(case.latency.to_string())
        .arg("--clock-rate")
        .arg(info.clock_rate.expect("a clock rate").to_string());
    if case.drop_on_latency {
        cmd.arg("--drop-on-latency");
    }
    if case.do_lost {
        cmd.arg("--do-lost");
    }
    if let (Some(src), Some(dst)) = (info.src, info.dst) {
        cmd.arg("--src").arg(endpoint(src.0));
        cmd.arg("--dst").arg(endpoint(dst.0));
    }
    let out = cmd.output().expect("the peer starts");
    assert!(
        out.status.success(),
        "gst_jitterbuffer.py on {} failed: {}",
        case.file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the peer prints JSON")
}

fn stats_of(detail: Option<&PlayoutDetail>) -> &Stats {
    match detail {
        Some(PlayoutDetail::GStreamer(s)) => s,
        other => panic!("the gstreamer preset gave no rtpjitterbuffer stats: {other:?}"),
    }
}

fn compare(case: &Case, decoded: &Decoded, peer: &Value) -> Outcome {
    let name = format!(
        "{} ssrc 0x{:08X} latency {} ms{}{}",
        case.file.file_name().unwrap_or_default().to_string_lossy(),
        case.info.ssrc.unwrap_or(0),
        case.latency,
        if case.drop_on_latency {
            " drop-on-latency"
        } else {
            ""
        },
        if case.do_lost { " do-lost" } else { "" }
    );
    let view = views(decoded, Some(case.info.id))
        .next()
        .expect("the stream")
        .expect("the stream replays");
    let stream = PlayoutStream::new(
        case.info.id,
        &view.samples,
        Media::of(&case.info),
        Nanos::ZERO,
    );
    let policy: Policy = case.policy().parse().expect("the policy parses");
    let run = policy.playout(&stream).expect("gstreamer plays frames");
    let stats = stats_of(run.detail.as_ref());
    let mut out = Outcome {
        packets: peer["pushed"].as_u64().unwrap_or(0) as usize,
        ..Outcome::default()
    };
    let st = &peer["stats"];
    for (key, ours) in [
        ("num-pushed", stats.num_pushed),
        ("num-lost", stats.num_lost),
        ("num-late", stats.num_late),
        ("num-duplicates", stats.num_duplicates),
    ] {
        if st[key].as_u64() != Some(ours) {
            out.problems.push(format!(
                "{name}: {key} {} (element) vs {ours} (model)",
                st[key]
            ));
        }
    }
    // avg-jitter is in ns, the model's in ms.
    let jitter = st["avg-jitter"].as_f64().unwrap_or(f64::NAN) / 1e6;
    if (jitter - stats.avg_jitter_ms).abs() > 1e-6 {
        out.problems.push(format!(
            "{name}: avg-jitter {jitter} ms (element) vs {} ms (model)",
            stats.avg_jitter_ms
        ));
    }
    for (key, ours) in [
        ("dropped_on_latency", stats.dropped_on_latency),
        ("late_for_sink", stats.late_for_sink),
    ] {
        if peer[key].as_u64() != Some(ours) {
            out.problems.push(format!(
                "{name}: {key} {} (element) vs {ours} (model)",
                peer[key]
            ));
        }
    }
    if peer["packets_in"].as_u64() != Some(stream.packets().len() as u64) {
        out.problems.push(format!(
            "{name}: the element was fed {} packets, the model {}",
            peer["packets_in"],
            stream.packets().len()
        ));
    }
    let t0 = stream.packets().first().map_or(Nanos::ZERO, |s| s.arrival);
    let theirs = peer["outputs"].as_array().cloned().unwrap_or_default();
    let mut first_bad: Option<String> = None;
    for (i, p) in theirs.iter().enumerate() {
        let Some(o) = stats.outputs.get(i) else { break };
        let seq = stream.packets()[o.packet as usize].seq as u16;
        let pts = (o.pts - t0).as_nanos();
        let leave = (o.leave - t0).as_nanos();
        let ok = p["seq"].as_u64() == Some(u64::from(seq))
            && p["pts_ns"]
                .as_i64()
                .is_some_and(|t| (t - pts).abs() <= TOLERANCE)
            && p["leave_ns"]
                .as_i64()
                .is_some_and(|t| (t - leave).abs() <= TOLERANCE);
        if ok {
            out.matched += 1;
            let dev = [p["pts_ns"].as_i64(), p["leave_ns"].as_i64()]
                .into_iter()
                .zip([pts, leave])
                .filter_map(|(t, m)| Some((t? - m).abs()))
                .max()
                .unwrap_or(0);
            out.max_dev = out.max_dev.max(dev);
        } else if first_bad.is_none() {
            first_bad = Some(format!(
                "{name}: output {i}: element seq {} pts {} leave {}, model seq {seq} pts {pts} \
                 leave {leave} (ns from the first arrival)",
                p["seq"], p["pts_ns"], p["leave_ns"]
            ));
        }
    }
    if case.do_lost {
        compare_lost_events(&name, stats, peer, t0, &mut out);
    }
    if theirs.len() != stats.outputs.len() {
        out.problems.push(format!(
            "{name}: {} buffers pushed by the element, {} by the model",
            theirs.len(),
            stats.outputs.len()
        ));
    }
    if let Some(bad) = first_bad {
        out.problems.push(format!(
            "{bad}; {} of {} within 1 ms",
            out.matched,
            theirs.len()
        ));
    }
    eprintln!(
        "{name}: {} of {} buffers within 1 ms (max {} ns off); pushed {} lost {} late {} \
         duplicates {}",
        out.matched,
        theirs.len(),
        out.max_dev,
        stats.num_pushed,
        stats.num_lost,
        stats.num_late,
        stats.num_duplicates
    );
    out
}

/// With `do-lost`: the same `GstRTPPacketLost` events (sequence number; timestamp, duration
/// and leave time within 1 ms).
fn compare_lost_events(name: &str, stats: &Stats, peer: &Value, t0: Nanos, out: &mut Outcome) {
    let theirs = peer["lost_event_list"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if theirs.len() != stats.lost_events.len() {
        out.problems.push(format!(
            "{name}: {} lost events from the element, {} from the model",
            theirs.len(),
            stats.lost_events.len()
        ));
    }
    out.lost_events += theirs.len().min(stats.lost_events.len());
    let near = |v: &Value, ours: i64| v.as_i64().is_some_and(|t| (t - ours).abs() <= TOLERANCE);
    for (i, (p, e)) in theirs.iter().zip(&stats.lost_events).enumerate() {
        let ok = p["seqnum"].as_u64() == Some(u64::from(e.seq))
            && near(&p["timestamp"], (e.timestamp - t0).as_nanos())
            && near(&p["duration"], e.duration.as_nanos())
            && near(&p["leave_ns"], (e.at - t0).as_nanos());
        if !ok {
            out.problems.push(format!(
                "{name}: lost event {i}: element {p}, model {e:?} (t0 {t0:?})"
            ));
            break;
        }
    }
}

#[test]
fn the_model_agrees_with_the_real_rtpjitterbuffer_on_every_shared_audio_stream() {
    let Some(data) = shared_data() else { return };
    let tool = data.join("../tools/gst_jitterbuffer.py");
    if !have_peer(&tool) {
        return;
    }
    let files = captures(&data);
    let decoded: Vec<Decoded> = files.iter().map(|f| decode(f)).collect();
    let mut cases = Vec::new();
    for (k, (file, d)) in files.iter().zip(&decoded).enumerate() {
        for info in &d.streams {
            // Every audio stream; the video ones too (the element works on their packets).
            let media = Media::of(info);
            if media.kind.is_none() || info.clock_rate.is_none() {
                continue;
            }
            for (latency, drop_on_latency, do_lost) in CONFIGS {
                cases.push(Case {
                    file: file.clone(),
                    decoded: k,
                    info: info.clone(),
                    latency,
                    drop_on_latency,
                    do_lost,
                });
            }
        }
    }
    let audio = cases
        .iter()
        .filter(|c| Media::of(&c.info).is_audio())
        .count()
        / CONFIGS.len();
    assert!(
        audio >= 20,
        "expected the shared captures' 20-odd audio streams, found {audio}"
    );
    // The peer once per case, two at a time.
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().expect("the work counter");
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let Some(case) = cases.get(i) else { break };
                    let peer = run_peer(case, &tool);
                    let outcome = compare(case, &decoded[case.decoded], &peer);
                    results.lock().expect("the results").push((i, outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("the results");
    results.sort_by_key(|r| r.0);
    let packets: usize = results.iter().map(|r| r.1.packets).sum();
    let matched: usize = results.iter().map(|r| r.1.matched).sum();
    let max_dev = results.iter().map(|r| r.1.max_dev).max().unwrap_or(0);
    let lost_events: usize = results.iter().map(|r| r.1.lost_events).sum();
    let problems: Vec<&String> = results.iter().flat_map(|r| &r.1.problems).collect();
    eprintln!(
        "{} streams ({audio} audio) x {} configurations: {matched} of {packets} buffers within \
         1 ms of the element (largest difference {max_dev} ns); {lost_events} lost events \
         compared",
        cases.len() / CONFIGS.len(),
        CONFIGS.len()
    );
    assert!(
        problems.is_empty(),
        "{} disagreement(s):\n{}",
        problems.len(),
        problems
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The command line reports the same counters under "gstreamer".
    let case = &cases[0];
    let cli = json(&[
        "replay".as_ref(),
        case.file.as_os_str(),
        "--playout".as_ref(),
        "--policy".as_ref(),
        case.policy().as_ref(),
        "--stream".as_ref(),
        case.info.id.to_string().as_ref(),
        "--json".as_ref(),
    ]);
    let g = &cli["streams"][0]["gstreamer"];
    let peer = run_peer(case, &tool);
    assert_eq!(g["num_pushed"], peer["stats"]["num-pushed"], "{cli}");
    assert_eq!(g["num_lost"], peer["stats"]["num-lost"], "{cli}");
    assert_eq!(g["num_late"], peer["stats"]["num-late"], "{cli}");
}
