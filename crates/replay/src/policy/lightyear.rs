//! `lightyear`: the interpolation timeline of lightyear, the Rust/Bevy netcode crate (MIT/Apache;
//! `lightyear_interpolation/src/timeline.rs` and `lightyear_sync/src/timeline/sync.rs`, as
//! summarised in the team's anchors, §2.2).
//!
//! How it works, in our words:
//! - The interpolation timeline aims at `remote now − delay`, with
//!   `delay = max(send_interval_ratio · send interval, min_delay) + jitter_multiple · jitter +
//!   jitter_margin` (defaults 1.7, 5 ms, 3, 5 ms).
//! - It runs at real speed while within `error_margin` (1 tick) of that objective; after
//!   `consecutive_errors` (3) errors of one sign beyond it, it runs at `speedup_factor` (1.05)
//!   or its inverse; beyond `max_error_margin` (10 ticks) it resyncs (jumps, possibly back).
//! - It interpolates between the confirmed updates around the timeline.
//!
//! Differences, stated: lightyear's jitter is the round-trip jitter of its pings; a trace has
//! one-way transit only, so the RFC 3550 transit jitter stands for it. "remote now" is
//! jitterlab's clock mapping of the frame time. One lightyear code path scales the speed with
//! the error (`1 ± 0.05·2·|err|/10`); this preset uses the flat factor of the other.
//! Not confirmed from the crate's own code in this build (only from the anchors): every
//! constant above; the tick rate's default of 64 Hz is Bevy's fixed-timestep default.

use std::sync::OnceLock;

use jitterlab_capture::stats::Jitter;
use jitterlab_capture::{Nanos, Sample};

use super::keys::{auto_duration, capacity, format_auto, key, number, print, print_duration};
use super::vault::Vault;
use super::{Built, DelayModel, Key, Preset, duration_key};
use crate::adapt::IntervalEstimate;
use crate::buffer::{Counters, Packet, Pick};
use crate::engine::{Applied, Engine};

/// lightyear's `InterpolationConfig` and `SyncConfig`.
#[derive(Clone, Debug, PartialEq)]
pub struct LightyearConfig {
    /// The simulation tick rate (Hz): the unit of the error margins.
    pub tick_rate: f64,
    /// The server's send interval; `None`: estimated from the stream.
    pub send_interval: Option<Nanos>,
    /// Send intervals of delay.
    pub send_interval_ratio: f64,
    /// The least base delay.
    pub min_delay: Nanos,
    /// Multiples of the jitter added.
    pub jitter_multiple: f64,
    /// Added on top.
    pub jitter_margin: Nanos,
    /// Ticks of error tolerated before the speed changes.
    pub error_margin: f64,
    /// Ticks of error beyond which the timeline resyncs.
    pub max_error_margin: f64,
    /// Same-sign errors in a row before the speed changes.
    pub consecutive_errors: u32,
    /// The speed while catching up (its inverse while slowing down).
    pub speedup_factor: f64,
    /// Updates kept.
    pub capacity: usize,
}

impl Default for LightyearConfig {
    /// lightyear's defaults (anchors §2.2), at Bevy's 64 Hz fixed timestep.
    fn default() -> Self {
        Self {
            tick_rate: 64.0,
            send_interval: None,
            send_interval_ratio: 1.7,
            min_delay: Nanos::from_millis(5),
            jitter_multiple: 3.0,
            jitter_margin: Nanos::from_millis(5),
            error_margin: 1.0,
            max_error_margin: 10.0,
            consecutive_errors: 3,
            speedup_factor: 1.05,
            capacity: 32,
        }
    }
}

impl LightyearConfig {
    /// The delay aimed at for a send interval and a jitter.
    pub fn delay(&self, interval: Nanos, jitter: Nanos) -> Nanos {
        let base = Nanos::from_secs_f64(self.send_interval_ratio * interval.as_secs_f64())
            .max(self.min_delay);
        base + Nanos::from_secs_f64(self.jitter_multiple * jitter.as_secs_f64()) + self.jitter_margin
    }

    fn tick(&self) -> Nanos {
        Nanos::from_secs_f64(1.0 / self.tick_rate)
    }
}

fn positive(range: &'static str, ok: fn(f64) -> bool) -> impl Fn(&str) -> Result<f64, String> {
    move |v| number(v, ok, range)
}

