//! `fishnet`: FishNet's `NetworkTransform` tick interpolation (MIT; `NetworkTransform.cs`,
//! `TickSmoothing/{MovementSettings,AdaptiveInterpolationType}.cs` at FirstGearGames/FishNet
//! @de19b5d, as summarised in the team's anchors, §3 and part 2's table).
//!
//! How it works, in our words:
//! - Each update is a goal stamped with the server tick. Goals queue in arrival order; one
//!   whose tick is not newer than the last received is dropped (no reordering).
//! - Moving starts once `interpolation` goals (2) are queued. Each goal is reached over the
//!   ticks since the previous goal (at least one) times the tick interval; the leftover
//!   frame time carries into the next goal. With the queue empty the object holds.
//! - With more than `interpolation + 1` queued, it moves 5 % faster; with more than
//!   `interpolation + 3`, the oldest are dropped down to `interpolation` and it snaps to the
//!   last dropped.
//! - Adaptive interpolation (the smoother's): `interpolation = round-trip ticks + 1 + level`,
//!   level 1 (`extremely_low`) to 6 (`very_high`), at most the tick rate.
//!
//! Confirmed (anchors, read from the code at that commit): tick rate 30, interpolation 2,
//! the +1 / +3 queue rules, the 1.05 speed, the adaptive formula and its level names. Not in a
//! trace: the round trip (the `rtt` key, 0 by default, so `adaptive` adds 1 + level ticks),
//! which FishNet measures; adaptive here is computed once from it. FishNet moves the
//! transform toward the goal at a rate (distance over time), which for a straight segment is
//! the linear interpolation shown here. No origin test vectors exist for this path.

use std::collections::VecDeque;
use std::fmt;
use std::sync::OnceLock;

use jitterlab_capture::{Nanos, Sample};

use super::keys::{key, number, print, print_duration};
use super::{Built, DelayModel, Key, Preset, duration_key};
use crate::buffer::{Counters, HoldReason, Packet, Pick};
use crate::engine::{Applied, Engine};

/// FishNet's `AdaptiveInterpolationType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adaptive {
    /// Fixed `interpolation` ticks.
    Off,
    /// Level 1 to 6: `extremely_low`, `very_low`, `low`, `moderate`, `high`, `very_high`.
    Level(u8),
}

const LEVELS: [&str; 7] = [
    "off",
    "extremely_low",
    "very_low",
    "low",
    "moderate",
    "high",
    "very_high",
];

impl fmt::Display for Adaptive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = match self {
            Self::Off => 0,
            Self::Level(l) => usize::from(*l),
        };
        f.write_str(LEVELS[i.min(6)])
    }
}

fn adaptive(v: &str) -> Result<Adaptive, String> {
    match LEVELS.iter().position(|l| *l == v) {
        Some(0) => Ok(Adaptive::Off),
        Some(i) => Ok(Adaptive::Level(i as u8)),
        None => Err(format!("'{v}' (allowed: {})", LEVELS.join(", "))),
    }
}

/// FishNet's NetworkTransform interpolation settings.
#[derive(Clone, Debug, PartialEq)]
pub struct FishNetConfig {
    /// `TimeManager` tick rate (Hz).
    pub tick_rate: f64,
    /// `_interpolation`: goals queued before moving, in ticks (1..250).
    pub interpolation: u32,
    /// Adaptive interpolation level.
    pub adaptive: Adaptive,
    /// The round trip adaptive interpolation counts in ticks.
    pub rtt: Nanos,
}

impl Default for FishNetConfig {
    /// FishNet's defaults: 30 Hz, 2 ticks, adaptive off.
    fn default() -> Self {
        Self {
            tick_rate: 30.0,
            interpolation: 2,
            adaptive: Adaptive::Off,
            rtt: Nanos::ZERO,
        }
    }
}

impl FishNetConfig {
    /// The interpolation in ticks in force.
    pub fn ticks(&self) -> usize {
        match self.adaptive {
            Adaptive::Off => self.interpolation as usize,
            Adaptive::Level(level) => {
                let rtt_ticks = (self.rtt.as_secs_f64() * self.tick_rate).ceil() as usize;
                (rtt_ticks + 1 + usize::from(level)).min(self.tick_rate.floor().max(1.0) as usize)
            }
        }
    }

    fn tick(&self) -> f64 {
        1.0 / self.tick_rate
    }
}

