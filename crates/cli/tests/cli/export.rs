//! `jitterlab export`: traces back out as pcapng/pcap, read by tshark packet for packet (times
//! to the nanosecond, addresses, lengths, payload bytes, ground truth on interface 1 with its
//! comment), imported again into the same records, dissected by the Lua probe dissector into
//! what jitterlab decodes; and the per-packet table against the decoded samples and
//! `jitterlab info --json`.
//!
//! tshark is a peer: skipped (saying so) when absent, failing under `JITTERLAB_REQUIRE_PEERS`.
//! The shared captures come from `JITTERLAB_SHARED_DATA`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use jitterlab_capture::decode::decode_trace;
use jitterlab_capture::export::placeholder;
use jitterlab_capture::testdata::shared_data;
use jitterlab_capture::trace::{CaptureStats, Clock, Direction, Endpoint, Source, flags};
use jitterlab_capture::{Decoded, Header, Nanos, Reader, Record, RecordKind, Writer};
use serde_json::Value;

use crate::util::{jitterlab, json};

/// tshark, when installed.
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

/// tshark's fields for every frame of `path`, one row per frame (tab-separated fields).
fn tshark_fields(path: &Path, pre: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(pre)
        .args(["-n", "-r"])
        .arg(path)
        .args(["-T", "fields"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "tshark failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

/// `frame.time_epoch` text (`S.NNNNNNNNN`) as exact nanoseconds.
fn epoch_ns(text: &str) -> i128 {
    let (s, frac) = text.split_once('.').unwrap_or((text, ""));
    assert!(frac.len() <= 9, "{text}");
    let frac = format!("{frac:0<9}");
    s.parse::<i128>().unwrap() * 1_000_000_000 + frac.parse::<i128>().unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn read_trace(path: &Path) -> (Header, Vec<Record>) {
    let mut r = Reader::new(std::fs::File::open(path).unwrap()).unwrap();
    let header = r.header().clone();
    let mut recs = Vec::new();
    while let Some(rec) = r.read_record().unwrap() {
        recs.push(rec);
    }
    (header, recs)
}

fn decode(path: &Path) -> Decoded {
    decode_trace(
        Reader::new(std::fs::File::open(path).unwrap()).unwrap(),
        None,
    )
    .unwrap()
}

fn export(trace: &Path, out: &Path, extra: &[&str]) -> String {
    let o = jitterlab()
        .arg("export")
        .arg(trace)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "export failed: {stderr}");
    stderr
}

/// The packets an export of `recs` holds, in order: (interface, Unix ns, src, dst, original
/// payload length, payload).
fn expected(
    header: &Header,
    recs: &[Record],
    pcapng: bool,
) -> Vec<(u32, i128, SocketAddr, SocketAddr, u32, Vec<u8>)> {
    let offset = i128::from(header.clock.realtime_offset_ns.unwrap_or(0));
    recs.iter()
        .filter_map(|r| {
            let iface = match r.kind {
                RecordKind::Received => 0,
                RecordKind::Sent if pcapng => 1,
                _ => return None,
            };
            let (src, dst, _) = placeholder::endpoints(r);
            Some((
                iface,
                i128::from(r.time.as_nanos()) + offset,
                src,
                dst,
                r.orig_len,
                r.payload.clone(),
            ))
        })
        .collect()
}

const FIELDS: &[&str] = &[
    "frame.interface_id",
    "frame.time_epoch",
    "ip.src",
    "ipv6.src",
    "udp.srcport",
    "ip.dst",
    "ipv6.dst",
    "udp.dstport",
    "udp.length",
    "frame.len",
    "frame.cap_len",
    "frame.comment",
    "udp.payload",
    "udp.checksum.status",
    "ip.checksum.status",
];

/// tshark reads `capture` as exactly the packets of `recs`: interface, time to the ns,
/// addresses, UDP length, payload bytes; ground truth commented with its kind.
fn assert_tshark_matches(capture: &Path, header: &Header, recs: &[Record], pcapng: bool) {
    // Checksums are checked (tshark does not by default): 1 is "good".
    let rows = tshark_fields(
        capture,
        &[
            "-o",
            "udp.check_checksum:TRUE",
            "-o",
            "ip.check_checksum:TRUE",
        ],
        FIELDS,
    );
    let want = expected(header, recs, pcapng);
    assert_eq!(rows.len(), want.len(), "{}: frames", capture.display());
    for (i, (row, (iface, ns, src, dst, orig, payload))) in rows.iter().zip(&want).enumerate() {
        let at = format!("{} frame {}", capture.display(), i + 1);
        if pcapng {
            assert_eq!(row[0], iface.to_string(), "{at}: interface");
        }
        assert_eq!(epoch_ns(&row[1]), *ns, "{at}: time {}", row[1]);
        let ip = |v4: &str, v6: &str| {
            if v4.is_empty() {
                v6.to_owned()
            } else {
                v4.to_owned()
            }
        };
        let src_ip = ip(&row[2], &row[3]);
        let dst_ip = ip(&row[5], &row[6]);
        let mapped = |a: &SocketAddr, other: &SocketAddr| match (a, other) {
            (SocketAddr::V4(v4), SocketAddr::V6(_)) => v4.ip().to_ipv6_mapped().to_string(),
            _ => a.ip().to_string(),
        };
        assert_eq!(src_ip, mapped(src, dst), "{at}: source");
        assert_eq!(dst_ip, mapped(dst, src), "{at}: destination");
        assert_eq!(row[4], src.port().to_string(), "{at}: source port");
        assert_eq!(row[7], dst.port().to_string(), "{at}: destination port");
        assert_eq!(row[8], (orig + 8).to_string(), "{at}: UDP length");
        let header_len = if src.is_ipv4() && dst.is_ipv4() {
            28
        } else {
            48
        };
        assert_eq!(
            row[9],
            (orig + header_len).to_string(),
            "{at}: frame length"
        );
        assert_eq!(
            row[10],
            (payload.len() as u32 + header_len).to_string(),
            "{at}: captured"
        );
        if *iface == 1 {
            assert!(
                row[11].contains("jitterlab kind=sent"),
                "{at}: comment {:?}",
                row[11]
            );
        }
        if payload.len() as u32 == *orig {
            assert_eq!(row[12], hex(payload), "{at}: payload");
            assert_eq!(row[13], "1", "{at}: UDP checksum");
        }
        if src.is_ipv4() && dst.is_ipv4() {
            assert_eq!(row[14], "1", "{at}: IPv4 header checksum");
        }
    }
}

/// `jitterlab import CAPTURE` gives back the records: kind, time, addresses (placeholders
/// where the trace had none), original length and payload, in order.
fn assert_import_gives_back(
    capture: &Path,
    header: &Header,
    recs: &[Record],
    pcapng: bool,
    dir: &Path,
) {
    let back = dir.join(format!(
        "{}.back.jtr",
        capture.file_name().unwrap().to_string_lossy()
    ));
    jitterlab()
        .arg("import")
        .arg(capture)
        .arg("-o")
        .arg(&back)
        .assert()
        .success();
    let (_, got) = read_trace(&back);
    let want = expected(header, recs, pcapng);
    assert_eq!(
        got.len(),
        want.len(),
        "{}: records imported back",
        capture.display()
    );
    for (i, (g, (iface, ns, src, dst, orig, payload))) in got.iter().zip(&want).enumerate() {
        let kind = if *iface == 1 {
            RecordKind::Sent
        } else {
            RecordKind::Received
        };
        assert_eq!(g.kind, kind, "record {i}");
        assert_eq!(i128::from(g.time.as_nanos()), *ns, "record {i}");
        assert_eq!(
            (g.src, g.dst),
            (Some(Endpoint(*src)), Some(Endpoint(*dst))),
            "record {i}"
        );
        assert_eq!((g.orig_len, &g.payload), (*orig, payload), "record {i}");
    }
}

/// The Lua dissector reads every probe packet as jitterlab decodes it: stream, tick, send
/// time, state, lifecycle and values, received ones on interface 0 and ground truth on 1.
fn assert_lua_matches(capture: &Path, decoded: &Decoded) {
    let lua = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../contrib/wireshark/jitterlab_probe.lua");
    let script = format!("lua_script:{}", lua.display());
    let rows = tshark_fields(
        capture,
        &["-X", &script],
        &[
            "frame.interface_id",
            "jitterlab_probe.stream",
            "jitterlab_probe.tick",
            "jitterlab_probe.send_ns",
            "jitterlab_probe.state",
            "jitterlab_probe.lifecycle",
            "jitterlab_probe.value",
        ],
    );
    let (mut received, mut truth) = (decoded.samples.iter(), decoded.truth.iter());
    let mut checked = 0;
    for (i, row) in rows.iter().enumerate() {
        let s = if row[0] == "1" {
            truth.next()
        } else {
            received.next()
        }
        .expect("a sample per frame");
        let at = format!("frame {}", i + 1);
        let info = decoded.streams.iter().find(|x| x.id == s.stream).unwrap();
        assert_eq!(
            row[1],
            info.probe_stream.unwrap().to_string(),
            "{at}: stream"
        );
        assert_eq!(row[2], s.seq.to_string(), "{at}: tick");
        assert_eq!(row[3], s.send.as_nanos().to_string(), "{at}: send time");
        assert_eq!(row[4], s.state.unwrap().to_string(), "{at}: state");
        let flag = u8::from_str_radix(row[5].trim_start_matches("0x"), 16).unwrap();
        assert_eq!(flag, s.event.map_or(0, |e| e.flag()), "{at}: lifecycle");
        let values: Vec<f64> = row[6]
            .split(',')
            .filter(|v| !v.is_empty())
            .map(|v| v.parse().unwrap())
            .collect();
        assert_eq!(values.len(), s.values.len(), "{at}: values");
        for (a, b) in values.iter().zip(&s.values) {
            // tshark prints doubles with 15 significant digits.
            assert!(
                (a - b).abs() <= 1e-13 * b.abs().max(1.0),
                "{at}: value {a} vs {b}"
            );
        }
        checked += 1;
    }
    assert!(
        received.next().is_none() && truth.next().is_none(),
        "every sample dissected"
    );
    assert!(checked > 0);
}

#[test]
fn a_synthetic_probe_trace_reads_back_in_tshark_import_and_the_lua_dissector() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("wifi.jtr");
    jitterlab()
        .args([
            "synth",
            "--profile",
            "wifi",
            "--duration",
            "8s",
            "--seed",
            "11",
            "-o",
        ])
        .arg(&trace)
        .assert()
        .success();
    let (header, recs) = read_trace(&trace);
    assert!(recs.iter().any(|r| r.kind == RecordKind::Sent));
    let pcapng = dir.path().join("wifi.pcapng");
    let said = export(&trace, &pcapng, &[]);
    let received = recs
        .iter()
        .filter(|r| r.kind == RecordKind::Received)
        .count();
    let sent = recs.len() - received;
    assert!(
        said.contains(&format!(
            "exported {received} received datagram(s), {sent} ground-truth record(s) on interface 1"
        )),
        "{said}"
    );
    assert!(said.contains("placeholder addresses"), "{said}");
    let Some(_) = tshark() else { return };
    assert_tshark_matches(&pcapng, &header, &recs, true);
    assert_import_gives_back(&pcapng, &header, &recs, true, dir.path());
    assert_lua_matches(&pcapng, &decode(&trace));
    // pcap: the received datagrams, the ground truth counted as left out.
    let pcap = dir.path().join("wifi.pcap");
    let said = export(&trace, &pcap, &[]);
    assert!(
        said.contains(&format!("left out: {sent} ground-truth record(s)")),
        "{said}"
    );
    assert_tshark_matches(&pcap, &header, &recs, false);
    assert_import_gives_back(&pcap, &header, &recs, false, dir.path());
    // --format overrides the extension.
    let odd = dir.path().join("wifi.bin");
    export(&trace, &odd, &["--format", "pcap"]);
    assert_eq!(std::fs::read(&odd).unwrap(), std::fs::read(&pcap).unwrap());
}

#[test]
fn shared_captures_export_with_their_own_times_addresses_and_payloads() {
    let Some(data) = shared_data() else { return };
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "sipp_g711a.pcap",
        "ndpi_nintendo.pcap",
        "themeldingwars_firefall-1869-gameplay.pcapng",
    ] {
        let original = data.join("pcap").join(name);
        let trace = dir.path().join(format!("{name}.jtr"));
        jitterlab()
            .arg("import")
            .arg(&original)
            .arg("-o")
            .arg(&trace)
            .assert()
            .success();
        let (header, recs) = read_trace(&trace);
        let out = dir.path().join(format!("{name}.pcapng"));
        let said = export(&trace, &out, &[]);
        assert!(!said.contains("placeholder"), "{name}: {said}");
        assert!(!said.contains("left out"), "{name}: {said}");
        let Some(_) = tshark() else { return };
        assert_tshark_matches(&out, &header, &recs, true);
        assert_import_gives_back(&out, &header, &recs, true, dir.path());
        // And against tshark on the original capture: the same UDP datagrams at the same
        // times, from the same addresses, with the same payloads.
        let fields = [
            "frame.time_epoch",
            "ip.src",
            "udp.srcport",
            "ip.dst",
            "udp.dstport",
            "udp.payload",
        ];
        let theirs = tshark_fields(&original, &["-Y", "udp && !icmp && !icmpv6"], &fields);
        // Exporting the capture itself gives the same packets as exporting its trace.
        let direct = dir.path().join(format!("{name}.direct.pcapng"));
        export(&original, &direct, &[]);
        assert_eq!(
            tshark_fields(&direct, &[], FIELDS),
            tshark_fields(&out, &[], FIELDS),
            "{name}: direct export"
        );
        let ours = tshark_fields(&out, &[], &fields);
        assert_eq!(ours.len(), theirs.len(), "{name}: UDP datagrams");
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(
                epoch_ns(&a[0]),
                epoch_ns(&b[0]),
                "{name} datagram {i}: time"
            );
            assert_eq!(a[1..], b[1..], "{name} datagram {i}");
        }
    }
}

