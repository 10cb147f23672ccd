//! Playout mode for discrete frames (audio, server input): each frame is played at its send
//! time plus the buffer delay, not at its arrival time (C21); a frame missing at its play time
//! is concealed, and one arriving after it is dropped as late (C22).

use std::collections::HashMap;

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

/// What happened to one frame slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlayoutEvent {
    /// Frame `seq` was played at local time `at`.
    Played {
        /// The frame's sequence number.
        seq: i64,
        /// Local play time.
        at: Nanos,
    },
    /// Frame `seq` was missing at `at` and concealed (an underrun, C22).
    Concealed {
        /// The frame's sequence number.
        seq: i64,
        /// Local play time of the slot.
        at: Nanos,
        /// Whether it arrived later (and was dropped as late) rather than never.
        arrived_late: bool,
    },
}

/// Plays one stream of frames with a fixed delay.
///
/// Slot `n`'s local play time is `send(n) − offset + delay` (C21), where `offset` maps local to
/// sender time (`sender = local + offset`). Missing frames' send times are interpolated from
/// their neighbours by sequence number. Duplicates play once.
pub fn playout_fixed(samples: &[Sample], delay: Nanos, offset: Nanos) -> Vec<PlayoutEvent> {
    let mut first_arrival: HashMap<i64, &Sample> = HashMap::new();
    for s in samples {
        first_arrival
            .entry(s.seq)
            .and_modify(|held| {
                if s.arrival < held.arrival {
                    *held = s;
                }
            })
            .or_insert(s);
    }
    let mut known: Vec<(i64, Nanos)> = first_arrival.values().map(|s| (s.seq, s.send)).collect();
    known.sort_unstable();
    let (Some(&(lo, _)), Some(&(hi, _))) = (known.first(), known.last()) else {
        return Vec::new();
    };
    let mut events = Vec::with_capacity((hi - lo + 1) as usize);
    let mut k = 0;
    for seq in lo..=hi {
        while k + 1 < known.len() && known[k + 1].0 <= seq {
            k += 1;
        }
        let send = match first_arrival.get(&seq) {
            Some(s) => s.send,
            None => {
                let (sa, ta) = known[k];
                let (sb, tb) = known[k + 1];
                ta + Nanos((tb - ta).as_nanos() * (seq - sa) / (sb - sa))
            }
        };
        let at = send - offset + delay;
        match first_arrival.get(&seq) {
            Some(s) if s.arrival <= at => events.push(PlayoutEvent::Played { seq, at }),
            Some(_) => events.push(PlayoutEvent::Concealed {
                seq,
                at,
                arrived_late: true,
            }),
            None => events.push(PlayoutEvent::Concealed {
                seq,
                at,
                arrived_late: false,
            }),
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: i64, send_ms: i64, arrival_ms: i64) -> Sample {
        Sample::new(
            0,
            seq,
            Nanos::from_millis(send_ms),
            Nanos::from_millis(arrival_ms),
        )
    }

    /// C21: sent every 20 ms, received intervals 35, −5, 40, 5 ms (out of order), delay 60 ms
    /// → played at 60, 80, 100, 120, 140 ms: an even 20 ms again.
    #[test]
    fn c21_playout_at_send_time_plus_delay() {
        let arrivals = [0, 35, 30, 70, 75];
        let samples: Vec<Sample> = (0..5)
            .map(|i| frame(i, i * 20, arrivals[i as usize]))
            .collect();
        let mut by_arrival = samples.clone();
        by_arrival.sort_by_key(|s| s.arrival);
        let events = playout_fixed(&by_arrival, Nanos::from_millis(60), Nanos::ZERO);
        let played: Vec<(i64, f64)> = events
            .iter()
            .map(|e| match e {
                PlayoutEvent::Played { seq, at } => (*seq, at.as_millis_f64()),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            played,
            vec![(0, 60.0), (1, 80.0), (2, 100.0), (3, 120.0), (4, 140.0)]
        );
    }

    /// C22: a frame missing at its play time is concealed; one arriving after it is late.
    #[test]
    fn c22_missing_frames_are_concealed_and_late_ones_dropped() {
        let samples = vec![frame(0, 0, 10), frame(1, 20, 95), frame(3, 60, 70)];
        let events = playout_fixed(&samples, Nanos::from_millis(60), Nanos::ZERO);
        assert_eq!(
            events,
            vec![
                PlayoutEvent::Played {
                    seq: 0,
                    at: Nanos::from_millis(60)
                },
                PlayoutEvent::Concealed {
                    seq: 1,
                    at: Nanos::from_millis(80),
                    arrived_late: true
                },
                PlayoutEvent::Concealed {
                    seq: 2,
                    at: Nanos::from_millis(100),
                    arrived_late: false
                },
                PlayoutEvent::Played {
                    seq: 3,
                    at: Nanos::from_millis(120)
                },
            ]
        );
    }
}

/// What a listener heard: counts over a playout run (C22, C23).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct PlayoutSummary {
    /// Frame slots played out (from the first to the last sequence number received).
    pub frames: u64,
    /// Slots played from a frame that arrived in time.
    pub played: u64,
    /// Slots concealed (repeated or interpolated): the frame was missing at its play time.
    pub concealed: u64,
    /// Of those, frames that never arrived.
    pub lost: u64,
    /// Of those, frames that arrived after their play time and were dropped.
    pub late: u64,
    /// `concealed / frames`.
    pub concealment_ratio: f64,
    /// `late / frames`.
    pub late_ratio: f64,
    /// The longest run of consecutive concealed slots: a "buffering…" stall (C23).
    pub max_consecutive_concealed: u64,
}

impl PlayoutSummary {
    /// Adds another stream's summary.
    pub fn merge(&mut self, o: &Self) {
        self.frames += o.frames;
        self.played += o.played;
        self.concealed += o.concealed;
        self.lost += o.lost;
        self.late += o.late;
        self.max_consecutive_concealed = self
            .max_consecutive_concealed
            .max(o.max_consecutive_concealed);
        if self.frames > 0 {
            self.concealment_ratio = self.concealed as f64 / self.frames as f64;
            self.late_ratio = self.late as f64 / self.frames as f64;
        }
    }
}

/// Folds playout events into a summary.
pub fn summarize(events: &[PlayoutEvent]) -> PlayoutSummary {
    let mut s = PlayoutSummary::default();
    let mut run = 0u64;
    for e in events {
        s.frames += 1;
        match e {
            PlayoutEvent::Played { .. } => {
                s.played += 1;
                run = 0;
            }
            PlayoutEvent::Concealed { arrived_late, .. } => {
                s.concealed += 1;
                if *arrived_late {
                    s.late += 1;
                } else {
                    s.lost += 1;
                }
                run += 1;
                s.max_consecutive_concealed = s.max_consecutive_concealed.max(run);
            }
        }
    }
    if s.frames > 0 {
        s.concealment_ratio = s.concealed as f64 / s.frames as f64;
        s.late_ratio = s.late as f64 / s.frames as f64;
    }
    s
}

#[cfg(test)]
mod input_buffer_tests {
    use super::*;

    fn input(tick: i64, arrival_ms: f64) -> Sample {
        // 60 Hz ticks: tick n is sent at n·16.667 ms.
        Sample::new(
            0,
            tick,
            Nanos((tick as f64 * 1e9 / 60.0) as i64),
            Nanos::from_millis_f64(arrival_ms),
        )
    }

    /// C24: a server holding 2 ticks of a player's input executes each at send + 2 ticks; an
    /// input that misses its tick is predicted (concealed, counted), a late one is dropped; a
    /// deeper buffer conceals less.
    #[test]
    fn c24_server_input_buffer_depth_trades_delay_for_misses() {
        // Transit 5 ms, except tick 3 (+30 ms: late at 2 ticks, in time at 3) and tick 6 (lost).
        let samples: Vec<Sample> = (0..10)
            .filter(|&t| t != 6)
            .map(|t| {
                input(
                    t,
                    t as f64 * 1000.0 / 60.0 + if t == 3 { 35.0 } else { 5.0 },
                )
            })
            .collect();
        let tick = Nanos((1e9 / 60.0) as i64);
        let two = summarize(&playout_fixed(&samples, tick * 2, Nanos::ZERO));
        assert_eq!((two.frames, two.played, two.late, two.lost), (10, 8, 1, 1));
        let three = summarize(&playout_fixed(&samples, tick * 3, Nanos::ZERO));
        assert_eq!((three.played, three.late, three.lost), (9, 0, 1));
        assert!(three.concealment_ratio < two.concealment_ratio);
    }

    /// C23: consecutive misses are one stall; the summary keeps the longest.
    #[test]
    fn c23_a_stall_is_the_longest_run_of_concealment() {
        let samples: Vec<Sample> = [0, 1, 5, 6]
            .iter()
            .map(|&t| input(t, t as f64 * 16.0))
            .collect();
        let s = summarize(&playout_fixed(
            &samples,
            Nanos::from_millis(40),
            Nanos::ZERO,
        ));
        assert_eq!((s.lost, s.max_consecutive_concealed), (3, 3));
    }
}
