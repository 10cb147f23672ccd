//! libwebrtc's video timing: when a frame is rendered and how the playout delay moves.
//!
//! Follows `modules/video_coding/timing/timing.cc` (`VCMTiming`),
//! `timestamp_extrapolator.cc` and `decode_time_percentile_filter.cc` (libwebrtc as mirrored
//! in `webrtc-sdk/webrtc` at `cd6792e`, October 2024). A frame's render time is the local
//! time its 90 kHz timestamp is expected to complete ([`TimestampExtrapolator`]) plus the
//! current delay, kept within the min and max playout delay; the decoder is handed the frame
//! the estimated decode time and the render delay before that. The current delay follows the
//! target `max(min playout, jitter + decode time + render delay)`:
//!
//! - in the current receive pipeline (`VideoStreamBufferController`) through
//!   [`Timing::update_current_delay_late`]: a frame decoded later than planned adds its
//!   lateness (up to the target), an on-time one sets the delay down to the target;
//! - in the legacy one (`VCMReceiver`) through [`Timing::update_current_delay_slewed`]: toward
//!   the target by at most 100 ms per second of media (`kDelayMaxChangeMsPerS`).
//!
//! Times are whole microseconds inside, as libwebrtc's `Timestamp` holds them. Departures:
//! timestamps are already extended past wrap-around (no unwrapping), a timestamp step
//! backwards leaves the slewed delay alone (libwebrtc subtracts unsigned timestamps and so
//! relies on the wrap), and a [`Timing::reset`] keeps the configured render delay and min
//! playout delay (libwebrtc restores its defaults and expects the next frame's playout-delay
//! extension to set them again).

use std::collections::VecDeque;

use jitterlab_capture::Nanos;

use super::jitter::{ms_to_us, round_ms, us};

/// No complete frame for this long resets the extrapolator, µs.
const EXTRAPOLATOR_RESET_US: i64 = 10_000_000;
/// Updates before the extrapolator trusts its fit (`kStartUpFilterDelayInPackets`).
const STARTUP_UPDATES: u32 = 2;
/// The CUSUM delay-change detector: alarm threshold, drift and error cap, in 90 kHz ticks.
const ALARM_THRESHOLD: f64 = 60e3;
const ACC_DRIFT: f64 = 6600.0;
const ACC_MAX_ERROR: f64 = 7000.0;
/// The offset's variance after a reset or a detected delay change.
const P11: f64 = 1e10;

/// Maps 90 kHz timestamps to the local time their frames complete: a recursive least-squares
/// fit of timestamp against local time (`TimestampExtrapolator`), re-opened by a CUSUM
/// detector when the network delay changes suddenly.
#[derive(Clone, Debug, PartialEq)]
pub struct TimestampExtrapolator {
    start_us: i64,
    prev_us: i64,
    first_ts: Option<i64>,
    prev_ts: Option<i64>,
    w: [f64; 2],
    p: [[f64; 2]; 2],
    updates: u32,
    detector_pos: f64,
    detector_neg: f64,
}

impl TimestampExtrapolator {
    /// An extrapolator starting at local time `start`.
    pub fn new(start: Nanos) -> Self {
        let start = us(start);
        Self {
            start_us: start,
            prev_us: start,
            first_ts: None,
            prev_ts: None,
            w: [90.0, 0.0],
            p: [[1.0, 0.0], [0.0, P11]],
            updates: 0,
            detector_pos: 0.0,
            detector_neg: 0.0,
        }
    }

