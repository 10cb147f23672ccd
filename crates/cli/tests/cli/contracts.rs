//! Contract vectors from the seeds, through the command line: each
//! `fixtures/contracts/NAME.csv` is imported, replayed with the arguments in `NAME.json`, and
//! the JSON output must contain everything `NAME.json` expects.

use std::ffi::OsStr;

use serde_json::Value;

use crate::util::{assert_subset, fixtures, import, json};

fn case(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let base = fixtures().join("contracts");
    let spec: Value =
        serde_json::from_slice(&std::fs::read(base.join(format!("{name}.json"))).unwrap()).unwrap();
    let trace = import(dir.path(), &base.join(format!("{name}.csv")));
    let extra: Vec<String> = spec["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    let mut args: Vec<&OsStr> = vec![OsStr::new("replay"), trace.as_os_str()];
    args.extend(extra.iter().map(OsStr::new));
    args.push(OsStr::new("--json"));
    let out = json(&args);
    assert_subset(&spec["expect"], &out, name);
}

#[test]
fn c04_c07_seed000_interpolation_through_the_cli() {
    case("c07_seed000_interpolate");
}

#[test]
fn c07_seed002_interpolation_through_the_cli() {
    case("c07_seed002_interpolate");
}

#[test]
fn c08_gap_over_budget_holds_left_through_the_cli() {
    case("c08_gap_holds_left");
}

#[test]
fn c09_after_newest_holds_newest_through_the_cli() {
    case("c09_after_newest_holds_newest");
}

#[test]
fn c10_before_oldest_holds_oldest_through_the_cli() {
    case("c10_before_oldest_holds_oldest");
}

#[test]
fn c05_c12_duplicate_tick_rejected_through_the_cli() {
    case("c05_duplicate_tick_rejected");
}

#[test]
fn c11_capacity_evicts_oldest_through_the_cli() {
    case("c11_capacity_evicts_oldest");
}

#[test]
fn c12_consecutive_holds_through_the_cli() {
    case("c12_consecutive_holds");
}

/// Every fixture in fixtures/contracts has a test above (a new fixture cannot go unchecked).
#[test]
fn every_contract_fixture_is_tested() {
    let source = include_str!("contracts.rs");
    for entry in std::fs::read_dir(fixtures().join("contracts")).unwrap() {
        let path = entry.unwrap().path();
        // (c21_playout.csv is checked by commands::c21_playout_through_the_cli.)
        if path.extension().is_some_and(|e| e == "json") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            assert!(
                source.contains(&format!("case(\"{stem}\")")),
                "{stem} has no test"
            );
        }
    }
}
