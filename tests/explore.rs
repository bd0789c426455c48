//! Exploring beyond a subject's claims, and every failing case (issue 46,
//! items 2 and 3): `--invariants` naming an invariant the subject does not
//! claim warns and points at `--claim`; `--claim` judges it, and every
//! report form says it was explored; a fixture it saved replays with the
//! same `--claim`.

mod common;

use common::process::{ctxgate, Out, TempDir};
use serde_json::Value;

/// An identity compactor that claims only `no-premature-compaction`
/// (which identity keeps) and answers no `estimate`: it breaks `progress`
/// and `body-under-ceiling` whenever compaction is due, without claiming
/// either.
fn identity() -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/subjects/faulty.py");
    format!("python3 {} identity", shell_words::quote(script))
}

/// `ctxgate check` of `subject` with `extra`, its JSON report in `dir`,
/// its fixtures under `dir/fixtures`; the output and the report.
fn check(subject: &str, extra: &[&str], dir: &TempDir) -> (Out, Value) {
    let report = dir.join("report.json");
    let fixtures = dir.join("fixtures");
    let mut args = vec![
        "check",
        "--subject",
        subject,
        "--report",
        "json",
        "--out",
        &report,
        "--save",
        &fixtures,
    ];
    args.extend_from_slice(extra);
    let out = ctxgate(&args);
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|_| panic!("no report (exit {}):\n{}", out.code, out.all()));
    (out, serde_json::from_str(&text).unwrap())
}

#[test]
fn an_unclaimed_invariant_named_by_invariants_warns_and_points_at_claim() {
    let dir = TempDir::new("explore-warn");
    let (out, report) = check(
        &identity(),
        &[
            "--cases",
            "40",
            "--seed",
            "1",
            "--invariants",
            "progress,no-premature-compaction",
        ],
        &dir,
    );
    // What it claims held; what it does not claim was not checked.
    assert_eq!(out.code, 0, "{}", out.all());
    out.stderr_has("warning: --invariants names progress, which the subject \"faulty-identity\" does not claim");
    out.stderr_has("`--claim progress` judges it anyway");
    let checked: Vec<&String> = report["invariants"].as_object().unwrap().keys().collect();
    assert_eq!(checked, ["no-premature-compaction"]);
    assert_eq!(report["explored"], serde_json::json!([]));
    // An estimate invariant of a subject without `estimate`: no `--claim`
    // can judge it, and the warning says why instead.
    let (out, _) = check(
        &identity(),
        &[
            "--cases",
            "5",
            "--seed",
            "1",
            "--invariants",
            "estimate-monotone",
        ],
        &dir,
    );
    out.stderr_has("estimate-monotone, which the subject \"faulty-identity\" does not claim (it does not answer `estimate`");
    out.stderr_has("it cannot be judged on this subject");
    assert!(
        !out.stderr.contains("--claim estimate-monotone"),
        "{}",
        out.stderr
    );
    // Every claim asked for (`all`, or no --invariants): nothing to warn of.
    for extra in [&["--invariants", "all"][..], &[]] {
        let (out, _) = check(&identity(), &[&["--cases", "5"], extra].concat(), &dir);
        assert!(!out.stderr.contains("warning"), "{extra:?}: {}", out.stderr);
    }
}

