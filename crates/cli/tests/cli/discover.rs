//! `jitterlab discover`: on a trace written here (a known synthetic protocol, a flow mixing
//! message kinds, random payloads, a flow too short), the JSON keys scripts rely on and the
//! layouts found; and on a real MMO capture from the shared data, what it finds.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::Path;

use jitterlab_capture::discover::synthetic::{Generated, Protocol, random_flow};
use jitterlab_capture::testdata::shared_data;
use jitterlab_capture::trace::{Clock, Endpoint, Source};
use jitterlab_capture::{Header, Record, Writer};
use serde_json::Value;

use crate::util::{jitterlab, json};

const ONE: &str = "10.0.0.1:5000-10.0.0.2:6000";
const MIXED: &str = "10.0.0.3:5000-10.0.0.2:6000";
const RANDOM: &str = "10.0.0.4:5000-10.0.0.2:6000";
const SHORT: &str = "10.0.0.5:5000-10.0.0.2:6000";

/// A trace of four flows, interleaved by arrival: protocol seed 0, the mixed protocol of seed
/// 6, random payloads, and 10 packets of seed 1.
fn write_trace(path: &Path) {
    let flows: Vec<(&str, Vec<Generated>)> = vec![
        (ONE, Protocol::new(0).packets(800)),
        (MIXED, Protocol::new(6).packets(1200)),
        (RANDOM, random_flow(3, 500)),
        (SHORT, Protocol::new(1).packets(10)),
    ];
    let mut records: Vec<Record> = Vec::new();
    for (name, packets) in flows {
        let (src, dst) = name.split_once('-').unwrap();
        let ends = |a: &str| Some(Endpoint(a.parse::<SocketAddr>().unwrap()));
        for g in packets {
            let mut r = Record::received(g.arrival, g.payload);
            (r.src, r.dst) = (ends(src), ends(dst));
            records.push(r);
        }
    }
    records.sort_by_key(|r| r.time);
    let header = Header::at(
        Clock {
            name: "synthetic".into(),
            realtime_offset_ns: None,
        },
        Source {
            kind: "synthetic".into(),
            detail: "discover test".into(),
        },
        0,
    );
    let mut w = Writer::new(std::fs::File::create(path).unwrap(), &header).unwrap();
    for r in &records {
        w.write(r).unwrap();
    }
    w.flush().unwrap();
}

fn stream<'a>(out: &'a Value, flow: &str) -> &'a Value {
    out["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["flow"] == flow)
        .unwrap_or_else(|| panic!("no stream for {flow} in {out:#}"))
}

