//! Real game and voice captures classified flow by flow, against tshark: the Nintendo Switch
//! game flows and the Firefall MMO flows as plain UDP with tshark's packet counts, rates and
//! inter-arrival percentiles; KakaoTalk's four RTP streams with an inferred 16 kHz clock and
//! their RTCP counted apart, and `tune` running on it.

use std::path::Path;
use std::process::Command;

use jitterlab_capture::testdata::shared_data;
use jitterlab_capture::timing::quantile;
use serde_json::Value;

use crate::util::{jitterlab, json};

fn info(path: &Path) -> Value {
    json(&["info".as_ref(), "--json".as_ref(), path.as_os_str()])
}

/// Within 1 % (or 0.01 in absolute terms for values near zero).
fn within_1pct(ours: f64, theirs: f64) -> bool {
    (ours - theirs).abs() <= 0.01_f64.max(0.01 * theirs.abs())
}

/// The stream of `info` on flow `src->dst`.
fn stream_on<'a>(info: &'a Value, flow: &str) -> &'a Value {
    let (src, dst) = flow.split_once("->").unwrap();
    info["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["flow"]["src"] == src && s["flow"]["dst"] == dst)
        .unwrap_or_else(|| panic!("no stream on {flow}"))
}

/// The `flow pkts dur_s pps iat_mean iat_p50 iat_p99 iat_max` table of a `.tshark.txt`.
fn per_direction_table(text: &str) -> Vec<(String, u64, f64, f64, f64, f64)> {
    text.lines()
        .skip_while(|l| !l.starts_with("flow "))
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let num = |i: usize| f.get(i)?.parse::<f64>().ok();
            Some((
                f.first()?.to_string(),
                f.get(1)?.parse().ok()?,
                num(3)?,
                num(5)?,
                num(6)?,
                num(7)?,
            ))
        })
        .collect()
}

/// The `A <-> B  frames_from_B bytes  frames_from_A bytes …` rows of tshark's `conv,udp`:
/// per direction, (src, dst, frames).
fn conversations(text: &str) -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || f[1] != "<->" {
            continue;
        }
        // Columns after the pair: frames and bytes B→A ("<-"), then A→B ("->"); bytes take
        // one or two words ("126 kB", "5268 bytes").
        let mut rest = f[3..].iter();
        let mut counts = Vec::new();
        while counts.len() < 2 {
            let Some(frames) = rest.next().and_then(|w| w.parse::<u64>().ok()) else {
                break;
            };
            counts.push(frames);
            rest.next();
            rest.next();
        }
        let (a, b) = (f[0].to_owned(), f[2].to_owned());
        if counts[0] > 0 {
            out.push((b.clone(), a.clone(), counts[0]));
        }
        if counts[1] > 0 {
            out.push((a, b, counts[1]));
        }
    }
    out
}

/// Checks every flow of a `.tshark.txt` per-direction table against `info`: a plain UDP stream
/// with its packet count, and rate and inter-arrival p50, p99 and max within 1 %. Returns the
/// rows checked.
fn agrees_with_table(info: &Value, text: &str) -> usize {
    let table = per_direction_table(text);
    for (flow, pkts, pps, p50, p99, max) in &table {
        let s = stream_on(info, flow);
        assert_eq!(s["protocol"], "udp", "{flow}");
        assert_eq!(s["packets"], *pkts, "{flow}");
        let t = &s["timing"];
        for (what, ours, theirs) in [
            ("rate", t["rate_pps"].as_f64().unwrap(), *pps),
            ("p50", t["iat_ms"]["p50"].as_f64().unwrap(), *p50),
            ("p99", t["iat_ms"]["p99"].as_f64().unwrap(), *p99),
            ("max", t["iat_ms"]["max"].as_f64().unwrap(), *max),
        ] {
            assert!(
                within_1pct(ours, theirs),
                "{flow} {what}: {ours} vs {theirs}"
            );
        }
    }
    table.len()
}

#[test]
fn nintendo_game_flows_are_what_tshark_counts_and_no_stray_rtp() {
    let Some(data) = shared_data() else { return };
    let path = data.join("pcap/ndpi_nintendo.pcap");
    let text = std::fs::read_to_string(data.join("pcap/ndpi_nintendo.pcap.tshark.txt")).unwrap();
    let info = info(&path);
    // Every direction of every conversation, once, with tshark's frame count.
    let convs = conversations(&text);
    assert_eq!(convs.len(), 25, "{convs:?}");
    let flows = info["flows"].as_array().unwrap();
    assert_eq!(flows.len(), convs.len());
    for (src, dst, frames) in &convs {
        let ours: Vec<&Value> = flows
            .iter()
            .filter(|f| f["src"] == src.as_str() && f["dst"] == dst.as_str())
            .collect();
        assert_eq!(ours.len(), 1, "{src}->{dst} listed {} times", ours.len());
        assert_eq!(ours[0]["packets"], *frames, "{src}->{dst}");
    }
    // The game flows, at tshark's rates and inter-arrival times.
    assert_eq!(agrees_with_table(&info, &text), 4);
    // DNS answers and one-packet flows are not RTP streams.
    for s in info["streams"].as_array().unwrap() {
        assert_ne!(s["protocol"], "rtp", "{s}");
    }
}

