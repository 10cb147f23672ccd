//! One module per subcommand.

pub(crate) mod capture;
pub(crate) mod completions;
pub(crate) mod demo;
pub(crate) mod discover;
pub(crate) mod export;
pub(crate) mod import;
pub(crate) mod info;
pub(crate) mod man;
pub(crate) mod replay;
pub(crate) mod report;
pub(crate) mod send;
pub(crate) mod sweep;
pub(crate) mod synth;
pub(crate) mod tune;
