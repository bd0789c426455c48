//! Every fixture under tests/fixtures/ replays clean against the reference:
//! a failure found once is checked for ever. A fixture that does not parse
//! fails the test (it is never skipped).

use std::path::{Path, PathBuf};

use ctxgate::fixture::{collect, replay, Fixture, Replayed};
use ctxgate::subject::InProcess;

#[test]
fn every_fixture_replays_clean_against_the_reference() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let files = collect(&[PathBuf::from(&dir)])
        .expect("tests/fixtures is readable")
        .files;
    // An empty or moved folder would pass vacuously.
    assert!(
        files.len() >= 10,
        "only {} fixture(s) under {}",
        files.len(),
        dir.display()
    );
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
        // The replay `ctxgate replay` does: a fixture of which nothing is
        // judged is no pass.
        let mut subject = InProcess::reference();
        match replay(&mut subject, &fixture).0 {
            Replayed::Held { judged } if judged > 0 => {}
            other => problems.push(format!("{}: {other:?}", path.display())),
        }
    }
    assert!(
        problems.is_empty(),
        "{} fixture(s) failed:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
