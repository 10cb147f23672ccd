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
