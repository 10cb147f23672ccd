//! Figures: titled panels of line and point series, rendered to PNG with an embedded font.
//!
//! Long series are reduced per pixel column to a min/max envelope before drawing, so a
//! million-point series draws as fast as a few thousand and looks the same.

use std::ops::Range;
use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::Error;

/// Okabe–Ito colours: distinguishable with the common forms of colour blindness.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(240, 228, 66),  // yellow
    RGBColor(0, 0, 0),       // black
];

/// The colour for configuration number `i`, the same in every figure of a report.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// A connected line.
    Line,
    /// A step line: each value holds until the next point (buffer depth, counts).
    Step,
    /// Separate small dots.
    Dots,
    /// Crosses, for marking events (lost packets).
    Crosses,
}

/// One named series of (x, y) points, x ascending.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Palette index.
    pub color: usize,
    /// How to draw it.
    pub style: Style,
    /// The points; NaN y values are gaps.
    pub points: Vec<(f64, f64)>,
}

/// One plot area with axes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Panel {
    /// Caption above the plot.
    pub title: String,
    /// X axis label, with unit.
    pub x_label: String,
    /// Y axis label, with unit.
    pub y_label: String,
    /// The series.
    pub series: Vec<Series>,
    /// Fixed x range; otherwise from the data.
    pub x_range: Option<(f64, f64)>,
    /// Fixed y range; otherwise from the data (starting at 0 when all values are ≥ 0).
    pub y_range: Option<(f64, f64)>,
    /// A heat map drawn under the series.
    pub heat: Option<Heat>,
    /// A note drawn in the upper left corner (e.g. why some data is missing).
    pub note: Option<String>,
}

/// A heat map: a value per (x, y) cell, coloured on a colour-blind-safe ramp.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Heat {
    /// Cell centres along x, ascending.
    pub xs: Vec<f64>,
    /// Cell centres along y, ascending.
    pub ys: Vec<f64>,
    /// `z[j][i]` is the value at (`xs[i]`, `ys[j]`); `None` or NaN: no data (grey).
    pub z: Vec<Vec<Option<f64>>>,
    /// What the colour means, for the legend.
    pub label: String,
}

