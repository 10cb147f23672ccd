//! Real game transports through the relay: a Python ENet server and client (pyenet) and a
//! Python KCP pair (the `kcp` package, over the reference ikcp.c) exchange 30 Hz snapshots
//! and 60 Hz inputs through `jitterlab capture --forward --impair` (5 % loss, and for ENet
//! 10 % reordering), and the transport parsers, run on the trace, must agree with what the
//! applications logged and with what the relay dropped.
//!
//! Three figures are kept apart, because ENet's own behaviour sits between the wire and the
//! game:
//! - **sender skipped**: unreliable sequence numbers the application was given but that never
//!   reached the wire (ENet's throttle discards unreliable sends before they go out when it
//!   judges the link congested; the number was assigned at `send`);
//! - **relay dropped**: what the impairment dropped, read from the trace (a datagram with a
//!   `Sent` record at ingress and no `Received` record);
//! - **receiver discarded**: unreliable messages that arrived after a later one on their
//!   channel, which ENet throws away on receipt, so the game never sees them.
//!
//! The game's count is the wire's minus the last two; loss on the wire is not what the game
//! saw. KCP is reliable: what the relay dropped is retransmitted, the game sees everything,
//! and the retransmitted copies are duplicates on the wire.
//!
//! The peers are gated like the GStreamer test: without the Python module the test prints
//! that it skipped and passes, unless `JITTERLAB_REQUIRE_PEERS` is set (as `.ci/run` does).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::peers::{
    free_port, have_python_module, peers_dir, records, start_dumpcap, start_relay, stop_dumpcap,
    stop_relay,
};
use jitterlab_capture::Record;
use jitterlab_capture::decode::transport::{Datagram, Transport};
use jitterlab_capture::trace::{Direction, RecordKind};
use serde_json::Value;

/// A harness script, running: it exchanges traffic for 3 s, writes its log, says "done" and
/// then holds its sockets open until its stdin closes (so the relay stops first).
struct Peer {
    child: Child,
    script: &'static str,
    log: PathBuf,
}

