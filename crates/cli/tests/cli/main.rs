//! Command-line tests: the real `jitterlab` binary on real files.
//!
//! - `contracts`: the seed vectors (fixtures/contracts) through import + replay.
//! - `bad_input`: every kind of bad input is one line on stderr and exit code 2.
//! - `commands`: info, replay, timeline and demo outputs.
//! - `discover`: layouts proposed for unknown protocols.
//! - `games`: real game and voice captures classified per flow, against tshark.
//! - `media`: real calls tuned, swept and reported in playout mode.
//! - `gstreamer`: the `gstreamer` preset against the real GStreamer rtpjitterbuffer.
//! - `timeline`: replay timelines as CSV and Parquet, with the README's columns.
//! - `transports`: real ENet and KCP peers through the relay, decoded from the trace.

mod bad_input;
mod commands;
mod contracts;
mod discover;
mod games;
mod gstreamer;
mod live;
mod media;
mod peers;
mod raknet;
mod report;
mod sweep;
mod timeline;
mod transports;
mod util;
mod voip_buffers;
mod wireshark;