    /// Feeds a frame with 90 kHz timestamp `ts90` completing at `now`. A timestamp older than
    /// the newest is left out of the fit.
    pub fn update(&mut self, now: Nanos, ts90: i64) {
        let now_us = us(now);
        if now_us - self.prev_us > EXTRAPOLATOR_RESET_US {
            *self = Self::new(now);
        } else {
            self.prev_us = now_us;
        }
        // Relative to the start, so that the matrices stay well scaled.
        let t_ms = round_ms(now_us - self.start_us) as f64;
        let first = *self.first_ts.get_or_insert_with(|| {
            self.w[1] = -self.w[0] * t_ms;
            ts90
        });
        let residual = (ts90 - first) as f64 - t_ms * self.w[0] - self.w[1];
        if self.delay_change(residual) && self.updates >= STARTUP_UPDATES {
            // A sudden change of the network delay: let the offset move again.
            self.p[1][1] = P11;
        }
        if self.prev_ts.is_some_and(|p| ts90 < p) {
            return;
        }
        let k0 = self.p[0][0] * t_ms + self.p[0][1];
        let k1 = self.p[1][0] * t_ms + self.p[1][1];
        let tpt = 1.0 + t_ms * k0 + k1;
        let (k0, k1) = (k0 / tpt, k1 / tpt);
        self.w[0] += k0 * residual;
        self.w[1] += k1 * residual;
        let p00 = self.p[0][0] - (k0 * t_ms * self.p[0][0] + k0 * self.p[1][0]);
        let p01 = self.p[0][1] - (k0 * t_ms * self.p[0][1] + k0 * self.p[1][1]);
        self.p[1][0] -= k1 * t_ms * self.p[0][0] + k1 * self.p[1][0];
        self.p[1][1] -= k1 * t_ms * self.p[0][1] + k1 * self.p[1][1];
        self.p[0][0] = p00;
        self.p[0][1] = p01;
        self.prev_ts = Some(ts90);
        self.updates = (self.updates + 1).min(STARTUP_UPDATES);
    }

    /// The local time a frame with timestamp `ts90` completes, if any frame has been seen.
    /// Before two updates, the last frame's time plus the timestamp step at 90 ticks per ms.
    pub fn local_time(&self, ts90: i64) -> Option<Nanos> {
        let first = self.first_ts?;
        let at_us = if self.updates < STARTUP_UPDATES {
            let prev = self.prev_ts.unwrap_or(first);
            self.prev_us + ms_to_us((ts90 - prev) as f64 / 90.0)
        } else if self.w[0] < 1e-3 {
            self.start_us
        } else {
            let ms = (((ts90 - first) as f64 - self.w[1]) / self.w[0] + 0.5) as i64;
            self.start_us + ms.saturating_mul(1_000)
        };
        Some(Nanos::from_micros(at_us))
    }

    /// Two-sided CUSUM on the residual (ticks): true when the accumulated drift crosses the
    /// alarm threshold (and then starts again).
    fn delay_change(&mut self, error: f64) -> bool {
        let error = error.clamp(-ACC_MAX_ERROR, ACC_MAX_ERROR);
        self.detector_pos = (self.detector_pos + error - ACC_DRIFT).max(0.0);
        self.detector_neg = (self.detector_neg + error + ACC_DRIFT).min(0.0);
        if self.detector_pos > ALARM_THRESHOLD || self.detector_neg < -ALARM_THRESHOLD {
            self.detector_pos = 0.0;
            self.detector_neg = 0.0;
            return true;
        }
        false
    }
}

/// The decode time the timing plans for: the 95th percentile of the decode times of the last
/// 10 s, the first 5 ignored (`DecodeTimePercentileFilter`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DecodeTimeFilter {
    ignored: u32,
    /// (decode ms, sample time ms), oldest first.
    history: VecDeque<(i64, i64)>,
    /// The same decode times, sorted.
    sorted: Vec<i64>,
}

impl DecodeTimeFilter {
    /// Samples ignored at the start.
    const IGNORED: u32 = 5;
    /// The window, ms.
    const WINDOW_MS: i64 = 10_000;

    /// Adds a frame's decode time (ms) measured at `now_ms`.
    pub fn add(&mut self, decode_ms: i64, now_ms: i64) {
        if self.ignored < Self::IGNORED {
            self.ignored += 1;
            return;
        }
        let at = self.sorted.partition_point(|&x| x <= decode_ms);
        self.sorted.insert(at, decode_ms);
        self.history.push_back((decode_ms, now_ms));
        while let Some(&(d, t)) = self.history.front() {
            if now_ms - t <= Self::WINDOW_MS {
                break;
            }
            self.history.pop_front();
            // Equal values are interchangeable: the last of them is the cheapest to remove.
            let end = self.sorted.partition_point(|&x| x <= d);
            if end > 0 && self.sorted[end - 1] == d {
                self.sorted.remove(end - 1);
            }
        }
    }

