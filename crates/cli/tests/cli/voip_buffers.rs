//! The VoIP presets over the shared real captures.
//!
//! `wireshark`: the RTP Player's drop rule is computed a second time, naively, from tshark
//! 4.0.17's own per-packet fields (`X.rtp.csv`: capture time, sequence number, timestamp,
//! payload type, UDP length), and must give the same jitter drops, resyncs and out-of-sequence
//! marks as `jitterlab replay --playout --policy wireshark` reading the pcap itself, for every
//! G.711 and G.722 stream, with both references. `asterisk*` with VoIPmonitor's three
//! configurations: every slot resolved once, MOS in VoIPmonitor's range; the figures are
//! printed for the record.

use jitterlab_capture::testdata::shared_data;
use serde_json::Value;

use crate::util::json;

/// One RTP packet as tshark decoded it.
struct Row {
    time: f64,
    ssrc: String,
    pt: u32,
    seq: i64,
    ts: i64,
    payload: i64,
}

fn rows(csv: &str) -> Vec<Row> {
    csv.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() < 12 {
                return None;
            }
            Some(Row {
                time: f[1].parse().ok()?,
                ssrc: f[6].to_lowercase(),
                pt: f[7].parse().ok()?,
                seq: f[8].parse().ok()?,
                ts: f[9].parse().ok()?,
                payload: f[11].parse::<i64>().ok()? - 8 - 12,
            })
        })
        .collect()
}

#[derive(Debug, Default, PartialEq)]
struct Marks {
    drops: u64,
    late: u64,
    early: u64,
    resyncs: u64,
    out_of_sequence: u64,
}

/// `RtpAudioStream::decodeAudio`'s drop rule over one stream's packets in capture order (16-bit
/// sequence numbers and 32-bit timestamps unwrapped; G.711 and G.722 decode, one-byte G.711
/// and other payload types do not).
fn oracle(packets: &[&Row], jb_ms: f64, min_transit: bool) -> Marks {
    let mut m = Marks::default();
    let (mut seq_hi, mut ts_hi) = (0i64, 0i64);
    let (mut prev_seq, mut prev_ts) = (packets[0].seq, packets[0].ts);
    let unwrapped: Vec<(i64, f64)> = packets
        .iter()
        .map(|p| {
            if p.seq - prev_seq < -30_000 {
                seq_hi += 65_536;
            }
            if p.ts - prev_ts < -(1 << 31) {
                ts_hi += 1 << 32;
            }
            prev_seq = p.seq;
            prev_ts = p.ts;
            (p.seq + seq_hi, (p.ts + ts_hi) as f64)
        })
        .collect();
    let decodes = |p: &Row| matches!(p.pt, 0 | 8 | 9) && p.payload > 1;
    let samples = |p: &Row| {
        if p.pt == 9 {
            2.0 * p.payload as f64
        } else {
            p.payload as f64
        }
    };
    let rate = |p: &Row| if p.pt == 9 { 16_000.0 } else { 8000.0 };
    let t0 = packets[0].time;
    let ts0 = unwrapped[0].1;
    // Minimum transit in the RTP clock's seconds, over the packets that decode.
    let min = packets
        .iter()
        .zip(&unwrapped)
        .filter(|(p, _)| decodes(p))
        .map(|(p, u)| (p.time - t0) - (u.1 - ts0) / 8000.0)
        .fold(f64::INFINITY, f64::min);
    let (mut start_ts, mut start_time) = (ts0, 0.0);
    let (mut prev_rtp, mut pack_period) = (0.0, 0.0);
    let mut last_seq = unwrapped[0].0 - 1;
    for (p, &(seq, ts)) in packets.iter().zip(&unwrapped) {
        if !decodes(p) {
            last_seq = seq;
            continue;
        }
        if seq != last_seq + 1 {
            m.out_of_sequence += 1;
        }
        last_seq = seq;
        let rtp_time = (ts - start_ts) / 8000.0;
        let arrive = (p.time - t0) - start_time;
        let excess = if min_transit {
            (p.time - t0) - (ts - ts0) / 8000.0 - min
        } else {
            arrive - rtp_time
        };
        if excess.abs() * 1000.0 > jb_ms {
            m.drops += 1;
            if excess > 0.0 {
                m.late += 1;
            } else {
                m.early += 1;
            }
            if !min_transit && rtp_time - prev_rtp > 2.0 * pack_period {
                m.resyncs += 1;
                start_ts = ts;
                start_time = p.time - t0;
                prev_rtp = 0.0;
            }
        } else {
            prev_rtp = rtp_time;
            pack_period = samples(p) / rate(p);
        }
    }
    m
}

