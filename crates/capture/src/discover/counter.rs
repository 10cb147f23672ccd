//! Sequence and tick counters: integer fields that advance by a constant step from packet to
//! packet, allowing for loss (a multiple of the step), reordering (a small step back) and
//! wrap-around at the field's width.

use std::ops::Range;

use super::field::{ByteColumn, COUNTERS, FieldType, Packet};

/// Fields start in the first this many bytes.
pub(super) const MAX_OFFSET: usize = 64;
/// Consecutive inconsistent values after which the counter is taken up again from the latest
/// (a sender restart, or a run of another message kind).
const RESYNC: usize = 8;

/// How well one field reads as a counter.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct CounterFit {
    pub(super) ty: FieldType,
    pub(super) offset: usize,
    /// The constant step between consecutive values.
    pub(super) step: u64,
    /// Packets whose value is consistent with the counter (the first one counts).
    pub(super) consistent: usize,
    /// Values exactly one step above the highest so far.
    pub(super) exact: usize,
    /// Values several steps above the highest (the ones between were lost or come later).
    pub(super) skips: usize,
    /// Values below the highest (arrived out of order).
    pub(super) reordered: usize,
    /// Times the value wrapped past its width.
    pub(super) wraps: usize,
    /// Times the counter was taken up again after a run of inconsistent values.
    pub(super) resyncs: usize,
}

/// `a - b` modulo 2^bits, as the nearest signed value.
fn delta(a: u64, b: u64, bits: u32) -> i64 {
    if bits == 64 {
        return a.wrapping_sub(b) as i64;
    }
    let modulus = 1u64 << bits;
    let d = a.wrapping_sub(b) & (modulus - 1);
    if d >= modulus / 2 {
        d as i64 - modulus as i64
    } else {
        d as i64
    }
}

