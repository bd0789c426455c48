//! `ctxgate report merge FILE…`: one report from the JSON reports of a
//! seed's shards (`check --shard K/N --report json`, or a baseline gate's:
//! `check --baseline CMD --shard K/N --report json`), as one run over all
//! their cases would have written it.

use std::path::PathBuf;

use clap::{Args as ClapArgs, Subcommand};

use super::check::ReportKind;
use super::common::Failure;
use ctxgate::report::{self, ReplayHint};
use serde_json::Value;

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
read, or reports of different seeds, subjects, baselines or kinds. A baseline
gate's shards merge into the gate's report, and exit as its --fail-on says.")]
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

    /// The baseline command, for a baseline gate's replay lines
    #[arg(long, value_name = "CMD")]
    pub baseline: Option<String>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let ReportCommand::Merge(args) = args.command;
    let mut reports = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let name = path.display().to_string();
        let bytes = ctxgate::input::read_file(path, "the report", super::common::max_input_bytes())
            .map_err(Failure::from)?;
        let value = ctxgate::model::parse_json(&bytes).map_err(|e| e.in_file(&name))?;
        let gate = value.get("baseline").is_some() && value.get("failOn").is_some();
        reports.push((name, gate, value));
    }
    let first_is_gate = reports[0].1;
    if let Some((name, gate, _)) = reports.iter().find(|(_, g, _)| *g != first_is_gate) {
        let (this, that) = match gate {
            true => ("a `check --baseline` report", "`check` reports"),
            false => ("a `check` report", "`check --baseline` reports"),
        };
        return Err(Failure::bad_input(format!(
            "{name}: {this}, among {that}: shards of one run are all one kind"
        )));
    }
    match first_is_gate {
        true => merge_gates(&args, reports),
        false => merge_checks(&args, reports),
    }
}

fn merge_checks(args: &MergeArgs, reports: Vec<(String, bool, Value)>) -> Result<(), Failure> {
    let merged = fold(
        reports,
        "a ctxgate check report",
        report::from_json,
        ctxgate::check::CheckReport::merge,
    )?;
    let hint = ReplayHint {
        subject: args.subject.clone(),
    };
    write(
        args,
        &report::human(&merged, &hint),
        &super::check::render(&merged, &hint, args.report),
    )?;
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

fn merge_gates(args: &MergeArgs, reports: Vec<(String, bool, Value)>) -> Result<(), Failure> {
    let merged = fold(
        reports,
        "a ctxgate baseline gate's report",
        ctxgate::baseline::merge::from_json,
        ctxgate::baseline::BaselineReport::merge,
    )?;
    let hints = ctxgate::baseline::report::Hints {
        subject: ReplayHint {
            subject: args.subject.clone(),
        },
        baseline: ReplayHint {
            subject: args.baseline.clone(),
        },
    };
    write(
        args,
        &ctxgate::baseline::report::human(&merged, &hints),
        &super::baseline::render(&merged, &hints, args.report),
    )?;
    let why = merged.gate_failures();
    match why.is_empty() {
        true => Ok(()),
        false => Err(Failure::failed(format!(
            "the merged gate of {} shard report(s): {} (seed {})",
            args.files.len(),
            why.join("; "),
            merged.seed
        ))),
    }
}

/// Each report read, and merged into the first; errors name the file.
fn fold<R>(
    reports: Vec<(String, bool, Value)>,
    kind: &str,
    read: fn(&Value) -> Result<R, String>,
    merge: fn(&mut R, R) -> Result<(), String>,
) -> Result<R, Failure> {
    let mut merged: Option<R> = None;
    for (name, _, value) in reports {
        let one =
            read(&value).map_err(|e| Failure::bad_input(format!("{name}: not {kind}: {e}")))?;
        match merged.as_mut() {
            None => merged = Some(one),
            Some(m) => merge(m, one)
                .map_err(|e| Failure::bad_input(format!("{name}: cannot merge: {e}")))?,
        }
    }
    Ok(merged.expect("at least one file"))
}

/// The merged report to `--out` (and its human summary to stdout), or to
/// stdout.
fn write(args: &MergeArgs, human: &str, rendered: &str) -> Result<(), Failure> {
    match &args.out {
        Some(path) => {
            std::fs::write(path, rendered).map_err(|e| {
                Failure::bad_input(format!("{}: cannot write the report: {e}", path.display()))
            })?;
            print!("{human}");
        }
        None => print!("{rendered}"),
    }
    Ok(())
}
