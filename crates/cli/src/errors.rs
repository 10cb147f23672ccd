//! Library errors as the command line says them. The libraries name the value at fault and
//! never a flag; this is the one place that adds the flag that sets it.

use jitterlab_capture::Error as Capture;
use jitterlab_replay::Error as Replay;

/// The text of an error as `main` prints it: `{err:#}` (every context, then the causes,
/// joined by `: `), a capture error anywhere in the chain rewritten with the flag that sets the
/// value at fault, and a replay error followed by the flag that fixes it.
pub(crate) fn describe(err: &anyhow::Error) -> String {
    let mut parts = Vec::new();
    let mut hint = None;
    for cause in err.chain() {
        // The report crate wraps both libraries' errors transparently: look inside.
        let report = cause.downcast_ref::<jitterlab_report::Error>();
        let capture = cause.downcast_ref::<Capture>().or(match report {
            Some(jitterlab_report::Error::Capture(inner)) => Some(inner),
            _ => None,
        });
        let replay = cause.downcast_ref::<Replay>().or(match report {
            Some(jitterlab_report::Error::Replay(inner)) => Some(inner),
            _ => None,
        });
        // The flagged capture variants carry no source, so nothing is lost by stopping there.
        if let Some(text) = capture.and_then(flagged) {
            parts.push(text);
            break;
        }
        hint = hint.or_else(|| replay.and_then(replay_flag));
        let text = cause.to_string();
        // Nothing is said twice: a source its error already quotes (`cannot listen on A:
        // Address already in use` over `Address already in use`) is left out, and a cause
        // that repeats its context (`cannot write X` over `cannot write X: No space left on
        // device`) replaces it.
        if parts
            .last()
            .is_some_and(|last| last.ends_with(text.as_str()))
        {
            continue;
        }
        if parts
            .last()
            .is_some_and(|last| text.starts_with(last.as_str()) || names_again(last, &text))
        {
            parts.pop();
        }
        parts.push(text);
    }
    parts.join(": ") + &hint.unwrap_or_default()
}

/// Whether `context` is `cannot VERB PATH` and `cause` names PATH too (`cannot write X` over
/// `cannot create X: No such file or directory`): the cause says it all.
fn names_again(context: &str, cause: &str) -> bool {
    [
        "cannot write ",
        "cannot read ",
        "cannot open ",
        "cannot create ",
    ]
    .iter()
    .filter_map(|verb| context.strip_prefix(verb))
    .any(|path| !path.is_empty() && cause.contains(path))
}

/// A capture error with the flag that sets the value at fault; `None` for errors no flag
/// fixes.
fn flagged(err: &Capture) -> Option<String> {
    Some(match err {
        Capture::Exists { path } => {
            format!("{path} already exists (pass --force to overwrite)")
        }
        Capture::NoDecoder => {
            "the trace names no decoder; pass --decoder rtp|probe|layout:SPEC".to_owned()
        }
        Capture::ClockRate { spec, reason } => format!("--clock-rate '{spec}': {reason}"),
        Capture::Filter { text, reason } => format!("--filter '{text}': {reason}"),
        Capture::Impairment(inner) => {
            format!(
                "--impair: {}",
                flagged(inner).unwrap_or_else(|| inner.to_string())
            )
        }
        // `rate`, `size` and `duration` are set by flags of the same names (synth, send).
        Capture::Setting {
            setting,
            value,
            reason,
        } => format!("--{setting} {value}: {reason}"),
        _ => return None,
    })
}

/// What to append to a replay error: the flag that fixes it, if one does.
fn replay_flag(err: &Replay) -> Option<String> {
    let flag = match err {
        Replay::ClockRateUnknown { payload_type, .. } => {
            return Some(format!("; pass --clock-rate {payload_type}=HZ"));
        }
        Replay::FrameRate { .. } => "--fps",
        Replay::FrameTimesDecrease { .. } => "--at or --frames",
        Replay::FrameTimeLine { .. } | Replay::NoFrameTimes => "--frames",
        Replay::HitchChance { .. } | Replay::HitchLength | Replay::Hitches { .. } => "--hitches",
        Replay::ClockMapping { .. } => "--clock",
        Replay::TooManyConfigs { .. } => "--max-configs",
        Replay::NotPlayout { .. } => "--playout",
        Replay::Shard { .. } => "--shard",
        _ => return None,
    };
    Some(format!(" ({flag})"))
}

/// "The command ran, and the answer is no" (exit code 1): `tune` found no configuration that
/// meets the limits. What the command printed is its answer; this says it in one line on
/// stderr (unless `--quiet`).
#[derive(Debug)]
pub(crate) struct AnswerIsNo(pub(crate) String);

impl std::fmt::Display for AnswerIsNo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AnswerIsNo {}

/// The exit codes, as `--help` and the README state them.
pub(crate) mod exit {
    /// Done: the command did what was asked (also when stdout was closed early, `| head`).
    pub(crate) const DONE: u8 = 0;
    /// Ran, but the answer is no: no configuration meets the limits.
    pub(crate) const NO: u8 = 1;
    /// Bad input or usage: a flag, a file, a value; nothing half-written is left behind.
    pub(crate) const BAD_INPUT: u8 = 2;
}

/// The footer of `jitterlab --help`.
pub(crate) const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  done
  1  ran, but the answer is no (tune: no configuration meets the limits on every trace)
  2  bad input or usage (the error names the flag or the file; no partial output is left)";
