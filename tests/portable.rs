//! `calibrate` and `compare-estimators` outside this workspace (issue 28
//! item 6): a user's checkout has no `../shared`, so without `--corpus` the
//! real-histories set is skipped with a line that says so, and the rest of
//! the run goes on; a `--corpus DIR` that is not there is still bad input.
//!
//! The binary runs in a fresh temporary folder (no `../shared` beside it)
//! with `CARGO_MANIFEST_DIR` removed from its environment, as an installed
//! `ctxgate` runs.

#![cfg(feature = "calibrate")]

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

const SKIPPED: &str = "the real-histories set is skipped: no corpus found";

/// A fresh folder two levels down in the system's temporary folder, so
/// that its `../shared` is `<tmp>/ctxgate-portable-PID/shared`: absent.
fn workdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("ctxgate-portable-{}", std::process::id()))
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    assert!(!dir.join("../shared").exists());
    dir
}

fn run(dir: &PathBuf, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(args)
        .current_dir(dir)
        .env_remove("CARGO_MANIFEST_DIR")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn calibrate_runs_without_shared_and_says_it_skipped_the_real_histories() {
    let dir = workdir("calibrate");
    let out = run(&dir, &["calibrate", "--samples", "4"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(stderr.contains(SKIPPED), "{stderr}");
    assert!(stderr.contains("pass --corpus DIR"), "{stderr}");
    assert!(stdout.contains(SKIPPED), "the report says it too: {stdout}");
    assert!(stdout.contains("english-prose"), "{stdout}");
    assert!(!stdout.contains("real-histories  "), "{stdout}");

    let out = run(&dir, &["calibrate", "--samples", "4", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["corpus"], Value::Null);
    assert!(json["corpusSkipped"].as_str().unwrap().contains(SKIPPED));
    let sets: Vec<&str> = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["set"].as_str().unwrap())
        .collect();
    assert!(sets.contains(&"code"), "{sets:?}");
    assert!(!sets.contains(&"real-histories"), "{sets:?}");
}

#[test]
fn compare_estimators_runs_without_shared_and_says_it_skipped_the_real_histories() {
    let dir = workdir("compare");
    let args = [
        "compare-estimators",
        "--builtin",
        "adr-0098",
        "--builtin",
        "content-only",
        "--samples",
        "4",
        "--toolloop",
        "3",
        "--rounds",
        "1",
    ];
    let out = run(&dir, &args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(stderr.contains(SKIPPED), "{stderr}");
    assert!(stdout.contains(SKIPPED), "the report says it too: {stdout}");
    assert!(stdout.contains("0 real histories (no corpus)"), "{stdout}");

    let mut with_json = args.to_vec();
    with_json.push("--json");
    let out = run(&dir, &with_json);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["corpus"], Value::Null);
    assert!(json["corpusSkipped"].as_str().unwrap().contains(SKIPPED));
    let sets: Vec<&str> = json["sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["set"].as_str().unwrap())
        .collect();
    assert!(sets.contains(&"toolloop"), "{sets:?}");
    assert!(!sets.contains(&"real-histories"), "{sets:?}");
}

#[test]
fn a_corpus_that_was_named_must_be_there() {
    let dir = workdir("named");
    for command in [
        vec!["calibrate", "--samples", "2"],
        vec![
            "compare-estimators",
            "--builtin",
            "adr-0098",
            "--builtin",
            "content-only",
            "--samples",
            "2",
            "--toolloop",
            "1",
            "--rounds",
            "1",
        ],
    ] {
        let mut args = command.clone();
        args.extend(["--corpus", "no-such-folder"]);
        let out = run(&dir, &args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", command[0]);
        assert!(
            stderr.contains("no-such-folder"),
            "{}: {stderr}",
            command[0]
        );
        assert!(!stderr.contains(SKIPPED), "{}: {stderr}", command[0]);
    }
}
