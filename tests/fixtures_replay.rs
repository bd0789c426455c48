//! Every fixture under tests/fixtures/ replays clean against the reference:
//! a failure found once is checked for ever. A fixture that does not parse
//! fails the test (it is never skipped).

use std::path::{Path, PathBuf};

use ctxgate::fixture::{collect, Fixture};
use ctxgate::harness::run_case;
use ctxgate::subject::InProcess;

#[test]
fn every_fixture_replays_clean_against_the_reference() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let files = collect(&[PathBuf::from(&dir)])
        .expect("tests/fixtures is readable")
        .files;
    let mut problems = Vec::new();
    for path in &files {
        let fixture = match Fixture::load(path) {
            Ok(f) => f,
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        if fixture.see.trim().is_empty() {
            problems.push(format!("{}: a fixture needs a `see`", path.display()));
        }
        let mut subject = InProcess::reference();
        let result = run_case(
            &mut subject,
            &fixture.config,
            &fixture.messages,
            fixture.invariants,
        );
        if let Some(f) = &result.fault {
            problems.push(format!("{}: {f}", path.display()));
        }
        for v in result.violations() {
            problems.push(format!("{}: {v}", path.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "{} fixture(s) failed:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