impl Peer {
    fn run(script: &'static str, server: u16, relay: u16, log: &Path) -> Self {
        let mut child = Command::new("python3")
            .arg(peers_dir().join(script))
            .args(["--server-port", &server.to_string()])
            .args(["--connect", &relay.to_string()])
            .args(["--seconds", "3"])
            .arg("--log")
            .arg(log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Bounded: the script stops by itself (its connection wait and drain are bounded),
        // and says "done" or exits.
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let peer = Self {
            child,
            script,
            log: log.to_owned(),
        };
        if line.trim() != "done" {
            let out = peer.child.wait_with_output().unwrap();
            panic!("{script} failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        peer
    }

    /// Lets the script close its sockets and exit; returns its log.
    fn finish(mut self) -> Value {
        drop(self.child.stdin.take());
        let out = self.child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{} failed: {}",
            self.script,
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&std::fs::read_to_string(&self.log).unwrap()).unwrap()
    }
}

fn app_seqs(log: &Value, key: &str) -> Vec<u64> {
    log[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} missing from the log"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

/// One direction of the relay's trace: the datagrams as they entered the relay (`Sent`
/// records, in order), whether each was forwarded (a `Received` record with the same bytes),
/// and the forwarded ones in the order the relay sent them on (reordering changes it).
struct Leg {
    ingress: Vec<Vec<u8>>,
    forwarded: Vec<bool>,
    delivered: Vec<Vec<u8>>,
}

impl Leg {
    fn of(records: &[Record], direction: Direction) -> Self {
        let of_kind = |kind: RecordKind| -> Vec<Vec<u8>> {
            records
                .iter()
                .filter(|r| r.kind() == kind && r.direction() == direction)
                .map(|r| r.payload.clone())
                .collect()
        };
        let ingress = of_kind(RecordKind::Sent);
        let delivered = of_kind(RecordKind::Received);
        let mut waiting: HashMap<&[u8], usize> = HashMap::new();
        for d in &delivered {
            *waiting.entry(d).or_default() += 1;
        }
        let forwarded = ingress
            .iter()
            .map(|s| match waiting.get_mut(&s[..]) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            })
            .collect();
        assert!(
            waiting.values().all(|n| *n == 0),
            "a forwarded datagram matches nothing that entered the relay"
        );
        Self {
            ingress,
            forwarded,
            delivered,
        }
    }

    fn dropped(&self) -> usize {
        self.forwarded.iter().filter(|f| !**f).count()
    }

    /// Each datagram through a fresh parser per leg: as they entered the relay, as they were
    /// forwarded (in the relay's order), and the ones the relay dropped. Every datagram must
    /// parse and resemble the transport.
    fn decode(&self, transport: Transport) -> [Vec<Datagram>; 3] {
        let run = |payloads: Vec<&Vec<u8>>| -> Vec<Datagram> {
            let mut parser = transport.parser();
            payloads
                .into_iter()
                .map(|payload| {
                    assert!(
                        transport.resembles(payload),
                        "a datagram does not resemble {}: {payload:02x?}",
                        transport.name()
                    );
                    parser.parse(payload).unwrap_or_else(|e| {
                        panic!(
                            "{} datagram did not parse: {e}: {payload:02x?}",
                            transport.name()
                        )
                    })
                })
                .collect()
        };
        let dropped = self
            .ingress
            .iter()
            .zip(&self.forwarded)
            .filter(|(_, f)| !**f)
            .map(|(p, _)| p)
            .collect();
        [
            run(self.ingress.iter().collect()),
            run(self.delivered.iter().collect()),
            run(dropped),
        ]
    }
}

/// The sequence numbers of one lane's messages, in wire order.
fn lane(datagrams: &[Datagram], name: &str) -> Vec<u64> {
    datagrams
        .iter()
        .flat_map(|d| &d.messages)
        .filter(|m| m.lane_name == name)
        .map(|m| m.seq.value)
        .collect()
}

fn control(datagrams: &[Datagram], name: &str) -> usize {
    datagrams
        .iter()
        .flat_map(|d| &d.control)
        .filter(|c| **c == name)
        .count()
}

/// ENet's receiver keeps an unreliable message only if its number is above every one
/// delivered before it on the channel (`enet_peer_queue_incoming_command`).
fn kept_by_enet(arrivals: &[u64]) -> Vec<u64> {
    let mut high = 0;
    arrivals
        .iter()
        .copied()
        .filter(|&s| {
            let keep = s > high;
            high = high.max(s);
            keep
        })
        .collect()
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

/// Checks one ENet unreliable lane against the application's log: the n-th message the
/// application sent has ENet number n + 1 (numbers are given at `send`, from 1, on a channel
/// with no reliable sends); returns (sender skipped, relay dropped, receiver discarded).
/// A fragmented message is one the relay dropped when any of its parts was.
fn check_enet_lane(
    [ingress, forwarded, dropped]: &[Vec<Datagram>; 3],
    name: &str,
    fragmented: bool,
    sent: &[u64],
    received: &[u64],
) -> (usize, usize, usize) {
    let on_wire = lane(ingress, name);
    let through = lane(forwarded, name);
    let lost = lane(dropped, name);
    assert!(!on_wire.is_empty(), "no {name} messages on the wire");
    // What entered the relay is what the application sent, in order, less what ENet's
    // throttle skipped.
    let wire_app: Vec<u64> = on_wire.iter().map(|s| s - 1).collect();
    assert!(
        wire_app.windows(2).all(|w| w[0] < w[1]),
        "{name}: the sender's numbers do not increase: {on_wire:?}"
    );
    assert!(
        wire_app.iter().all(|s| sent.binary_search(s).is_ok()),
        "{name}: a number on the wire the application never sent"
    );
    // The wire minus what the relay dropped is what was forwarded.
    assert!(through.iter().all(|s| on_wire.contains(s)));
    let lost = if fragmented {
        on_wire.len() - through.len()
    } else {
        assert_eq!(
            sorted([through.clone(), lost.clone()].concat()),
            sorted(on_wire.clone()),
            "{name}: forwarded + dropped != ingress"
        );
        lost.len()
    };
    // And what the game got is the forwarded messages ENet kept.
    let kept: Vec<u64> = kept_by_enet(&through).iter().map(|s| s - 1).collect();
    assert_eq!(
        kept, received,
        "{name}: what the application received is not the forwarded messages ENet keeps"
    );
    (sent.len() - on_wire.len(), lost, through.len() - kept.len())
}

/// One run of a harness (`tests/peers/SCRIPT`) through the impaired relay, recorded in a
/// trace and, where dumpcap runs, in a pcapng; the relay's drops are checked against the trace
/// (a datagram that entered the relay with no forwarded copy is one it dropped).
struct Session {
    /// Holds the files until the test ends.
    dir: tempfile::TempDir,
    trace: PathBuf,
    pcap: PathBuf,
    /// The server's port and the relay's.
    ports: [u16; 2],
    /// The harness's log.
    log: Value,
    /// What the relay's summary says the impairment dropped.
    dropped: usize,
    /// Server to client, and client to server, as the relay recorded them.
    down: Leg,
    up: Leg,
}

impl Session {
    fn run(script: &'static str, impair: &str) -> Self {
        let name = script.trim_end_matches("_peer.py");
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join(format!("{name}.jtr"));
        let pcap = dir.path().join(format!("{name}.pcapng"));
        let (relay_port, server_port) = (free_port(), free_port());
        let dumpcap = start_dumpcap([relay_port, server_port], &pcap);
        let relay = start_relay(relay_port, server_port, &trace, impair);
        let peer = Peer::run(
            script,
            server_port,
            relay_port,
            &dir.path().join(format!("{name}.json")),
        );
        let dropped = stop_relay(relay);
        let log = peer.finish();
        if let Some(d) = dumpcap {
            stop_dumpcap(d);
        }
        let recs = records(&trace);
        let down = Leg::of(&recs, Direction::ToClient);
        let up = Leg::of(&recs, Direction::ToUpstream);
        assert_eq!(
            down.dropped() + up.dropped(),
            dropped,
            "datagrams without a forwarded copy != the relay's 'impairment dropped'"
        );
        assert!(dropped > 0, "5 % loss dropped nothing");
        Self {
            dir,
            trace,
            pcap,
            ports: [server_port, relay_port],
            log,
            dropped,
            down,
            up,
        }
    }
}

#[test]
fn enet_through_the_relay_decodes_as_the_applications_logged() {
    if !have_python_module("enet", "pip install pyenet") {
        return;
    }
    let Session {
        dir: _dir,
        trace,
        pcap,
        ports: [server_port, relay_port],
        log,
        dropped: summary_dropped,
        down,
        up,
    } = Session::run("enet_peer.py", "loss=5%,reorder=10%,seed=7");
    let down_d = down.decode(Transport::Enet);
    let up_d = up.decode(Transport::Enet);

    let snaps = check_enet_lane(
        &down_d,
        "channel 0 unreliable",
        false,
        &app_seqs(&log, "snapshots_sent"),
        &app_seqs(&log, "snapshots_received"),
    );
    let inputs = check_enet_lane(
        &up_d,
        "channel 0 unreliable",
        false,
        &app_seqs(&log, "inputs_sent"),
        &app_seqs(&log, "inputs_received"),
    );
    // The 3,000-byte world messages go in 3 unreliable fragments; one is a message only
    // when all of its parts came through.
    let worlds = check_enet_lane(
        &down_d,
        "channel 1 unreliable",
        true,
        &app_seqs(&log, "worlds_sent"),
        &app_seqs(&log, "worlds_received"),
    );
    check_cli(
        &trace,
        "enet",
        "channel 0 unreliable",
        lane(&down_d[1], "channel 0 unreliable").len(),
        lane(&up_d[1], "channel 0 unreliable").len(),
    );
    check_pcap(
        &pcap,
        "enet",
        "channel 0 unreliable",
        [server_port, relay_port],
        &down_d,
    );
    let [ingress, forwarded, _] = &down_d;
    assert_eq!(
        control(ingress, "fragment"),
        2 * lane(ingress, "channel 1 unreliable").len(),
        "every complete world message came with two parts counted as fragments"
    );
    assert!(control(forwarded, "fragment") >= 2 * lane(forwarded, "channel 1 unreliable").len());
    // The handshake both ways, and the pings that keep the connection alive.
    assert!(control(&up_d[0], "handshake") >= 1, "no CONNECT");
    assert!(control(&down_d[0], "handshake") >= 1, "no VERIFY_CONNECT");
    assert!(control(&up_d[0], "ack") + control(&down_d[0], "ack") > 0);
    // ENet stamps a sent time only on datagrams that carry a reliable command: most
    // snapshots have none.
    let stamped = ingress
        .iter()
        .flat_map(|d| &d.messages)
        .filter(|m| m.send.is_some())
        .count();
    let total = ingress.iter().map(|d| d.messages.len()).sum::<usize>();
    assert!(
        stamped < total,
        "every message had a sent time ({stamped} of {total})"
    );
    eprintln!(
        "enet: (sender skipped, relay dropped, receiver discarded): snapshots {snaps:?} of {}, \
         inputs {inputs:?} of {}, worlds {worlds:?} of {}; {stamped} of {total} downstream \
         messages had a sent time; relay dropped {summary_dropped} datagrams",
        app_seqs(&log, "snapshots_sent").len(),
        app_seqs(&log, "inputs_sent").len(),
        app_seqs(&log, "worlds_sent").len(),
    );
}

/// `jitterlab info --json` on the relay trace sees the transport's lanes as streams with the
/// counts decoded here (what the relay forwarded), and `jitterlab tune` recommends a delay
/// for the snapshot stream (`down`: the server's lane of that name).
fn check_cli(trace: &Path, protocol: &str, lane_name: &str, down: usize, up: usize) {
    let info = crate::util::json(&["info".as_ref(), "--json".as_ref(), trace.as_os_str()]);
    let streams: Vec<&Value> = info["streams"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["protocol"] == protocol && s["lane"] == lane_name)
        .collect();
    let mut counts: Vec<u64> = streams
        .iter()
        .map(|s| s["packets"].as_u64().unwrap())
        .collect();
    counts.sort_unstable();
    let mut want = vec![down as u64, up as u64];
    want.sort_unstable();
    assert_eq!(
        counts, want,
        "{protocol} {lane_name} streams in info: {info}"
    );
    let snapshot = streams
        .iter()
        .find(|s| s["packets"].as_u64() == Some(down as u64))
        .unwrap();
    assert_eq!(snapshot["send_times"], true, "{snapshot}");
    let id = snapshot["stream"].to_string();
    let tune = crate::util::json(&[
        "tune".as_ref(),
        "--json".as_ref(),
        "-q".as_ref(),
        "--stream".as_ref(),
        id.as_ref(),
        trace.as_os_str(),
    ]);
    assert!(
        tune["recommendation"]["policy"].is_string(),
        "tune recommends nothing on the {protocol} snapshot stream: {tune}"
    );
}

/// The same traffic as the kernel saw it on both legs (dumpcap's pcapng, when it ran): the
/// `lane_name` messages the server sent towards the relay are what entered the relay, those
/// the relay sent the client what it forwarded (`ports`: the server's, the relay's).
fn check_pcap(
    pcap: &Path,
    protocol: &str,
    lane_name: &str,
    ports: [u16; 2],
    down: &[Vec<Datagram>; 3],
) {
    if !pcap.exists() {
        return;
    }
    let info = crate::util::json(&["info".as_ref(), "--json".as_ref(), pcap.as_os_str()]);
    let from = |port: u16| -> u64 {
        info["streams"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| {
                s["protocol"] == protocol
                    && s["lane"] == lane_name
                    && s["flow"]["src"] == format!("127.0.0.1:{port}").as_str()
            })
            .map(|s| s["packets"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(
        from(ports[0]),
        lane(&down[0], lane_name).len() as u64,
        "pcap: server → relay {lane_name} != what entered the relay: {info}"
    );
    assert_eq!(
        from(ports[1]),
        lane(&down[1], lane_name).len() as u64,
        "pcap: relay → client {lane_name} != what the relay forwarded"
    );
}

/// A KCP lane's PUSH sequence numbers, counted per number (copies).
fn copies(datagrams: &[Datagram]) -> BTreeMap<u64, usize> {
    let mut m = BTreeMap::new();
    for msg in datagrams.iter().flat_map(|d| &d.messages) {
        assert_eq!(msg.lane_name, "conv 0x4a4c");
        *m.entry(msg.seq.value).or_insert(0) += 1;
    }
    m
}

/// Checks one KCP direction: the n-th message the application sent is segment n; every one
/// reached the wire and the game; returns (retransmitted copies, copies the relay dropped).
fn check_kcp_leg(
    [ingress, forwarded, dropped]: &[Vec<Datagram>; 3],
    what: &str,
    sent: &[u64],
    received: &[u64],
) -> (usize, usize) {
    let on_wire = copies(ingress);
    let through = copies(forwarded);
    let lost = copies(dropped);
    assert_eq!(
        on_wire.keys().copied().collect::<Vec<_>>(),
        sent,
        "{what}: the segments on the wire are not the messages sent"
    );
    // Reliable: whatever the relay dropped came again, so every number got through.
    assert_eq!(
        through.keys().copied().collect::<Vec<_>>(),
        received,
        "{what}: the segments forwarded are not what the application received"
    );
    assert_eq!(received, sent, "{what}: KCP lost a message");
    for (sn, n) in &on_wire {
        assert_eq!(
            through.get(sn).copied().unwrap_or(0) + lost.get(sn).copied().unwrap_or(0),
            *n,
            "{what}: copies of segment {sn}: forwarded + dropped != ingress"
        );
    }
    let copies_total: usize = on_wire.values().sum();
    (copies_total - on_wire.len(), lost.values().sum())
}

#[test]
fn kcp_through_the_relay_decodes_as_the_applications_logged() {
    if !have_python_module("kcp", "pip install kcp") {
        return;
    }
    let Session {
        dir: _dir,
        trace,
        pcap,
        ports: [server_port, relay_port],
        log,
        dropped: summary_dropped,
        down,
        up,
    } = Session::run("kcp_peer.py", "loss=5%,seed=11");
    let down_d = down.decode(Transport::Kcp);
    let up_d = up.decode(Transport::Kcp);
    let snaps = check_kcp_leg(
        &down_d,
        "snapshots",
        &app_seqs(&log, "snapshots_sent"),
        &app_seqs(&log, "snapshots_received"),
    );
    let inputs = check_kcp_leg(
        &up_d,
        "inputs",
        &app_seqs(&log, "inputs_sent"),
        &app_seqs(&log, "inputs_received"),
    );
    let conv = down_d[1]
        .iter()
        .flat_map(|d| &d.messages)
        .next()
        .map(|m| m.lane_name.clone())
        .unwrap();
    check_cli(
        &trace,
        "kcp",
        &conv,
        lane(&down_d[1], &conv).len(),
        lane(&up_d[1], &conv).len(),
    );
    check_pcap(&pcap, "kcp", &conv, [server_port, relay_port], &down_d);
    // Dropped data came again: at least as many retransmitted copies as dropped ones.
    assert!(
        snaps.0 >= snaps.1 && inputs.0 >= inputs.1,
        "{snaps:?} {inputs:?}"
    );
    // Every PUSH carries its 32-bit ms timestamp; the acknowledgements are control.
    assert!(
        down_d[0]
            .iter()
            .flat_map(|d| &d.messages)
            .all(|m| m.send.is_some())
    );
    assert!(control(&down_d[0], "ack") > 0 && control(&up_d[0], "ack") > 0);
    eprintln!(
        "kcp: (retransmitted copies, dropped copies): snapshots {snaps:?} of {}, inputs \
         {inputs:?} of {}; relay dropped {summary_dropped} datagrams",
        app_seqs(&log, "snapshots_sent").len(),
        app_seqs(&log, "inputs_sent").len(),
    );
}