impl Preset for FishNetConfig {
    const NAME: &'static str = "fishnet";
    const RATE_KEY: Option<&'static str> = Some("tick_rate");
    const TUNE_AXES: &'static str =
        "interpolation = [1, 2, 3, 4]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<FishNetConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "tick_rate", |c| c.tick_rate, print, |v| {
                    number(v, |x| x > 0.0 && x <= 10_000.0, ">0 to 10000 Hz")
                }),
                key!(Self, "interpolation", |c| c.interpolation, print, |v: &str| {
                    v.parse::<u32>()
                        .ok()
                        .filter(|n| (1..=250).contains(n))
                        .ok_or_else(|| format!("{v} is out of range (allowed: 1..=250 ticks)"))
                }),
                key!(Self, "adaptive", |c| c.adaptive, print, adaptive),
                key!(Self, "rtt", |c| c.rtt, print_duration, |v| {
                    duration_key(v, Nanos::ZERO)
                }),
            ]
        })
    }

    /// A full queue: `interpolation + 3` goals of one tick, after the one in motion.
    fn max_delay(&self) -> Nanos {
        Nanos::from_secs_f64((self.ticks() + 4) as f64 * self.tick())
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn engine(&self) -> Built {
        Built::Own(Box::new(FishNetEngine::new(self)))
    }
}

/// One queued goal.
#[derive(Clone, Copy, Debug)]
struct Goal {
    idx: u32,
    send: Nanos,
    /// Seconds to reach it from the previous goal.
    duration: f64,
}

/// The transform's motion between goals as a replay engine.
pub(crate) struct FishNetEngine {
    c: FishNetConfig,
    interp: usize,
    queue: VecDeque<Goal>,
    last_tick: Option<i64>,
    /// What is shown, or moved from.
    shown: Option<Goal>,
    /// The goal moved toward and the seconds left to reach it.
    moving: Option<(Goal, f64)>,
    last_at: Option<Nanos>,
    counters: Counters,
}

impl FishNetEngine {
    pub(crate) fn new(c: &FishNetConfig) -> Self {
        Self {
            c: c.clone(),
            interp: c.ticks(),
            queue: VecDeque::new(),
            last_tick: None,
            shown: None,
            moving: None,
            last_at: None,
            counters: Counters::default(),
        }
    }

    /// Takes the next goal to move to; the first ever is shown at once.
    fn next_goal(&mut self, leftover: f64) -> bool {
        while let Some(g) = self.queue.pop_front() {
            if self.shown.is_none() {
                self.shown = Some(g);
                continue;
            }
            self.moving = Some((g, g.duration - leftover));
            return true;
        }
        false
    }

    fn advance(&mut self, dt: f64) {
        if self.moving.is_none() && self.queue.len() >= self.interp {
            self.next_goal(0.0);
        }
        let mult = if self.queue.len() > self.interp + 1 {
            1.05
        } else {
            1.0
        };
        let Some((_, left)) = self.moving.as_mut() else {
            return;
        };
        *left -= dt * mult;
        while let Some((goal_now, left_now)) = self.moving {
            if left_now > 0.0 {
                break;
            }
            self.shown = Some(goal_now);
            self.moving = None;
            if !self.next_goal(-left_now) {
                break;
            }
        }
    }
}

impl Engine for FishNetEngine {
    fn push(&mut self, _sample: &Sample, p: Packet, _at: Nanos) -> bool {
        let tick = (p.send.as_secs_f64() * self.c.tick_rate).round() as i64;
        if self.last_tick.is_some_and(|t| tick <= t) {
            // Not newer than the last received: a repeat is a duplicate, older is stale.
            if self.last_tick == Some(tick) {
                self.counters.duplicates += 1;
                return true;
            }
            self.counters.stale += 1;
            return false;
        }
        let ticks = self.last_tick.map_or(1, |t| (tick - t).max(1));
        self.last_tick = Some(tick);
        self.queue.push_back(Goal {
            idx: p.idx,
            send: p.send,
            duration: ticks as f64 * self.c.tick(),
        });
        self.counters.inserted += 1;
        if self.queue.len() > self.interp + 3 {
            // Too far behind: drop the oldest down to `interp` and snap to the last dropped.
            while self.queue.len() > self.interp {
                self.shown = self.queue.pop_front();
                self.counters.evicted += 1;
            }
            self.moving = None;
        }
        false
    }

    fn frame(&mut self, at: Nanos, now: Nanos) -> (Applied, Pick) {
        let dt = self.last_at.map_or(0.0, |l| (at - l).as_secs_f64());
        self.last_at = Some(at);
        let scaled = self.queue.len() > self.interp + 1 && self.moving.is_some();
        self.advance(dt);
        let depth = self.queue.len() + usize::from(self.moving.is_some());
        let pick = match (self.shown, self.moving) {
            (Some(from), Some((goal, left))) => {
                let alpha = (1.0 - left / goal.duration).clamp(0.0, 1.0);
                let shown = from.send + Nanos::from_secs_f64((goal.send - from.send).as_secs_f64() * alpha);
                Pick::between(from.idx, goal.idx, alpha, shown, depth)
            }
            (Some(held), None) => Pick::held(held.idx, held.send, HoldReason::AfterNewest, depth),
            (None, _) => Pick::empty(depth),
        };
        let target = pick.shown.unwrap_or(now);
        let applied = Applied {
            delay: now - target,
            target,
            frozen: false,
            scaled,
        };
        (applied, pick)
    }

