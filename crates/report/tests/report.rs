//! The report crate through its public API: the summary table, the report directory and its
//! index, and the data behind every figure, on the first seconds of the committed demo trace.
//!
//! Snapshots live in `tests/snapshots/`; after a deliberate change, regenerate them with
//! `INSTA_UPDATE=always cargo test -p jitterlab-report --test report` and read the diff.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use jitterlab_capture::Reader;
use jitterlab_capture::decode::{Decoded, decode_trace};
use jitterlab_replay::sweep::{self, Row, Shard};
use jitterlab_replay::tune::{Constraints, Tuning, tune};
use jitterlab_replay::{ClockMapping, FrameClock, Policy, TraceStreams};
use jitterlab_report::figure::{Figure, Heat, Panel, Series, Style};
use jitterlab_report::results::SweepPoints;
use jitterlab_report::table::{rounded, summary_frame, to_csv, to_markdown, to_text};
use jitterlab_report::{
    ReportInput, Run, TraceFigures, Written, report_figures, run_policies, write_full_report,
};

/// How much of the demo trace the tests replay: enough for a delay spike and a loss, few
/// enough points for snapshots a person can read (and a fast debug build).
const SECONDS: i64 = 6;

/// The configurations every report here shows.
const POLICIES: [(&str, &str); 2] = [
    ("fixed 100 ms", "fixed:delay=100ms"),
    ("jitter k=3", "jitter:k=3"),
];

/// Everything the tests build from the trace, once per test binary.
struct Fixture {
    trace: TraceFigures,
    runs: Vec<Run>,
    policies: Vec<Policy>,
    rows: Vec<Row>,
    tuning: Tuning,
    points: SweepPoints,
    rule: String,
}

/// The demo trace (`fixtures/traces/demo-wifi-20hz.jtr`) cut to packets and ground truth
/// sent in its first [`SECONDS`] seconds.
fn short_demo() -> Decoded {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/traces/demo-wifi-20hz.jtr");
    let bytes = std::fs::read(&path).expect("the demo fixture is committed");
    let mut decoded = decode_trace(Reader::new(bytes.as_slice()).unwrap(), None).unwrap();
    let first = decoded
        .truth
        .iter()
        .chain(&decoded.samples)
        .map(|s| s.send)
        .min()
        .unwrap();
    let end = first + jitterlab_capture::Nanos::from_secs(SECONDS);
    decoded.samples.retain(|s| s.send < end);
    decoded.truth.retain(|s| s.send < end);
    decoded
}

/// The fixture, built by the first test that needs it (decoding, two replays and a 10-point
/// sweep take well under a second).
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let decoded = short_demo();
        let labelled: Vec<(String, Policy)> = POLICIES
            .iter()
            .map(|(l, p)| ((*l).to_owned(), p.parse().unwrap()))
            .collect();
        // One frame per packet interval (the CLI's default is 60 fps): a third of the points.
        let frames = FrameClock::Fps(20.0);
        let runs = run_policies(&decoded, 0, &labelled, &frames, ClockMapping::Estimated).unwrap();
        // A small grid: two fixed-delay parameters for the heat map, and a second policy.
        let mut policies: Vec<Policy> = Vec::new();
        for delay in [100, 200, 300, 400] {
            for max_gap in [60, 250] {
                policies.push(
                    format!("fixed:delay={delay}ms,max_gap={max_gap}ms")
                        .parse()
                        .unwrap(),
                );
            }
        }
        policies.extend(["jitter:k=2", "jitter:k=4"].map(|p| p.parse::<Policy>().unwrap()));
        let trace = TraceStreams::new("demo-6s".into(), decoded.clone()).unwrap();
        let rows = sweep::run(
            &[trace.prepare()],
            &policies,
            &frames,
            ClockMapping::Estimated,
            Shard::ALL,
            &|| {},
        )
        .unwrap();
        let constraints = Constraints::default();
        let tuning = tune(&rows, &policies, &constraints);
        let points = SweepPoints::new(&policies, &tuning, rows.len());
        let rule = constraints.rule(policies.len());
        Fixture {
            trace: TraceFigures::of(&decoded, 0, "demo, first 6 s"),
            runs,
            policies,
            rows,
            tuning,
            points,
            rule,
        }
    })
}

/// The recommended policy string, which the sweep here is built to have.
fn recommendation(f: &Fixture) -> String {
    let r = f
        .tuning
        .recommendation
        .expect("the small grid has a feasible configuration");
    f.policies[r].to_string()
}

