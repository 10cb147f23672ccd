//! Parameter grids: which policy configurations a sweep runs.
//!
//! A grid names policies and, per key, the values to try. Every combination becomes one
//! [`Policy`], parsed by the same code as `--policy`, so a bad key or value is the same clear
//! error, raised before any work starts. See `docs/sweep.md` for the grammar with examples.
//!
//! Values:
//! - a range `"0ms..300ms step 5ms"` (TOML) or `0..300ms/5ms` (command line): both ends
//!   included, the unit of an end without one is the other end's;
//! - a list `["100ms", "150ms"]` / `[2, 3, 4]` (TOML) or `100ms|150ms` (command line);
//! - a single value.
//!
//! ```
//! use jitterlab_replay::grid::Grid;
//! let grid = Grid::from_toml("[fixed]\ndelay = \"0ms..20ms step 10ms\"\nmax_gap = [\"100ms\", \"250ms\"]\n")?;
//! let policies = grid.expand(100)?;
//! assert_eq!(policies.len(), 6);
//! assert_eq!(policies[1].to_string(), "fixed:delay=0ms,max_gap=250ms,capacity=32,stale=false,dedup=true,miss=hold");
//! # Ok::<(), jitterlab_replay::Error>(())
//! ```

use jitterlab_capture::decode::Decoded;

use crate::Error;
use crate::policy::{Policy, Registry};

/// The default limit on how many configurations one grid may expand to.
pub const DEFAULT_MAX_CONFIGS: usize = 100_000;

/// One policy with the values to try per key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Axes {
    /// The policy name.
    pub policy: String,
    /// Keys in the order given, each with its values (canonical text as `--policy` takes it).
    pub keys: Vec<(String, Vec<String>)>,
}

impl Axes {
    /// How many configurations these axes make (saturating).
    pub fn count(&self) -> usize {
        self.keys
            .iter()
            .fold(1usize, |n, (_, v)| n.saturating_mul(v.len()))
    }
}

/// A whole grid: several policies' axes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grid {
    /// In the order given.
    pub axes: Vec<Axes>,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::Grid(msg.into())
}

/// Splits `12.5ms` into (12.5, "ms"); a bare number has an empty unit.
fn split_unit(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    let at = text
        .find(|c: char| c.is_ascii_alphabetic() || c == '%')
        .unwrap_or(text.len());
    let (num, unit) = text.split_at(at);
    let v: f64 = num.trim().parse().ok()?;
    v.is_finite().then_some((v, unit.trim()))
}

/// Formats a range value without float noise: `0.30000000000000004` → `0.3`.
fn format_value(v: f64, unit: &str) -> String {
    let rounded = (v * 1e9).round() / 1e9;
    let mut s = format!("{rounded}");
    if s == "-0" {
        s = "0".into();
    }
    format!("{s}{unit}")
}

/// Expands `FROM..TO` with `STEP` (each possibly with a unit).
fn expand_range(key: &str, from: &str, to: &str, step: &str) -> Result<Vec<String>, Error> {
    let bad = |why: &str| invalid(format!("key {key}: range {from}..{to} step {step}: {why}"));
    let (a, ua) = split_unit(from).ok_or_else(|| bad("the start is not a number"))?;
    let (b, ub) = split_unit(to).ok_or_else(|| bad("the end is not a number"))?;
    let (s, us) = split_unit(step).ok_or_else(|| bad("the step is not a number"))?;
    let unit = [ua, ub, us]
        .into_iter()
        .find(|u| !u.is_empty())
        .unwrap_or("");
    if [ua, ub, us].iter().any(|u| !u.is_empty() && *u != unit) {
        return Err(bad("the ends and the step must use one unit"));
    }
    if s <= 0.0 {
        return Err(bad("the step must be above zero"));
    }
    if b < a {
        return Err(bad("the range is empty (the end is before the start)"));
    }
    let n = ((b - a) / s + 1e-9).floor();
    if n > 1e7 {
        return Err(bad("more than ten million values"));
    }
    Ok((0..=n as u64)
        .map(|i| format_value(a + i as f64 * s, unit))
        .collect())
}

