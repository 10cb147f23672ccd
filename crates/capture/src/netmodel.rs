//! A seeded, user-space network model: what `jitterlab synth --model` generates traces with and
//! what the capture relay's `--impair` applies to live packets.
//!
//! A model is written as `key=value` pairs, e.g.
//! `delay=40ms,jitter=15ms,loss=2%,burst=4,reorder=1%,duplicate=0.5%,seed=7`
//! (the full grammar is in `docs/network-models.md`). Its parts compose: every delivered packet's
//! one-way delay is
//!
//! ```text
//! base (+ route step after its time) + variable part (distribution or recorded series)
//!      + spike (if one is under way) + reorder hold-back (for the unlucky few)
//!      [+ queueing at a recorded bottleneck link]
//! ```
//!
//! and loss is Gilbert–Elliott burst loss (or independent), plus tail drops at a full
//! bottleneck queue. Clock keys (`offset`, `drift`) and `pause` describe the receiver and only
//! apply to synthetic traces.

use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::Error;
use crate::rng::Rng;
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

/// Whether `text` looks like a Mahimahi delivery trace: whole milliseconds, one per line, never
/// decreasing, at least two lines. Anything else recorded (ping CSVs, delay lists) is a delay
/// series.
pub fn is_mahimahi_text(text: &str) -> bool {
    let mut last = 0u64;
    let mut lines = 0;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Ok(v) = line.parse::<u64>() else {
            return false;
        };
        if v < last {
            return false;
        }
        last = v;
        lines += 1;
    }
    lines > 1
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

/// An error about a file a model reads, at a one-based line if one is at fault.
fn model_file(what: &'static str, path: &Path, line: Option<usize>, reason: String) -> Error {
    Error::ModelFile {
        what,
        path: path.display().to_string(),
        line: line.map(|l| l as u64),
        reason,
    }
}

/// Reads a Mahimahi delivery trace: one millisecond timestamp per line, non-decreasing; each
/// line is one opportunity to deliver up to 1500 bytes. Returns the opportunities in ns.
///
/// # Errors
/// I/O errors, and a line that is not a whole number or goes backwards (naming the line).
pub fn read_mahimahi(path: &Path) -> Result<Vec<Nanos>, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| model_file("link trace", path, None, e.to_string()))?;
    let mut out = Vec::new();
    let mut prev = 0u64;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let ms: u64 = line.parse().map_err(|_| {
            model_file(
                "link trace",
                path,
                Some(i + 1),
                format!("'{line}' is not a whole number of milliseconds"),
            )
        })?;
        if ms < prev || ms > 1 << 40 {
            return Err(model_file(
                "link trace",
                path,
                Some(i + 1),
                format!("timestamp {ms} goes backwards or is absurd"),
            ));
        }
        prev = ms;
        out.push(Nanos::from_millis(ms as i64));
    }
    if out.is_empty() || prev == 0 {
        return Err(model_file(
            "link trace",
            path,
            None,
            "no delivery opportunity after 0 ms (the trace must span some time)".into(),
        ));
    }
    Ok(out)
}

/// Reads a recorded delay series: one delay in ms per line. A non-numeric first line is taken
/// as a header; in comma-separated lines the last field is the delay (e.g. `icmp_seq,rtt_ms`).
///
/// # Errors
/// I/O errors, and a malformed or negative value (naming the line).
pub fn read_delay_series(path: &Path) -> Result<Vec<Nanos>, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| model_file("delay series", path, None, e.to_string()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let field = line.rsplit(',').next().unwrap_or(line).trim();
        match field.parse::<f64>() {
            Ok(ms) if ms.is_finite() && ms >= 0.0 => out.push(Nanos::from_millis_f64(ms)),
            _ if i == 0 => continue, // a header row
            _ => {
                return Err(model_file(
                    "delay series",
                    path,
                    Some(i + 1),
                    format!("'{field}' is not a delay in ms (≥ 0)"),
                ));
            }
        }
    }
    if out.is_empty() {
        return Err(model_file("delay series", path, None, "no delays".into()));
    }
    Ok(out)
}

/// A drop-tail FIFO in front of a link whose capacity follows a Mahimahi trace (mm-link
/// semantics: the trace repeats; each opportunity drains up to 1500 bytes).
#[derive(Clone, Debug)]
struct Link {
    opportunities: Vec<Nanos>,
    period: Nanos,
    capacity: usize,
    /// The next opportunity (absolute index, counting repeats) and bytes left in it.
    next: u64,
    credit: u32,
    /// Departure times of packets still queued.
    queued: VecDeque<Nanos>,
    start: Option<Nanos>,
}