/// A report's input: the fixture's runs, with or without the sweep and its recommendation.
fn input<'a>(f: &'a Fixture, with_sweep: bool, recommendation: Option<&'a str>) -> ReportInput<'a> {
    ReportInput {
        title: "demo, first 6 s",
        trace: &f.trace,
        runs: &f.runs,
        sweep: with_sweep.then_some(&f.points),
        recommendation: recommendation.map(|p| (p, f.rule.as_str())),
    }
}

/// The written files by name, in the order the report lists them.
fn names(written: &Written, dir: &Path) -> Vec<String> {
    written
        .files
        .iter()
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect()
}

/// The file names in `dir`, sorted.
fn listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// What a decoded PNG file is.
struct PngInfo {
    size: (u32, u32),
    depth: png::BitDepth,
    colour: png::ColorType,
    /// Share of pixels that are not white: text, axes and data.
    ink: f64,
}

/// Decodes a PNG file, panicking with its name when it does not decode.
fn png_info(path: &Path) -> PngInfo {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder
        .read_info()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut buf = vec![
        0;
        reader
            .output_buffer_size()
            .expect("the image fits in memory")
    ];
    let frame = reader
        .next_frame(&mut buf)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let px = &buf[..frame.buffer_size()];
    let channels = frame.color_type.samples();
    let inked = px
        .chunks(channels)
        .filter(|p| p.iter().any(|&v| v < 250))
        .count();
    PngInfo {
        size: (frame.width, frame.height),
        depth: frame.bit_depth,
        colour: frame.color_type,
        ink: inked as f64 / (px.len() / channels) as f64,
    }
}

/// The index and file list of a written report, as one snapshot.
fn index_snapshot(dir: &Path, written: &Written) -> String {
    let md = std::fs::read_to_string(dir.join("index.md")).unwrap();
    format!(
        "files:\n{}\n\nindex.md:\n{md}",
        names(written, dir).join("\n")
    )
}

// ---------------------------------------------------------------------------------------
// The summary table

/// The table people compare first: one row per configuration, rounded as the report rounds.
#[test]
fn summary_table_as_text() {
    let table = rounded(&summary_frame(&fixture().runs).unwrap(), 3).unwrap();
    insta::assert_snapshot!(to_text(&table));
}

/// The same table as `index.md` shows it, numbers right-aligned.
#[test]
fn summary_table_as_markdown() {
    let table = rounded(&summary_frame(&fixture().runs).unwrap(), 3).unwrap();
    insta::assert_snapshot!(to_markdown(&table));
}

/// The table agrees with the runs it is made of, row by row, before any rounding.
#[test]
fn summary_table_has_one_row_per_run_in_order() {
    let f = fixture();
    let df = summary_frame(&f.runs).unwrap();
    assert_eq!(df.height(), f.runs.len());
    let configs = df.column("config").unwrap().str().unwrap();
    let holds = df.column("hold_ratio").unwrap().f64().unwrap();
    let frames = df.column("frames").unwrap().u64().unwrap();
    for (i, run) in f.runs.iter().enumerate() {
        assert_eq!(configs.get(i), Some(run.label.as_str()));
        assert_eq!(holds.get(i), Some(run.summary.hold_ratio));
        assert_eq!(frames.get(i), Some(run.summary.frames));
        assert!((0.0..=1.0).contains(&run.summary.hold_ratio));
    }
}

// ---------------------------------------------------------------------------------------
// The report directory

/// A report of replays alone: the figures that need no sweep, the table and both indexes.
#[test]
fn index_without_a_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let written = write_full_report(dir.path(), &input(fixture(), false, None)).unwrap();
    insta::assert_snapshot!(index_snapshot(dir.path(), &written));
}

/// A report with a sweep adds the Pareto figure and heat map, and the recommendation first.
#[test]
fn index_with_a_sweep_and_a_recommendation() {
    let f = fixture();
    let rec = recommendation(f);
    let dir = tempfile::tempdir().unwrap();
    let written = write_full_report(dir.path(), &input(f, true, Some(&rec))).unwrap();
    insta::assert_snapshot!(index_snapshot(dir.path(), &written));
}

