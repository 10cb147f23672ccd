//! libwebrtc's video jitter estimate: a Kalman filter of the frame delay variation against the
//! frame size change, a noise term, and outlier handling.
//!
//! Follows `modules/video_coding/timing/jitter_estimator.cc`,
//! `frame_delay_variation_kalman_filter.cc` and `inter_frame_delay_variation_calculator.cc`
//! (libwebrtc as mirrored in `webrtc-sdk/webrtc` at `cd6792e`, October 2024), with the
//! default field trials (mean frame sizes, not the median/percentile variants). Times are
//! whole microseconds inside, as libwebrtc's `TimeDelta` holds them, and are rounded where
//! libwebrtc rounds (`TimeDelta::ms()` to the nearest millisecond, `TimeDelta::Millis(double)`
//! truncated to the microsecond), so that its unit-test vectors come out exactly.
//!
//! jitterlab departs in one way: there are no retransmissions in a replay, so the NACK count
//! and the RTT term (`rtt_mult` after 3 NACKs within 60 s) are never added.

use jitterlab_capture::Nanos;

/// Frames before the estimate is post-processed, and the ramp of the noise filter's rate
/// scaling (`kFrameProcessingStartupCount`).
const STARTUP_FRAMES: usize = 30;
/// Frames before the mean frame size starts from the start-up mean (`kFramesUntilSizeFiltering`).
const SIZE_FILTER_AFTER: usize = 5;
/// Initial mean and max frame size, bytes.
const INITIAL_FRAME_SIZE: f64 = 500.0;
/// Time constant of the mean frame size filter (`kPhi`).
const PHI: f64 = 0.97;
/// Decay of the max frame size (`kPsi`).
const PSI: f64 = 0.9999;
/// Frame delay samples are clamped to this many noise deviations.
const DELAY_CLAMP_STDDEVS: f64 = 3.5;
/// A delay deviation beyond this many noise deviations is an outlier.
const DELAY_OUTLIER_STDDEVS: f64 = 15.0;
/// A frame above the mean size by this many deviations is a size outlier (a key frame).
const SIZE_OUTLIER_STDDEVS: f64 = 3.0;
/// A size change below this share of the max frame size marks a frame congested behind a
/// large one.
const CONGESTION_REJECTION: f64 = -0.25;
/// The noise filter's sample count saturates here.
const ALPHA_COUNT_MAX: usize = 400;
/// The noise threshold: 2.33 deviations (a 1 % tail)...
const NOISE_STDDEVS: f64 = 2.33;
/// ...less 30 ms (freezes of up to 30 ms are accepted).
const NOISE_STDDEV_OFFSET: f64 = 30.0;
/// The estimate's bounds, µs.
const MIN_ESTIMATE_US: i64 = 1_000;
const MAX_ESTIMATE_US: i64 = 10_000_000;
/// Frame rate estimates are capped at 200 fps (millihertz).
const MAX_FPS_MHZ: i64 = 200_000;
/// Frame intervals the frame rate is estimated over (`fps_counter_(30)`).
const FPS_WINDOW: usize = 30;

/// µs of a `Nanos`, floored.
pub(crate) fn us(t: Nanos) -> i64 {
    t.as_nanos().div_euclid(1_000)
}

/// `TimeDelta::ms()`: µs rounded to the nearest ms (halves away from zero only upwards).
pub(crate) fn round_ms(us: i64) -> i64 {
    let (q, r) = (us / 1_000, us % 1_000);
    if us >= 0 {
        if r > 499 { q + 1 } else { q }
    } else if -r > 500 {
        q - 1
    } else {
        q
    }
}

/// `TimeDelta::Millis(double)`: ms to µs, truncated.
pub(crate) fn ms_to_us(ms: f64) -> i64 {
    (ms * 1_000.0) as i64
}

