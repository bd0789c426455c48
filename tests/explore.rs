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

/// `ctxgate check` of `subject` (none: `extra` names it) with `extra`, its JSON report in `dir`,
/// its fixtures under `dir/fixtures`; the output and the report.
fn check(subject: &str, extra: &[&str], dir: &TempDir) -> (Out, Value) {
    let report = dir.join("report.json");
    let fixtures = dir.join("fixtures");
    let mut args = vec!["check"];
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
    // A suite replayed first is judged with the run's --claim too.
    let suite = dir.join("fixtures");
    let subject = identity();
    let save = dir.join("suite-run");
    let args = [
        "check",
        "--subject",
        &subject,
        "--cases",
        "5",
        "--with-suite",
        &suite,
        "--save",
        &save,
    ];
    let with_claim = ctxgate(&[&args[..], &["--claim", "progress"]].concat());
    with_claim.stdout_has("suite: 0 held, 1 failed, 0 skipped");
    let without = ctxgate(&args);
    without.stdout_has("suite: 0 held, 0 failed, 1 skipped");
}

/// Shards of a run that explored merge into the report of the whole run,
/// which still says what was explored; shards that explored differently
/// do not merge.
#[test]
fn explored_shards_merge_and_shards_that_explored_otherwise_do_not() {
    let dir = TempDir::new("explore-merge");
    let shard = |k: &str, claim: &str| {
        // (No `/` in a folder's name: `1/2` would make a folder its guard
        // does not remove.)
        let sub = TempDir::new(&format!("explore-merge-{}-{claim}", k.replace('/', "of")));
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

/// An extension judged only when asked (`estimate-covers-real-tokens`),
/// which a subject claims without naming its invariants, is judged when
/// `--claim` names it — alone or beside `all` — and `--claim all` on a
/// text-only subject passes over what cannot be judged on it.
#[test]
fn a_claimed_extension_named_by_claim_is_judged_and_all_keeps_the_names_beside_it() {
    let judged = |report: &Value, inv: &str| {
        let t = &report["invariants"][inv];
        t["pass"].as_u64().unwrap_or(0) + t["fail"].as_u64().unwrap_or(0)
    };
    for claim in [
        "estimate-covers-real-tokens",
        "all,estimate-covers-real-tokens",
    ] {
        let dir = TempDir::new("explore-extension");
        // The reference claims every invariant unnamed; its bytes/4 count
        // is below cl100k_base on some histories.
        let (out, report) = check(
            "",
            &["--cases", "60", "--seed", "4", "--claim", claim],
            &dir,
        );
        assert!(
            judged(&report, "estimate-covers-real-tokens") > 0,
            "{claim}: {report}"
        );
        assert_eq!(out.code, 1, "{claim}: {}", out.all());
        let fails = report["invariants"]["estimate-covers-real-tokens"]["fail"].as_u64();
        assert!(fails > Some(0), "{claim}: {report}");
    }
    // A text-only subject that answers no `estimate`: `all` passes the
    // estimate and image invariants over in a note, and judges the rest.
    let dir = TempDir::new("explore-all-text-only");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/subjects/text_only_log.py"
    );
    let log = dir.join("log.jsonl");
    let subject = format!(
        "python3 {} {}",
        shell_words::quote(script),
        shell_words::quote(&log)
    );
    let (out, report) = check(&subject, &["--cases", "20", "--claim", "all"], &dir);
    assert_eq!(out.code, 1, "{}", out.all());
    out.stderr_has("ctxgate: note: --claim all: the subject \"text-only-log\" cannot be judged on estimate-covers-tool-calls");
    out.stderr_has("estimate-covers-images (");
    assert_eq!(judged(&report, "estimate-covers-images"), 0, "{report}");
    assert!(judged(&report, "progress") > 0, "{report}");
    // Named, it is still bad usage.
    let named = ctxgate(&[
        "check",
        "--cases",
        "3",
        "--subject",
        &subject,
        "--claim",
        "all,estimate-covers-images",
    ]);
    assert_eq!(named.code, 2, "{}", named.all());
    named.stderr_has(
        "--claim estimate-covers-images: the subject \"text-only-log\" cannot be judged on it",
    );
}

/// `check --list-invariants` lists every name `--invariants` and `--claim`
/// take, each with its op, and the hint of an empty `--invariants` points
/// at it.
#[test]
fn check_lists_the_invariants_it_takes() {
    let out = ctxgate(&["check", "--list-invariants"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 17, "{}", out.stdout);
    for line in &lines {
        assert!(
            line.contains(" compact ") || line.contains(" estimate "),
            "{line}"
        );
    }
    // Every name is one `--invariants` takes.
    let names: Vec<&str> = lines
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let parsed = ctxgate(&["check", "--cases", "5", "--invariants", &names.join(",")]);
    assert_ne!(parsed.code, 2, "{}", parsed.all());
    assert!(
        !parsed.stderr.contains("unknown invariant"),
        "{}",
        parsed.all()
    );
    let empty = ctxgate(&["check", "--invariants", ""]);
    assert_eq!(empty.code, 2, "{}", empty.all());
    empty.stderr_has("ctxgate check --list-invariants");
}

/// Each invariant's failures in a report: (case, shape, saved path).
fn failures_of<'r>(report: &'r Value, inv: &str) -> Vec<(u64, &'r str, &'r str)> {
    let all = report["failures"].as_array().unwrap();
    all.iter()
        .filter(|f| f["invariant"] == inv)
        .map(|f| {
            let case = f["case"].as_u64().unwrap();
            (
                case,
                f["shape"].as_str().unwrap(),
                f["saved"].as_str().unwrap(),
            )
        })
        .collect()
}

/// The sum of the report's failed verdicts.
fn failed(report: &Value) -> u64 {
    let tallies = report["invariants"].as_object().unwrap().values();
    tallies.map(|t| t["fail"].as_u64().unwrap()).sum()
}

#[test]
fn the_json_lists_every_failing_case_before_shrinking() {
    let dir = TempDir::new("failing-cases");
    let (out, report) = check(
        "",
        &[
            "--defect",
            "drops-system-prompt",
            "--cases",
            "120",
            "--seed",
            "7",
        ],
        &dir,
    );
    assert_eq!(out.code, 1, "{}", out.all());
    let listed = report["failingCases"].as_array().unwrap();
    assert_eq!(listed.len() as u64, failed(&report), "{report}");
    assert_eq!(report["failingCasesLeftOut"], 0);
    // Per invariant, as many as its `fail`, and the shrunk failure's case
    // among them; in case order; each detail one bounded line.
    for (inv, tally) in report["invariants"].as_object().unwrap() {
        let of_it: Vec<&Value> = listed
            .iter()
            .filter(|c| c["invariant"] == inv.as_str())
            .collect();
        assert_eq!(of_it.len() as u64, tally["fail"].as_u64().unwrap(), "{inv}");
    }
    let cases: Vec<u64> = listed.iter().map(|c| c["case"].as_u64().unwrap()).collect();
    assert!(cases.windows(2).all(|w| w[0] <= w[1]), "{cases:?}");
    assert!(cases.iter().all(|&c| c < 120));
    for f in report["failures"].as_array().unwrap() {
        assert!(listed
            .iter()
            .any(|c| c["case"] == f["case"] && c["invariant"] == f["invariant"]));
    }
    for c in listed {
        let detail = c["detail"].as_str().unwrap();
        assert!(!detail.is_empty() && !detail.contains('\n'), "{detail:?}");
        assert!(
            detail.len() <= 200 + "…".len() + " (+99999 more)".len(),
            "{detail:?}"
        );
    }
}

/// A run whose cases nearly all fail lists the first 1,000 failing cases
/// and counts the rest; the list is the same whatever the number of
/// workers (each keeps the first, not the first it happened to see).
#[test]
fn failing_cases_are_capped_and_the_same_whatever_the_workers() {
    let dir = TempDir::new("failing-cases-cap");
    let run = |jobs: &str| {
        let args = [
            "--defect",
            "content-only-estimator",
            "--invariants",
            "estimate-covers-tool-calls",
            "--cases",
            "2500",
            "--seed",
            "7",
            "--jobs",
            jobs,
        ];
        check("", &args, &dir).1
    };
    let (one, three) = (run("1"), run("3"));
    let fails = failed(&one);
    assert!(fails > 1500, "{fails}");
    assert_eq!(one["failingCases"].as_array().unwrap().len(), 1000);
    assert_eq!(one["failingCasesLeftOut"].as_u64().unwrap(), fails - 1000);
    assert_eq!(one["failingCases"], three["failingCases"]);
    assert_eq!(one["failingCasesLeftOut"], three["failingCasesLeftOut"]);
}

/// `--save-distinct N` keeps up to N fixtures of an invariant, never two
/// of one shape: a compactor that cuts by message count breaks
/// tool-pairing in several shapes (one call, parallel calls, reused ids).
/// The first of each invariant is what `--save-distinct 1` (the default)
/// keeps, and the choice is the same whatever the number of workers.
#[test]
fn save_distinct_keeps_failures_of_distinct_shapes_only() {
    let run = |distinct: &str, jobs: &str| {
        let dir = TempDir::new(&format!("distinct-{distinct}-{jobs}"));
        let args = [
            "--defect",
            "cut-by-message-count",
            "--cases",
            "200",
            "--seed",
            "7",
            "--save-distinct",
            distinct,
            "--jobs",
            jobs,
        ];
        let (out, report) = check("", &args, &dir);
        assert_eq!(out.code, 1, "{}", out.all());
        // The human report shows each kept failure's shape.
        assert_eq!(
            out.stdout.contains("\n  shape: "),
            distinct != "1",
            "{}",
            out.stdout
        );
        (report, dir)
    };
    let (three, dir) = run("3", "1");
    assert_eq!(three["saveDistinct"], 3);
    let pairing = failures_of(&three, "tool-pairing");
    assert!(pairing.len() > 1, "{pairing:?}");
    let (single, _keep) = run("1", "1");
    for inv in three["invariants"].as_object().unwrap().keys() {
        let kept = failures_of(&three, inv);
        assert!(kept.len() <= 3, "{inv}: {kept:?}");
        let mut shapes: Vec<&str> = kept.iter().map(|k| k.1).collect();
        shapes.sort();
        shapes.dedup();
        assert_eq!(
            shapes.len(),
            kept.len(),
            "{inv}: two of one shape: {kept:?}"
        );
        // Each saved, in a file of its own.
        for (_, _, saved) in &kept {
            assert!(std::path::Path::new(saved).is_file(), "{saved}");
        }
        // The first is the one a run keeping one keeps.
        let first = failures_of(&single, inv);
        assert_eq!(first.len(), usize::from(!kept.is_empty()), "{inv}");
        if let (Some(a), Some(b)) = (kept.first(), first.first()) {
            assert_eq!((a.0, a.1), (b.0, b.1), "{inv}");
        }
    }
    let total = three["failures"].as_array().unwrap().len();
    let saved = std::fs::read_dir(dir.join("fixtures")).unwrap().count();
    assert_eq!(saved, total);
    let (parallel, _keep) = run("3", "3");
    let kept = |r: &Value| -> Vec<(String, u64, String)> {
        let all = r["failures"].as_array().unwrap();
        let key = |f: &Value| {
            (
                f["invariant"].to_string(),
                f["case"].as_u64().unwrap(),
                f["shape"].to_string(),
            )
        };
        all.iter().map(key).collect()
    };
    assert_eq!(kept(&three), kept(&parallel));
}

/// Shards of a run keeping distinct failures merge into the report of the
/// whole run: at most N of an invariant, of distinct shapes, and every
/// failing case listed.
#[test]
fn distinct_failures_and_failing_cases_survive_a_merge() {
    let dir = TempDir::new("distinct-merge");
    let shard = |k: &str| {
        let sub = TempDir::new(&format!("distinct-merge-{}", k.replace('/', "of")));
        let args = [
            "--defect",
            "cut-by-message-count",
            "--cases",
            "120",
            "--seed",
            "7",
            "--shard",
            k,
            "--save-distinct",
            "2",
        ];
        let (_, report) = check("", &args, &sub);
        dir.file(
            &format!("{}.json", k.replace('/', "of")),
            report.to_string(),
        )
    };
    let (one, two) = (shard("1/2"), shard("2/2"));
    let merged = ctxgate(&["report", "merge", &one, &two, "--report", "json"]);
    assert_eq!(merged.code, 1, "{}", merged.all());
    let report = merged.json();
    assert_eq!(report["saveDistinct"], 2);
    assert_eq!(
        report["failingCases"].as_array().unwrap().len() as u64,
        failed(&report)
    );
    for inv in report["invariants"].as_object().unwrap().keys() {
        let kept = failures_of(&report, inv);
        assert!(kept.len() <= 2, "{inv}: {kept:?}");
        assert!(kept.len() < 2 || kept[0].1 != kept[1].1, "{inv}: {kept:?}");
    }
}
