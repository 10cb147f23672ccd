//! `n4e`: Unity Netcode for Entities 1.x, `NetworkTimeSystem`'s interpolation delay
//! (Unity Companion Licence; `Runtime/Connection/NetworkTimeSystem.cs` and
//! `ClientServerTickRate.cs` as summarised in the team's anchors, §2.1).
//!
//! How it works, in our words:
//! - Per snapshot: moving averages (weight 1/4) of the simulation ticks between snapshots,
//!   of their deviation from that average, and of the time between arrivals; an average
//!   (weight 1/8) of how far the client's estimate of the newest server tick is off.
//! - Per frame: the estimate of the newest tick advances by the frame's ticks (corrected by
//!   the whole ticks of that average). The wanted delay in ticks is the configured
//!   `InterpolationTimeNetTicks` (2) network ticks, or, if more, the jitter
//!   `avg + 1.25·dev` or the average arrival interval in ticks, whichever is larger, capped at
//!   six network ticks. The delay in force moves toward it by at most 10 % of the frame's
//!   ticks (it jumps when more than 10 ticks away).
//! - The interpolation tick then follows `estimate − delay` with a timescale
//!   `1 + 0.1·error` clamped to [0.85, 1.1], or jumps when 10 ticks or more behind.
//!
//! The constants are those of `DefaultClientTickRate` (anchors): jitter scale 1.25, slew
//! 0.1, correction 0.1, timescale 0.85–1.1, simulation 60 Hz, 2 network ticks. Not confirmed
//! here against the package's code (it could not be fetched in this build): the 10-tick jump
//! thresholds (literals in the code, per the anchors), the start-up values of the averages
//! (one network interval, no deviation: the round-trip deviation that seeds the real one is
//! not in a trace) and the fixed-point details (`Q8` ages, integer ticks), replaced by floats.
//! The package has no unit test for this system, so there are no origin test vectors.

use std::sync::OnceLock;

use jitterlab_capture::{Nanos, Sample};

use super::keys::{capacity, key, number, print};
use super::vault::Vault;
use super::{Built, DelayModel, Key, Preset};
use crate::buffer::{Counters, Packet, Pick};
use crate::engine::{Applied, Engine};

/// `ClientTickRate` and `ClientServerTickRate` fields that shape the interpolation delay.
#[derive(Clone, Debug, PartialEq)]
pub struct N4eConfig {
    /// `SimulationTickRate` (Hz).
    pub simulation_tick_rate: f64,
    /// `NetworkTickRate` (Hz, snapshots per second); 0: the simulation rate.
    pub network_tick_rate: f64,
    /// `InterpolationTimeNetTicks`.
    pub interpolation_ticks: f64,
    /// `InterpolationDelayJitterScale`.
    pub jitter_scale: f64,
    /// `InterpolationDelayMaxDeltaTicksFraction`: the delay's slew per frame tick.
    pub max_delta_ticks_fraction: f64,
    /// `InterpolationDelayCorrectionFraction`: timescale per tick of error.
    pub correction_fraction: f64,
    /// `InterpolationTimeScaleMin`.
    pub timescale_min: f64,
    /// `InterpolationTimeScaleMax`.
    pub timescale_max: f64,
    /// Snapshots kept.
    pub capacity: usize,
}

impl Default for N4eConfig {
    /// `DefaultClientTickRate` at the default 60 Hz simulation.
    fn default() -> Self {
        Self {
            simulation_tick_rate: 60.0,
            network_tick_rate: 0.0,
            interpolation_ticks: 2.0,
            jitter_scale: 1.25,
            max_delta_ticks_fraction: 0.1,
            correction_fraction: 0.1,
            timescale_min: 0.85,
            timescale_max: 1.1,
            capacity: 32,
        }
    }
}

/// The delay jumps instead of slewing beyond this many ticks, and so does the timeline.
const JUMP_TICKS: f64 = 10.0;

