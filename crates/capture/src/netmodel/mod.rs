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
//!
//! [`ModelSpec`] (the `spec` module) is the model as written, `files` reads the recorded link
//! files it may name, and [`Model`] applies it packet by packet.

mod files;
mod spec;

pub use files::{is_mahimahi_text, read_delay_series, read_mahimahi};
pub use spec::{Dist, KEYS, ModelSpec};

use std::collections::VecDeque;

use crate::Error;
use crate::rng::Rng;
use crate::time::Nanos;

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
