//! Unit tests of the discovery engine on hand-made flows (the seeded generator's sweep is in
//! `tests/discover.rs`).

use super::synthetic::{Protocol, random_flow, view};
use super::*;

#[test]
fn random_payloads_give_nothing() {
    for seed in 0..5 {
        let flow = random_flow(seed, 2000);
        let d = discover(&view(&flow));
        assert_eq!(d.layout(), None, "seed {seed}: {d:#?}");
        assert!(d.confidence() < CONFIDENCE);
        assert!(d.flow.note.starts_with("nothing found"), "{}", d.flow.note);
    }
}

#[test]
fn a_flow_too_short_gives_nothing() {
    let flow = Protocol::new(0).packets(12);
    let d = discover(&view(&flow));
    assert_eq!((d.layout(), d.confidence()), (None, 0.0));
    assert!(d.flow.note.contains("too few"), "{}", d.flow.note);
}

#[test]
fn one_protocol_is_found() {
    let proto = Protocol::new(0);
    let flow = proto.packets(600);
    let d = discover(&view(&flow));
    assert_eq!(d.layouts(), proto.truth(), "{}\n{d:#?}", proto.describe());
}
