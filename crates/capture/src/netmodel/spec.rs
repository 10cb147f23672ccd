//! A network model written as `key=value` pairs: parsing with the key and range at fault, and
//! printing in canonical form (every printed model parses back to the same one).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use super::files::is_mahimahi_text;
use crate::Error;
use crate::spec::{self, SpecError, format_duration, format_share};
use crate::time::{Nanos, parse_duration};

/// The distribution of the variable part of the delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    /// Exponential with mean `jitter` (queueing behind bursty cross traffic).
    Exp,
    /// Normal with standard deviation `jitter`, centred on 0 (total delay floored at 0).
    Normal,
    /// Pareto with mean `jitter` and shape `alpha`: a long tail.
    Pareto,
    /// Uniform on [0, 2·jitter].
    Uniform,
}

impl Dist {
    fn name(self) -> &'static str {
        match self {
            Self::Exp => "exp",
            Self::Normal => "normal",
            Self::Pareto => "pareto",
            Self::Uniform => "uniform",
        }
    }
}

/// A network model's parameters, as parsed from a model string or a profile.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    /// Constant one-way delay (propagation).
    pub delay: Nanos,
    /// Scale of the variable delay (mean, or standard deviation for `normal`).
    pub jitter: Nanos,
    /// Distribution of the variable delay.
    pub dist: Dist,
    /// Pareto shape for `dist=pareto` and the tail (> 1).
    pub alpha: f64,
    /// Share of packets whose variable delay comes from a Pareto long tail instead.
    pub tail: f64,
    /// Mean of that tail.
    pub tail_delay: Nanos,
    /// Long-run loss rate in [0, 1).
    pub loss: f64,
    /// Mean loss-burst length in packets (≥ 1, Gilbert–Elliott); `None`: independent loss.
    pub burst: Option<f64>,
    /// Share of packets held back so they arrive after later ones.
    pub reorder: f64,
    /// Mean extra delay of a reordered packet.
    pub reorder_delay: Nanos,
    /// Share of delivered packets delivered twice.
    pub duplicate: f64,
    /// Delay spikes (Wi-Fi scans, handovers) per second.
    pub spike_rate: f64,
    /// Extra delay at a spike's start; it decays linearly to 0 over `spike_len`.
    pub spike_delay: Nanos,
    /// How long a spike lasts.
    pub spike_len: Nanos,
    /// A route change: `(step, at)`: the base delay changes by `step` from time `at` on.
    pub route: Option<(Nanos, Nanos)>,
    /// Sender clock minus receiver clock (synthetic traces).
    pub offset: Nanos,
    /// Sender clock rate error in parts per million (synthetic traces).
    pub drift_ppm: f64,
    /// Receiver pause: `(length, at)`; packets arriving during it are read at its end.
    pub pause: Option<(Nanos, Nanos)>,
    /// A Mahimahi delivery trace for a bottleneck link.
    pub link: Option<PathBuf>,
    /// Bottleneck queue capacity in packets (drop-tail).
    pub queue: usize,
    /// A recorded delay series (one delay in ms per line) replacing the distribution.
    pub delays: Option<PathBuf>,
    /// Factor applied to the recorded series (e.g. 0.5 to turn RTTs into one-way delays).
    pub scale: f64,
    /// Random seed, when the model string carries one.
    pub seed: Option<u64>,
}

impl Default for ModelSpec {
    /// A perfect network: no delay, no loss.
    fn default() -> Self {
        Self {
            delay: Nanos::ZERO,
            jitter: Nanos::ZERO,
            dist: Dist::Exp,
            alpha: 2.5,
            tail: 0.0,
            tail_delay: Nanos::from_millis(100),
            loss: 0.0,
            burst: None,
            reorder: 0.0,
            reorder_delay: Nanos::from_millis(30),
            duplicate: 0.0,
            spike_rate: 0.0,
            spike_delay: Nanos::from_millis(200),
            spike_len: Nanos::from_millis(500),
            route: None,
            offset: Nanos::ZERO,
            drift_ppm: 0.0,
            pause: None,
            link: None,
            queue: 100,
            delays: None,
            scale: 1.0,
            seed: None,
        }
    }
}

/// The keys a model string may use, for error messages.
pub const KEYS: &str = "delay, jitter, dist, alpha, tail, tail_delay, loss, burst, reorder, \
    reorder_delay, duplicate, spike_rate, spike_delay, spike_len, route, offset, drift, pause, \
    link, queue, delays, scale, seed";

/// An error naming the model key at fault.
fn bad(key: &str, reason: SpecError) -> Error {
    Error::ModelKey {
        key: key.to_owned(),
        reason,
    }
}

