//! `ctxgate check --baseline` (issue 15, part 1): the gate on a change.
//! The baseline and the subject are the reference and its defective
//! variants (`ctxgate serve --defect NAME`, src/subject/defects.rs), or
//! the misbehaving scripts of tests/subjects/. A regression fails the gate
//! naming its invariant, with a fixture that fails on the subject and holds
//! on the baseline; a failure both share is known; a failure only the
//! baseline had is a fix; a baseline fault is never the subject's; a run
//! that compared nothing never passes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

mod common;

use common::process::{ctxgate_within, Out, TempDir};

/// `ctxgate ARGS`, killed (the test failed) after five minutes.
fn run(args: &[&str]) -> Out {
    ctxgate_within(args, Duration::from_secs(300))
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ctxgate")
}

fn serve(defect: Option<&str>) -> String {
    match defect {
        Some(d) => format!("{} serve --defect {d}", bin()),
        None => format!("{} serve", bin()),
    }
}

fn script(name: &str, kind: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/subjects")
        .join(name);
    format!("python3 {} {kind}", p.display())
}

/// The fixture saved in `dir` whose file name starts with `prefix`.
fn fixture_named(dir: &TempDir, prefix: &str) -> Option<PathBuf> {
    let named = |p: &PathBuf| p.file_name().unwrap().to_str().unwrap().starts_with(prefix);
    dir.fixtures().into_iter().find(named)
}

