//! Command-line tests: the real `jitterlab` binary on real files.
//!
//! - `contracts`: the seed vectors (fixtures/contracts) through import + replay.
//! - `bad_input`: every kind of bad input is one line on stderr and exit code 2.
//! - `commands`: info, replay, timeline and demo outputs.
//! - `discover`: layouts proposed for unknown protocols.

mod bad_input;
mod commands;
mod contracts;
mod discover;
mod live;
mod report;
mod sweep;
mod util;
mod wireshark;
