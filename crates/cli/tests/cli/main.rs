//! Command-line tests: the real `jitterlab` binary on real files.
//!
//! - `contracts`: the seed vectors (fixtures/contracts) through import + replay.
//! - `bad_input`: every kind of bad input is one line on stderr and exit code 2.
//! - `commands`: info, replay, timeline and demo outputs.
//! - `conventions`: exit codes, `--quiet`, help values and headings, completions, man pages,
//!   `--version`, old flag names, I/O errors that name their path.
//! - `discover`: layouts proposed for unknown protocols.
//! - `export`: traces to pcapng/pcap read back by tshark and the Lua dissector; packet tables.
//! - `games`: real game and voice captures classified per flow, against tshark.
//! - `media`: real calls tuned, swept and reported in playout mode.
//! - `cluster`: `sweep --shard auto` under Slurm's and Kubernetes' variables, rows' provenance,
//!   the Kubernetes manifest in deploy/.
//! - `gstreamer`: the `gstreamer` preset against the real GStreamer rtpjitterbuffer.
//! - `timeline`: replay timelines as CSV and Parquet, with the README's columns.
//! - `transports`: real ENet and KCP peers through the relay, decoded from the trace.
//! - `pipes`: `-` as standard input and output, `.gz`/`.zst` inputs, a real tcpdump pipe.
//! - `reading`: the read path's figures (replay, info) against those of the reader before it.
//! - `live_edges`: host names, and nothing announced or created by a live command that fails.
//! - `live`, `live_edges`, `peers`, `raknet`, `transports` need the `live` feature (on by default);
//!   `no_live` checks what a build without it says.

mod bad_input;
mod cluster;
mod commands;
mod contracts;
mod conventions;
mod discover;
mod export;
mod external;
mod games;
mod gstreamer;
#[cfg(feature = "live")]
mod live;
#[cfg(feature = "live")]
mod live_edges;
mod media;
#[cfg(not(feature = "live"))]
mod no_live;
#[cfg(feature = "live")]
mod peers;
mod pipes;
#[cfg(feature = "live")]
mod raknet;
mod reading;
mod report;
mod streaming;
mod sweep;
mod timeline;
#[cfg(feature = "live")]
mod transports;
mod util;
mod voip_buffers;
mod wireshark;