#[test]
fn claim_judges_an_unclaimed_invariant_and_every_report_form_says_so() {
    let dir = TempDir::new("explore-claim");
    let md = dir.join("report.md");
    let xml = dir.join("report.xml");
    let also_md = format!("markdown={md}");
    let also_xml = format!("junit={xml}");
    let (out, report) = check(
        &identity(),
        &[
            "--cases",
            "60",
            "--seed",
            "1",
            "--claim",
            "progress",
            "--claim",
            "no-premature-compaction",
            "--also-report",
            &also_md,
            "--also-report",
            &also_xml,
        ],
        &dir,
    );
    // The identity breaks progress: a failure of an explored invariant
    // fails the run, as it was asked for.
    assert_eq!(out.code, 1, "{}", out.all());
    out.stderr_has(
        "--claim no-premature-compaction: the subject \"faulty-identity\" claims it already",
    );
    assert_eq!(report["explored"], serde_json::json!(["progress"]));
    assert!(report["invariants"]["progress"]["fail"].as_u64().unwrap() > 0);
    assert!(
        report["invariants"]["no-premature-compaction"]["pass"]
            .as_u64()
            .unwrap()
            > 0
    );
    let failures = report["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{report}");
    let failure = &failures[0];
    assert_eq!(failure["invariant"], "progress");
    assert_eq!(failure["explored"], true);
    let replay = failure["replay"].as_str().unwrap();
    assert!(replay.ends_with(" --claim progress"), "{replay}");
    // Human, Markdown and JUnit say it too.
    out.stdout_has("explored beyond the subject's claims (--claim): progress;");
    out.stdout_has("FAILED progress (case ");
    out.stdout_has(") — explored: the subject does not claim it");
    out.stdout_has("(1 of them explored beyond the subject's claims)");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("🔎 explored beyond the subject's claims (`--claim`): `progress`")
            && md.contains("— *explored*: the subject does not claim it")
            && md.contains("--claim progress"),
        "{md}"
    );
    let xml = std::fs::read_to_string(&xml).unwrap();
    assert!(
        xml.contains("<system-out>explored beyond the subject&apos;s claims (--claim)")
            && xml.contains("(explored: the subject does not claim progress)"),
        "{xml}"
    );

    // Its fixture replays as the report says: without --claim nothing is
    // judged (and the skip points at --claim); with it, it fails again.
    let saved = failure["saved"].as_str().unwrap();
    let plain = ctxgate(&["replay", saved, "--subject", &identity()]);
    assert_eq!(plain.code, 1, "{}", plain.all());
    plain.stdout_has("SKIP");
    plain.stdout_has("`--claim progress` judges them anyway");
    let args = shell_words::split(replay).unwrap();
    assert_eq!(args[0], "ctxgate");
    let args: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    let again = ctxgate(&args);
    assert_eq!(again.code, 1, "{}", again.all());
    again.stdout_has("replay: 0 held, 1 failed, 0 skipped");
}

/// Shards of a run that explored merge into the report of the whole run,
/// which still says what was explored; shards that explored differently
/// do not merge.
#[test]
fn explored_shards_merge_and_shards_that_explored_otherwise_do_not() {
    let dir = TempDir::new("explore-merge");
    let shard = |k: &str, claim: &str| {
        let sub = TempDir::new(&format!("explore-merge-{k}-{claim}"));
        let (_, report) = check(
            &identity(),
            &[
                "--cases", "30", "--seed", "4", "--shard", k, "--claim", claim,
            ],
            &sub,
        );
        dir.file(
            &format!("{}-{claim}.json", k.replace('/', "of")),
            report.to_string(),
        )
    };
    let (one, two) = (shard("1/2", "progress"), shard("2/2", "progress"));
    let merged = ctxgate(&["report", "merge", &one, &two, "--report", "json"]);
    assert_eq!(merged.code, 1, "{}", merged.all());
    let report = merged.json();
    assert_eq!(report["explored"], serde_json::json!(["progress"]));
    assert_eq!(report["failures"][0]["explored"], true);
    let other = shard("2/2", "body-under-ceiling");
    let refused = ctxgate(&["report", "merge", &one, &other]);
    assert_eq!(refused.code, 2, "{}", refused.all());
}

#[test]
fn a_claim_that_names_nothing_or_cannot_be_judged_is_bad_usage() {
    let subject = identity();
    let cases: [(&[&str], &str); 5] = [
        (&["--claim", "progres"], "--claim: unknown invariant \"progres\""),
        (&["--claim", " , "], "--claim names no invariant"),
        (
            &["--claim", "estimate-monotone", "--subject", &subject],
            "--claim estimate-monotone: the subject \"faulty-identity\" cannot be judged on it: it does not answer `estimate`",
        ),
        (&["--claim", "progress", "--baseline", "x"], "cannot be used with"),
        (&["--invariants", "progres"], "unknown invariant \"progres\""),
    ];
    for (args, says) in cases {
        let out = ctxgate(&[&["check", "--cases", "3"], args].concat());
        assert_eq!(out.code, 2, "{args:?}: {}", out.all());
        out.stderr_has(says);
    }
}