impl Preset for LightyearConfig {
    const NAME: &'static str = "lightyear";
    const TUNE_AXES: &'static str =
        "send_interval_ratio = [1, 1.7, 3]\njitter_multiple = [1, 3]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<LightyearConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "tick_rate", |c| c.tick_rate, print, |v| {
                    number(v, |x| x > 0.0 && x <= 10_000.0, ">0 to 10000 Hz")
                }),
                key!(
                    Self,
                    "send_interval",
                    |c| c.send_interval,
                    |d: &Option<Nanos>| format_auto(*d),
                    |v| auto_duration(v, Nanos::ZERO)
                ),
                key!(Self, "send_interval_ratio", |c| c.send_interval_ratio, print, |v| {
                    positive("0 to 100", |x| (0.0..=100.0).contains(&x))(v)
                }),
                key!(Self, "min_delay", |c| c.min_delay, print_duration, |v| {
                    duration_key(v, Nanos::ZERO)
                }),
                key!(Self, "jitter_multiple", |c| c.jitter_multiple, print, |v| {
                    positive("0 to 100", |x| (0.0..=100.0).contains(&x))(v)
                }),
                key!(Self, "jitter_margin", |c| c.jitter_margin, print_duration, |v| {
                    duration_key(v, Nanos::ZERO)
                }),
                key!(Self, "error_margin", |c| c.error_margin, print, |v| {
                    positive("0 to 1000 ticks", |x| (0.0..=1000.0).contains(&x))(v)
                }),
                key!(Self, "max_error_margin", |c| c.max_error_margin, print, |v| {
                    positive("0 to 10000 ticks", |x| (0.0..=10_000.0).contains(&x))(v)
                }),
                key!(Self, "consecutive_errors", |c| c.consecutive_errors, print, |v: &str| {
                    v.parse::<u32>()
                        .ok()
                        .filter(|n| (1..=1000).contains(n))
                        .ok_or_else(|| format!("{v} is out of range (allowed: 1..=1000)"))
                }),
                key!(Self, "speedup_factor", |c| c.speedup_factor, print, |v| {
                    positive("1 to 2", |x| (1.0..=2.0).contains(&x))(v)
                }),
                key!(Self, "capacity", |c| c.capacity, print, capacity),
            ]
        })
    }

    /// The base delay with a 50 ms interval, plus the resync margin.
    fn max_delay(&self) -> Nanos {
        let interval = self.send_interval.unwrap_or(Nanos::from_millis(50));
        self.delay(interval, Nanos::from_millis(100))
            + Nanos::from_secs_f64(self.max_error_margin / self.tick_rate)
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn engine(&self) -> Built {
        Built::Own(Box::new(LightyearEngine::new(self)))
    }
}

/// The speed control of lightyear's sync: where the timeline goes from `t` toward `objective`
/// in `dt`.
#[derive(Clone, Debug)]
pub(crate) struct Sync {
    c: LightyearConfig,
    streak: i64,
}

impl Sync {
    pub(crate) fn new(c: &LightyearConfig) -> Self {
        Self {
            c: c.clone(),
            streak: 0,
        }
    }

    /// The next time and whether it ran off real speed (or resynced).
    pub(crate) fn advance(&mut self, t: Nanos, objective: Nanos, dt: Nanos) -> (Nanos, bool) {
        let c = &self.c;
        let err = (objective - t).as_secs_f64() / c.tick().as_secs_f64();
        if err.abs() > c.max_error_margin {
            self.streak = 0;
            return (objective, true);
        }
        if err.abs() > c.error_margin {
            let sign = if err > 0.0 { 1 } else { -1 };
            self.streak = if self.streak.signum() == sign {
                self.streak + sign
            } else {
                sign
            };
        } else {
            self.streak = 0;
        }
        let speed = if self.streak.unsigned_abs() >= u64::from(c.consecutive_errors) {
            if self.streak > 0 {
                c.speedup_factor
            } else {
                1.0 / c.speedup_factor
            }
        } else {
            1.0
        };
        (
            t + Nanos::from_secs_f64(dt.as_secs_f64() * speed),
            speed != 1.0,
        )
    }
}

/// The interpolation timeline as a replay engine.
pub(crate) struct LightyearEngine {
    c: LightyearConfig,
    vault: Vault,
    jitter: Jitter,
    interval: IntervalEstimate,
    sync: Sync,
    time: Option<Nanos>,
    last_at: Option<Nanos>,
}

