//! Bad input is an error value with a kind (STYLE habit 7): every class of
//! bad input a user can hand ctxgate maps to its `InputErrorKind`, and
//! tests match the kind, never the wording (which stays free to improve).

mod common;

use std::io::Read;
use std::path::Path;

use ctxgate::error::InputErrorKind as K;
use ctxgate::fixture::Fixture;
use ctxgate::{Config, Document};

fn doc_kind(text: &[u8]) -> K {
    Document::parse(text, None).unwrap_err().kind
}

#[test]
fn every_class_of_bad_history_has_its_kind() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let cases: [(&[u8], K); 10] = [
        (b"", K::Empty),
        (b"  \n", K::Empty),
        (b"[{\"role\":\"user\",\"content\":\"\xff\"}]", K::Utf8),
        (b"[{\"role\":", K::Syntax),
        (b"[{\"role\" \"user\"}]", K::Syntax),
        (deep.as_bytes(), K::TooDeep),
        (b"42", K::Shape),
        (b"[{\"role\":\"bot\"}]", K::Shape),
        (b"[{\"role\":\"user\",\"content\":7}]", K::Shape),
        (
            b"[{\"role\":\"tool\",\"toolCallId\":\"x\",\"content\":\"\"}]",
            K::IllFormed,
        ),
    ];
    for (text, kind) in cases {
        assert_eq!(doc_kind(text), kind, "{}", String::from_utf8_lossy(text));
    }
    let twice = br#"[{"role":"assistant","toolCalls":[{"id":"a","name":"f","arguments":{}}]},
        {"role":"tool","toolCallId":"a"},{"role":"tool","toolCallId":"a"}]"#;
    let e = Document::parse(twice, None).unwrap_err();
    assert_eq!((e.kind, e.message), (K::IllFormed, Some(2)));
}

