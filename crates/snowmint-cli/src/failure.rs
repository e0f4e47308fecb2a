//! How the command fails: one line on stderr, and an exit status that says whose fault it
//! was (2 for bad input, like clap's usage errors; 1 for everything else).

use std::io::Write;
use std::process::ExitCode;

use snowmint::error::Chain;

/// An error and the exit status it ends the process with.
#[derive(Debug)]
pub struct Failure {
    status: u8,
    error: anyhow::Error,
}

/// Exit status for input the user must fix (clap uses the same for usage errors).
const BAD_INPUT: u8 = 2;
/// Exit status for a failure while doing the work: I/O, the state file, the clock.
const FAILED: u8 = 1;

impl Failure {
    /// Writes `error: <message>` (the context and every cause on one line, each once) to
    /// stderr and returns the exit status.
    pub fn report(self) -> ExitCode {
        // Nothing better to do if stderr itself is gone.
        let _ = writeln!(std::io::stderr(), "error: {}", self.line());
        ExitCode::from(self.status)
    }

    /// The message: what failed, then why, as the libraries' `source()` chains say it.
    fn line(&self) -> String {
        let error: &(dyn std::error::Error + 'static) = self.error.as_ref();
        Chain(error).to_string()
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Failure {
        Failure {
            status: FAILED,
            error,
        }
    }
}

/// Marks an error as the user's to fix.
pub trait BadInput<T> {
    /// The error, as bad input.
    fn bad_input(self) -> Result<T, Failure>;
}

impl<T> BadInput<T> for anyhow::Result<T> {
    fn bad_input(self) -> Result<T, Failure> {
        self.map_err(|error| Failure {
            status: BAD_INPUT,
            error,
        })
    }
}