#[test]
fn wireshark_drops_agree_with_the_rule_on_tsharks_fields() {
    let Some(data) = shared_data() else { return };
    let mut checked = 0;
    let mut with_drops = 0;
    for file in [
        "sipp_g711a.pcap",
        "saghul-sipp-scenarios_g711a.pcap",
        "saghul-sipp-scenarios_g722.pcap",
        "wiresharkwiki_SIP_DTMF2.pcap",
        "wiresharkwiki_nb6-telephone.pcap",
        "ndpi_FAX-Call-t38-CA-TDM-SIP-FB-1.pcap",
    ] {
        let path = data.join("pcap").join(file);
        let csv =
            std::fs::read_to_string(data.join("pcap").join(format!("{file}.rtp.csv"))).unwrap();
        let rows = rows(&csv);
        let mut ssrcs: Vec<&str> = rows.iter().map(|r| r.ssrc.as_str()).collect();
        ssrcs.sort_unstable();
        ssrcs.dedup();
        for ssrc in ssrcs {
            let packets: Vec<&Row> = rows.iter().filter(|r| r.ssrc == ssrc).collect();
            if !packets.iter().any(|p| matches!(p.pt, 0 | 8 | 9)) || packets.len() < 20 {
                continue;
            }
            // A timestamp that goes backwards among the media packets is a sender restart:
            // jitterlab re-bases the send times that `min_transit` measures against, the raw
            // timestamps of this oracle do not, so only the first-packet rule is compared.
            let media: Vec<&&Row> = packets
                .iter()
                .filter(|p| matches!(p.pt, 0 | 8 | 9))
                .collect();
            let restart = media.windows(2).any(|w| {
                let d = w[1].ts - w[0].ts;
                d < 0 && d > -(1 << 31)
            });
            for (reference, jb) in [("first", 50.0), ("min_transit", 50.0), ("first", 20.0)] {
                if restart && reference == "min_transit" {
                    eprintln!("{file} {ssrc}: timestamps restart, min_transit not compared");
                    continue;
                }
                let want = oracle(&packets, jb, reference == "min_transit");
                let policy = format!("wireshark:jitter_buffer={jb}ms,reference={reference}");
                let out = json(&[
                    "replay".as_ref(),
                    path.as_os_str(),
                    "--playout".as_ref(),
                    "--policy".as_ref(),
                    policy.as_ref(),
                    "--ssrc".as_ref(),
                    ssrc.as_ref(),
                    "--json".as_ref(),
                ]);
                let w: &Value = &out["streams"][0]["wireshark"];
                let got = Marks {
                    drops: w["jitter_drops"].as_u64().unwrap(),
                    late: w["jitter_drops_late"].as_u64().unwrap(),
                    early: w["jitter_drops_early"].as_u64().unwrap(),
                    resyncs: w["resyncs"].as_u64().unwrap(),
                    out_of_sequence: w["out_of_sequence"].as_u64().unwrap(),
                };
                eprintln!("{file} {ssrc} {policy}: {got:?}");
                assert_eq!(got, want, "{file} {ssrc} {policy}");
                checked += 1;
                with_drops += usize::from(want.drops > 0);
            }
        }
    }
    assert!(checked >= 17, "{checked} stream configurations checked");
    assert!(with_drops >= 1, "no configuration dropped anything");
}

/// VoIPmonitor's f1, f2 and adaptive buffers as jitterlab policy strings.
const VOIPMONITOR: [(&str, &str); 3] = [
    (
        "f1",
        "asterisk-fixed:variant=voipmonitor,jbmaxsize=50ms,jbresyncthreshold=100ms,marker_resync=true",
    ),
    (
        "f2",
        "asterisk-fixed:variant=voipmonitor,jbmaxsize=200ms,jbresyncthreshold=200ms,marker_resync=true",
    ),
    (
        "adapt",
        "asterisk:variant=voipmonitor,jbmaxsize=500ms,jbresyncthreshold=500ms,marker_resync=true",
    ),
];

#[test]
fn voipmonitor_buffers_over_real_calls() {
    let Some(data) = shared_data() else { return };
    for file in [
        "sipp_g711a.pcap",
        "wiresharkwiki_SIP_DTMF2.pcap",
        "wiresharkwiki_nb6-telephone.pcap",
        "ndpi_FAX-Call-t38-CA-TDM-SIP-FB-1.pcap",
        "saghul-sipp-scenarios_g711a.pcap",
    ] {
        let path = data.join("pcap").join(file);
        for (name, policy) in VOIPMONITOR {
            let out = json(&[
                "replay".as_ref(),
                path.as_os_str(),
                "--playout".as_ref(),
                "--policy".as_ref(),
                policy.as_ref(),
                "--json".as_ref(),
            ]);
            let key = policy.split(':').next().unwrap();
            for s in out["streams"].as_array().unwrap() {
                let d = &s[key];
                let m = &d["voipmonitor"];
                let mos = m["mos"].as_f64().unwrap();
                let frames = s["metrics"]["frames"].as_u64().unwrap();
                let driver = &d["driver"];
                eprintln!(
                    "{file} stream {} {name}: MOS {mos:.2}, lost {} in {} bursts, {} frames \
                     ({} played, {} concealed), {} resyncs forced",
                    s["stream"],
                    m["lost"],
                    m["bursts"],
                    frames,
                    s["metrics"]["played"],
                    s["metrics"]["concealed"],
                    driver["forced_resyncs"]
                );
                assert!((1.0..=4.5).contains(&mos), "{file} {name}: {mos}");
                assert_eq!(driver["variant"], "voipmonitor");
                assert!(driver["put"].as_u64().unwrap() > 0, "{file} {name}");
                assert_eq!(
                    s["metrics"]["played"].as_u64().unwrap()
                        + s["metrics"]["concealed"].as_u64().unwrap(),
                    frames,
                    "{file} {name}"
                );
            }
        }
    }
}
