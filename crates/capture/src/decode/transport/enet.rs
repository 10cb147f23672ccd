//! ENet: the protocol header, its commands, and the messages they carry.
//!
//! Followed from the reference implementation (`lsalzman/enet`, `include/enet/protocol.h`,
//! `protocol.c`, `peer.c`), described in `docs/transports.md`. Every field is big-endian.
//!
//! A datagram is a 2-byte header word (peer id in its low 12 bits, a 2-bit session id above
//! it, then "compressed" and "sent time present" flags in the top two bits), the 16-bit sent
//! time in milliseconds when its flag is set, an optional 32-bit checksum (a host setting that
//! no bit announces: the parser learns it per flow), and then commands back to back. Each
//! command starts with a 4-byte header (command number in the low nibble, "acknowledge" and
//! "unsequenced" flags in the top two bits, channel id, reliable sequence number) followed by
//! a fixed part that depends on the command and, for the four kinds of send, a data length
//! and that many bytes.
//!
//! Sequence numbers. A reliable send counts in its channel's 16-bit reliable sequence. An
//! unreliable send carries the channel's current reliable sequence number in its header and
//! its own unreliable sequence number, which ENet restarts from 1 after every reliable send on
//! that channel; the parser joins those runs into one counter per channel (see
//! [`EnetParser`]). Unsequenced sends carry a group number that counts per peer, across all
//! channels, so they share one lane.

use std::collections::{HashMap, VecDeque};

use super::{Counter, Datagram, Message, Parser, SendStamp};
use crate::decode::DecodeError;

/// The commands, by number (`ENetProtocolCommand`).
const ACKNOWLEDGE: u8 = 1;
const CONNECT: u8 = 2;
const VERIFY_CONNECT: u8 = 3;
const DISCONNECT: u8 = 4;
const PING: u8 = 5;
const SEND_RELIABLE: u8 = 6;
const SEND_UNRELIABLE: u8 = 7;
const SEND_FRAGMENT: u8 = 8;
const SEND_UNSEQUENCED: u8 = 9;
const BANDWIDTH_LIMIT: u8 = 10;
const THROTTLE_CONFIGURE: u8 = 11;
const SEND_UNRELIABLE_FRAGMENT: u8 = 12;

/// Command byte flags.
const FLAG_ACKNOWLEDGE: u8 = 1 << 7;
const FLAG_UNSEQUENCED: u8 = 1 << 6;

/// Header word flags.
const HEADER_COMPRESSED: u16 = 1 << 14;
const HEADER_SENT_TIME: u16 = 1 << 15;
const PEER_ID_MASK: u16 = 0x0FFF;
/// The peer id a host uses before it knows the other end's (its CONNECT).
const NO_PEER: u16 = 0x0FFF;

/// ENet never puts more commands in one datagram (`ENET_PROTOCOL_MAXIMUM_PACKET_COMMANDS`).
const MAX_COMMANDS: usize = 32;
/// ENet's largest datagram (`ENET_PROTOCOL_MAXIMUM_MTU`).
const MAX_MTU: usize = 4096;
/// ENet refuses a fragmented message of more parts (`ENET_PROTOCOL_MAXIMUM_FRAGMENT_COUNT`).
const MAX_FRAGMENT_COUNT: u32 = 1024 * 1024;
/// The channel id of commands that belong to no channel (connect, ping, disconnect, ...).
const NO_CHANNEL: u8 = 0xFF;

/// Fragmented messages a flow may have in progress at once; the oldest is forgotten (and was
/// already counted as `fragment` control) when another starts. ENet's sender puts every part
/// of a message out in one go, so only loss leaves a set open for long.
pub const MAX_PENDING_FRAGMENTS: usize = 32;
/// Reliable-sequence epochs remembered per channel for unreliable sends arriving late.
const EPOCHS_KEPT: usize = 8;

