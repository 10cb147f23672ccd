//! Seeded synthetic traces with ground truth: probe packets with a known motion sent through a
//! [`netmodel::Model`](crate::netmodel::Model), as if captured by `jitterlab capture`.
//!
//! Every trace carries the sender's full stream as ground truth (`Sent` records, including the
//! packets the network lost) next to what was received. The same configuration and seed always
//! give the same bytes: the random generator is [`rng::Rng`](crate::rng::Rng) (xoshiro256**, written
//! out so no dependency upgrade can change it), and the header's creation time is fixed.
//!
//! Generation streams: records leave a small heap in time order as soon as no later packet can
//! precede them, so memory does not grow with the trace's length.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

use crate::Error;
use crate::decode::Lifecycle;
use crate::decode::probe::Probe;
use crate::netmodel::{Model, ModelSpec};
use crate::time::Nanos;
use crate::trace::{Clock, Header, Record, Source, Writer};

/// The random generator synthetic traces use.
///
/// It moved to [`crate::rng::Rng`]; this name stays so that existing callers keep compiling.
/// Use `jitterlab_capture::rng::Rng` in new code.
pub use crate::rng::Rng;

/// A known motion for the sender's values. Every motion fills the same seven channels:
/// position `x,y,z` (m) and rotation quaternion `qx,qy,qz,qw` (facing the direction of travel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Motion {
    /// A circle of 5 m radius, one turn per 4 s; the state cycles every 5 s.
    Circle,
    /// A random walk at 1.5 m/s whose turn rate changes every second.
    Walk,
    /// 2 s moving along x at 4 m/s, 1 s standing; the state says which (1 moving, 0 standing).
    StopGo,
    /// The circle, teleported 20 m along x every 5 s (a teleport lifecycle event).
    Teleport,
}

/// The value channel names every motion fills.
pub const CHANNELS: &str = "x,y,z,qx,qy,qz,qw";

impl Motion {
    /// Parses `circle`, `walk`, `stop-go` or `teleport`.
    ///
    /// # Errors
    /// Another name.
    pub fn parse(name: &str) -> Result<Self, Error> {
        match name {
            "circle" => Ok(Self::Circle),
            "walk" => Ok(Self::Walk),
            "stop-go" => Ok(Self::StopGo),
            "teleport" => Ok(Self::Teleport),
            other => Err(Error::Unknown {
                what: "motion",
                name: other.to_owned(),
                known: "circle, walk, stop-go, teleport".to_owned(),
            }),
        }
    }

    /// The motion's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Circle => "circle",
            Self::Walk => "walk",
            Self::StopGo => "stop-go",
            Self::Teleport => "teleport",
        }
    }
}

/// The sender's state as it evolves tick by tick.
#[derive(Clone, Debug)]
pub struct Mover {
    motion: Motion,
    rng: Rng,
    pos: [f64; 3],
    heading: f64,
    turn_rate: f64,
    last_t: f64,
    jumps: u64,
}

impl Mover {
    /// A mover for `motion`; `seed` drives the random walk.
    pub fn new(motion: Motion, seed: u64) -> Self {
        Self {
            motion,
            rng: Rng::new(seed ^ 0xbb67_ae85_84ca_a73b),
            pos: [0.0; 3],
            heading: 0.0,
            turn_rate: 0.0,
            last_t: 0.0,
            jumps: 0,
        }
    }

    /// Values, state and event at sender time `t` seconds (called with increasing `t`).
    pub fn at(&mut self, t: f64) -> ([f64; 7], u32, Option<Lifecycle>) {
        let circle = |t: f64| {
            let phase = std::f64::consts::TAU * t / 4.0;
            (
                [5.0 * phase.cos(), 5.0 * phase.sin(), 0.0],
                phase + std::f64::consts::FRAC_PI_2,
            )
        };
        let first = t == 0.0;
        let mut event = first.then_some(Lifecycle::Spawn);
        let (pos, yaw, state) = match self.motion {
            Motion::Circle => {
                let (p, yaw) = circle(t);
                (p, yaw, ((t / 5.0) as u32) % 4)
            }
            Motion::Teleport => {
                let (mut p, yaw) = circle(t);
                let jumps = (t / 5.0) as u64;
                if jumps > self.jumps && !first {
                    event = Some(Lifecycle::Teleport);
                }
                self.jumps = jumps;
                p[0] += 20.0 * jumps as f64;
                (p, yaw, (jumps % 4) as u32)
            }
            Motion::Walk => {
                let dt = t - self.last_t;
                // A new turn rate each whole second, drawn when the second starts.
                if first || t.floor() > self.last_t.floor() {
                    self.turn_rate = (self.rng.uniform() - 0.5) * std::f64::consts::PI;
                }
                self.heading += self.turn_rate * dt;
                self.pos[0] += 1.5 * dt * self.heading.cos();
                self.pos[1] += 1.5 * dt * self.heading.sin();
                (self.pos, self.heading, 1)
            }
            Motion::StopGo => {
                let cycles = (t / 3.0).floor();
                let into = t - 3.0 * cycles;
                let moving = into < 2.0;
                let x = 4.0 * (2.0 * cycles + into.min(2.0));
                ([x, 0.0, 0.0], 0.0, u32::from(moving))
            }
        };
        self.last_t = t;
        let (s, c) = (yaw / 2.0).sin_cos();
        ([pos[0], pos[1], pos[2], 0.0, 0.0, s, c], state, event)
    }
}

