//! `unreal-np`: Unreal Engine's NetworkPrediction plugin interpolator (`TInterpolator` /
//! `TNetSimInterpolator`, the `ni.*` console variables; an experimental plugin).
//!
//! How it works, in our words (read from public copies of `NetworkedSimulationModelInterpolator.h`,
//! 2019–2020 versions):
//! - It needs two buffered states before it shows anything, then starts at the oldest.
//! - Each frame the interpolation time advances by the frame's real time.
//! - More than `ni.SnapThreshold` (0.5 s) behind the newest state: it jumps to
//!   `ni.SnapGoal` (10 ms) behind it.
//! - More than `ni.CatchUpThreshold` (0.3 s) behind: it runs at `ni.CatchUpFactor` (1.5×)
//!   until it is within `ni.CatchUpGoal` (10 ms) of the newest state *as it was when the
//!   catch-up began*.
//! - Reaching the newest state it stops there and waits until a state at least
//!   `ni.WaitSlack` (50 ms) newer has arrived.
//!
//! Confirmed in that code: all six constants and the order of the steps. The 2019 version
//! used 0.2 s / 0.1 s / 1.25× for the catch-up and had no snap; set the keys to get it. Not
//! confirmed: the size of the state buffer (32 here, as jitterlab's default store).

use std::sync::OnceLock;

use jitterlab_capture::{Nanos, Sample};

use super::keys::{capacity, key, number, print, print_duration};
use super::vault::Vault;
use super::{Built, DelayModel, Key, KeyError, Preset, duration_key};

/// A duration key of at least zero.
fn ms(v: &str) -> Result<Nanos, String> {
    duration_key(v, Nanos::ZERO)
}
use crate::buffer::{Counters, Packet, Pick};
use crate::engine::{Applied, Engine};

/// The NetworkPrediction interpolator's cvars.
#[derive(Clone, Debug, PartialEq)]
pub struct UnrealNpConfig {
    /// `ni.WaitSlack`: how much newer the head must get before a caught-up timeline moves on.
    pub wait_slack: Nanos,
    /// `ni.CatchUpThreshold`: this far behind the head, catch-up starts.
    pub catch_up_threshold: Nanos,
    /// `ni.CatchUpGoal`: catch-up ends this close to the head as it was when it began.
    pub catch_up_goal: Nanos,
    /// `ni.CatchUpFactor`: the speed while catching up.
    pub catch_up_factor: f64,
    /// `ni.SnapThreshold`: this far behind, the timeline jumps.
    pub snap_threshold: Nanos,
    /// `ni.SnapGoal`: where it jumps to, behind the head.
    pub snap_goal: Nanos,
    /// States buffered.
    pub capacity: usize,
}

impl Default for UnrealNpConfig {
    /// The cvars' defaults in the 2020 plugin.
    fn default() -> Self {
        Self {
            wait_slack: Nanos::from_millis(50),
            catch_up_threshold: Nanos::from_millis(300),
            catch_up_goal: Nanos::from_millis(10),
            catch_up_factor: 1.5,
            snap_threshold: Nanos::from_millis(500),
            snap_goal: Nanos::from_millis(10),
            capacity: 32,
        }
    }
}

impl Preset for UnrealNpConfig {
    const NAME: &'static str = "unreal-np";
    const TUNE_AXES: &'static str =
        "catch_up_threshold = [\"100ms\", \"300ms\"]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<UnrealNpConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(Self, "wait_slack", |c| c.wait_slack, print_duration, ms),
                key!(Self, "catch_up_threshold", |c| c.catch_up_threshold, print_duration, ms),
                key!(Self, "catch_up_goal", |c| c.catch_up_goal, print_duration, ms),
                key!(Self, "catch_up_factor", |c| c.catch_up_factor, print, |v| {
                    number(v, |x| (1.0..=10.0).contains(&x), "1 to 10")
                }),
                key!(Self, "snap_threshold", |c| c.snap_threshold, print_duration, ms),
                key!(Self, "snap_goal", |c| c.snap_goal, print_duration, ms),
                key!(Self, "capacity", |c| c.capacity, print, capacity),
            ]
        })
    }

    fn validate(&self) -> Result<(), KeyError> {
        if self.snap_goal > self.snap_threshold {
            return Err(KeyError {
                key: "snap_goal",
                reason: "above snap_threshold".into(),
            });
        }
        Ok(())
    }

    /// The timeline never trails the head by more than the snap threshold for long.
    fn max_delay(&self) -> Nanos {
        self.snap_threshold.max(self.catch_up_threshold)
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn engine(&self) -> Built {
        Built::Own(Box::new(UnrealNpEngine::new(self)))
    }
}

/// The interpolator as a replay engine.
pub(crate) struct UnrealNpEngine {
    c: UnrealNpConfig,
    vault: Vault,
    /// The interpolation time (sender clock), once started.
    time: Option<Nanos>,
    wait_until: Option<Nanos>,
    catch_up_until: Option<Nanos>,
    last_at: Option<Nanos>,
}

impl UnrealNpEngine {
    pub(crate) fn new(c: &UnrealNpConfig) -> Self {
        Self {
            c: c.clone(),
            vault: Vault::new(c.capacity, None),
            time: None,
            wait_until: None,
            catch_up_until: None,
            last_at: None,
        }
    }