    /// The 95th percentile (index `⌊0.95 (n − 1)⌋` in float, as libwebrtc's
    /// `PercentileFilter`), 0 when empty.
    pub fn required_ms(&self) -> i64 {
        match self.sorted.len() {
            0 => 0,
            n => self.sorted[(0.95_f32 * (n - 1) as f32) as usize],
        }
    }
}

/// `VCMTiming`: the render time of each frame and the delays behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    extrapolator: TimestampExtrapolator,
    decode: DecodeTimeFilter,
    render_delay_us: i64,
    min_playout_us: i64,
    max_playout_us: i64,
    jitter_us: i64,
    current_us: i64,
    prev_ts: i64,
    min_pacing_us: i64,
    last_decode_scheduled_us: i64,
}

impl Timing {
    /// libwebrtc's render delay (`kDefaultRenderDelay`).
    pub const RENDER_DELAY: Nanos = Nanos::from_millis(10);
    /// The legacy current-delay slew, per second of media (`kDelayMaxChangeMsPerS`).
    pub const MAX_CHANGE_PER_SECOND: Nanos = Nanos::from_millis(100);
    /// The low-latency renderer's default pacing between decodes
    /// (`kZeroPlayoutDelayDefaultMinPacing`).
    pub const MIN_PACING: Nanos = Nanos::from_millis(8);
    /// A max playout delay at or below this with a zero min selects the low-latency renderer
    /// (`kLowLatencyStreamMaxPlayoutDelayThreshold`).
    pub const LOW_LATENCY_MAX: Nanos = Nanos::from_millis(500);

    /// Timing at local time `now` with libwebrtc's defaults: render delay 10 ms, playout delay
    /// from 0 to 10 s, pacing 8 ms.
    pub fn new(now: Nanos) -> Self {
        Self {
            extrapolator: TimestampExtrapolator::new(now),
            decode: DecodeTimeFilter::default(),
            render_delay_us: us(Self::RENDER_DELAY),
            min_playout_us: 0,
            max_playout_us: 10_000_000,
            jitter_us: 0,
            current_us: 0,
            prev_ts: 0,
            min_pacing_us: us(Self::MIN_PACING),
            last_decode_scheduled_us: 0,
        }
    }

    /// Starts again at `now` (after bad render timing): the extrapolator, decode times,
    /// jitter and current delay; the configured delays stay.
    pub fn reset(&mut self, now: Nanos) {
        self.extrapolator = TimestampExtrapolator::new(now);
        self.decode = DecodeTimeFilter::default();
        self.jitter_us = 0;
        self.current_us = 0;
        self.prev_ts = 0;
    }

    /// Sets the render delay.
    pub fn set_render_delay(&mut self, d: Nanos) -> &mut Self {
        self.render_delay_us = us(d);
        self
    }

    /// Sets the min playout delay.
    pub fn set_min_playout_delay(&mut self, d: Nanos) -> &mut Self {
        self.min_playout_us = us(d);
        self
    }

    /// Sets the max playout delay.
    pub fn set_max_playout_delay(&mut self, d: Nanos) -> &mut Self {
        self.max_playout_us = us(d);
        self
    }

    /// Sets the low-latency renderer's pacing between decodes (`WebRTC-ZeroPlayoutDelay`).
    pub fn set_min_pacing(&mut self, d: Nanos) -> &mut Self {
        self.min_pacing_us = us(d);
        self
    }

    /// Sets the jitter delay; the first one also becomes the current delay.
    pub fn set_jitter_delay(&mut self, d: Nanos) {
        let d = us(d);
        if d != self.jitter_us {
            self.jitter_us = d;
            if self.current_us == 0 {
                self.current_us = d;
            }
        }
    }

    /// A frame with 90 kHz timestamp `ts90` completed at `now`.
    pub fn incoming_timestamp(&mut self, ts90: i64, now: Nanos) {
        self.extrapolator.update(now, ts90);
    }

    /// A frame took `decode` to decode, finishing at `now`.
    pub fn stop_decode_timer(&mut self, decode: Nanos, now: Nanos) {
        self.decode.add(round_ms(us(decode)), round_ms(us(now)));
    }

    /// The decode time planned for.
    pub fn max_decode_time(&self) -> Nanos {
        Nanos::from_millis(self.decode.required_ms())
    }

    /// The target delay: `max(min playout, jitter + decode time + render delay)`.
    pub fn target_delay(&self) -> Nanos {
        Nanos::from_micros(self.target_us())
    }

