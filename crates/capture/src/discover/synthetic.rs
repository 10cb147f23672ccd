//! Seeded synthetic game protocols with a known layout, to test and measure
//! [`discover`](super::discover).
//!
//! [`Protocol::new`] draws a protocol from a seed: a counter (any width and byte order, at any
//! offset in the first 64 bytes, step 1 or 2, starting near zero or near its wrap), a send time
//! (integer ms/µs/ns or float s/ms, either order, with clock drift), filler bytes (random,
//! constant or zero), and a network (delay, jitter, spikes, loss, reordering). Seeds cycle
//! through families so that any 50 consecutive seeds cover them all: `seed % 10` of 0–5 and 8
//! is one message kind (8 with heavy loss and reordering), 6 and 7 mix two or three kinds each
//! with its own layout behind a type byte (7 adds a kind with no fields, like an ACK), 9 has a
//! tick counter and no send time. [`Protocol::truth`] gives the specs a perfect discovery
//! would propose.

use super::clock::Unit;
use super::field::FieldType;
use crate::rng::Rng;
use crate::time::Nanos;

/// The counter types, cycled through by seed.
const COUNTERS: [FieldType; 7] = super::field::COUNTERS;

/// A counter field.
#[derive(Clone, Debug, PartialEq)]
pub struct Counter {
    /// Its type.
    pub ty: FieldType,
    /// Its first byte.
    pub offset: usize,
    /// The first value.
    pub start: u64,
    /// The step per packet sent.
    pub step: u64,
}

/// A send-time field.
#[derive(Clone, Debug, PartialEq)]
pub struct SendField {
    /// Its type.
    pub ty: FieldType,
    /// Its first byte.
    pub offset: usize,
    /// Its unit.
    pub unit: Unit,
    /// The field's value (in its unit) at the first packet.
    pub start: f64,
}

/// One message kind.
#[derive(Clone, Debug, PartialEq)]
pub struct KindSpec {
    /// The type byte's value (mixed protocols).
    pub value: Option<u8>,
    /// Relative frequency.
    pub weight: f64,
    /// The counter, if the kind has one.
    pub seq: Option<Counter>,
    /// The send time, if the kind has one.
    pub send: Option<SendField>,
    /// Payload length before the random tail.
    pub len: usize,
}

/// What a byte outside the fields holds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Filler {
    Random,
    Constant(u8),
}

/// One generated packet and what it truly is.
#[derive(Clone, Debug, PartialEq)]
pub struct Generated {
    /// Arrival time.
    pub arrival: Nanos,
    /// The payload.
    pub payload: Vec<u8>,
    /// Its message kind (an index into [`Protocol::kinds`]).
    pub kind: usize,
    /// Its number among the packets of its kind sent (lost ones included).
    pub index: u64,
}

/// A protocol drawn from a seed, and the network its packets cross.
#[derive(Clone, Debug, PartialEq)]
pub struct Protocol {
    /// The seed it was drawn from.
    pub seed: u64,
    /// Packets per second.
    pub rate_hz: f64,
    /// The sender clock's drift against the receiver's (0.0001 = 100 ppm fast).
    pub drift: f64,
    /// Where the type byte is (mixed protocols).
    pub type_offset: Option<usize>,
    /// The message kinds.
    pub kinds: Vec<KindSpec>,
    /// Share of packets lost.
    pub loss: f64,
    /// Share of packets swapped with the next one on arrival.
    pub reorder: f64,
    /// Mean of the exponential jitter, ms.
    pub jitter_ms: f64,
    /// Up to this many random bytes appended to each packet.
    pub tail: usize,
    filler: Vec<Filler>,
}

fn pick<T: Copy>(rng: &mut Rng, items: &[T]) -> T {
    items[(rng.next_u64() % items.len() as u64) as usize]
}

fn below(rng: &mut Rng, n: u64) -> u64 {
    rng.next_u64() % n.max(1)
}