/// Parses one command-line value list: `A..B/STEP`, `V1|V2|...` or a single value.
fn cli_values(key: &str, text: &str) -> Result<Vec<String>, Error> {
    let text = text.trim();
    if text.is_empty() {
        return Err(invalid(format!("key {key}: no values")));
    }
    if let Some((from, rest)) = text.split_once("..") {
        let (to, step) = rest.split_once('/').ok_or_else(|| {
            invalid(format!(
                "key {key}: range '{text}' needs a step, e.g. 0..300ms/5ms"
            ))
        })?;
        return expand_range(key, from, to, step);
    }
    let values: Vec<String> = text.split('|').map(|v| v.trim().to_owned()).collect();
    if values.iter().any(String::is_empty) {
        return Err(invalid(format!("key {key}: an empty value in '{text}'")));
    }
    Ok(values)
}

/// Parses one TOML value: a range string, a list, or a scalar.
fn toml_values(key: &str, value: &toml::Value) -> Result<Vec<String>, Error> {
    let scalar = |v: &toml::Value| -> Result<String, Error> {
        match v {
            toml::Value::String(s) => Ok(s.trim().to_owned()),
            toml::Value::Integer(i) => Ok(i.to_string()),
            toml::Value::Float(f) => Ok(format_value(*f, "")),
            toml::Value::Boolean(b) => Ok(b.to_string()),
            other => Err(invalid(format!(
                "key {key}: a {} is not a value (use a string, number, boolean or a list of them)",
                other.type_str()
            ))),
        }
    };
    match value {
        toml::Value::Array(items) => {
            if items.is_empty() {
                return Err(invalid(format!("key {key}: the list is empty")));
            }
            items.iter().map(scalar).collect()
        }
        toml::Value::String(s) if s.contains("..") => {
            let (from, rest) = s.split_once("..").unwrap_or((s, ""));
            let (to, step) = rest.split_once("step").ok_or_else(|| {
                invalid(format!(
                    "key {key}: range '{s}' needs a step, e.g. \"0ms..300ms step 5ms\""
                ))
            })?;
            expand_range(key, from, to, step)
        }
        other => Ok(vec![scalar(other)?]),
    }
}

/// `NAME: line L, column C: MESSAGE`, then the line with carets under the error's span, as
/// toml and rustc draw them.
fn syntax_error(name: &str, text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim_end();
    let Some(span) = e.span() else {
        return format!("{name}: {message}");
    };
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let source = text[line_start..line_end].trim_end_matches('\r');
    let line = text[..start].matches('\n').count() + 1;
    let column = text[line_start..start].chars().count() + 1;
    let end = span.end.clamp(start, line_end);
    let carets = text[start..end].chars().count().max(1);
    let gutter = " ".repeat(line.to_string().len());
    format!(
        "{name}: line {line}, column {column}: {message}\n{gutter} |\n{line} | {source}\n{gutter} | {}{}",
        " ".repeat(column - 1),
        "^".repeat(carets)
    )
}

impl Grid {
    /// Parses a grid file: one table per policy (`[fixed]`), or an array of tables
    /// (`[[fixed]]`) for several sub-grids of one policy.
    ///
    /// # Errors
    /// TOML syntax, a key with no values, an empty range, a zero step.
    pub fn from_toml(text: &str) -> Result<Self, Error> {
        Self::from_toml_named(text, "grid")
    }