    fn target_us(&self) -> i64 {
        self.min_playout_us
            .max(self.jitter_us + self.decode.required_ms() * 1_000 + self.render_delay_us)
    }

    /// The current delay.
    pub fn current_delay(&self) -> Nanos {
        Nanos::from_micros(self.current_us)
    }

    /// The jitter delay last set.
    pub fn jitter_delay(&self) -> Nanos {
        Nanos::from_micros(self.jitter_us)
    }

    /// Whether frames are rendered as soon as decoded: a zero min playout delay and a max of
    /// at most 500 ms (the RTP playout-delay extension's low-latency mode).
    pub fn low_latency(&self) -> bool {
        self.min_playout_us == 0 && self.max_playout_us <= us(Self::LOW_LATENCY_MAX)
    }

    /// The render time of a frame with timestamp `ts90` asked for at `now`: `None` for "as
    /// soon as decoded" (low latency), else the extrapolated completion time (or `now`, when
    /// nothing is known) plus the current delay within the min and max playout delay.
    pub fn render_time(&self, ts90: i64, now: Nanos) -> Option<Nanos> {
        if self.low_latency() {
            return None;
        }
        let complete = self.extrapolator.local_time(ts90).unwrap_or(now);
        let delay = self.current_us.clamp(
            self.min_playout_us,
            self.max_playout_us.max(self.min_playout_us),
        );
        Some(complete + Nanos::from_micros(delay))
    }

    /// How long the decoder may wait before a frame rendered at `render` must be decoded:
    /// render time − now − decode time − render delay. For low-latency frames, the pacing
    /// since the last decode (zero when too many frames are queued); with a max playout delay
    /// of zero, far negative (libwebrtc's render time 0).
    pub fn max_waiting_time(&self, render: Option<Nanos>, now: Nanos, too_many: bool) -> Nanos {
        let now_us = us(now);
        match render {
            None if self.min_pacing_us > 0
                && self.min_playout_us == 0
                && self.max_playout_us > 0 =>
            {
                if too_many {
                    return Nanos::ZERO;
                }
                let earliest = self.last_decode_scheduled_us + self.min_pacing_us;
                Nanos::from_micros((earliest - now_us).max(0))
            }
            None => Nanos::MIN,
            Some(r) => Nanos::from_micros(
                us(r) - now_us - self.decode.required_ms() * 1_000 - self.render_delay_us,
            ),
        }
    }

    /// A frame was released for decoding at `now`.
    pub fn set_last_decode_scheduled(&mut self, now: Nanos) {
        self.last_decode_scheduled_us = us(now);
    }

    /// The current pipeline's delay update, after a frame planned for `render` was decoded at
    /// `decoded`: its lateness `decoded − render + decode time + render delay`, if not
    /// negative (in whole ms), is added up to the target; past the target the delay is the
    /// target.
    pub fn update_current_delay_late(&mut self, render: Option<Nanos>, decoded: Nanos) {
        let target = self.target_us();
        let Some(render) = render else {
            // Render time 0 in libwebrtc: any frame is "late", the delay becomes the target.
            self.current_us = target;
            return;
        };
        let delayed =
            us(decoded) - us(render) + self.decode.required_ms() * 1_000 + self.render_delay_us;
        if round_ms(delayed) < 0 {
            return;
        }
        if self.current_us + delayed <= target {
            self.current_us += delayed;
        } else {
            self.current_us = target;
        }
    }

    /// The legacy delay update for a frame with timestamp `ts90`: toward the target by at most
    /// `per_second` for each second of media since the previous frame (whole ms, truncated);
    /// the first frame takes the target at once.
    pub fn update_current_delay_slewed(&mut self, ts90: i64, per_second: Nanos) {
        let target = self.target_us();
        if self.current_us == 0 {
            self.current_us = target;
        } else if target != self.current_us {
            let step = ts90 - self.prev_ts;
            let max_ms = round_ms(us(per_second)).saturating_mul(step) / 90_000;
            if max_ms <= 0 {
                // Less than a ms of change waits for later frames; a step back is reordering.
                return;
            }
            let max = max_ms * 1_000;
            self.current_us += (target - self.current_us).clamp(-max, max);
        }
        self.prev_ts = ts90;
    }
}

#[cfg(test)]
mod tests;