/// The Kalman filter of frame delay variation (ms) against frame size variation (bytes):
/// state `[ms per byte, ms]`, the slope being the inverse of the channel's bandwidth and the
/// offset the queuing delay (`FrameDelayVariationKalmanFilter`).
#[derive(Clone, Debug, PartialEq)]
pub struct FrameDelayKalman {
    estimate: [f64; 2],
    cov: [[f64; 2]; 2],
    process_noise: [f64; 2],
}

impl Default for FrameDelayKalman {
    fn default() -> Self {
        Self {
            // 512 kbit/s as bytes per ms, inverted; no queuing delay.
            estimate: [1.0 / (512e3 / 8.0), 0.0],
            cov: [[1e-4, 0.0], [0.0, 1e2]],
            process_noise: [2.5e-10, 1e-10],
        }
    }
}

impl FrameDelayKalman {
    /// Feeds one frame: its delay variation (ms), its size change (bytes), the max frame size
    /// and the noise variance. Ignored when the max size is below a byte or the variance is
    /// not positive, as libwebrtc does.
    pub fn predict_and_update(
        &mut self,
        delay_variation_ms: f64,
        size_variation: f64,
        max_frame_size: f64,
        var_noise: f64,
    ) {
        if max_frame_size < 1.0 || var_noise <= 0.0 {
            return;
        }
        // The state transition is the identity: the prediction only adds the process noise.
        self.cov[0][0] += self.process_noise[0];
        self.cov[1][1] += self.process_noise[1];
        let innovation = delay_variation_ms - self.total(size_variation);
        let ph = [
            self.cov[0][0] * size_variation + self.cov[0][1],
            self.cov[1][0] * size_variation + self.cov[1][1],
        ];
        // The measurement noise falls off with the size change relative to the max frame
        // size; libwebrtc adds its deviation (not its variance) to the innovation variance.
        let noise_stddev = ((300.0 * (-size_variation.abs() / max_frame_size).exp() + 1.0)
            * var_noise.sqrt())
        .max(1.0);
        let innovation_var = size_variation * ph[0] + ph[1] + noise_stddev;
        if innovation_var.abs() < 1e-9 {
            return;
        }
        let gain = [ph[0] / innovation_var, ph[1] / innovation_var];
        self.estimate[0] += gain[0] * innovation;
        self.estimate[1] += gain[1] * innovation;
        // Not part of a linear Kalman filter: the slope stays above 1 / (8 Gbit/s).
        self.estimate[0] = self.estimate[0].max(1e-6);
        let (t00, t01) = (self.cov[0][0], self.cov[0][1]);
        self.cov[0][0] = (1.0 - gain[0] * size_variation) * t00 - gain[0] * self.cov[1][0];
        self.cov[0][1] = (1.0 - gain[0] * size_variation) * t01 - gain[0] * self.cov[1][1];
        self.cov[1][0] = self.cov[1][0] * (1.0 - gain[1]) - gain[1] * size_variation * t00;
        self.cov[1][1] = self.cov[1][1] * (1.0 - gain[1]) - gain[1] * size_variation * t01;
    }

    /// The delay variation a size change explains (ms): slope × change.
    pub fn size_based(&self, size_variation: f64) -> f64 {
        self.estimate[0] * size_variation
    }

    /// The delay variation predicted for a size change (ms): transmission plus queuing.
    pub fn total(&self, size_variation: f64) -> f64 {
        self.size_based(size_variation) + self.estimate[1]
    }
}

/// The delay variation between a frame and the previous one: how much later it completed
/// than its timestamp step says (`InterFrameDelayVariationCalculator`, 90 kHz timestamps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InterFrameDelay {
    prev: Option<(i64, i64)>,
}

impl InterFrameDelay {
    /// The variation for a frame with 90 kHz timestamp `ts90` completing at `now`: zero for
    /// the first frame, `None` for a frame older than the previous one (reordered).
    pub fn calculate(&mut self, ts90: i64, now: Nanos) -> Option<Nanos> {
        let now = us(now);
        let Some((prev_ts, prev_now)) = self.prev else {
            self.prev = Some((ts90, now));
            return Some(Nanos::ZERO);
        };
        if ts90 < prev_ts {
            return None;
        }
        // `ticks / 90 kHz` as libwebrtc divides: whole µs, truncated.
        let rtp_us = (ts90 - prev_ts).saturating_mul(100) / 9;
        self.prev = Some((ts90, now));
        Some(Nanos::from_micros(now - prev_now - rtp_us))
    }
}