const MTU: u32 = 1500;

impl Link {
    fn opportunity(&self, k: u64) -> Nanos {
        let n = self.opportunities.len() as u64;
        let start = self.start.unwrap_or_default();
        start
            + Nanos(self.period.as_nanos() * (k / n) as i64)
            + self.opportunities[(k % n) as usize]
    }

    /// The departure time of a packet of `bytes` entering at `t`, or `None` when the queue is full.
    fn enqueue(&mut self, t: Nanos, bytes: u32) -> Option<Nanos> {
        if self.start.is_none() {
            self.start = Some(t);
        }
        while self.queued.front().is_some_and(|&d| d <= t) {
            self.queued.pop_front();
        }
        if self.queued.len() >= self.capacity {
            return None;
        }
        // An idle link skips the opportunities that passed unused before `t`.
        if self.queued.is_empty() {
            while self.opportunity(self.next) < t {
                self.next += 1;
                self.credit = MTU;
            }
        }
        let mut left = bytes.max(1);
        loop {
            let take = left.min(self.credit);
            left -= take;
            self.credit -= take;
            if left == 0 {
                let departure = self.opportunity(self.next);
                if self.credit == 0 {
                    self.next += 1;
                    self.credit = MTU;
                }
                self.queued.push_back(departure);
                return Some(departure);
            }
            self.next += 1;
            self.credit = MTU;
        }
    }
}

/// What the network did with one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Arrival times of the copies delivered: none when lost, two when duplicated.
    pub arrivals: [Option<Nanos>; 2],
    /// Lost to burst/random loss (as opposed to a full bottleneck queue).
    pub lost: bool,
    /// Dropped by a full bottleneck queue.
    pub queue_drop: bool,
}

/// A running network model: feed it packets in send order.
#[derive(Clone, Debug)]
pub struct Model {
    spec: ModelSpec,
    rng: Rng,
    bad: bool,
    to_good: f64,
    to_bad: f64,
    next_spike: Option<Nanos>,
    spike_start: Option<Nanos>,
    series: Vec<Nanos>,
    link: Option<Link>,
    count: u64,
}

impl Model {
    /// Builds a model, reading its link trace and delay series files.
    ///
    /// # Errors
    /// Unreadable or malformed trace files.
    pub fn new(spec: ModelSpec, seed: u64) -> Result<Self, Error> {
        let series = match &spec.delays {
            Some(p) => read_delay_series(p)?,
            None => Vec::new(),
        };
        let link = match &spec.link {
            Some(p) => {
                let opportunities = read_mahimahi(p)?;
                let period = *opportunities.last().unwrap_or(&Nanos::from_millis(1));
                Some(Link {
                    opportunities,
                    period,
                    capacity: spec.queue,
                    next: 0,
                    credit: MTU,
                    queued: VecDeque::new(),
                    start: None,
                })
            }
            None => None,
        };
        // Gilbert–Elliott: the bad state loses everything; P(bad→good) = 1/burst, and
        // P(good→bad) makes the stationary share of the bad state equal the loss rate.
        let (to_good, to_bad) = match spec.burst {
            Some(b) => {
                let r = 1.0 / b;
                (r, spec.loss * r / (1.0 - spec.loss))
            }
            None => (1.0, spec.loss),
        };
        Ok(Self {
            rng: Rng::new(seed ^ 0x6a09_e667_f3bc_c909),
            bad: false,
            to_good,
            to_bad,
            next_spike: None,
            spike_start: None,
            series,
            link,
            count: 0,
            spec,
        })
    }

    /// The parameters.
    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    fn variable_delay(&mut self, index: u64) -> Nanos {
        if !self.series.is_empty() {
            let d = self.series[(index % self.series.len() as u64) as usize];
            return Nanos::from_secs_f64(d.as_secs_f64() * self.spec.scale);
        }
        let s = &self.spec;
        if s.tail > 0.0 && self.rng.chance(s.tail) {
            return Nanos::from_secs_f64(pareto(
                &mut self.rng,
                s.tail_delay.as_secs_f64(),
                s.alpha,
            ));
        }
        let j = s.jitter.as_secs_f64();
        let secs = match s.dist {
            Dist::Exp => self.rng.exponential(j),
            Dist::Normal => j * self.rng.normal(),
            Dist::Pareto => pareto(&mut self.rng, j, s.alpha),
            Dist::Uniform => 2.0 * j * self.rng.uniform(),
        };
        Nanos::from_secs_f64(secs)
    }