/// Lane numbers: the kind in the high byte, the channel in the low one.
const LANE_RELIABLE: u32 = 0;
const LANE_UNRELIABLE: u32 = 1 << 8;
/// Unsequenced group numbers count per peer, so all channels share this lane.
const LANE_UNSEQUENCED: u32 = 2 << 8;

/// The fixed size of each command, header included, indexed by command number (`commandSizes`
/// in `protocol.c`); 0 marks a number that is no command.
const COMMAND_SIZES: [usize; 13] = [0, 8, 48, 44, 8, 4, 6, 8, 24, 8, 12, 16, 24];

/// The name of a command number, for errors.
fn command_name(number: u8) -> &'static str {
    match number {
        ACKNOWLEDGE => "ACKNOWLEDGE",
        CONNECT => "CONNECT",
        VERIFY_CONNECT => "VERIFY_CONNECT",
        DISCONNECT => "DISCONNECT",
        PING => "PING",
        SEND_RELIABLE => "SEND_RELIABLE",
        SEND_UNRELIABLE => "SEND_UNRELIABLE",
        SEND_FRAGMENT => "SEND_FRAGMENT",
        SEND_UNSEQUENCED => "SEND_UNSEQUENCED",
        BANDWIDTH_LIMIT => "BANDWIDTH_LIMIT",
        THROTTLE_CONFIGURE => "THROTTLE_CONFIGURE",
        SEND_UNRELIABLE_FRAGMENT => "SEND_UNRELIABLE_FRAGMENT",
        _ => "unknown",
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The protocol header of one datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    /// The receiving peer's id (0xFFF before it is known).
    peer_id: u16,
    /// The 16-bit milliseconds sent time, when the datagram carries one.
    sent_time: Option<u16>,
    /// Whether the commands are compressed (and so unreadable here).
    compressed: bool,
    /// Bytes before the first command (header, sent time and checksum).
    len: usize,
}

fn header(payload: &[u8], checksum: bool) -> Result<Header, DecodeError> {
    if payload.len() < 2 {
        return Err(DecodeError::new(format!(
            "enet: datagram of {} bytes is shorter than the 2-byte protocol header",
            payload.len()
        )));
    }
    let word = be16(payload, 0);
    let sent = word & HEADER_SENT_TIME != 0;
    let mut len = if sent { 4 } else { 2 };
    if checksum {
        len += 4;
    }
    if payload.len() < len {
        return Err(DecodeError::new(format!(
            "enet: datagram of {} bytes is shorter than its {len}-byte header{}",
            payload.len(),
            if checksum { " (with checksum)" } else { "" }
        )));
    }
    Ok(Header {
        peer_id: word & PEER_ID_MASK,
        sent_time: sent.then(|| be16(payload, 2)),
        compressed: word & HEADER_COMPRESSED != 0,
        len,
    })
}

/// One command as the wire has it.
#[derive(Clone, Copy, Debug)]
struct Command<'a> {
    number: u8,
    flags: u8,
    channel: u8,
    reliable_seq: u16,
    /// The fixed part, header included.
    fixed: &'a [u8],
    /// The data a send carries (empty for the others).
    data_len: usize,
    /// Where the command started in the datagram.
    offset: usize,
}