impl N4eConfig {
    /// Simulation ticks per snapshot: `ceil(simulation / network rate)`.
    pub fn net_ticks(&self) -> f64 {
        if self.network_tick_rate <= 0.0 {
            1.0
        } else {
            (self.simulation_tick_rate / self.network_tick_rate)
                .ceil()
                .max(1.0)
        }
    }

    /// The delay wanted (simulation ticks) from the averages: snapshot spacing and its
    /// deviation (ticks), and the arrival interval (ms).
    pub fn wanted_ticks(&self, avg_delta: f64, dev_delta: f64, avg_arrival_ms: f64) -> f64 {
        let net = self.net_ticks();
        let desired = self.interpolation_ticks * net;
        let jitter = avg_delta + dev_delta * self.jitter_scale;
        let arrival = (avg_arrival_ms * self.simulation_tick_rate / 1000.0).ceil();
        desired.max(arrival.max(jitter).min(6.0 * net))
    }

    /// The delay in force after one frame of `delta` ticks (`dt` seconds) toward `target`.
    pub fn slew(&self, current: f64, target: f64, dt: f64, delta: f64) -> f64 {
        if (target - current).abs() > JUMP_TICKS {
            return target;
        }
        let limit = delta * self.max_delta_ticks_fraction;
        current + ((target - current) * dt).clamp(-limit, limit)
    }

    /// The timescale for a timeline `error` ticks behind; `None`: too far, jump.
    pub fn timescale(&self, error: f64) -> Option<f64> {
        (error < JUMP_TICKS).then(|| {
            (1.0 + self.correction_fraction * error).clamp(self.timescale_min, self.timescale_max)
        })
    }
}

impl Preset for N4eConfig {
    const NAME: &'static str = "n4e";
    const RATE_KEY: Option<&'static str> = Some("network_tick_rate");
    const TUNE_AXES: &'static str = "interpolation_ticks = [1, 2, 3]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<N4eConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "simulation_tick_rate", |c| c.simulation_tick_rate, print, |v| {
                    number(v, |x| x > 0.0 && x <= 10_000.0, ">0 to 10000 Hz")
                }),
                key!(Self, "network_tick_rate", |c| c.network_tick_rate, print, |v| {
                    number(v, |x| (0.0..=10_000.0).contains(&x), "0 to 10000 Hz")
                }),
                key!(Self, "interpolation_ticks", |c| c.interpolation_ticks, print, |v| {
                    number(v, |x| (0.0..=1000.0).contains(&x), "0 to 1000 network ticks")
                }),
                key!(Self, "jitter_scale", |c| c.jitter_scale, print, |v| {
                    number(v, |x| x > 0.0 && x <= 3.0, "above 0 to 3")
                }),
                key!(
                    Self,
                    "max_delta_ticks_fraction",
                    |c| c.max_delta_ticks_fraction,
                    print,
                    |v| number(v, |x| (0.0..=1.0).contains(&x), "0 to 1")
                ),
                key!(Self, "correction_fraction", |c| c.correction_fraction, print, |v| {
                    number(v, |x| (0.0..=1.0).contains(&x), "0 to 1")
                }),
                key!(Self, "timescale_min", |c| c.timescale_min, print, |v| {
                    number(v, |x| x > 0.0 && x <= 1.0, "above 0 to 1")
                }),
                key!(Self, "timescale_max", |c| c.timescale_max, print, |v| {
                    number(v, |x| (1.0..=10.0).contains(&x), "1 to 10")
                }),
                key!(Self, "capacity", |c| c.capacity, print, capacity),
            ]
        })
    }

    /// Six network ticks (the cap on the jitter term) plus the jump threshold.
    fn max_delay(&self) -> Nanos {
        let ticks = (6.0 * self.net_ticks()).max(self.interpolation_ticks * self.net_ticks());
        Nanos::from_secs_f64((ticks + JUMP_TICKS) / self.simulation_tick_rate)
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn engine(&self) -> Built {
        Built::Own(Box::new(N4eEngine::new(self)))
    }
}

