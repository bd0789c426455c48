//! Golden outputs: every report family (check, gate, suite, suite-gate,
//! merge) in every form (human, Markdown, JUnit, JSON), for fixed seeds and
//! subjects — the reference, two defects, a faulting subject, a suite with
//! a failure — recorded under `tests/golden/` and compared byte for byte
//! after the few things that change from run to run are masked (times and
//! rates, this machine's path to the binary). They pin what a user reads,
//! so that a change to how reports are built shows every line it moves.
//!
//! `CTXGATE_BLESS=1 cargo test --test golden` writes them afresh; the diff
//! of `tests/golden/` is then the change to review.

mod common;

use std::path::{Path, PathBuf};

const FORMS: [(&str, &str); 4] = [
    ("human", "txt"),
    ("markdown", "md"),
    ("junit", "xml"),
    ("json", "json"),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn golden_dir() -> PathBuf {
    root().join("tests/golden")
}

/// Where a scenario's run writes (fixtures, other report forms): relative,
/// so that the paths in its reports are the same on every machine.
fn work(scenario: &str) -> String {
    let dir = format!("target/golden/{scenario}");
    let _ = std::fs::remove_dir_all(root().join(&dir));
    std::fs::create_dir_all(root().join(&dir)).unwrap();
    dir
}

/// What differs between two runs of the same seed: wall times, rates, the
/// path of the binary under test, and the protocol's traffic (how many
/// requests were in flight when a subject faulted depends on timing); and
/// between releases, the version of ctxgate a JSON report records.
fn masked(text: &str) -> String {
    let exe = env!("CARGO_BIN_EXE_ctxgate");
    let text = text.replace(exe, "ctxgate");
    let rules: [(&str, &str); 12] = [
        (
            r#""ctxgateVersion": "[^"]*""#,
            "\"ctxgateVersion\": \"<V>\"",
        ),
        (r"protocol: .*", "protocol: <traffic>"),
        (
            r#""(requests|bytesSent|bytesReceived)": ?\d+"#,
            "\"$1\": <N>",
        ),
        (r"\d+(\.\d+)? s\b", "<T> s"),
        (r"\d+(\.\d+)? ms\b", "<T> ms"),
        (r"\d+(\.\d+)? cases/s", "<R> cases/s"),
        (r"\d+(\.\d+)? MB/s", "<R> MB/s"),
        (
            r#""(seconds|casesPerSecond|elapsed|elapsedSeconds)": ?[0-9.e+-]+"#,
            "\"$1\": <T>",
        ),
        (r#"time="[0-9.]+""#, "time=\"<T>\""),
        (r#"timestamp="[^"]*""#, "timestamp=\"<T>\""),
        (r"in <T> s \(\d+ cases/s\)", "in <T> s"),
        (r"\d+(\.\d+)?s\b", "<T>s"),
    ];
    let mut out = text;
    for (pattern, with) in rules {
        out = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&out, with)
            .into_owned();
    }
    out
}

/// Compare (or, blessing, write) one golden file.
fn golden(name: &str, actual: &str, failures: &mut Vec<String>) {
    let path = golden_dir().join(name);
    let actual = masked(actual);
    if std::env::var("CTXGATE_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    match std::fs::read_to_string(&path) {
        Ok(expected) if expected == actual => {}
        Ok(expected) => {
            let first = expected
                .lines()
                .zip(actual.lines())
                .enumerate()
                .find(|(_, (e, a))| e != a)
                .map(|(i, (e, a))| format!("line {}:\n  golden: {e}\n  now:    {a}", i + 1))
                .unwrap_or_else(|| {
                    format!(
                        "lengths differ: {} lines golden, {} now",
                        expected.lines().count(),
                        actual.lines().count()
                    )
                });
            failures.push(format!("{name}: {first}"));
        }
        Err(_) => failures.push(format!(
            "{name}: no golden file (CTXGATE_BLESS=1 cargo test --test golden writes it)"
        )),
    }
}

/// Run `ctxgate check ARGS` once, its human report on stdout and the other
/// three forms beside it, and compare all four.
fn check_scenario(scenario: &str, args: &[&str], expect_code: i32, failures: &mut Vec<String>) {
    let dir = work(scenario);
    let save = format!("{dir}/fixtures");
    let also: Vec<String> = FORMS[1..]
        .iter()
        .map(|(form, ext)| format!("{form}={dir}/report.{ext}"))
        .collect();
    let mut all: Vec<&str> = vec!["check"];
    all.extend(args);
    all.extend(["--jobs", "1", "--save", &save, "--report", "human"]);
    for a in &also {
        all.extend(["--also-report", a]);
    }
    let out = run_in_root(&all);
    assert_eq!(out.code, expect_code, "{scenario}: {}", out.all());
    golden(&format!("{scenario}.txt"), &out.stdout, failures);
    for (_, ext) in &FORMS[1..] {
        let text = std::fs::read_to_string(root().join(format!("{dir}/report.{ext}"))).unwrap();
        golden(&format!("{scenario}.{ext}"), &text, failures);
    }
}

/// The binary, run from the crate's root (the relative paths above).
fn run_in_root(args: &[&str]) -> common::process::Out {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"));
    cmd.args(args).current_dir(root());
    common::process::run_within(&mut cmd, std::time::Duration::from_secs(300))
}

/// Shards of a run as JSON reports, then `report merge` in every form.
fn merge_scenario(
    scenario: &str,
    args: &[&str],
    merge_args: &[&str],
    expect_code: i32,
    failures: &mut Vec<String>,
) {
    let dir = work(scenario);
    let mut shards = Vec::new();
    for k in 1..=2 {
        let out_file = format!("{dir}/shard-{k}.json");
        let shard = format!("{k}/2");
        let mut all: Vec<&str> = vec!["check"];
        all.extend(args);
        all.extend([
            "--jobs", "1", "--shard", &shard, "--report", "json", "--out", &out_file, "--save",
        ]);
        let save = format!("{dir}/fixtures");
        all.push(&save);
        let out = run_in_root(&all);
        assert!(
            out.code == 0 || out.code == 1,
            "{scenario} shard {k}: {}",
            out.all()
        );
        shards.push(out_file);
    }
    for (form, ext) in FORMS {
        let mut all = vec!["report", "merge"];
        all.extend(shards.iter().map(String::as_str));
        all.extend(merge_args);
        all.extend(["--report", form]);
        let out = run_in_root(&all);
        assert_eq!(out.code, expect_code, "{scenario} {form}: {}", out.all());
        golden(&format!("{scenario}.{ext}"), &out.stdout, failures);
    }
}

/// A scenario's run: `--cases CASES --seed 7 MORE…`.
fn seeded<'a>(cases: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    [&["--cases", cases, "--seed", "7"][..], more].concat()
}

#[test]
fn every_report_family_and_form_reads_as_recorded() {
    let exe = env!("CARGO_BIN_EXE_ctxgate");
    let serve = format!("{exe} serve");
    // A fault on every case: its counts do not depend on when the subject
    // read what (a crash on the second request does: pipelining).
    let faulty = "python3 tests/subjects/faulty.py badkind";
    let suite = "tests/golden/suite";
    let mut failures = Vec::new();

    check_scenario("check-reference", &seeded("120", &[]), 0, &mut failures);
    check_scenario(
        "check-drops-system-prompt",
        &seeded("120", &["--defect", "drops-system-prompt"]),
        1,
        &mut failures,
    );
    check_scenario(
        "check-content-only-estimator",
        &seeded("120", &["--defect", "content-only-estimator"]),
        1,
        &mut failures,
    );
    check_scenario(
        "check-fault",
        &seeded("30", &["--subject", faulty, "--timeout", "2"]),
        1,
        &mut failures,
    );
    check_scenario(
        "suite",
        &seeded(
            "60",
            &["--defect", "drops-system-prompt", "--with-suite", suite],
        ),
        1,
        &mut failures,
    );
    check_scenario(
        "gate",
        &seeded(
            "120",
            &["--defect", "drops-system-prompt", "--baseline", &serve],
        ),
        1,
        &mut failures,
    );
    // A gate with known failures (pinned-kept, failed on both sides) and
    // fixes (what only the baseline breaks).
    let truncating = format!("{serve} --defect truncates-tool-results");
    check_scenario(
        "gate-known-fixed",
        &seeded(
            "120",
            &["--defect", "drops-system-prompt", "--baseline", &truncating],
        ),
        1,
        &mut failures,
    );
    // A baseline that faults on every case: nothing is compared.
    check_scenario(
        "gate-baseline-faults",
        &seeded("20", &["--baseline", faulty, "--timeout", "2"]),
        1,
        &mut failures,
    );
    // A subject that faults on every case where the baseline answers: a
    // fault regression.
    check_scenario(
        "gate-subject-faults",
        &seeded(
            "20",
            &["--subject", faulty, "--timeout", "2", "--baseline", &serve],
        ),
        1,
        &mut failures,
    );
    check_scenario(
        "suite-gate",
        &seeded(
            "60",
            &[
                "--defect",
                "content-only-estimator",
                "--baseline",
                &serve,
                "--with-suite",
                suite,
            ],
        ),
        1,
        &mut failures,
    );
    merge_scenario(
        "merge-check",
        &seeded("120", &["--defect", "drops-system-prompt"]),
        &[],
        1,
        &mut failures,
    );
    merge_scenario(
        "merge-gate",
        &seeded(
            "120",
            &["--defect", "drops-system-prompt", "--baseline", &serve],
        ),
        &[],
        1,
        &mut failures,
    );
    assert!(
        failures.is_empty(),
        "{} golden output(s) changed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