    fn oldest_idx(&self) -> Option<u32> {
        let moving = self.moving.as_ref().map(|(g, _)| g);
        self.queue
            .iter()
            .chain(&self.shown)
            .chain(moving)
            .map(|g| g.idx)
            .min()
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn newest_send(&self) -> Option<Nanos> {
        self.queue
            .back()
            .or(self.moving.as_ref().map(|(g, _)| g))
            .or(self.shown.as_ref())
            .map(|g| g.send)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::Mode;

    fn packet(idx: u32, tick: i64) -> Packet {
        Packet {
            send: Nanos::from_secs_f64(tick as f64 / 30.0),
            seq: i64::from(idx),
            idx,
            cuts_before: false,
            cuts_after: false,
            repeat: None,
        }
    }

    fn at(s: f64) -> Nanos {
        Nanos::from_secs_f64(s)
    }

    #[test]
    fn adaptive_interpolation_is_rtt_ticks_plus_one_plus_level() {
        let mut c = FishNetConfig::default();
        assert_eq!(c.ticks(), 2);
        c.adaptive = adaptive("moderate").unwrap(); // level 4
        c.rtt = Nanos::from_millis(100); // 3 ticks at 30 Hz
        assert_eq!(c.ticks(), 3 + 1 + 4);
        c.adaptive = adaptive("very_high").unwrap();
        c.rtt = Nanos::from_secs(2); // 60 ticks: capped at the tick rate
        assert_eq!(c.ticks(), 30);
        assert!(adaptive("huge").is_err());
    }

    #[test]
    fn waits_for_two_goals_then_moves_one_tick_per_goal() {
        let mut e = FishNetEngine::new(&FishNetConfig::default());
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(0, 0), at(0.0));
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(1, 1), at(0.0));
        // One goal is not enough to start.
        let mut one = FishNetEngine::new(&FishNetConfig::default());
        one.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(0, 0), at(0.0));
        assert_eq!(one.frame(at(0.0), at(0.0)).1.mode, Mode::Empty);
        // With two: goal 0 is shown at once and the move toward 1 starts.
        let (_, p) = e.frame(at(0.0), at(0.0));
        assert_eq!((p.from, p.to, p.mode), (Some(0), Some(1), Mode::Interpolate));
        assert_eq!(p.alpha(), 0.0);
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(2, 2), at(0.0));
        // Half a tick later: halfway.
        let (_, p) = e.frame(at(1.0 / 60.0), at(0.0));
        assert!((p.alpha() - 0.5).abs() < 1e-6, "{}", p.alpha());
        // One and a half ticks later in one frame: goal 1 reached, halfway to 2 (the
        // leftover carries over).
        let (_, p) = e.frame(at(1.0 / 60.0 + 1.0 / 30.0), at(0.0));
        assert_eq!((p.from, p.to), (Some(1), Some(2)));
        assert!((p.alpha() - 0.5).abs() < 1e-6, "{}", p.alpha());
        // Nothing more queued: it holds at 2.
        let (_, p) = e.frame(at(0.2), at(0.0));
        assert_eq!((p.from, p.hold), (Some(2), Some(HoldReason::AfterNewest)));
    }

    #[test]
    fn speeds_up_beyond_interp_plus_one_and_snaps_beyond_plus_three() {
        let mut e = FishNetEngine::new(&FishNetConfig::default());
        for i in 0..3 {
            e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(i, i64::from(i)), at(0.0));
        }
        e.frame(at(0.0), at(0.0)); // shows 0, moves to 1, 1 queued
        for i in 3..5 {
            e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(i, i64::from(i)), at(0.0));
        }
        // 3 queued is not more than 2 + 1: real speed.
        let (a, _) = e.frame(at(0.0), at(0.0));
        assert!(!a.scaled);
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(5, 5), at(0.0));
        // 4 queued > 2 + 1: 5 % faster.
        let (a, p) = e.frame(at(0.01), at(0.0));
        assert!(a.scaled);
        assert!((p.alpha() - 0.01 * 1.05 * 30.0).abs() < 1e-6, "{}", p.alpha());
        // Up to 5 queued is kept; the 6th triggers the trim to 2 and the snap.
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(6, 6), at(0.0));
        assert_eq!(e.queue.len(), 5);
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(7, 7), at(0.0));
        assert_eq!(e.queue.len(), 2);
        assert_eq!(e.shown.map(|g| g.idx), Some(5));
        // Stale ticks are dropped.
        assert!(!e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(8, 3), at(0.0)));
        assert_eq!(e.counters().stale, 1);
    }
}
