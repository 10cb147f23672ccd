//! Reading candidate fields out of payloads, and what each byte offset holds across a flow.

use std::fmt;
use std::ops::Range;

use crate::time::Nanos;

/// One packet as discover sees it: when it arrived and what it carried.
pub type Packet<'a> = (Nanos, &'a [u8]);

/// A field's binary type, as the `layout:` grammar spells it (`u8`, `u16le`, `f64be`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldType {
    /// Bytes: 1, 2, 4 or 8.
    pub width: u8,
    /// Big-endian (meaningless for one byte).
    pub big_endian: bool,
    /// An IEEE float (`f32`, `f64`) rather than an unsigned integer.
    pub float: bool,
}

impl FieldType {
    /// An unsigned integer of `width` bytes.
    pub const fn uint(width: u8, big_endian: bool) -> Self {
        Self {
            width,
            big_endian: big_endian && width > 1,
            float: false,
        }
    }

    /// An IEEE float of 4 or 8 bytes.
    pub const fn float(width: u8, big_endian: bool) -> Self {
        Self {
            width,
            big_endian,
            float: true,
        }
    }

    /// The field's width in bytes.
    pub const fn size(self) -> usize {
        self.width as usize
    }

    /// Bits of an integer field.
    pub(super) const fn bits(self) -> u32 {
        8 * self.width as u32
    }

    /// The byte holding the least significant bits of a field at `offset`.
    pub(super) const fn low_byte(self, offset: usize) -> usize {
        if self.big_endian {
            offset + self.size() - 1
        } else {
            offset
        }
    }

    /// The raw bits at `offset`, or `None` past the end of `buf`.
    #[inline]
    pub(super) fn bits_at(self, buf: &[u8], offset: usize) -> Option<u64> {
        let b = buf.get(offset..offset + self.size())?;
        Some(match (self.width, self.big_endian) {
            (1, _) => u64::from(b[0]),
            (2, false) => u64::from(u16::from_le_bytes([b[0], b[1]])),
            (2, true) => u64::from(u16::from_be_bytes([b[0], b[1]])),
            (4, false) => u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            (4, true) => u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
            (_, false) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            (_, true) => u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        })
    }

    /// A float field's value when finite.
    #[inline]
    pub(super) fn float_at(self, buf: &[u8], offset: usize) -> Option<f64> {
        let bits = self.bits_at(buf, offset)?;
        let v = if self.width == 4 {
            f64::from(f32::from_bits(bits as u32))
        } else {
            f64::from_bits(bits)
        };
        v.is_finite().then_some(v)
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letter = if self.float { 'f' } else { 'u' };
        if self.width == 1 {
            return write!(f, "{letter}8");
        }
        let order = if self.big_endian { "be" } else { "le" };
        write!(f, "{letter}{}{order}", 8 * u32::from(self.width))
    }
}

/// The counter types tried: every unsigned width in both byte orders.
pub(super) const COUNTERS: [FieldType; 7] = [
    FieldType::uint(1, false),
    FieldType::uint(2, false),
    FieldType::uint(2, true),
    FieldType::uint(4, false),
    FieldType::uint(4, true),
    FieldType::uint(8, false),
    FieldType::uint(8, true),
];

/// The send-time types tried: 32- and 64-bit integers and floats in both byte orders.
pub(super) const CLOCKS: [FieldType; 8] = [
    FieldType::uint(4, false),
    FieldType::uint(4, true),
    FieldType::uint(8, false),
    FieldType::uint(8, true),
    FieldType::float(4, false),
    FieldType::float(4, true),
    FieldType::float(8, false),
    FieldType::float(8, true),
];

/// How often each value of one byte offset occurs across a flow.
#[derive(Clone, Debug)]
pub(super) struct ByteColumn {
    /// Packets long enough to have this byte.
    pub(super) present: usize,
    /// Occurrences of each value.
    pub(super) counts: Box<[u32; 256]>,
    /// Consecutive packets (both present) whose byte differs.
    pub(super) changes: usize,
}

