//! A preset added from outside the crate in one file: a delay of `ticks` send intervals at
//! `rate` Hz on jitterlab's snapshot buffer. It parses and prints through its key table,
//! expands from a grid through a [`Registry`] that knows it, and sweeps beside the built-in
//! presets, giving exactly what the equivalent `fixed` delay gives.

use std::sync::OnceLock;

use jitterlab_capture::Nanos;
use jitterlab_capture::testdata::snapshot_trace;
use jitterlab_replay::grid::Grid;
use jitterlab_replay::policy::{Key, KeyError, duration_key, print, print_duration};
use jitterlab_replay::sweep::{self, Shard, SweepTrace};
use jitterlab_replay::{
    BufferConfig, ClockMapping, DelayModel, FrameClock, Policy, Prepared, Preset, Registry, Stream,
    policy_key,
};

/// `toy:ticks=2,rate=20`: a fixed delay of `ticks / rate`.
#[derive(Clone, Debug, PartialEq)]
struct Toy {
    ticks: f64,
    rate: f64,
    buffer: BufferConfig,
}

impl Default for Toy {
    fn default() -> Self {
        Self {
            ticks: 2.0,
            rate: 20.0,
            buffer: BufferConfig::default(),
        }
    }
}

impl Toy {
    fn delay(&self) -> Nanos {
        Nanos::from_secs_f64(self.ticks / self.rate)
    }
}

impl Preset for Toy {
    const NAME: &'static str = "toy";
    const TUNE_AXES: &'static str = "ticks = [1, 2, 3]\n";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<Toy>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                policy_key!(Self, "ticks", |c| c.ticks, print, number),
                policy_key!(Self, "rate", |c| c.rate, print, number),
                policy_key!(Self, "max_gap", |c| c.buffer.max_gap, print_duration, |v| {
                    duration_key(v, Nanos(1))
                }),
            ]
        })
    }

    fn validate(&self) -> Result<(), KeyError> {
        if self.rate > 0.0 && self.ticks >= 0.0 {
            Ok(())
        } else {
            Err(KeyError {
                key: "rate",
                reason: "ticks ≥ 0 and rate > 0".into(),
            })
        }
    }

    fn max_delay(&self) -> Nanos {
        self.delay()
    }

    fn buffer(&self) -> Option<&BufferConfig> {
        Some(&self.buffer)
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Fixed(self.delay())
    }
}

fn number(v: &str) -> Result<f64, String> {
    v.parse().map_err(|_| format!("'{v}' is not a number"))
}

fn registry() -> Registry {
    let mut r = Registry::default();
    r.add::<Toy>();
    r
}

#[test]
fn a_preset_from_one_file_parses_prints_and_refuses_through_its_key_table() {
    let r = registry();
    let p = r.parse("toy:ticks=3,rate=30").unwrap();
    assert_eq!(p.name(), "toy");
    assert_eq!(p.to_string(), "toy:ticks=3,rate=30,max_gap=120ms");
    assert_eq!(r.parse(&p.to_string()).unwrap(), p);
    assert_eq!(p.config::<Toy>().unwrap().delay(), Nanos::from_millis(100));
    let err = r.parse("toy:delay=1ms").unwrap_err().to_string();
    assert!(
        err.contains("unknown key (allowed: ticks, rate, max_gap)"),
        "{err}"
    );
    assert!(
        r.parse("toy:rate=0")
            .unwrap_err()
            .to_string()
            .contains("rate > 0")
    );
    // The built-in registry does not know it; the built-in presets are all still there.
    assert!("toy".parse::<Policy>().is_err());
    assert!(Policy::NAMES.iter().all(|n| r.names().contains(n)));
}

#[test]
fn a_preset_from_one_file_sweeps_beside_the_built_in_ones() {
    let r = registry();
    let mut grid = Grid::default();
    grid.add_cli("toy:ticks=1|2|3").unwrap();
    grid.add_cli("fixed:delay=50ms|100ms|150ms").unwrap();
    let policies = grid.expand_in(&r, 100).unwrap();
    assert_eq!(policies.len(), 6);
    // Without the registry, the grid is refused before any work.
    assert!(grid.expand(100).is_err());

    let samples = snapshot_trace(3_000);
    let traces = [SweepTrace {
        name: "synthetic".into(),
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
    .unwrap();
    assert_eq!(rows.len(), 6);
    let summary = |config: usize| &rows.iter().find(|r| r.config == config).unwrap().summary;
    // ticks / 20 Hz is the same delay as the fixed configuration beside it: the same replay.
    for k in 0..3 {
        assert_eq!(policies[k].name(), "toy");
        assert_eq!(
            summary(k),
            summary(k + 3),
            "{} vs {}",
            policies[k],
            policies[k + 3]
        );
        assert!(summary(k).frames > 0);
    }
    assert!(summary(0).mean_delay_ms < summary(2).mean_delay_ms);
    // The default tuning grid of a registry with the preset includes its axes.
    let tune_grid = jitterlab_replay::grid::tune_grid_of(&r, None).unwrap();
    assert!(tune_grid.axes.iter().any(|a| a.policy == "toy"));
}
