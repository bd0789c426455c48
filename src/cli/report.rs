//! `ctxgate report merge FILE…`: one report from the JSON reports of a
//! seed's shards (`check --shard K/N --report json`, or a baseline gate's:
//! `check --baseline CMD --shard K/N --report json`), as one run over all
//! their cases would have written it.

use std::path::PathBuf;

use clap::{Args as ClapArgs, Subcommand};

use super::common::CliError;
use ctxgate::report::merge::{merge, ShardReport};

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    pub command: ReportCommand,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Merge the JSON reports of a seed's shards (of `check`, or of a
    /// baseline gate) into one report
    #[command(after_help = "\
Exit codes: 0 the merged run held (every checked invariant exercised);
1 it found a failure or fault, or checked nothing; 2 a report that does not
read, reports of different seeds, subjects, baselines or kinds, reports of
another ctxgate version than this one (`ctxgateVersion`), or a report of one
case rerun alone (`check --case N`: no shard). A baseline gate's shards
merge into the gate's report, and exit as its --fail-on says.")]
    Merge(MergeArgs),
}

#[derive(Debug, ClapArgs)]
pub struct MergeArgs {
    /// JSON reports written by `ctxgate check --report json --out FILE`
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    #[command(flatten)]
    pub reports: super::output::ReportArgs,

    /// The subject command for the replay lines [default: as the shards
    /// recorded it]
    #[arg(long, value_name = "CMD")]
    pub subject: Option<String>,

    /// The baseline command for a baseline gate's replay lines [default: as
    /// the shards recorded it]
    #[arg(long, value_name = "CMD")]
    pub baseline: Option<String>,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let ReportCommand::Merge(args) = args.command;
    let files = (args.files.iter()).fold(super::files::RunFiles::new(), |files, path| {
        files.input("the shard report", Some(path))
    });
    args.reports.files(files).check()?;
    let cap = super::common::max_input_bytes();
    let reports = (args.files.iter())
        .map(|path| ShardReport::read(path, cap))
        .collect::<Result<Vec<_>, _>>()?;
    let opened = args.reports.open()?;
    let merged = merge(reports, args.subject.as_deref(), args.baseline.as_deref())
        .map_err(CliError::bad_input)?;
    let write_error = opened.write(args.reports.report, &merged, "");
    let (what, n) = (merged.what(), args.files.len());
    let lead = format!("the merged {what} of {n} shard report(s): ");
    super::output::exit(&merged, write_error, None, &lead)
}
