//! Issue 15, parts 2 and 3: the user's own config (`--config`), generator
//! settings (`--gen-config`, `gen --print-gen-config`) and real histories
//! as seeds (`check --corpus`). The corpus is read in place from
//! `../shared/data/real-histories`, never copied here; where it is missing,
//! the tests that need it are skipped with a line that says so — unless
//! `CTXGATE_REQUIRE_DATA=1`, where they fail.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctxgate::check::{self, CheckOptions};
use ctxgate::corpus::{self, Seeds};
use ctxgate::generate::{case_for_config, GenConfig};
use ctxgate::oracle::{Invariant, InvariantSet};
use ctxgate::subject::defects::Defect;
use ctxgate::subject::InProcess;
use ctxgate::{Config, WireFormat};
use serde_json::{json, Value};

mod common;

use common::process::{ctxgate_within, Out, TempDir};

/// `ctxgate ARGS`, killed (the test failed) after five minutes.
fn ctxgate(args: &[&str]) -> Out {
    ctxgate_within(args, std::time::Duration::from_secs(300))
}

/// The shared corpus's folder; `None` (the test is skipped) where it is
/// missing, see [`common::data_dir`].
fn real_histories() -> Option<PathBuf> {
    common::data_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/real-histories"))
}

/// The histories in `dir` as seeds, read whole.
fn seeds_of(dir: &Path) -> Vec<corpus::Seed> {
    corpus::load(dir, 256 << 20)
        .expect("the corpus loads")
        .seeds
}

/// A production config with every field set (the envelope too).
fn production() -> Value {
    json!({
        "contextWindow": 128000,
        "threshold": 0.7,
        "transportMaxBodyBytes": 102400,
        "bytesPerToken": 4,
        "keepRecent": 2,
        "summaryMaxBytes": 4096,
        "wireFormat": "engine",
        "envelope": {"model": "gpt-4o", "temperature": 0.2}
    })
}

