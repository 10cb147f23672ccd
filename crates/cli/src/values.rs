//! Flag values clap checks and lists: the enumerated ones as `ValueEnum`s or possible values
//! (shown by `--help`, offered by completions), and the open ones (`layout:SPEC`,
//! `offset=MS`) checked by the library's own parser, so every bad value is refused in clap's
//! format before anything is read.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use jitterlab_capture::decode::{DECODER_NAMES, DecoderConfig};
use jitterlab_capture::synth::{self, PROFILES};
use jitterlab_replay::ClockMapping;

/// The sender's motion (`synth`, `send`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Motion {
    /// A circle of 5 m radius, one turn per 4 s.
    Circle,
    /// A random walk at 1.5 m/s (seeded by --seed).
    Walk,
    /// 2 s moving along x at 4 m/s, 1 s standing.
    StopGo,
    /// The circle, teleported 20 m along x every 5 s.
    Teleport,
}

impl From<Motion> for synth::Motion {
    fn from(m: Motion) -> Self {
        match m {
            Motion::Circle => Self::Circle,
            Motion::Walk => Self::Walk,
            Motion::StopGo => Self::StopGo,
            Motion::Teleport => Self::Teleport,
        }
    }
}

/// `--profile`: the names of `synth::PROFILES`, each with what it models.
pub(crate) fn profiles() -> PossibleValuesParser {
    PossibleValuesParser::new(
        PROFILES
            .iter()
            .map(|&(name, about, _)| PossibleValue::new(name).help(about)),
    )
}

/// `--objective`: what `tune` minimises.
pub(crate) fn objectives() -> PossibleValuesParser {
    PossibleValuesParser::new([
        PossibleValue::new("delay").help("the worst mean display delay"),
        PossibleValue::new("error").help("the worst p99 error against ground truth"),
    ])
}

/// `--decoder`: the fixed names listed, `layout:SPEC` checked by the layout parser.
#[derive(Clone, Debug)]
pub(crate) struct Decoder;

impl TypedValueParser for Decoder {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        checked(cmd, arg, value, DecoderConfig::parse)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(DECODER_NAMES.split(", ").map(PossibleValue::new)))
    }
}

/// `--clock`: estimate, hindsight or offset=MS, checked by `ClockMapping`'s parser.
#[derive(Clone, Debug)]
pub(crate) struct Clock;

impl TypedValueParser for Clock {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        checked(cmd, arg, value, str::parse::<ClockMapping>)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            [
                PossibleValue::new("estimate")
                    .help("online minimum transit with drift (the default)"),
                PossibleValue::new("hindsight").help("minimum transit over the whole stream"),
                PossibleValue::new("offset=MS").help("sender time = local time + MS"),
            ]
            .into_iter(),
        ))
    }
}

/// `--codec`: the codec names the E-model knows, or `ie=N,bpl=N`, checked by `Codec`'s parser.
#[derive(Clone, Debug)]
pub(crate) struct Codec;

impl TypedValueParser for Codec {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        checked(
            cmd,
            arg,
            value,
            str::parse::<jitterlab_replay::quality::Codec>,
        )
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let names = jitterlab_replay::quality::Codec::known_names();
        let mut values: Vec<PossibleValue> = names
            .split(", ")
            .map(|n| PossibleValue::new(n.to_owned()))
            .collect();
        values.push(PossibleValue::new("ie=N,bpl=N"));
        Some(Box::new(values.into_iter()))
    }
}

/// `value` as text, if `check` accepts it; else clap's "invalid value" error with the reason.
fn checked<T, E>(
    cmd: &clap::Command,
    arg: Option<&clap::Arg>,
    value: &std::ffi::OsStr,
    check: impl Fn(&str) -> Result<T, E> + Clone + Send + Sync + 'static,
) -> Result<String, clap::Error>
where
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    clap::builder::StringValueParser::new()
        .try_map(move |text| check(&text).map(|_| text))
        .parse_ref(cmd, arg, value)
}