/// A trace without packets still makes a whole report, its figures saying why they are empty.
#[test]
fn index_and_figures_of_a_trace_without_packets() {
    let decoded = Decoded::default();
    let points = SweepPoints::default();
    let trace = TraceFigures::of(&decoded, 0, "empty");
    let input = ReportInput {
        title: "empty",
        trace: &trace,
        runs: &[],
        sweep: Some(&points),
        recommendation: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let written = write_full_report(dir.path(), &input).unwrap();
    insta::assert_snapshot!(
        "index_of_a_trace_without_packets",
        index_snapshot(dir.path(), &written)
    );
    let figures: String = report_figures(&input)
        .iter()
        .map(|(file, heading, fig)| format!("== {file} ({heading})\n{}\n", fig.data()))
        .collect();
    insta::assert_snapshot!("figures_of_a_trace_without_packets", figures);
    for (file, _, _) in report_figures(&input) {
        assert_eq!(png_info(&dir.path().join(file)).size, (1600, 900), "{file}");
    }
}

/// Every PNG the report writes decodes, at its figure's size and with something drawn, and
/// every figure is written.
#[test]
fn every_png_decodes_at_its_figure_size() {
    let f = fixture();
    let input = input(f, true, None);
    let dir = tempfile::tempdir().unwrap();
    let written = write_full_report(dir.path(), &input).unwrap();
    let figures = report_figures(&input);
    let pngs: Vec<&PathBuf> = written
        .files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    assert_eq!(pngs.len(), figures.len());
    for ((file, _, fig), path) in figures.iter().zip(pngs) {
        assert_eq!(path, &dir.path().join(file));
        let info = png_info(path);
        assert_eq!(info.size, fig.size, "{file}");
        assert_eq!(
            (info.depth, info.colour),
            (png::BitDepth::Eight, png::ColorType::Rgb),
            "{file}"
        );
        // Axes, labels and data cover a few percent of a figure; a blank one has only its title.
        assert!(
            info.ink > 0.01,
            "{file}: only {:.4} of the pixels are drawn",
            info.ink
        );
    }
}

/// `summary.csv` is the rounded summary table, and the index shows every figure in order.
#[test]
fn csv_and_index_match_the_table_and_figures() {
    let f = fixture();
    let input = input(f, true, None);
    let dir = tempfile::tempdir().unwrap();
    write_full_report(dir.path(), &input).unwrap();
    let csv = std::fs::read(dir.path().join("summary.csv")).unwrap();
    assert_eq!(
        csv,
        to_csv(&rounded(&summary_frame(&f.runs).unwrap(), 3).unwrap()).unwrap()
    );
    let md = std::fs::read_to_string(dir.path().join("index.md")).unwrap();
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    let (mut md_at, mut html_at) = (0, 0);
    for (file, heading, _) in report_figures(&input) {
        let img = format!("![{heading}]({file})");
        md_at += md[md_at..]
            .find(&img)
            .unwrap_or_else(|| panic!("index.md: no {img} after byte {md_at}"));
        let tag = format!("<img src=\"{file}\"");
        html_at += html[html_at..]
            .find(&tag)
            .unwrap_or_else(|| panic!("index.html: no {tag} after {html_at}"));
    }
    for run in &f.runs {
        assert!(
            md.contains(&format!("- `{}`: `{}`", run.label, run.policy)),
            "{}",
            run.label
        );
    }
}

/// The recommendation and the rule behind it open both indexes.
#[test]
fn recommendation_text_appears_in_both_indexes() {
    let f = fixture();
    let rec = recommendation(f);
    let dir = tempfile::tempdir().unwrap();
    write_full_report(dir.path(), &input(f, true, Some(&rec))).unwrap();
    let md = std::fs::read_to_string(dir.path().join("index.md")).unwrap();
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    let block = format!(
        "## Recommended configuration\n\n```\n--policy {rec}\n```\n\n{}\n",
        f.rule
    );
    assert!(md.contains(&block), "index.md lacks\n{block}\nin\n{md}");
    assert!(
        md.find(&block) < md.find("## Summary"),
        "the recommendation comes first"
    );
    assert!(html.contains(&format!("<pre>--policy {rec}</pre>")));
    assert!(html.contains(&f.rule));
}

/// Writing again into a used directory replaces the report's own files (a damaged figure is
/// whole again), leaves other files alone and leaves no temporary files behind.
#[test]
fn second_write_replaces_own_files_and_keeps_others() {
    let f = fixture();
    let input = input(f, false, None);
    let dir = tempfile::tempdir().unwrap();
    let first = write_full_report(dir.path(), &input).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    std::fs::create_dir(dir.path().join("old")).unwrap();
    std::fs::write(dir.path().join("network.png"), "not a png").unwrap();
    let second = write_full_report(dir.path(), &input).unwrap();
    assert_eq!(first.files, second.files);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "mine"
    );
    assert_eq!(png_info(&dir.path().join("network.png")).size, (1600, 900));
    let mut expected: BTreeSet<String> = names(&second, dir.path()).into_iter().collect();
    expected.extend(["notes.txt".to_owned(), "old".to_owned()]);
    assert_eq!(listing(dir.path()), expected);
}

// ---------------------------------------------------------------------------------------
// The figures' data