/// A hand-made trace with what synthetic and imported traces lack: IPv6 and a truncated
/// payload, a relayed direction and an injected duplicate, capture statistics, a kind this
/// version does not know, and a realtime offset.
#[test]
fn edge_records_are_written_commented_or_counted_never_dropped_silently() {
    let dir = tempfile::tempdir().unwrap();
    let mut header = Header::at(
        Clock {
            name: "CLOCK_MONOTONIC".into(),
            realtime_offset_ns: Some(1_750_000_000_000_000_000),
        },
        Source {
            kind: "relay".into(),
            detail: "test".into(),
        },
        0,
    );
    header.decoder = Some("auto".into());
    let v6 = |s: &str| Some(Endpoint(s.parse().unwrap()));
    let mut cut = Record::received(Nanos(123_456_789), vec![0x55; 40]);
    cut.orig_len = 1400;
    cut.src = v6("[2001:db8::10]:4000");
    cut.dst = v6("[2001:db8::20]:5000");
    cut.flags = flags::KERNEL_TIMESTAMP;
    let mut relayed = Record::received(Nanos(223_456_789), b"to the server".to_vec());
    relayed.src = v6("10.1.1.1:3000");
    relayed.dst = v6("10.2.2.2:7777");
    relayed.direction = Direction::ToUpstream;
    relayed.flags = flags::INJECTED_DUPLICATE;
    let stats = CaptureStats {
        received: 2,
        kernel_drops: 3,
        ..CaptureStats::default()
    }
    .to_record(Nanos(300_000_000));
    let unknown = Record {
        kind: RecordKind::Other(42),
        ..Record::received(Nanos(400_000_000), vec![1])
    };
    let recs = vec![cut, relayed, stats, unknown];
    let trace = dir.path().join("edge.jtr");
    let mut w = Writer::new(std::fs::File::create(&trace).unwrap(), &header).unwrap();
    for r in &recs {
        w.write(r).unwrap();
    }
    drop(w.into_inner());
    let out = dir.path().join("edge.pcapng");
    let said = export(&trace, &out, &[]);
    assert!(
        said.contains("exported 2 received datagram(s), 1 capture statistics block(s)"),
        "{said}"
    );
    assert!(
        said.contains("1 packet(s) were cut to a snap length"),
        "{said}"
    );
    assert!(
        said.contains("left out: 1 record(s) of a kind this version does not know"),
        "{said}"
    );
    let Some(_) = tshark() else { return };
    assert_tshark_matches(&out, &header, &recs, true);
    let comments = tshark_fields(&out, &[], &["frame.comment"]);
    assert_eq!(comments[0], [""]);
    assert_eq!(
        comments[1],
        ["jitterlab kind=received direction=to-upstream flags=injected-duplicate"]
    );
    assert_import_gives_back(&out, &header, &recs, true, dir.path());
    // The statistics block and the section comment, as capinfos (Wireshark's, installed with
    // tshark) reads them.
    let o = Command::new("capinfos").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Name = jitterlab-received"), "{text}");
    assert!(text.contains("Number of stat entries = 1"), "{text}");
    assert!(text.contains("Time precision = nanoseconds (9)"), "{text}");
    assert!(
        text.contains("plus its realtime offset (1750000000000000000 ns)"),
        "{text}"
    );
    // The table: the relayed packet's direction, no send times for plain UDP, UTC times from
    // the clock's offset.
    let nd = dir.path().join("edge.ndjson");
    export(&trace, &nd, &[]);
    let rows: Vec<Value> = std::fs::read_to_string(&nd)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let relayed = rows
        .iter()
        .find(|r| r["flow"] == "10.1.1.1:3000-10.2.2.2:7777")
        .expect("the relayed packet has a row");
    assert_eq!(relayed["direction"], "to-upstream");
    assert_eq!(relayed["send_ns"], Value::Null);
    assert_eq!(relayed["transit_ms"], Value::Null);
    assert_eq!(relayed["utc_ns"], Value::from(1_750_000_000_223_456_789i64));
    assert_eq!(relayed["utc"], "2025-06-15T15:06:40.223456789Z");
}