impl Heat {
    fn range(&self) -> Option<(f64, f64)> {
        let vals = self.z.iter().flatten().flatten().filter(|v| v.is_finite());
        let (lo, hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
        lo.is_finite().then_some((lo, hi))
    }

    /// Cell edges along one axis: midway between centres, half a step beyond the ends.
    fn edges(centres: &[f64]) -> Vec<f64> {
        match centres {
            [] => Vec::new(),
            [c] => vec![c - 0.5, c + 0.5],
            _ => {
                let mut e = Vec::with_capacity(centres.len() + 1);
                e.push(centres[0] - (centres[1] - centres[0]) / 2.0);
                for w in centres.windows(2) {
                    e.push((w[0] + w[1]) / 2.0);
                }
                let n = centres.len();
                e.push(centres[n - 1] + (centres[n - 1] - centres[n - 2]) / 2.0);
                e
            }
        }
    }
}

/// A dark-blue → yellow ramp (after cividis): ordered in lightness, readable with colour
/// blindness and in grey scale.
pub fn ramp(t: f64) -> RGBColor {
    let stops = [
        (0.0, (0u8, 34u8, 78u8)),
        (0.25, (64, 77, 108)),
        (0.5, (124, 123, 120)),
        (0.75, (188, 175, 111)),
        (1.0, (253, 231, 55)),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let i = stops
        .iter()
        .rposition(|(s, _)| *s <= t)
        .unwrap_or(0)
        .min(stops.len() - 2);
    let (t0, a) = stops[i];
    let (t1, b) = stops[i + 1];
    let f = (t - t0) / (t1 - t0);
    let mix = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// A titled figure of panels stacked in a grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Title across the top.
    pub title: String,
    /// Panels, filled row by row.
    pub panels: Vec<Panel>,
    /// Columns in the grid.
    pub columns: usize,
    /// Size in pixels.
    pub size: (u32, u32),
}

/// The default figure size.
pub const DEFAULT_SIZE: (u32, u32) = (1600, 900);

static FONT: Once = Once::new();

/// Registers the embedded DejaVu Sans font with plotters (once per process), so no system
/// font is needed.
fn register_font() {
    FONT.call_once(|| {
        // The bytes are a valid TrueType font shipped by the `dejavu` crate; failure would be a
        // build defect, and plotters then simply draws no text.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

fn plot_err<E: std::fmt::Display>(e: E) -> Error {
    Error::Plot(e.to_string())
}

impl Figure {
    /// A figure with one column of panels at the default size.
    pub fn new(title: impl Into<String>, panels: Vec<Panel>) -> Self {
        Self {
            title: title.into(),
            panels,
            columns: 1,
            size: DEFAULT_SIZE,
        }
    }

    /// Renders to an RGB pixel buffer (`3 · width · height` bytes).
    ///
    /// # Errors
    /// A plotting failure.
    pub fn render_rgb(&self) -> Result<Vec<u8>, Error> {
        register_font();
        let (w, h) = self.size;
        let mut buf = vec![255u8; 3 * w as usize * h as usize];
        {
            let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
            root.fill(&WHITE).map_err(plot_err)?;
            let root = root.margin(8, 0, 0, 0);
            let root = root
                .titled(
                    &self.title,
                    ("sans-serif", 30).into_font().style(FontStyle::Bold),
                )
                .map_err(plot_err)?;
            let cols = self.columns.max(1);
            let rows = self.panels.len().div_ceil(cols).max(1);
            let areas = root.split_evenly((rows, cols));
            for (panel, area) in self.panels.iter().zip(areas.iter()) {
                draw_panel(panel, area, w / cols as u32)?;
            }
            root.present().map_err(plot_err)?;
        }
        Ok(buf)
    }

    /// Renders to PNG bytes.
    ///
    /// # Errors
    /// A plotting or encoding failure.
    pub fn render_png(&self) -> Result<Vec<u8>, Error> {
        let rgb = self.render_rgb()?;
        let mut out = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut out, self.size.0, self.size.1);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            enc.set_compression(png::Compression::Fast);
            let mut writer = enc.write_header().map_err(plot_err)?;
            writer.write_image_data(&rgb).map_err(plot_err)?;
        }
        Ok(out)
    }

    /// Renders and writes the PNG atomically (never a half-written file), replacing `path`.
    ///
    /// # Errors
    /// Rendering or I/O failures.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        let png = self.render_png()?;
        jitterlab_capture::output::write_atomic(path, &png, true)?;
        Ok(())
    }
}

impl Figure {
    /// What the figure shows as plain text, for snapshot tests and debugging: the title, grid
    /// and size, then per panel its title, axis labels, fixed ranges, note, heat map and
    /// series (label, colour, style, point count and every point). Numbers have 4 significant
    /// digits, so tiny floating-point differences between platforms do not show; drawing does
    /// not use it.
    pub fn data(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let (w, h) = self.size;
        let _ = writeln!(
            s,
            "figure {:?} ({w}×{h}, {} column(s))",
            self.title, self.columns
        );
        for (k, p) in self.panels.iter().enumerate() {
            let _ = writeln!(s, "panel {k}: {:?}", p.title);
            let range = |r: Option<(f64, f64)>| {
                r.map_or_else(String::new, |(a, b)| format!(" [{}, {}]", sig4(a), sig4(b)))
            };
            let _ = writeln!(s, "  x {:?}{}", p.x_label, range(p.x_range));
            let _ = writeln!(s, "  y {:?}{}", p.y_label, range(p.y_range));
            if let Some(note) = &p.note {
                let _ = writeln!(s, "  note {note:?}");
            }
            if let Some(heat) = &p.heat {
                let row = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(" ");
                let _ = writeln!(s, "  heat {:?}", heat.label);
                let _ = writeln!(s, "    xs {}", row(&mut heat.xs.iter().map(|v| sig4(*v))));
                let _ = writeln!(s, "    ys {}", row(&mut heat.ys.iter().map(|v| sig4(*v))));
                for (j, zs) in heat.z.iter().enumerate() {
                    let cell = |v: &Option<f64>| v.map_or_else(|| "-".to_owned(), sig4);
                    let _ = writeln!(s, "    z[{j}] {}", row(&mut zs.iter().map(cell)));
                }
            }
            for series in &p.series {
                let _ = writeln!(
                    s,
                    "  series {:?} (colour {}, {:?}, {} points)",
                    series.label,
                    series.color,
                    series.style,
                    series.points.len()
                );
                for chunk in series.points.chunks(6) {
                    let pts: Vec<String> = chunk
                        .iter()
                        .map(|(x, y)| format!("{},{}", sig4(*x), sig4(*y)))
                        .collect();
                    let _ = writeln!(s, "    {}", pts.join(" "));
                }
            }
        }
        s
    }
}

/// `v` to 4 significant digits in positional notation (`0.001235`, `12350`), from Rust's
/// exactly rounded scientific formatting rather than `log10`, whose last bit may differ
/// between platforms' maths libraries.
fn sig4(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".to_owned();
    }
    let sci = format!("{v:.3e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = mantissa
        .strip_prefix('-')
        .map_or(("", mantissa), |m| ("-", m));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let text = if exp >= 3 {
        format!("{digits}{}", "0".repeat(exp as usize - 3))
    } else if exp >= 0 {
        let (int, frac) = digits.split_at(exp as usize + 1);
        format!("{int}.{frac}")
    } else {
        format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
    };
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{sign}{text}")
}

fn finite_points(panel: &Panel) -> impl Iterator<Item = (f64, f64)> + '_ {
    panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
}

fn padded(lo: f64, hi: f64, from_zero: bool) -> Range<f64> {
    let (lo, hi) = if from_zero {
        (lo.min(0.0), hi)
    } else {
        (lo, hi)
    };
    if hi > lo {
        let pad = (hi - lo) * 0.05;
        (if from_zero && lo >= 0.0 { lo } else { lo - pad })..hi + pad
    } else {
        (lo - 1.0)..(hi + 1.0)
    }
}

fn draw_panel<DB: DrawingBackend>(
    panel: &Panel,
    area: &DrawingArea<DB, plotters::coord::Shift>,
    width_px: u32,
) -> Result<(), Error> {
    let (mut xlo, mut xhi, mut ylo, mut yhi) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for (x, y) in finite_points(panel) {
        xlo = xlo.min(x);
        xhi = xhi.max(x);
        ylo = ylo.min(y);
        yhi = yhi.max(y);
    }
    if let Some(h) = &panel.heat {
        let (ex, ey) = (Heat::edges(&h.xs), Heat::edges(&h.ys));
        if let (Some(x0), Some(x1), Some(y0), Some(y1)) =
            (ex.first(), ex.last(), ey.first(), ey.last())
        {
            xlo = xlo.min(*x0);
            xhi = xhi.max(*x1);
            ylo = ylo.min(*y0);
            yhi = yhi.max(*y1);
        }
    }
    let empty = !xlo.is_finite();
    let x_range = match panel.x_range {
        Some((a, b)) => a..b,
        None if empty => 0.0..1.0,
        None => padded(xlo, xhi, false),
    };
    let y_range = match panel.y_range {
        Some((a, b)) => a..b,
        None if empty => 0.0..1.0,
        None => padded(ylo, yhi, ylo >= 0.0),
    };
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(78)
        .build_cartesian_2d(x_range.clone(), y_range.clone())
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc(&panel.x_label)
        .y_desc(&panel.y_label)
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(plot_err)?;
    if let Some(note) = &panel.note {
        let x = x_range.start + (x_range.end - x_range.start) * 0.02;
        let y = y_range.end - (y_range.end - y_range.start) * 0.06;
        chart
            .draw_series(std::iter::once(Text::new(
                note.clone(),
                (x, y),
                ("sans-serif", 18).into_font().color(&RGBColor(90, 90, 90)),
            )))
            .map_err(plot_err)?;
    }
    if let Some(h) = &panel.heat
        && !empty
    {
        draw_heat(&mut chart, h)?;
    }
    if empty {
        let (cx, cy) = (
            (x_range.start + x_range.end) / 2.0,
            (y_range.start + y_range.end) / 2.0,
        );
        chart
            .draw_series(std::iter::once(Text::new(
                "no data",
                (cx, cy),
                ("sans-serif", 28)
                    .into_font()
                    .color(&RGBColor(120, 120, 120)),
            )))
            .map_err(plot_err)?;
        return Ok(());
    }
    let columns = width_px.max(100) as usize;
    let mut labelled = false;
    for s in &panel.series {
        let c = color(s.color);
        let pts = envelope(&s.points, x_range.clone(), columns);
        // plotters joins thick polylines with miters, which spike at sharp reversals:
        // dense series are drawn 1 px wide.
        let stroke = if pts.len() > columns / 4 { 1 } else { 2 };
        let drawn = match s.style {
            Style::Line | Style::Step => {
                let segments = split_at_gaps(&pts, s.style == Style::Step);
                let mut anno = None;
                for seg in segments {
                    let a = chart
                        .draw_series(LineSeries::new(seg, c.stroke_width(stroke)))
                        .map_err(plot_err)?;
                    anno = Some(a);
                }
                anno
            }
            Style::Dots => Some(
                chart
                    .draw_series(
                        pts.iter()
                            .filter(|p| p.1.is_finite())
                            .map(|&p| Circle::new(p, 2, c.filled())),
                    )
                    .map_err(plot_err)?,
            ),
            Style::Crosses => Some(
                chart
                    .draw_series(
                        pts.iter()
                            .filter(|p| p.1.is_finite())
                            .map(|&p| Cross::new(p, 5, c.stroke_width(2))),
                    )
                    .map_err(plot_err)?,
            ),
        };
        if let Some(anno) = drawn
            && !s.label.is_empty()
        {
            labelled = true;
            anno.label(s.label.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], c.filled()));
        }
    }
    if labelled || panel.heat.is_some() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", 16))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(plot_err)?;
    }
    Ok(())
}

