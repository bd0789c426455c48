//! `ctxgate gen` prints valid cases; `check --estimator` compares estimator
//! versions against the `estimate-covers-real-tokens` extension invariant.

mod common;

use std::process::Command;

use common::process::TestDir;

use ctxgate::generate::Case;
use ctxgate::model::check_well_formed;

fn ctxgate() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ctxgate"))
}

#[test]
fn gen_prints_one_valid_well_formed_case_a_line() {
    let out = ctxgate()
        .args(["gen", "--seed", "11", "--cases", "200"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 200);
    for line in &lines {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            value.as_object().unwrap().len(),
            2,
            "only config and messages"
        );
        let case = Case::from_json(&value).unwrap_or_else(|e| panic!("{e}: {line}"));
        check_well_formed(&case.messages).unwrap();
        case.config.validate().unwrap();
    }
    // Deterministic for a seed.
    let again = ctxgate()
        .args(["gen", "--seed", "11", "--cases", "200"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(again.stdout).unwrap(), text);
}

#[test]
fn gen_stats_reports_every_range_reached() {
    let out = ctxgate()
        .args(["gen", "--seed", "2026", "--cases", "2000", "--stats"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("every class and knob range reached"),
        "{text}"
    );
}

#[cfg(feature = "calibrate")]
#[test]
fn check_compares_estimators_against_real_tokens() {
    let save = TestDir::new("realtokens", "");
    let run = |estimator: &str| {
        ctxgate()
            .args([
                "check",
                "--estimator",
                estimator,
                "--invariants",
                "estimate-covers-real-tokens",
            ])
            .args([
                "--cases", "150", "--seed", "5", "--report", "json", "--save",
            ])
            .arg(&save)
            .output()
            .unwrap()
    };
    // 4 bytes a token undercounts CJK, emoji and escapes: caught.
    let adr = run("adr-0098");
    assert_eq!(adr.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&adr.stdout).unwrap();
    assert_eq!(
        report["failures"][0]["invariant"],
        "estimate-covers-real-tokens"
    );
    // The safe estimator holds at this seed.
    let safe = run("safe-classwise");
    let report: serde_json::Value = serde_json::from_slice(&safe.stdout).unwrap();
    assert_eq!(safe.status.code(), Some(0), "{report}");
    assert!(
        report["invariants"]["estimate-covers-real-tokens"]["pass"]
            .as_u64()
            .unwrap()
            > 100
    );
}

/// `gen --text-only` prints what a subject whose hello says
/// `"contentParts": false` is sent: a text-only subject (which logs its
/// requests) was sent, under `check`, the very case `gen --text-only`
/// prints at each index, and none holds a content part — while plain
/// `gen` holds images at some of those indices. Its requests split as one
/// line with Python's `str.splitlines()` (it exits otherwise), U+2028
/// among their texts.
#[test]
fn gen_text_only_prints_what_a_text_only_subject_is_sent() {
    use ctxgate::model::value::same_value;
    use serde_json::Value;
    let dir = TestDir::new("gen-text-only", "");
    let log = dir.join("sent.jsonl");
    let subject = format!(
        "python3 {} {}",
        shell_words::quote(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/subjects/text_only_log.py"
        )),
        shell_words::quote(&log.display().to_string())
    );
    let (seed, cases) = ("31", "150");
    let out = ctxgate()
        .args([
            "check",
            "--subject",
            &subject,
            "--seed",
            seed,
            "--cases",
            cases,
        ])
        .args(["--jobs", "1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lines = |extra: &[&str]| -> Vec<Value> {
        let out = ctxgate()
            .args(["gen", "--seed", seed, "--cases", cases])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        text.split_terminator('\n')
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (plain, text_only) = (lines(&[]), lines(&["--text-only"]));
    let holds_parts = |case: &Value| {
        case["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"].is_array())
    };
    let with_images = plain.iter().filter(|c| holds_parts(c)).count();
    assert!(with_images > 0, "no case with images to drop");
    let mut redrawn = 0;
    for (i, (p, t)) in plain.iter().zip(&text_only).enumerate() {
        assert!(!holds_parts(t), "case {i} holds content parts");
        if holds_parts(p) {
            redrawn += 1;
        } else {
            assert!(same_value(p, t), "case {i} changed without images to drop");
        }
        assert!(
            sent.iter().any(|s| same_value(s, t)),
            "case {i} of gen --text-only was never sent to the text-only subject"
        );
    }
    assert_eq!(redrawn, with_images);
    assert!(
        sent.iter().any(|s| s.to_string().contains('\u{2028}')),
        "no request held U+2028: the splitlines check checked nothing"
    );
    assert!(
        stdout.contains("contentParts: false"),
        "the report says the subject takes text only: {stdout}"
    );
}

/// `gen` writes U+0085, U+2028 and U+2029 as escapes: a case line splits
/// as one line for every reader (Python's `str.splitlines()` splits at
/// them and at the controls, which are escaped too), and reads back as the
/// case the library makes.
#[test]
fn gen_lines_hold_no_raw_line_separator() {
    let dir = TestDir::new("gen-seps", "");
    let gen_config = dir.join("escapes.json");
    std::fs::write(
        &gen_config,
        r#"{"contentClasses": ["escapes", "multilingual"]}"#,
    )
    .unwrap();
    let out = ctxgate()
        .args(["gen", "--seed", "5", "--cases", "150", "--gen-config"])
        .arg(&gen_config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let breaks = |c: char| {
        matches!(
            c,
            '\r' | '\u{b}' | '\u{c}' | '\u{1c}'..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    };
    assert!(
        !text.contains(breaks),
        "a raw line separator in gen's output"
    );
    assert!(
        text.contains("\\u2028"),
        "no U+2028 was drawn: the test checks nothing"
    );
    let gen = ctxgate::input::config::read_gen_config(&gen_config, 1 << 20).unwrap();
    let opts = ctxgate::check::CheckOptions {
        seed: 5,
        gen: ctxgate::generate::GenConfig {
            exotic_numbers_percent: 0,
            ..gen
        },
        ..Default::default()
    };
    for (i, line) in text.split_terminator('\n').enumerate() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let case = ctxgate::run::case_at(&opts, i as u64);
        assert_eq!(value, case.to_json(), "case {i}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