/// The send-time types and units: every integer type in ms, µs and ns, every float in s, ms.
fn send_kinds() -> Vec<(FieldType, Unit)> {
    let mut out = Vec::new();
    for ty in [
        FieldType::uint(4, false),
        FieldType::uint(4, true),
        FieldType::uint(8, false),
        FieldType::uint(8, true),
    ] {
        for unit in [Unit::Ms, Unit::Us, Unit::Ns] {
            out.push((ty, unit));
        }
    }
    for ty in [
        FieldType::float(4, false),
        FieldType::float(4, true),
        FieldType::float(8, false),
        FieldType::float(8, true),
    ] {
        for unit in [Unit::S, Unit::Ms] {
            out.push((ty, unit));
        }
    }
    out
}

/// A free offset for a field of `width` bytes in the first 64, away from `used`.
fn place(rng: &mut Rng, width: usize, used: &mut Vec<(usize, usize)>) -> usize {
    loop {
        let at = below(rng, (64 - width) as u64 + 1) as usize;
        if used.iter().all(|&(a, b)| at + width <= a || b <= at) {
            used.push((at, at + width));
            return at;
        }
    }
}

impl Protocol {
    /// Draws the protocol of `seed`.
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x6469_7363_6f76_6572);
        let family = seed % 10;
        let sends = send_kinds();
        let rate_hz = pick(&mut rng, &[10.0, 20.0, 30.0, 60.0, 64.0, 100.0, 128.0]);
        let kinds_n = match family {
            6 => 2,
            7 => 2 + below(&mut rng, 2) as usize,
            _ => 1,
        };
        let type_offset = (kinds_n > 1).then(|| below(&mut rng, 4) as usize);
        let mut values: Vec<u8> = Vec::new();
        let mut kinds = Vec::new();
        for k in 0..kinds_n {
            let mut used: Vec<(usize, usize)> = type_offset.iter().map(|&t| (t, t + 1)).collect();
            let ty = if k == 0 {
                COUNTERS[(seed % 7) as usize]
            } else {
                pick(&mut rng, &COUNTERS)
            };
            let bits = ty.bits();
            let start = match below(&mut rng, 10) {
                _ if bits == 8 => below(&mut rng, 256),
                // Near the wrap, so that it wraps within the flow (within the first 60 of its
                // packets, since a kind may have few).
                0..=2 if bits <= 32 => (1u64 << bits) - 1 - below(&mut rng, 60),
                0..=4 => 0,
                _ => below(&mut rng, 1000),
            };
            let step = if rng.chance(0.2) { 2 } else { 1 };
            let seq = Counter {
                ty,
                offset: place(&mut rng, ty.size(), &mut used),
                start,
                step,
            };
            let send = (family != 9).then(|| {
                let (ty, unit) = if k == 0 {
                    sends[((seed * 3 + 1) % sends.len() as u64) as usize]
                } else {
                    pick(&mut rng, &sends)
                };
                let start = if ty.float {
                    rng.uniform() * 1000.0
                } else {
                    // Some epoch: 2023–2025 in the field's unit, wrapped by narrow fields.
                    (1.7e9 + rng.uniform() * 6e7) * unit.per_second()
                };
                SendField {
                    ty,
                    offset: place(&mut rng, ty.size(), &mut used),
                    unit,
                    start,
                }
            });
            let end = used.iter().map(|u| u.1).max().unwrap_or(0);
            let value = loop {
                let v = rng.next_u64() as u8;
                if !values.contains(&v) {
                    values.push(v);
                    break v;
                }
            };
            kinds.push(KindSpec {
                value: type_offset.map(|_| value),
                weight: 1.0 + rng.uniform() * 2.0,
                seq: Some(seq),
                send,
                len: end + below(&mut rng, 17) as usize,
            });
        }
        if family == 7 {
            let v = loop {
                let v = rng.next_u64() as u8;
                if !values.contains(&v) {
                    break v;
                }
            };
            kinds.push(KindSpec {
                value: Some(v),
                weight: 0.6,
                seq: None,
                send: None,
                len: 5 + below(&mut rng, 8) as usize,
            });
        }
        let filler = (0..96)
            .map(|_| match below(&mut rng, 4) {
                0 | 1 => Filler::Random,
                2 => Filler::Constant(rng.next_u64() as u8),
                _ => Filler::Constant(0),
            })
            .collect();
        let heavy = family == 8;
        Self {
            seed,
            rate_hz,
            drift: (rng.uniform() - 0.5) * 4e-4,
            type_offset,
            kinds,
            loss: if heavy { 0.1 } else { rng.uniform() * 0.05 },
            reorder: if heavy { 0.05 } else { rng.uniform() * 0.02 },
            jitter_ms: 1.0 + rng.uniform() * 14.0,
            tail: if rng.chance(0.3) {
                below(&mut rng, 9) as usize
            } else {
                0
            },
            filler,
        }
    }

    /// The specs a perfect discovery proposes: one per kind with fields, conditioned on the
    /// type byte when kinds are mixed; a kind without a send time reads its counter as ticks.
    pub fn truth(&self) -> Vec<String> {
        self.kinds
            .iter()
            .filter_map(|k| {
                let seq = k.seq.as_ref()?;
                let when = match (self.type_offset, k.value) {
                    (Some(t), Some(v)) => format!("when=u8@{t}={v},"),
                    _ => String::new(),
                };
                let send = match &k.send {
                    Some(s) => format!("{}@{}{}", s.ty, s.offset, s.unit.spec()),
                    None => format!(
                        "{}@{}{}",
                        seq.ty,
                        seq.offset,
                        Unit::Hz(self.rate_hz * seq.step as f64).spec()
                    ),
                };
                Some(format!("{when}seq={}@{},send={send}", seq.ty, seq.offset))
            })
            .collect()
    }

    /// A one-line description, for test failures.
    pub fn describe(&self) -> String {
        format!(
            "seed {} ({} Hz, loss {:.1} %, reorder {:.1} %, jitter {:.1} ms, tail {}): {}",
            self.seed,
            self.rate_hz,
            self.loss * 100.0,
            self.reorder * 100.0,
            self.jitter_ms,
            self.tail,
            self.truth().join(" | ")
        )
    }

    /// The true sequence number of packet `index` of `kind` (its counter extended past its
    /// wrap), if the kind has a counter.
    pub fn seq(&self, kind: usize, index: u64) -> Option<i64> {
        let c = self.kinds.get(kind)?.seq.as_ref()?;
        i64::try_from(u128::from(c.start) + u128::from(index) * u128::from(c.step)).ok()
    }

    /// `n` packets sent (before loss), in arrival order.
    pub fn packets(&self, n: usize) -> Vec<Generated> {
        let mut rng = Rng::new(self.seed.wrapping_mul(0x9e37_79b9) ^ 0x7061_636b);
        let total: f64 = self.kinds.iter().map(|k| k.weight).sum();
        let mut sent = vec![0u64; self.kinds.len()];
        let mut out: Vec<Generated> = Vec::with_capacity(n);
        let base_delay = 5.0 + rng.uniform() * 45.0;
        for i in 0..n {
            let mut x = rng.uniform() * total;
            let k = self
                .kinds
                .iter()
                .position(|k| {
                    x -= k.weight;
                    x < 0.0
                })
                .unwrap_or(0);
            let kind = &self.kinds[k];
            let index = sent[k];
            sent[k] += 1;
            // The sender's clock: its own tick, drifting, with a little scheduling noise.
            let t_send = i as f64 / self.rate_hz + rng.uniform() * 5e-4;
            let mut p: Vec<u8> = (0..kind.len + below(&mut rng, self.tail as u64 + 1) as usize)
                .map(|b| match self.filler.get(b) {
                    Some(Filler::Constant(v)) => *v,
                    _ => rng.next_u64() as u8,
                })
                .collect();
            if let (Some(t), Some(v)) = (self.type_offset, kind.value) {
                p[t] = v;
            }
            if let Some(c) = &kind.seq {
                let v = c.start.wrapping_add(index.wrapping_mul(c.step));
                write_int(&mut p, c.ty, c.offset, v);
            }
            if let Some(s) = &kind.send {
                let elapsed = t_send * (1.0 + self.drift) * s.unit.per_second();
                if s.ty.float {
                    write_float(&mut p, s.ty, s.offset, s.start + elapsed);
                } else {
                    // Whole units counted from an epoch, exactly (an f64 near 1.7e18 ns would
                    // round the low byte away).
                    let v = (s.start as u64).wrapping_add(elapsed as u64);
                    let v = if s.ty.width == 4 { v & 0xffff_ffff } else { v };
                    write_int(&mut p, s.ty, s.offset, v);
                }
            }
            if rng.chance(self.loss) {
                continue;
            }
            let mut delay_ms = base_delay + rng.exponential(self.jitter_ms);
            if rng.chance(0.01) {
                delay_ms += 50.0 + rng.uniform() * 150.0;
            }
            out.push(Generated {
                arrival: Nanos::from_secs_f64(t_send + delay_ms / 1e3),
                payload: p,
                kind: k,
                index,
            });
        }
        out.sort_by_key(|p| p.arrival);
        for i in 1..out.len() {
            if rng.chance(self.reorder) {
                let (a, b) = (out[i - 1].arrival, out[i].arrival);
                out.swap(i - 1, i);
                (out[i - 1].arrival, out[i].arrival) = (a, b);
            }
        }
        out
    }
}

