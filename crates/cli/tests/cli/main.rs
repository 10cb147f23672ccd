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
//! - `gstreamer`: the `gstreamer` preset against the real GStreamer rtpjitterbuffer.
//! - `transports`: real ENet and KCP peers through the relay, decoded from the trace.
//! - `pipes`: `-` as standard input and output, `.gz`/`.zst` inputs, a real tcpdump pipe.

mod bad_input;
mod commands;
mod contracts;
mod conventions;
mod discover;
mod export;
mod external;
mod games;
mod gstreamer;
mod live;
mod media;
mod peers;
mod pipes;
mod raknet;
mod report;
mod sweep;
mod transports;
mod util;
mod voip_buffers;
mod wireshark;
