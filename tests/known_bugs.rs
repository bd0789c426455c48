//! suites/known-bugs/ (issue 16): every fixture is a public bug report,
//! the reference holds all of them, and `check --with-suite` counts the
//! suite in its exit code and in every report form.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxgate::check::CheckOptions;
use ctxgate::fixture::{collect, load_compactor_fixtures, Fixture, Replayed};
use ctxgate::subject::defects::Defect;
use ctxgate::subject::InProcess;

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/known-bugs")
}

/// What a fixture may weigh: the command line's default `--max-input-bytes`.
const CAP: u64 = 256 << 20;

/// The suite's compactor fixtures. The walk is recursive, so the agent
/// fixtures of suites/known-bugs/agents/ (`agent replay`'s, verified
/// against real agents' releases by the verify.sh there) come too: they
/// are set aside, as every command that plays the suite sets them aside.
fn fixtures() -> Vec<(PathBuf, Fixture)> {
    let files = collect(&[suite()]).expect("the suite is readable").files;
    load_compactor_fixtures(files, CAP)
        .unwrap_or_else(|e| panic!("{e}"))
        .0
}

/// The agent fixtures of suites/known-bugs/agents/, each read as `agent
/// replay` reads it: a public report in `see`, the releases in `found`,
/// the file named after it, and each in verify.sh's table.
#[cfg(feature = "agent")]
#[test]
fn each_agent_fixture_cites_a_public_report_and_is_verified() {
    use ctxgate::agent::fixture::AgentFixture;
    let dir = suite().join("agents");
    let files = collect(std::slice::from_ref(&dir))
        .expect("the agent suite is readable")
        .files;
    let (compactor, agents) = load_compactor_fixtures(files, CAP).unwrap();
    assert!(
        compactor.is_empty(),
        "only agent fixtures in {}",
        dir.display()
    );
    assert!(
        agents.len() >= 2,
        "at least 2 known agent bugs, found {}",
        agents.len()
    );
    let verify = std::fs::read_to_string(dir.join("verify.sh")).unwrap();
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    for path in &agents {
        let f = AgentFixture::load(path, CAP).unwrap_or_else(|e| panic!("{e}"));
        let url = f.see.split_whitespace().next().unwrap_or("");
        assert!(
            url.starts_with("https://github.com/")
                && (url.contains("/issues/") || url.contains("/pull/")),
            "{}: `see` must open with the report's URL, found {url:?}",
            path.display()
        );
        assert!(
            f.found.as_deref().is_some_and(|s| !s.is_empty()),
            "{}: `found` records the releases",
            path.display()
        );
        assert!(
            !f.invariants.is_empty(),
            "{}: names what it breaks",
            path.display()
        );
        assert_eq!(
            path.file_stem().and_then(|s| s.to_str()),
            Some(f.name.as_str()),
            "the file is named after the fixture"
        );
        assert!(
            verify.contains(&format!("\"{}|", f.name)),
            "{} has a row in verify.sh's table",
            f.name
        );
        assert!(
            readme.contains(&f.name),
            "{} is in the README's table",
            f.name
        );
    }
}

#[test]
fn each_fixture_cites_a_public_report_and_says_what_was_found() {
    let all = fixtures();
    assert!(
        all.len() >= 30,
        "at least 30 known bugs, found {}",
        all.len()
    );
    let mut projects = std::collections::BTreeSet::new();
    for (path, f) in &all {
        let url = f.see.split_whitespace().next().unwrap_or("");
        assert!(
            url.starts_with("https://github.com/")
                && (url.contains("/issues/") || url.contains("/pull/")),
            "{}: `see` must open with the report's URL, found {url:?}",
            path.display()
        );
        projects.insert(url.split('/').take(5).collect::<Vec<_>>().join("/"));
        assert!(
            f.found.as_deref().is_some_and(|s| !s.is_empty()),
            "{}: `found` records the versions (or why none was run)",
            path.display()
        );
        assert_eq!(
            path.file_stem().and_then(|s| s.to_str()),
            Some(f.name.as_str()),
            "the file is named after the fixture"
        );
    }
    assert!(
        projects.len() >= 15,
        "at least 15 projects, found {projects:?}"
    );
}

