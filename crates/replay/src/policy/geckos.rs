//! `geckos`: geckos.io's `@geckos.io/snapshot-interpolation` (npm, BSD-3-Clause; read at
//! version 1.1.1, `lib/snapshot-interpolation.js` and `lib/vault.js`).
//!
//! How the library works, in our words:
//! - The interpolation buffer is three server frames, `3 × 1000 / serverFPS` ms, or 100 ms
//!   when the constructor is given no FPS.
//! - The clock offset is `client now − snapshot time` of the **first** snapshot added. With
//!   `autoCorrectTimeOffset` (on by default since 1.1; the anchors describe the older,
//!   first-snapshot-only behaviour, which is `auto_correct=false` here) each later snapshot
//!   whose own offset differs from the kept one by more than 50 ms replaces it.
//! - Each render asks for server time `now − offset − buffer`; the vault (at most 120
//!   snapshots, the oldest by time dropped when full) returns the newest snapshot at or
//!   before it and the next newer one, and the state is interpolated between them. With no
//!   newer snapshot, or none old enough, nothing is returned: the game keeps what it last
//!   drew (a hold here). There is no gap limit and no duplicate check.
//!
//! Every constant above was confirmed in the package's code. A real-peer test drives the npm
//! package itself over recorded traces and compares frame for frame
//! (`crates/replay/tests/geckos_peer.rs`).

use std::sync::OnceLock;

use jitterlab_capture::spec::format_duration;
use jitterlab_capture::{Nanos, Sample};

use super::keys::{boolean, capacity, key, number, print, print_duration};
use super::vault::Vault;
use super::{Built, DelayModel, Key, KeyError, Preset, duration_key};
use crate::buffer::{Counters, Packet, Pick};
use crate::engine::{Applied, Engine};

/// geckos.io snapshot interpolation: a fixed buffer behind a clock offset taken from the
/// first snapshot (and re-taken on a jump beyond `correct_threshold`, when `auto_correct`).
#[derive(Clone, Debug, PartialEq)]
pub struct GeckosConfig {
    /// The server's frame rate given to the constructor; `None`: none given (100 ms buffer).
    pub server_fps: Option<f64>,
    /// The interpolation buffer when set explicitly (`interpolationBuffer.set`); `None`:
    /// three server frames.
    pub buffer: Option<Nanos>,
    /// `autoCorrectTimeOffset`: re-take the offset when a snapshot's differs by more than
    /// `correct_threshold`.
    pub auto_correct: bool,
    /// The offset change that triggers the correction (50 ms in the library).
    pub correct_threshold: Nanos,
    /// Snapshots the vault keeps (120).
    pub vault: usize,
}

impl Default for GeckosConfig {
    /// The library's defaults: no FPS given (100 ms), auto-correction on at 50 ms, 120 snapshots.
    fn default() -> Self {
        Self {
            server_fps: None,
            buffer: None,
            auto_correct: true,
            correct_threshold: Nanos::from_millis(50),
            vault: 120,
        }
    }
}

impl GeckosConfig {
    /// The interpolation buffer in force.
    pub fn interpolation_buffer(&self) -> Nanos {
        match (self.buffer, self.server_fps) {
            (Some(b), _) => b,
            (None, Some(fps)) => Nanos::from_secs_f64(3.0 / fps),
            (None, None) => Nanos::from_millis(100),
        }
    }
}

fn print_auto<T>(v: &Option<T>, f: impl Fn(&T) -> String) -> String {
    v.as_ref().map_or_else(|| "auto".to_owned(), f)
}

impl Preset for GeckosConfig {
    const NAME: &'static str = "geckos";
    const RATE_KEY: Option<&'static str> = Some("server_fps");
    const TUNE_AXES: &'static str = "auto_correct = [true, false]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<GeckosConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(
                    Self,
                    "server_fps",
                    |c| c.server_fps,
                    |v: &Option<f64>| print_auto(v, |x| x.to_string()),
                    |v: &str| if v == "auto" {
                        Ok(None)
                    } else {
                        number(v, |x| x > 0.0 && x <= 10_000.0, ">0 to 10000 per second, or auto")
                            .map(Some)
                    }
                ),
                key!(
                    Self,
                    "buffer",
                    |c| c.buffer,
                    |v: &Option<Nanos>| print_auto(v, |d| format_duration(*d)),
                    |v: &str| if v == "auto" {
                        Ok(None)
                    } else {
                        duration_key(v, Nanos::ZERO).map(Some)
                    }
                ),
                key!(Self, "auto_correct", |c| c.auto_correct, print, boolean),
                key!(Self, "correct_threshold", |c| c.correct_threshold, print_duration, |v| {
                    duration_key(v, Nanos::ZERO)
                }),
                key!(Self, "vault", |c| c.vault, print, capacity),
            ]
        })
    }

    fn validate(&self) -> Result<(), KeyError> {
        Ok(())
    }

    /// The buffer, plus the most a re-taken offset can add (the correction threshold).
    fn max_delay(&self) -> Nanos {
        self.interpolation_buffer()
            + if self.auto_correct {
                self.correct_threshold
            } else {
                Nanos::ZERO
            }
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn engine(&self) -> Built {
        Built::Own(Box::new(GeckosEngine::new(self)))
    }
}