    /// [`Grid::from_toml`] for the grid file `name`: a TOML syntax error starts with the name,
    /// the line and the column, and shows the line with a caret under the error. Tables and
    /// keys keep their file order.
    ///
    /// # Errors
    /// As for [`Grid::from_toml`].
    pub fn from_toml_named(text: &str, name: &str) -> Result<Self, Error> {
        let doc: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| invalid(syntax_error(name, text, &e)))?;
        Self::from_table(&doc).map_err(|e| match e {
            Error::Grid(m) => invalid(format!(
                "{name}: {}",
                m.strip_prefix("grid: ").unwrap_or(&m)
            )),
            other => other,
        })
    }

    fn from_table(doc: &toml::Table) -> Result<Self, Error> {
        let mut grid = Self::default();
        for (policy, body) in doc {
            let tables: Vec<&toml::Table> = match body {
                toml::Value::Table(t) => vec![t],
                toml::Value::Array(a) => a
                    .iter()
                    .map(|v| {
                        v.as_table().ok_or_else(|| {
                            invalid(format!("grid: [[{policy}]] entries must be tables"))
                        })
                    })
                    .collect::<Result<_, _>>()?,
                _ => {
                    return Err(invalid(format!(
                        "grid: '{policy}' must be a table like [{policy}] with keys under it"
                    )));
                }
            };
            for table in tables {
                let mut keys = Vec::new();
                for (key, value) in table {
                    keys.push((key.clone(), toml_values(key, value)?));
                }
                grid.axes.push(Axes {
                    policy: policy.clone(),
                    keys,
                });
            }
        }
        if grid.axes.is_empty() {
            return Err(invalid("grid: no policy tables (e.g. [fixed])"));
        }
        Ok(grid)
    }

    /// The first external policy (`exec`) the grid names, if any: a grid file that names one
    /// would run a command, which the caller must allow explicitly.
    pub fn exec_policy(&self) -> Option<String> {
        self.axes
            .iter()
            .find(|a| crate::policy::is_exec(&format!("{}:", a.policy)) || a.policy == "exec")
            .map(|a| {
                let command = a.keys.iter().find(|(k, _)| k == "command");
                match command.and_then(|(_, v)| v.first()) {
                    Some(cmd) => format!("exec:{cmd}"),
                    None => a.policy.clone(),
                }
            })
    }

    /// Parses one `--sweep POLICY:KEY=VALUES[,KEY=VALUES...]` and adds it.
    ///
    /// # Errors
    /// A malformed pair, an empty range, a zero step.
    pub fn add_cli(&mut self, spec: &str) -> Result<(), Error> {
        if crate::policy::is_exec(spec) {
            return self.add_exec(spec);
        }
        let (policy, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let mut keys = Vec::new();
        for pair in rest.split(',').filter(|p| !p.trim().is_empty()) {
            let (key, values) = pair.split_once('=').ok_or_else(|| {
                invalid(format!(
                    "grid '{spec}': '{pair}' is not KEY=VALUES (e.g. delay=0..300ms/5ms)"
                ))
            })?;
            keys.push((key.trim().to_owned(), cli_values(key.trim(), values)?));
        }
        self.axes.push(Axes {
            policy: policy.trim().to_owned(),
            keys,
        });
        Ok(())
    }

    /// `--sweep exec:CMD` or `exec(KEY=VALUES,…):CMD`: the command verbatim, the keys swept.
    fn add_exec(&mut self, spec: &str) -> Result<(), Error> {
        let rest = &spec.trim_start()["exec".len()..];
        let (keys, command) = match rest.strip_prefix('(') {
            Some(r) => r.split_once("):").ok_or_else(|| {
                invalid(format!("grid '{spec}': expected exec(KEY=VALUES,…):CMD"))
            })?,
            None => ("", &rest[1..]),
        };
        let mut axes = vec![("command".to_owned(), vec![command.trim().to_owned()])];
        for pair in keys.split(',').filter(|p| !p.trim().is_empty()) {
            let (key, values) = pair
                .split_once('=')
                .ok_or_else(|| invalid(format!("grid '{spec}': '{pair}' is not KEY=VALUES")))?;
            axes.push((key.trim().to_owned(), cli_values(key.trim(), values)?));
        }
        self.axes.push(Axes {
            policy: "exec".to_owned(),
            keys: axes,
        });
        Ok(())
    }

    /// How many configurations the grid makes.
    pub fn count(&self) -> usize {
        self.axes
            .iter()
            .fold(0usize, |n, a| n.saturating_add(a.count()))
    }

    /// Every configuration, in grid order (the last key varies fastest), each parsed and
    /// validated as `--policy` would.
    ///
    /// # Errors
    /// More than `max` configurations, or a combination `--policy` refuses (naming the policy,
    /// key and allowed range).
    pub fn expand(&self, max: usize) -> Result<Vec<Policy>, Error> {
        self.expand_in(Registry::builtin(), max)
    }

    /// [`Grid::expand`] with the presets `registry` knows (a user's own besides the built-in
    /// ones).
    ///
    /// # Errors
    /// As for [`Grid::expand`].
    pub fn expand_in(&self, registry: &Registry, max: usize) -> Result<Vec<Policy>, Error> {
        let n = self.count();
        if n > max {
            return Err(Error::TooManyConfigs {
                count: n,
                limit: max,
            });
        }
        let mut out = Vec::with_capacity(n);
        for axes in &self.axes {
            let mut index = vec![0usize; axes.keys.len()];
            loop {
                let mut text = format!("{}:", axes.policy);
                if axes.policy == "exec" {
                    text = exec_text(axes, &index);
                }
                for (i, (key, values)) in axes.keys.iter().enumerate() {
                    if axes.policy == "exec" {
                        break;
                    }
                    if i > 0 {
                        text.push(',');
                    }
                    text.push_str(key);
                    text.push('=');
                    text.push_str(&values[index[i]]);
                }
                out.push(registry.parse(&text)?);
                // Odometer: the last key turns fastest.
                let mut done = true;
                let mut k = axes.keys.len();
                while k > 0 {
                    k -= 1;
                    index[k] += 1;
                    if index[k] < axes.keys[k].1.len() {
                        done = false;
                        break;
                    }
                    index[k] = 0;
                }
                if done {
                    break;
                }
            }
        }
        Ok(out)
    }
}

