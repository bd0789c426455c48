//! `ctxgate replay PATH…`: re-run fixture files or folders against a
//! subject. A fixture that no longer parses is an error, not a skip; a
//! fixture of which nothing could be judged is reported as skipped, and a
//! replay that judged nothing at all does not pass.

use std::path::PathBuf;

use clap::Args as ClapArgs;

use super::common::CliError;
use super::subject::SubjectArgs;
use ctxgate::fixture::{collect, load_compactor_fixtures, replay_claiming};
use ctxgate::suite::{SuiteCase, SuiteReport};

#[derive(Debug, ClapArgs)]
#[command(after_help = "\
Exit codes: 0 every fixture held (with --expect-failures: every fixture
failed); 1 a fixture failed or the subject faulted (with --expect-failures:
a fixture held, was skipped, or the subject faulted on it — a crash, a
timeout, a library that raised: nothing was judged), or nothing at all was
judged; 2 bad usage or a fixture that does not parse.

A fixture judged on deterministic or idempotent is run up to 8 times,
failing at the first run that differs: a subject that differs only some of
the time fails its replay too, not only the replays where it happened to.")]
pub struct Args {
    /// Fixture files, or folders searched for *.json
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Every fixture must still fail an invariant against this subject
    /// (findings kept against the version they were found on): a fixture
    /// that holds, of which nothing is judged, or on which the subject
    /// faults, fails the replay
    #[arg(long)]
    pub expect_failures: bool,

    /// Print each protocol line: `→` a request sent, `←` the subject's
    /// answer as it wrote it (a line over 4 KiB with its middle left out);
    /// the built-in reference then runs as `ctxgate serve`
    #[arg(long)]
    pub trace: bool,

    /// Also judge these invariants of each fixture where the subject does
    /// not claim them (as `check --claim` did when it saved the fixture):
    /// the names --invariants takes; repeat the flag or list them with commas
    #[arg(long, value_name = "INV[,INV…]")]
    pub claim: Vec<String>,

    #[command(flatten)]
    pub subject: SubjectArgs,
}

pub fn run(mut args: Args) -> Result<(), CliError> {
    args.subject.trace = args.trace;
    let explore = ctxgate::oracle::InvariantSet::parse_list(&args.claim.join(","))
        .map_err(|e| CliError::bad_input(format!("--claim: {e}")))?;
    let walked = collect(&args.paths)?;
    super::common::show_notes(&walked.notes);
    let files = walked.files;
    if files.is_empty() {
        return Err(CliError::bad_input(
            "no fixture files (*.json) under the given paths",
        ));
    }
    // Parse every fixture before running any: a broken one is bad input.
    // Agent fixtures are `agent replay`'s, set aside with a note.
    let (loaded, agents) = load_compactor_fixtures(files, super::common::max_input_bytes())?;
    let notes: Vec<_> = agents
        .into_iter()
        .map(ctxgate::input::Note::agent_fixture)
        .collect();
    super::common::show_notes(&notes);
    if loaded.is_empty() {
        return Err(CliError::bad_input(
            "no compactor fixture under the given paths (agent fixtures are for `ctxgate agent replay`)",
        ));
    }
    let (files, fixtures): (Vec<_>, Vec<_>) = loaded.into_iter().unzip();
    if args.trace {
        outln!("(tracing: → a request line sent, ← an answer line received)");
    }
    let mut subject = args.subject.open()?;
    let mut report = SuiteReport {
        source: PathBuf::new(),
        cases: Vec::new(),
    };
    for (path, fixture) in files.iter().zip(&fixtures) {
        // A fixture's file name is text from outside: on one line.
        let shown = ctxgate::model::one_line(&path.display().to_string());
        if args.trace {
            outln!("--- {shown}");
        }
        let (outcome, unportable) = replay_claiming(subject.as_mut(), fixture, explore);
        let case = SuiteCase {
            path: path.clone(),
            name: fixture.name.clone(),
            see: fixture.see.clone(),
            outcome,
        };
        out!("{}", case.human(false));
        if unportable > 0 {
            outln!(
                "  note: {unportable} number(s) here have no spelling every JSON library keeps (2^64, 1e400, 0.00001…), and the subject does not claim exact numbers"
            );
        }
        report.cases.push(case);
    }
    let (held, failed, skipped) = (report.held(), report.failed(), report.skipped());
    outln!("\nreplay: {held} held, {failed} failed, {skipped} skipped");
    // The subject as its hello names it, version included: what a script
    // that replays against a pinned release checks actually ran.
    let info = subject.info();
    let name = &ctxgate::model::one_line(format!("{} {}", info.name, info.version).trim());
    match report.replay_problem(name, args.expect_failures) {
        Some(why) => Err(CliError::failed(why)),
        None if args.expect_failures => {
            outln!("every fixture still fails against {name}, as expected");
            Ok(())
        }
        None => {
            outln!("every fixture judged held against {name}");
            Ok(())
        }
    }
}
