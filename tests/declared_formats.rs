//! The wire formats a subject measures (SPEC §6 `wireFormats`): a subject
//! is sent cases in its declared formats only and the report counts those
//! re-aimed; `check --wire-format F` pins the format alone; `ctxgate body`
//! prints the exact body; a body violation names the format it measured.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::process::{ctxgate, TestDir};
use ctxgate::check::CheckOptions;
use ctxgate::oracle::body_under_ceiling;
use ctxgate::subject::CompactAnswer;
use ctxgate::{Config, Message, WireFormat};
use serde_json::Value;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/subjects/formats_log.py")
}

/// A fresh log file for one test, in a folder of its own: the folder's
/// guard (keep it while the file is in use), and the file's path.
fn log_file(name: &str) -> (TestDir, PathBuf) {
    let dir = TestDir::new("formats", name);
    let path = dir.join(name);
    (dir, path)
}

/// The configs the subject logged, one per compact request.
fn logged(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the subject wrote its log")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `ctxgate check` of the logging subject, with `extra` arguments.
fn check_logged(log: &Path, formats: Option<&str>, extra: &[&str]) -> common::process::Out {
    let mut subject = format!("python3 {} {}", script().display(), log.display());
    if let Some(f) = formats {
        subject.push_str(&format!(" {f}"));
    }
    let mut args = vec![
        "check",
        "--subject",
        &subject,
        "--cases",
        "120",
        "--seed",
        "28",
        "--jobs",
        "1",
    ];
    args.extend_from_slice(extra);
    ctxgate(&args)
}

/// A hello declaring `["openai"]` is sent openai configs only, and the
/// report says how many cases were drawn in another format.
#[test]
fn a_subject_declaring_openai_receives_only_openai_configs() {
    let (_dir, log) = log_file("declared.jsonl");
    let out = check_logged(&log, Some("openai"), &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    let configs = logged(&log);
    assert!(configs.len() >= 120, "{}", configs.len());
    let formats: BTreeSet<&str> = configs
        .iter()
        .map(|c| c["wireFormat"].as_str().unwrap())
        .collect();
    assert_eq!(formats, BTreeSet::from(["openai"]), "{}", out.all());
    out.stdout_has(
        "wire formats: openai (the subject's hello `wireFormats` measures these only): ",
    );
    // At the default shares (25% openai) most cases were re-aimed.
    let re_aimed: u64 = out
        .stdout
        .split("measures these only): ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert!((40..=110).contains(&re_aimed), "{re_aimed}: {}", out.stdout);
}

/// The same subject, declaring nothing, is sent all three formats.
#[test]
fn a_subject_declaring_nothing_receives_every_format() {
    let (_dir, log) = log_file("undeclared.jsonl");
    let out = check_logged(&log, None, &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    let formats: BTreeSet<String> = logged(&log)
        .iter()
        .map(|c| c["wireFormat"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(formats.len(), 3, "{formats:?}");
    assert!(!out.stdout.contains("wire formats:"), "{}", out.stdout);
}

/// `--wire-format F` pins the format only: the other fields keep being
/// drawn (it used to pin the whole config: contextWindow 128000 always).
#[test]
fn wire_format_pins_the_format_and_keeps_the_config_varied() {
    let (_dir, log) = log_file("pinned.jsonl");
    let out = check_logged(&log, None, &["--wire-format", "anthropic"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let configs = logged(&log);
    let distinct = |k: &str| {
        configs
            .iter()
            .map(|c| c[k].to_string())
            .collect::<BTreeSet<_>>()
            .len()
    };
    assert_eq!(distinct("wireFormat"), 1);
    assert_eq!(configs[0]["wireFormat"], "anthropic");
    assert!(
        distinct("contextWindow") > 10,
        "{}",
        distinct("contextWindow")
    );
    assert!(distinct("transportMaxBodyBytes") > 10);
    assert!(distinct("threshold") > 3);
}

/// A `--wire-format` the subject does not measure is bad usage.
#[test]
fn wire_format_outside_the_declared_ones_is_bad_usage() {
    let (_dir, log) = log_file("refused.jsonl");
    let out = check_logged(&log, Some("openai"), &["--wire-format", "engine"]);
    assert_eq!(out.code, 2, "{}", out.all());
    out.stderr_has("measures its body in openai only");
}

/// The in-process `Compactor` gets the same option.
#[test]
fn an_in_process_compactor_declaring_formats_receives_only_those() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(BTreeSet::new()));
    let log = seen.clone();
    let compact = move |c: &Config, m: &[Message]| {
        log.lock().unwrap().insert(c.wire_format.as_str());
        ctxgate::subject::answer(ctxgate::reference::compact(c, m))
    };
    let mut subject = ctxgate::testing::Compactor::new("two-formats", "0", compact)
        .wire_formats(&[WireFormat::Engine, WireFormat::Anthropic])
        .into_subject();
    let opts = CheckOptions {
        cases: 200,
        seed: 28,
        ..Default::default()
    };
    let report = ctxgate::testing::check(&mut subject, &opts);
    assert!(
        report.ok(),
        "{}",
        ctxgate::report::human(&report, &Default::default())
    );
    assert_eq!(
        *seen.lock().unwrap(),
        BTreeSet::from(["engine", "anthropic"])
    );
    assert!(
        report.run.formats_re_aimed > 20,
        "{}",
        report.run.formats_re_aimed
    );
    let json = ctxgate::report::to_json(&report, &Default::default());
    assert_eq!(
        json["wireFormats"],
        serde_json::json!(["engine", "anthropic"])
    );
    assert_eq!(
        json["casesReAimedToWireFormats"],
        report.run.formats_re_aimed
    );
}

/// `ctxgate body` prints exactly the body `estimate` measures: its bytes
/// are serde_json's serialisation of the body, as long as `bodyBytes`.
#[test]
fn the_body_command_prints_the_exact_body() {
    // openai in: absent and null content, a raw non-JSON argument string,
    // two results of one iteration (merged into one user message in
    // anthropic), an image, an unknown field, escapes and non-ASCII.
    let sample = serde_json::json!([
        {"role": "system", "content": "Be \"brief\".\n"},
        {"role": "user", "content": [{"type": "text", "text": "Look:"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":\"é\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "run", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "3 hits", "metadata": {"ms": 12}},
        {"role": "tool", "tool_call_id": "c2"},
        {"role": "assistant", "content": "世界 done"}
    ]);
    let (_dir, path) = log_file("body-sample.json");
    std::fs::write(&path, sample.to_string()).unwrap();
    let history = path.to_str().unwrap();
    for f in ["engine", "openai", "anthropic"] {
        let out = ctxgate(&["body", "--format", "openai", "--wire-format", f, history]);
        assert_eq!(out.code, 0, "{}", out.all());
        let body = out
            .stdout
            .strip_suffix('\n')
            .expect("one newline after the body");
        let value: Value = serde_json::from_str(body).unwrap();
        assert_eq!(serde_json::to_string(&value).unwrap(), body, "{f}");
        let estimate = ctxgate(&[
            "estimate",
            "--json",
            "--format",
            "openai",
            "--wire-format",
            f,
            history,
        ]);
        let figures: Value = serde_json::from_str(&estimate.stdout).unwrap();
        assert_eq!(figures["bodyBytes"], body.len() as u64, "{f}: {body}");
        assert!(
            out.stderr
                .contains(&format!("{} bytes of {f} body", body.len())),
            "{}",
            out.stderr
        );
    }
}

/// `ctxgate body`, which reads a history as it is parsed and writes its
/// body as it is made (issue 44: it peaked at 26 times a history of small
/// messages), prints the body of the history read whole, byte for byte,
/// and its size: generated histories written in each format, in each
/// shape, measured in each format.
#[test]
fn the_body_command_prints_the_body_of_the_history_read_whole() {
    let (_dir, path) = log_file("body-generated.json");
    let history = path.to_str().unwrap();
    for (i, case) in ctxgate::generate::seeded(44, 12) {
        let f = WireFormat::ALL[i as usize % 3];
        let (system, msgs) = ctxgate::model::write_messages(f, &case.messages);
        let doc = match (system, i % 2) {
            (Some(s), _) => serde_json::json!({"model": "m", "system": s, "messages": msgs}),
            (None, 0) => Value::Array(msgs),
            (None, _) => serde_json::json!({"messages": msgs, "temperature": 0.50}),
        };
        let text = doc.to_string();
        std::fs::write(&path, &text).unwrap();
        let whole = ctxgate::Document::parse_whole(text.as_bytes(), None).unwrap();
        for w in WireFormat::ALL {
            let out = ctxgate(&["body", "--wire-format", w.as_str(), history]);
            assert_eq!(out.code, 0, "case {i}: {}", out.all());
            let config = Config {
                wire_format: w,
                ..Config::default()
            };
            let want = serde_json::to_string(&ctxgate::body::body_value(&config, &whole.messages))
                .unwrap();
            assert_eq!(out.stdout, format!("{want}\n"), "case {i}, {f} as {w}");
            assert!(
                out.stderr
                    .contains(&format!("{} bytes of {w} body", want.len())),
                "{}",
                out.stderr
            );
        }
    }
}

/// A body violation names the wire format the body was measured in.
#[test]
fn a_body_violation_names_the_wire_format() {
    let history = vec![
        Message::user("Review PR 412"),
        Message::assistant("The body limit is the Express default."),
    ];
    for f in WireFormat::ALL {
        let config = Config {
            wire_format: f,
            transport_max_body_bytes: 60,
            ..Config::default()
        };
        let v = body_under_ceiling(&config, &history, &CompactAnswer::Messages(history.clone()));
        assert_eq!(v.len(), 1, "{f}");
        assert!(
            v[0].detail.contains(&format!("bytes of {f} body")),
            "{}",
            v[0].detail
        );
        assert!(
            v[0].detail
                .contains(&format!("ctxgate body --wire-format {f}")),
            "{}",
            v[0].detail
        );
    }
}

/// A gate says what it sent otherwise than drawn, as a check does: a side
/// measuring two formats has the other format's cases re-aimed, counted in
/// the human report and the JSON, and kept by `report merge`.
#[test]
fn a_gate_counts_the_cases_re_aimed_to_its_sides_formats() {
    let compact =
        |c: &Config, m: &[Message]| ctxgate::subject::answer(ctxgate::reference::compact(c, m));
    let mut subject = ctxgate::testing::Compactor::new("two-formats", "0", compact)
        .wire_formats(&[WireFormat::Engine, WireFormat::Anthropic])
        .into_subject();
    let report = common::gate_against_reference(&mut subject, 200, 28);
    assert!(
        report.run.formats_re_aimed > 20,
        "{}",
        report.run.formats_re_aimed
    );
    let hints = Default::default();
    let text = ctxgate::baseline::report::human(&report, &hints);
    assert!(
        text.contains(&format!(
            "wire formats: engine, anthropic (the subject's hello `wireFormats` measures these only): {} case(s)",
            report.run.formats_re_aimed
        )),
        "{text}"
    );
    let json = ctxgate::baseline::json::to_json(&report, &hints);
    assert_eq!(
        json["casesReAimedToWireFormats"],
        report.run.formats_re_aimed
    );
    let back = ctxgate::baseline::json::from_json(&json).unwrap();
    assert_eq!(back.run.formats_re_aimed, report.run.formats_re_aimed);
    assert_eq!(back.run.wire_formats, report.run.wire_formats);
}

/// A fixture ctxgate saved carries its case's config: `ctxgate body` of
/// it is the body under that config (its envelope, format and ceiling),
/// and `--config` still replaces it.
#[test]
fn the_body_of_a_fixture_is_under_the_fixtures_own_config() {
    let dir = TestDir::new("body-of-fixture", "");
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let fixture = serde_json::json!({
        "ctxgate": {"version": "0.1.0"},
        "name": "body-under-ceiling",
        "config": {"transportMaxBodyBytes": 5, "wireFormat": "openai", "envelope": {"model": "gpt-x"}},
        "messages": [{"role": "user", "content": "hi"}],
        "invariants": ["body-under-ceiling"]
    });
    let path = write("fixture.json", fixture.to_string());
    let out = ctxgate(&["body", &path]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(
        out.stdout,
        "{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n"
    );
    assert!(
        out.stderr.contains("of openai body (ceiling 5)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("the config is the fixture's own"),
        "{}",
        out.stderr
    );
    let config = write("config.json", r#"{"transportMaxBodyBytes": 7}"#.into());
    let out = ctxgate(&["body", "--config", &config, &path]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(out.stderr.contains("(ceiling 7)"), "{}", out.stderr);
    assert!(!out.stdout.contains("gpt-x"), "{}", out.stdout);
    // A history that is not a fixture keeps the defaults.
    let plain = write(
        "plain.json",
        r#"{"config": {"transportMaxBodyBytes": 5}, "messages": []}"#.into(),
    );
    let out = ctxgate(&["body", &plain]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(out.stderr.contains("(ceiling 8388608)"), "{}", out.stderr);
}