fn draw_heat<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    h: &Heat,
) -> Result<(), Error> {
    let (ex, ey) = (Heat::edges(&h.xs), Heat::edges(&h.ys));
    let (lo, hi) = h.range().unwrap_or((0.0, 1.0));
    let span = if hi > lo { hi - lo } else { 1.0 };
    let mut cells = Vec::new();
    for (j, row) in h.z.iter().enumerate().take(h.ys.len()) {
        for (i, v) in row.iter().enumerate().take(h.xs.len()) {
            let colour = match v {
                Some(v) if v.is_finite() => ramp((v - lo) / span),
                _ => RGBColor(220, 220, 220),
            };
            cells.push(Rectangle::new(
                [(ex[i], ey[j]), (ex[i + 1], ey[j + 1])],
                colour.filled(),
            ));
        }
    }
    chart.draw_series(cells).map_err(plot_err)?;
    // The scale: the low and high ends in the legend.
    for (label, t) in [
        (format!("{}: {lo:.3}", h.label), 0.0),
        (format!("{}: {hi:.3}", h.label), 1.0),
    ] {
        let c = ramp(t);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(ex[0], ey[0]), (ex[0], ey[0])],
                c.filled(),
            )))
            .map_err(plot_err)?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], c.filled()));
    }
    Ok(())
}

