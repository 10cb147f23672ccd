//! RTP (RFC 3550 §5.1) fixed header parsing and sequence/timestamp extension.

use super::DecodeError;

/// The fields of an RTP header that jitter analysis needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtpHeader {
    /// Marker bit (start of a talkspurt for audio, end of a frame for video).
    pub marker: bool,
    /// Payload type, 0..=127.
    pub payload_type: u8,
    /// 16-bit sequence number.
    pub seq: u16,
    /// 32-bit media timestamp.
    pub timestamp: u32,
    /// Synchronisation source.
    pub ssrc: u32,
    /// Offset of the payload after CSRCs and the header extension.
    pub payload_offset: usize,
    /// Payload length after removing padding.
    pub payload_len: usize,
}

impl RtpHeader {
    /// Parses and checks an RTP header: version 2, CSRC list, extension and padding within
    /// the packet.
    ///
    /// # Errors
    /// A [`DecodeError`] naming the field that does not fit.
    pub fn parse(buf: &[u8]) -> Result<Self, DecodeError> {
        if buf.len() < 12 {
            return Err(DecodeError::new(format!(
                "RTP packet of {} bytes is shorter than the 12-byte header",
                buf.len()
            )));
        }
        let version = buf[0] >> 6;
        if version != 2 {
            return Err(DecodeError::new(format!(
                "RTP version {version} (expected 2)"
            )));
        }
        let padding = buf[0] & 0x20 != 0;
        let extension = buf[0] & 0x10 != 0;
        let csrc_count = usize::from(buf[0] & 0x0f);
        let mut offset = 12 + 4 * csrc_count;
        if offset > buf.len() {
            return Err(DecodeError::new(format!(
                "RTP CSRC count {csrc_count} needs {offset} bytes, packet has {}",
                buf.len()
            )));
        }
        if extension {
            if offset + 4 > buf.len() {
                return Err(DecodeError::new("RTP header extension cut short"));
            }
            let words = usize::from(u16::from_be_bytes([buf[offset + 2], buf[offset + 3]]));
            offset += 4 + 4 * words;
            if offset > buf.len() {
                return Err(DecodeError::new(format!(
                    "RTP header extension of {words} words runs past the packet"
                )));
            }
        }
        let mut end = buf.len();
        if padding {
            let pad = usize::from(buf[buf.len() - 1]);
            if pad == 0 || offset + pad > buf.len() {
                return Err(DecodeError::new(format!(
                    "RTP padding of {pad} bytes is invalid"
                )));
            }
            end -= pad;
        }
        Ok(Self {
            marker: buf[1] & 0x80 != 0,
            payload_type: buf[1] & 0x7f,
            seq: u16::from_be_bytes([buf[2], buf[3]]),
            timestamp: u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]),
            ssrc: u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]),
            payload_offset: offset,
            payload_len: end - offset,
        })
    }
}

/// The clock rate of a static payload type (RFC 3551 table 4 and 5), if it has one.
pub fn static_clock_rate(payload_type: u8) -> Option<u32> {
    Some(match payload_type {
        0 | 3 | 4 | 5 | 7 | 8 | 9 | 12 | 13 | 15 | 18 => 8_000,
        6 => 16_000,
        10 | 11 => 44_100,
        16 => 11_025,
        17 => 22_050,
        14 | 25 | 26 | 28 | 31 | 32 | 33 | 34 => 90_000,
        _ => return None,
    })
}

/// The encoding name of a static payload type, for display.
pub fn static_name(payload_type: u8) -> Option<&'static str> {
    Some(match payload_type {
        0 => "PCMU",
        3 => "GSM",
        4 => "G723",
        5 | 6 | 16 | 17 => "DVI4",
        7 => "LPC",
        8 => "PCMA",
        9 => "G722",
        10 | 11 => "L16",
        12 => "QCELP",
        13 => "CN",
        14 => "MPA",
        15 => "G728",
        18 => "G729",
        25 => "CelB",
        26 => "JPEG",
        28 => "nv",
        31 => "H261",
        32 => "MPV",
        33 => "MP2T",
        34 => "H263",
        _ => return None,
    })
}

/// Extends a wrapping counter (16-bit sequence, 32-bit timestamp) to 64 bits.
///
/// Each new value is placed at the candidate nearest to the highest value seen so far, so
/// both wrap-around *and* reordering across a wrap are handled: 65535 arriving after 2
/// extends to just below it, not a whole cycle above.
#[derive(Clone, Copy, Debug)]
pub struct Extender {
    bits: u32,
    highest: Option<i64>,
}

