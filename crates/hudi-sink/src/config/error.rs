//! The error every configuration parser returns, and the value parsers they share, so that a bad value is
//! reported the same way (naming the key) whichever module reads it.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// A bad or unknown configuration key.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ConfigError {
    /// The key is not one this sink knows.
    #[error("unknown configuration key {key:?} (check the spelling; docs/configuration.md lists every key)")]
    UnknownKey { key: String },
    /// A required key is missing.
    #[error("missing required configuration key {key}")]
    Missing { key: &'static str },
    /// A value could not be parsed or is out of range.
    #[error("invalid value {value:?} for {key}: {reason}")]
    Invalid {
        key: String,
        value: String,
        reason: String,
    },
    /// Two keys contradict each other.
    #[error("conflicting configuration: {reason}")]
    Conflict { reason: String },
}

/// An [`ConfigError::Invalid`] for `key`.
pub fn invalid(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

/// `true` / `false` in any case, surrounding space allowed; anything else is an error naming the key.
pub fn parse_bool(key: &str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(key, value, "expected true or false")),
    }
}

/// A number of type `T`, surrounding space allowed; the parse error names the key.
pub fn parse_num<T: FromStr>(key: &str, value: &str) -> Result<T, ConfigError>
where
    T::Err: fmt::Display,
{
    value
        .trim()
        .parse::<T>()
        .map_err(|e| invalid(key, value, e.to_string()))
}

/// A comma-separated list, items trimmed, empty items dropped.
pub fn parse_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}
