//! `exec`: an external policy, a user's own buffer run as a child process
//! (`exec:CMD`, or `exec(timeout=2s,max_delay=300ms):CMD`; `docs/external-policy.md`).
//!
//! The command is everything after the first colon, verbatim; the optional keys in
//! parentheses say how jitterlab talks to it. The engine is [`crate::external::ExecEngine`].

use std::sync::OnceLock;
use std::time::Duration;

use jitterlab_capture::Nanos;

use super::keys::{format_auto, key, print, print_duration};
use super::{Built, DelayModel, Key, Preset, duration_key};
use crate::external::{ExecEngine, ExecOptions, Format};

/// An external policy: the command and how it is driven.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecConfig {
    /// The command line, run through the shell.
    pub command: String,
    /// The wait for each reply; `None`: the default (`--exec-timeout`, 5 s).
    pub timeout: Option<Nanos>,
    /// The largest delay the buffer may choose: frames go on this long after the last arrival.
    pub max_delay: Nanos,
    /// Frames per batch sent to the child.
    pub batch: usize,
    /// Whether pushes carry the samples' values.
    pub values: bool,
    /// How the messages are framed (JSON Lines, the default, or MessagePack).
    pub format: Format,
}

impl Default for ExecConfig {
    /// No command; 500 ms of frames after the last arrival; 1024 frames a batch.
    fn default() -> Self {
        Self {
            command: String::new(),
            timeout: None,
            max_delay: Nanos::from_millis(500),
            batch: 1024,
            values: true,
            format: Format::Json,
        }
    }
}

impl ExecConfig {
    /// The policy string: `exec:CMD`, with the keys that differ from the defaults in
    /// parentheses.
    pub fn spec(&self) -> String {
        let d = Self::default();
        let mut keys = Vec::new();
        if self.timeout != d.timeout {
            keys.push(format!("timeout={}", format_auto(self.timeout)));
        }
        if self.max_delay != d.max_delay {
            keys.push(format!("max_delay={}", print_duration(&self.max_delay)));
        }
        if self.batch != d.batch {
            keys.push(format!("batch={}", self.batch));
        }
        if self.values != d.values {
            keys.push(format!("values={}", self.values));
        }
        if self.format != d.format {
            keys.push(format!("format={}", self.format));
        }
        if keys.is_empty() {
            format!("exec:{}", self.command)
        } else {
            format!("exec({}):{}", keys.join(","), self.command)
        }
    }
}

fn batch(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if (1..=1 << 20).contains(&n) => Ok(n),
        _ => Err(format!(
            "{value} is out of range (allowed: 1..=1048576 frames)"
        )),
    }
}

impl Preset for ExecConfig {
    const NAME: &'static str = "exec";

    fn keys() -> &'static [Key<Self>] {
        static KEYS: OnceLock<Vec<Key<ExecConfig>>> = OnceLock::new();
        KEYS.get_or_init(|| {
            vec![
                key!(
                    Self,
                    "timeout",
                    |c| c.timeout,
                    |t: &Option<Nanos>| format_auto(*t),
                    |v| { super::keys::auto_duration(v, Nanos::from_millis(1)) }
                ),
                key!(Self, "max_delay", |c| c.max_delay, print_duration, |v| {
                    duration_key(v, Nanos::ZERO)
                }),
                key!(Self, "batch", |c| c.batch, print, batch),
                key!(Self, "values", |c| c.values, print, super::keys::boolean),
                key!(Self, "format", |c| c.format, print, |v: &str| v
                    .parse::<Format>()),
            ]
        })
    }

    fn validate(&self) -> Result<(), super::KeyError> {
        if self.command.trim().is_empty() {
            return Err(super::KeyError {
                key: "command",
                reason: "no command (write exec:CMD, e.g. exec:python3 my_buffer.py)".into(),
            });
        }
        Ok(())
    }

    fn max_delay(&self) -> Nanos {
        self.max_delay
    }

    fn delay_model(&self) -> DelayModel {
        DelayModel::Own
    }

    fn engine(&self) -> Built {
        Built::Own(Box::new(ExecEngine::new(ExecOptions {
            command: self.command.clone(),
            timeout: self
                .timeout
                .map(|t| Duration::from_nanos(u64::try_from(t.as_nanos()).unwrap_or(0))),
            batch: self.batch,
            window: 4,
            values: self.values,
            format: self.format,
            policy: self.spec(),
        })))
    }
}

/// Parses what follows `exec` in a policy string: `:CMD` or `(KEY=VALUE,…):CMD`.
pub(super) fn parse(text: &str) -> Result<super::Policy, crate::Error> {
    let bad = |reason: String| crate::Error::Policy {
        policy: "exec".into(),
        key: String::new(),
        reason,
    };
    let (keys, command) = if let Some(rest) = text.strip_prefix('(') {
        let (keys, after) = rest
            .split_once(')')
            .ok_or_else(|| bad("'(' without ')' (write exec(timeout=2s):CMD)".into()))?;
        let command = after
            .strip_prefix(':')
            .ok_or_else(|| bad("expected ':' and the command after ')'".into()))?;
        (keys, command)
    } else {
        let command = text
            .strip_prefix(':')
            .ok_or_else(|| bad("expected exec:CMD".into()))?;
        ("", command)
    };
    let pairs = jitterlab_capture::spec::parse_pairs(keys).map_err(|e| bad(e.to_string()))?;
    let mut config = ExecConfig {
        command: command.trim().to_owned(),
        ..ExecConfig::default()
    };
    for &(key, value) in &pairs {
        let Some(k) = ExecConfig::keys().iter().find(|k| k.name == key) else {
            return Err(crate::Error::Policy {
                policy: "exec".into(),
                key: key.to_owned(),
                reason: "unknown key (allowed: timeout, max_delay, batch, values, format)".into(),
            });
        };
        (k.set)(&mut config, value).map_err(|reason| crate::Error::Policy {
            policy: "exec".into(),
            key: key.to_owned(),
            reason,
        })?;
    }
    super::Policy::new(config)
}

/// Whether a policy string names an external policy.
pub fn is_exec(text: &str) -> bool {
    let name = text.trim_start();
    name.strip_prefix("exec")
        .is_some_and(|rest| rest.starts_with(':') || rest.starts_with('('))
}
