//! One UDP datagram as the IP packet a raw-IP capture holds: an IPv4 or IPv6 header, the
//! UDP header and the payload, with the IPv4 header checksum and the UDP checksum right.
//!
//! A payload cut to a snap length keeps its original length in the IP and UDP length fields
//! (as a capture of the wire would), and its UDP checksum is 0: the bytes it covers are not
//! all known. For IPv4, 0 means "no checksum" (RFC 768); for IPv6 it is not a valid checksum,
//! and Wireshark, which does not check UDP checksums by default, shows it as absent.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// The IPv4 header this module writes (no options).
pub const IPV4_HEADER_LEN: usize = 20;
/// The IPv6 header (no extension headers).
pub const IPV6_HEADER_LEN: usize = 40;
/// The UDP header.
pub const UDP_HEADER_LEN: usize = 8;
/// The largest UDP payload an IPv4 packet can carry.
pub const MAX_IPV4_PAYLOAD: u32 = 65_535 - (IPV4_HEADER_LEN + UDP_HEADER_LEN) as u32;
/// The largest UDP payload an IPv6 packet without a jumbogram option can carry.
pub const MAX_IPV6_PAYLOAD: u32 = 65_535 - UDP_HEADER_LEN as u32;

/// The lengths of one built packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Built {
    /// Bytes written (headers and the payload kept).
    pub captured: u32,
    /// The packet's length on the wire (headers and the whole payload).
    pub original: u32,
}

/// Why a datagram cannot be one IP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The payload length on the wire.
    pub len: u32,
    /// The most the packet's IP version carries.
    pub max: u32,
}

/// The IPv4-mapped IPv6 address of `ip` (`::ffff:a.b.c.d`), or `ip` itself when IPv6.
fn as_v6(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

/// Appends the IP packet carrying `payload` from `src` to `dst` to `out`.
///
/// `orig_len` is the payload's length on the wire (at least `payload.len()`). Both addresses
/// IPv4: an IPv4 packet with identification `ip_id`; otherwise IPv6 (an IPv4 address beside
/// an IPv6 one becomes its IPv4-mapped form).
///
/// # Errors
/// [`TooLarge`] when the datagram does not fit one IP packet (nothing is appended).
pub fn build_udp(
    out: &mut Vec<u8>,
    src: SocketAddr,
    dst: SocketAddr,
    payload: &[u8],
    orig_len: u32,
    ip_id: u16,
) -> Result<Built, TooLarge> {
    let orig_len = orig_len.max(payload.len() as u32);
    let truncated = (payload.len() as u64) < u64::from(orig_len);
    let udp_len = |max: u32| {
        if orig_len > max {
            Err(TooLarge { len: orig_len, max })
        } else {
            Ok((orig_len + UDP_HEADER_LEN as u32) as u16)
        }
    };
    let start = out.len();
    let header_len = match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let len = udp_len(MAX_IPV4_PAYLOAD)?;
            let total = len + IPV4_HEADER_LEN as u16;
            let mut h = [0u8; IPV4_HEADER_LEN];
            h[0] = 0x45;
            h[2..4].copy_from_slice(&total.to_be_bytes());
            h[4..6].copy_from_slice(&ip_id.to_be_bytes());
            h[8] = 64; // TTL
            h[9] = 17; // UDP
            h[12..16].copy_from_slice(&s.octets());
            h[16..20].copy_from_slice(&d.octets());
            let sum = !fold(sum_words(0, &h));
            h[10..12].copy_from_slice(&sum.to_be_bytes());
            out.extend_from_slice(&h);
            let pseudo = {
                let mut p = [0u8; 12];
                p[..4].copy_from_slice(&s.octets());
                p[4..8].copy_from_slice(&d.octets());
                p[9] = 17;
                p[10..12].copy_from_slice(&len.to_be_bytes());
                sum_words(0, &p)
            };
            push_udp(out, src, dst, payload, len, (!truncated).then_some(pseudo));
            IPV4_HEADER_LEN
        }
        (s, d) => {
            let len = udp_len(MAX_IPV6_PAYLOAD)?;
            let (s, d) = (as_v6(s), as_v6(d));
            let mut h = [0u8; IPV6_HEADER_LEN];
            h[0] = 0x60;
            h[4..6].copy_from_slice(&len.to_be_bytes());
            h[6] = 17; // next header: UDP
            h[7] = 64; // hop limit
            h[8..24].copy_from_slice(&s.octets());
            h[24..40].copy_from_slice(&d.octets());
            out.extend_from_slice(&h);
            let pseudo = {
                let mut p = [0u8; 40];
                p[..16].copy_from_slice(&s.octets());
                p[16..32].copy_from_slice(&d.octets());
                p[32..36].copy_from_slice(&u32::from(len).to_be_bytes());
                p[39] = 17;
                sum_words(0, &p)
            };
            push_udp(out, src, dst, payload, len, (!truncated).then_some(pseudo));
            IPV6_HEADER_LEN
        }
    };
    let headers = (header_len + UDP_HEADER_LEN) as u32;
    Ok(Built {
        captured: (out.len() - start) as u32,
        original: headers + orig_len,
    })
}

