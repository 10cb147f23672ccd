//! Discovering the layout of an unknown protocol from one flow's payloads.
//!
//! [`discover`] looks at every integer and float reading of the first 64 bytes of each payload
//! and proposes a `layout:SPEC` (see [`crate::decode::layout`]) when it finds:
//! - a **sequence or tick counter**: `u8`, `u16`, `u32` or `u64` in either byte order that
//!   advances by a constant step from packet to packet, allowing for loss, reordering and
//!   wrap-around ([`Role::Seq`]);
//! - a **send time**: an integer in ms, µs, ns or 100 ns ticks, or a float in seconds or ms,
//!   whose rate against arrival time is near one and whose one-way delay stays within a second
//!   of its median ([`Role::Send`]); failing one, the counter itself read as ticks at the rate
//!   it advances (a guess the result says it is);
//! - **constant or enumerated bytes** ([`Role::Type`]); when one enumerated byte splits the
//!   flow into message kinds that are better explained each with its own layout, a spec per
//!   kind conditioned on it (`when=u8@0=2,seq=…`): see [`Split`].
//!
//! Each [`Candidate`] carries its evidence (the share of packets consistent with it, steps,
//! residuals). An [`Analysis`] proposes a layout only when its confidence reaches
//! [`CONFIDENCE`]; below it, or for flows shorter than [`MIN_PACKETS`], it says nothing was
//! found rather than guess.
//!
//! Large flows are searched in four windows of 2,048 consecutive packets, and only the
//! candidates found there are measured over the whole flow, so a 100,000-packet flow takes
//! well under a second.
//!
//! # Example
//! ```
//! use jitterlab_capture::Nanos;
//! use jitterlab_capture::discover::discover;
//!
//! // A 30 Hz sender: a magic byte, a u16le counter at byte 1, a f64le send time in ms at 3.
//! let payloads: Vec<Vec<u8>> = (0..200u16)
//!     .map(|i| {
//!         let mut p = vec![0x7e];
//!         p.extend_from_slice(&i.to_le_bytes());
//!         p.extend_from_slice(&(1e5 + f64::from(i) * 33.3).to_le_bytes());
//!         p
//!     })
//!     .collect();
//! let packets: Vec<(Nanos, &[u8])> = payloads
//!     .iter()
//!     .enumerate()
//!     .map(|(i, p)| (Nanos::from_micros(i as i64 * 33_300 + 20_000), p.as_slice()))
//!     .collect();
//! let found = discover(&packets);
//! assert_eq!(found.layout(), Some("seq=u16le@1,send=f64le@3:ms"));
//! assert!(found.confidence() > 0.9);
//! ```

mod clock;
mod counter;
mod field;
pub mod synthetic;

use std::ops::Range;

use clock::ClockFit;
pub use clock::Unit;
use counter::{CounterFit, MAX_OFFSET, span};
use field::ByteColumn;
pub use field::{FieldType, Packet};

use crate::time::Nanos;

/// Fewer packets than this are too few to tell a counter from chance.
pub const MIN_PACKETS: usize = 16;
/// The confidence below which nothing is proposed.
pub const CONFIDENCE: f64 = 0.5;
/// The share of a flow a candidate must be consistent with to be listed.
const MIN_SHARE: f64 = 0.5;
/// A counter read as ticks is a guess about the sender: its confidence is scaled by this.
const TICKS_PENALTY: f64 = 0.75;
/// How much better (in share of the flow explained) a split must be to be preferred.
const SPLIT_GAIN: f64 = 0.05;
/// At most this many type bytes are tried for a split.
const SPLIT_TRIES: usize = 4;

/// What a candidate field would be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A sequence number or tick counter.
    Seq,
    /// A send time.
    Send,
    /// A constant or enumerated byte (a magic number, a message type).
    Type,
}

impl Role {
    /// `seq`, `send` or `type`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Seq => "seq",
            Self::Send => "send",
            Self::Type => "type",
        }
    }
}

/// Why a candidate is one.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Evidence {
    /// A counter's steps.
    Counter {
        /// The constant step.
        step: u64,
        /// Values one step above the highest so far.
        exact: usize,
        /// Values several steps above (loss in between, or packets arriving later).
        skips: usize,
        /// Values below the highest (out of order).
        reordered: usize,
        /// Wraps past the field's width.
        wraps: usize,
    },
    /// A send time's fit against arrivals.
    Clock {
        /// Send-clock seconds per arrival second (1 + drift).
        rate: f64,
        /// Median |one-way delay − its median|.
        residual_p50: Nanos,
        /// 95th percentile of the same.
        residual_p95: Nanos,
        /// The counter read as ticks at the rate it advances against arrivals, not a time
        /// field: it assumes the sender stamps by tick.
        from_counter: bool,
    },
    /// A run of bytes with one value each.
    Constant {
        /// The values.
        bytes: Vec<u8>,
    },
    /// A byte with a few values.
    Values {
        /// Each value and its packets, most common first.
        values: Vec<(u8, usize)>,
        /// Consecutive packets whose byte differs (a message type changes often; the high
        /// byte of a counter seldom).
        changes: usize,
    },
}

