//! `calibrate` and `compare-estimators` outside this workspace (issue 28
//! item 6): a user's checkout has no `../shared`, so without `--corpus` the
//! real-histories set is skipped with a line that says so, and the rest of
//! the run goes on; a `--corpus DIR` that is not there is still bad input.
//!
//! The binary runs in a fresh temporary folder (no `../shared` beside it)
//! with `CARGO_MANIFEST_DIR` removed from its environment, as an installed
//! `ctxgate` runs.

#![cfg(feature = "calibrate")]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::process::{run_within, Out, TestDir};

use serde_json::Value;

const SKIPPED: &str = "the real-histories set is skipped: no corpus found";

/// A fresh folder two levels down in the system's temporary folder, so
/// that its `../shared` is `<tmp>/ctxgate-portable-PID-NAME/shared`:
/// absent. The guard of the folder above it (keep it while the folder is
/// in use), and the folder.
fn workdir(name: &str) -> (TestDir, PathBuf) {
    let above = TestDir::new("portable", name);
    let dir = above.join("work");
    std::fs::create_dir_all(&dir).unwrap();
    assert!(!dir.join("../shared").exists());
    (above, dir)
}

/// `ctxgate ARGS` in `dir`, as an installed ctxgate runs: no
/// `CARGO_MANIFEST_DIR`.
fn run(dir: &PathBuf, args: &[&str]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxgate"));
    cmd.args(args)
        .current_dir(dir)
        .env_remove("CARGO_MANIFEST_DIR");
    run_within(&mut cmd, std::time::Duration::from_secs(300))
}

/// The report a run with `--json` wrote: no corpus, and `SKIPPED` said;
/// the names of its sets (`rows` or `sets`).
fn skipped_sets(out: &Out, sets: &str) -> Vec<String> {
    let json = out.json();
    assert_eq!(json["corpus"], Value::Null);
    assert!(json["corpusSkipped"].as_str().unwrap().contains(SKIPPED));
    let names = common::texts(&json[sets], "set");
    names.into_iter().map(str::to_owned).collect()
}

#[test]
fn calibrate_runs_without_shared_and_says_it_skipped_the_real_histories() {
    let (_above, dir) = workdir("calibrate");
    let out = run(&dir, &["calibrate", "--samples", "4"]).ok();
    out.stderr_has(SKIPPED);
    out.stderr_has("pass --corpus DIR");
    out.stdout_has(SKIPPED);
    out.stdout_has("english-prose");
    assert!(!out.stdout.contains("real-histories  "), "{}", out.stdout);

    let out = run(&dir, &["calibrate", "--samples", "4", "--json"]).ok();
    let sets = skipped_sets(&out, "rows");
    assert!(sets.iter().any(|s| s == "code"), "{sets:?}");
    assert!(!sets.iter().any(|s| s == "real-histories"), "{sets:?}");
}

#[test]
fn compare_estimators_runs_without_shared_and_says_it_skipped_the_real_histories() {
    let (_above, dir) = workdir("compare");
    let args = common::words(
        "compare-estimators --builtin adr-0098 --builtin content-only \
         --samples 4 --toolloop 3 --rounds 1",
    );
    let out = run(&dir, &args).ok();
    out.stderr_has(SKIPPED);
    out.stdout_has(SKIPPED);
    out.stdout_has("0 real histories (no corpus)");

    let mut with_json = args.clone();
    with_json.push("--json");
    let sets = skipped_sets(&run(&dir, &with_json).ok(), "sets");
    assert!(sets.iter().any(|s| s == "toolloop"), "{sets:?}");
    assert!(!sets.iter().any(|s| s == "real-histories"), "{sets:?}");
}

#[test]
fn a_corpus_that_was_named_must_be_there() {
    let (_above, dir) = workdir("named");
    for command in [
        "calibrate --samples 2",
        "compare-estimators --builtin adr-0098 --builtin content-only \
         --samples 2 --toolloop 1 --rounds 1",
    ] {
        let command = common::words(command);
        let mut args = command.clone();
        args.extend(["--corpus", "no-such-folder"]);
        let out = run(&dir, &args);
        assert_eq!(out.code, 2, "{}: {}", command[0], out.stderr);
        out.stderr_has("no-such-folder");
        assert!(
            !out.stderr.contains(SKIPPED),
            "{}: {}",
            command[0],
            out.stderr
        );
    }
}
