//! Series reduced while they are recorded, so a figure of a long trace costs memory in
//! proportion to its width, not to its frames.
//!
//! A replay's frames reach the report one at a time. [`Envelope`] cuts the time axis into
//! [`COLUMNS`] columns over the span the caller expects and keeps, of every column holding
//! more than four points, its first, lowest, highest and last point (in time order): the same
//! reduction [`crate::figure::envelope`] makes per pixel column when drawing, so spikes and
//! dips survive. Columns of four points or fewer keep every point, so a short trace's series
//! is exactly what it was before reduction (the demo's 1,800 frames are kept whole).
//!
//! [`Sketch`] keeps a distribution (the error CDF) in bounded memory: every value up to
//! [`Sketch::EXACT`], then log-spaced buckets 1 % wide, so a quantile read back is within 1 %
//! of the exact one.

/// Columns an [`Envelope`] cuts its expected span into: more than any figure's pixel width
/// (the drawing reduces them again per pixel column).
pub const COLUMNS: usize = 4096;

/// A series reduced column by column as it is recorded (x ascending).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Envelope {
    origin: f64,
    /// Column width; zero or less keeps every point.
    width: f64,
    column: Option<i64>,
    /// The open column's first points (all of them while it holds four or fewer).
    head: [(f64, f64); 4],
    /// Points in the open column.
    n: usize,
    /// The open column's lowest and highest points, with their place in the column.
    lo: (usize, (f64, f64)),
    hi: (usize, (f64, f64)),
    /// Its last point.
    last: (f64, f64),
    points: Vec<(f64, f64)>,
}

impl Envelope {
    /// An envelope over `span` (x from, to), cut into [`COLUMNS`] columns; points outside
    /// the span fall in columns of the same width beyond it.
    pub fn over(span: (f64, f64)) -> Self {
        let width = (span.1 - span.0) / COLUMNS as f64;
        Self {
            origin: span.0,
            width: if width.is_finite() { width } else { 0.0 },
            ..Self::default()
        }
    }

    /// Records the point `(x, y)`; `x` must not be below the previous point's.
    pub fn push(&mut self, x: f64, y: f64) {
        let column = if self.width > 0.0 {
            ((x - self.origin) / self.width).floor() as i64
        } else {
            i64::MIN
        };
        if self.column != Some(column) {
            self.close();
            self.column = Some(column);
        }
        let p = (x, y);
        let n = self.n;
        if n == 0 {
            self.lo = (0, p);
            self.hi = (0, p);
        } else {
            // The ties and NaNs as `figure::envelope` takes them.
            if y < self.lo.1.1 || self.lo.1.1.is_nan() {
                self.lo = (n, p);
            }
            if y > self.hi.1.1 || self.hi.1.1.is_nan() {
                self.hi = (n, p);
            }
        }
        if n < self.head.len() {
            self.head[n] = p;
        }
        self.last = p;
        self.n += 1;
        if self.width <= 0.0 {
            // Nothing to reduce: keep every point as it comes.
            self.points.push(p);
            self.n = 0;
        }
    }

    /// Ends the open column.
    fn close(&mut self) {
        let n = self.n;
        if n <= self.head.len() {
            self.points.extend_from_slice(&self.head[..n]);
        } else {
            let mut keep = [(0, self.head[0]), self.lo, self.hi, (n - 1, self.last)];
            keep.sort_by_key(|k| k.0);
            let mut previous = usize::MAX;
            for (i, p) in keep {
                if i != previous {
                    self.points.push(p);
                    previous = i;
                }
            }
        }
        self.n = 0;
    }

    /// The reduced series.
    pub fn finish(mut self) -> Vec<(f64, f64)> {
        self.close();
        self.points
    }
}

/// A distribution in bounded memory: exact up to [`Sketch::EXACT`] values, then log-spaced
/// buckets of 1 % (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sketch {
    values: Vec<f64>,
    /// Bucket index → count, once the values were folded in; index 0 holds zeros.
    buckets: Option<std::collections::BTreeMap<i32, u64>>,
    count: u64,
}

impl Sketch {
    /// Values kept exactly before the sketch switches to buckets.
    pub const EXACT: usize = 1 << 16;
    /// The buckets' relative width.
    const RATIO: f64 = 1.01;