impl Extender {
    /// An extender for a counter of `bits` bits (1..=32).
    pub const fn new(bits: u32) -> Self {
        Self {
            bits,
            highest: None,
        }
    }

    /// The 16-bit RTP sequence number extender.
    pub const fn sequence() -> Self {
        Self::new(16)
    }

    /// The 32-bit RTP timestamp extender.
    pub const fn timestamp() -> Self {
        Self::new(32)
    }

    /// Extends `value` (its low `bits` bits) to the nearest 64-bit position.
    pub fn extend(&mut self, value: u32) -> i64 {
        let modulus = 1i64 << self.bits;
        let value = i64::from(value) & (modulus - 1);
        let Some(highest) = self.highest else {
            self.highest = Some(value);
            return value;
        };
        let low = highest.rem_euclid(modulus);
        let mut delta = value - low;
        if delta > modulus / 2 {
            delta -= modulus;
        } else if delta < -modulus / 2 {
            delta += modulus;
        }
        let extended = highest + delta;
        if extended > highest {
            self.highest = Some(extended);
        }
        extended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(cc: u8, ext: bool, pad: u8, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[0] = 0x80 | cc | if ext { 0x10 } else { 0 } | if pad > 0 { 0x20 } else { 0 };
        b[1] = 0x80 | 8;
        b[2..4].copy_from_slice(&513u16.to_be_bytes());
        b[4..8].copy_from_slice(&160u32.to_be_bytes());
        b[8..12].copy_from_slice(&0xdead_beefu32.to_be_bytes());
        if pad > 0 {
            b[len - 1] = pad;
        }
        b
    }

    #[test]
    fn parses_fixed_header() {
        let h = RtpHeader::parse(&packet(0, false, 0, 172)).unwrap();
        assert!(h.marker);
        assert_eq!(
            (h.payload_type, h.seq, h.timestamp, h.ssrc),
            (8, 513, 160, 0xdead_beef)
        );
        assert_eq!((h.payload_offset, h.payload_len), (12, 160));
    }

    #[test]
    fn csrc_extension_and_padding() {
        let mut b = packet(2, true, 4, 12 + 8 + 4 + 8 + 20);
        b[20 + 2..20 + 4].copy_from_slice(&2u16.to_be_bytes());
        let h = RtpHeader::parse(&b).unwrap();
        assert_eq!(h.payload_offset, 12 + 8 + 4 + 8);
        assert_eq!(h.payload_len, 16);
    }

    #[test]
    fn rejects_malformed() {
        assert!(RtpHeader::parse(&[0x80; 11]).is_err());
        let mut v1 = packet(0, false, 0, 20);
        v1[0] = 0x40;
        assert!(
            RtpHeader::parse(&v1)
                .unwrap_err()
                .to_string()
                .contains("version 1")
        );
        // CSRC count 15 in a 12-byte packet.
        assert!(
            RtpHeader::parse(&packet(15, false, 0, 12))
                .unwrap_err()
                .to_string()
                .contains("CSRC")
        );
        assert!(RtpHeader::parse(&packet(0, true, 0, 14)).is_err());
        assert!(RtpHeader::parse(&packet(0, false, 200, 20)).is_err());
    }

    #[test]
    fn sequence_extension_handles_wrap_and_reorder() {
        let mut e = Extender::sequence();
        let got: Vec<i64> = [65533u32, 65535, 65534, 1, 0, 2, 65535, 3]
            .iter()
            .map(|&s| e.extend(s))
            .collect();
        assert_eq!(
            got,
            vec![65533, 65535, 65534, 65537, 65536, 65538, 65535, 65539]
        );
        // Reordered before the very first packet goes below it, not a cycle up.
        let mut e = Extender::sequence();
        assert_eq!(e.extend(5), 5);
        assert_eq!(e.extend(65534), -2);
        assert_eq!(e.extend(6), 6);
    }

    #[test]
    fn timestamp_extension_wraps() {
        let mut e = Extender::timestamp();
        assert_eq!(e.extend(u32::MAX - 159), i64::from(u32::MAX) - 159);
        assert_eq!(e.extend(0), 1i64 << 32);
        assert_eq!(e.extend(160), (1i64 << 32) + 160);
    }
}
