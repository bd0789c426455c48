//! `ctxgate report merge FILE…`: one report from the JSON reports of a
//! seed's shards (`check --shard K/N --report json`, or a baseline gate's:
//! `check --baseline CMD --shard K/N --report json`), as one run over all
//! their cases would have written it.

use std::path::PathBuf;

use clap::{Args as ClapArgs, Subcommand};

use super::common::Failure;
use ctxgate::report::render::{self, ReportKind};
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

    /// The subject command for the replay lines [default: as the shards
    /// recorded it]
    #[arg(long, value_name = "CMD")]
    pub subject: Option<String>,

    /// The baseline command for a baseline gate's replay lines [default: as
    /// the shards recorded it]
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
        let expected = "a report of `ctxgate check --report json`, a JSON object";
        let value = ctxgate::model::parse_json_expecting(&bytes, expected).map_err(|mut e| {
            // A report is no history: an index the history parser found
            // means nothing here.
            e.message = None;
            e.in_file(&name)
        })?;
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

/// The reports are the shards of one run, each once, all of them: a
/// merge of some would be a report of part of the seed's cases that says
/// nothing of the rest; one shard twice, its cases counted twice.
fn whole_set_of_shards(reports: &[(String, bool, Value)]) -> Result<(), Failure> {
    if let [(_, _, only)] = reports {
        if only.get("shard").is_none() {
            return Ok(()); // a whole run's report, written again in another form
        }
    }
    let mut seen: Vec<(u64, &str)> = Vec::new();
    let mut of: Option<(u64, &str)> = None;
    for (name, _, value) in reports {
        let shard = match value.get("shard").and_then(Value::as_str) {
            Some(s) => ctxgate::check::Shard::parse(s)
                .map_err(|e| Failure::bad_input(format!("{name}: `shard`: {e}")))?,
            None => {
                return Err(Failure::bad_input(format!(
                    "{name}: the report of a whole run, not of a shard (`--shard K/N`): \
                     there is nothing to merge it with"
                )))
            }
        };
        match of {
            Some((n, first)) if n != shard.n => {
                return Err(Failure::bad_input(format!(
                    "{name}: shard {}/{}, but {first} is a shard of {n}: the shards of one run \
                     share their N",
                    shard.k, shard.n
                )))
            }
            None => of = Some((shard.n, name)),
            Some(_) => {}
        }
        if let Some((_, other)) = seen.iter().find(|(k, _)| *k == shard.k) {
            return Err(Failure::bad_input(format!(
                "{name}: shard {}/{} again (also {other}): its cases would count twice",
                shard.k, shard.n
            )));
        }
        seen.push((shard.k, name));
    }
    let (n, first) = of.expect("two reports or more");
    // Shards of N cover a run of at least N cases: each shard has one.
    let cases = reports
        .iter()
        .map(|(_, _, v)| v.get("cases").and_then(Value::as_u64).unwrap_or(0))
        .try_fold(0u64, u64::checked_add)
        .unwrap_or(u64::MAX);
    if n > cases {
        return Err(Failure::bad_input(format!(
            "{first}: a shard of {n}, but the reports hold {cases} case(s) in all: a run of \
             {cases} case(s) has at most {cases} shard(s)"
        )));
    }
    // Named, at most ten: N may be large.
    let missing = n - seen.len() as u64;
    if missing > 0 {
        let named: Vec<String> = (1..=n)
            .filter(|k| !seen.iter().any(|(s, _)| s == k))
            .take(10)
            .map(|k| format!("{k}/{n}"))
            .collect();
        let more = match missing > named.len() as u64 {
            true => format!(" and {} more", missing - named.len() as u64),
            false => String::new(),
        };
        return Err(Failure::bad_input(format!(
            "shard(s) {}{more} missing: the merged report would cover part of the seed's cases \
             and say nothing of the rest",
            named.join(", ")
        )));
    }
    Ok(())
}

fn merge_checks(args: &MergeArgs, reports: Vec<(String, bool, Value)>) -> Result<(), Failure> {
    // Reports that do not merge say so first; then, whether they are all
    // of the run's shards.
    let shards = whole_set_of_shards(&reports);
    let hint = replay_hint(&args.subject, &reports, |v| v.get("replayWith"));
    let suite = suite_of_shards(&reports, ctxgate::suite::SuiteReport::from_json);
    let merged = fold(
        reports,
        "a ctxgate check report",
        |v| {
            let r = report::from_json(v)?;
            r.consistent()?;
            Ok(r)
        },
        ctxgate::check::CheckReport::merge,
    )?;
    shards?;
    let suite = suite?;
    let hint = hint?;
    let render = |kind| render::check(&merged, suite.as_ref(), &hint, kind);
    write(args, &render(ReportKind::Human), &render(args.report))?;
    let suite_problem = suite.as_ref().and_then(|s| s.problem());
    if merged.ok() && suite_problem.is_none() {
        return Ok(());
    }
    let mut parts: Vec<String> = suite_problem.into_iter().collect();
    parts.push(format!(
        "{} invariant(s) failed, {} fault kind(s), {} thing(s) never checked",
        merged.failures.len(),
        merged.faults.len(),
        merged.not_checked().len()
    ));
    Err(Failure::failed(format!(
        "the merged run of {} shard report(s): {}",
        args.files.len(),
        parts.join("; ")
    )))
}