/// A share in `[0, max_exclusive)`, naming the key when it is not.
fn share(key: &str, v: &str, max_exclusive: f64) -> Result<f64, Error> {
    spec::share_below(v, max_exclusive).map_err(|e| bad(key, e))
}

/// A duration at least `min`, naming the key when it is not.
fn duration(key: &str, v: &str, min: Nanos) -> Result<Nanos, Error> {
    spec::duration_at_least(v, min).map_err(|e| bad(key, e))
}

/// A number for which `ok` holds, naming the key when it does not.
fn number(key: &str, v: &str, ok: impl Fn(f64) -> bool, range: &str) -> Result<f64, Error> {
    spec::number(v, ok, range).map_err(|e| bad(key, e))
}

/// A malformed value of `key`: `'{v}' is not {expected}`.
fn malformed(key: &str, v: &str, expected: &str) -> Error {
    bad(
        key,
        SpecError::Malformed {
            value: v.to_owned(),
            expected: expected.to_owned(),
        },
    )
}

/// `STEP@AT` or `LEN@AT`, e.g. `+30ms@20s`, `3s@60s`.
fn at_pair(key: &str, v: &str, min_first: Nanos) -> Result<(Nanos, Nanos), Error> {
    let (a, b) = v
        .split_once('@')
        .ok_or_else(|| malformed(key, v, "of the form VALUE@TIME, e.g. 3s@60s"))?;
    let first = duration(key, a.trim_start_matches('+'), min_first)?;
    let at = duration(key, b, Nanos::ZERO)?;
    Ok((first, at))
}

impl ModelSpec {
    /// Adds a recorded link file: a Mahimahi delivery trace becomes the bottleneck `link`,
    /// anything else the recorded `delays` series.
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn add_recorded(&mut self, path: PathBuf) -> Result<(), Error> {
        let text = std::fs::read_to_string(&path)?;
        if is_mahimahi_text(&text) {
            self.link = Some(path);
        } else {
            self.delays = Some(path);
        }
        Ok(())
    }

    /// Applies `key=value` pairs over this spec. A key given twice takes its last value, so
    /// that a model string can be extended by appending (`$BASE,loss=5%`).
    ///
    /// # Errors
    /// An unknown key, a malformed value or one out of range, naming the key and the range.
    pub fn apply(&mut self, text: &str) -> Result<(), Error> {
        let pairs = spec::parse_pairs_allowing_repeats(text).map_err(|e| match &e {
            SpecError::NotAPair(item) => bad(item, e.clone()),
            _ => bad(text, e.clone()),
        })?;
        for (key, v) in pairs {
            match key {
                "delay" => self.delay = duration(key, v, Nanos::ZERO)?,
                "jitter" => self.jitter = duration(key, v, Nanos::ZERO)?,
                "dist" => {
                    self.dist = match v {
                        "exp" => Dist::Exp,
                        "normal" => Dist::Normal,
                        "pareto" => Dist::Pareto,
                        "uniform" => Dist::Uniform,
                        _ => {
                            return Err(malformed(
                                key,
                                v,
                                "a distribution (allowed: exp, normal, pareto, uniform)",
                            ));
                        }
                    }
                }
                "alpha" => self.alpha = number(key, v, |x| x > 1.0 && x <= 100.0, ">1 to 100")?,
                "tail" => self.tail = share(key, v, 1.0)?,
                "tail_delay" => self.tail_delay = duration(key, v, Nanos::ZERO)?,
                "loss" => self.loss = share(key, v, 1.0)?,
                "burst" => {
                    self.burst = Some(number(
                        key,
                        v,
                        |x| (1.0..=1e6).contains(&x),
                        "1 to 1000000 packets",
                    )?)
                }
                "reorder" => self.reorder = share(key, v, 1.0)?,
                "reorder_delay" => self.reorder_delay = duration(key, v, Nanos(1))?,
                "duplicate" => self.duplicate = share(key, v, 1.0)?,
                "spike_rate" => {
                    let v = v.strip_suffix("/s").unwrap_or(v);
                    self.spike_rate = number(
                        key,
                        v,
                        |x| (0.0..=1000.0).contains(&x),
                        "0 to 1000 per second",
                    )?;
                }
                "spike_delay" => self.spike_delay = duration(key, v, Nanos::ZERO)?,
                "spike_len" => self.spike_len = duration(key, v, Nanos(1))?,
                "route" => {
                    let negative = v.starts_with('-');
                    let (step, at) = at_pair(key, v.trim_start_matches('-'), Nanos::ZERO)?;
                    self.route = Some((if negative { -step } else { step }, at));
                }
                "offset" => {
                    self.offset =
                        parse_duration(v).map_err(|e| bad(key, SpecError::Duration(e)))?;
                }
                "drift" => {
                    let v = v.strip_suffix("ppm").unwrap_or(v);
                    self.drift_ppm =
                        number(key, v, |x| x.abs() <= 10_000.0, "-10000 to 10000 ppm")?;
                }
                "pause" => self.pause = Some(at_pair(key, v, Nanos(1))?),
                "link" => self.link = Some(PathBuf::from(v)),
                "queue" => {
                    self.queue = v
                        .parse()
                        .ok()
                        .filter(|q| (1..=1_000_000).contains(q))
                        .ok_or_else(|| {
                            bad(
                                key,
                                SpecError::OutOfRange {
                                    value: v.to_owned(),
                                    allowed: "1 to 1000000 packets".to_owned(),
                                },
                            )
                        })?;
                }
                "delays" => self.delays = Some(PathBuf::from(v)),
                "scale" => self.scale = number(key, v, |x| x > 0.0 && x <= 1000.0, ">0 to 1000")?,
                "seed" => {
                    self.seed = Some(v.parse().map_err(|_| malformed(key, v, "a whole number"))?);
                }
                other => {
                    return Err(Error::UnknownModelKey {
                        key: other.to_owned(),
                        known: KEYS,
                    });
                }
            }
        }
        Ok(())
    }

