//! Seeded synthetic traces with ground truth: probe packets with known motion sent through a
//! simple network model (delay + jitter + spikes, Gilbert–Elliott burst loss, duplicates).
//!
//! The same configuration and seed always give the same bytes: the random generator is
//! xoshiro256** seeded by SplitMix64, written out here so no dependency upgrade can change it.
//! The full network-model command (`jitterlab synth`, profiles, recorded links) builds on this.

use crate::decode::probe::Probe;
use crate::time::Nanos;
use crate::trace::{Clock, Header, Record, Source};

/// A small, fast, reproducible random generator (xoshiro256**, Blackman & Vigna 2018).
#[derive(Clone, Debug)]
pub struct Rng([u64; 4]);

impl Rng {
    /// Seeds the state with SplitMix64, as the xoshiro authors recommend.
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Self([next(), next(), next(), next()])
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// Exponential with the given mean (inverse CDF).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// A known motion for the sender's values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Motion {
    /// `x, y` on a circle of `radius` metres, one turn per `period`.
    Circle {
        /// Radius in metres.
        radius: f64,
        /// Time for one turn.
        period: Nanos,
    },
}

impl Motion {
    /// The value channel names.
    pub fn channels(&self) -> &'static str {
        match self {
            Self::Circle { .. } => "x,y",
        }
    }

    /// The true values at sender time `t`.
    pub fn at(&self, t: Nanos) -> Vec<f64> {
        match *self {
            Self::Circle { radius, period } => {
                let phase = std::f64::consts::TAU * t.as_secs_f64() / period.as_secs_f64();
                vec![radius * phase.cos(), radius * phase.sin()]
            }
        }
    }
}

/// Parameters of a synthetic trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Snapshots per second.
    pub rate_hz: f64,
    /// How long the sender sends.
    pub duration: Nanos,
    /// Random seed.
    pub seed: u64,
    /// The sender's values.
    pub motion: Motion,
    /// Constant one-way delay.
    pub base_delay: Nanos,
    /// Mean of the exponential per-packet delay added to the base.
    pub jitter_mean: Nanos,
    /// Probability per packet that a delay spike starts.
    pub spike_chance: f64,
    /// Extra delay at the start of a spike; it decays linearly over `spike_len` packets.
    pub spike_delay: Nanos,
    /// Packets a spike lasts.
    pub spike_len: u32,
    /// Long-run loss rate (Gilbert–Elliott), in [0, 1).
    pub loss: f64,
    /// Mean loss-burst length in packets (≥ 1).
    pub burst: f64,
    /// Probability that a delivered packet is delivered twice.
    pub duplicate: f64,
    /// Sender clock minus receiver clock.
    pub clock_offset: Nanos,
}

impl Default for Config {
    /// The embedded demo's conditions: 20 Hz snapshots over a Wi-Fi-like link.
    fn default() -> Self {
        Self {
            rate_hz: 20.0,
            duration: Nanos::from_secs(60),
            seed: 7,
            motion: Motion::Circle {
                radius: 5.0,
                period: Nanos::from_secs(4),
            },
            base_delay: Nanos::from_millis(30),
            jitter_mean: Nanos::from_millis(10),
            spike_chance: 0.004,
            spike_delay: Nanos::from_millis(180),
            spike_len: 12,
            loss: 0.02,
            burst: 2.0,
            duplicate: 0.005,
            clock_offset: Nanos::from_millis(1_234_567),
        }
    }
}

impl Config {
    /// The trace embedded in `jitterlab demo` (`fixtures/traces/demo-wifi-20hz.jtr`): 30 s of
    /// 20 Hz snapshots over a Wi-Fi-like link with delay spikes, 2 % burst loss and a few
    /// duplicates.
    pub fn demo() -> Self {
        Self {
            duration: Nanos::from_secs(30),
            ..Self::default()
        }
    }
}