    /// One step of the interpolator: the new time and whether it ran faster than real time.
    fn step(&mut self, dt: Nanos, head: Nanos, start: Nanos) -> (Nanos, bool) {
        let c = &self.c;
        let mut t = *self.time.get_or_insert(start);
        if let Some(until) = self.wait_until {
            if until <= head {
                self.wait_until = None;
            } else {
                return (t, false);
            }
        }
        if t < head - c.snap_threshold {
            t = head - c.snap_goal;
        }
        if self.catch_up_until.is_none() && t < head - c.catch_up_threshold {
            self.catch_up_until = Some(head - c.catch_up_goal);
        }
        let mut step = dt;
        let mut fast = false;
        if let Some(until) = self.catch_up_until {
            if t < until {
                step = Nanos::from_secs_f64(dt.as_secs_f64() * c.catch_up_factor);
                fast = true;
            } else {
                self.catch_up_until = None;
            }
        }
        t += step;
        if t > head {
            self.wait_until = Some(head + c.wait_slack);
            t = head;
        }
        self.time = Some(t);
        (t, fast)
    }
}

impl Engine for UnrealNpEngine {
    fn push(&mut self, _sample: &Sample, p: Packet, _at: Nanos) -> bool {
        self.vault.add(p)
    }

    fn frame(&mut self, at: Nanos, now: Nanos) -> (Applied, Pick) {
        let dt = self.last_at.map_or(Nanos::ZERO, |l| at - l);
        self.last_at = Some(at);
        let (Some(head), Some(oldest)) = (self.vault.newest(), self.vault.oldest()) else {
            let applied = Applied {
                delay: Nanos::ZERO,
                target: now,
                frozen: false,
                scaled: false,
            };
            return (applied, Pick::empty(0));
        };
        if self.vault.len() < 2 && self.time.is_none() {
            // It cannot interpolate yet: the only state is held.
            return self.vault.show(now, oldest, true, false);
        }
        let (t, fast) = self.step(dt, head, oldest);
        self.vault.show(now, t, false, fast)
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

    fn packet(idx: u32, send_ms: i64) -> Packet {
        Packet {
            send: ms(send_ms),
            seq: i64::from(idx),
            idx,
            cuts_before: false,
            cuts_after: false,
            repeat: None,
        }
    }

    /// Frames every 10 ms from `from` to `to`; returns the interpolation time at each.
    fn run(e: &mut UnrealNpEngine, from: i64, to: i64) -> Vec<(i64, Applied)> {
        (from..=to)
            .step_by(10)
            .map(|t| (t, e.frame(ms(t), ms(t)).0))
            .collect()
    }

    #[test]
    fn catches_up_at_one_and_a_half_beyond_300ms_until_10ms_behind() {
        let mut e = UnrealNpEngine::new(&UnrealNpConfig::default());
        // 32 states (the buffer's size) every 10 ms arrive at once: the timeline starts at
        // the oldest, 310 ms behind the head.
        for i in 0..32 {
            e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(i, i64::from(i) * 10), ms(0));
        }
        let frames = run(&mut e, 0, 2000);
        // The first frame (dt 0) starts catching up; each later frame moves 15 ms.
        assert_eq!(frames[1].1.target, ms(15));
        assert!(frames[1].1.scaled);
        // Until 300 (the head at the start, less 10 ms): 20 steps of 15 ms.
        assert_eq!(frames[20].1.target, ms(300));
        assert!(frames[20].1.scaled);
        assert!(!frames[21].1.scaled);
        assert_eq!(frames[21].1.target, ms(310));
        // Caught up with nothing newer: it waits at the head.
        assert_eq!(frames[30].1.target, ms(310));
    }

    #[test]
    fn no_catch_up_at_300ms_behind_and_a_snap_beyond_500ms() {
        let mut e = UnrealNpEngine::new(&UnrealNpConfig::default());
        for i in 0..=30 {
            e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(i, i64::from(i) * 10), ms(0));
        }
        let frames = run(&mut e, 0, 50);
        assert!(frames.iter().all(|(_, a)| !a.scaled), "exactly 300 ms is not beyond");
        assert_eq!(frames[5].1.target, ms(50));
        // A burst takes the head to 600 ms: 550 behind → snap to 590, no catch-up needed.
        for i in 31..=60 {
            e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(i, i64::from(i) * 10), ms(50));
        }
        let (a, _) = e.frame(ms(60), ms(60));
        assert_eq!(a.target, ms(600));
        assert!(!a.scaled);
    }

    #[test]
    fn waits_for_a_state_50ms_past_the_head() {
        let mut e = UnrealNpEngine::new(&UnrealNpConfig::default());
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(0, 0), ms(0));
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(1, 20), ms(0));
        let frames = run(&mut e, 0, 40);
        assert_eq!(frames[3].1.target, ms(20)); // reached the head at 20: wait until 70 arrives
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(2, 60), ms(40));
        assert_eq!(e.frame(ms(50), ms(50)).0.target, ms(20));
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(3, 70), ms(50));
        assert_eq!(e.frame(ms(60), ms(60)).0.target, ms(30));
    }
}