    /// Records a value (NaN and infinities are skipped; negatives count as zero).
    pub fn add(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        self.count += 1;
        match &mut self.buckets {
            Some(b) => *b.entry(Self::bucket(v)).or_default() += 1,
            None => {
                self.values.push(v);
                if self.values.len() > Self::EXACT {
                    let mut b = std::collections::BTreeMap::new();
                    for &v in &self.values {
                        *b.entry(Self::bucket(v)).or_default() += 1;
                    }
                    self.values = Vec::new();
                    self.buckets = Some(b);
                }
            }
        }
    }

    /// The bucket of `v`: 0 for zero and below, else one per 1 % from 1e-12 up.
    fn bucket(v: f64) -> i32 {
        if v <= 1e-12 {
            0
        } else {
            1 + ((v / 1e-12).ln() / Self::RATIO.ln()).floor() as i32
        }
    }

    /// The upper edge of bucket `b`.
    fn edge(b: i32) -> f64 {
        if b == 0 {
            0.0
        } else {
            1e-12 * Self::RATIO.powi(b)
        }
    }

    /// Values recorded.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The cumulative distribution as at most about `max_points` points (value, fraction of
    /// values at or below it), ending at (largest, 1). Exact while the values are kept;
    /// from buckets, each value is the upper edge of its bucket (at most 1 % above the
    /// values it holds).
    pub fn cdf(&self, max_points: usize) -> Vec<(f64, f64)> {
        match &self.buckets {
            None => {
                let mut e = self.values.clone();
                e.sort_by(f64::total_cmp);
                let n = e.len();
                let step = (n / max_points.max(1)).max(1);
                let mut points: Vec<(f64, f64)> = e
                    .iter()
                    .enumerate()
                    .step_by(step)
                    .map(|(k, &v)| (v, (k + 1) as f64 / n as f64))
                    .collect();
                if let Some(&last) = e.last() {
                    points.push((last, 1.0));
                }
                points
            }
            Some(b) => {
                let n = self.count as f64;
                let mut seen = 0u64;
                b.iter()
                    .map(|(&k, &c)| {
                        seen += c;
                        (Self::edge(k), seen as f64 / n)
                    })
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::envelope;

    #[test]
    fn a_short_series_is_kept_whole() {
        let mut e = Envelope::over((0.0, 30.0));
        let pts: Vec<(f64, f64)> = (0..1800)
            .map(|i| (i as f64 / 60.0, (i % 7) as f64))
            .collect();
        for &(x, y) in &pts {
            e.push(x, y);
        }
        assert_eq!(e.finish(), pts);
    }

    #[test]
    fn a_long_series_is_reduced_as_the_drawing_would_reduce_it() {
        // 1,000,000 points over 4,096 columns: each column reduced exactly as
        // `figure::envelope` reduces a pixel column, the spike and the dip kept.
        let n = 1_000_000;
        let pts: Vec<(f64, f64)> = (0..n)
            .map(|i| {
                let y = match i {
                    555_555 => 99.0,
                    777_777 => -99.0,
                    _ => (i % 13) as f64,
                };
                (i as f64, y)
            })
            .collect();
        let mut e = Envelope::over((0.0, n as f64));
        for &(x, y) in &pts {
            e.push(x, y);
        }
        let out = e.finish();
        assert!(out.len() <= 4 * COLUMNS, "{}", out.len());
        assert_eq!(out, envelope(&pts, 0.0..n as f64, COLUMNS));
        assert!(out.contains(&(555_555.0, 99.0)) && out.contains(&(777_777.0, -99.0)));
    }

    #[test]
    fn the_sketch_is_exact_then_within_one_percent() {
        let mut s = Sketch::default();
        for i in 0..1000 {
            s.add(f64::from(i));
        }
        s.add(f64::NAN);
        assert_eq!(s.len(), 1000);
        let cdf = s.cdf(4000);
        assert_eq!(cdf[0], (0.0, 0.001));
        assert_eq!(*cdf.last().unwrap(), (999.0, 1.0));

        // Past EXACT values: every exact quantile has a bucket edge within 1 % above it at
        // the same fraction.
        let mut s = Sketch::default();
        let values: Vec<f64> = (0..200_000).map(|i| 1.0 + f64::from(i) * 0.01).collect();
        for &v in &values {
            s.add(v);
        }
        let cdf = s.cdf(4000);
        assert!(cdf.len() < 1000, "{}", cdf.len());
        for &(edge, fraction) in &cdf {
            let k = ((fraction * values.len() as f64).round() as usize).clamp(1, values.len());
            let exact = values[k - 1];
            assert!(
                edge >= exact * (1.0 - 1e-9) && edge <= exact * 1.0101,
                "{edge} vs {exact}"
            );
        }
    }
}
