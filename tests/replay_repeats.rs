//! `replay` of a fixture judged on `deterministic` runs it until it
//! differs (up to `ctxgate::fixture::REPEAT_TRIES` times): a subject that
//! differs only some of the time fails every replay, not some.

mod common;

use common::process::{ctxgate, TempDir};

/// A fixture of `deterministic` alone: one short history.
const FIXTURE: &str = r#"{
  "ctxgate": 1,
  "name": "deterministic-sometimes",
  "op": "compact",
  "config": {"contextWindow": 7750, "threshold": 0.7, "transportMaxBodyBytes": 520000,
             "bytesPerToken": 4, "keepRecent": 1, "summaryMaxBytes": 0, "wireFormat": "engine"},
  "messages": [{"role": "user", "content": "hello"}],
  "invariants": ["deterministic"]
}"#;

#[test]
fn a_subject_deterministic_only_sometimes_fails_every_replay() {
    // tests/subjects/sometimes.py differs on every fourth request it
    // answers: a replay that ran each pair once held 8 of these 16 copies
    // (the pairs 1-2, 5-6, …); run until they differ, none holds.
    let dir = TempDir::new("replay-repeats");
    for i in 0..16 {
        dir.file(&format!("f{i:02}.json"), FIXTURE);
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/subjects/sometimes.py");
    let subject = format!("python3 {script}");
    let out = ctxgate(&["replay", dir.dir(), "--subject", &subject]);
    assert_eq!(out.code, 1, "{}", out.all());
    out.stdout_has("replay: 0 held, 16 failed, 0 skipped");
}

#[test]
fn a_deterministic_subject_still_holds() {
    let dir = TempDir::new("replay-repeats-reference");
    let fixture = dir.file("f.json", FIXTURE);
    let out = ctxgate(&["replay", &fixture]);
    assert_eq!(out.code, 0, "{}", out.all());
    out.stdout_has("replay: 1 held, 0 failed, 0 skipped");
}
