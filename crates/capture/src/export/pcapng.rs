//! The pcapng blocks the exporter writes (little-endian, one section): a section header, an
//! interface description per interface, enhanced packet blocks and interface statistics.
//!
//! Block and option layouts follow the pcapng specification (IETF draft
//! `draft-ietf-opsawg-pcapng`): every block is `type, total length, body, total length`, its
//! body padded to 32 bits, options as `code, length, value` padded to 32 bits and ended by
//! `opt_endofopt`.

/// Section Header Block.
const SHB: u32 = 0x0A0D_0D0A;
/// Interface Description Block.
const IDB: u32 = 0x0000_0001;
/// Interface Statistics Block.
const ISB: u32 = 0x0000_0005;
/// Enhanced Packet Block.
const EPB: u32 = 0x0000_0006;

/// `opt_comment`, valid in every block.
pub const OPT_COMMENT: u16 = 1;
/// `shb_userappl`: the application that wrote the section.
pub const SHB_USERAPPL: u16 = 4;
/// `if_name`.
pub const IF_NAME: u16 = 2;
/// `if_description`.
pub const IF_DESCRIPTION: u16 = 3;
/// `if_tsresol`: one byte, 9 = nanoseconds.
pub const IF_TSRESOL: u16 = 9;
/// `isb_ifrecv`: packets received by the interface (u64).
pub const ISB_IFRECV: u16 = 4;
/// `isb_ifdrop`: packets the interface (here: the kernel's socket queue) dropped (u64).
pub const ISB_IFDROP: u16 = 5;
/// `isb_usrdeliv`: packets delivered to the user (u64).
pub const ISB_USRDELIV: u16 = 8;

/// Options of one block, encoded as they are appended.
#[derive(Debug, Default)]
pub struct Options(Vec<u8>);

impl Options {
    /// Adds an option with a raw value.
    pub fn bytes(mut self, code: u16, value: &[u8]) -> Self {
        // Option values longer than 65,535 bytes cannot be stored; cut (at a character
        // boundary for text, see `text`).
        let value = &value[..value.len().min(usize::from(u16::MAX))];
        self.0.extend_from_slice(&code.to_le_bytes());
        self.0
            .extend_from_slice(&(value.len() as u16).to_le_bytes());
        self.0.extend_from_slice(value);
        pad(&mut self.0);
        self
    }

    /// Adds a UTF-8 text option.
    pub fn text(self, code: u16, value: &str) -> Self {
        let mut end = value.len().min(usize::from(u16::MAX));
        while !value.is_char_boundary(end) {
            end -= 1;
        }
        self.bytes(code, &value.as_bytes()[..end])
    }

    /// Adds a u64 option.
    pub fn u64(self, code: u16, value: u64) -> Self {
        self.bytes(code, &value.to_le_bytes())
    }

    /// The encoded options with `opt_endofopt`, or nothing when there are none.
    fn finish(mut self) -> Vec<u8> {
        if !self.0.is_empty() {
            self.0.extend_from_slice(&[0, 0, 0, 0]);
        }
        self.0
    }
}

/// Pads `buf` with zeros to a multiple of four bytes.
fn pad(buf: &mut Vec<u8>) {
    buf.resize(buf.len().div_ceil(4) * 4, 0);
}

/// Appends a block of `kind` with `body` (padded here) and `options`.
fn block(out: &mut Vec<u8>, kind: u32, body: &[u8], options: Options) {
    let options = options.finish();
    let padded = body.len().div_ceil(4) * 4;
    let total = (12 + padded + options.len()) as u32;
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.resize(out.len() + padded - body.len(), 0);
    out.extend_from_slice(&options);
    out.extend_from_slice(&total.to_le_bytes());
}

/// A section header: byte-order magic, version 1.0, section length unknown.
pub fn section_header(out: &mut Vec<u8>, options: Options) {
    let mut body = Vec::with_capacity(16);
    body.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    body.extend_from_slice(&1u16.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&(-1i64).to_le_bytes());
    block(out, SHB, &body, options);
}

/// An interface on link type `link` with no snap length, its timestamps in nanoseconds
/// (`if_tsresol` = 9 is added to `options`).
pub fn interface(out: &mut Vec<u8>, link: u16, options: Options) {
    let mut body = Vec::with_capacity(8);
    body.extend_from_slice(&link.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    block(out, IDB, &body, options.bytes(IF_TSRESOL, &[9]));
}

/// A 64-bit timestamp as the two 32-bit halves pcapng stores, high first.
fn timestamp(body: &mut Vec<u8>, ns: u64) {
    body.extend_from_slice(&((ns >> 32) as u32).to_le_bytes());
    body.extend_from_slice(&(ns as u32).to_le_bytes());
}

/// An enhanced packet on `interface` at `ns` (in the interface's nanosecond units).
pub fn packet(
    out: &mut Vec<u8>,
    interface: u32,
    ns: u64,
    data: &[u8],
    original: u32,
    options: Options,
) {
    let mut body = Vec::with_capacity(20 + data.len());
    body.extend_from_slice(&interface.to_le_bytes());
    timestamp(&mut body, ns);
    body.extend_from_slice(&(data.len() as u32).to_le_bytes());
    body.extend_from_slice(&original.to_le_bytes());
    body.extend_from_slice(data);
    block(out, EPB, &body, options);
}

/// Interface statistics for `interface` at `ns`.
pub fn statistics(out: &mut Vec<u8>, interface: u32, ns: u64, options: Options) {
    let mut body = Vec::with_capacity(12);
    body.extend_from_slice(&interface.to_le_bytes());
    timestamp(&mut body, ns);
    block(out, ISB, &body, options);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_padded_and_framed_by_their_length() {
        let mut out = Vec::new();
        packet(
            &mut out,
            1,
            (5u64 << 32) | 7,
            &[1, 2, 3],
            9,
            Options::default().text(OPT_COMMENT, "ab"),
        );
        assert_eq!(out.len() % 4, 0);
        let total = u32::from_le_bytes(out[4..8].try_into().unwrap()) as usize;
        assert_eq!(total, out.len());
        assert_eq!(&out[total - 4..], &out[4..8]);
        assert_eq!(u32::from_le_bytes(out[12..16].try_into().unwrap()), 5);
        assert_eq!(u32::from_le_bytes(out[16..20].try_into().unwrap()), 7);
        // Data padded to 4, then the comment option (code 1, length 2, padded), then the end.
        assert_eq!(&out[28..32], &[1, 2, 3, 0]);
        assert_eq!(&out[32..40], &[1, 0, 2, 0, b'a', b'b', 0, 0]);
        assert_eq!(&out[40..44], &[0, 0, 0, 0]);
    }

    #[test]
    fn a_long_text_option_is_cut_at_a_character_boundary() {
        let text = "é".repeat(40_000);
        let opts = Options::default().text(OPT_COMMENT, &text).finish();
        let len = usize::from(u16::from_le_bytes([opts[2], opts[3]]));
        assert!(len <= 65_535 && len % 2 == 0);
        assert!(std::str::from_utf8(&opts[4..4 + len]).is_ok());
    }
}