/// One candidate field with its evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// What it would be.
    pub role: Role,
    /// Its type (`u8` for type bytes).
    pub ty: FieldType,
    /// Its first byte.
    pub offset: usize,
    /// Bytes covered (more than the type's width for a run of constant bytes).
    pub len: usize,
    /// A send time's unit.
    pub unit: Option<Unit>,
    /// Share of the packets consistent with it (for type bytes: with the listed values).
    pub share: f64,
    /// Whether the proposed layout uses it.
    pub chosen: bool,
    /// Why.
    pub evidence: Evidence,
}

impl Candidate {
    /// The type as JSON names it: `u16le`, or `u8*4` for a run of four constant bytes.
    pub fn type_name(&self) -> String {
        if self.len > self.ty.size() {
            format!("{}*{}", self.ty, self.len)
        } else {
            self.ty.to_string()
        }
    }

    fn span(&self) -> Range<usize> {
        self.offset..self.offset + self.len
    }
}

/// What one run of packets (a flow, or one message kind of it) holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    /// Packets looked at.
    pub packets: usize,
    /// The candidates, counters then send times then type bytes, best first.
    pub candidates: Vec<Candidate>,
    /// The proposed spec (without `layout:`), when the confidence reaches [`CONFIDENCE`].
    pub layout: Option<String>,
    /// 0..1: the share of packets both fields explain, discounted for short runs (and for a
    /// send time read from the counter).
    pub confidence: f64,
    /// Packets whose sequence number and send time are both consistent.
    pub explained: usize,
    /// Packets long enough for both fields but not consistent with them (what the layout
    /// would misread).
    pub misread: usize,
    /// What was (not) found, in a sentence.
    pub note: String,
}

impl Analysis {
    fn nothing(packets: usize, note: String) -> Self {
        Self {
            packets,
            candidates: Vec::new(),
            layout: None,
            confidence: 0.0,
            explained: 0,
            misread: 0,
            note,
        }
    }

    /// The share of `total` packets this analysis explains, less what it would misread.
    fn score(&self, total: usize) -> f64 {
        if self.layout.is_none() || total == 0 {
            return 0.0;
        }
        (self.explained as f64 - self.misread as f64) / total as f64
    }

    fn chosen(&self, role: Role) -> Option<&Candidate> {
        self.candidates.iter().find(|c| c.role == role && c.chosen)
    }
}

/// One message kind of a split flow.
#[derive(Clone, Debug, PartialEq)]
pub struct Kind {
    /// The type byte's value.
    pub value: u8,
    /// What this kind's packets hold; its layout starts with `when=u8@OFFSET=VALUE`.
    pub analysis: Analysis,
}

/// A flow split into message kinds by a type byte.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// The type byte's offset.
    pub offset: usize,
    /// Each kind, most packets first.
    pub kinds: Vec<Kind>,
}

/// What [`discover`] found in a flow.
#[derive(Clone, Debug, PartialEq)]
pub struct Discovery {
    /// Packets in the flow.
    pub packets: usize,
    /// The flow taken as one kind.
    pub flow: Analysis,
    /// The split by message type, when it explains the flow better.
    pub split: Option<Split>,
}

impl Discovery {
    /// The analyses that propose a layout: each kind's when split, else the flow's.
    pub fn found(&self) -> Vec<&Analysis> {
        match &self.split {
            Some(s) => s
                .kinds
                .iter()
                .map(|k| &k.analysis)
                .filter(|a| a.layout.is_some())
                .collect(),
            None => self.flow.layout.iter().map(|_| &self.flow).collect(),
        }
    }

    /// Every proposed spec.
    pub fn layouts(&self) -> Vec<&str> {
        self.found()
            .into_iter()
            .filter_map(|a| a.layout.as_deref())
            .collect()
    }

