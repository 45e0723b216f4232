//! Argument parsing shared by the tools: clap with ckopt's exit codes.
//!
//! `--help` and `--version` print to stdout and exit 0; every usage error
//! prints clap's message to stderr and exits 1 (clap's own default is 2),
//! the code every other ckopt error uses.

use clap::{Command, FromArgMatches};
use std::process::ExitCode;

/// Parses the process arguments with `cmd` into `C`, or returns the exit
/// code the tool should end with after clap has printed its message.
pub fn parse<C: FromArgMatches>(cmd: Command) -> Result<C, ExitCode> {
    cmd.try_get_matches().and_then(|m| C::from_arg_matches(&m)).map_err(|e| {
        let _ = e.print();
        if e.use_stderr() { ExitCode::FAILURE } else { ExitCode::SUCCESS }
    })
}