#[test]
fn the_packet_table_holds_the_decoded_samples_in_every_format() {
    use polars::prelude::*;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("lte.jtr");
    jitterlab()
        .args([
            "synth",
            "--profile",
            "lte",
            "--duration",
            "6s",
            "--seed",
            "4",
            "-o",
        ])
        .arg(&trace)
        .assert()
        .success();
    let decoded = decode(&trace);
    let parquet = dir.path().join("p.parquet");
    let said = export(&trace, &parquet, &["--packets"]);
    assert!(said.contains("utc is null"), "{said}");
    let df = ParquetReader::new(std::fs::File::open(&parquet).unwrap())
        .finish()
        .unwrap();
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "stream",
            "flow",
            "protocol",
            "sequence",
            "send_ns",
            "arrival_ns",
            "transit_ms",
            "size",
            "marker",
            "payload_type",
            "kind",
            "direction",
            "utc_ns",
            "utc"
        ]
    );
    let all: Vec<_> = decoded
        .samples
        .iter()
        .map(|s| ("received", s))
        .chain(decoded.truth.iter().map(|s| ("sent", s)))
        .collect();
    assert_eq!(df.height(), all.len());
    let seq = df.column("sequence").unwrap().i64().unwrap();
    let send = df.column("send_ns").unwrap().i64().unwrap();
    let arrival = df.column("arrival_ns").unwrap().i64().unwrap();
    let transit = df.column("transit_ms").unwrap().f64().unwrap();
    let kind = df.column("kind").unwrap().str().unwrap();
    let size = df.column("size").unwrap().u32().unwrap();
    for (i, (k, s)) in all.iter().enumerate() {
        assert_eq!(seq.get(i), Some(s.seq), "row {i}");
        assert_eq!(send.get(i), Some(s.send.as_nanos()), "row {i}");
        assert_eq!(arrival.get(i), Some(s.arrival.as_nanos()), "row {i}");
        let want = (s.arrival - s.send).as_millis_f64();
        assert!((transit.get(i).unwrap() - want).abs() < 1e-9, "row {i}");
        assert_eq!(kind.get(i), Some(*k), "row {i}");
        assert_eq!(size.get(i), Some(32 + 8 * s.values.len() as u32), "row {i}");
    }
    // Per stream, as many received rows as `info --json` counts packets.
    let info = json(&["info".as_ref(), "--json".as_ref(), trace.as_os_str()]);
    for s in info["streams"].as_array().unwrap() {
        let id = s["stream"].as_u64().unwrap() as u32;
        let rows = (0..df.height())
            .filter(|&i| {
                kind.get(i) == Some("received")
                    && df.column("stream").unwrap().u32().unwrap().get(i) == Some(id)
            })
            .count();
        assert_eq!(Value::from(rows), s["packets"], "stream {id}");
    }
    // CSV and NDJSON: the same rows.
    let csv = dir.path().join("p.csv");
    export(&trace, &csv, &["--packets"]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap(), names.join(","));
    let last = df.height() - 1;
    let csv_last: Vec<&str> = text.lines().last().unwrap().split(',').collect();
    assert_eq!(csv_last[3], seq.get(last).unwrap().to_string());
    assert_eq!(csv_last[10], "sent");
    assert_eq!(text.lines().count(), df.height() + 1);
    let nd = dir.path().join("p.ndjson");
    export(&trace, &nd, &["--packets"]);
    let rows: Vec<Value> = std::fs::read_to_string(&nd)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), df.height());
    let first = rows[0].as_object().unwrap();
    assert_eq!(first.keys().collect::<Vec<_>>().len(), names.len());
    assert_eq!(first["sequence"], Value::from(seq.get(0).unwrap()));
    assert_eq!(first["arrival_ns"], Value::from(arrival.get(0).unwrap()));
    assert_eq!(first["utc"], Value::Null);
}