#[test]
fn gen_with_a_config_prints_cases_whose_config_is_exactly_it() {
    let dir = TempDir::new("gen-config");
    let f = dir.file("prod.json", production().to_string());
    let out = ctxgate(&["gen", "--config", &f, "--cases", "300", "--seed", "5"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let want = production();
    let (mut lines, mut on_ceiling) = (0, 0);
    for line in out.stdout.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        assert_eq!(case["config"], want, "case {lines}");
        // The body, measured independently: the envelope plus `messages`.
        let mut body = want["envelope"].clone();
        body["messages"] = case["messages"].clone();
        if serde_json::to_vec(&body).unwrap().len() as u64 == 102_400 {
            on_ceiling += 1;
        }
        lines += 1;
    }
    assert_eq!(lines, 300);
    // A boundary case sits on the ceiling in about half the boundary share
    // (25% × 50% × the middle offset's 50%): 3% of cases, give or take.
    assert!(on_ceiling >= 3, "{on_ceiling} of 300 on the ceiling");
}

#[test]
fn aimed_cases_sit_on_the_given_trigger_and_ceiling() {
    let config = Config {
        transport_max_body_bytes: 300_000,
        wire_format: WireFormat::Openai,
        ..Config::default()
    };
    let g = GenConfig::default();
    let (mut trigger, mut ceiling) = (0, 0);
    for i in 0..800 {
        let case = case_for_config(11, i, &g, &config);
        assert_eq!(case.config, config);
        assert!(case.is_well_formed(), "case {i}");
        trigger += (case.estimate() == config.trigger()) as u32;
        ceiling += (case.body_bytes() == config.transport_max_body_bytes) as u32;
    }
    // Each arm takes half the 25% boundary share, half of it at offset 0.
    assert!(trigger >= 25 && ceiling >= 25, "{trigger} {ceiling}");
}

#[test]
fn gen_config_round_trips_shapes_the_swarm_and_rejects_unknown_fields() {
    let dir = TempDir::new("gen-gen-config");
    let printed = ctxgate(&["gen", "--print-gen-config"]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    let defaults: Value = serde_json::from_str(&printed.stdout).unwrap();
    assert_eq!(defaults["maxParallelCalls"], 8);
    assert_eq!(defaults["boundaryPercent"], 25);
    // The printed defaults read back as the defaults: the same cases.
    let f = dir.file("defaults.json", printed.stdout.as_bytes());
    let plain = ctxgate(&["gen", "--cases", "20", "--seed", "9"]);
    let via = ctxgate(&["gen", "--cases", "20", "--seed", "9", "--gen-config", &f]);
    assert_eq!(plain.code, 0);
    assert_eq!(plain.stdout, via.stdout);
    // A partial one: one call per iteration, results under 100 bytes.
    let narrow = dir.file(
        "narrow.json",
        r#"{"maxParallelCalls": 1, "maxToolResultBytes": 100}"#,
    );
    let gen_narrow = || {
        ctxgate(&[
            "gen",
            "--cases",
            "200",
            "--seed",
            "9",
            "--gen-config",
            &narrow,
        ])
    };
    let (a, b) = (gen_narrow(), gen_narrow());
    assert_eq!(a.code, 0, "{}", a.stderr);
    assert_eq!(a.stdout, b.stdout, "same seed, same gen-config: same cases");
    let mut calls = 0;
    for line in a.stdout.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        for m in case["messages"].as_array().unwrap() {
            if let Some(cs) = m["toolCalls"].as_array() {
                assert!(cs.len() <= 1, "{m}");
                calls += cs.len();
            }
            if m["role"] == "tool" {
                let n = m["content"].as_str().map_or(0, str::len);
                assert!(n <= 100, "{n}-byte result");
            }
        }
    }
    assert!(calls > 100, "{calls} calls");
    // Unknown fields and values out of range: exit 2, naming the file.
    let typo = dir.file("typo.json", r#"{"maxParalelCalls": 2}"#);
    let out = ctxgate(&["gen", "--gen-config", &typo]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has("typo.json");
    out.stderr_has("maxParalelCalls");
    let wide = dir.file("wide.json", r#"{"pinnedPercent": 101}"#);
    let out = ctxgate(&["check", "--gen-config", &wide, "--cases", "1"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("wide.json") && out.stderr.contains("pinnedPercent"),
        "{}",
        out.stderr
    );
}

#[test]
fn check_with_a_config_keeps_it_in_every_fixture() {
    let config = Config {
        transport_max_body_bytes: 60_000,
        context_window: 32_000,
        ..Config::default()
    };
    let mut subject = Defect::TruncatesToolResults.subject();
    let opts = CheckOptions {
        cases: 400,
        seed: 3,
        config: Some(config.clone()),
        shrink_runs: 300,
        ..CheckOptions::default()
    };
    let report = check::run(&mut subject, &opts, &mut |_| {});
    assert!(!report.failures.is_empty(), "the defect is caught");
    for f in &report.failures {
        assert_eq!(f.fixture.config, config, "{}", f.invariant);
    }
    let mut reference = InProcess::reference();
    let report = check::run(&mut reference, &opts, &mut |_| {});
    assert!(report.ok(), "{:?}", report.not_checked());
}

#[test]
fn the_corpus_catches_truncation_over_16k_and_passes_the_reference() {
    let Some(dir) = real_histories() else { return };
    let seeds = seeds_of(&dir);
    assert!(seeds.len() >= 200, "{} histories", seeds.len());
    let n = seeds.len() as u64;
    let source = Arc::new(Seeds::new(seeds, dir.display().to_string(), None));
    let opts = CheckOptions {
        cases: 2 * n,
        seed: 1,
        source: Some(source),
        shrink_runs: 500,
        ..CheckOptions::default()
    };
    let mut defect = Defect::TruncatesResultsOver16K.subject();
    let report = check::run(&mut defect, &opts, &mut |_| {});
    let f = report
        .failures
        .iter()
        .find(|f| f.invariant == Invariant::VerbatimSuffix)
        .expect("verbatim-suffix catches it");
    assert!(
        f.fixture.see.contains("from the corpus file ") && f.fixture.see.contains(".json"),
        "{}",
        f.fixture.see
    );
    // The shrunk case still holds a result past 16 KiB.
    assert!(f
        .fixture
        .messages
        .iter()
        .any(|m| m.content.text().len() > 16 * 1024));
    let mut reference = InProcess::reference();
    let report = check::run(&mut reference, &opts, &mut |_| {});
    assert!(
        report.ok(),
        "{:?} {:?}",
        report.failures.first().map(|f| f.fixture.to_json()),
        report.not_checked()
    );
    assert_eq!(
        report.checked,
        InvariantSet::default_run().intersect(report.subject.claimed())
    );
}

/// What the protocol carries (engine messages) measures as the case does:
/// a subject behind a process boundary sees the body the oracles measure.
#[test]
fn corpus_cases_measure_the_same_after_the_protocol_round_trip() {
    use ctxgate::check::CaseSource;
    use ctxgate::model::engine;
    let Some(dir) = real_histories() else { return };
    let seeds = seeds_of(&dir);
    let n = seeds.len() as u64;
    let source = Seeds::new(seeds, "corpus", None);
    let mut openai = 0;
    for i in 0..2 * n {
        let case = source.case(15, i, false);
        openai += (case.config.wire_format == WireFormat::Openai) as u32;
        let back = engine::read_messages(&engine::write_messages(&case.messages)).unwrap();
        assert_eq!(
            ctxgate::body::body_bytes(&case.config, &case.messages),
            ctxgate::body::body_bytes(&case.config, &back),
            "case {i}: {}",
            source.provenance(15, i)
        );
    }
    assert!(openai > 0);
}

#[test]
fn corpus_errors_name_the_file_and_exit_2() {
    let dir = TempDir::new("corpus-errors");
    let empty = TempDir::new("corpus-empty");
    empty.file("README.md", "no histories here");
    let out = ctxgate(&["check", "--corpus", empty.dir(), "--cases", "5"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has("holds no history");

    let good = r#"[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]"#;
    dir.file("a/good.json", good);
    dir.file("b/many.jsonl", format!("{good}\n\n{good}\n"));
    let check_corpus = |corpus: &str| ctxgate(&["check", "--corpus", corpus, "--cases", "3"]);
    let out = check_corpus(dir.dir());
    out.stderr_has("3 real histories");

    dir.file("b/bad.jsonl", format!("{good}\n{{\"messages\": 3}}\n"));
    let out = check_corpus(dir.dir());
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("bad.jsonl") && out.stderr.contains("line 2"),
        "{}",
        out.stderr
    );
    std::fs::remove_file(dir.0.join("b/bad.jsonl")).unwrap();
    dir.file("c/broken.json", "[{\"role\": \"user\", \"content\": ");
    let out = check_corpus(dir.dir());
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has("broken.json");
    let out = check_corpus("/nonexistent/ctxgate-corpus");
    assert_eq!(out.code, 2, "{}", out.stderr);
}