/// A fixed window of the last [`FPS_WINDOW`] frame intervals (µs), for the frame rate.
#[derive(Clone, Debug, PartialEq)]
struct Intervals {
    samples: [i64; FPS_WINDOW],
    len: usize,
    next: usize,
    sum: i64,
}

impl Default for Intervals {
    fn default() -> Self {
        Self {
            samples: [0; FPS_WINDOW],
            len: 0,
            next: 0,
            sum: 0,
        }
    }
}

impl Intervals {
    fn add(&mut self, x: i64) {
        if self.len == FPS_WINDOW {
            self.sum = self.sum.wrapping_sub(self.samples[self.next]);
        } else {
            self.len += 1;
        }
        self.samples[self.next] = x;
        // Wrapping both ways keeps the window's sum exact whatever the intervals.
        self.sum = self.sum.wrapping_add(x);
        self.next = (self.next + 1) % FPS_WINDOW;
    }

    fn mean(&self) -> f64 {
        if self.len == 0 {
            0.0
        } else {
            self.sum as f64 / self.len as f64
        }
    }
}

/// libwebrtc's video jitter estimator (`JitterEstimator`): see the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct JitterEstimator {
    os_jitter_us: i64,
    kalman: FrameDelayKalman,
    avg_frame_size: f64,
    var_frame_size: f64,
    max_frame_size: f64,
    startup_size_sum: f64,
    startup_size_count: usize,
    last_update_us: Option<i64>,
    prev_estimate_us: Option<i64>,
    prev_frame_size: Option<f64>,
    avg_noise: f64,
    var_noise: f64,
    alpha_count: usize,
    filtered_estimate_us: i64,
    startup_count: usize,
    intervals: Intervals,
}

impl Default for JitterEstimator {
    /// With libwebrtc's 10 ms operating-system jitter (`OPERATING_SYSTEM_JITTER`).
    fn default() -> Self {
        Self::new(Nanos::from_millis(10))
    }
}

impl JitterEstimator {
    /// An estimator adding `os_jitter` to every estimate (libwebrtc: 10 ms, the delay after the
    /// jitter buffer that neither it nor the decode time accounts for).
    pub fn new(os_jitter: Nanos) -> Self {
        Self {
            os_jitter_us: us(os_jitter),
            kalman: FrameDelayKalman::default(),
            avg_frame_size: INITIAL_FRAME_SIZE,
            var_frame_size: 100.0,
            max_frame_size: INITIAL_FRAME_SIZE,
            startup_size_sum: 0.0,
            startup_size_count: 0,
            last_update_us: None,
            prev_estimate_us: None,
            prev_frame_size: None,
            avg_noise: 0.0,
            var_noise: 4.0,
            alpha_count: 1,
            filtered_estimate_us: 0,
            startup_count: 0,
            intervals: Intervals::default(),
        }
    }

    /// Back to the initial state (libwebrtc resets after bad render timing).
    pub fn reset(&mut self) {
        *self = Self::new(Nanos::from_micros(self.os_jitter_us));
    }