    /// Whether the spec uses receiver-side keys (clock, pause) that a relay cannot apply.
    pub fn has_receiver_keys(&self) -> bool {
        self.offset != Nanos::ZERO || self.drift_ppm != 0.0 || self.pause.is_some()
    }
}

impl FromStr for ModelSpec {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let mut spec = Self::default();
        spec.apply(text)?;
        Ok(spec)
    }
}

impl fmt::Display for ModelSpec {
    /// The canonical model string: every key that differs from the default, in a fixed order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = Self::default();
        let mut parts: Vec<String> = vec![format!("delay={}", format_duration(self.delay))];
        if self.jitter != d.jitter {
            parts.push(format!("jitter={}", format_duration(self.jitter)));
        }
        if self.dist != d.dist {
            parts.push(format!("dist={}", self.dist.name()));
        }
        if self.alpha != d.alpha {
            parts.push(format!("alpha={}", self.alpha));
        }
        if self.tail != d.tail {
            parts.push(format!("tail={}", format_share(self.tail)));
            parts.push(format!("tail_delay={}", format_duration(self.tail_delay)));
        }
        if self.loss != d.loss {
            parts.push(format!("loss={}", format_share(self.loss)));
        }
        if let Some(b) = self.burst {
            parts.push(format!("burst={b}"));
        }
        if self.reorder != d.reorder {
            parts.push(format!("reorder={}", format_share(self.reorder)));
            parts.push(format!(
                "reorder_delay={}",
                format_duration(self.reorder_delay)
            ));
        }
        if self.duplicate != d.duplicate {
            parts.push(format!("duplicate={}", format_share(self.duplicate)));
        }
        if self.spike_rate != d.spike_rate {
            parts.push(format!("spike_rate={}", self.spike_rate));
            parts.push(format!("spike_delay={}", format_duration(self.spike_delay)));
            parts.push(format!("spike_len={}", format_duration(self.spike_len)));
        }
        if let Some((step, at)) = self.route {
            let sign = if step < Nanos::ZERO { "-" } else { "+" };
            parts.push(format!(
                "route={sign}{}@{}",
                format_duration(step.abs()),
                format_duration(at)
            ));
        }
        if self.offset != d.offset {
            parts.push(format!("offset={}", format_duration(self.offset)));
        }
        if self.drift_ppm != d.drift_ppm {
            parts.push(format!("drift={}ppm", self.drift_ppm));
        }
        if let Some((len, at)) = self.pause {
            parts.push(format!(
                "pause={}@{}",
                format_duration(len),
                format_duration(at)
            ));
        }
        if let Some(p) = &self.link {
            parts.push(format!("link={}", p.display()));
            parts.push(format!("queue={}", self.queue));
        }
        if let Some(p) = &self.delays {
            parts.push(format!("delays={}", p.display()));
            if self.scale != d.scale {
                parts.push(format!("scale={}", self.scale));
            }
        }
        if let Some(s) = self.seed {
            parts.push(format!("seed={s}"));
        }
        f.write_str(&parts.join(","))
    }
}
