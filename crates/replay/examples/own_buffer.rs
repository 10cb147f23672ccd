//! A game team's own buffer, written in Rust against jitterlab's public [`Preset`] and
//! [`Engine`] traits, swept beside the built-in presets on the same traffic.
//!
//! The buffer ("lag"): render a fixed `lag` behind the newest snapshot received, never
//! stepping backwards: a common home-made design that needs no clock sync. It keeps its samples
//! in jitterlab's [`SnapshotBuffer`] and chooses its own timeline. It is added to a
//! [`Registry`], so grids and policy strings name it (`lag:lag=100ms`) like any preset.
//!
//! `cargo run -p jitterlab-replay --example own_buffer` prints one row per configuration;
//! `crates/replay/tests/own_buffer.rs` runs the same sweep and checks it.

use std::sync::OnceLock;

use jitterlab_capture::testdata::snapshot_trace;
use jitterlab_capture::{Nanos, Sample};
use jitterlab_replay::grid::Grid;
use jitterlab_replay::policy::{Built, Key, duration_key, print_duration};
use jitterlab_replay::sweep::{self, Row, Shard, SweepTrace};
use jitterlab_replay::{
    Applied, BufferConfig, ClockMapping, DelayModel, Engine, FrameClock, Packet, Pick, Policy,
    Prepared, Preset, Registry, SnapshotBuffer, Stream, policy_key,
};

/// `lag:lag=100ms`: render `lag` behind the newest snapshot received.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Lag {
    /// How far behind the newest send time the display runs.
    pub(crate) lag: Nanos,
    /// The sample store (jitterlab's defaults: 120 ms gap budget, 32 samples).
    pub(crate) buffer: BufferConfig,
}

impl Default for Lag {
    fn default() -> Self {
        Self {
            lag: Nanos::from_millis(100),
            buffer: BufferConfig::default(),
        }
    }
}

impl Preset for Lag {
    const NAME: &'static str = "lag";
    // In a registry's default tuning grid, with these axes.
    const TUNE_AXES: &'static str = "lag = [\"50ms\", \"100ms\", \"150ms\"]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<Lag>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![policy_key!(Self, "lag", |c| c.lag, print_duration, |v| {
                duration_key(v, Nanos::ZERO)
            })]
        })
    }

    fn max_delay(&self) -> Nanos {
        self.lag
    }

    fn buffer(&self) -> Option<&BufferConfig> {
        Some(&self.buffer)
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn engine(&self) -> Built {
        Built::Own(Box::new(LagEngine {
            lag: self.lag,
            store: SnapshotBuffer::new(self.buffer.clone()),
            target: None,
        }))
    }
}

/// The buffer's runtime: a sample store and a timeline that only moves forward.
struct LagEngine {
    lag: Nanos,
    store: SnapshotBuffer,
    target: Option<Nanos>,
}

impl Engine for LagEngine {
    fn push(&mut self, _sample: &Sample, p: Packet, _at: Nanos) -> bool {
        self.store.offer(p) == jitterlab_replay::Push::Duplicate
    }

    fn frame(&mut self, _at: Nanos, now: Nanos) -> (Applied, Pick) {
        let wanted = self.store.newest_send().map(|n| n - self.lag);
        // Never backwards: a late newest (reordering) leaves the timeline where it was.
        let target = match (self.target, wanted) {
            (Some(t), Some(w)) => t.max(w),
            (t, w) => w.or(t).unwrap_or(now - self.lag),
        };
        self.target = Some(target);
        let applied = Applied {
            delay: now - target,
            target,
            frozen: false,
            scaled: false,
        };
        (applied, self.store.sample(target))
    }

    fn counters(&self) -> jitterlab_replay::buffer::Counters {
        self.store.counters()
    }

    fn newest_send(&self) -> Option<Nanos> {
        self.store.newest_send()
    }
}

/// The built-in presets with a user's preset added.
pub(crate) fn registry() -> Registry {
    let mut r = Registry::default();
    r.add::<Lag>();
    r
}

/// Sweeps `lag` beside `fixed`, `jitter` and the game presets over `seconds` of the
/// benchmark's 60 Hz Wi-Fi trace; returns the policies and the rows.
pub(crate) fn sweep(seconds: u64) -> (Vec<Policy>, Vec<Row>) {
    let r = registry();
    let mut grid = Grid::default();
    for axis in [
        "lag:lag=50ms|100ms|150ms",
        "fixed:delay=50ms|100ms|150ms",
        "jitter",
        "mirror",
        "geckos:server_fps=60",
        "lightyear",
        "n4e:network_tick_rate=60",
    ] {
        grid.add_cli(axis).expect("a valid axis");
    }
    let policies = grid
        .expand_in(&r, 100)
        .expect("the registry knows every name");
    let samples = snapshot_trace(seconds * 60);
    let traces = [SweepTrace {
        name: "wifi 60 Hz".into(),
        streams: vec![Prepared::new(&Stream::new(&samples))],
    }];
    let rows = sweep::run(
        &traces,
        &policies,
        &FrameClock::Fps(60.0),
        ClockMapping::Estimated,
        Shard::ALL,
        &|| {},
    )
    .expect("the sweep runs");
    (policies, rows)
}

#[allow(dead_code)]
fn main() {
    let (policies, rows) = sweep(60);
    println!("| policy | mean delay (ms) | hold ratio (%) |");
    println!("|---|---|---|");
    for row in &rows {
        let s = &row.summary;
        println!(
            "| `{}` | {} | {:.2} |",
            policies[row.config],
            s.mean_delay_ms
                .map_or("–".to_owned(), |d| format!("{d:.1}")),
            s.hold_ratio * 100.0
        );
    }
}