#[test]
fn the_reference_holds_the_whole_suite() {
    let mut subject = InProcess::reference();
    let report = ctxgate::suite::run(&mut subject, &suite(), fixtures());
    for c in &report.cases {
        assert!(
            matches!(c.outcome, Replayed::Held { .. }),
            "{}: {:?}",
            c.path.display(),
            c.outcome
        );
    }
    assert!(report.ok());
}

#[test]
fn a_defect_of_a_suite_class_fails_its_fixture() {
    // The system-prompt class: the defect that drops it fails the LangChain fixture.
    let mut subject = Defect::DropsSystemPrompt.subject();
    let all: Vec<_> = fixtures()
        .into_iter()
        .filter(|(p, _)| p.to_string_lossy().contains("33856"))
        .collect();
    let report = ctxgate::suite::run(&mut subject, &suite(), all);
    assert_eq!(report.failed(), 1, "{}", report.human());
}

#[test]
fn a_content_only_estimator_fails_the_suite() {
    // ADR 0098's own incident: an estimate that counts content only. Every
    // `estimate` fixture of the suite is a public report of that class, and
    // the estimator that leaves the tool calls out must fail each of them.
    let all = fixtures();
    let estimate: Vec<_> = all
        .iter()
        .filter(|(_, f)| f.op == "estimate")
        .map(|(p, _)| p.clone())
        .collect();
    assert!(
        estimate.len() >= 5,
        "at least 5 estimate fixtures, found {estimate:?}"
    );
    let mut subject = Defect::ContentOnlyEstimator.subject();
    let report = ctxgate::suite::run(&mut subject, &suite(), all);
    assert!(!report.ok(), "{}", report.human());
    for c in &report.cases {
        let covers = fixtures()
            .into_iter()
            .find(|(p, _)| *p == c.path)
            .is_some_and(|(_, f)| {
                f.invariants
                    .iter()
                    .any(|i| i.name() == "estimate-covers-tool-calls")
            });
        if covers {
            assert!(
                matches!(c.outcome, Replayed::Failed(_)),
                "{}: the content-only estimator should fail it, got {:?}",
                c.path.display(),
                c.outcome
            );
        }
    }
}

/// The defects a fixture's `found` names (`ctxgate serve --defect NAME`).
fn defects_named(path: &Path, found: &str) -> Vec<Defect> {
    found
        .split("--defect ")
        .skip(1)
        .map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            Defect::parse(&name).unwrap_or_else(|| {
                panic!(
                    "{}: `found` names {name:?}, which is no defect",
                    path.display()
                )
            })
        })
        .collect()
}

#[test]
fn each_fixture_fails_against_the_defect_its_found_names() {
    // A fixture that says which of ctxgate's defects has its bug must be
    // one that defect fails: otherwise it shows nothing.
    let mut checked = 0;
    for (path, f) in fixtures() {
        for defect in defects_named(&path, f.found.as_deref().unwrap_or("")) {
            let mut subject = defect.subject();
            let report =
                ctxgate::suite::run(&mut subject, &suite(), vec![(path.clone(), f.clone())]);
            assert_eq!(
                report.failed(),
                1,
                "{}: --defect {} should fail it\n{}",
                path.display(),
                defect.name(),
                report.human()
            );
            checked += 1;
        }
    }
    assert!(checked >= 17, "17 fixture/defect pairs, found {checked}");
}

#[test]
fn each_image_fixture_is_failed_by_the_image_defect_of_its_report() {
    // The images issue's reports (openai/codex#41338 and #32287,
    // anomalyco/opencode#14562, earendil-works/pi#5369 and #1441,
    // NousResearch/hermes-agent#47339, justrach/codegraff#260): each
    // fixture with images names the image defect of its bug, which fails
    // it (the test above), while the reference holds it (the test of the
    // whole suite).
    let with_images: Vec<(PathBuf, Fixture)> = fixtures()
        .into_iter()
        .filter(|(_, f)| {
            f.messages
                .iter()
                .any(|m| m.content.images().next().is_some())
        })
        .collect();
    assert!(
        with_images.len() >= 7,
        "at least 7 image fixtures, found {}",
        with_images.len()
    );
    let mut caught = std::collections::BTreeSet::new();
    for (path, f) in &with_images {
        let named = defects_named(path, f.found.as_deref().unwrap_or(""));
        let image_defects: Vec<Defect> = named
            .into_iter()
            .filter(|d| Defect::IMAGES.contains(d))
            .collect();
        assert!(
            !image_defects.is_empty(),
            "{}: `found` names no image defect",
            path.display()
        );
        caught.extend(image_defects.iter().map(|d| d.name()));
    }
    for d in [
        Defect::ImagesWeightless,
        Defect::Base64AsText,
        Defect::ElidesLastIteration,
        Defect::SummaryReembedsImages,
    ] {
        assert!(
            caught.contains(d.name()),
            "no image fixture shows {}",
            d.name()
        );
    }
}

