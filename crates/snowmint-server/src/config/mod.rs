//! Configuration: one [`Settings`] type read from flags, `SNOWMINT_*` variables and a TOML
//! file, then validated once into a [`Config`], with errors that name the key, the value
//! and the rule.
//!
//! - `settings.rs`: the settings, each declared once with its flag, variable, key and
//!   default;
//! - `choices.rs`: the settings that are a choice among names;
//! - `validate.rs`: [`Config`] and the checks, one per key, that build it.
//!
//! The limits on what one client may take are checked in `limits.rs`, beside [`Limits`](crate::Limits).

mod choices;
mod settings;
#[cfg(test)]
mod tests;
mod validate;

use std::path::PathBuf;

pub use choices::{RestartBehind, RollbackSetting, SequenceStartSetting, clock_mode};
pub use settings::{ClockSettings, LayoutSettings, PlaceSettings, ServeSettings, Settings};
pub use validate::{ClockPolicies, Config, DEFAULT_MAX_RESPONSE_BYTES};

/// A configuration key that could not be used, or a file that could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not valid TOML, or has an unknown key or a value of the wrong type.
    #[error("config file {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the TOML parser said, after the line at fault.
        message: String,
    },
    /// A key has a value that breaks its rule.
    #[error("config key `{key}`: {value:?} {rule}")]
    Invalid {
        /// The key, as written in the file (flags and variables use the same names).
        key: &'static str,
        /// The value given.
        value: String,
        /// The rule it breaks.
        rule: String,
    },
}

pub(crate) fn invalid(key: &'static str, value: impl ToString, rule: impl ToString) -> ConfigError {
    ConfigError::Invalid {
        key,
        value: value.to_string(),
        rule: rule.to_string(),
    }
}

impl ConfigError {
    /// The error with `why` added to its rule: for a bound that another key sets.
    pub(crate) fn because(self, why: &str) -> ConfigError {
        match self {
            ConfigError::Invalid { key, value, rule } => ConfigError::Invalid {
                key,
                value,
                rule: format!("{rule}: {why}"),
            },
            other => other,
        }
    }
}

/// The rule of an error from below that names `value` itself (as `{value:?}`): the part
/// after the value, so [`ConfigError::Invalid`] does not say it twice.
fn rule_after_value(message: &str, value: &str) -> String {
    message.split_once(&format!("{value:?}")).map_or_else(
        || message.to_string(),
        |(_, rest)| rest.trim_start_matches(':').trim().to_string(),
    )
}