#[test]
fn the_packet_table_of_a_capture_has_flows_and_utc_times() {
    use polars::prelude::*;
    let Some(data) = shared_data() else { return };
    let dir = tempfile::tempdir().unwrap();
    let capture = data.join("pcap/sipp_g711a.pcap");
    let parquet = dir.path().join("call.parquet");
    export(&capture, &parquet, &["--packets"]);
    let df = ParquetReader::new(std::fs::File::open(&parquet).unwrap())
        .finish()
        .unwrap();
    let info = json(&["info".as_ref(), "--json".as_ref(), capture.as_os_str()]);
    let total: u64 = info["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["packets"].as_u64().unwrap())
        .sum();
    assert_eq!(df.height() as u64, total);
    let flow = df.column("flow").unwrap().str().unwrap();
    let utc = df.column("utc").unwrap().str().unwrap();
    let utc_ns = df.column("utc_ns").unwrap().i64().unwrap();
    let arrival = df.column("arrival_ns").unwrap().i64().unwrap();
    let first = &info["streams"][0];
    assert_eq!(
        flow.get(0).unwrap(),
        format!(
            "{}-{}",
            first["src"].as_str().unwrap(),
            first["dst"].as_str().unwrap()
        )
    );
    // A pcap's times are Unix times: utc is the arrival, as RFC 3339 text.
    assert_eq!(utc_ns.get(0), arrival.get(0));
    let t = utc.get(0).unwrap();
    let parsed = humantime_parse(t);
    assert_eq!(parsed, arrival.get(0).unwrap());
}

/// RFC 3339 `YYYY-MM-DDTHH:MM:SS.NNNNNNNNNZ` to Unix ns (the days from the civil date).
fn humantime_parse(t: &str) -> i64 {
    let (date, time) = t.trim_end_matches('Z').split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (hms, frac) = time.split_once('.').unwrap();
    let h: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    // Howard Hinnant's days_from_civil.
    let (y, m) = if d[1] <= 2 {
        (d[0] - 1, d[1] + 9)
    } else {
        (d[0], d[1] - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d[2] - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 86_400 + h[0] * 3600 + h[1] * 60 + h[2]) * 1_000_000_000)
        + format!("{frac:0<9}").parse::<i64>().unwrap()
}

#[test]
fn bad_exports_say_what_is_wrong_and_leave_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jtr");
    jitterlab()
        .args(["synth", "--duration", "1s", "-o"])
        .arg(&trace)
        .assert()
        .success();
    let fails = |args: &[&str]| {
        let o = jitterlab()
            .arg("export")
            .arg(&trace)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = fails(&["-o", "out.txt"]);
    assert!(
        e.contains("out.txt: cannot tell the format from the extension"),
        "{e}"
    );
    let e = fails(&["--packets", "-o", "out.pcapng"]);
    assert!(e.contains("--packets writes a table"), "{e}");
    let e = fails(&["-o", "out.pcapng", "--stream", "0"]);
    assert!(e.contains("apply to --packets tables"), "{e}");
    let e = fails(&["-o", "out.pcapng", "--format", "pcapx"]);
    assert!(
        e.contains("pcapng") && e.contains("ndjson"),
        "help lists the formats: {e}"
    );
    assert!(!dir.path().join("out.pcapng").exists());
    std::fs::write(dir.path().join("kept.pcapng"), b"mine").unwrap();
    let e = fails(&["-o", "kept.pcapng"]);
    assert!(e.contains("kept.pcapng already exists"), "{e}");
    assert_eq!(
        std::fs::read(dir.path().join("kept.pcapng")).unwrap(),
        b"mine"
    );
    let missing = dir.path().join("missing.jtr");
    let o = jitterlab()
        .arg("export")
        .arg(&missing)
        .args(["-o"])
        .arg(dir.path().join("m.pcapng"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.jtr"));
    assert!(!dir.path().join("m.pcapng").exists());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "no partial files: {names:?}");
}

/// Whether `python3` can import `module`; skips (saying so) when not, and fails under
/// `JITTERLAB_REQUIRE_PEERS` (`.ci/run` installs polars and duckdb with pip).
fn python_with(module: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("JITTERLAB_REQUIRE_PEERS").is_none(),
            "JITTERLAB_REQUIRE_PEERS is set but python3 cannot import {module} (pip install {module})"
        );
        eprintln!("skipped: python3 cannot import {module} (pip install {module})");
    }
    ok
}