/// The header and commands of a datagram, every length and field checked against the datagram
/// and against what ENet itself accepts (none of the flow's state is needed).
fn layout(payload: &[u8], checksum: bool) -> Result<(Header, Vec<Command<'_>>), DecodeError> {
    let head = header(payload, checksum)?;
    if head.compressed {
        return Ok((head, Vec::new()));
    }
    let cmds = commands(payload, head.len)?;
    if cmds.is_empty() {
        return Err(DecodeError::new(
            "enet: datagram has a header and no command",
        ));
    }
    for c in &cmds {
        let name = command_name(c.number);
        if c.number != CONNECT && head.peer_id == NO_PEER {
            return Err(DecodeError::new(format!(
                "enet: {name} at offset {} addressed to no peer (only CONNECT is)",
                c.offset
            )));
        }
        let is_send = matches!(
            c.number,
            SEND_RELIABLE
                | SEND_UNRELIABLE
                | SEND_FRAGMENT
                | SEND_UNSEQUENCED
                | SEND_UNRELIABLE_FRAGMENT
        );
        if is_send && c.channel == NO_CHANNEL {
            return Err(DecodeError::new(format!(
                "enet: {name} at offset {} on channel 255 (a channel ENet never opens)",
                c.offset
            )));
        }
        if matches!(c.number, SEND_FRAGMENT | SEND_UNRELIABLE_FRAGMENT) {
            check_fragment(c)?;
        }
    }
    Ok((head, cmds))
}

/// A fragment's fields as the receiver checks them (`enet_protocol_handle_send_fragment`).
fn check_fragment(c: &Command<'_>) -> Result<(), DecodeError> {
    let f = c.fixed;
    let (count, number, total, offset) = (be32(f, 8), be32(f, 12), be32(f, 16), be32(f, 20));
    let what = if count == 0 || count > MAX_FRAGMENT_COUNT {
        format!("fragment count {count} (ENet allows 1 to {MAX_FRAGMENT_COUNT})")
    } else if number >= count {
        format!("fragment number {number} of {count}")
    } else if c.data_len == 0 {
        "fragment with no data".to_owned()
    } else if total < count || offset >= total || c.data_len as u64 > u64::from(total - offset) {
        format!(
            "fragment of {} bytes at {offset} does not fit a message of {total} bytes in {count} parts",
            c.data_len
        )
    } else {
        return Ok(());
    };
    Err(DecodeError::new(format!(
        "enet: {} at offset {}: {what}",
        command_name(c.number),
        c.offset
    )))
}

/// Splits the commands after the header, checking every length against the datagram.
fn commands(payload: &[u8], start: usize) -> Result<Vec<Command<'_>>, DecodeError> {
    let mut out = Vec::new();
    let mut at = start;
    while at < payload.len() {
        if out.len() == MAX_COMMANDS {
            return Err(DecodeError::new(format!(
                "enet: more than {MAX_COMMANDS} commands in one datagram (ENet sends at most \
                 {MAX_COMMANDS}); command {} starts at offset {at}",
                MAX_COMMANDS + 1
            )));
        }
        let left = payload.len() - at;
        if left < 4 {
            return Err(DecodeError::new(format!(
                "enet: {left} bytes at offset {at} are too short for a 4-byte command header"
            )));
        }
        let byte = payload[at];
        let number = byte & 0x0F;
        let size = COMMAND_SIZES.get(usize::from(number)).copied().unwrap_or(0);
        if size == 0 {
            return Err(DecodeError::new(format!(
                "enet: unknown command {number} at offset {at}"
            )));
        }
        let name = command_name(number);
        if left < size {
            return Err(DecodeError::new(format!(
                "enet: {name} at offset {at} needs {size} bytes, {left} left"
            )));
        }
        let fixed = &payload[at..at + size];
        let data_len = match number {
            SEND_RELIABLE => usize::from(be16(fixed, 4)),
            SEND_UNRELIABLE | SEND_UNSEQUENCED => usize::from(be16(fixed, 6)),
            SEND_FRAGMENT | SEND_UNRELIABLE_FRAGMENT => usize::from(be16(fixed, 6)),
            _ => 0,
        };
        if data_len > left - size {
            return Err(DecodeError::new(format!(
                "enet: {name} at offset {at} says {data_len} data bytes, {} left",
                left - size
            )));
        }
        out.push(Command {
            number,
            flags: byte & (FLAG_ACKNOWLEDGE | FLAG_UNSEQUENCED),
            channel: payload[at + 1],
            reliable_seq: be16(payload, at + 2),
            fixed,
            data_len,
            offset: at,
        });
        at += size + data_len;
    }
    Ok(out)
}