/// Follows a counter of `step` through `packets` (each window on its own), pushing to `flags`
/// whether each packet is consistent.
pub(super) fn track(
    packets: &[Packet<'_>],
    windows: &[Range<usize>],
    ty: FieldType,
    offset: usize,
    step: u64,
    mut flags: Option<&mut Vec<bool>>,
) -> CounterFit {
    // A narrow counter allows smaller jumps, or random bytes would look consistent.
    let max_steps: i64 = if ty.width == 1 { 16 } else { 64 };
    let step_i = step as i64;
    let mut fit = CounterFit {
        ty,
        offset,
        step,
        consistent: 0,
        exact: 0,
        skips: 0,
        reordered: 0,
        wraps: 0,
        resyncs: 0,
    };
    for w in windows {
        let mut highest: Option<u64> = None;
        let mut rejects = 0;
        for &(_, p) in &packets[w.clone()] {
            let ok = match (ty.bits_at(p, offset), highest) {
                (None, _) => false,
                (Some(v), None) => {
                    highest = Some(v);
                    true
                }
                (Some(v), Some(h)) => {
                    let d = delta(v, h, ty.bits());
                    if d != 0 && d % step_i == 0 && (d / step_i).abs() <= max_steps {
                        rejects = 0;
                        if d > 0 {
                            if d == step_i {
                                fit.exact += 1;
                            } else {
                                fit.skips += 1;
                            }
                            if v < h {
                                fit.wraps += 1;
                            }
                            highest = Some(v);
                        } else {
                            fit.reordered += 1;
                        }
                        true
                    } else {
                        rejects += 1;
                        if rejects >= RESYNC {
                            highest = Some(v);
                            rejects = 0;
                            fit.resyncs += 1;
                        }
                        false
                    }
                }
            };
            fit.consistent += usize::from(ok);
            if let Some(f) = flags.as_deref_mut() {
                f.push(ok);
            }
        }
    }
    fit
}

/// The counters in the sample windows: fields whose most common positive delta is a step
/// taken by at least a fifth of consecutive pairs, and that stay consistent with it in at
/// least 60 % of the sampled packets.
pub(super) fn scan(
    packets: &[Packet<'_>],
    windows: &[Range<usize>],
) -> Vec<(FieldType, usize, u64)> {
    let sampled: usize = windows.iter().map(Range::len).sum();
    let longest = packets.iter().map(|p| p.1.len()).max().unwrap_or(0);
    let mut positive: Vec<i64> = Vec::with_capacity(sampled);
    let mut found = Vec::new();
    for offset in 0..MAX_OFFSET.min(longest) {
        for ty in COUNTERS {
            if offset + ty.size() > longest {
                continue;
            }
            // The layout decoder refuses sequence numbers beyond 2^61 (a u64 read over
            // constant high bytes).
            let first = packets.iter().find_map(|p| ty.bits_at(p.1, offset));
            if first.is_some_and(|v| v > crate::decode::MAX_MAGNITUDE as u64) {
                continue;
            }
            positive.clear();
            let mut pairs = 0usize;
            for w in windows {
                let mut prev = None;
                for &(_, p) in &packets[w.clone()] {
                    let Some(v) = ty.bits_at(p, offset) else {
                        continue;
                    };
                    if let Some(a) = prev {
                        pairs += 1;
                        let d = delta(v, a, ty.bits());
                        if d > 0 {
                            positive.push(d);
                        }
                    }
                    prev = Some(v);
                }
            }
            if pairs < 8 || positive.len() * 10 < pairs * 3 {
                continue;
            }
            let (step, count) = mode(&mut positive);
            // A step that leaves the low byte unchanged means the field starts a byte too early.
            if count * 5 < pairs || (ty.width > 1 && step % 256 == 0) {
                continue;
            }
            let fit = track(packets, windows, ty, offset, step as u64, None);
            if fit.consistent * 10 >= sampled * 6 {
                found.push((ty, offset, step as u64));
            }
        }
    }
    found
}

/// The most common value of `v` (sorted in place) and its count.
fn mode(v: &mut [i64]) -> (i64, usize) {
    v.sort_unstable();
    let (mut best, mut best_n) = (0, 0);
    let mut i = 0;
    while i < v.len() {
        let j = v[i..].partition_point(|&x| x == v[i]) + i;
        if j - i > best_n {
            (best, best_n) = (v[i], j - i);
        }
        i = j;
    }
    (best, best_n)
}

/// Whether widening a field over `bytes` is plausible: each is either part of the counter
/// (it varies) or an unused high byte (zero). A constant nonzero byte is another field.
fn may_widen(cols: &[ByteColumn], packets: usize, bytes: impl Iterator<Item = usize>) -> bool {
    bytes.into_iter().all(|b| {
        cols.get(b)
            .and_then(|c| c.constant(packets))
            .is_none_or(|v| v == 0)
    })
}

/// The byte offsets a field covers.
pub(super) fn span(ty: FieldType, offset: usize) -> Range<usize> {
    offset..offset + ty.size()
}

/// One chain per group of nested readings of the same bytes (`u8@3`, `u16le@3`, `u32le@3`
/// read the same low byte), narrowest first: each next one as consistent as the one before
/// and wider only over bytes that vary or are zero. The widest is the best reading unless its
/// extra (zero) bytes belong to another field.
pub(super) fn resolve(
    mut fits: Vec<CounterFit>,
    cols: &[ByteColumn],
    packets: usize,
) -> Vec<Vec<CounterFit>> {
    fits.sort_by_key(|f| (f.ty.low_byte(f.offset), f.step, f.ty.width, f.ty.big_endian));
    let mut out = Vec::new();
    let mut rest = fits.as_slice();
    while let Some(first) = rest.first() {
        let key = (first.ty.low_byte(first.offset), first.step);
        let n = rest
            .iter()
            .take_while(|f| (f.ty.low_byte(f.offset), f.step) == key)
            .count();
        let (group, tail) = rest.split_at(n);
        rest = tail;
        let mut cur = &group[0];
        let mut chain = vec![cur.clone()];
        loop {
            let wider: Vec<&CounterFit> = group
                .iter()
                .filter(|f| {
                    f.ty.width > cur.ty.width
                        && (cur.ty.width == 1 || f.ty.big_endian == cur.ty.big_endian)
                })
                .collect();
            let Some(width) = wider.iter().map(|f| f.ty.width).min() else {
                break;
            };
            let extra = |f: &CounterFit| {
                let (a, b) = (span(f.ty, f.offset), span(cur.ty, cur.offset));
                a.filter(move |i| !b.contains(i))
            };
            let next = wider
                .iter()
                .filter(|f| f.ty.width == width)
                .filter(|f| f.consistent >= cur.consistent && may_widen(cols, packets, extra(f)))
                // Prefer the side whose extra bytes vary, then little-endian.
                .min_by_key(|f| {
                    let varies = extra(f)
                        .any(|b| cols.get(b).is_some_and(|c| c.constant(packets).is_none()));
                    (!varies, f.ty.big_endian)
                });
            match next {
                Some(next) => {
                    cur = next;
                    chain.push(cur.clone());
                }
                None => break,
            }
        }
        out.push(chain);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    fn flow(payloads: &[Vec<u8>]) -> Vec<Packet<'_>> {
        payloads
            .iter()
            .enumerate()
            .map(|(i, p)| (Nanos::from_millis(i as i64), p.as_slice()))
            .collect()
    }

    #[test]
    fn deltas_wrap_at_the_width() {
        assert_eq!(delta(0, 255, 8), 1);
        assert_eq!(delta(255, 0, 8), -1);
        assert_eq!(delta(3, 65_535, 16), 4);
        assert_eq!(delta(0, u64::MAX, 64), 1);
    }

    /// A u16le counter past its wrap, with a lost packet and two swapped: consistent
    /// throughout, and `u16le` rather than its low byte or a u32 over a constant byte.
    #[test]
    fn a_wrapping_counter_with_loss_and_reordering_is_found_at_its_width() {
        let mut seqs: Vec<u16> = (65_500..=65_535).chain(0..60).collect();
        seqs.remove(10);
        seqs.swap(20, 21);
        let payloads: Vec<Vec<u8>> = seqs
            .iter()
            .map(|s| {
                let mut p = vec![0xAB];
                p.extend_from_slice(&s.to_le_bytes());
                p.extend_from_slice(&[0x7E, 0x7E, 0, 0, 0, 0]);
                p
            })
            .collect();
        let packets = flow(&payloads);
        let whole = 0..packets.len();
        let all = std::slice::from_ref(&whole);
        let found = scan(&packets, all);
        let fits: Vec<CounterFit> = found
            .iter()
            .map(|&(ty, off, step)| track(&packets, all, ty, off, step, None))
            .collect();
        let cols = super::super::field::byte_columns(&packets, 16);
        let resolved = resolve(fits, &cols, packets.len());
        assert_eq!(resolved.len(), 1, "{resolved:?}");
        let c = resolved[0].last().unwrap();
        assert_eq!(resolved[0][0].ty.to_string(), "u8");
        assert_eq!((c.ty.to_string(), c.offset, c.step), ("u16le".into(), 1, 1));
        assert_eq!((c.consistent, c.skips, c.reordered, c.wraps), (95, 2, 1, 1));
    }

    #[test]
    fn random_bytes_are_no_counter() {
        let mut rng = crate::rng::Rng::new(7);
        let payloads: Vec<Vec<u8>> = (0..500)
            .map(|_| (0..32).map(|_| rng.next_u64() as u8).collect())
            .collect();
        let packets = flow(&payloads);
        assert!(scan(&packets, std::slice::from_ref(&(0..500))).is_empty());
    }
}