/// Parameters of a synthetic trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Snapshots per second.
    pub rate_hz: f64,
    /// How long the sender sends.
    pub duration: Nanos,
    /// Random seed (the model's own `seed` key wins when present).
    pub seed: u64,
    /// The sender's values.
    pub motion: Motion,
    /// The network and receiver.
    pub model: ModelSpec,
    /// A profile name, recorded in the header when the model came from one.
    pub profile: Option<String>,
}

/// Documented parameter sets for common links; see `docs/network-models.md` for where the
/// numbers come from.
pub const PROFILES: &[(&str, &str, &str)] = &[
    (
        "lan",
        "wired LAN: sub-millisecond, no loss",
        "delay=0.3ms,jitter=0.1ms",
    ),
    (
        "wifi",
        "home Wi-Fi: small exponential queueing, background scans as 150 ms spikes every ~20 s, rare short loss bursts, 802.11 retransmission duplicates",
        "delay=3ms,jitter=4ms,spike_rate=0.05,spike_delay=150ms,spike_len=300ms,loss=0.5%,burst=2,duplicate=0.1%",
    ),
    (
        "lte",
        "stationary LTE: 35 ms base, scheduler jitter, a 1 % Pareto tail",
        "delay=35ms,jitter=8ms,dist=normal,tail=1%,tail_delay=80ms,loss=0.5%,burst=3",
    ),
    (
        "lte-driving",
        "LTE while driving: heavier tail, handover outages (~400 ms every 20 s), bursty loss",
        "delay=45ms,jitter=15ms,tail=3%,tail_delay=200ms,spike_rate=0.05,spike_delay=400ms,spike_len=800ms,loss=2%,burst=6,reorder=0.2%",
    ),
    (
        "congested",
        "a congested bottleneck (bufferbloat): long-tailed queueing delay, loss in short bursts, some reordering",
        "delay=60ms,jitter=30ms,dist=pareto,alpha=2.2,loss=3%,burst=2,reorder=0.5%",
    ),
    (
        "satellite",
        "geostationary satellite: ~280 ms one way, little jitter, rare loss",
        "delay=280ms,jitter=5ms,dist=normal,loss=0.5%,burst=2",
    ),
    (
        "mobile-handover",
        "a phone moving between cells: a 25 ms route change at 30 s, frequent handover spikes, loss bursts",
        "delay=40ms,jitter=10ms,route=+25ms@30s,spike_rate=0.1,spike_delay=600ms,spike_len=700ms,loss=1%,burst=5",
    ),
];

/// The model string of a named profile.
///
/// # Errors
/// An unknown profile, listing the known ones.
pub fn profile(name: &str) -> Result<ModelSpec, Error> {
    let (_, _, spec) = PROFILES.iter().find(|(n, ..)| *n == name).ok_or_else(|| {
        let names: Vec<&str> = PROFILES.iter().map(|(n, ..)| *n).collect();
        Error::Unknown {
            what: "profile",
            name: name.to_owned(),
            known: names.join(", "),
        }
    })?;
    spec.parse()
}

impl Default for Config {
    /// 20 Hz circling snapshots for 60 s over the `wifi` profile.
    fn default() -> Self {
        Self {
            rate_hz: 20.0,
            duration: Nanos::from_secs(60),
            seed: 1,
            motion: Motion::Circle,
            model: profile("wifi").expect("built-in profile parses"),
            profile: Some("wifi".into()),
        }
    }
}