    /// The analysis whose layout explains the most packets.
    pub fn best(&self) -> Option<&Analysis> {
        self.found().into_iter().max_by(|a, b| {
            (a.explained, a.confidence)
                .partial_cmp(&(b.explained, b.confidence))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
    }

    /// The best spec, ready to paste after `--decoder layout:`.
    pub fn layout(&self) -> Option<&str> {
        self.best().and_then(|a| a.layout.as_deref())
    }

    /// The best layout's confidence, or when none is proposed the highest one seen.
    pub fn confidence(&self) -> f64 {
        match self.best() {
            Some(a) => a.confidence,
            None => {
                let kinds = self.split.iter().flat_map(|s| &s.kinds);
                kinds
                    .map(|k| k.analysis.confidence)
                    .fold(self.flow.confidence, f64::max)
            }
        }
    }

    /// The candidates behind the best layout: with a split, the type byte across the flow
    /// then the best kind's fields; else the flow's.
    pub fn candidates(&self) -> Vec<&Candidate> {
        match (&self.split, self.best()) {
            (Some(s), Some(best)) => {
                let kind = self
                    .flow
                    .candidates
                    .iter()
                    .filter(|c| c.role == Role::Type && c.offset == s.offset && c.len == 1);
                kind.chain(best.candidates.iter().filter(|c| c.role != Role::Type))
                    .collect()
            }
            _ => self.flow.candidates.iter().collect(),
        }
    }
}

/// Studies one flow's packets (in arrival order) and proposes a layout.
pub fn discover(packets: &[Packet<'_>]) -> Discovery {
    let n = packets.len();
    let cols = field::byte_columns(packets, MAX_OFFSET + 8);
    let flow = analyse(packets, &cols);
    let whole = flow.score(n);
    let mut best: Option<(f64, Split)> = None;
    if n >= 2 * MIN_PACKETS && whole < 1.0 - SPLIT_GAIN {
        let taken: Vec<Range<usize>> = [Role::Seq, Role::Send]
            .iter()
            .filter_map(|&r| flow.chosen(r).map(Candidate::span))
            .collect();
        for offset in type_bytes(&cols, n, &taken) {
            let split = split_on(packets, offset, &cols[offset]);
            let score: f64 = split.kinds.iter().map(|k| k.analysis.score(n)).sum();
            if score > best.as_ref().map_or(whole + SPLIT_GAIN, |b| b.0) {
                best = Some((score, split));
            }
        }
    }
    Discovery {
        packets: n,
        flow,
        split: best.map(|b| b.1),
    }
}

/// Offsets whose byte may be a message type: a few values, each in at least 2 % of the
/// packets (two in at least [`MIN_PACKETS`]), covering 98 % of them, and changing between
/// consecutive packets at least 5 % of the time.
fn type_bytes(cols: &[ByteColumn], n: usize, taken: &[Range<usize>]) -> Vec<usize> {
    (0..MAX_OFFSET.min(cols.len()))
        .filter(|o| !taken.iter().any(|t| t.contains(o)))
        .filter(|&o| {
            let c = &cols[o];
            let values = c.values(0.02);
            let covered: usize = values.iter().map(|v| v.1).sum();
            c.present * 100 >= n * 95
                && (2..=16).contains(&values.len())
                && values.iter().filter(|v| v.1 >= MIN_PACKETS).count() >= 2
                && covered * 100 >= c.present * 98
                && c.changes * 20 >= n
        })
        .take(SPLIT_TRIES)
        .collect()
}

/// Analyses each kind of a split on the byte at `offset`.
fn split_on(packets: &[Packet<'_>], offset: usize, col: &ByteColumn) -> Split {
    let kinds = col
        .values(0.02)
        .into_iter()
        .map(|(value, _)| {
            let mine: Vec<Packet<'_>> = packets
                .iter()
                .filter(|p| p.1.get(offset) == Some(&value))
                .copied()
                .collect();
            let cols = field::byte_columns(&mine, MAX_OFFSET + 8);
            let mut analysis = analyse(&mine, &cols);
            if let Some(l) = &mut analysis.layout {
                *l = format!("when=u8@{offset}={value},{l}");
            }
            Kind { value, analysis }
        })
        .collect();
    Split { offset, kinds }
}

/// Finds the counters, send times and type bytes of one run of packets.
fn analyse(packets: &[Packet<'_>], cols: &[ByteColumn]) -> Analysis {
    let n = packets.len();
    if n < MIN_PACKETS {
        return Analysis::nothing(
            n,
            format!("{n} packets are too few to tell (at least {MIN_PACKETS})"),
        );
    }
    let windows = field::windows(n);
    let whole = 0..n;
    let all = std::slice::from_ref(&whole);
    let counters: Vec<CounterFit> = counter::scan(packets, &windows)
        .into_iter()
        .map(|(ty, offset, step)| counter::track(packets, all, ty, offset, step, None))
        .filter(|f| share(f.consistent, n) >= MIN_SHARE)
        .collect();
    let mut counters = counter::resolve(counters, cols, n);
    counters.sort_by_key(|chain| {
        let c = chain.last().expect("chains are not empty");
        (
            std::cmp::Reverse(c.consistent),
            std::cmp::Reverse(c.exact),
            c.step,
            c.offset,
        )
    });
    let clocks: Vec<ClockFit> = clock::scan(packets, &windows, cols)
        .into_iter()
        .filter_map(|(ty, offset, unit)| clock::verify(packets, ty, offset, unit))
        .filter(|f| share(f.consistent, n) >= MIN_SHARE)
        .collect();
    let mut clocks = clock::resolve(clocks);
    clocks.sort_by(|a, b| {
        b.consistent
            .cmp(&a.consistent)
            .then(a.p50.total_cmp(&b.p50))
            .then(a.offset.cmp(&b.offset))
    });
    let (seq, send) = pick_pair(&counters, &clocks, n);
    let send = match (&seq, send) {
        (Some(c), None) => clock::ticks(packets, c)
            .filter(|t| share(t.consistent, n) >= MIN_SHARE)
            .inspect(|t| clocks.push(t.clone())),
        (_, send) => send,
    };

    let mut candidates: Vec<Candidate> = counters
        .iter()
        .map(|chain| {
            let chosen = chain.iter().find(|c| seq.as_ref() == Some(c));
            match chosen {
                Some(c) => counter_candidate(c, n, send.is_some()),
                None => counter_candidate(chain.last().expect("not empty"), n, false),
            }
        })
        .collect();
    candidates.extend(
        clocks
            .iter()
            .map(|c| clock_candidate(c, n, seq.is_some() && send.as_ref() == Some(c))),
    );
    let taken: Vec<Range<usize>> = candidates
        .iter()
        .filter(|c| c.chosen)
        .map(Candidate::span)
        .collect();
    candidates.extend(type_candidates(cols, n, &taken));

    let (Some(seq), Some(send)) = (seq, send) else {
        let note = match (counters.first(), clocks.first()) {
            (None, None) => "no counter and no send time".to_owned(),
            (None, Some(_)) => "a send time but no sequence counter".to_owned(),
            (Some(_), _) => "a counter but no send time, and it does not advance steadily \
                             enough against arrivals to be read as ticks"
                .to_owned(),
        };
        return Analysis {
            candidates,
            ..Analysis::nothing(n, format!("nothing found: {note}"))
        };
    };
    let mut seq_ok = Vec::with_capacity(n);
    counter::track(
        packets,
        all,
        seq.ty,
        seq.offset,
        seq.step,
        Some(&mut seq_ok),
    );
    let send_ok = clock::flags(packets, &send);
    let end = span(seq.ty, seq.offset)
        .end
        .max(span(send.ty, send.offset).end);
    let (mut explained, mut misread) = (0, 0);
    for ((p, a), b) in packets.iter().zip(&seq_ok).zip(&send_ok) {
        if *a && *b {
            explained += 1;
        } else if p.1.len() >= end {
            misread += 1;
        }
    }
    let size = 1.0 - (-((n - 1) as f64) / 20.0).exp();
    let penalty = if send.from_counter {
        TICKS_PENALTY
    } else {
        1.0
    };
    let confidence = share(explained, n) * size * penalty;
    let spec = format!(
        "seq={}@{},send={}@{}{}",
        seq.ty,
        seq.offset,
        send.ty,
        send.offset,
        send.unit.spec()
    );
    let found = confidence >= CONFIDENCE;
    let note = match (found, send.from_counter) {
        (true, false) => format!("found: {spec}"),
        (true, true) => format!(
            "found a counter but no send time: {spec} reads the counter as ticks at the \
             {} Hz it advances against arrivals (a guess about the sender)",
            send.unit
        ),
        (false, _) => format!(
            "nothing found: the best reading ({spec}) explains {explained} of {n} packets, \
             confidence {confidence:.2} < {CONFIDENCE}"
        ),
    };
    Analysis {
        packets: n,
        candidates,
        layout: found.then_some(spec),
        confidence,
        explained,
        misread,
        note,
    }
}

/// The counter and send time, on separate bytes, that together explain the most packets: a
/// clock can also read as a counter (its top byte ticks along; float bytes at 64 Hz step by
/// one) and a counter as a clock (a big-endian counter read little-endian advances 2^24 per
/// packet, near 1e9 per second at 60 Hz), but the true pair leaves no field read twice.
///
/// Ties (to 1 % of the packets) go to a rate within drift of one, as measured (integer
/// readings of float bytes advance at powers of two: 1.024 ms, 1.049 µs, 1.074 ns per unit; a
/// counter times 2^24 is a 1.0066 ns clock at 60 Hz), then to the
/// smaller median residual (the byte of a ns clock worth 2^24 ns, read as the top byte of
/// another u32, is a ns clock too, at rate one but in steps of 16.8 ms), then to a float, to
/// more packets explained and exact steps, and to the rate nearest one. Without a send time,
/// the best counter alone.
fn pick_pair(
    counters: &[Vec<CounterFit>],
    clocks: &[ClockFit],
    n: usize,
) -> (Option<CounterFit>, Option<ClockFit>) {
    let overlaps = |a: Range<usize>, b: Range<usize>| a.start < b.end && b.start < a.end;
    let bucket = (n / 100).max(1);
    let key = |c: &CounterFit, s: &ClockFit| {
        let off = (s.rate - 1.0).abs();
        (
            c.consistent.min(s.consistent) / bucket,
            s.steady,
            std::cmp::Reverse((s.p50 * 1e6) as u64),
            s.ty.float,
            c.consistent + s.consistent,
            c.exact,
            std::cmp::Reverse((off * 1e9) as u64),
        )
    };
    let mut best: Option<(&CounterFit, &ClockFit)> = None;
    for chain in counters {
        for s in clocks {
            // The widest reading of the counter that leaves the clock's bytes alone.
            let Some(c) = chain
                .iter()
                .rev()
                .find(|c| !overlaps(span(c.ty, c.offset), span(s.ty, s.offset)))
            else {
                continue;
            };
            if best.is_none_or(|(bc, bs)| key(c, s) > key(bc, bs)) {
                best = Some((c, s));
            }
        }
    }
    match best {
        Some((c, s)) => (Some(c.clone()), Some(s.clone())),
        None => (counters.first().and_then(|c| c.last()).cloned(), None),
    }
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

fn counter_candidate(c: &CounterFit, n: usize, chosen: bool) -> Candidate {
    Candidate {
        role: Role::Seq,
        ty: c.ty,
        offset: c.offset,
        len: c.ty.size(),
        unit: None,
        share: share(c.consistent, n),
        chosen,
        evidence: Evidence::Counter {
            step: c.step,
            exact: c.exact,
            skips: c.skips,
            reordered: c.reordered,
            wraps: c.wraps,
        },
    }
}

fn clock_candidate(c: &ClockFit, n: usize, chosen: bool) -> Candidate {
    Candidate {
        role: Role::Send,
        ty: c.ty,
        offset: c.offset,
        len: c.ty.size(),
        unit: Some(c.unit),
        share: share(c.consistent, n),
        chosen,
        evidence: Evidence::Clock {
            rate: c.rate,
            residual_p50: Nanos::from_secs_f64(c.p50),
            residual_p95: Nanos::from_secs_f64(c.p95),
            from_counter: c.from_counter,
        },
    }
}

/// Runs of constant bytes and enumerated bytes in the first 64, outside `taken`.
fn type_candidates(cols: &[ByteColumn], n: usize, taken: &[Range<usize>]) -> Vec<Candidate> {
    let free = |o: &usize| !taken.iter().any(|t| t.contains(o));
    let mut out: Vec<Candidate> = Vec::new();
    let u8_type = FieldType::uint(1, false);
    for o in (0..MAX_OFFSET.min(cols.len())).filter(free) {
        let c = &cols[o];
        if let Some(v) = c.constant(n) {
            let top = share(c.top().1, n);
            match out.last_mut() {
                Some(Candidate {
                    offset,
                    len,
                    share,
                    evidence: Evidence::Constant { bytes },
                    ..
                }) if *offset + *len == o => {
                    bytes.push(v);
                    *len += 1;
                    *share = share.min(top);
                }
                _ => out.push(Candidate {
                    role: Role::Type,
                    ty: u8_type,
                    offset: o,
                    len: 1,
                    unit: None,
                    share: top,
                    chosen: false,
                    evidence: Evidence::Constant { bytes: vec![v] },
                }),
            }
            continue;
        }
        let values = c.values(0.01);
        let covered: usize = values.iter().map(|v| v.1).sum();
        if (2..=16).contains(&values.len()) && covered * 100 >= c.present * 99 {
            out.push(Candidate {
                role: Role::Type,
                ty: u8_type,
                offset: o,
                len: 1,
                unit: None,
                share: share(covered, n),
                chosen: false,
                evidence: Evidence::Values {
                    values,
                    changes: c.changes,
                },
            });
        }
    }
    out
}

#[cfg(test)]
mod tests;