/// The library's client side as a replay engine.
pub(crate) struct GeckosEngine {
    config: GeckosConfig,
    buffer: Nanos,
    vault: Vault,
    /// Client time minus snapshot time, as kept.
    offset: Option<Nanos>,
}

impl GeckosEngine {
    pub(crate) fn new(c: &GeckosConfig) -> Self {
        Self {
            config: c.clone(),
            buffer: c.interpolation_buffer(),
            vault: Vault::new(c.vault, None),
            offset: None,
        }
    }

    /// The offset in force.
    #[cfg(test)]
    fn offset(&self) -> Option<Nanos> {
        self.offset
    }
}

impl Engine for GeckosEngine {
    fn push(&mut self, _sample: &Sample, p: Packet, at: Nanos) -> bool {
        // The snapshot is added when the frame processing it runs: its clock reading is `at`.
        let own = at - p.send;
        match self.offset {
            None => self.offset = Some(own),
            Some(kept)
                if self.config.auto_correct
                    && (kept - own).abs() > self.config.correct_threshold =>
            {
                self.offset = Some(own);
            }
            Some(_) => {}
        }
        self.vault.add(p)
    }

    fn frame(&mut self, at: Nanos, now: Nanos) -> (Applied, Pick) {
        let Some(offset) = self.offset else {
            let applied = Applied {
                delay: self.buffer,
                target: now - self.buffer,
                frozen: false,
                scaled: false,
            };
            return (applied, Pick::empty(0));
        };
        let target = at - offset - self.buffer;
        self.vault.show(now, target, false, false)
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
    use crate::buffer::{HoldReason, Mode};

    fn packet(idx: u32, send_ms: i64) -> Packet {
        Packet {
            send: Nanos::from_millis(send_ms),
            seq: i64::from(idx),
            idx,
            cuts_before: false,
            cuts_after: false,
            repeat: None,
        }
    }

    fn ms(x: i64) -> Nanos {
        Nanos::from_millis(x)
    }

    fn engine(text: &str) -> GeckosEngine {
        let p: crate::Policy = text.parse().unwrap();
        GeckosEngine::new(p.config::<GeckosConfig>().unwrap())
    }

    #[test]
    fn buffer_is_three_frames_or_100ms() {
        assert_eq!(GeckosConfig::default().interpolation_buffer(), ms(100));
        let c = GeckosConfig {
            server_fps: Some(20.0),
            ..GeckosConfig::default()
        };
        assert_eq!(c.interpolation_buffer(), ms(150));
        let c = GeckosConfig {
            server_fps: Some(60.0),
            ..GeckosConfig::default()
        };
        assert_eq!(c.interpolation_buffer(), ms(50));
        assert_eq!(GeckosConfig::default().vault, 120);
    }

    #[test]
    fn offset_comes_from_the_first_snapshot_only() {
        // Without auto-correction a slow second snapshot never moves the offset.
        let mut e = engine("geckos:server_fps=20,auto_correct=false");
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(0, 0), ms(40));
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(1, 50), ms(290));
        assert_eq!(e.offset(), Some(ms(40)));
        // Render at 240: server time 240 − 40 − 150 = 50, the second snapshot exactly.
        let (applied, pick) = e.frame(ms(240), ms(240));
        assert_eq!(applied.target, ms(50));
        assert_eq!(pick.from, Some(1));
        // Between the two: 215 − 40 − 150 = 25 → halfway.
        let mut e = engine("geckos:server_fps=20,auto_correct=false");
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(0, 0), ms(40));
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(1, 50), ms(90));
        let (_, pick) = e.frame(ms(215), ms(215));
        assert_eq!(pick.mode, Mode::Interpolate);
        assert!((pick.alpha() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn auto_correct_retakes_the_offset_beyond_50ms() {
        let mut e = engine("geckos:server_fps=20");
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(0, 0), ms(40));
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(1, 50), ms(140)); // own offset 90: 50 away, not beyond
        assert_eq!(e.offset(), Some(ms(40)));
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(2, 100), ms(191)); // 91: 51 away
        assert_eq!(e.offset(), Some(ms(91)));
        // The target steps back; the vault still has the pair behind it.
        let (_, pick) = e.frame(ms(316), ms(316)); // 316 − 91 − 150 = 75
        assert_eq!((pick.from, pick.to), (Some(1), Some(2)));
    }

    #[test]
    fn nothing_newer_is_a_hold_and_the_vault_holds_120() {
        let mut e = engine("geckos");
        e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(0, 0), ms(10));
        let (_, pick) = e.frame(ms(500), ms(500));
        assert_eq!(pick.hold, Some(HoldReason::AfterNewest));
        let mut e = engine("geckos");
        for i in 0..130 {
            e.push(&Sample::new(0, 0, Nanos::ZERO, Nanos::ZERO), packet(i, i64::from(i) * 10), ms(i64::from(i) * 10 + 5));
        }
        assert_eq!(e.vault.len(), 120);
        assert_eq!(e.vault.oldest(), Some(ms(100)));
    }
}