impl Config {
    /// The trace embedded in `jitterlab demo` (`fixtures/traces/demo-wifi-20hz.jtr`): 24 s of
    /// 20 Hz snapshots of a circling entity over a Wi-Fi-like link with delay spikes, 2 % burst
    /// loss and a few duplicates.
    pub fn demo() -> Self {
        Self {
            rate_hz: 20.0,
            duration: Nanos::from_secs(24),
            seed: 7,
            motion: Motion::Circle,
            model: "delay=30ms,jitter=10ms,spike_rate=0.1,spike_delay=180ms,spike_len=600ms,\
                    loss=2%,burst=2,duplicate=0.5%,offset=1234567ms"
                .parse()
                .expect("demo model parses"),
            profile: None,
        }
    }

    /// Checks the rate and duration.
    ///
    /// # Errors
    /// A rate that is not in (0, 100 000] Hz, or a negative duration.
    pub fn validate(&self) -> Result<(), Error> {
        if !(self.rate_hz.is_finite() && self.rate_hz > 0.0 && self.rate_hz <= 100_000.0) {
            return Err(Error::Setting {
                setting: "rate",
                value: self.rate_hz.to_string(),
                reason: "out of range (allowed: >0 to 100000 Hz)".into(),
            });
        }
        if self.duration < Nanos::ZERO {
            return Err(Error::Setting {
                setting: "duration",
                value: crate::spec::format_duration(self.duration),
                reason: "must not be negative".into(),
            });
        }
        Ok(())
    }

    /// The header of the trace this configuration generates.
    pub fn header(&self) -> Header {
        let mut header = Header::at(
            Clock {
                name: "synthetic".into(),
                realtime_offset_ns: None,
            },
            Source {
                kind: "synthetic".into(),
                detail: format!(
                    "rate={}Hz duration={}s motion={} seed={}{} model={}",
                    self.rate_hz,
                    self.duration.as_secs_f64(),
                    self.motion.name(),
                    self.effective_seed(),
                    self.profile
                        .as_ref()
                        .map_or_else(String::new, |p| format!(" profile={p}")),
                    self.model
                ),
            },
            0,
        );
        header.decoder = Some("probe".into());
        header.hints.insert("channels".into(), CHANNELS.into());
        header.notes.push(
            "synthetic trace: Sent records are the sender's ground truth; creation time fixed at \
             the epoch so equal seeds give equal bytes"
                .into(),
        );
        header
    }

    fn effective_seed(&self) -> u64 {
        self.model.seed.unwrap_or(self.seed)
    }
}

/// What a generation run produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Packets the sender sent.
    pub sent: u64,
    /// Copies received (duplicates included).
    pub received: u64,
    /// Packets lost to the loss model.
    pub lost: u64,
    /// Packets dropped by a full bottleneck queue.
    pub queue_drops: u64,
    /// Extra copies delivered.
    pub duplicates: u64,
}

/// A received copy waiting for its turn in file order.
#[derive(Debug)]
struct Queued {
    time: Nanos,
    tick: u64,
    copy: u8,
    record: Record,
}