/// The data behind each PNG of the full report, one snapshot per figure.
#[test]
fn figure_data_of_a_report_with_a_sweep() {
    let f = fixture();
    let rec = recommendation(f);
    let figures = report_figures(&input(f, true, Some(&rec)));
    let files: Vec<&str> = figures.iter().map(|(file, ..)| *file).collect();
    assert_eq!(
        files,
        [
            "network.png",
            "jitter.png",
            "timeline.png",
            "buffer-depth.png",
            "error.png",
            "error-cdf.png",
            "recovery.png",
            "pareto.png",
            "heatmap.png",
            "playout.png"
        ]
    );
    for (file, heading, fig) in figures {
        let name = format!("figure_{}", file.trim_end_matches(".png"));
        insta::with_settings!({ description => heading }, {
            insta::assert_snapshot!(name, fig.data());
        });
    }
}

/// The Pareto figure marks exactly the configuration the tuning recommends, at its worst
/// delay and hold ratio, and joins the tuning's frontier.
#[test]
fn pareto_figure_marks_the_tunings_recommendation() {
    let f = fixture();
    let figures = report_figures(&input(f, true, None));
    let (_, _, pareto) = figures
        .iter()
        .find(|(file, ..)| *file == "pareto.png")
        .unwrap();
    let series = &pareto.panels[0].series;
    let marked: Vec<&Series> = series
        .iter()
        .filter(|s| s.label.starts_with("recommended"))
        .collect();
    let [marked] = marked.as_slice() else {
        panic!("one recommendation series: {series:?}")
    };
    let rec = f.tuning.recommendation.unwrap();
    let worst = f.tuning.candidate(rec).unwrap().worst;
    assert_eq!(
        marked.points,
        [(worst.mean_delay_ms.unwrap(), 100.0 * worst.hold_ratio)]
    );
    assert!(
        marked.label.contains(f.policies[rec].name()),
        "{}",
        marked.label
    );
    let frontier = series
        .iter()
        .find(|s| s.label == "Pareto frontier")
        .expect("a frontier");
    let expected: Vec<(f64, f64)> = f
        .tuning
        .frontier
        .iter()
        .map(|&c| {
            let w = f.tuning.candidate(c).unwrap().worst;
            (w.mean_delay_ms.unwrap(), 100.0 * w.hold_ratio)
        })
        .collect();
    assert_eq!(frontier.points, expected);
    assert_eq!(
        pareto.title,
        format!(
            "Sweep: {} configurations, {} rows",
            f.policies.len(),
            f.rows.len()
        )
    );
}

/// The heat map's cells are the fixed policy's worst hold ratios over `delay × max_gap`.
#[test]
fn heatmap_cells_are_the_worst_hold_ratios() {
    let f = fixture();
    let figures = report_figures(&input(f, true, None));
    let (_, _, heat) = figures
        .iter()
        .find(|(file, ..)| *file == "heatmap.png")
        .unwrap();
    let heat = heat.panels[0].heat.as_ref().expect("a heat map");
    assert_eq!(heat.xs, [100.0, 200.0, 300.0, 400.0]);
    assert_eq!(heat.ys, [60.0, 250.0]);
    for (c, policy) in f
        .policies
        .iter()
        .enumerate()
        .filter(|(_, p)| p.name() == "fixed")
    {
        let text = policy.to_string();
        let (i, j) = (c / 2, c % 2);
        let want = 100.0 * f.tuning.candidate(c).unwrap().worst.hold_ratio;
        assert_eq!(heat.z[j][i], Some(want), "{text}");
    }
}

/// The text dump's format on a hand-made figure: what each line means, numbers rounded.
#[test]
fn figure_data_shows_every_part_of_a_figure() {
    let fig = Figure {
        columns: 2,
        size: (320, 240),
        ..Figure::new(
            "demo",
            vec![Panel {
                title: "ramp".into(),
                x_label: "time (s)".into(),
                y_label: "value".into(),
                series: vec![Series {
                    label: "x".into(),
                    color: 3,
                    style: Style::Step,
                    points: vec![(0.0, 1.0 / 3.0), (1.5, f64::NAN), (2.0, 123_456.7)],
                }],
                y_range: Some((-0.5, 1.5)),
                heat: Some(Heat {
                    xs: vec![1.0, 2.0],
                    ys: vec![10.0],
                    z: vec![vec![Some(0.012_345_6), None]],
                    label: "h".into(),
                }),
                note: Some("a note".into()),
                ..Panel::default()
            }],
        )
    };
    insta::assert_snapshot!(fig.data(), @r#"
    figure "demo" (320×240, 2 column(s))
    panel 0: "ramp"
      x "time (s)"
      y "value" [-0.5, 1.5]
      note "a note"
      heat "h"
        xs 1 2
        ys 10
        z[0] 0.01235 -
      series "x" (colour 3, Step, 3 points)
        0,0.3333 1.5,NaN 2,123500
    "#);
}
