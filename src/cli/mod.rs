//! The command line (SPEC §8), thin: each command parses its arguments,
//! calls the library and prints (STYLE habit 10).
//!
//! One file per command, each with an `Args` struct (clap derive) and a
//! `run(Args) -> Result<(), CliError>`; [`common`] holds what they share:
//! reading a history from a file or stdin, building the config from
//! `--config` and the per-field flags, and SPEC §8's exit codes. A new
//! command (check, replay, gen, serve, calibrate, compare-estimators) is a new file here, a
//! variant of [`Command`] and one line in [`main`].
//!
//! Exit codes: 0 all held; 1 an invariant failed, a subject fault or the
//! reference's `cannot_fit`; 2 bad usage or bad input (clap's own usage
//! errors exit 2 too).

/// `println!` for the CLI's stdout ([`common::out`]): a reader that went
/// away (`| head`) ends the run quietly, never with a panic.
macro_rules! outln {
    () => {
        $crate::cli::common::out(format_args!("\n"))
    };
    ($($t:tt)*) => {
        $crate::cli::common::out(format_args!("{}\n", format_args!($($t)*)))
    };
}

/// `eprintln!` for the CLI's stderr ([`common::err`]): guarded as stdout is.
macro_rules! errln {
    ($($t:tt)*) => {
        $crate::cli::common::err(format_args!("{}\n", format_args!($($t)*)))
    };
}

/// `print!` for the CLI's stdout ([`common::out`]).
macro_rules! out {
    ($($t:tt)*) => {
        $crate::cli::common::out(format_args!($($t)*))
    };
}

#[cfg(feature = "agent")]
mod agent;
mod body;
mod calibrate;
mod check;
mod check_sources;
mod common;
mod compact;
mod compare;
mod contract;
mod estimate;
mod files;
mod gen;
mod output;
mod probe_ceiling;
mod replay;
mod report;
mod serve;
mod subject;
mod transport;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Property-based conformance harness for LLM context compactors (ADR 0098).
#[derive(Debug, Parser)]
#[command(name = "ctxgate", version, propagate_version = true)]
#[command(
    after_help = "Exit codes: 0 all held; 1 an invariant failed or was never exercised, a subject fault, or cannot_fit; 2 bad usage or bad input."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// The cap on one input — a history, config, envelope or fixture file,
    /// stdin — in bytes; a bigger one is an error naming it
    #[arg(long, global = true, value_name = "BYTES", default_value_t = ctxgate::input::DEFAULT_MAX_INPUT_BYTES)]
    pub max_input_bytes: u64,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play the model for an agent and judge every request it sends (SPEC §9)
    #[cfg(feature = "agent")]
    Agent(Box<agent::Args>),
    Body(body::Args),
    Calibrate(calibrate::Args),
    /// Generate histories, run a subject, check every invariant, shrink and save failures
    Check(Box<check::Args>),
    /// Re-run fixture files or folders against a subject
    Replay(replay::Args),
    Compact(compact::Args),
    CompareEstimators(compare::Args),
    /// Print the contract this binary implements (docs/contract.md)
    Contract(contract::Args),
    Estimate(estimate::Args),
    /// Print generated cases, one {"config", "messages"} JSON object a line
    Gen(gen::Args),
    /// Speak the subject protocol on stdin/stdout as the reference compactor
    Serve(serve::Args),
    /// Work with check reports: `report merge` joins a seed's shards
    Report(report::Args),
    ProbeCeiling(probe_ceiling::Args),
}

/// Parse the command line, run the command, map its outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // Orphans of a subject are re-parented to us, to be killed and reaped.
    ctxgate::subject::reaper::become_subreaper();
    // A signal stops every process ctxgate started before ctxgate dies.
    ctxgate::subject::reaper::stop_everything_on_signals();
    if let Err(failure) = common::set_max_input_bytes(cli.max_input_bytes) {
        return failure.report();
    }
    let outcome = match cli.command {
        #[cfg(feature = "agent")]
        Command::Agent(args) => agent::run(*args),
        Command::Body(args) => body::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Check(args) => check::run_check(*args),
        Command::Replay(args) => replay::run(args),
        Command::Compact(args) => compact::run(args),
        Command::CompareEstimators(args) => compare::run(args),
        Command::Contract(args) => contract::run(args),
        Command::Estimate(args) => estimate::run(args),
        Command::Gen(args) => gen::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Report(args) => report::run(args),
        Command::ProbeCeiling(args) => probe_ceiling::run(args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}