#[test]
fn discover_json_finds_the_layouts_of_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("flows.jtr");
    write_trace(&trace);
    let out = json(&[
        OsStr::new("discover"),
        trace.as_os_str(),
        OsStr::new("--json"),
    ]);
    let streams = out["streams"].as_array().unwrap();
    // The 10-packet flow is below the size studied without a selection.
    assert_eq!(streams.len(), 3, "{out:#}");
    for s in streams {
        for key in ["stream", "flow", "layout", "confidence", "candidates"] {
            assert!(s.get(key).is_some(), "{key} missing in {s:#}");
        }
        for c in s["candidates"].as_array().unwrap() {
            for key in ["field", "type", "offset", "unit", "share"] {
                assert!(c.get(key).is_some(), "{key} missing in {c:#}");
            }
        }
    }

    let one = stream(&out, ONE);
    let truth = Protocol::new(0).truth();
    assert_eq!(one["layout"], truth[0].as_str(), "{one:#}");
    let n = one["stream"].as_u64().unwrap().to_string();
    let again = json(&[
        OsStr::new("discover"),
        trace.as_os_str(),
        OsStr::new("--json"),
        OsStr::new("--stream"),
        OsStr::new(&n),
    ]);
    assert_eq!(
        again["streams"][0]["flow"], ONE,
        "--stream {n} is the same flow"
    );
    assert!(one["confidence"].as_f64().unwrap() > 0.9);
    let fields: Vec<(&str, &str, u64)> = one["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["chosen"] == true)
        .map(|c| {
            (
                c["field"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
                c["offset"].as_u64().unwrap(),
            )
        })
        .collect();
    let kind = &Protocol::new(0).kinds[0];
    let (seq, send) = (kind.seq.as_ref().unwrap(), kind.send.as_ref().unwrap());
    let (seq_ty, send_ty) = (seq.ty.to_string(), send.ty.to_string());
    assert_eq!(
        fields,
        [
            ("seq", seq_ty.as_str(), seq.offset as u64),
            ("send", send_ty.as_str(), send.offset as u64)
        ],
        "{truth:?}"
    );
    let unit = one["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == "send" && c["chosen"] == true)
        .unwrap()["unit"]
        .clone();
    assert_eq!(unit, send.unit.to_string());

    let mixed = stream(&out, MIXED);
    let mut want = Protocol::new(6).truth();
    let mut got: Vec<String> = mixed["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k["layout"].as_str().map(str::to_owned))
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "{mixed:#}");
    assert!(
        want.iter().any(|w| w == mixed["layout"].as_str().unwrap()),
        "the best is one of the kinds' layouts"
    );
    assert!(
        mixed["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["field"] == "type" && c["offset"] == mixed["type_offset"]),
        "the type byte is a candidate: {mixed:#}"
    );

    let random = stream(&out, RANDOM);
    assert_eq!(random["layout"], Value::Null, "{random:#}");
    assert!(random["confidence"].as_f64().unwrap() < random["threshold"].as_f64().unwrap());

    // Selected, the short flow is studied and nothing is found.
    let short = json(&[
        OsStr::new("discover"),
        trace.as_os_str(),
        OsStr::new("--json"),
        OsStr::new("--flow"),
        OsStr::new(SHORT),
    ]);
    let s = &short["streams"][0];
    assert_eq!(
        (s["flow"].as_str(), s["layout"].as_str()),
        (Some(SHORT), None)
    );
    assert!(s["note"].as_str().unwrap().contains("too few"), "{s:#}");
}

#[test]
fn discover_text_says_what_to_paste_and_what_was_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("flows.jtr");
    write_trace(&trace);
    let out = jitterlab()
        .args([
            OsStr::new("discover"),
            trace.as_os_str(),
            OsStr::new("--flow"),
            OsStr::new(ONE),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let spec = &Protocol::new(0).truth()[0];
    assert!(
        text.contains(&format!("paste: --decoder 'layout:{spec}'")),
        "{text}"
    );
    assert!(text.contains("[chosen]"), "{text}");

    let out = jitterlab()
        .args([
            OsStr::new("discover"),
            trace.as_os_str(),
            OsStr::new("--flow"),
            OsStr::new(RANDOM),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("nothing found") && text.contains("nothing to paste"),
        "{text}"
    );

    let out = jitterlab()
        .args([
            OsStr::new("discover"),
            trace.as_os_str(),
            OsStr::new("--flow"),
            OsStr::new("1.2.3.4:1-5.6.7.8:2"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("no flow 1.2.3.4:1-5.6.7.8:2") && err.contains(ONE),
        "{err}"
    );
    let out = jitterlab()
        .args([
            OsStr::new("discover"),
            trace.as_os_str(),
            OsStr::new("--flow"),
            OsStr::new("nonsense"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("expected SRC-DST")
    );
}

/// The Firefall MMO capture (30,686 UDP datagrams): the two game flows, with tshark's packet
/// counts. Client to server: a constant 4-byte prefix and a byte with four values in its top
/// two bits, no counter, no send time. Server to client: the same prefix and a one-byte
/// counter at byte 7 (the low byte of a per-channel sequence, consistent in 89 % of packets),
/// but no send time, and the counter does not advance steadily enough to be a clock. Nothing
/// is proposed, which is the true answer: no fixed-offset layout explains these flows.
#[test]
fn discover_on_the_firefall_capture_finds_no_layout() {
    let Some(data) = shared_data() else { return };
    let path = data.join("pcap/themeldingwars_firefall-1869-gameplay.pcapng");
    let out = json(&[
        OsStr::new("discover"),
        path.as_os_str(),
        OsStr::new("--json"),
    ]);
    let streams = out["streams"].as_array().unwrap();
    let packets: Vec<(&str, u64)> = streams
        .iter()
        .map(|s| (s["flow"].as_str().unwrap(), s["packets"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        packets,
        [
            ("192.168.1.111:58637-52.16.251.62:59238", 4860),
            ("52.16.251.62:59238-192.168.1.111:58637", 25822)
        ]
    );
    for s in streams {
        assert_eq!(s["layout"], Value::Null, "{s:#}");
        assert!(s["confidence"].as_f64().unwrap() < 0.5);
        let prefix = s["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["offset"] == 0)
            .unwrap();
        assert_eq!(
            (prefix["field"].as_str(), prefix["type"].as_str()),
            (Some("type"), Some("u8*4"))
        );
        assert_eq!(prefix["evidence"]["constant"], "87110628");
    }
    let seq: Vec<&Value> = streams[1]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["field"] == "seq")
        .collect();
    assert_eq!(seq.len(), 1, "{seq:?}");
    assert_eq!(
        (seq[0]["type"].as_str(), seq[0]["offset"].as_u64()),
        (Some("u8"), Some(7))
    );
    assert!(
        streams[0]["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["field"] == "type")
    );
}
