//! Documentation addresses for records that carry none (synthetic traces, CSV imports,
//! sender logs), so that every exported packet is a whole IP/UDP packet.
//!
//! The rule (also in `docs/wireshark.md`):
//! - a missing source is `192.0.2.1` (IPv4, TEST-NET-1, RFC 5737) or `2001:db8::1` (IPv6,
//!   RFC 3849) when the other endpoint is IPv6; a missing destination is `192.0.2.2` or
//!   `2001:db8::2`;
//! - both ports are `50000 + id mod 10000`, where `id` is the stream the payload names: a
//!   probe packet's stream id, an RTP packet's SSRC; 0 for anything else. Streams thus keep
//!   apart as UDP conversations, and a packet and its ground truth share one.
//!
//! An endpoint the record has is always kept as it is.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::decode::probe;
use crate::trace::Record;

/// The placeholder source address for IPv4 (TEST-NET-1).
pub const SRC_V4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
/// The placeholder destination address for IPv4 (TEST-NET-1).
pub const DST_V4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
/// The placeholder source address for IPv6 (the documentation prefix).
pub const SRC_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
/// The placeholder destination address for IPv6.
pub const DST_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);
/// Placeholder ports are this plus the stream id modulo [`PORT_SPAN`].
pub const PORT_BASE: u16 = 50_000;
/// How many placeholder ports there are.
pub const PORT_SPAN: u32 = 10_000;

/// The stream id the payload names: a probe's stream, an RTP packet's SSRC, else 0.
fn stream_id(payload: &[u8]) -> u32 {
    if let Ok(p) = probe::Probe::parse(payload) {
        return p.stream;
    }
    match payload {
        [first, _, _, _, _, _, _, _, a, b, c, d, ..] if first >> 6 == 2 => {
            u32::from_be_bytes([*a, *b, *c, *d])
        }
        _ => 0,
    }
}

/// The record's source and destination, placeholders filled in where missing, and whether
/// any was.
pub fn endpoints(rec: &Record) -> (SocketAddr, SocketAddr, bool) {
    let (src, dst) = (rec.src.map(|e| e.0), rec.dst.map(|e| e.0));
    if let (Some(src), Some(dst)) = (src, dst) {
        return (src, dst, false);
    }
    let port = PORT_BASE + (stream_id(&rec.payload) % PORT_SPAN) as u16;
    let v6 = src.or(dst).is_some_and(|a| a.is_ipv6());
    let fill = |v4: Ipv4Addr, v6addr: Ipv6Addr| {
        let ip: IpAddr = if v6 { v6addr.into() } else { v4.into() };
        SocketAddr::new(ip, port)
    };
    (
        src.unwrap_or_else(|| fill(SRC_V4, SRC_V6)),
        dst.unwrap_or_else(|| fill(DST_V4, DST_V6)),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;
    use crate::trace::Endpoint;

    #[test]
    fn probe_streams_get_their_own_ports_and_kept_endpoints_stay() {
        let probe = |stream| probe::Probe {
            stream,
            tick: 1,
            send: Nanos(0),
            state: 0,
            event: None,
            values: Default::default(),
        };
        let rec = Record::received(Nanos(0), probe(3).emit());
        let (s, d, placed) = endpoints(&rec);
        assert!(placed);
        assert_eq!(s, "192.0.2.1:50003".parse().unwrap());
        assert_eq!(d, "192.0.2.2:50003".parse().unwrap());
        let rec = Record::received(Nanos(0), probe(10_004).emit());
        assert_eq!(endpoints(&rec).0.port(), 50_004);
        let mut rec = Record::received(Nanos(0), b"x".to_vec());
        rec.dst = Some(Endpoint("[2001:db8::9]:7".parse().unwrap()));
        let (s, d, placed) = endpoints(&rec);
        assert!(placed);
        assert_eq!(s, "[2001:db8::1]:50000".parse().unwrap());
        assert_eq!(d, "[2001:db8::9]:7".parse().unwrap());
        rec.src = Some(Endpoint("10.0.0.1:1".parse().unwrap()));
        assert!(!endpoints(&rec).2);
    }
}