/// Splits at NaN y values; for step style, inserts the horizontal run before each rise.
fn split_at_gaps(points: &[(f64, f64)], step: bool) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    for &(x, y) in points {
        if !y.is_finite() || !x.is_finite() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if step && let Some(&(_, py)) = cur.last() {
            cur.push((x, py));
        }
        cur.push((x, y));
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Reduces `points` (x ascending) to at most ~4 points per pixel column: the first, minimum,
/// maximum and last of each column, in x order, so spikes survive downsampling.
pub fn envelope(points: &[(f64, f64)], x: Range<f64>, columns: usize) -> Vec<(f64, f64)> {
    if points.len() <= 4 * columns || x.end <= x.start {
        return points.to_vec();
    }
    let width = (x.end - x.start) / columns as f64;
    let mut out = Vec::with_capacity(4 * columns);
    let mut i = 0;
    while i < points.len() {
        let col = ((points[i].0 - x.start) / width).floor();
        let mut j = i;
        let (mut lo, mut hi) = (i, i);
        while j < points.len() && ((points[j].0 - x.start) / width).floor() == col {
            if points[j].1 < points[lo].1 || points[lo].1.is_nan() {
                lo = j;
            }
            if points[j].1 > points[hi].1 || points[hi].1.is_nan() {
                hi = j;
            }
            j += 1;
        }
        let mut keep = [i, lo, hi, j - 1];
        keep.sort_unstable();
        let mut last = usize::MAX;
        for k in keep {
            if k != last {
                out.push(points[k]);
                last = k;
            }
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_keeps_spikes_and_shrinks() {
        let mut pts: Vec<(f64, f64)> = (0..100_000).map(|i| (f64::from(i), 1.0)).collect();
        pts[55_555].1 = 99.0;
        let out = envelope(&pts, 0.0..100_000.0, 100);
        assert!(out.len() <= 400, "{}", out.len());
        assert!(out.iter().any(|p| p.1 == 99.0));
        assert!(out.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn sig4_rounds_to_four_significant_digits() {
        let cases = [
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (1234.5678, "1235"),
            (123_456.0, "123500"),
            (12.5, "12.5"),
            (-0.000_123_456, "-0.0001235"),
            (0.1 + 0.2, "0.3"),
            (9999.9, "10000"),
            (f64::NAN, "NaN"),
        ];
        for (v, want) in cases {
            assert_eq!(sig4(v), want, "{v}");
        }
    }

    #[test]
    fn empty_panel_renders_no_data() {
        let fig = Figure {
            size: (400, 300),
            ..Figure::new("t", vec![Panel::default()])
        };
        let png = fig.render_png().unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }
}