    /// Feeds one frame decoded at `now`: its delay variation ([`InterFrameDelay`]) and its
    /// size in bytes. Empty frames are ignored.
    pub fn update(&mut self, frame_delay: Nanos, frame_size: u32, now: Nanos) {
        if frame_size == 0 {
            return;
        }
        let size = f64::from(frame_size);
        let delta_bytes = size - self.prev_frame_size.unwrap_or(0.0);
        if self.startup_size_count < SIZE_FILTER_AFTER {
            self.startup_size_sum += size;
            self.startup_size_count += 1;
        } else if self.startup_size_count == SIZE_FILTER_AFTER {
            self.avg_frame_size = self.startup_size_sum / self.startup_size_count as f64;
            self.startup_size_count += 1;
        }
        let avg = PHI * self.avg_frame_size + (1.0 - PHI) * size;
        // A frame far above the mean (a key frame) does not move the mean.
        if size < self.avg_frame_size + 2.0 * self.var_frame_size.sqrt() {
            self.avg_frame_size = avg;
        }
        let dev = size - avg;
        self.var_frame_size = (PHI * self.var_frame_size + (1.0 - PHI) * dev * dev).max(1.0);
        self.max_frame_size = (PSI * self.max_frame_size).max(size);
        if self.prev_frame_size.is_none() {
            self.prev_frame_size = Some(size);
            return;
        }
        self.prev_frame_size = Some(size);

        // Clamp the sample to a few noise deviations.
        let max_dev_us = ms_to_us(DELAY_CLAMP_STDDEVS * self.var_noise.sqrt() + 0.5);
        let delay_us = us(frame_delay).clamp(-max_dev_us, max_dev_us);
        let delay_ms = round_ms(delay_us) as f64;
        let deviation = delay_ms - self.kalman.total(delta_bytes);
        let noise_sd = self.var_noise.sqrt();
        let not_delay_outlier = deviation.abs() < DELAY_OUTLIER_STDDEVS * noise_sd;
        let size_outlier =
            size > self.avg_frame_size + SIZE_OUTLIER_STDDEVS * self.var_frame_size.sqrt();
        if not_delay_outlier || size_outlier {
            // A frame much smaller than the one before arrived right behind it (congested
            // behind a key frame): it still feeds the noise, not the filter.
            let not_congested = delta_bytes > CONGESTION_REJECTION * self.max_frame_size;
            self.random_jitter(deviation, now);
            if not_congested {
                self.kalman.predict_and_update(
                    delay_ms,
                    delta_bytes,
                    self.max_frame_size,
                    self.var_noise,
                );
            }
        } else {
            // An outlier feeds the noise with the threshold it crossed.
            let bound = DELAY_OUTLIER_STDDEVS * noise_sd;
            self.random_jitter(if deviation >= 0.0 { bound } else { -bound }, now);
        }
        if self.startup_count >= STARTUP_FRAMES {
            self.filtered_estimate_us = self.calculate();
        } else {
            self.startup_count += 1;
        }
    }

    /// The noise filter: an exponential mean and variance of the deviations from the Kalman
    /// line, with weight `(n−1)/n` (n up to 400) scaled to a 30 fps stream.
    fn random_jitter(&mut self, d: f64, now: Nanos) {
        let now = us(now);
        if let Some(last) = self.last_update_us {
            self.intervals.add(now - last);
        }
        self.last_update_us = Some(now);
        let mut alpha = (self.alpha_count - 1) as f64 / self.alpha_count as f64;
        self.alpha_count = (self.alpha_count + 1).min(ALPHA_COUNT_MAX);
        let fps = self.frame_rate_mhz();
        if fps > 0 {
            let mut scale = 30_000.0 / fps as f64;
            // Ramped from 1 at the first sample to 30/fps at the 30th.
            if self.alpha_count < STARTUP_FRAMES {
                scale = (self.alpha_count as f64 * scale
                    + (STARTUP_FRAMES - self.alpha_count) as f64)
                    / STARTUP_FRAMES as f64;
            }
            alpha = alpha.powf(scale);
        }
        let avg = alpha * self.avg_noise + (1.0 - alpha) * d;
        let var =
            alpha * self.var_noise + (1.0 - alpha) * (d - self.avg_noise) * (d - self.avg_noise);
        self.avg_noise = avg;
        // Never zero: every sample would look like an outlier.
        self.var_noise = var.max(1.0);
    }

    /// The noise threshold (ms): 2.33 deviations less 30 ms, at least 1.
    fn noise_threshold(&self) -> f64 {
        (NOISE_STDDEVS * self.var_noise.sqrt() - NOISE_STDDEV_OFFSET).max(1.0)
    }

