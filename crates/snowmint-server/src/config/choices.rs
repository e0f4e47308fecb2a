//! The settings that are a choice among names: spelled the same as a flag, a variable and a
//! TOML value, because clap and serde read the same enum. The clock mode is the core's own
//! [`ClockMode`], which [`clock_mode`] lets clap read.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use serde::Deserialize;
use snowmint::ClockMode;

/// What the server does when it starts with its clock behind the high-water mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestartBehind {
    /// Serve, answer /readyz with 503 and the reason, and issue once the clock passes
    Wait,
    /// Exit with an error naming the gap
    Fail,
}

/// Reads `--clock` as the core's [`ClockMode`] by its name: clap lists the core's names, with
/// [`ClockMode::about`], as the possible values, and the core's `FromStr` reads them (serde reads the TOML key with
/// the core's `Deserialize`), so the modes are declared once, in the core.
///
/// # Examples
///
/// ```
/// use clap::Parser;
/// use snowmint::ClockMode;
///
/// #[derive(Parser)]
/// struct Flags {
///     #[arg(long, value_parser = snowmint_server::clock_mode())]
///     clock: ClockMode,
/// }
///
/// assert_eq!(Flags::try_parse_from(["x", "--clock", "wall"])?.clock, ClockMode::Wall);
/// let err = Flags::try_parse_from(["x", "--clock", "ntp"]).err().unwrap().to_string();
/// assert!(err.contains("[possible values: monotonic, wall, counter]"), "{err}");
/// # Ok::<(), clap::Error>(())
/// ```
#[must_use]
pub fn clock_mode() -> impl TypedValueParser<Value = ClockMode> {
    let modes = ClockMode::ALL.map(|mode| PossibleValue::new(mode.name()).help(mode.about()));
    PossibleValuesParser::new(modes).map(|name| {
        name.parse::<ClockMode>()
            .expect("a possible value is a mode's name")
    })
}

/// What the generator does when the clock goes back: the name of a
/// [`RollbackPolicy`](snowmint::RollbackPolicy), whose waits are `rollback_wait_ms` long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RollbackSetting {
    /// Refuse with an error naming the gap
    Refuse,
    /// Wait for the clock to catch up, up to rollback_wait_ms, then refuse
    Wait,
    /// Keep a logical clock that never goes back, running ahead of the wall clock if need be
    Logical,
    /// Issue the sequence numbers left in the newest tick, then wait as `wait` does
    Spare,
}

/// Where each tick's sequence starts: the name of a [`SequenceStart`](snowmint::SequenceStart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SequenceStartSetting {
    /// At zero, as Twitter's Snowflake does
    Zero,
    /// At a random value below 16, so ids at low traffic are not all even
    Random,
    /// Where the previous tick stopped
    Continue,
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;
    use serde::de::DeserializeOwned;

    use super::*;

    /// Every variant's flag spelling is its TOML spelling, and both are the documented ones.
    fn spelled_alike<T: ValueEnum + DeserializeOwned + PartialEq + std::fmt::Debug>(
        names: &[&str],
    ) {
        let flags: Vec<String> = T::value_variants()
            .iter()
            .map(|v| v.to_possible_value().unwrap().get_name().to_string())
            .collect();
        assert_eq!(flags, names);
        for (variant, name) in T::value_variants().iter().zip(names) {
            assert_eq!(&T::from_str(name, false).unwrap(), variant);
            let from_toml: T = toml::Value::String((*name).to_string()).try_into().unwrap();
            assert_eq!(&from_toml, variant, "{name}");
        }
    }

    #[test]
    fn flags_and_files_spell_each_choice_alike() {
        spelled_alike::<RestartBehind>(&["wait", "fail"]);
        spelled_alike::<RollbackSetting>(&["refuse", "wait", "logical", "spare"]);
        spelled_alike::<SequenceStartSetting>(&["zero", "random", "continue"]);
    }

    /// The clock's flag takes the core's names, and so does the file.
    #[test]
    fn the_clock_mode_is_spelled_as_the_core_names_it() {
        let command = clap::Command::new("x").arg(
            clap::Arg::new("clock")
                .long("clock")
                .value_parser(clock_mode()),
        );
        for mode in ClockMode::ALL {
            let given = command
                .clone()
                .try_get_matches_from(["x", "--clock", mode.name()])
                .unwrap();
            assert_eq!(given.get_one::<ClockMode>("clock"), Some(&mode));
            let from_toml: ClockMode = toml::Value::String(mode.name().to_string())
                .try_into()
                .unwrap();
            assert_eq!(from_toml, mode);
        }
    }
}