/// `check --subject SUBJECT --baseline BASELINE` over 150 cases of seed 3,
/// fixtures saved in `dir`, plus `extra`.
fn compare(subject: &str, baseline: &str, dir: &TempDir, extra: &[&str]) -> Out {
    let mut args = vec!["check", "--subject", subject, "--baseline", baseline];
    args.extend(common::words("--cases 150 --seed 3 --jobs 2"));
    args.extend(["--save", dir.dir()]);
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn a_regression_fails_the_gate_naming_the_invariant_with_its_fixture() {
    let dir = TempDir::new("regression");
    let subject = serve(Some("drops-system-prompt"));
    let baseline = serve(None);
    let out = compare(&subject, &baseline, &dir, &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    out.stdout_has("REGRESSION pinned-kept");
    assert!(
        out.stderr.contains("regression(s)") && out.stderr.contains("pinned-kept"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("\nKNOWN"), "{}", out.stdout);
    // The fixture of the regression fails on the subject and holds on the
    // baseline: it was shrunk on exactly that.
    let fixture = fixture_named(&dir, "pinned-kept-").expect("the pinned-kept regression is saved");
    let f = fixture.to_str().unwrap();
    out.stdout_has(&format!("replay {f}"));
    let on_subject = run(&["replay", f, "--subject", &subject]);
    assert_eq!(on_subject.code, 1, "{}", on_subject.stdout);
    let on_baseline = run(&["replay", f, "--subject", &baseline]);
    assert_eq!(
        on_baseline.code, 0,
        "{}{}",
        on_baseline.stdout, on_baseline.stderr
    );
    let saved = read_json(f);
    assert_eq!(saved["invariants"], serde_json::json!(["pinned-kept"]));
    assert!(
        saved["see"]
            .as_str()
            .unwrap()
            .contains("not on the baseline"),
        "{saved}"
    );
}

#[test]
fn the_same_defect_on_both_sides_is_known_and_passes_the_gate() {
    let dir = TempDir::new("known");
    let both = serve(Some("drops-system-prompt"));
    let out = compare(&both, &both, &dir, &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out.stdout_has("KNOWN (both sides fail");
    out.stdout_has("  pinned-kept: ");
    assert!(!out.stdout.contains("REGRESSION"), "{}", out.stdout);
    out.stdout_has("OK: no regression");
    assert!(dir.fixtures().is_empty(), "no regression, no fixture");
    // The same run fails under --fail-on any-failure, and passes under never.
    let strict = compare(&both, &both, &dir, &["--fail-on", "any-failure"]);
    assert_eq!(strict.code, 1, "{}", strict.stdout);
    strict.stderr_has("known failure(s)");
    let lax = compare(
        &serve(Some("drops-system-prompt")),
        &serve(None),
        &dir,
        &["--fail-on", "never"],
    );
    assert_eq!(lax.code, 0, "{}", lax.stdout);
    lax.stdout_has("REGRESSION pinned-kept");
}

#[test]
fn a_fix_is_listed_and_passes_the_gate() {
    let dir = TempDir::new("fix");
    let out = compare(&serve(None), &serve(Some("drops-system-prompt")), &dir, &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out.stdout_has("FIXED (the baseline failed");
    out.stdout_has("  pinned-kept: ");
    assert!(!out.stdout.contains("REGRESSION"), "{}", out.stdout);
}

#[test]
fn every_report_form_says_what_regressed() {
    let dir = TempDir::new("forms");
    let subject = serve(Some("drops-system-prompt"));
    let baseline = serve(None);
    // JSON, to a file; the human summary still goes to stdout.
    let json_path = dir.join("report.json");
    let out = compare(
        &subject,
        &baseline,
        &dir,
        &["--report", "json", "--out", &json_path],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    out.stdout_has("REGRESSION pinned-kept");
    let v = read_json(&json_path);
    assert_eq!(v["ok"], false);
    assert_eq!(v["failOn"], "regressions");
    assert_eq!(v["cases"], 150);
    assert_eq!(v["compared"], 150);
    assert_eq!(v["baseline"]["name"], "ctxgate-reference");
    let regressed: Vec<&str> = common::texts(&v["regressions"], "invariant");
    assert!(regressed.contains(&"pinned-kept"), "{regressed:?}");
    let r = v["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["invariant"] == "pinned-kept")
        .unwrap();
    assert_eq!(r["baseline"], "held");
    assert!(Path::new(r["saved"].as_str().unwrap()).is_file(), "{r}");
    assert!(
        v["invariants"]["pinned-kept"]["regressed"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(v["known"], serde_json::json!([]));
    // The defect keeps fewer messages when it compacts.
    let all = &v["behaviour"]["all"];
    assert!(
        all["subject"]["messagesKept"].as_f64().unwrap()
            < all["baseline"]["messagesKept"].as_f64().unwrap(),
        "{all}"
    );
    // JUnit: the regressed invariant is a failed test case.
    let out = compare(&subject, &baseline, &dir, &["--report", "junit"]);
    assert_eq!(out.code, 1);
    let junit = &out.stdout;
    assert!(junit.starts_with("<?xml"), "{junit}");
    let case = junit
        .split("<testcase ")
        .find(|c| c.contains("name=\"pinned-kept\""))
        .expect("a test case per invariant");
    assert!(case.contains("type=\"regression\""), "{case}");
    let held = junit
        .split("<testcase ")
        .find(|c| c.contains("name=\"order-preserved\""))
        .unwrap();
    assert!(!held.contains("<failure"), "{held}");
    // Markdown: the verdict, the table row, the replay commands on both sides.
    let out = compare(&subject, &baseline, &dir, &["--report", "markdown"]);
    assert_eq!(out.code, 1);
    let md = &out.stdout;
    assert!(md.starts_with("### ctxgate check: "), "{md}");
    assert!(md.contains("❌"), "{md}");
    assert!(md.contains("#### Regressions"), "{md}");
    assert!(md.contains("**pinned-kept**"), "{md}");
    assert!(md.contains("#### Behaviour, baseline → subject"), "{md}");
    assert!(
        md.lines()
            .any(|l| l.starts_with("| `pinned-kept` | ") && l.ends_with("❌ |")),
        "{md}"
    );
    assert!(
        md.contains(&format!("--subject '{baseline}'  # holds")),
        "{md}"
    );
}

#[test]
fn markdown_and_junit_of_a_known_failure_do_not_fail() {
    let dir = TempDir::new("known-forms");
    let both = serve(Some("drops-system-prompt"));
    let out = compare(&both, &both, &dir, &["--report", "markdown"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout_has("✅ no regression");
    out.stdout_has("#### Known failures (shared with the baseline)");
    let out = compare(&both, &both, &dir, &["--report", "junit"]);
    assert_eq!(out.code, 0);
    out.stdout_has("failures=\"0\"");
    out.stdout_has("known (shared with the baseline)");
    let out = compare(
        &both,
        &both,
        &dir,
        &["--report", "junit", "--fail-on", "any-failure"],
    );
    assert_eq!(out.code, 1);
    out.stdout_has("type=\"known\"");
}

#[test]
fn a_baseline_fault_is_reported_and_never_the_subjects_regression() {
    let dir = TempDir::new("baseline-fault");
    // The baseline crashes on every second compact request of a process
    // (restarted each time), and claims only no-premature-compaction.
    let (ours, crashes) = (serve(None), script("faulty.py", "crash"));
    let out = compare(&ours, &crashes, &dir, &["--report", "json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(v["baselineFaulted"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["baselineFaults"][0]["kind"], "crash");
    assert_eq!(v["regressions"], serde_json::json!([]));
    assert_eq!(v["subjectFaults"], serde_json::json!([]));
    // The invariants the baseline does not claim are judged on the subject alone.
    assert_eq!(v["invariants"]["pinned-kept"]["baseline"], Value::Null);
    assert!(
        v["invariants"]["no-premature-compaction"]["baseline"]["pass"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn a_subject_fault_the_baseline_does_not_share_is_a_regression() {
    let dir = TempDir::new("subject-fault");
    let out = compare(&script("faulty.py", "crash"), &serve(None), &dir, &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    out.stdout_has("REGRESSION fault crash");
    out.stderr_has("fault crash");
    assert!(
        fixture_named(&dir, "fault-crash-").is_some(),
        "the fault's case is saved"
    );
}

#[test]
fn a_run_that_compared_nothing_never_passes() {
    let dir = TempDir::new("nothing");
    // The baseline answers every compact with an unknown error kind: a
    // fault on every case, so nothing is compared — even --fail-on never fails.
    let (ours, badkind) = (serve(None), script("faulty.py", "badkind"));
    let extra = common::words("--fail-on never --report markdown");
    let out = compare(&ours, &badkind, &dir, &extra);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    out.stdout_has("⚠️");
    assert!(!out.stdout.contains("✅"), "{}", out.stdout);
    out.stderr_has("no case was compared");
}

#[test]
fn bad_baseline_usage_exits_2() {
    let reference = serve(None);
    let cases: [(&[&str], &str); 4] = [
        (&["--fail-on", "never"], "--baseline"),
        (
            &[
                "--baseline",
                &reference,
                "--transport",
                "http://127.0.0.1:9/",
            ],
            "--transport",
        ),
        (&["--baseline", ""], "--baseline"),
        (
            &["--baseline", "/nonexistent/compactor"],
            "baseline did not start",
        ),
    ];
    for (args, says) in cases {
        let out = run(&[&["check", "--cases", "5"], args].concat());
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        out.stderr_has(says);
    }
}

/// In process: the same seed gives the same comparison whatever the
/// number of workers.
#[test]
fn the_report_does_not_depend_on_the_number_of_workers() {
    use ctxgate::baseline::{run_parallel, FailOn};
    use ctxgate::check::CheckOptions;
    use ctxgate::subject::defects::Defect;
    use ctxgate::subject::{InProcess, Subject};
    let opts = CheckOptions {
        cases: 120,
        seed: 11,
        shrink_runs: 200,
        ..CheckOptions::default()
    };
    let report = |n: usize| {
        let mut s: Vec<Box<dyn Subject + Send>> = (0..n)
            .map(|_| Box::new(Defect::CutByMessageCount.subject()) as Box<dyn Subject + Send>)
            .collect();
        let mut b: Vec<Box<dyn Subject + Send>> = (0..n)
            .map(|_| Box::new(InProcess::reference()) as Box<dyn Subject + Send>)
            .collect();
        run_parallel(&mut s, &mut b, &opts, FailOn::Regressions, &mut |_| {})
    };
    let (one, three) = (report(1), report(3));
    assert!(!one.regressions.is_empty(), "the defect regresses");
    assert!(!one.ok());
    let key = |r: &ctxgate::baseline::BaselineReport| {
        (
            r.regressions
                .iter()
                .map(|g| {
                    (
                        g.failure.invariant,
                        g.failure.case_index,
                        g.failure.fixture.clone(),
                    )
                })
                .collect::<Vec<_>>(),
            r.invariants.clone(),
            r.behaviour.clone(),
        )
    };
    assert!(key(&one) == key(&three), "1 and 3 workers differ");
    let named = Defect::CutByMessageCount.caught_by()[0];
    assert!(
        one.regressions.iter().any(|g| g.failure.invariant == named),
        "{named} regresses"
    );
    // Every regression's fixture holds on the baseline (the reference).
    let mut reference = InProcess::reference();
    for g in &one.regressions {
        let (outcome, _) = ctxgate::fixture::replay(&mut reference, &g.failure.fixture);
        assert!(
            !outcome.reproduces(),
            "{}: {outcome:?}",
            g.failure.invariant
        );
    }
}

/// One run writes every form: `--also-report FORM=FILE`, with a baseline.
#[test]
fn also_report_writes_the_other_forms_of_the_same_run() {
    let dir = TempDir::new("also");
    let (junit, md) = (dir.join("junit.xml"), dir.join("report.md"));
    let out = compare(
        &serve(Some("drops-system-prompt")),
        &serve(None),
        &dir,
        &[
            "--also-report",
            &format!("junit={junit}"),
            "--also-report",
            &format!("markdown={md}"),
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    out.stdout_has("REGRESSION pinned-kept");
    let junit = std::fs::read_to_string(junit).unwrap();
    assert!(junit.contains("type=\"regression\""), "{junit}");
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("**pinned-kept**"), "{md}");
    let bad = run(&["check", "--cases", "5", "--also-report", "pdf=x.pdf"]);
    assert_eq!(bad.code, 2);
    bad.stderr_has("unknown form \"pdf\"");
}

/// `--config FILE` with `--baseline`: every case, on both sides, runs under
/// the user's config, and the regression's fixture keeps it.
#[test]
fn a_fixed_config_is_kept_by_the_regressions_fixture() {
    let dir = TempDir::new("config");
    let config = dir.join("prod.json");
    std::fs::write(
        &config,
        r#"{"contextWindow":20000,"threshold":0.7,"transportMaxBodyBytes":102400,"bytesPerToken":4,"keepRecent":2,"summaryMaxBytes":2048}"#,
    )
    .unwrap();
    let out = compare(
        &serve(Some("drops-system-prompt")),
        &serve(None),
        &dir,
        &["--config", &config],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let fixtures: Vec<PathBuf> = dir
        .fixtures()
        .into_iter()
        .filter(|p| !p.ends_with("prod.json"))
        .collect();
    assert!(!fixtures.is_empty(), "{}", out.stdout);
    for f in fixtures {
        let v = read_json(&f);
        assert_eq!(v["config"]["contextWindow"], 20000, "{}", f.display());
        assert_eq!(v["config"]["transportMaxBodyBytes"], 102400);
        assert_eq!(v["config"]["summaryMaxBytes"], 2048);
    }
}

/// `--with-suite` in the gate: every fixture is replayed on both sides and
/// judged as a generated case is — a fixture the subject fails and the
/// baseline holds is a regression (exit 1), one both fail is known (the
/// gate passes unless `--fail-on any-failure`), one only the baseline
/// fails is fixed; every form says which, and the shards of such a gate
/// merge into its report, suite and all.
#[test]
fn the_gate_compares_a_suite_fixture_by_fixture() {
    let tmp = TempDir::new("suite");
    let suite = concat!(env!("CARGO_MANIFEST_DIR"), "/suites/known-bugs");
    let (cut, drops) = (
        serve(Some("cut-by-message-count")),
        serve(Some("drops-system-prompt")),
    );
    let save = tmp.join("found");
    let gate = |subject: &str, baseline: &str, extra: &[&str]| {
        let mut args = vec!["check", "--subject", subject, "--baseline", baseline];
        args.extend(["--with-suite", suite, "--save", &save]);
        args.extend(common::words("--cases 40 --seed 3"));
        args.extend(extra);
        run(&args)
    };
    let whole = tmp.join("whole.json");
    let out = gate(&cut, &drops, &["--report", "json", "--out", &whole]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    out.stderr_has(", seed 3, up to 40 cases\n");
    let n = common::json_files(suite);
    out.stderr_has(&format!(" first, on both sides ({n} fixture(s))\n"));
    out.stderr_has("suite fixture(s) regressed");
    let report = read_json(&whole);
    let s = &report["suite"];
    let names = |k: &str| -> Vec<String> {
        s[k].as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().rsplit('/').next().unwrap().to_owned())
            .collect()
    };
    // Each side fails fixtures of its own bug: the subject's are
    // regressions, the baseline's fixes.
    let regressed = names("regressed");
    assert!(
        regressed
            .iter()
            .any(|n| n.starts_with("langchain-34282-summarization-cut-inside")),
        "{regressed:?}"
    );
    let fixed = names("fixed");
    assert!(
        fixed
            .iter()
            .any(|n| n.starts_with("langchain-33856-summarization-drops-the-system-prompt")),
        "{fixed:?}"
    );
    // Fixtures both defects fail are known, never regressed nor fixed: a
    // pinned user message (ggcode #382) and a progress case (openclaw
    // #95860) are lost both by a cut by count and by dropping the head.
    let mut known = names("known");
    known.sort();
    assert_eq!(
        known
            .iter()
            .map(|n| n.split('-').take(2).collect::<Vec<_>>().join("-"))
            .collect::<Vec<_>>(),
        ["ggcode-382", "openclaw-95860"],
        "{known:?}"
    );
    assert!(
        regressed.iter().all(|n| !known.contains(n)) && fixed.iter().all(|n| !known.contains(n))
    );
    out.stdout_has("REGRESSED  ");
    assert_eq!(report["ok"], false);
    let human = gate(&cut, &drops, &[]).stdout;
    let last = human.trim_end().lines().last().unwrap();
    assert!(
        last.starts_with(&format!(
            "FAILED: {} suite fixture(s) regressed",
            regressed.len()
        )) && regressed.len() >= 2,
        "{last}"
    );
    // The same bug on both sides: known, and the gate passes on it.
    let out = gate(&drops, &drops, &["--report", "junit"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout_has("<system-out>known: ");
    let out = gate(&drops, &drops, &["--fail-on", "any-failure"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    out.stdout_has("known      ");
    out.stderr_has("suite fixture(s) the subject fails, known");
    // Shards: shard 1 replays the suite, and the merge keeps it.
    let mut shards = Vec::new();
    for k in ["1/2", "2/2"] {
        let path = tmp.join(&format!("shard-{}.json", &k[..1]));
        let out = gate(
            &cut,
            &drops,
            &["--shard", k, "--report", "json", "--out", &path],
        );
        assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
        shards.push(path);
    }
    assert!(read_json(&shards[1]).get("suite").is_none());
    let merged = tmp.join("merged.json");
    let out = run(&[
        "report", "merge", &shards[0], &shards[1], "--report", "json", "--out", &merged,
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    out.stderr_has("suite fixture(s) regressed");
    let strip = |path: &str| {
        let mut v = read_json(path);
        for k in ["seconds", "shard"] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    };
    assert_eq!(strip(&merged)["suite"], strip(&whole)["suite"]);
}

fn read_json(path: impl AsRef<Path>) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
