//! Game transports whose headers carry sequence numbers or send times in the clear: ENet,
//! KCP (with Mirror's kcp2k framing) and RakNet.
//!
//! Each transport parses its own framing, one datagram at a time, into the application
//! [`Message`]s it carries and the control traffic (handshakes, acknowledgements, pings) it
//! carries instead, so that the payload offset may change from datagram to datagram and a
//! handshake is never read as a snapshot. A [`Parser`] keeps the per-flow state a transport
//! needs (fragments and split packets waiting for their other parts). The stream decoder
//! turns messages into samples: one stream per flow and [`Message::lane`], counters extended
//! past their width, retransmitted copies counted as duplicates.
//!
//! What each transport follows and cannot see is in `docs/transports.md`.

use std::fmt;

use super::DecodeError;

pub mod enet;
pub mod kcp;
pub mod raknet;

/// A counter as the wire carries it: its value and its width in bits (it wraps at
/// 2^`bits`; 64 means it does not wrap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counter {
    /// The value on the wire.
    pub value: u64,
    /// Its width in bits, 1..=64.
    pub bits: u32,
}

impl Counter {
    /// A counter of `bits` bits.
    pub const fn new(value: u64, bits: u32) -> Self {
        Self { value, bits }
    }
}

/// A send time as the transport stamps it: a counter in units of `unit_ns` nanoseconds
/// (ENet's 16-bit milliseconds, KCP's 32-bit milliseconds, Mirror's batch timestamp).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SendStamp {
    /// An integer counter of `unit_ns` nanoseconds per step.
    Ticks {
        /// The counter.
        counter: Counter,
        /// Nanoseconds per step (1,000,000 for milliseconds).
        unit_ns: i64,
    },
    /// Seconds as a float on the sender's clock (Mirror's batch timestamp, a double).
    Seconds(f64),
}

/// One application message a datagram carries.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// The sub-stream within the flow that `seq` counts in: ENet channel (reliable and
    /// unreliable sequences apart), KCP conversation, RakNet ordering channel. Each lane of a
    /// flow is its own stream.
    pub lane: u32,
    /// A human name of the lane for `info` (`channel 1 unreliable`, `conv 0x1234`).
    pub lane_name: String,
    /// The message's sequence number within its lane.
    pub seq: Counter,
    /// When the sender stamped it, if the transport says.
    pub send: Option<SendStamp>,
    /// Application payload bytes.
    pub len: usize,
    /// A retransmitted copy the transport marks as such (counted as a duplicate of the first).
    pub retransmit: bool,
}

/// What one datagram held.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Datagram {
    /// Application messages, in wire order.
    pub messages: Vec<Message>,
    /// Control traffic carried instead of, or beside, messages: `handshake`, `ack`, `ping`,
    /// `disconnect`, `fragment` (a part of a message still incomplete), ….
    pub control: Vec<&'static str>,
}

/// One flow's parser: the transport's framing plus the state it keeps between datagrams.
pub trait Parser: fmt::Debug + Send {
    /// Parses one datagram.
    ///
    /// # Errors
    /// A header that does not fit the datagram (a length or count that lies), named.
    fn parse(&mut self, payload: &[u8]) -> Result<Datagram, DecodeError>;
}

/// The game transports this build decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// ENet (Godot, many engines).
    Enet,
    /// KCP, with kcp2k's framing when present.
    Kcp,
    /// RakNet.
    Raknet,
}

impl Transport {
    /// Every transport, in the order the classifier tries them.
    pub const ALL: [Self; 3] = [Self::Enet, Self::Kcp, Self::Raknet];

    /// The name `--decoder` and `info --json` use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Enet => "enet",
            Self::Kcp => "kcp",
            Self::Raknet => "raknet",
        }
    }

    /// The transport called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// A fresh parser for one flow.
    pub fn parser(self) -> Box<dyn Parser> {
        match self {
            Self::Enet => Box::new(enet::EnetParser::default()),
            Self::Kcp => Box::new(kcp::KcpParser::default()),
            Self::Raknet => Box::new(raknet::RaknetParser::default()),
        }
    }

    /// Whether one datagram could be this transport's, judged from it alone: the classifier
    /// asks this of a flow's first packets and decides on the share that pass (and parse).
    pub fn resembles(self, payload: &[u8]) -> bool {
        match self {
            Self::Enet => enet::resembles(payload),
            Self::Kcp => kcp::resembles(payload),
            Self::Raknet => raknet::resembles(payload),
        }
    }
}
