//! `ctxgate replay PATH…`: re-run fixture files or folders against a
//! subject. A fixture that no longer parses is an error, not a skip.

use std::path::PathBuf;

use clap::Args as ClapArgs;

use super::common::Failure;
use super::subject::SubjectArgs;
use ctxgate::fixture::{collect, Fixture};
use ctxgate::harness::run_case;
use ctxgate::oracle::Verdict;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Fixture files, or folders searched for *.json
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    #[command(flatten)]
    pub subject: SubjectArgs,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let files = collect(&args.paths)?;
    if files.is_empty() {
        return Err(Failure::bad_input(
            "no fixture files (*.json) under the given paths",
        ));
    }
    // Parse every fixture before running any: a broken one is bad input.
    let fixtures = files
        .iter()
        .map(|p| Fixture::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut subject = args.subject.open()?;
    let (mut failed, mut passed) = (0, 0);
    for (path, fixture) in files.iter().zip(&fixtures) {
        let result = run_case(
            subject.as_mut(),
            &fixture.config,
            &fixture.messages,
            fixture.invariants,
        );
        let shown = path.display();
        if let Some(fault) = &result.fault {
            failed += 1;
            println!(
                "FAULT {shown}\n  {}",
                fault.to_string().replace('\n', "\n  ")
            );
            continue;
        }
        let fails: Vec<String> = result.violations().map(|v| v.to_string()).collect();
        if fails.is_empty() {
            passed += 1;
            let applied = result
                .verdicts
                .iter()
                .filter(|(_, v)| *v == Verdict::Pass)
                .count();
            println!("ok    {shown} ({applied} invariant(s) held)");
        } else {
            failed += 1;
            println!("FAIL  {shown}");
            for f in fails {
                println!("  {f}");
            }
        }
    }
    println!("\nreplay: {passed} passed, {failed} failed");
    if failed > 0 {
        Err(Failure::failed(format!(
            "{failed} of {} fixture(s) failed against {}",
            fixtures.len(),
            subject.info().name
        )))
    } else {
        Ok(())
    }
}