/// tshark, when installed (it is a peer: `.ci/run` installs it and sets
/// `JITTERLAB_REQUIRE_PEERS`, under which a missing tshark fails the test).
fn tshark() -> Option<&'static str> {
    let found = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
            "JITTERLAB_REQUIRE_PEERS is set but tshark is not installed"
        );
        eprintln!("skipped: tshark is not installed (apt-get install tshark)");
        return None;
    }
    Some("tshark")
}

#[test]
fn firefall_flows_have_the_interarrival_times_of_tsharks_packet_times() {
    let Some(data) = shared_data() else { return };
    let path = data.join("pcap/themeldingwars_firefall-1869-gameplay.pcapng");
    let info = info(&path);
    let text = std::fs::read_to_string(
        data.join("pcap/themeldingwars_firefall-1869-gameplay.pcapng.tshark.txt"),
    )
    .unwrap();
    for (src, dst, frames) in conversations(&text) {
        let s = stream_on(&info, &format!("{src}->{dst}"));
        assert_eq!(s["packets"], frames, "{src}->{dst}");
        assert_eq!(s["protocol"], "udp", "{src}->{dst}");
    }
    let streams = info["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 4, "no stream made of stray packets");
    // The reference table's figures (computed from tshark's times when the data was made).
    assert_eq!(agrees_with_table(&info, &text), 2);
    let Some(tshark) = tshark() else { return };
    let out = Command::new(tshark)
        .args(["-n", "-r"])
        .arg(&path)
        .args(["-Y", "udp", "-T", "fields", "-e", "frame.time_epoch"])
        .args([
            "-e",
            "ip.src",
            "-e",
            "udp.srcport",
            "-e",
            "ip.dst",
            "-e",
            "udp.dstport",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut times: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() == 5 {
            times
                .entry(format!("{}:{}->{}:{}", f[1], f[2], f[3], f[4]))
                .or_default()
                .push(f[0].parse().unwrap());
        }
    }
    let mut checked = 0;
    for (flow, t) in &times {
        if t.len() < 100 {
            continue;
        }
        let mut iat: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]) * 1e3).collect();
        iat.sort_unstable_by(f64::total_cmp);
        let s = stream_on(&info, flow);
        assert_eq!(s["packets"], t.len(), "{flow}");
        let ours = &s["timing"]["iat_ms"];
        for (q, key) in [(0.5, "p50"), (0.95, "p95"), (0.99, "p99"), (1.0, "max")] {
            let (a, b) = (ours[key].as_f64().unwrap(), quantile(&iat, q));
            assert!(within_1pct(a, b), "{flow} {key}: {a} vs tshark's times {b}");
        }
        checked += 1;
    }
    assert_eq!(checked, 2, "server→client and client→server");
}

#[test]
fn kakaotalk_has_four_rtp_streams_at_an_inferred_16_khz_and_tune_runs() {
    let Some(data) = shared_data() else { return };
    for file in [
        "ndpi_KakaoTalk_talk.pcap",
        "withsdp/ndpi_KakaoTalk_talk.withsdp.pcapng",
    ] {
        let path = data.join("pcap").join(file);
        if !path.exists() {
            assert!(
                !file.starts_with("withsdp"),
                "{} is missing",
                path.display()
            );
            continue;
        }
        let info = info(&path);
        let rtp: Vec<&Value> = info["streams"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["protocol"] == "rtp")
            .collect();
        let mut packets: Vec<u64> = rtp.iter().map(|s| s["packets"].as_u64().unwrap()).collect();
        packets.sort_unstable();
        // tshark's RTP streams table (.tshark.txt).
        assert_eq!(packets, [742, 746, 746, 757], "{file}");
        for s in &rtp {
            assert_eq!(s["clock_rate"], 16_000, "{file}: {s}");
            if !file.starts_with("withsdp") {
                assert_eq!(s["clock_inferred"]["hz"], 16_000, "{file}: {s}");
            }
        }
        let rtcp: u64 = info["flows"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["counted"]["rtcp"].as_u64())
            .sum();
        assert_eq!(rtcp, 44, "{file}: RTCP counted apart");
        let out = jitterlab()
            .args(["tune", "-q", "--json"])
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{file}: tune failed: {err}");
        let tune: Value = serde_json::from_slice(&out.stdout).unwrap();
        // Voice: played out as audio, every configuration on the four streams; the downlink's
        // 3 s stall leaves only a buffer that grows to seconds within the late limit.
        assert_eq!(tune["mode"], "playout", "{file}: {tune}");
        assert!(
            tune["configurations"].as_u64().unwrap() > 50,
            "{file}: {tune}"
        );
        assert!(
            tune["recommendation"]["policy"].is_string(),
            "{file}: {tune}"
        );
        // The two DNS packets are plain flows without send times: named, not fatal.
        assert!(err.contains("stream skipped"), "{file}: {err}");
    }
}