impl LightyearEngine {
    pub(crate) fn new(c: &LightyearConfig) -> Self {
        Self {
            c: c.clone(),
            vault: Vault::new(c.capacity, None),
            jitter: Jitter::default(),
            interval: IntervalEstimate::new(c.send_interval),
            sync: Sync::new(c),
            time: None,
            last_at: None,
        }
    }

    /// The delay aimed at now.
    pub(crate) fn wanted(&self) -> Nanos {
        let j = Nanos::from_millis_f64(self.jitter.current_ms());
        self.c.delay(self.interval.get(), j)
    }
}

impl Engine for LightyearEngine {
    fn push(&mut self, s: &Sample, p: Packet, _at: Nanos) -> bool {
        let duplicate = self.vault.add(p);
        if !duplicate {
            self.jitter.push(s.send, s.arrival, true);
            self.interval.observe(s);
        }
        duplicate
    }

    fn frame(&mut self, at: Nanos, now: Nanos) -> (Applied, Pick) {
        let dt = self.last_at.map_or(Nanos::ZERO, |l| at - l);
        self.last_at = Some(at);
        let objective = now - self.wanted();
        let (t, scaled) = match self.time {
            None if self.vault.len() == 0 => (objective, false),
            None => (objective, false),
            Some(t) => self.sync.advance(t, objective, dt),
        };
        if self.vault.len() > 0 {
            self.time = Some(t);
        }
        self.vault.show(now, t, false, scaled)
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

    fn ms(x: i64) -> Nanos {
        Nanos::from_millis(x)
    }

    #[test]
    fn delay_formula() {
        let c = LightyearConfig::default();
        // max(1.7·50, 5) + 3·10 + 5 = 120 ms.
        assert_eq!(c.delay(ms(50), ms(10)), ms(120));
        // A tiny interval falls back to the 5 ms floor: 5 + 0 + 5.
        assert_eq!(c.delay(ms(1), Nanos::ZERO), ms(10));
    }

    #[test]
    fn steady_trace_settles_on_the_formula() {
        // 20 Hz, constant transit: no jitter, so the delay is 1.7·50 + 5 = 90 ms.
        let samples: Vec<Sample> = (0..40)
            .map(|i| Sample::new(0, i, ms(i * 50), ms(i * 50 + 30)))
            .collect();
        let mut e = LightyearEngine::new(&LightyearConfig::default());
        let mut last = None;
        for f in 0..120 {
            let at = ms(f * 16);
            for s in samples.iter().filter(|s| s.arrival <= at && s.arrival > at - ms(16)) {
                e.push(s, Packet::of(&samples, s.seq as u32), at);
            }
            last = Some(e.frame(at, at).0);
        }
        assert_eq!(e.wanted(), ms(90));
        // The timeline started on an earlier objective (before the interval was known) and
        // runs at real speed within a tick of the objective: within one tick of 90 ms.
        let d = last.unwrap().delay.as_millis_f64();
        assert!((d - 90.0).abs() <= 15.625, "{d}");
    }

    #[test]
    fn speeds_up_after_three_errors_and_resyncs_beyond_ten_ticks() {
        let c = LightyearConfig::default(); // 64 Hz: a tick is 15.625 ms
        let mut s = Sync::new(&c);
        let dt = ms(100);
        // Two ticks behind: real speed twice, then 1.05.
        assert_eq!(s.advance(ms(0), ms(32), dt), (ms(100), false));
        assert_eq!(s.advance(ms(0), ms(32), dt), (ms(100), false));
        assert_eq!(s.advance(ms(0), ms(32), dt), (ms(105), true));
        // Ahead: the streak restarts, then 1/1.05.
        for _ in 0..2 {
            assert!(!s.advance(ms(32), ms(0), dt).1);
        }
        let (t, scaled) = s.advance(ms(32), ms(0), dt);
        assert!(scaled);
        assert!((t - ms(32)).as_secs_f64() - 0.1 / 1.05 < 1e-6);
        // Within a tick: real speed.
        assert_eq!(s.advance(ms(0), ms(15), dt), (ms(100), false));
        // 10 ticks (156.25 ms) is not beyond; 157 ms is: a resync, backwards too.
        assert!(!s.advance(ms(0), Nanos::from_micros(156_250), dt).1);
        assert_eq!(s.advance(ms(500), ms(300), dt), (ms(300), true));
        // 170 ms ahead is 10.9 ticks: resynced backwards.
        assert_eq!(s.advance(ms(170), ms(0), dt), (ms(0), true));
    }
}