    fn spike(&mut self, t: Nanos) -> Nanos {
        let s = &self.spec;
        if s.spike_rate <= 0.0 {
            return Nanos::ZERO;
        }
        let mean_gap = 1.0 / s.spike_rate;
        let mut next = match self.next_spike {
            Some(n) => n,
            None => t + Nanos::from_secs_f64(self.rng.exponential(mean_gap)),
        };
        while next <= t {
            self.spike_start = Some(next);
            next += Nanos::from_secs_f64(self.rng.exponential(mean_gap));
        }
        self.next_spike = Some(next);
        match self.spike_start {
            Some(start) if t - start < s.spike_len => {
                let left = 1.0 - (t - start).as_nanos() as f64 / s.spike_len.as_nanos() as f64;
                Nanos::from_secs_f64(s.spike_delay.as_secs_f64() * left)
            }
            _ => Nanos::ZERO,
        }
    }

    /// Sends one packet of `bytes` at local time `t` (packets must come in send order).
    pub fn transmit(&mut self, t: Nanos, bytes: u32) -> Outcome {
        let index = self.count;
        self.count += 1;
        // Draw every random number each time so a change in one part does not shift the others.
        let was_bad = self.bad;
        self.bad = if was_bad {
            !self.rng.chance(self.to_good)
        } else {
            self.rng.chance(self.to_bad)
        };
        let variable = self.variable_delay(index);
        let spike = self.spike(t);
        let reorder = self.rng.chance(self.spec.reorder);
        let reorder_extra = Nanos::from_secs_f64(
            self.spec.reorder_delay.as_secs_f64() * (0.5 + self.rng.uniform()),
        );
        let dup = self.rng.chance(self.spec.duplicate);
        let dup_extra = Nanos::from_secs_f64(self.rng.exponential(0.002));
        let lost = if self.spec.burst.is_some() {
            self.bad
        } else {
            self.rng.chance(self.spec.loss)
        };
        if lost {
            return Outcome {
                arrivals: [None, None],
                lost: true,
                queue_drop: false,
            };
        }
        let mut base = self.spec.delay;
        if let Some((step, at)) = self.spec.route
            && t >= at
        {
            base += step;
        }
        let mut depart = t;
        if let Some(link) = self.link.as_mut() {
            match link.enqueue(t, bytes) {
                Some(d) => depart = d,
                None => {
                    return Outcome {
                        arrivals: [None, None],
                        lost: false,
                        queue_drop: true,
                    };
                }
            }
        }
        let mut delay = base + variable + spike;
        if reorder {
            delay += reorder_extra;
        }
        let arrival = depart + delay.max(Nanos::ZERO);
        Outcome {
            arrivals: [Some(arrival), dup.then_some(arrival + dup_extra)],
            lost: false,
            queue_drop: false,
        }
    }
}

