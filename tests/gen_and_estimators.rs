//! `ctxgate gen` prints valid cases; `check --estimator` compares estimator
//! versions against the `estimate-covers-real-tokens` extension invariant.

use std::process::Command;

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
            .arg(std::env::temp_dir().join(format!("ctxgate-realtokens-{}", std::process::id())))
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