/// The time system's state, in simulation ticks.
#[derive(Clone, Debug, Default)]
struct State {
    latest: i64,
    estimate: f64,
    age: f64,
    avg_delta: f64,
    dev_delta: f64,
    avg_arrival_ms: f64,
    last_arrival_ms: f64,
    current: f64,
    interp_tick: f64,
}

/// `NetworkTimeSystem` as a replay engine.
pub(crate) struct N4eEngine {
    c: N4eConfig,
    vault: Vault,
    state: Option<State>,
    last_at: Option<Nanos>,
}

fn lerp(a: f64, b: f64, t: f64) -> f64 {
    a + (b - a) * t
}

impl N4eEngine {
    pub(crate) fn new(c: &N4eConfig) -> Self {
        Self {
            c: c.clone(),
            vault: Vault::new(c.capacity, None),
            state: None,
            last_at: None,
        }
    }

    /// A snapshot of server tick `tick` processed at local time `at`.
    fn on_snapshot(&mut self, tick: i64, at: Nanos) {
        let now_ms = at.as_millis_f64();
        let c = &self.c;
        let Some(s) = &mut self.state else {
            let net = c.net_ticks();
            let current = c.interpolation_ticks * net;
            self.state = Some(State {
                latest: tick,
                estimate: tick as f64,
                avg_delta: net,
                avg_arrival_ms: 1000.0 * net / c.simulation_tick_rate,
                last_arrival_ms: now_ms,
                current,
                interp_tick: tick as f64 - current,
                ..State::default()
            });
            return;
        };
        if tick <= s.latest {
            return; // an older snapshot says nothing new about time
        }
        let age = s.estimate - tick as f64;
        s.age = (s.age * 7.0 + age) / 8.0;
        let d = (tick - s.latest) as f64;
        s.avg_delta = lerp(s.avg_delta, d, 0.25);
        s.dev_delta = lerp(s.dev_delta, (d - s.avg_delta).abs(), 0.25);
        s.avg_arrival_ms = lerp(s.avg_arrival_ms, now_ms - s.last_arrival_ms, 0.25);
        s.last_arrival_ms = now_ms;
        s.latest = tick;
    }

    /// One frame of `dt` seconds; returns the interpolation tick and whether it was scaled.
    fn step(&mut self, dt: f64) -> Option<(f64, bool)> {
        let c = &self.c;
        let s = self.state.as_mut()?;
        let delta = dt * c.simulation_tick_rate;
        s.estimate += delta;
        let whole = s.age.trunc();
        s.estimate -= whole;
        s.age -= whole;
        let target = c.wanted_ticks(s.avg_delta, s.dev_delta, s.avg_arrival_ms);
        s.current = c.slew(s.current, target, dt, delta);
        let wanted_tick = s.estimate - s.current;
        let error = wanted_tick - s.interp_tick - delta;
        match c.timescale(error) {
            Some(scale) => {
                s.interp_tick += delta * scale;
                Some((s.interp_tick, scale != 1.0))
            }
            None => {
                s.interp_tick = wanted_tick;
                Some((s.interp_tick, true))
            }
        }
    }
}

impl Engine for N4eEngine {
    fn push(&mut self, _sample: &Sample, p: Packet, at: Nanos) -> bool {
        let duplicate = self.vault.add(p);
        if !duplicate {
            let tick = (p.send.as_secs_f64() * self.c.simulation_tick_rate).round() as i64;
            self.on_snapshot(tick, at);
        }
        duplicate
    }

    fn frame(&mut self, at: Nanos, now: Nanos) -> (Applied, Pick) {
        let dt = self.last_at.map_or(0.0, |l| (at - l).as_secs_f64());
        self.last_at = Some(at);
        let Some((tick, scaled)) = self.step(dt) else {
            let applied = Applied {
                delay: Nanos::ZERO,
                target: now,
                frozen: false,
                scaled: false,
            };
            return (applied, Pick::empty(0));
        };
        let target = Nanos::from_secs_f64(tick / self.c.simulation_tick_rate);
        self.vault.show(now, target, false, scaled)
    }

