//! Message-count trimmers (issue 46 item 4): `trims-when-due`, the
//! extension a trimmer claims where it cannot claim `progress`. A trimmer
//! that gives up whenever call ids repeat across iterations passed every
//! invariant it could claim before; it fails this one alone, while a
//! correct count trimmer and the reference pass it, and the generated
//! cases reach its shape (the coverage rows that say how often).

mod common;

use common::process::{ctxgate, Out, TempDir};
use serde_json::Value;

/// tests/subjects/count_trimmer.py keeping the last `n` messages, with the
/// repeated-ids bug planted when `planted`.
fn trimmer(n: u32, planted: bool) -> String {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/subjects/count_trimmer.py"
    );
    let bug = if planted { " repeat-ids" } else { "" };
    format!("python3 {} {n}{bug}", shell_words::quote(script))
}

/// `check` of `subject` ("" for the reference) over `cases` at seed 1 with
/// `extra`; its output and JSON report; fixtures under `dir/fixtures`.
fn check(subject: &str, cases: &str, extra: &[&str], dir: &TempDir) -> (Out, Value) {
    let report = dir.join("report.json");
    let fixtures = dir.join("fixtures");
    let mut args = vec!["check", "--cases", cases, "--seed", "1"];
    if !subject.is_empty() {
        args.extend(["--subject", subject]);
    }
    args.extend(["--report", "json", "--out", &report, "--save", &fixtures]);
    args.extend_from_slice(extra);
    let out = ctxgate(&args);
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|_| panic!("no report (exit {}):\n{}", out.code, out.all()));
    (out, serde_json::from_str(&text).unwrap())
}

fn counts(report: &Value, inv: &str) -> (u64, u64) {
    let s = &report["invariants"][inv];
    (s["pass"].as_u64().unwrap(), s["fail"].as_u64().unwrap())
}

#[test]
fn a_trimmer_that_gives_up_on_repeated_ids_fails_trims_when_due_alone() {
    let dir = TempDir::new("trim-planted");
    let (out, report) = check(&trimmer(6, true), "400", &[], &dir);
    assert_eq!(out.code, 1, "{}", out.all());
    let failed: Vec<&str> = report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["invariant"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["trims-when-due"], "{}", out.all());
    // Everything else it claims held, and was judged.
    for (inv, _) in report["invariants"].as_object().unwrap() {
        let (pass, fail) = counts(&report, inv);
        assert!(pass > 0, "{inv} never passed");
        if inv != "trims-when-due" {
            assert_eq!(fail, 0, "{inv}");
        }
    }
    let (_, fail) = counts(&report, "trims-when-due");
    assert!(fail >= 10, "{fail} failing cases in 400");
    out.stdout_has("yet the subject returned the history unchanged");
    // Its fixture replays as a failure on it, and as a pass on the correct one.
    let saved = TempDir(dir.path().join("fixtures"));
    let fixtures = saved.fixtures();
    std::mem::forget(saved);
    assert_eq!(fixtures.len(), 1, "{fixtures:?}");
    let fixture = fixtures[0].to_str().unwrap();
    let fixture_json: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    assert_eq!(
        fixture_json["invariants"],
        serde_json::json!(["trims-when-due"])
    );
    let again = ctxgate(&["replay", fixture, "--subject", &trimmer(6, true)]);
    assert_eq!(again.code, 1, "{}", again.all());
    ctxgate(&["replay", fixture, "--subject", &trimmer(6, false)]).ok();
}

#[test]
fn a_correct_count_trimmer_passes_trims_when_due() {
    let dir = TempDir::new("trim-correct");
    let (out, report) = check(&trimmer(6, false), "400", &[], &dir);
    assert_eq!(out.code, 0, "{}", out.all());
    let (pass, fail) = counts(&report, "trims-when-due");
    assert_eq!(fail, 0);
    assert!(
        pass >= 100,
        "trims-when-due judged {pass} times in 400 cases"
    );
    // It claims neither progress nor idempotent: a count keeps the output
    // over the trigger at times, and trimming that again drops more.
    let explored = check(
        &trimmer(6, false),
        "400",
        &["--claim", "progress,idempotent"],
        &TempDir::new("trim-correct-explore"),
    );
    assert_eq!(explored.0.code, 1, "{}", explored.0.all());
    assert!(counts(&explored.1, "progress").1 > 0);
}

#[test]
fn the_reference_passes_trims_when_due_and_does_not_claim_it_unnamed() {
    let dir = TempDir::new("trim-reference");
    // Not named in a hello, it is not judged.
    let (out, report) = check("", "200", &[], &dir);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(report["invariants"].get("trims-when-due").is_none());
    let (out, report) = check("", "400", &["--claim", "trims-when-due"], &dir);
    assert_eq!(out.code, 0, "{}", out.all());
    let (pass, fail) = counts(&report, "trims-when-due");
    assert_eq!(fail, 0);
    assert!(pass >= 100, "{pass}");
}

/// The shape the property needs is generated: over the trigger with more
/// than the minimal output, and that with ids reused — about one case in
/// two and one in ten at the default generator.
#[test]
fn generated_cases_reach_the_shape_trims_when_due_needs() {
    let out = ctxgate(&["gen", "--seed", "1", "--cases", "1000", "--stats"]).ok();
    let share = |label: &str| -> f64 {
        let line = out
            .stdout
            .lines()
            .chain(out.stderr.lines())
            .find(|l| l.contains(label))
            .unwrap_or_else(|| panic!("no {label:?} row:\n{}", out.all()));
        let pct = line.split_whitespace().last().unwrap();
        pct.trim_end_matches('%').parse().unwrap()
    };
    assert!(share("over trigger, more than minimal ") >= 30.0);
    assert!(share("… and ids reused across iterations") >= 5.0);
}