impl Queued {
    fn key(&self) -> (Nanos, u64, u8) {
        (self.time, self.tick, self.copy)
    }
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Queued {}

impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// Generates the trace, handing records to `sink` in file order: ground truth (`Sent`) at the
/// local send time and received copies at their arrival, interleaved by time.
///
/// # Errors
/// An invalid configuration, unreadable model files, or an error from `sink`.
pub fn generate_into(
    config: &Config,
    mut sink: impl FnMut(&Record) -> Result<(), Error>,
) -> Result<Summary, Error> {
    config.validate()?;
    let seed = config.effective_seed();
    let mut model = Model::new(config.model.clone(), seed)?;
    let mut mover = Mover::new(config.motion, seed);
    let spec = &config.model;
    let interval = 1.0 / config.rate_hz;
    let count = (config.duration.as_secs_f64() * config.rate_hz).round() as u64;
    // Receiver time τ for sender time t: t = τ·(1 + drift) + offset.
    let rate = 1.0 + spec.drift_ppm * 1e-6;
    let pause = spec.pause.map(|(len, at)| (at, at + len));
    // Received copies wait here until no later packet can precede them; records ride in the
    // heap entries, ordered by (time, tick, copy).
    let mut heap: BinaryHeap<Reverse<Queued>> = BinaryHeap::new();
    let mut summary = Summary::default();
    for tick in 0..count {
        let t_sender = tick as f64 * interval;
        let send_sender = Nanos::from_secs_f64(t_sender);
        let send_local = Nanos::from_secs_f64((send_sender - spec.offset).as_secs_f64() / rate);
        let (values, state, event) = mover.at(t_sender);
        let payload = Probe {
            stream: 0,
            tick,
            send: send_sender,
            state,
            event,
            values: crate::decode::Values::from_slice(&values[..]),
        }
        .emit();
        let bytes = 28 + payload.len() as u32; // IPv4 + UDP headers on the bottleneck
        let outcome = model.transmit(send_local, bytes);
        summary.sent += 1;
        summary.lost += u64::from(outcome.lost);
        summary.queue_drops += u64::from(outcome.queue_drop);
        // Nothing sent from now on can arrive before `send_local`: everything earlier is final.
        // Ground truth goes before receptions at the same instant.
        while heap.peek().is_some_and(|Reverse(q)| q.time < send_local) {
            let Some(Reverse(q)) = heap.pop() else { break };
            sink(&q.record)?;
        }
        let sent = Record::sent(send_local, payload);
        sink(&sent)?;
        let mut payload = Some(sent.payload);
        for (copy, arrival) in outcome.arrivals.iter().enumerate() {
            let Some(mut arrival) = *arrival else {
                continue;
            };
            if let Some((from, to)) = pause
                && arrival >= from
                && arrival < to
            {
                // The receiver was suspended: it reads the socket at the end of the pause, in
                // arrival order (the pause's span compressed 1000×: a 3 s pause, a 3 ms burst).
                arrival = to + Nanos((arrival - from).as_nanos() / 1000);
            }
            summary.received += 1;
            summary.duplicates += u64::from(copy > 0);
            let bytes = if outcome.arrivals[copy + 1..].iter().any(Option::is_some) {
                payload.clone().unwrap_or_default()
            } else {
                payload.take().unwrap_or_default()
            };
            heap.push(Reverse(Queued {
                time: arrival,
                tick,
                copy: copy as u8,
                record: Record::received(arrival, bytes),
            }));
        }
    }
    while let Some(Reverse(q)) = heap.pop() {
        sink(&q.record)?;
    }
    Ok(summary)
}

/// Generates the whole trace in memory: the header and the records in file order.
///
/// # Errors
/// As [`generate_into`].
pub fn generate(config: &Config) -> Result<(Header, Vec<Record>), Error> {
    let mut records = Vec::new();
    generate_into(config, |r| {
        records.push(r.clone());
        Ok(())
    })?;
    Ok((config.header(), records))
}

/// Generates the trace straight into a writer.
///
/// # Errors
/// As [`generate_into`], plus write errors.
pub fn write<W: Write>(config: &Config, out: W) -> Result<(Summary, W), Error> {
    let mut writer = Writer::new(out, &config.header())?;
    let summary = generate_into(config, |r| writer.write(r))?;
    Ok((summary, writer.into_inner()))
}

/// Encodes a generated trace as the bytes of a trace file.
pub fn to_bytes(header: &Header, records: &[Record]) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), header).expect("writing to memory cannot fail");
    for r in records {
        w.write(r).expect("writing to memory cannot fail");
    }
    w.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(seed: u64) -> Config {
        Config {
            duration: Nanos::from_secs(5),
            seed,
            ..Config::demo()
        }
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let bytes = |c: &Config| write(c, Vec::new()).unwrap().1;
        assert_eq!(bytes(&short(7)), bytes(&short(7)));
        assert_ne!(bytes(&short(7)), bytes(&short(8)));
    }

    #[test]
    fn streaming_and_in_memory_generation_agree_and_are_time_ordered() {
        let (header, records) = generate(&short(3)).unwrap();
        assert_eq!(
            to_bytes(&header, &records),
            write(&short(3), Vec::new()).unwrap().1
        );
        assert!(records.windows(2).all(|w| w[0].time <= w[1].time));
    }

    #[test]
    fn every_motion_fills_seven_finite_channels() {
        for motion in [
            Motion::Circle,
            Motion::Walk,
            Motion::StopGo,
            Motion::Teleport,
        ] {
            let mut m = Mover::new(motion, 1);
            let mut teleports = 0;
            for i in 0..400 {
                let (v, _, e) = m.at(f64::from(i) * 0.05);
                assert!(v.iter().all(|x| x.is_finite()), "{motion:?}");
                let norm: f64 = v[3..].iter().map(|q| q * q).sum();
                assert!((norm - 1.0).abs() < 1e-9, "{motion:?} quaternion not unit");
                teleports += usize::from(e == Some(Lifecycle::Teleport));
            }
            assert_eq!(teleports > 0, motion == Motion::Teleport, "{motion:?}");
        }
    }

    #[test]
    fn profiles_parse() {
        for (name, ..) in PROFILES {
            profile(name).unwrap();
        }
        assert!(
            profile("moon")
                .unwrap_err()
                .to_string()
                .contains("known: lan")
        );
    }
}
