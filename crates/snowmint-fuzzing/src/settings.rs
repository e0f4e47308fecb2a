//! `serve`'s settings: a TOML file, then flags (which read each value as its `SNOWMINT_*`
//! variable does: one parser per setting), then validation into a `Config`. None of it
//! panics; every error is one line, and a key's error names a key that exists.

use std::sync::LazyLock;

use arbitrary::Arbitrary;
use clap::{Args, Command, FromArgMatches};
use snowmint_server::{Config, ConfigError, Settings};

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    toml: &'a str,
    /// Flags, each an index into the settings and a value.
    flags: Vec<(u8, &'a str)>,
}

fn command() -> Command {
    Settings::augment_args(Command::new("serve").no_binary_name(true))
}

/// Every setting's name, as the file, the flag and the variable give it.
static KEYS: LazyLock<Vec<String>> = LazyLock::new(|| {
    command()
        .get_arguments()
        .map(|arg| arg.get_id().to_string())
        .collect()
});

fn one_line(message: &str) {
    assert!(!message.contains('\n'), "{message:?}");
}

/// Feeds the bytes, as a TOML file and flags, to `Settings::from_toml`, the settings'
/// flags and `Config::try_from`.
pub fn check(data: &[u8]) {
    let Some(input) = crate::input::<Input>(data) else {
        return;
    };
    let mut settings = match Settings::from_toml(input.toml, "fuzz.toml".as_ref()) {
        Ok(settings) => settings,
        Err(err) => {
            let message = err.to_string();
            assert!(message.starts_with("config file fuzz.toml: "), "{message}");
            return one_line(&message);
        }
    };
    let flags: Vec<String> = input
        .flags
        .iter()
        .map(|(key, value)| {
            let key = &KEYS[usize::from(*key) % KEYS.len()];
            format!("--{}={value}", key.replace('_', "-"))
        })
        .collect();
    // clap's own errors are its usage text, several lines: only "no panic" holds there.
    let Ok(given) = command().try_get_matches_from(&flags) else {
        return;
    };
    if settings.update_from_arg_matches(&given).is_err() {
        return;
    }
    if let Err(err) = Config::try_from(settings) {
        one_line(&err.to_string());
        if let ConfigError::Invalid { key, .. } = err {
            assert!(KEYS.iter().any(|k| k == key), "unknown key {key}");
        }
    }
}
