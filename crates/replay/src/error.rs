//! The replay crate's error type.

/// Invalid policies, frame clocks and inputs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A policy string names an unknown policy or key, or a value out of range.
    #[error("policy {policy}{}: {reason}", if key.is_empty() { String::new() } else { format!(", key {key}") })]
    Policy {
        /// The policy name.
        policy: String,
        /// The offending key (empty for the policy name itself).
        key: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// Any other invalid input.
    #[error("{0}")]
    Invalid(String),
}