    /// The estimate (µs): the delay a worst-case frame adds (max − mean size, through the
    /// slope) plus the noise threshold; below 1 ms the previous estimate, at most 10 s.
    fn calculate(&mut self) -> i64 {
        let ms = self
            .kalman
            .size_based(self.max_frame_size - self.avg_frame_size)
            + self.noise_threshold();
        let mut est = ms_to_us(ms);
        if est < MIN_ESTIMATE_US {
            est = self.prev_estimate_us.unwrap_or(MIN_ESTIMATE_US);
        } else if est > MAX_ESTIMATE_US {
            est = MAX_ESTIMATE_US;
        }
        self.prev_estimate_us = Some(est);
        est
    }

    /// The frame rate the noise and the estimate use (millihertz): the inverse of the mean of
    /// the last 30 intervals between updates, at most 200 fps; 0 when unknown.
    fn frame_rate_mhz(&self) -> i64 {
        let mean_us = self.intervals.mean() as i64;
        if mean_us <= 0 {
            return 0;
        }
        (1_000_000_000 / mean_us).min(MAX_FPS_MHZ)
    }

    /// The jitter estimate (`GetJitterEstimate` without the RTT term): the estimate plus the
    /// operating-system jitter, or the post-processed one if larger; zero below 5 fps, scaled
    /// linearly from 0 at 5 fps to 1 at 10 fps.
    pub fn estimate(&mut self) -> Nanos {
        let mut jitter = self.calculate() + self.os_jitter_us;
        jitter = jitter.max(self.filtered_estimate_us);
        let fps = self.frame_rate_mhz();
        if fps < 5_000 {
            return if fps == 0 {
                Nanos::from_micros(jitter.max(0))
            } else {
                Nanos::ZERO
            };
        }
        if fps < 10_000 {
            let scale = (fps - 5_000) as f64 / 1_000.0 * 0.2;
            jitter = (jitter as f64 * scale).round() as i64;
        }
        Nanos::from_micros(jitter.max(0))
    }