/// The parts of one fragmented message seen so far.
#[derive(Debug)]
struct FragmentSet {
    count: u32,
    total: u32,
    /// One bit per part.
    seen: Vec<u64>,
    remaining: u32,
    /// When the set started (a datagram counter), for forgetting the oldest.
    born: u64,
}

/// Which fragmented message a part belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FragmentKey {
    channel: u8,
    reliable: bool,
    /// For unreliable parts, the channel's reliable sequence number they were sent under.
    epoch: u16,
    start: u16,
}

/// One channel's runs of unreliable sequence numbers, one run per reliable sequence number.
#[derive(Debug, Default)]
struct Epochs {
    /// (reliable sequence number, base added to its unreliable numbers, highest seen), newest
    /// last.
    runs: VecDeque<(u16, u64, u16)>,
}

impl Epochs {
    /// The joined counter for unreliable number `u` sent under reliable number `r`, or `None`
    /// for a run already forgotten.
    fn counter(&mut self, r: u16, u: u16) -> Option<u64> {
        let Some(&(newest, base, high)) = self.runs.back() else {
            self.runs.push_back((r, 0, u));
            return Some(u64::from(u));
        };
        // Which side of the newest run `r` is, by 16-bit serial arithmetic.
        let ahead = r.wrapping_sub(newest);
        if ahead != 0 && ahead < 0x8000 {
            // A reliable send came between: ENet restarted the unreliable count at 1.
            let next = base + u64::from(high);
            self.runs.push_back((r, next, u));
            if self.runs.len() > EPOCHS_KEPT {
                self.runs.pop_front();
            }
            return Some(next + u64::from(u));
        }
        let run = self.runs.iter_mut().rev().find(|run| run.0 == r)?;
        run.2 = run.2.max(u);
        Some(run.1 + u64::from(u))
    }
}

/// One ENet flow's parser.
///
/// It keeps three things between datagrams: whether the flow's host adds a checksum (learnt
/// from the first datagram that parses only one way), the unreliable sequence runs of each
/// channel, and fragmented messages still missing parts (at most
/// [`MAX_PENDING_FRAGMENTS`]).
///
/// Unreliable lanes count with a joined counter: ENet restarts a channel's unreliable
/// sequence numbers at 1 after each reliable send on it, so the parser adds to each run the
/// highest number the runs before it reached. On a channel that only sends unreliably this
/// is ENet's own number. Unreliable messages lost at the very end of a run cannot be seen
/// (nothing after them counts on from them).
#[derive(Debug, Default)]
pub struct EnetParser {
    checksum: Option<bool>,
    epochs: HashMap<u8, Epochs>,
    fragments: HashMap<FragmentKey, FragmentSet>,
    datagrams: u64,
}

impl EnetParser {
    /// Fragmented messages waiting for parts (bounded by [`MAX_PENDING_FRAGMENTS`]).
    pub fn pending_fragments(&self) -> usize {
        self.fragments.len()
    }

    /// Whether this flow's datagrams carry ENet's optional 32-bit checksum, once known.
    pub fn checksum(&self) -> Option<bool> {
        self.checksum
    }

