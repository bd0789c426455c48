//! `ctxgate report merge FILE…`: one report from the JSON reports of a
//! seed's shards (`check --shard K/N --report json`), as one run over all
//! their cases would have written it.

use std::path::PathBuf;

use clap::{Args as ClapArgs, Subcommand};

use super::check::ReportKind;
use super::common::Failure;
use ctxgate::report::{self, ReplayHint};

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    pub command: ReportCommand,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Merge the JSON reports of a seed's shards into one report
    #[command(after_help = "\
Exit codes: 0 the merged run held (every checked invariant exercised);
1 it found a failure or fault, or checked nothing; 2 a report that does not
read, or reports of different seeds or subjects.")]
    Merge(MergeArgs),
}

#[derive(Debug, ClapArgs)]
pub struct MergeArgs {
    /// JSON reports written by `ctxgate check --report json --out FILE`
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// The merged report's form
    #[arg(long, value_enum, default_value_t = ReportKind::Human)]
    pub report: ReportKind,

    /// Write the merged report to FILE (a human summary still goes to stdout)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// The subject command, for the replay lines of the human report
    #[arg(long, value_name = "CMD")]
    pub subject: Option<String>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let ReportCommand::Merge(args) = args.command;
    let mut merged: Option<ctxgate::check::CheckReport> = None;
    for path in &args.files {
        let name = path.display().to_string();
        let bytes = ctxgate::input::read_file(path, "the report", super::common::max_input_bytes())
            .map_err(Failure::from)?;
        let value = ctxgate::model::parse_json(&bytes).map_err(|e| e.in_file(&name))?;
        if value.get("baseline").is_some() && value.get("failOn").is_some() {
            return Err(Failure::bad_input(format!(
                "{name}: a `check --baseline` report: `report merge` merges the reports of \
                 `check` alone, not yet those of a baseline gate; run the gate unsharded, \
                 or shard `check` on each side and compare the merged reports"
            )));
        }
        let one = report::from_json(&value)
            .map_err(|e| Failure::bad_input(format!("{name}: not a ctxgate check report: {e}")))?;
        match merged.as_mut() {
            None => merged = Some(one),
            Some(m) => m
                .merge(one)
                .map_err(|e| Failure::bad_input(format!("{name}: cannot merge: {e}")))?,
        }
    }
    let merged = merged.expect("at least one file");
    let hint = ReplayHint {
        subject: args.subject.clone(),
    };
    let human = report::human(&merged, &hint);
    let rendered = super::check::render(&merged, &hint, args.report);
    match &args.out {
        Some(path) => {
            std::fs::write(path, &rendered).map_err(|e| {
                Failure::bad_input(format!("{}: cannot write the report: {e}", path.display()))
            })?;
            print!("{human}");
        }
        None => print!("{rendered}"),
    }
    if merged.ok() {
        Ok(())
    } else {
        Err(Failure::failed(format!(
            "the merged run of {} shard report(s): {} invariant(s) failed, {} fault kind(s), {} thing(s) never checked",
            args.files.len(),
            merged.failures.len(),
            merged.faults.len(),
            merged.not_checked().len()
        )))
    }
}