#[test]
fn configs_fixtures_and_files_have_theirs() {
    assert_eq!(Config::from_json(b"").unwrap_err().kind, K::Empty);
    assert_eq!(
        Config::from_json(br#"{"contextWindo": 5}"#)
            .unwrap_err()
            .kind,
        K::Config
    );
    assert_eq!(
        Config::from_json(br#"{"threshold": 2}"#).unwrap_err().kind,
        K::Config
    );
    assert_eq!(Config::from_json(b"{").unwrap_err().kind, K::Syntax);
    let fixture = |v: serde_json::Value| Fixture::from_json(v).unwrap_err().kind;
    assert_eq!(fixture(serde_json::json!({"name": "x"})), K::Fixture);
    assert_eq!(
        fixture(serde_json::json!({"ctxgate": 1, "messages": [], "invariants": ["nope"]})),
        K::Fixture
    );
    assert_eq!(
        fixture(serde_json::json!({"ctxgate": 1, "messages": [{"role": "bot"}]})),
        K::Shape
    );
    let missing = Path::new("/nonexistent/ctxgate/history.json");
    assert_eq!(
        ctxgate::input::read_file(missing, "it", 10)
            .unwrap_err()
            .kind,
        K::Io
    );
    assert_eq!(
        ctxgate::input::read_document(missing, None, 10)
            .unwrap_err()
            .kind,
        K::Io
    );
    let zeros = std::io::repeat(b' ').take(100);
    assert_eq!(
        ctxgate::input::read_all(zeros, "it", 10).unwrap_err().kind,
        K::TooLarge
    );
}

/// A history read from a file (parsed as it is read) gives the same error
/// as the same bytes parsed whole: kind, message index and words.
#[test]
fn a_file_read_as_a_stream_errs_as_the_bytes_do() {
    let dir = scratch("");
    let texts: [&[u8]; 4] = [
        b"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":",
        b"[{\"role\":\"user\"},{\"role\":\"bot\"}]",
        b"[{\"role\":\"user\",\"content\":\"\xfe\"}]",
        b"",
    ];
    for (i, text) in texts.iter().enumerate() {
        let path = dir.join(format!("h{i}.json"));
        std::fs::write(&path, text).unwrap();
        let from_file = ctxgate::input::read_document(&path, None, 1 << 20).unwrap_err();
        let from_bytes = Document::parse(text, None).unwrap_err();
        assert_eq!(from_file.kind, from_bytes.kind, "case {i}");
        assert_eq!(from_file.message, from_bytes.message, "case {i}");
        assert_eq!(from_file.problem, from_bytes.problem, "case {i}");
        assert_eq!(from_file.file.as_deref(), Some(path.to_str().unwrap()));
    }
}

/// A scratch folder of this test process, removed when the test ends.
fn scratch(name: &str) -> common::process::TestDir {
    common::process::TestDir::new("input-errors", name)
}

/// Every JSON input refuses an object that names a key twice (issue 44:
/// the wire would carry one value and the count use another): histories
/// in every format and shape, at any depth, read whole or from a file;
/// case lines; configs, generator configs, envelopes, fixtures, reports.
/// The error names the key and where it is: the message, the object's
/// JSON path and the line.
#[test]
fn every_json_input_refuses_a_repeated_key() {
    let histories: [(&str, &str, Option<usize>, &str); 7] = [
        (
            r#"[{"role":"user","content":"a"},{"role":"user","content":"b","content":"c"}]"#,
            r#""content""#,
            Some(1),
            "`[1]`",
        ),
        (
            r#"{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}"#,
            r#""text""#,
            Some(0),
            "`messages[0].content[0]`",
        ),
        (
            r#"[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","name":"g","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":""}]"#,
            r#""name""#,
            Some(0),
            "`[0].tool_calls[0].function`",
        ),
        (
            r#"[{"role":"assistant","toolCalls":[{"id":"c","name":"f","arguments":{"q":1,"q":2}}]}]"#,
            r#""q""#,
            Some(0),
            "`[0].toolCalls[0].arguments`",
        ),
        (
            r#"{"system":"s","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","tool_use_id":"y"}]}]}"#,
            r#""tool_use_id""#,
            Some(0),
            "`messages[0].content[0]`",
        ),
        (
            r#"{"messages":[],"messages":[{"role":"user","content":"x"}]}"#,
            r#""messages""#,
            None,
            "the top-level object",
        ),
        (
            "{\"model\":\"m\",\n\"x\":{\"a b\":{\"k\":1,\n\"k\":2}},\"messages\":[]}",
            r#""k""#,
            None,
            r#"`x["a b"]` at line 3"#,
        ),
    ];
    let dir = scratch("duplicates");
    for (i, (text, key, message, path)) in histories.iter().enumerate() {
        let file = dir.join(format!("h{i}.json"));
        std::fs::write(&file, text).unwrap();
        let errors = [
            Document::parse(text.as_bytes(), None).unwrap_err(),
            ctxgate::input::read_document(&file, None, 1 << 20).unwrap_err(),
        ];
        for e in errors {
            assert_eq!(e.kind, K::DuplicateKey, "{text}: {e}");
            assert_eq!(e.message, *message, "{text}: {e}");
            assert!(e.problem.contains(&format!("duplicate key {key}")), "{e}");
            assert!(e.problem.contains(path), "{path}: {e}");
        }
    }
    // A case line (`estimate --lines`), a config, a generator config, an
    // envelope inline and in a file.
    let line = br#"{"config":{"threshold":0.5,"threshold":0.9},"messages":[]}"#;
    let e = ctxgate::input::read_case(line, ctxgate::WireFormat::Engine).unwrap_err();
    assert_eq!(e.kind, K::DuplicateKey, "{e}");
    let e = Config::from_json(br#"{"threshold":0.5,"threshold":0.9}"#).unwrap_err();
    assert_eq!(e.kind, K::DuplicateKey, "{e}");
    let e =
        ctxgate::generate::GenConfig::from_json(br#"{"maxImages":1,"maxImages":2}"#).unwrap_err();
    assert_eq!(e.kind, K::DuplicateKey, "{e}");
    assert!(
        e.problem
            .starts_with("gen-config: duplicate key \"maxImages\""),
        "{e}"
    );
    let e = ctxgate::input::config::read_envelope(r#"{"a":{"b":1,"b":1}}"#, 1 << 20).unwrap_err();
    assert_eq!(e.kind, K::DuplicateKey, "{e}");
    assert!(e.problem.contains("in `a`"), "{e}");
    let envelope = dir.join("envelope.json");
    std::fs::write(&envelope, r#"{"model":"a","model":"b"}"#).unwrap();
    let e = ctxgate::input::config::read_envelope(envelope.to_str().unwrap(), 1 << 20).unwrap_err();
    assert_eq!(e.kind, K::DuplicateKey, "{e}");
    assert_eq!(e.file.as_deref(), envelope.to_str());
    // A fixture and a report.
    let fixture = dir.join("fixture.json");
    std::fs::write(
        &fixture,
        r#"{"ctxgate":1,"name":"x","name":"y","messages":[],"invariants":[]}"#,
    )
    .unwrap();
    let e = Fixture::load(&fixture).unwrap_err();
    assert_eq!(e.kind, K::DuplicateKey, "{e}");
    assert_eq!(e.file.as_deref(), fixture.to_str());
    let report = dir.join("report.json");
    std::fs::write(
        &report,
        r#"{"failures":[{"invariant":"a","invariant":"b"}]}"#,
    )
    .unwrap();
    let Err(e) = ctxgate::report::merge::ShardReport::read(&report, 1 << 20) else {
        panic!("a report with a repeated key was read");
    };
    assert_eq!(e.kind, K::DuplicateKey, "{e}");
    assert!(e.problem.contains("`failures[0]`"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The commands that read JSON refuse a repeated key with exit 2 and the
/// file in the message: `body`, `estimate --lines`, `gen --gen-config`,
/// `check --config`, `replay`, `report merge`, `check --corpus`.
#[test]
fn the_commands_refuse_a_repeated_key_with_exit_2() {
    let dir = scratch("duplicate-commands");
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let history = write("h.json", r#"[{"role":"user","content":"a","content":"b"}]"#);
    let lines = write(
        "cases.jsonl",
        "{\"messages\":[{\"role\":\"user\",\"role\":\"user\"}]}\n",
    );
    let gen_config = write("gen.json", r#"{"maxImages":1,"maxImages":2}"#);
    let config = write("config.json", r#"{"threshold":0.5,"threshold":0.6}"#);
    let good = write("good.json", r#"[{"role":"user","content":"a"}]"#);
    let fixtures = dir.join("fixtures");
    std::fs::create_dir_all(&fixtures).unwrap();
    std::fs::write(
        fixtures.join("f.json"),
        r#"{"ctxgate":1,"ctxgate":1,"name":"f","messages":[]}"#,
    )
    .unwrap();
    let report = write("r.json", r#"{"seed":1,"seed":2}"#);
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::write(
        corpus.join("c.json"),
        r#"[{"role":"user","pinned":true,"pinned":false}]"#,
    )
    .unwrap();
    let fixtures = fixtures.to_str().unwrap();
    let corpus = corpus.to_str().unwrap();
    let runs: [(&[&str], &str); 7] = [
        (&["body", &history], &history),
        (&["estimate", "--lines", &lines], &lines),
        (
            &["gen", "--gen-config", &gen_config, "--cases", "1"],
            &gen_config,
        ),
        (&["body", "--config", &config, &good], &config),
        (&["replay", fixtures], "f.json"),
        (&["report", "merge", &report], &report),
        (&["check", "--cases", "1", "--corpus", corpus], "c.json"),
    ];
    for (args, file) in runs {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("duplicate key"), "{args:?}: {stderr}");
        assert!(stderr.contains(file), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An empty `--envelope ''` is an empty envelope, said so, not a file named
/// "" that cannot be read (`error: : cannot read the envelope`).
#[test]
fn an_empty_envelope_argument_is_empty_not_a_file() {
    for arg in ["", "  "] {
        let e = ctxgate::input::config::read_envelope(arg, 1 << 20).unwrap_err();
        assert_eq!(e.kind, K::Empty, "{arg:?}: {e}");
        assert_eq!(e.file.as_deref(), Some("--envelope"), "{arg:?}: {e}");
    }
}

/// Anthropic's `tool_use` and `tool_result` blocks in a history read as
/// engine or openai are bad input naming the message and the part: kept
/// as opaque parts (as other unknown part types are), they hid the calls
/// from every invariant — an Anthropic fixture with no `format` held
/// against a compactor that cuts a call from its results, and `estimate
/// --format openai` counted 1,320 tokens of a 1,904-token history (the
/// blind audit's F5). Read as anthropic, the same messages are fine.
#[test]
fn anthropic_tool_blocks_in_an_engine_or_openai_history_are_refused() {
    let messages = serde_json::json!([
        {"role": "user", "content": "read a.ts"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "reading"},
            {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.ts"}}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "x"}
        ]}
    ]);
    let body = serde_json::json!({"system": "s", "messages": messages});
    for (format, name) in [
        (ctxgate::WireFormat::Engine, "engine"),
        (ctxgate::WireFormat::Openai, "openai"),
    ] {
        let e = Document::from_value(body.clone(), Some(format)).unwrap_err();
        assert_eq!(e.kind, K::Part, "{e}");
        assert_eq!(e.message, Some(1), "{e}");
        assert!(
            e.problem.starts_with(&format!(
                "content[1]: an Anthropic `tool_use` block in an {name} history: pass --format anthropic"
            )),
            "{e}"
        );
    }
    let results = serde_json::json!([messages[2].clone()]);
    let e = Document::from_value(results, Some(ctxgate::WireFormat::Engine)).unwrap_err();
    assert!(
        e.problem
            .starts_with("content[0]: an Anthropic `tool_result` block in an engine history"),
        "{e}"
    );
    let read = Document::from_value(body, Some(ctxgate::WireFormat::Anthropic)).unwrap();
    assert_eq!(read.messages[2].tool_calls.as_ref().map(Vec::len), Some(1));
    // Other part types are still kept verbatim.
    let other = serde_json::json!([{"role": "user", "content": [{"type": "document", "x": 1}]}]);
    Document::from_value(other, Some(ctxgate::WireFormat::Engine)).unwrap();

    // A fixture's messages are engine unless its `format` says otherwise.
    let mut fixture = serde_json::json!({"ctxgate": 1, "messages": messages});
    let e = Fixture::from_json(fixture.clone()).unwrap_err();
    assert_eq!((e.kind, e.message), (K::Part, Some(1)), "{e}");
    fixture["format"] = "anthropic".into();
    let read = Fixture::from_json(fixture).unwrap();
    assert_eq!(read.messages.len(), 3);
    assert_eq!(read.messages[1].tool_calls.as_ref().map(Vec::len), Some(1));

    // On the command line: exit 2, the file, the message and the part.
    let dir = scratch("anthropic-blocks");
    let path = dir.join("anthropic.json");
    std::fs::write(
        &path,
        serde_json::json!({"system": "s", "messages": messages}).to_string(),
    )
    .unwrap();
    let path = path.to_str().unwrap();
    for args in [
        &["estimate", "--format", "openai", path][..],
        &["estimate", "--format", "engine", path][..],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{path}: message 1: content[1]: an Anthropic `tool_use` block in an {} history",
                args[2]
            )),
            "{args:?}: {stderr}"
        );
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["estimate", path])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A number a field cannot hold names the field, the range it takes and
/// the number found, as a config file's errors do — in a gen-config, an
/// agent fixture's script and a report to merge, where serde_json said
/// only "invalid number" (the blind audit's F8).
#[test]
fn a_number_out_of_range_names_the_field_the_range_and_the_value() {
    use ctxgate::generate::GenConfig;
    for (text, said) in [
        (
            r#"{"imagesPercent": 1e400}"#,
            "gen-config: `imagesPercent` is a percent, a whole number from 0 to 100, found 1e",
        ),
        (
            r#"{"pinnedPercent": 12.5}"#,
            "gen-config: `pinnedPercent` is a percent, a whole number from 0 to 100, found 12.5",
        ),
        (
            r#"{"pinnedPercent": -1}"#,
            "gen-config: `pinnedPercent` is a percent, a whole number from 0 to 100, found -1",
        ),
        (
            r#"{"maxIterations": 1e3}"#,
            "gen-config: `maxIterations` must be a whole number from 0 to 200, found 1e",
        ),
        (
            r#"{"imagesPercnt": 5}"#,
            "gen-config: unknown field `imagesPercnt`, expected one of",
        ),
        (
            r#"{"imagesPercent": 100, "contentClasses": ["prose"]}"#,
            "gen-config: `imagesPercent` asks for image cases, but `contentClasses` leaves out `images`",
        ),
    ] {
        let e = GenConfig::from_json(text.as_bytes()).unwrap_err();
        assert!(e.problem.starts_with(said), "{text}: {e}");
    }

    #[cfg(feature = "agent")]
    {
        let fixture = |summaries: &str| {
            let text = format!(
                r#"{{"ctxgate": 1, "op": "agent", "script": {{"task": "t", "turns": [], "final": "f", "summaries": [{summaries}]}}}}"#
            );
            let v = ctxgate::model::parse_json(text.as_bytes()).unwrap();
            ctxgate::agent::AgentFixture::from_json(v)
                .unwrap_err()
                .problem
        };
        for n in ["-1", "1099511627776", "2.5"] {
            assert_eq!(
                fixture(n),
                format!(
                    "`script.summaries[0]` must be a whole number from 0 to 4294967295, found {n}"
                )
            );
        }
    }

    // A report to merge: counts are whole numbers from 0 to 2^64 - 1.
    let dir = scratch("report-numbers");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["check", "--cases", "2", "--seed", "1", "--report", "json"])
        .args(["--save", dir.join("saved").to_str().unwrap()])
        .output()
        .unwrap();
    // 0, or 1 when two cases left an invariant unexercised: a report either way.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8(out.stdout).unwrap();
    for (from, to, said) in [
        (
            "\"cases\": 2",
            "\"cases\": -1",
            "`cases` must be a whole number from 0 to 18446744073709551615, found -1",
        ),
        (
            "\"seed\": 1",
            "\"seed\": 18446744073709551616",
            "`seed` must be a whole number from 0 to 18446744073709551615, found 18446744073709551616",
        ),
        (
            "\"seed\": 1",
            "\"seed\": 1e3",
            "`seed` must be a whole number written in digits only (no fraction, no exponent) from 0 to 18446744073709551615, found 1e",
        ),
    ] {
        assert!(report.contains(from), "{report}");
        let path = dir.join("bad.json");
        std::fs::write(&path, report.replacen(from, to, 1)).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args(["report", "merge", path.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{to}: {stderr}");
        assert!(stderr.contains(said), "{to}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `report merge` given something that is no report (a history, a
/// fixture, null) names that file as what it is, where it blamed the good
/// report: "d2.json: written by ctxgate 0.1.0, but h.json by a ctxgate
/// too old to record its version" (the blind audit's F9).
#[test]
fn report_merge_names_a_file_that_is_no_report() {
    let dir = scratch("merge-no-report");
    let good = dir.join("report.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["check", "--cases", "2", "--seed", "1", "--report", "json"])
        .args(["--save", dir.join("saved").to_str().unwrap()])
        .args(["--out", good.to_str().unwrap()])
        .output()
        .unwrap();
    // 0, or 1 when two cases left an invariant unexercised: a report either way.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, text, what) in [
        (
            "history.json",
            r#"[{"role": "user", "content": "u"}]"#,
            "a JSON array (a history?)",
        ),
        (
            "fixture.json",
            r#"{"ctxgate": 1, "messages": [{"role": "user", "content": "u"}]}"#,
            "a fixture (`ctxgate replay` plays it)",
        ),
        ("null.json", "null", "null"),
    ] {
        let other = dir.join(name);
        std::fs::write(&other, text).unwrap();
        let other = other.to_str().unwrap();
        for args in [
            [other, good.to_str().unwrap()],
            [good.to_str().unwrap(), other],
        ] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
                .args(["report", "merge"])
                .args(args)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(
                stderr.contains(&format!("{other}: not a ctxgate report: {what}")),
                "{args:?}: {stderr}"
            );
            assert!(!stderr.contains("too old"), "{args:?}: {stderr}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A corpus's JSON Lines error names the line, then the message in it:
/// "line 3: message 0: …" read as "message 0: line 3: …".
#[test]
fn a_corpus_line_error_names_the_line_then_the_message() {
    let dir = scratch("corpus-line-order");
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::write(
        corpus.join("a.jsonl"),
        "[{\"role\":\"user\",\"content\":\"hi\"}]\n\n[{\"role\":\"usr\",\"content\":\"bad\"}]\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["check", "--cases", "1", "--corpus"])
        .arg(&corpus)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a.jsonl: line 3: message 0: unknown role \"usr\""),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