/// Generates the trace: a header and records in file order (ground truth `Sent` records at the
/// local send time, `Received` records at arrival, interleaved by time).
pub fn generate(config: &Config) -> (Header, Vec<Record>) {
    let mut rng = Rng::new(config.seed);
    let interval = Nanos::from_secs_f64(1.0 / config.rate_hz);
    let count = (config.duration.as_secs_f64() * config.rate_hz).round() as u64;
    // Gilbert–Elliott: bad state loses everything; P(bad→good) = 1/burst, and P(good→bad) is
    // chosen so the stationary share of bad equals the loss rate.
    let to_good = 1.0 / config.burst.max(1.0);
    let to_bad = if config.loss > 0.0 {
        config.loss * to_good / (1.0 - config.loss)
    } else {
        0.0
    };
    let mut bad = false;
    let mut spike_left = 0u32;
    let mut timed: Vec<(Nanos, u8, u64, Record)> = Vec::with_capacity(2 * count as usize);
    for tick in 0..count {
        let send_sender = Nanos(tick as i64 * interval.0);
        let send_local = send_sender - config.clock_offset;
        let probe = Probe {
            stream: 0,
            tick,
            send: send_sender,
            state: (tick / (config.rate_hz as u64 * 5).max(1)) as u32 % 4,
            event: (tick == 0).then_some(crate::decode::Lifecycle::Spawn),
            values: config.motion.at(send_sender),
        };
        let payload = probe.emit();
        timed.push((
            send_local,
            0,
            tick,
            Record::sent(send_local, payload.clone()),
        ));

        bad = if bad {
            !rng.chance(to_good)
        } else {
            rng.chance(to_bad)
        };
        if spike_left == 0 && rng.chance(config.spike_chance) {
            spike_left = config.spike_len;
        }
        let spike = if spike_left > 0 {
            let share = f64::from(spike_left) / f64::from(config.spike_len.max(1));
            spike_left -= 1;
            Nanos::from_secs_f64(config.spike_delay.as_secs_f64() * share)
        } else {
            Nanos::ZERO
        };
        let jitter = Nanos::from_secs_f64(rng.exponential(config.jitter_mean.as_secs_f64()));
        let dup = rng.chance(config.duplicate);
        let dup_extra = Nanos::from_secs_f64(rng.exponential(0.005));
        if bad {
            continue;
        }
        let arrival = send_local + config.base_delay + jitter + spike;
        let mut rec = Record::received(arrival, payload);
        timed.push((arrival, 1, tick, rec.clone()));
        if dup {
            rec.time = arrival + dup_extra;
            timed.push((rec.time, 1, tick, rec));
        }
    }
    timed.sort_by_key(|(time, class, tick, _)| (*time, *class, *tick));
    let mut header = Header::at(
        Clock {
            name: "synthetic".into(),
            realtime_offset_ns: None,
        },
        Source {
            kind: "synthetic".into(),
            detail: format!("{config:?}"),
        },
        0,
    );
    header.decoder = Some("probe".into());
    header
        .hints
        .insert("channels".into(), config.motion.channels().into());
    header.notes.push(
        "synthetic trace: creation time fixed at the epoch so equal seeds give equal bytes".into(),
    );
    (header, timed.into_iter().map(|(.., r)| r).collect())
}

/// Encodes a generated trace as the bytes of a trace file.
pub fn to_bytes(header: &Header, records: &[Record]) -> Vec<u8> {
    let mut w = crate::Writer::new(Vec::new(), header).expect("writing to memory cannot fail");
    for r in records {
        w.write(r).expect("writing to memory cannot fail");
    }
    w.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let cfg = Config {
            duration: Nanos::from_secs(5),
            ..Config::default()
        };
        let (h, r) = generate(&cfg);
        let (h2, r2) = generate(&cfg);
        assert_eq!(to_bytes(&h, &r), to_bytes(&h2, &r2));
        let (h3, r3) = generate(&Config { seed: 8, ..cfg });
        assert_ne!(to_bytes(&h, &r), to_bytes(&h3, &r3));
    }

    #[test]
    fn loss_rate_is_near_the_parameter() {
        let cfg = Config {
            duration: Nanos::from_secs(2000),
            duplicate: 0.0,
            loss: 0.05,
            burst: 3.0,
            ..Config::default()
        };
        let (_, records) = generate(&cfg);
        let sent = records.iter().filter(|r| r.kind == 1).count() as f64;
        let received = records.iter().filter(|r| r.kind == 0).count() as f64;
        let loss = 1.0 - received / sent;
        assert!((loss - 0.05).abs() < 0.05 * 0.1, "loss {loss}");
    }
}