/// The fenced code blocks of `lang` in `docs/export.md`.
fn doc_blocks(lang: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/export.md"),
    )
    .unwrap();
    let fence = format!("```{lang}\n");
    doc.split(&fence)
        .skip(1)
        .map(|b| b.split("```").next().unwrap().to_owned())
        .collect()
}

fn run_python(dir: &Path, script: &str) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python3 failed: {}\n{script}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The docs' polars and DuckDB examples run on real exports, and Python's polars reads the
/// same rows and types the Rust side wrote.
#[test]
fn the_docs_examples_read_the_tables_in_polars_and_duckdb() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jtr");
    jitterlab()
        .args([
            "synth",
            "--profile",
            "wifi",
            "--duration",
            "4s",
            "--seed",
            "2",
            "-o",
        ])
        .arg(&trace)
        .assert()
        .success();
    export(&trace, &dir.path().join("p.parquet"), &["--packets"]);
    export(&trace, &dir.path().join("p.ndjson"), &["--packets"]);
    let decoded = decode(&trace);
    if python_with("polars") {
        let [python] = &doc_blocks("python")[..] else {
            panic!("one python example in docs/export.md")
        };
        let printed = run_python(dir.path(), python);
        assert!(printed.contains("p99_delay_ms"), "{printed}");
        let check = format!(
            "import polars as pl\n\
             p = pl.read_parquet('p.parquet')\n\
             assert p.columns[:4] == ['stream', 'flow', 'protocol', 'sequence'], p.columns\n\
             assert p.height == {rows}, p.height\n\
             assert p.filter(pl.col('kind') == 'received').height == {received}\n\
             assert p['sequence'].to_list()[:3] == {seqs:?}\n\
             assert p['arrival_ns'].to_list()[:3] == {arrivals:?}\n\
             assert p['arrival_ns'].dtype == pl.Int64 and p['marker'].dtype == pl.Boolean\n\
             n = pl.read_ndjson('p.ndjson')\n\
             assert n['arrival_ns'].to_list() == p['arrival_ns'].to_list()\n",
            rows = decoded.samples.len() + decoded.truth.len(),
            received = decoded.samples.len(),
            seqs = decoded
                .samples
                .iter()
                .take(3)
                .map(|s| s.seq)
                .collect::<Vec<_>>(),
            arrivals = decoded
                .samples
                .iter()
                .take(3)
                .map(|s| s.arrival.as_nanos())
                .collect::<Vec<_>>(),
        );
        run_python(dir.path(), &check);
    }
    if python_with("duckdb") {
        let [sql] = &doc_blocks("sql")[..] else {
            panic!("one sql example in docs/export.md")
        };
        let mut script = String::from("import duckdb\n");
        for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            script.push_str(&format!("print(duckdb.sql({statement:?}).fetchall())\n"));
        }
        let printed = run_python(dir.path(), &script);
        let first = printed.lines().next().unwrap();
        assert!(
            first.starts_with(&format!("[(0, {}, ", decoded.samples.len())),
            "{printed}"
        );
    }
}
