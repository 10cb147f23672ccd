//! `discover` on seeded synthetic protocols whose layout is known: the share it gets right,
//! that what it proposes decodes the true sequence numbers through the `layout:` decoder, and
//! that it proposes nothing for random payloads and flows too short to tell.
//!
//! `JITTERLAB_DISCOVER_SEEDS=0..1000 cargo test --release -p jitterlab-capture --test discover
//! -- --nocapture` sweeps more seeds (docs/discover.md reports both).

use jitterlab_capture::Record;
use jitterlab_capture::decode::{DecoderConfig, StreamDecoder};
use jitterlab_capture::discover::synthetic::{Generated, Protocol, random_flow, view};
use jitterlab_capture::discover::{CONFIDENCE, discover};

/// Packets per synthetic flow.
const PACKETS: usize = 600;

fn decoder(spec: &str) -> StreamDecoder {
    let config = DecoderConfig::parse(&format!("layout:{spec}"))
        .unwrap_or_else(|e| panic!("discover proposed a spec the decoder refuses: {spec}: {e}"));
    StreamDecoder::new(config, Vec::new())
}

/// Whether `proposed`, decoding the flow, reads kind `kind` as `truth` does: the same packets
/// (none of another kind), each with its true sequence number, and send times that differ
/// from the true spec's by one constant (only differences of send times matter).
fn reads_like(
    proto: &Protocol,
    flow: &[Generated],
    kind: usize,
    truth: &str,
    proposed: &str,
) -> Result<(), String> {
    let (mut t, mut p) = (decoder(truth), decoder(proposed));
    let mut offset = None;
    for (i, g) in flow.iter().enumerate() {
        let rec = Record::received(g.arrival, g.payload.clone());
        let (ts, ps) = (t.decode(&rec), p.decode(&rec));
        if g.kind != kind {
            if ps.is_ok() {
                return Err(format!("packet {i} of kind {} decodes", g.kind));
            }
            continue;
        }
        let (ts, ps) = (
            ts.map_err(|e| format!("truth fails on packet {i}: {e}"))?,
            ps.map_err(|e| format!("packet {i} does not decode: {e}"))?,
        );
        let want = proto
            .seq(kind, g.index)
            .expect("a kind with a spec has a counter");
        if ps.seq != want || ts.seq != want {
            return Err(format!(
                "packet {i}: seq {} (truth {}), want {want}",
                ps.seq, ts.seq
            ));
        }
        let diff = (ps.send - ts.send).as_nanos();
        let first = *offset.get_or_insert(diff);
        if (diff - first).abs() > 2_000 {
            return Err(format!(
                "packet {i}: send time off by {} ns from the first",
                diff - first
            ));
        }
    }
    Ok(())
}

/// Whether the proposed specs are, one for one, the true ones (up to equivalence).
fn judge(proto: &Protocol, flow: &[Generated], proposed: &[&str]) -> Result<bool, String> {
    let truth = proto.truth();
    let kinds: Vec<usize> = (0..proto.kinds.len())
        .filter(|&k| proto.kinds[k].seq.is_some())
        .collect();
    if proposed.len() != truth.len() {
        return Err(format!(
            "{} specs proposed, {} true",
            proposed.len(),
            truth.len()
        ));
    }
    let mut exact = true;
    for (&kind, truth) in kinds.iter().zip(&truth) {
        let mut why = Vec::new();
        let hit = proposed
            .iter()
            .find(|p| match reads_like(proto, flow, kind, truth, p) {
                Ok(()) => true,
                Err(e) => {
                    why.push(format!("{p}: {e}"));
                    false
                }
            });
        match hit {
            Some(p) => exact &= p == truth,
            None => return Err(format!("nothing reads like {truth}: {}", why.join("; "))),
        }
    }
    Ok(exact)
}

fn seeds() -> std::ops::Range<u64> {
    match std::env::var("JITTERLAB_DISCOVER_SEEDS") {
        Ok(r) => {
            let (a, b) = r.split_once("..").expect("JITTERLAB_DISCOVER_SEEDS=A..B");
            a.parse().expect("a seed")..b.parse().expect("a seed")
        }
        Err(_) => 0..50,
    }
}

/// The acceptance test: at least 49 of 50 protocols (98 %) found right.
#[test]
fn discover_finds_the_layout_of_seeded_protocols() {
    let seeds = seeds();
    let total = seeds.end - seeds.start;
    let (mut right, mut exact) = (0u64, 0u64);
    let mut failures = Vec::new();
    for seed in seeds {
        let proto = Protocol::new(seed);
        let flow = proto.packets(PACKETS);
        let d = discover(&view(&flow));
        match judge(&proto, &flow, &d.layouts()) {
            Ok(is_exact) => {
                right += 1;
                exact += u64::from(is_exact);
            }
            Err(e) => failures.push(format!(
                "{}\n    proposed {:?} (confidence {:.2}): {e}",
                proto.describe(),
                d.layouts(),
                d.confidence()
            )),
        }
    }
    println!(
        "discover: {right} of {total} right ({:.1} %), {exact} spelled exactly as the truth",
        100.0 * right as f64 / total as f64
    );
    for f in &failures {
        println!("  wrong: {f}");
    }
    assert!(
        right * 100 >= total * 98,
        "{right} of {total} right:\n{}",
        failures.join("\n")
    );
}

#[test]
fn random_payloads_give_nothing() {
    for seed in 0..20 {
        let flow = random_flow(seed, 3000);
        let d = discover(&view(&flow));
        assert_eq!(d.layout(), None, "seed {seed}: {:?}", d.flow.note);
        assert!(d.confidence() < CONFIDENCE);
    }
}

#[test]
fn flows_too_short_to_tell_give_nothing() {
    for seed in 0..10 {
        let flow = Protocol::new(seed).packets(12);
        let d = discover(&view(&flow));
        assert_eq!((d.layout(), d.confidence()), (None, 0.0), "seed {seed}");
    }
}

/// The proposed spec, given to the `layout:` decoder, decodes every packet of the flow to its
/// true sequence number, across a u16 wrap, loss and reordering.
#[test]
fn the_proposed_spec_decodes_the_true_sequence_numbers() {
    let proto = (0..)
        .map(Protocol::new)
        .find(|p| {
            let c = p.kinds[0].seq.as_ref().unwrap();
            p.kinds.len() == 1 && c.ty.width == 2 && c.start > 65_000 && p.loss > 0.0
        })
        .unwrap();
    let flow = proto.packets(1500);
    let spec = discover(&view(&flow)).layout().expect("found").to_owned();
    let mut dec = decoder(&spec);
    let got: Vec<i64> = flow
        .iter()
        .map(|g| {
            dec.decode(&Record::received(g.arrival, g.payload.clone()))
                .unwrap()
                .seq
        })
        .collect();
    let want: Vec<i64> = flow
        .iter()
        .map(|g| proto.seq(0, g.index).unwrap())
        .collect();
    assert_eq!(got, want, "{spec}");
    assert!(want.iter().any(|&s| s > 65_535), "the counter wraps");
    assert!(
        want.windows(2).any(|w| w[1] < w[0]),
        "some arrive out of order"
    );
}