fn write_int(p: &mut [u8], ty: FieldType, offset: usize, v: u64) {
    let w = ty.size();
    let bytes = if ty.big_endian {
        v.to_be_bytes()[8 - w..].to_vec()
    } else {
        v.to_le_bytes()[..w].to_vec()
    };
    p[offset..offset + w].copy_from_slice(&bytes);
}

fn write_float(p: &mut [u8], ty: FieldType, offset: usize, v: f64) {
    let bytes = match (ty.width, ty.big_endian) {
        (4, false) => (v as f32).to_le_bytes().to_vec(),
        (4, true) => (v as f32).to_be_bytes().to_vec(),
        (_, false) => v.to_le_bytes().to_vec(),
        (_, true) => v.to_be_bytes().to_vec(),
    };
    p[offset..offset + bytes.len()].copy_from_slice(&bytes);
}

/// `n` packets of random bytes (8 to 72 long) at 50 Hz with jitter: nothing to find.
pub fn random_flow(seed: u64, n: usize) -> Vec<Generated> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<Generated> = (0..n)
        .map(|i| {
            let len = 8 + below(&mut rng, 65) as usize;
            let at = i as f64 * 0.02 + rng.exponential(0.003);
            Generated {
                arrival: Nanos::from_secs_f64(at),
                payload: (0..len).map(|_| rng.next_u64() as u8).collect(),
                kind: 0,
                index: i as u64,
            }
        })
        .collect();
    out.sort_by_key(|p| p.arrival);
    out
}

/// The packets as [`discover`](super::discover) takes them.
pub fn view(packets: &[Generated]) -> Vec<super::Packet<'_>> {
    packets
        .iter()
        .map(|p| (p.arrival, p.payload.as_slice()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_packets() {
        let a = Protocol::new(12);
        assert_eq!(a, Protocol::new(12));
        assert_eq!(a.packets(50), Protocol::new(12).packets(50));
        assert_ne!(a.packets(50), Protocol::new(13).packets(50));
    }

    #[test]
    fn truths_are_specs_the_layout_decoder_accepts() {
        for seed in 0..50 {
            for spec in Protocol::new(seed).truth() {
                crate::decode::DecoderConfig::parse(&format!("layout:{spec}"))
                    .unwrap_or_else(|e| panic!("seed {seed}: {spec}: {e}"));
            }
        }
    }
}