fn check(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().expect("exited"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn check_with_suite_counts_a_failing_fixture_in_the_exit_code_and_the_reports() {
    let dir = suite();
    let dir = dir.to_str().unwrap();
    let save = common::process::TestDir::new("known-bugs", "");
    let save = save.to_str().unwrap();
    let gate = [
        "--cases",
        "30",
        "--seed",
        "1",
        "--save",
        save,
        "--with-suite",
        dir,
    ];
    // The generated cases check only tool-pairing, which the defect holds:
    // the suite's pinned-kept failure alone must fail the gate.
    let defect = [
        "check",
        "--defect",
        "drops-system-prompt",
        "--invariants",
        "tool-pairing",
    ];
    let base = [&defect[..], &gate].concat();
    let (code, human) = check(&base);
    assert_eq!(code, 1, "{human}");
    assert!(
        human.contains("FAIL  ") && human.contains("33856"),
        "{human}"
    );
    assert!(
        human.contains("suite fixture(s) failed") || human.contains("suite: "),
        "{human}"
    );

    let (code, json) = check(&[&base[..], &["--report", "json"]].concat());
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&json).expect("a JSON report");
    assert!(v["suite"]["failed"].as_u64().unwrap() >= 1, "{json}");

    let (_, junit) = check(&[&base[..], &["--report", "junit"]].concat());
    assert!(junit.contains("<testsuite name=\"ctxgate suite"), "{junit}");
    assert!(junit.trim_end().ends_with("</testsuites>"));

    // And the reference passes the same gate.
    let (code, out) = check(&[&["check"][..], &gate].concat());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("suite: 39 held, 0 failed, 0 skipped"), "{out}");
}

#[test]
fn a_broken_suite_is_bad_usage() {
    let tmp = common::process::TestDir::new("bad-suite", "");
    std::fs::write(
        tmp.join("x.json"),
        "{\"ctxgate\": 1, \"messages\": [{\"role\": \"bot\"}]}",
    )
    .unwrap();
    let (code, _) = check(&[
        "check",
        "--cases",
        "5",
        "--with-suite",
        tmp.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
}

/// The suite is part of a run in the library: `testing::check` (and so a
/// Rust user's conformance test) replays `CheckOptions::suite` before its
/// cases, as `check --with-suite` does, and only shard 1 of a sharded run
/// replays it.
#[test]
fn a_library_run_replays_its_suite_first() {
    let loaded = ctxgate::suite::load(&suite(), 1 << 30).expect("the suite loads");
    let opts = CheckOptions {
        cases: 20,
        seed: 3,
        suite: Some(std::sync::Arc::new(loaded.suite)),
        ..Default::default()
    };
    let mut defect = Defect::DropsSystemPrompt.subject();
    let report = ctxgate::testing::check(&mut defect, &opts);
    let suite = report.suite.as_ref().expect("the run replayed its suite");
    assert_eq!(suite.cases.len(), fixtures().len());
    assert!(suite.failed() > 0, "the defect fails some known bug");
    let mut reference = InProcess::reference();
    let clean = ctxgate::testing::check(&mut reference, &opts);
    let suite = clean.suite.as_ref().expect("the run replayed its suite");
    assert_eq!((suite.failed(), suite.held()), (0, fixtures().len()));
    for (k, replays) in [(1, true), (2, false)] {
        let shard = Some(ctxgate::check::Shard {
            k,
            n: 2,
            one_case: false,
        });
        let sharded = ctxgate::testing::check(
            &mut reference,
            &CheckOptions {
                shard,
                ..opts.clone()
            },
        );
        assert_eq!(sharded.suite.is_some(), replays, "shard {k}/2");
    }
}
