//! Writing a report directory: figures, summary table, and an index that shows them in order.

use std::fs;
use std::path::{Path, PathBuf};

use jitterlab_capture::decode::Decoded;
use jitterlab_capture::output::write_atomic;

use rayon::prelude::*;

use crate::Error;
use crate::figure::Figure;
use crate::figures::{
    depth_figure, error_cdf_figure, error_figure, heatmap_figure, mos_figure, pareto_figure,
    playout_timeline_figure, timeline_figure,
};
use crate::results::SweepPoints;
use crate::runs::Run;
use crate::table::{rounded, summary_frame, to_csv, to_markdown};
use crate::trace::TraceFigures;

/// What a report wrote.
#[derive(Clone, Debug, Default)]
pub struct Written {
    /// Every file, in the order the index shows them.
    pub files: Vec<PathBuf>,
}

/// Everything a report shows.
#[derive(Clone, Copy, Debug)]
pub struct ReportInput<'a> {
    /// The report's title.
    pub title: &'a str,
    /// The figures of the stream shown that need no replay ([`TraceFigures::of`] a decoded
    /// trace, or drawn in passes over a file).
    pub trace: &'a TraceFigures,
    /// Replays of that stream, one per configuration (colours follow this order).
    pub runs: &'a [Run],
    /// A sweep's configurations, for the Pareto figure and heat map.
    pub sweep: Option<&'a SweepPoints>,
    /// The recommended configuration (a policy string) and why.
    pub recommendation: Option<(&'a str, &'a str)>,
}

/// Writes figures and tables for `runs` (replays of stream `stream` of `decoded`) into `dir`.
///
/// The directory is created if needed and reused if it exists: files of the same names are
/// replaced (each atomically), other files are left alone.
///
/// # Errors
/// Drawing, table or I/O failures.
pub fn write_report(
    dir: &Path,
    title: &str,
    decoded: &Decoded,
    stream: u32,
    runs: &[Run],
) -> Result<Written, Error> {
    write_full_report(
        dir,
        &ReportInput {
            title,
            trace: &TraceFigures::of(decoded, stream, title),
            runs,
            sweep: None,
            recommendation: None,
        },
    )
}

/// The figures of a report, in the order the index shows them: (file, heading, figure).
pub fn report_figures(input: &ReportInput<'_>) -> Vec<(&'static str, &'static str, Figure)> {
    let ReportInput {
        title: _,
        trace,
        runs,
        sweep,
        recommendation: _,
    } = *input;
    type Make<'a> = Box<dyn Fn() -> Figure + Send + Sync + 'a>;
    let playout = runs.iter().any(|r| r.playout.is_some()) || sweep.is_some_and(|s| s.playout);
    let mut makers: Vec<(&'static str, &'static str, Make<'_>)> = vec![
        (
            "network.png",
            "Network",
            Box::new(move || trace.network.clone()),
        ),
        (
            "jitter.png",
            "Jitter",
            Box::new(move || trace.jitter.clone()),
        ),
    ];
    if playout {
        makers.push((
            "playout-timeline.png",
            "Playout: target and actual delay, concealment",
            Box::new(move || playout_timeline_figure(runs)),
        ));
        makers.push((
            "mos.png",
            "MOS per configuration",
            Box::new(move || mos_figure(runs)),
        ));
    } else {
        makers.push((
            "timeline.png",
            "Delay, depth and frame modes",
            Box::new(move || timeline_figure(runs)),
        ));
        makers.push((
            "buffer-depth.png",
            "Buffer depth",
            Box::new(move || depth_figure(runs)),
        ));
        makers.push(("error.png", "Error", Box::new(move || error_figure(runs))));
        makers.push((
            "error-cdf.png",
            "Error distribution",
            Box::new(move || error_cdf_figure(runs)),
        ));
    }
    makers.push((
        "recovery.png",
        "Recovery after network spikes",
        Box::new(move || crate::recovery::recovery_figure(&trace.spikes, runs)),
    ));
    if let Some(sweep) = sweep {
        makers.push((
            "pareto.png",
            if playout {
                "Sweep: playout delay against concealment"
            } else {
                "Sweep: delay against holds"
            },
            Box::new(move || pareto_figure(sweep)),
        ));
        if !playout {
            makers.push((
                "heatmap.png",
                "Sweep: hold ratio over two parameters",
                Box::new(move || heatmap_figure(sweep)),
            ));
        }
    }
    makers.push((
        "playout.png",
        "Playout",
        Box::new(move || trace.playout.clone()),
    ));
    // Each figure's data is prepared independently: one per core.
    makers
        .par_iter()
        .map(|(name, heading, make)| (*name, *heading, make()))
        .collect()
}

