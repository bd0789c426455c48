//! What the integration tests share. Each test file takes what it needs
//! with `mod common;` (unused parts are allowed: not every file uses all).
//!
//! A folder a test makes under the system's temp dir is a
//! [`process::TempDir`] or [`process::TestDir`]: removed when the test
//! ends, when it fails too — or kept, and named on stderr, with
//! `CTXGATE_KEEP_TEST_DIRS=1`.
#![allow(dead_code)]

pub mod netns;
pub mod process;

/// A data folder a test reads in place (`../shared`'s real histories).
/// Missing, the test is skipped with a line that says so — except where
/// the data must be there (`CTXGATE_REQUIRE_DATA=1`, as `.ci/run` sets):
/// there a missing folder fails, never passes vacuously.
pub fn data_dir(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    if dir.is_dir() {
        return Some(dir.to_path_buf());
    }
    if std::env::var_os("CTXGATE_REQUIRE_DATA").is_some_and(|v| v == "1") {
        panic!(
            "{} is missing, and CTXGATE_REQUIRE_DATA=1 says it must be there",
            dir.display()
        );
    }
    eprintln!("SKIPPED: no data at {}", dir.display());
    None
}

/// How many fixtures (`*.json`) a suite folder holds, at its top level.
pub fn json_files(dir: &str) -> usize {
    let entries = std::fs::read_dir(dir).unwrap().flatten();
    let json = |e: &std::fs::DirEntry| e.path().extension().is_some_and(|x| x == "json");
    entries.filter(json).count()
}

/// A baseline gate run in process: `subject` against the built-in
/// reference on `cases` cases of `seed`, failing on regressions.
pub fn gate_against_reference(
    subject: &mut dyn ctxgate::subject::Subject,
    cases: u64,
    seed: u64,
) -> ctxgate::baseline::BaselineReport {
    let mut baseline = ctxgate::subject::InProcess::reference();
    let opts = ctxgate::check::CheckOptions {
        cases,
        seed,
        ..Default::default()
    };
    ctxgate::baseline::run(
        subject,
        &mut baseline,
        &opts,
        ctxgate::baseline::FailOn::Regressions,
        &mut |_| {},
    )
}

/// The string member `key` of each object in the JSON list `list` (a
/// report's failures' invariants, a table's set names); the test fails
/// where the list or a member is not there.
pub fn texts<'v>(list: &'v serde_json::Value, key: &str) -> Vec<&'v str> {
    let items = list
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"));
    let text = |item: &'v serde_json::Value| {
        (item[key].as_str()).unwrap_or_else(|| panic!("no text `{key}` in {item}"))
    };
    items.iter().map(text).collect()
}

/// A command line's arguments, split on whitespace: `words("--cases 40
/// --seed 3")`. For literal flags and values only; an argument with a space
/// in it (a subject's command) goes in whole beside them.
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}