/// Appends the UDP header and payload; the checksum over `pseudo` (the pseudo-header's sum)
/// when the whole payload is there, else 0.
fn push_udp(
    out: &mut Vec<u8>,
    src: SocketAddr,
    dst: SocketAddr,
    payload: &[u8],
    len: u16,
    pseudo: Option<u32>,
) {
    let mut h = [0u8; UDP_HEADER_LEN];
    h[0..2].copy_from_slice(&src.port().to_be_bytes());
    h[2..4].copy_from_slice(&dst.port().to_be_bytes());
    h[4..6].copy_from_slice(&len.to_be_bytes());
    if let Some(pseudo) = pseudo {
        let sum = !fold(sum_words(sum_words(pseudo, &h), payload));
        // A computed 0 is sent as all ones (RFC 768): 0 means "no checksum".
        let sum = if sum == 0 { 0xffff } else { sum };
        h[6..8].copy_from_slice(&sum.to_be_bytes());
    }
    out.extend_from_slice(&h);
    out.extend_from_slice(payload);
}

/// Adds `bytes` as big-endian 16-bit words (an odd last byte padded with zero) to `acc`.
fn sum_words(acc: u32, bytes: &[u8]) -> u32 {
    let mut acc = u64::from(acc);
    let mut chunks = bytes.chunks_exact(2);
    for w in &mut chunks {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u64::from(*last) << 8;
    }
    while acc > u64::from(u32::MAX) {
        acc = (acc & 0xffff_ffff) + (acc >> 32);
    }
    acc as u32
}

/// The one's-complement sum folded to 16 bits.
fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verify(bytes: &[u8]) -> u16 {
        fold(sum_words(0, bytes))
    }

    /// A receiver's check: the sum over the header (and over pseudo-header, UDP header and
    /// payload) including the checksum is all ones.
    #[test]
    fn ipv4_checksums_verify() {
        let src: SocketAddr = "192.0.2.1:5004".parse().unwrap();
        let dst: SocketAddr = "198.51.100.7:40000".parse().unwrap();
        let payload = b"hello, odd length";
        let mut out = Vec::new();
        let built = build_udp(&mut out, src, dst, payload, payload.len() as u32, 7).unwrap();
        assert_eq!(built.captured as usize, out.len());
        assert_eq!(built.original as usize, out.len());
        assert_eq!(verify(&out[..20]), 0xffff);
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&out[12..20]);
        pseudo.extend_from_slice(&[0, 17]);
        pseudo.extend_from_slice(&out[24..26]);
        pseudo.extend_from_slice(&out[20..]);
        assert_eq!(verify(&pseudo), 0xffff);
        assert_eq!(u16::from_be_bytes([out[2], out[3]]) as usize, out.len());
    }

    #[test]
    fn ipv6_checksum_verifies_and_mixed_families_map() {
        let src: SocketAddr = "[2001:db8::1]:9".parse().unwrap();
        let dst: SocketAddr = "192.0.2.2:7".parse().unwrap();
        let payload = [0xab; 33];
        let mut out = Vec::new();
        build_udp(&mut out, src, dst, &payload, 33, 0).unwrap();
        assert_eq!(out[0] >> 4, 6);
        assert_eq!(
            &out[24..40],
            &"::ffff:192.0.2.2".parse::<Ipv6Addr>().unwrap().octets()
        );
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&out[8..40]);
        pseudo.extend_from_slice(&[0, 0, out[44], out[45], 0, 0, 0, 17]);
        pseudo.extend_from_slice(&out[40..]);
        assert_eq!(verify(&pseudo), 0xffff);
    }

    #[test]
    fn a_truncated_payload_keeps_its_length_and_no_checksum() {
        let src: SocketAddr = "192.0.2.1:1".parse().unwrap();
        let mut out = Vec::new();
        let built = build_udp(&mut out, src, src, &[1, 2, 3], 1000, 0).unwrap();
        assert_eq!(built.captured, 31);
        assert_eq!(built.original, 1028);
        assert_eq!(u16::from_be_bytes([out[2], out[3]]), 1028);
        assert_eq!(u16::from_be_bytes([out[24], out[25]]), 1008);
        assert_eq!(&out[26..28], &[0, 0]);
    }

    #[test]
    fn too_large_for_ipv4_is_refused_without_output() {
        let src: SocketAddr = "192.0.2.1:1".parse().unwrap();
        let mut out = Vec::new();
        let err = build_udp(&mut out, src, src, &[], 70_000, 0).unwrap_err();
        assert_eq!(err.max, MAX_IPV4_PAYLOAD);
        assert!(out.is_empty());
    }
}