/// One configuration of an `[exec]` grid table: `exec(KEY=VALUE,…):COMMAND`, the `command`
/// key being the command (see `docs/external-policy.md`).
fn exec_text(axes: &Axes, index: &[usize]) -> String {
    let mut command = String::new();
    let mut keys = Vec::new();
    for (i, (key, values)) in axes.keys.iter().enumerate() {
        if key == "command" {
            command.clone_from(&values[index[i]]);
        } else {
            keys.push(format!("{key}={}", values[index[i]]));
        }
    }
    format!("exec({}):{command}", keys.join(","))
}

/// The grid `jitterlab tune` sweeps when given none, for traffic sent at `rate_hz` packets per
/// second: the engine presets take it as their send / tick / update rate (a property of the
/// game server, not something to tune; [`crate::Preset::RATE_KEY`]), the other keys span
/// sensible ranges.
///
/// # Panics
/// A built-in preset's tuning axes do not parse (a broken invariant; `default_grid_expands`
/// tests every one).
pub fn default_tune_grid_for(rate_hz: Option<u32>) -> Grid {
    tune_grid_of(Registry::builtin(), rate_hz).expect("the built-in presets' tuning axes parse")
}

/// The default tuning grid of every preset `registry` knows ([`crate::Preset::TUNE_AXES`]),
/// with the rate keys pinned to `rate_hz` when given.
///
/// # Errors
/// A preset's axes that do not parse, naming the preset.
pub fn tune_grid_of(registry: &Registry, rate_hz: Option<u32>) -> Result<Grid, Error> {
    grid_of(registry.tune_axes(), rate_hz)
}

/// The grid `jitterlab tune` sweeps in playout mode when given none: every preset that plays
/// discrete frames around its defaults ([`crate::Preset::PLAYOUT_AXES`]).
///
/// # Panics
/// A built-in preset's playout axes do not parse (`default_grid_expands` tests every one).
pub fn default_playout_grid_for(rate_hz: Option<u32>) -> Grid {
    default_playout_grid_of(rate_hz, None)
}

/// [`default_playout_grid_for`] limited to the generic buffers and those made for `media`
/// ([`crate::Preset::MEDIA`]): an audio call is not tuned with a video buffer.
///
/// # Panics
/// As [`default_playout_grid_for`].
pub fn default_playout_grid_of(
    rate_hz: Option<u32>,
    media: Option<jitterlab_capture::decode::MediaKind>,
) -> Grid {
    playout_grid_of(Registry::builtin(), rate_hz, media)
        .expect("the built-in presets' playout axes parse")
}

/// The default playout tuning grid of the presets `registry` knows for `media` (all: `None`).
///
/// # Errors
/// A preset's axes that do not parse, naming the preset.
pub fn playout_grid_of(
    registry: &Registry,
    rate_hz: Option<u32>,
    media: Option<jitterlab_capture::decode::MediaKind>,
) -> Result<Grid, Error> {
    grid_of(registry.playout_axes(media), rate_hz)
}

fn grid_of(
    mut presets: Vec<(&'static str, Option<&'static str>, &'static str)>,
    rate_hz: Option<u32>,
) -> Result<Grid, Error> {
    let mut grid = Grid::default();
    // By name: the order the grid had when it was one TOML text, whose tables are read in
    // alphabetical order (ties in `tune` go to grid order).
    presets.sort_by_key(|&(name, _, _)| name);
    for (name, rate_key, axes) in presets {
        let mut g = Grid::from_toml(&format!("[{name}]\n{axes}"))
            .map_err(|e| invalid(format!("{name}'s tuning axes: {e}")))?;
        if let (Some(key), Some(hz)) = (rate_key, rate_hz.filter(|hz| *hz > 0)) {
            for a in &mut g.axes {
                a.keys.insert(0, (key.to_owned(), vec![hz.to_string()]));
            }
        }
        grid.axes.extend(g.axes);
    }
    Ok(grid)
}

/// The grid `jitterlab tune` sweeps when given none: every policy around its defaults.
pub fn default_tune_grid() -> Grid {
    default_tune_grid_for(None)
}

/// The traffic's packet rate (the median over streams with more than one packet, rounded and
/// kept within 1..=1000 Hz), for the engine presets' send rates.
pub fn packet_rate<'a>(traces: impl IntoIterator<Item = &'a Decoded>) -> Option<u32> {
    let stats: Vec<jitterlab_capture::stats::StreamStats> = traces
        .into_iter()
        .flat_map(jitterlab_capture::stats::stream_stats)
        .collect();
    packet_rate_of(&stats)
}