impl ByteColumn {
    /// The most common value and how often it occurs.
    pub(super) fn top(&self) -> (u8, usize) {
        let (v, c) = self
            .counts
            .iter()
            .enumerate()
            .max_by_key(|&(v, c)| (*c, std::cmp::Reverse(v)))
            .map_or((0, 0), |(v, c)| (v as u8, *c as usize));
        (v, c)
    }

    /// One value in at least 99 % of the packets that have the byte (and in most packets).
    pub(super) fn constant(&self, packets: usize) -> Option<u8> {
        let (v, c) = self.top();
        (self.present * 10 >= packets * 9 && c * 100 >= self.present * 99 && c > 0).then_some(v)
    }

    /// The values that occur in at least `min_share` of the packets that have the byte, most
    /// common first.
    pub(super) fn values(&self, min_share: f64) -> Vec<(u8, usize)> {
        let floor = (min_share * self.present as f64).ceil().max(1.0) as u32;
        let mut v: Vec<(u8, usize)> = (0..=255u8)
            .filter(|&b| self.counts[usize::from(b)] >= floor)
            .map(|b| (b, self.counts[usize::from(b)] as usize))
            .collect();
        v.sort_by_key(|&(b, c)| (std::cmp::Reverse(c), b));
        v
    }
}

/// Byte columns for offsets `0..len` over a flow.
pub(super) fn byte_columns(packets: &[Packet<'_>], len: usize) -> Vec<ByteColumn> {
    let mut cols: Vec<ByteColumn> = (0..len)
        .map(|_| ByteColumn {
            present: 0,
            counts: Box::new([0; 256]),
            changes: 0,
        })
        .collect();
    let mut prev: &[u8] = &[];
    for &(_, p) in packets {
        for (i, col) in cols.iter_mut().enumerate().take(p.len()) {
            col.present += 1;
            col.counts[usize::from(p[i])] += 1;
            if prev.get(i).is_some_and(|&b| b != p[i]) {
                col.changes += 1;
            }
        }
        prev = p;
    }
    cols
}

/// Contiguous windows of a flow of `n` packets to search in: the whole flow when small, else
/// `WINDOWS` runs of `WINDOW` packets spread evenly (counters need consecutive packets).
pub(super) fn windows(n: usize) -> Vec<Range<usize>> {
    const WINDOW: usize = 2048;
    const WINDOWS: usize = 4;
    if n <= WINDOW * WINDOWS {
        return std::iter::once(0..n).collect();
    }
    (0..WINDOWS)
        .map(|i| {
            let start = (n - WINDOW) * i / (WINDOWS - 1);
            start..start + WINDOW
        })
        .collect()
}

/// The median of `v` (reordered), or `None` when empty.
pub(super) fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mid = v.len() / 2;
    let (_, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    Some(*m)
}

/// The `q` quantile (0..=1) of `v` (reordered), or 0 when empty.
pub(super) fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let at = ((v.len() - 1) as f64 * q).round() as usize;
    let (_, m, _) = v.select_nth_unstable_by(at, f64::total_cmp);
    *m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_read_and_print_as_the_layout_grammar_does() {
        let buf = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        let t = FieldType::uint(2, true);
        assert_eq!(
            (t.to_string(), t.bits_at(&buf, 1)),
            ("u16be".into(), Some(0x0203))
        );
        let t = FieldType::uint(4, false);
        assert_eq!(t.bits_at(&buf, 0), Some(0x0403_0201));
        assert_eq!(t.bits_at(&buf, 6), None);
        assert_eq!(FieldType::uint(1, true).to_string(), "u8");
        assert_eq!(FieldType::float(8, false).to_string(), "f64le");
        let f = 12.5f64.to_be_bytes();
        assert_eq!(FieldType::float(8, true).float_at(&f, 0), Some(12.5));
        assert_eq!(
            FieldType::float(4, false).float_at(&f32::NAN.to_le_bytes(), 0),
            None
        );
        assert_eq!(FieldType::uint(4, true).low_byte(3), 6);
    }

    #[test]
    fn windows_cover_small_flows_and_spread_over_large_ones() {
        assert_eq!(windows(100), std::iter::once(0..100).collect::<Vec<_>>());
        let w = windows(100_000);
        assert_eq!(w.len(), 4);
        assert_eq!((w[0].start, w[3].end), (0, 100_000));
    }
}