/// The suite's outcome (`check --with-suite`, read by `read`: a plain
/// run's or a gate's), from the one report that has it — shard 1's, which
/// alone replays the suite — so that the merged report shows it and fails
/// as the run did.
fn suite_of_shards<S>(
    reports: &[(String, bool, Value)],
    read: fn(&Value) -> Result<S, String>,
) -> Result<Option<S>, Failure> {
    let mut found: Option<(&str, S)> = None;
    for (name, _, value) in reports {
        let Some(v) = value.get("suite") else {
            continue;
        };
        if let Some((first, _)) = &found {
            return Err(Failure::bad_input(format!(
                "{name}: a suite's outcome, and so has {first}: only shard 1 of a run replays \
                 the suite (`--with-suite`), and its fixtures would count twice"
            )));
        }
        let suite = read(v).map_err(|e| {
            Failure::bad_input(format!("{name}: not a ctxgate report: `suite`: {e}"))
        })?;
        found = Some((name, suite));
    }
    Ok(found.map(|(_, s)| s))
}

fn merge_gates(args: &MergeArgs, reports: Vec<(String, bool, Value)>) -> Result<(), Failure> {
    // Reports that do not merge say so first; then, whether they are all
    // of the run's shards.
    let shards = whole_set_of_shards(&reports);
    let hints = replay_hint(&args.subject, &reports, |v| {
        v.pointer("/replayWith/subject")
    })
    .and_then(|subject| {
        let baseline = replay_hint(&args.baseline, &reports, |v| {
            v.pointer("/replayWith/baseline")
        })?;
        Ok(ctxgate::baseline::report::Hints { subject, baseline })
    });
    let suite = suite_of_shards(&reports, ctxgate::baseline::suite::SuiteGate::from_json);
    let merged = fold(
        reports,
        "a ctxgate baseline gate's report",
        |v| {
            let r = ctxgate::baseline::merge::from_json(v)?;
            r.consistent()?;
            Ok(r)
        },
        ctxgate::baseline::BaselineReport::merge,
    )?;
    shards?;
    let suite = suite?;
    let hints = hints?;
    let render = |kind| render::gate(&merged, suite.as_ref(), &hints, kind);
    write(args, &render(ReportKind::Human), &render(args.report))?;
    let why = render::gate_failures(&merged, suite.as_ref());
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

/// How the merged report's replay lines choose the subject: `--subject`
/// (or `--baseline`) if given, else as every shard recorded it — shards
/// that disagree are of different runs.
fn replay_hint(
    given: &Option<String>,
    reports: &[(String, bool, Value)],
    recorded: impl Fn(&Value) -> Option<&Value>,
) -> Result<ReplayHint, Failure> {
    if let Some(cmd) = given {
        return Ok(ReplayHint::subject(cmd));
    }
    let mut found: Option<(&str, ReplayHint)> = None;
    for (name, _, value) in reports {
        let Some(hint) = ReplayHint::from_json(recorded(value)) else {
            return Err(Failure::bad_input(format!(
                "{name}: no `replayWith` (a report of an older ctxgate): give --subject \
                 (and --baseline) so that the replay lines name the subject"
            )));
        };
        match &found {
            Some((first, h)) if *h != hint => {
                return Err(Failure::bad_input(format!(
                    "{name}: replays with {:?}, {first} with {:?}: shards of one run have \
                     one subject",
                    hint.flags, h.flags
                )))
            }
            Some(_) => {}
            None => found = Some((name, hint)),
        }
    }
    Ok(found.map(|(_, h)| h).unwrap_or_default())
}

/// Each report read, and merged into the first; errors name the file.
fn fold<R>(
    reports: Vec<(String, bool, Value)>,
    kind: &str,
    read: impl Fn(&Value) -> Result<R, String>,
    merge: fn(&mut R, R) -> Result<(), String>,
) -> Result<R, Failure> {
    let mut merged: Option<R> = None;
    let mut first = String::new();
    for (name, _, value) in reports {
        let one =
            read(&value).map_err(|e| Failure::bad_input(format!("{name}: not {kind}: {e}")))?;
        match merged.as_mut() {
            None => {
                merged = Some(one);
                first = name;
            }
            Some(m) => merge(m, one).map_err(|e| {
                Failure::bad_input(format!("{name}: cannot merge with {first}: {e}"))
            })?,
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