/// Writes a report with everything [`ReportInput`] holds: figures, the summary table, the
/// recommendation, and an index (`index.md`, `index.html`) that shows them in order.
///
/// # Errors
/// Drawing, table or I/O failures.
pub fn write_full_report(dir: &Path, input: &ReportInput<'_>) -> Result<Written, Error> {
    let (title, runs) = (input.title, input.runs);
    fs::create_dir_all(dir)?;
    let mut written = Written::default();
    let figures = report_figures(input);
    // Figures render independently: one per core.
    let paths: Vec<PathBuf> = figures
        .par_iter()
        .map(|(name, _, fig)| {
            let path = dir.join(name);
            fig.save(&path).map(|()| path)
        })
        .collect::<Result<_, Error>>()?;
    written.files.extend(paths);
    let table = rounded(&summary_frame(runs)?, 3)?;
    let csv_path = dir.join("summary.csv");
    write_atomic(&csv_path, &to_csv(&table)?, true)?;
    written.files.push(csv_path);

    let md_table = to_markdown(&table);
    let mut md = format!("# {title}\n\n");
    let mut html_rec = String::new();
    if let Some((policy, why)) = input.recommendation {
        md.push_str(&format!(
            "## Recommended configuration\n\n```\n--policy {policy}\n```\n\n{why}\n\n"
        ));
        html_rec = format!(
            "<h2>Recommended configuration</h2>\n<pre>--policy {}</pre>\n<p>{}</p>\n",
            escape(policy),
            escape(why)
        );
    }
    md.push_str(&format!("## Summary\n\n{md_table}\n"));
    let mut html_figs = String::new();
    for (name, heading, _) in &figures {
        md.push_str(&format!("## {heading}\n\n![{heading}]({name})\n\n"));
        html_figs.push_str(&format!(
            "<h2>{heading}</h2>\n<img src=\"{name}\" alt=\"{heading}\" style=\"max-width:100%\">\n"
        ));
    }
    let policies: String = runs
        .iter()
        .map(|r| format!("- `{}`: `{}`\n", r.label, r.policy))
        .collect();
    md.push_str(&format!("## Configurations\n\n{policies}"));
    let md_path = dir.join("index.md");
    write_atomic(&md_path, md.as_bytes(), true)?;
    let html = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title>\
         <style>body{{font-family:sans-serif;max-width:1650px;margin:auto}}\
         table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}</style>\
         </head><body>\n<h1>{t}</h1>\n{html_rec}<h2>Summary</h2>\n{table}\n{html_figs}\
         <h2>Configurations</h2><ul>{list}</ul></body></html>\n",
        t = escape(title),
        table = html_table(&table),
        list = runs
            .iter()
            .map(|r| format!(
                "<li><b>{}</b>: <code>{}</code></li>",
                escape(&r.label),
                escape(&r.policy.to_string())
            ))
            .collect::<String>(),
    );
    let html_path = dir.join("index.html");
    write_atomic(&html_path, html.as_bytes(), true)?;
    written.files.push(md_path);
    written.files.push(html_path);
    Ok(written)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn html_table(df: &polars::prelude::DataFrame) -> String {
    let md = to_markdown(df);
    let mut rows = md.lines().filter(|l| !l.contains("---"));
    let cells = |l: &str| -> Vec<String> {
        l.trim_matches('|')
            .split('|')
            .map(|c| escape(c.trim()))
            .collect()
    };
    let mut s = String::from("<table>\n<tr>");
    if let Some(head) = rows.next() {
        for c in cells(head) {
            s.push_str(&format!("<th>{c}</th>"));
        }
    }
    s.push_str("</tr>\n");
    for row in rows {
        s.push_str("<tr>");
        for c in cells(row) {
            s.push_str(&format!("<td>{c}</td>"));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>");
    s
}