    /// The noise variance (ms²), for reporting.
    pub fn noise_variance(&self) -> f64 {
        self.var_noise
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// libwebrtc's `ValueGenerator`: a sawtooth delay of `amplitude × (n mod 11 − 5)` ms and
    /// a frame size of `1000 + delay_ms / 5` bytes.
    struct Sawtooth {
        amplitude: i64,
        n: i64,
    }

    impl Sawtooth {
        fn delay(&self) -> Nanos {
            Nanos::from_millis((self.n % 11 - 5) * self.amplitude)
        }
        fn size(&self) -> u32 {
            (1000 + (self.n % 11 - 5) * self.amplitude / 5) as u32
        }
    }

    /// Runs `seconds × fps` frames, the clock advancing `1 / fps` (whole µs) after each.
    fn run(e: &mut JitterEstimator, g: &mut Sawtooth, now: &mut Nanos, seconds: i64, fps: i64) {
        let tick = Nanos::from_micros(1_000_000 / fps);
        for _ in 0..seconds * fps {
            e.update(g.delay(), g.size(), *now);
            *now += tick;
            g.n += 1;
        }
    }

    fn steady(seconds: i64) -> (JitterEstimator, Sawtooth, Nanos) {
        let mut e = JitterEstimator::default();
        let mut g = Sawtooth {
            amplitude: 10,
            n: 0,
        };
        let mut now = Nanos::ZERO;
        run(&mut e, &mut g, &mut now, seconds, 30);
        (e, g, now)
    }

    fn ms(d: Nanos) -> i64 {
        round_ms(us(d))
    }

    /// `jitter_estimator_unittest.cc` SteadyStateConvergence: the sawtooth (amplitude 10) for
    /// 60 s at 30 fps gives 54 ms.
    #[test]
    fn steady_state_converges_to_libwebrtcs_54_ms() {
        let (mut e, _, _) = steady(60);
        assert_eq!(ms(e.estimate()), 54);
    }

    /// SizeOutlierIsNotRejectedAndIncreasesJitterEstimate: one frame of 10× the size raises
    /// the estimate by over 25 %.
    #[test]
    fn a_size_outlier_raises_the_estimate() {
        let (mut e, g, now) = steady(60);
        let before = ms(e.estimate());
        e.update(g.delay(), 10 * g.size(), now);
        let after = ms(e.estimate());
        assert!(after as f64 > 1.25 * before as f64, "{before} → {after}");
    }

    /// Single2xFrameSizeImpactsJitterEstimate: a frame of twice the size raises it.
    #[test]
    fn a_double_size_frame_raises_the_estimate() {
        let (mut e, g, now) = steady(60);
        let before = ms(e.estimate());
        e.update(g.delay(), 2 * g.size(), now);
        assert!(ms(e.estimate()) > before);
    }

    /// CongestedFrameImpactsJitterEstimate: after 10 s, a congested frame (−10× the delay,
    /// a tenth of the size) still feeds the noise and raises the estimate.
    #[test]
    fn a_congested_frame_feeds_the_noise() {
        let (mut e, g, now) = steady(10);
        let before = ms(e.estimate());
        let tenth = (f64::from(g.size()) * 0.1).round() as u32;
        e.update(g.delay() * -10, tenth, now);
        assert!(ms(e.estimate()) > before);
    }

    /// LowFramerateDisablesJitterEstimator: at 5 fps the estimate is zero (from the third
    /// frame, once an interval is known).
    #[test]
    fn five_fps_gives_no_jitter_delay() {
        let mut e = JitterEstimator::default();
        let mut g = Sawtooth {
            amplitude: 10,
            n: 0,
        };
        let mut now = Nanos::ZERO;
        for i in 0..60 {
            e.update(g.delay(), g.size(), now);
            now += Nanos::from_millis(200);
            if i >= 2 {
                assert_eq!(e.estimate(), Nanos::ZERO, "frame {i}");
            }
            g.n += 1;
        }
    }

    /// `inter_frame_delay_variation_calculator_unittest.cc` CorrectDelayForFrames and
    /// OldRtpTimestamp: 30 fps (3000 ticks, 33 333 µs per frame) from 1337 ms; the first frame
    /// is 0, an on-time one 0, one 3 ms early −3 ms, one 5125 µs late +5125 µs, a half-step
    /// timestamp +16 667 µs, a 1.5-step one −16 667 µs; an older timestamp gives nothing.
    #[test]
    fn inter_frame_delay_variation() {
        let frame = Nanos::from_micros(33_333);
        let mut t = Nanos::from_millis(1337);
        let mut c = InterFrameDelay::default();
        let mut rtp = 90_000;
        assert_eq!(c.calculate(rtp, t), Some(Nanos::ZERO));
        let mut next = |c: &mut InterFrameDelay, wall: Nanos, ticks: i64| {
            t += wall;
            rtp += ticks;
            c.calculate(rtp, t)
        };
        assert_eq!(next(&mut c, frame, 3000), Some(Nanos::ZERO));
        assert_eq!(
            next(&mut c, frame - Nanos::from_millis(3), 3000),
            Some(Nanos::from_millis(-3))
        );
        assert_eq!(
            next(&mut c, frame + Nanos::from_micros(5125), 3000),
            Some(Nanos::from_micros(5125))
        );
        assert_eq!(next(&mut c, frame, 1500), Some(Nanos::from_micros(16_667)));
        assert_eq!(next(&mut c, frame, 4500), Some(Nanos::from_micros(-16_667)));
        let mut old = InterFrameDelay::default();
        assert_eq!(old.calculate(180_000, t), Some(Nanos::ZERO));
        assert_eq!(old.calculate(90_000, t), None);
    }

    #[test]
    fn milliseconds_round_as_timedelta_does() {
        assert_eq!(
            [
                round_ms(1499),
                round_ms(1500),
                round_ms(-1500),
                round_ms(-1501)
            ],
            [1, 2, -1, -2]
        );
        assert_eq!(ms_to_us(1.2345678), 1234);
    }
}