    fn command(
        &mut self,
        cmd: &Command<'_>,
        send: Option<SendStamp>,
        out: &mut Datagram,
    ) -> Result<(), DecodeError> {
        let message = |lane: u32, kind: &str, seq: Counter, len: usize| Message {
            lane,
            lane_name: if lane == LANE_UNSEQUENCED {
                "unsequenced".to_owned()
            } else {
                format!("channel {} {kind}", cmd.channel)
            },
            seq,
            send,
            len,
            retransmit: false,
        };
        match cmd.number {
            ACKNOWLEDGE => out.control.push("ack"),
            CONNECT | VERIFY_CONNECT => out.control.push("handshake"),
            DISCONNECT => out.control.push("disconnect"),
            PING => out.control.push("ping"),
            BANDWIDTH_LIMIT | THROTTLE_CONFIGURE => out.control.push("configure"),
            SEND_RELIABLE => out.messages.push(message(
                LANE_RELIABLE | u32::from(cmd.channel),
                "reliable",
                Counter::new(u64::from(cmd.reliable_seq), 16),
                cmd.data_len,
            )),
            SEND_UNRELIABLE => {
                let u = be16(cmd.fixed, 4);
                match self.unreliable(cmd.channel, cmd.reliable_seq, u) {
                    Some(seq) => out.messages.push(message(
                        LANE_UNRELIABLE | u32::from(cmd.channel),
                        "unreliable",
                        seq,
                        cmd.data_len,
                    )),
                    None => out.control.push("stale"),
                }
            }
            SEND_UNSEQUENCED => out.messages.push(message(
                LANE_UNSEQUENCED,
                "unsequenced",
                Counter::new(u64::from(be16(cmd.fixed, 4)), 16),
                cmd.data_len,
            )),
            SEND_FRAGMENT | SEND_UNRELIABLE_FRAGMENT => {
                let reliable = cmd.number == SEND_FRAGMENT;
                match self.fragment(cmd, reliable)? {
                    None => out.control.push("fragment"),
                    Some(total) if reliable => out.messages.push(message(
                        LANE_RELIABLE | u32::from(cmd.channel),
                        "reliable",
                        Counter::new(u64::from(be16(cmd.fixed, 4)), 16),
                        total,
                    )),
                    Some(total) => {
                        match self.unreliable(cmd.channel, cmd.reliable_seq, be16(cmd.fixed, 4)) {
                            Some(seq) => out.messages.push(message(
                                LANE_UNRELIABLE | u32::from(cmd.channel),
                                "unreliable",
                                seq,
                                total,
                            )),
                            None => out.control.push("stale"),
                        }
                    }
                }
            }
            // commands() returns only the numbers above.
            _ => {}
        }
        Ok(())
    }

    fn unreliable(&mut self, channel: u8, r: u16, u: u16) -> Option<Counter> {
        let value = self.epochs.entry(channel).or_default().counter(r, u)?;
        Some(Counter::new(value & 0xFFFF_FFFF, 32))
    }

    /// Adds one part; returns the message's total length when this part completes it.
    fn fragment(
        &mut self,
        cmd: &Command<'_>,
        reliable: bool,
    ) -> Result<Option<usize>, DecodeError> {
        let f = cmd.fixed;
        let (start, count, number, total) = (be16(f, 4), be32(f, 8), be32(f, 12), be32(f, 16));
        let name = command_name(cmd.number);
        let lie = |what: String| {
            Err(DecodeError::new(format!(
                "enet: {name} at offset {}: {what}",
                cmd.offset
            )))
        };
        let key = FragmentKey {
            channel: cmd.channel,
            reliable,
            epoch: if reliable { 0 } else { cmd.reliable_seq },
            start,
        };
        let born = self.datagrams;
        if !self.fragments.contains_key(&key) && self.fragments.len() >= MAX_PENDING_FRAGMENTS {
            // Forget the oldest set: its parts were counted as `fragment` when they came.
            if let Some(oldest) = self
                .fragments
                .iter()
                .min_by_key(|(_, set)| set.born)
                .map(|(k, _)| *k)
            {
                self.fragments.remove(&oldest);
            }
        }
        let set = self.fragments.entry(key).or_insert_with(|| FragmentSet {
            count,
            total,
            seen: vec![0; count.div_ceil(64) as usize],
            remaining: count,
            born,
        });
        if set.count != count || set.total != total {
            return lie(format!(
                "part of {count} parts and {total} bytes joins a message of {} parts and {} \
                 bytes",
                set.count, set.total
            ));
        }
        let (word, bit) = ((number / 64) as usize, number % 64);
        if set.seen[word] & (1 << bit) == 0 {
            set.seen[word] |= 1 << bit;
            set.remaining -= 1;
        }
        if set.remaining == 0 {
            self.fragments.remove(&key);
            return Ok(Some(total as usize));
        }
        Ok(None)
    }
}

