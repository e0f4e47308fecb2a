//! The settings that are a choice among names: spelled the same as a flag, a variable and a
//! TOML value, because clap and serde read the same enum.

use serde::Deserialize;

/// What the server does when it starts with its clock behind the high-water mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestartBehind {
    /// Serve, answer /readyz with 503 and the reason, and issue once the clock passes
    Wait,
    /// Exit with an error naming the gap
    Fail,
}

/// Where the time field of the ids comes from: the name of a
/// [`ClockMode`](snowmint::ClockMode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockSetting {
    /// The wall clock at start plus monotonic time since: no wall-clock step reaches ids
    Monotonic,
    /// The wall clock at every tick: steps forward are followed, steps back meet --rollback
    Wall,
    /// A counter that moves on a tick each time the sequence fills: ids no longer tell time
    Counter,
}

impl From<ClockSetting> for snowmint::ClockMode {
    fn from(setting: ClockSetting) -> snowmint::ClockMode {
        match setting {
            ClockSetting::Monotonic => snowmint::ClockMode::Monotonic,
            ClockSetting::Wall => snowmint::ClockMode::Wall,
            ClockSetting::Counter => snowmint::ClockMode::Counter,
        }
    }
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
        let modes = snowmint::ClockMode::ALL.map(snowmint::ClockMode::name);
        spelled_alike::<ClockSetting>(&modes);
        for setting in ClockSetting::value_variants() {
            let name = setting.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(snowmint::ClockMode::from(*setting).name(), name);
        }
        spelled_alike::<RollbackSetting>(&["refuse", "wait", "logical", "spare"]);
        spelled_alike::<SequenceStartSetting>(&["zero", "random", "continue"]);
    }
}