/// [`packet_rate`] from the streams' figures (as `info`'s streaming pass gives them).
pub fn packet_rate_of(streams: &[jitterlab_capture::stats::StreamStats]) -> Option<u32> {
    let mut rates: Vec<f64> = streams
        .iter()
        .filter(|s| s.packets > 1)
        .map(|s| (s.expected as f64 - 1.0) / s.duration().as_secs_f64().max(1e-9))
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect();
    rates.sort_by(f64::total_cmp);
    rates
        .get(rates.len() / 2)
        .map(|r| r.round().clamp(1.0, 1000.0) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_lists_and_scalars_expand_in_order() {
        let g = Grid::from_toml(
            "[fixed]\ndelay = \"0ms..300ms step 5ms\"\nmax_gap = [\"100ms\",\"150ms\",\"250ms\"]\n\
             [jitter]\nk = [2,3,4]\n",
        )
        .unwrap();
        assert_eq!(g.count(), 61 * 3 + 3);
        let p = g.expand(1000).unwrap();
        assert_eq!(p.len(), 186);
        assert!(
            p[0].to_string()
                .starts_with("fixed:delay=0ms,max_gap=100ms")
        );
        assert!(
            p[1].to_string()
                .starts_with("fixed:delay=0ms,max_gap=150ms")
        );
        assert!(
            p[182]
                .to_string()
                .starts_with("fixed:delay=300ms,max_gap=250ms")
        );
        assert!(p[183].to_string().starts_with("jitter:a=2,k=2"));
    }

    #[test]
    fn cli_ranges_match_toml_ranges() {
        let mut a = Grid::default();
        a.add_cli("fixed:delay=0..300ms/5ms,max_gap=100ms|150ms|250ms")
            .unwrap();
        let b = Grid::from_toml(
            "[fixed]\ndelay = \"0ms..300ms step 5ms\"\nmax_gap = [\"100ms\",\"150ms\",\"250ms\"]\n",
        )
        .unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn fractional_steps_have_no_float_noise() {
        let v = expand_range("q", "0.9", "0.99", "0.03").unwrap();
        assert_eq!(v, ["0.9", "0.93", "0.96", "0.99"]);
    }

    #[test]
    fn bad_grids_are_clear_errors_before_work() {
        let cases = [
            ("[fixed]\ndelay = \"300ms..0ms step 5ms\"\n", "empty"),
            ("[fixed]\ndelay = \"0ms..300ms step 0ms\"\n", "above zero"),
            ("[fixed]\ndelay = []\n", "empty"),
            ("[fixed]\ndelay = \"0ms..300ms\"\n", "needs a step"),
            ("[fixed]\ndelay = \"0ms..3s step 5ms\"\n", "one unit"),
            ("fixed = 3\n", "must be a table"),
            ("", "no policy tables"),
            ("[fixed\n", "grid:"),
        ];
        for (text, needle) in cases {
            let err = Grid::from_toml(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
        for (text, needle) in [
            ("[warp]\ndelay = [\"1ms\"]\n", "unknown policy"),
            ("[fixed]\ndelya = [\"1ms\"]\n", "delya"),
            ("[fixed]\ndelay = [\"-5ms\"]\n", "delay"),
        ] {
            let err = Grid::from_toml(text)
                .unwrap()
                .expand(100)
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
        let big = Grid::from_toml("[fixed]\ndelay = \"0ms..1000ms step 1ms\"\n").unwrap();
        let err = big.expand(100).unwrap_err().to_string();
        assert!(
            err.contains("1001 configurations") && err.contains("100"),
            "{err}"
        );
    }

    /// A TOML syntax error names the file, the line and the column, and shows the line with
    /// a caret under the column.
    #[test]
    fn syntax_errors_keep_line_column_and_snippet() {
        let text = "[fixed]\ndelay = [\"100ms\"]\nmax_gap = \"120ms\" oops\n";
        let err = Grid::from_toml_named(text, "grids/g.toml")
            .unwrap_err()
            .to_string();
        let mut lines = err.lines();
        let first = lines.next().unwrap();
        assert!(
            first.starts_with("grids/g.toml: line 3, column 19: "),
            "{err}"
        );
        let rest: Vec<&str> = lines.collect();
        let at = rest
            .iter()
            .position(|l| l.ends_with("max_gap = \"120ms\" oops"))
            .unwrap_or_else(|| panic!("no snippet line in {err}"));
        let caret = rest[at + 1];
        let bar = rest[at].find('|').unwrap();
        assert_eq!(caret.find('|'), Some(bar), "{err}");
        assert_eq!(caret.find('^'), Some(bar + 2 + 18), "{err}");
    }

    /// Tables, sub-grids and keys expand in file order, not alphabetically.
    #[test]
    fn tables_and_keys_keep_file_order() {
        let text = "[quantile]\nwindow = [\"2s\", \"1s\"]\nq = [0.9, 0.5]\n\n\
                    [fixed]\nmax_gap = [\"200ms\", \"100ms\"]\ndelay = \"50ms\"\n";
        let grid = Grid::from_toml(text).unwrap();
        let order: Vec<(&str, Vec<&str>)> = grid
            .axes
            .iter()
            .map(|a| {
                (
                    a.policy.as_str(),
                    a.keys.iter().map(|(k, _)| k.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                ("quantile", vec!["window", "q"]),
                ("fixed", vec!["max_gap", "delay"])
            ]
        );
        let policies: Vec<String> = grid
            .expand(100)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(policies.len(), 6);
        assert!(
            policies[0].starts_with("quantile:q=0.9,window=2000ms"),
            "{policies:?}"
        );
        assert!(
            policies[1].starts_with("quantile:q=0.5,window=2000ms"),
            "{policies:?}"
        );
        assert!(
            policies[2].starts_with("quantile:q=0.9,window=1000ms"),
            "{policies:?}"
        );
        assert!(
            policies[4].starts_with("fixed:delay=50ms,max_gap=200ms"),
            "{policies:?}"
        );
        assert!(
            policies[5].starts_with("fixed:delay=50ms,max_gap=100ms"),
            "{policies:?}"
        );
    }

    #[test]
    fn default_grid_takes_the_send_rate() {
        let p = default_tune_grid_for(Some(20))
            .expand(DEFAULT_MAX_CONFIGS)
            .unwrap();
        assert!(
            p.iter()
                .filter(|p| p.name() == "mirror")
                .all(|p| p.to_string().contains("send_rate=20,"))
        );
        assert!(
            p.iter()
                .filter(|p| p.name() == "ngo")
                .all(|p| p.to_string().contains("tick_rate=20,"))
        );
        assert!(
            p.iter()
                .filter(|p| p.name() == "source")
                .all(|p| p.to_string().contains("cl_updaterate=20"))
        );
        assert_eq!(p.len(), default_tune_grid().count());
    }

    #[test]
    fn default_grid_expands() {
        let g = default_tune_grid();
        let n = g.expand(DEFAULT_MAX_CONFIGS).unwrap().len();
        // … + n4e 3 + fishnet 4 + lightyear 6 + unreal-np 2 + geckos 2.
        assert_eq!(n, 62 + 15 + 8 + 18 + 8 + 3 + 4 + 3 + 4 + 6 + 2 + 2);
        for name in Policy::NAMES {
            let p: Policy = name.parse().unwrap();
            if !p.playout_only() {
                assert!(g.axes.iter().any(|a| a.policy == *name), "{name}");
            }
        }
    }

    #[test]
    fn default_playout_grid_expands_to_policies_that_play_frames() {
        let g = default_playout_grid_for(Some(50));
        let policies = g.expand(DEFAULT_MAX_CONFIGS).unwrap();
        assert!(policies.len() > 41, "{}", policies.len());
        for p in &policies {
            assert!(p.plays_frames(), "{p}");
        }
        for name in [
            "fixed", "jitter", "quantile", "neteq", "speex", "pjsip", "baresip",
        ] {
            assert!(g.axes.iter().any(|a| a.policy == name), "{name}");
        }
    }
}