impl Parser for EnetParser {
    fn parse(&mut self, payload: &[u8]) -> Result<Datagram, DecodeError> {
        self.datagrams += 1;
        let (head, cmds) = match self.checksum {
            Some(checksum) => layout(payload, checksum)?,
            // The checksum is a host setting no bit announces. Try without, then with; a
            // datagram that reads only one way settles it for the flow.
            None => match (layout(payload, false), layout(payload, true)) {
                (Ok(plain), Err(_)) => {
                    self.checksum = Some(false);
                    plain
                }
                (Err(_), Ok(summed)) => {
                    self.checksum = Some(true);
                    summed
                }
                (Ok(plain), Ok(_)) => plain,
                (Err(e), Err(_)) => return Err(e),
            },
        };
        let mut out = Datagram::default();
        if head.compressed {
            // The commands went through the host's compressor (ENet's range coder or the
            // application's own): nothing after the header can be read.
            out.control.push("compressed");
            return Ok(out);
        }
        let send = head.sent_time.map(|t| SendStamp::Ticks {
            counter: Counter::new(u64::from(t), 16),
            unit_ns: 1_000_000,
        });
        for cmd in &cmds {
            self.command(cmd, send, &mut out)?;
        }
        Ok(out)
    }
}

/// Whether a datagram could be ENet's: its header and every command are well formed and in
/// the shape ENet's sender gives them (see `docs/transports.md`):
/// - a known command number, every length inside the datagram, at most 32 commands, no more
///   than 4,096 bytes;
/// - each command's flags are the ones ENet sends it with (reliable commands ask for an
///   acknowledgement, unreliable ones do not, unsequenced sends carry that flag), and the
///   header has a sent time exactly when some command asks for an acknowledgement;
/// - channel 255 only on commands that belong to no channel, and peer id 0xFFF only on
///   CONNECT.
///
/// A compressed datagram cannot be checked and is not taken for ENet's.
pub fn resembles(payload: &[u8]) -> bool {
    if payload.len() > MAX_MTU {
        return false;
    }
    shaped(payload, false) || shaped(payload, true)
}

fn shaped(payload: &[u8], checksum: bool) -> bool {
    let Ok((head, cmds)) = layout(payload, checksum) else {
        return false;
    };
    if head.compressed {
        return false;
    }
    let mut wants_ack = false;
    for c in &cmds {
        let ack = c.flags & FLAG_ACKNOWLEDGE != 0;
        let unseq = c.flags & FLAG_UNSEQUENCED != 0;
        wants_ack |= ack;
        let flags_ok = match c.number {
            ACKNOWLEDGE | SEND_UNRELIABLE | SEND_UNRELIABLE_FRAGMENT => !ack && !unseq,
            SEND_UNSEQUENCED => !ack && unseq,
            // A peer not yet connected disconnects unsequenced.
            DISCONNECT => ack != unseq,
            _ => ack && !unseq,
        };
        let channel_ok = match c.number {
            CONNECT | VERIFY_CONNECT | DISCONNECT | PING | BANDWIDTH_LIMIT | THROTTLE_CONFIGURE => {
                c.channel == NO_CHANNEL
            }
            SEND_RELIABLE
            | SEND_UNRELIABLE
            | SEND_FRAGMENT
            | SEND_UNSEQUENCED
            | SEND_UNRELIABLE_FRAGMENT => c.channel != NO_CHANNEL,
            _ => true,
        };
        if !flags_ok || !channel_ok || (head.peer_id == NO_PEER && c.number != CONNECT) {
            return false;
        }
    }
    wants_ack == head.sent_time.is_some()
}

#[cfg(test)]
mod tests;