    fn oldest_idx(&self) -> Option<u32> {
        self.vault.oldest_idx()
    }

    fn counters(&self) -> Counters {
        self.vault.counters()
    }

    fn newest_send(&self) -> Option<Nanos> {
        self.vault.newest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn twenty_hz() -> N4eConfig {
        N4eConfig {
            network_tick_rate: 20.0,
            ..N4eConfig::default()
        }
    }

    #[test]
    fn wanted_delay_uses_the_jitter_scale_and_the_six_tick_cap() {
        let c = twenty_hz(); // 3 simulation ticks per snapshot; 2 network ticks = 6
        assert_eq!(c.net_ticks(), 3.0);
        assert_eq!(c.wanted_ticks(3.0, 0.0, 50.0), 6.0);
        // 4 + 1.25·2 = 6.5 ticks of jitter.
        assert_eq!(c.wanted_ticks(4.0, 2.0, 50.0), 6.5);
        // An arrival interval of 110 ms is ceil(6.6) = 7 ticks.
        assert_eq!(c.wanted_ticks(3.0, 0.0, 110.0), 7.0);
        // Capped at 6 network ticks = 18.
        assert_eq!(c.wanted_ticks(12.0, 8.0, 50.0), 18.0);
    }

    #[test]
    fn delay_slews_by_a_tenth_of_the_frame_and_jumps_beyond_10_ticks() {
        let c = N4eConfig::default();
        // dt 1/60 s: one tick; (9.5 ticks)·dt = 0.158 > 0.1 → limited to 0.1.
        assert!((c.slew(6.0, 15.5, 1.0 / 60.0, 1.0) - 6.1).abs() < 1e-12);
        assert!((c.slew(15.5, 6.0, 1.0 / 60.0, 1.0) - 15.4).abs() < 1e-12);
        // Within the limit: (3 ticks)·(1/60) = 0.05.
        assert!((c.slew(6.0, 9.0, 1.0 / 60.0, 1.0) - 6.05).abs() < 1e-12);
        // 10.5 ticks away: a jump.
        assert_eq!(c.slew(6.0, 16.5, 1.0 / 60.0, 1.0), 16.5);
    }

    #[test]
    fn timescale_within_085_and_11_and_jump_at_10_ticks() {
        let c = N4eConfig::default();
        assert_eq!(c.timescale(0.0), Some(1.0));
        assert!((c.timescale(0.5).unwrap() - 1.05).abs() < 1e-12);
        assert_eq!(c.timescale(3.0), Some(1.1));
        assert_eq!(c.timescale(-3.0), Some(0.85));
        assert_eq!(c.timescale(9.99), Some(1.1));
        assert_eq!(c.timescale(10.0), None);
    }

    #[test]
    fn steady_20hz_settles_on_two_network_ticks() {
        let mut e = N4eEngine::new(&twenty_hz());
        let samples: Vec<Sample> = (0..100)
            .map(|i| Sample::new(0, i, Nanos::from_millis(i * 50), Nanos::from_millis(i * 50 + 40)))
            .collect();
        let mut applied = None;
        for f in 0..300 {
            let at = Nanos::from_secs_f64(f as f64 / 60.0);
            for s in samples
                .iter()
                .filter(|s| s.arrival <= at && s.arrival > at - Nanos::from_secs_f64(1.0 / 60.0))
            {
                e.push(s, Packet::of(&samples, s.seq as u32), at);
            }
            applied = Some(e.frame(at, at - Nanos::from_millis(40)).0);
        }
        let s = e.state.as_ref().unwrap();
        assert!((s.avg_delta - 3.0).abs() < 1e-9 && s.dev_delta.abs() < 1e-9);
        assert!((s.current - 6.0).abs() < 1e-9);
        // Six ticks (100 ms) behind the sender's clock, within a tick for the frame phase.
        let delay = applied.unwrap().delay.as_millis_f64();
        assert!((delay - 100.0).abs() <= 17.0, "{delay}");
    }
}