/// Pareto with the given mean and shape `alpha > 1`: scale `x_m = mean·(α−1)/α`.
fn pareto(rng: &mut Rng, mean: f64, alpha: f64) -> f64 {
    let xm = mean * (alpha - 1.0) / alpha;
    xm / (1.0 - rng.uniform()).powf(1.0 / alpha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_issue_examples_and_prints_canonically() {
        let s: ModelSpec =
            "delay=40ms,jitter=15ms,loss=2%,burst=4,reorder=1%,duplicate=0.5%,seed=7"
                .parse()
                .unwrap();
        assert_eq!(s.delay, Nanos::from_millis(40));
        assert_eq!(s.loss, 0.02);
        assert_eq!(s.burst, Some(4.0));
        assert_eq!(s.seed, Some(7));
        assert_eq!(s.to_string().parse::<ModelSpec>().unwrap(), s);
        let s: ModelSpec =
            "delay=40ms,jitter=10ms,loss=5%,burst=4,drift=200ppm,pause=3s@60s,route=-5ms@10s"
                .parse()
                .unwrap();
        assert_eq!(s.drift_ppm, 200.0);
        assert_eq!(s.pause, Some((Nanos::from_secs(3), Nanos::from_secs(60))));
        assert_eq!(
            s.route,
            Some((Nanos::from_millis(-5), Nanos::from_secs(10)))
        );
        assert_eq!(s.to_string().parse::<ModelSpec>().unwrap(), s);
    }

    #[test]
    fn a_tiny_share_prints_back_as_itself_and_a_later_key_wins() {
        // The printing twin of the round-trip bug `policy_parse` found: 7e-115 once printed as
        // `loss=0%`.
        let s = ModelSpec {
            loss: 7e-115,
            ..ModelSpec::default()
        };
        assert_eq!(s.to_string().parse::<ModelSpec>().unwrap(), s);
        let s: ModelSpec = "loss=1%,delay=5ms,loss=2%".parse().unwrap();
        assert_eq!(s.loss, 0.02);
    }

    #[test]
    fn out_of_range_values_name_the_key() {
        let e = |t: &str| t.parse::<ModelSpec>().unwrap_err().to_string();
        assert!(e("loss=100%").contains("loss"));
        assert!(e("loss=1.5").contains("out of range"));
        assert!(e("delay=-1ms").contains("delay"));
        assert!(e("burst=0.5").contains("burst"));
        assert!(e("alpha=1").contains("alpha"));
        assert!(e("colour=red").contains("unknown key"));
        assert!(e("pause=3s").contains("VALUE@TIME"));
    }

    #[test]
    fn an_idle_link_delivers_at_the_next_opportunity_and_a_full_queue_drops() {
        let mut link = Link {
            opportunities: vec![Nanos::from_millis(10), Nanos::from_millis(20)],
            period: Nanos::from_millis(20),
            capacity: 2,
            next: 0,
            credit: MTU,
            queued: VecDeque::new(),
            start: None,
        };
        // Start at t=0: opportunities at 10, 20, 30, 40, ...
        assert_eq!(
            link.enqueue(Nanos::ZERO, 1000),
            Some(Nanos::from_millis(10))
        );
        // 500 bytes left in the 10 ms opportunity, so a 400-byte packet shares it.
        assert_eq!(link.enqueue(Nanos::ZERO, 400), Some(Nanos::from_millis(10)));
        // Queue full (2 waiting until 10 ms): dropped.
        assert_eq!(link.enqueue(Nanos::from_millis(1), 100), None);
        // After they leave, a 2000-byte packet needs two opportunities: 20 ms and 30 ms.
        assert_eq!(
            link.enqueue(Nanos::from_millis(15), 2000),
            Some(Nanos::from_millis(30))
        );
    }
}

#[cfg(test)]
mod file_tests {
    use super::*;

    #[test]
    fn malformed_link_and_delay_files_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("link");
        std::fs::write(&p, "0\n5\nfive\n").unwrap();
        let e = read_mahimahi(&p).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("five"), "{e}");
        std::fs::write(&p, "5\n4\n").unwrap();
        assert!(
            read_mahimahi(&p)
                .unwrap_err()
                .to_string()
                .contains("line 2")
        );
        std::fs::write(&p, "0\n0\n").unwrap();
        assert!(read_mahimahi(&p).unwrap_err().to_string().contains("span"));
        std::fs::write(&p, "icmp_seq,rtt_ms\n1,20.5\n2,-3\n").unwrap();
        let e = read_delay_series(&p).unwrap_err().to_string();
        assert!(e.contains("line 3"), "{e}");
        std::fs::write(&p, "icmp_seq,rtt_ms\n1,20.5\n2,30\n").unwrap();
        assert_eq!(
            read_delay_series(&p).unwrap(),
            vec![Nanos::from_micros(20_500), Nanos::from_millis(30)]
        );
        assert!(
            Model::new(
                format!("link={}", dir.path().join("missing").display())
                    .parse()
                    .unwrap(),
                1
            )
            .is_err()
        );
    }

    #[test]
    fn a_recorded_delay_series_is_replayed_per_packet_and_scaled() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rtt.csv");
        std::fs::write(&p, "icmp_seq,rtt_ms\n1,20\n2,40\n3,100\n").unwrap();
        let spec: ModelSpec = format!("delay=5ms,delays={},scale=0.5", p.display())
            .parse()
            .unwrap();
        let mut m = Model::new(spec, 1).unwrap();
        let got: Vec<Nanos> = (0..4)
            .map(|i| {
                let t = Nanos::from_millis(i * 50);
                m.transmit(t, 100).arrivals[0].unwrap() - t
            })
            .collect();
        let ms = Nanos::from_millis;
        assert_eq!(got, vec![ms(15), ms(25), ms(55), ms(15)]);
    }
}
