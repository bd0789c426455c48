//! End-to-end tests of the `ctxgate` binary (SPEC §8): exit codes, error
//! messages that name file, message and problem, `estimate --json` against
//! an independent computation of SPEC §2–3, and `compact`'s output shape.
//!
//! The oracle here is deliberately separate from the library: bodies are
//! measured by serialising with `serde_json::to_vec` and counting, tokens
//! are `ceil(bytes / bytesPerToken)` of content plus, for `adr-0098`, of the
//! serialised `toolCalls` array. Nothing here calls `ctxgate::body` or
//! `ctxgate::estimate`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Map, Value};

use common::process::{run_fed, Out, Stdin, TempDir};

// ---------------------------------------------------------------- running

/// `ctxgate ARGS`, reading `stdin` (or nothing), killed after two
/// minutes (the test fails: it hung).
fn ctxgate<S: AsRef<std::ffi::OsStr>>(args: &[S], stdin: Option<&[u8]>) -> Out {
    let stdin = stdin.map_or(Stdin::Null, |bytes| Stdin::Bytes(bytes.to_vec()));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxgate"));
    run_fed(cmd.args(args), stdin, std::time::Duration::from_secs(120))
}

fn run(args: &[&str]) -> Out {
    ctxgate(args, None)
}

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn example(name: &str) -> String {
    manifest_dir()
        .join("examples")
        .join(name)
        .to_str()
        .unwrap()
        .to_owned()
}

const EXAMPLE: &str = "adr-0098-413.json";
const EXPRESS: &str = "express-100kb.config.json";

/// The shared corpus of real histories, read in place (never copied here).
fn real_histories() -> Option<PathBuf> {
    common::data_dir(&manifest_dir().join("../shared/data/real-histories"))
}

/// A report with its times blanked (`1.2 s`, `time="…"`, `timestamp="…"`),
/// to compare two renderings of one run.
fn without_times(s: &str) -> String {
    let times = regex::Regex::new(r#"\d+\.\d+ s\b|time="[^"]*"|timestamp="[^"]*""#).unwrap();
    times.replace_all(s, "<T>").into_owned()
}

fn read_json(path: &str) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

// ------------------------------------------------- the independent oracle

/// SPEC §2, as this test reads it.
#[derive(Clone)]
struct Cfg {
    context_window: u64,
    threshold: f64,
    max_body: u64,
    bytes_per_token: u64,
    envelope: Map<String, Value>,
}

impl Default for Cfg {
    fn default() -> Cfg {
        Cfg {
            context_window: 128_000,
            threshold: 0.7,
            max_body: 8 * 1024 * 1024,
            bytes_per_token: 4,
            envelope: Map::new(),
        }
    }
}

impl Cfg {
    fn effective_window(&self) -> u64 {
        self.context_window
            .min(self.max_body / self.bytes_per_token)
    }

    fn trigger(&self) -> u64 {
        (self.threshold * self.effective_window() as f64).round() as u64
    }
}

fn tokens(bytes: usize, bytes_per_token: u64) -> u64 {
    (bytes as u64).div_ceil(bytes_per_token)
}

/// The messages array of a document (an array, or an object's `messages`).
fn messages_of(doc: &Value) -> &Vec<Value> {
    match doc {
        Value::Array(a) => a,
        _ => doc["messages"].as_array().expect("`messages` is an array"),
    }
}

fn text_of(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => panic!("test histories have string content, found {other}"),
    }
}

/// One message as the estimators see it: its content text and the engine
/// JSON of its `toolCalls` (None without calls).
struct Seen {
    content: String,
    tool_calls: Option<Value>,
}

/// SPEC §1: the canonical messages of `doc`, read in `format` by hand.
fn canonical(doc: &Value, format: &str) -> Vec<Seen> {
    let mut out = Vec::new();
    match format {
        "engine" => {
            for m in messages_of(doc) {
                out.push(Seen {
                    content: text_of(m.get("content")),
                    tool_calls: m.get("toolCalls").cloned(),
                });
            }
        }
        "openai" => {
            for m in messages_of(doc) {
                let tool_calls = m.get("tool_calls").map(|calls| {
                    let calls = calls.as_array().unwrap().iter().map(|c| {
                        let f = &c["function"];
                        let arguments = match &f["arguments"] {
                            Value::String(text) => serde_json::from_str(text)
                                .unwrap_or_else(|_| Value::String(text.clone())),
                            other => other.clone(),
                        };
                        let mut call = Map::new();
                        call.insert("id".into(), c["id"].clone());
                        call.insert("name".into(), f["name"].clone());
                        call.insert("arguments".into(), arguments);
                        for (k, v) in c.as_object().unwrap() {
                            if !["id", "type", "function"].contains(&k.as_str()) {
                                call.insert(k.clone(), v.clone());
                            }
                        }
                        Value::Object(call)
                    });
                    Value::Array(calls.collect())
                });
                out.push(Seen {
                    content: text_of(m.get("content")),
                    tool_calls,
                });
            }
        }
        "anthropic" => {
            // The test's anthropic histories keep to the unambiguous subset:
            // string `system`; string content or blocks with at most one
            // `text` block; tool results alone in their user message, each
            // with string content.
            if let Some(system) = doc.get("system") {
                out.push(Seen {
                    content: text_of(Some(system)),
                    tool_calls: None,
                });
            }
            for m in messages_of(doc) {
                let Value::Array(blocks) = &m["content"] else {
                    out.push(Seen {
                        content: text_of(m.get("content")),
                        tool_calls: None,
                    });
                    continue;
                };
                let mut text = String::new();
                let mut calls = Vec::new();
                for b in blocks {
                    match b["type"].as_str().unwrap() {
                        "text" => text.push_str(b["text"].as_str().unwrap()),
                        "tool_use" => calls.push(json!({
                            "id": b["id"], "name": b["name"], "arguments": b["input"]
                        })),
                        "tool_result" => out.push(Seen {
                            content: text_of(b.get("content")),
                            tool_calls: None,
                        }),
                        other => panic!("block type {other} is outside the test's subset"),
                    }
                }
                if blocks.iter().any(|b| b["type"] != "tool_result") {
                    out.push(Seen {
                        content: text,
                        tool_calls: (!calls.is_empty()).then(|| Value::Array(calls)),
                    });
                }
            }
        }
        other => panic!("unknown format {other}"),
    }
    out
}

/// SPEC §2: the body is the envelope with `messages` (and, for anthropic,
/// `system`) added, serialised compactly; its size is exact.
fn body_bytes(wire_doc: &Value, format: &str, cfg: &Cfg) -> usize {
    let mut body = cfg.envelope.clone();
    if format == "anthropic" {
        if let Some(system) = wire_doc.get("system") {
            body.insert("system".into(), system.clone());
        }
    }
    body.insert(
        "messages".into(),
        Value::Array(messages_of(wire_doc).clone()),
    );
    serde_json::to_vec(&Value::Object(body)).unwrap().len()
}

/// SPEC §3 and §8: what `estimate --json` must print for `doc`, read in
/// `format` and measured in `wire` (`wire_doc` is the history in `wire`).
fn expected_estimate(
    doc: &Value,
    format: &str,
    wire_doc: &Value,
    wire: &str,
    cfg: &Cfg,
    estimator: &str,
) -> Value {
    let per_message: Vec<u64> = canonical(doc, format)
        .iter()
        .map(|m| {
            let content = tokens(m.content.len(), cfg.bytes_per_token);
            let calls = match (&m.tool_calls, estimator) {
                (Some(Value::Array(calls)), "adr-0098") if !calls.is_empty() => tokens(
                    serde_json::to_vec(&Value::Array(calls.clone()))
                        .unwrap()
                        .len(),
                    cfg.bytes_per_token,
                ),
                _ => 0,
            };
            content + calls
        })
        .collect();
    json!({
        "estimator": estimator,
        "tokens": per_message.iter().sum::<u64>(),
        "perMessage": per_message,
        "bodyBytes": body_bytes(wire_doc, wire, cfg),
        "trigger": cfg.trigger(),
        "effectiveWindow": cfg.effective_window(),
    })
}

/// Check `estimate --json` on `path` (in its own format) against the oracle,
/// under both estimators.
fn check_estimate(path: &str, format: &str, cfg: &Cfg, flags: &[&str]) {
    let doc = read_json(path);
    for estimator in ["adr-0098", "content-only"] {
        let mut args = vec!["estimate", "--json", "--estimator", estimator];
        args.extend_from_slice(flags);
        args.push(path);
        let got = run(&args).ok().json();
        let want = expected_estimate(&doc, format, &doc, format, cfg, estimator);
        assert_eq!(
            got.as_object().unwrap().keys().collect::<Vec<_>>(),
            [
                "estimator",
                "tokens",
                "perMessage",
                "bodyBytes",
                "trigger",
                "effectiveWindow"
            ],
            "the keys of estimate --json, in order"
        );
        assert_eq!(got, want, "{path} with {estimator} and {flags:?}");
    }
}

/// SPEC §1.3, by hand: an engine history (object arguments, no extra call
/// fields) as the openai format writes it.
fn engine_to_openai(doc: &Value) -> Value {
    let msgs = messages_of(doc).iter().map(|m| {
        let mut out = Map::new();
        for (k, v) in m.as_object().unwrap() {
            match k.as_str() {
                "toolCalls" => {
                    let calls = v.as_array().unwrap().iter().map(|c| {
                        json!({"id": c["id"], "type": "function", "function": {
                            "name": c["name"],
                            "arguments": serde_json::to_string(&c["arguments"]).unwrap()
                        }})
                    });
                    out.insert("tool_calls".into(), Value::Array(calls.collect()));
                }
                "toolCallId" => {
                    out.insert("tool_call_id".into(), v.clone());
                }
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        Value::Object(out)
    });
    Value::Array(msgs.collect())
}

// ----------------------------------------------------------- the histories

/// An engine history that exercises the body's corners: non-ASCII, escapes,
/// control characters, null and absent content, extra fields, `pinned`, an
/// empty `toolCalls`, numbers kept as written, and a pending last iteration.
/// Raw text, so that numbers such as `1.50` and `-0.0` keep their spelling.
fn engine_corners() -> String {
    const TEXT: &str = r#"[
        {"role": "system", "content": "You are the QA gate. Règles: «sois précis» — 日本語 🦀"},
        {"role": "user", "content": "Review PR 412\n\t\"quoted\" \\ back\u0001slash\u007f", "pinned": true},
        {"role": "assistant", "content": null, "toolCalls": [
            {"id": "call_1", "name": "search_workspace", "arguments": {"query": "413", "limit": 1.50, "big": 123456789012345678901234567890, "exp": 1E+2}},
            {"id": "call_2", "name": "read_file", "arguments": {"path": "apps/api/src/main.ts", "ünïcode": ["é", null, true, -0.0]}, "meta": {"retry": 0}}
        ], "name": "qa_gate"},
        {"role": "tool", "toolCallId": "call_1", "content": "apps/api/src/main.ts:12: const app = await NestFactory.create(AppModule);\n"},
        {"role": "tool", "toolCallId": "call_2", "content": "BIG"},
        {"role": "assistant", "toolCalls": [], "content": "no calls after all"},
        {"role": "assistant", "metadata": {"turn": 7, "cost": 0.0012}},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": "", "toolCalls": [
            {"id": "call_0", "name": "run_tests", "arguments": "not an object, a string"}
        ]}
    ]"#;
    TEXT.replace("BIG", &"x".repeat(5000))
}

/// An openai history: argument text that is not JSON, text with spaces,
/// a call with no `type`, an extra call field.
fn openai_corners() -> Value {
    json!({"source": "hand-written", "format": "openai", "messages": [
        {"role": "system", "content": "You are the QA gate."},
        {"role": "user", "content": "Review PR 412"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "search_workspace", "arguments": "{\"query\": \"413\",  \"limit\": 10}"}},
            {"id": "call_1", "function": {"name": "read_file", "arguments": "{oops"}, "index": 1}
        ]},
        {"role": "tool", "tool_call_id": "call_0", "content": "found 3 matches"},
        {"role": "tool", "tool_call_id": "call_1", "content": "import { NestFactory } from '@nestjs/core';"},
        {"role": "assistant", "content": "The body limit is the Express default."}
    ]})
}

/// An anthropic history in the subset `canonical` reads.
fn anthropic_history() -> Value {
    json!({"model": "claude-test", "system": "You are the QA gate.", "messages": [
        {"role": "user", "content": "Review PR 412"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Searching."},
            {"type": "tool_use", "id": "toolu_1", "name": "search_workspace", "input": {"query": "413"}},
            {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "apps/api/src/main.ts"}}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "apps/api/src/main.ts:12: NestFactory.create"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "x".repeat(3000)}
        ]},
        {"role": "assistant", "content": "The body limit is the Express default. ✓"}
    ]})
}

// ------------------------------------------------------------- estimate

#[test]
fn estimate_json_matches_the_spec_on_the_shipped_example() {
    let path = example(EXAMPLE);
    check_estimate(&path, "engine", &Cfg::default(), &[]);
    let express = Cfg {
        max_body: 102_400,
        ..Cfg::default()
    };
    let config = example(EXPRESS);
    check_estimate(&path, "engine", &express, &["--config", &config]);
    // The ADR's story: the estimate before ADR 0098 is under the Express
    // trigger while the body is over Express's limit.
    let doc = read_json(&path);
    let before = expected_estimate(&doc, "engine", &doc, "engine", &express, "content-only");
    let after = expected_estimate(&doc, "engine", &doc, "engine", &express, "adr-0098");
    assert!(before["tokens"].as_u64() <= before["trigger"].as_u64());
    assert!(after["tokens"].as_u64() > after["trigger"].as_u64());
    assert!(after["bodyBytes"].as_u64().unwrap() > 102_400);
    assert!(std::fs::metadata(&path).unwrap().len() < 200 * 1024);
}

#[test]
fn estimate_json_matches_the_spec_on_corner_cases_and_flags() {
    let tmp = TempDir::new("estimate-corners");
    let engine = tmp.file("engine.json", engine_corners());
    check_estimate(&engine, "engine", &Cfg::default(), &[]);
    let odd = Cfg {
        context_window: 5_000,
        threshold: 0.55,
        max_body: 9_999,
        bytes_per_token: 3,
        envelope: json!({"model": "m-1", "sessionId": "s-412", "tools": [{"name": "read_file"}]})
            .as_object()
            .unwrap()
            .clone(),
    };
    let envelope = Value::Object(odd.envelope.clone()).to_string();
    let flags = [
        "--context-window",
        "5000",
        "--threshold",
        "0.55",
        "--transport-max-body-bytes",
        "9999",
        "--bytes-per-token",
        "3",
        "--envelope",
        &envelope,
    ];
    check_estimate(&engine, "engine", &odd, &flags);

    // The same through a config file, and the envelope from a file.
    let config = tmp.file(
        "odd.config.json",
        json!({"contextWindow": 5000, "threshold": 0.55, "transportMaxBodyBytes": 9999,
               "bytesPerToken": 3, "envelope": odd.envelope})
        .to_string(),
    );
    check_estimate(&engine, "engine", &odd, &["--config", &config]);
    let envelope_file = tmp.file("envelope.json", &envelope);
    let flags = ["--config", &config, "--envelope", &envelope_file];
    check_estimate(&engine, "engine", &odd, &flags);

    // Flags override the file.
    let bpt1 = Cfg {
        bytes_per_token: 1,
        ..odd.clone()
    };
    check_estimate(
        &engine,
        "engine",
        &bpt1,
        &["--config", &config, "--bytes-per-token", "1"],
    );

    let openai = tmp.file("openai.json", openai_corners().to_string());
    check_estimate(&openai, "openai", &Cfg::default(), &[]);
    check_estimate(&openai, "openai", &odd, &flags);
}

#[test]
fn estimate_json_matches_the_spec_on_real_histories() {
    let Some(dir) = real_histories() else { return };
    let mut checked = 0;
    for source in std::fs::read_dir(&dir).unwrap() {
        let source = source.unwrap().path();
        if !source.is_dir() {
            continue;
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(&source)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        // The first and the largest of each source.
        let largest = files
            .iter()
            .max_by_key(|p| std::fs::metadata(p).unwrap().len())
            .cloned();
        files.truncate(1);
        files.extend(largest);
        files.dedup();
        for file in files {
            let path = file.to_str().unwrap();
            assert_eq!(read_json(path)["format"], "openai");
            check_estimate(path, "openai", &Cfg::default(), &[]);
            let express = Cfg {
                max_body: 102_400,
                ..Cfg::default()
            };
            check_estimate(path, "openai", &express, &["--config", &example(EXPRESS)]);
            checked += 1;
        }
    }
    assert!(checked >= 5, "checked {checked} real histories");
}

#[test]
fn the_body_is_measured_in_the_flag_else_the_config_else_the_input_format() {
    let tmp = TempDir::new("wire-format");
    let doc = read_json(&example(EXAMPLE));
    let openai_doc = engine_to_openai(&doc);
    let path = example(EXAMPLE);
    let cfg = Cfg::default();
    let engine_body = body_bytes(&doc, "engine", &cfg);
    let openai_body = body_bytes(&openai_doc, "openai", &cfg);
    assert_ne!(engine_body, openai_body);
    let body = |args: &[&str]| {
        let mut all = vec!["estimate", "--json"];
        all.extend_from_slice(args);
        all.push(&path);
        run(&all).ok().json()["bodyBytes"].as_u64().unwrap() as usize
    };
    let openai_config = tmp.file("openai.config.json", r#"{"wireFormat": "openai"}"#);
    let plain_config = tmp.file("plain.config.json", r#"{"keepRecent": 3}"#);
    assert_eq!(body(&[]), engine_body, "the input's own format");
    assert_eq!(body(&["--config", &plain_config]), engine_body);
    assert_eq!(body(&["--wire-format", "openai"]), openai_body, "the flag");
    assert_eq!(
        body(&["--config", &openai_config]),
        openai_body,
        "the file's wireFormat"
    );
    assert_eq!(
        body(&["--config", &openai_config, "--wire-format", "engine"]),
        engine_body,
        "the flag over the file"
    );
    // And an openai input is measured in openai unless told otherwise.
    let openai_path = tmp.file("openai.json", openai_doc.to_string());
    let got = run(&["estimate", "--json", &openai_path]).ok().json();
    assert_eq!(got["bodyBytes"].as_u64().unwrap() as usize, openai_body);
    let got = run(&[
        "estimate",
        "--json",
        "--wire-format",
        "engine",
        &openai_path,
    ])
    .ok()
    .json();
    assert_eq!(got["bodyBytes"].as_u64().unwrap() as usize, engine_body);
}

#[test]
fn estimate_and_compact_read_anthropic() {
    let tmp = TempDir::new("anthropic");
    let doc = anthropic_history();
    let path = tmp.file("anthropic.json", doc.to_string());
    let out = run(&["estimate", "--json", &path]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    check_estimate(&path, "anthropic", &Cfg::default(), &[]);
    check_estimate(
        &path,
        "anthropic",
        &Cfg::default(),
        &["--format", "anthropic"],
    );
    let small = Cfg {
        max_body: 2_000,
        envelope: json!({"model": "claude-test", "max_tokens": 1024})
            .as_object()
            .unwrap()
            .clone(),
        ..Cfg::default()
    };
    let flags = [
        "--transport-max-body-bytes",
        "2000",
        "--envelope",
        r#"{"model": "claude-test", "max_tokens": 1024}"#,
    ];
    check_estimate(&path, "anthropic", &small, &flags);

    // Under the trigger: the same document back, `system` and `model` kept.
    let out = run(&["compact", &path]).ok().json();
    assert_eq!(out, doc);
    // Compacted: still anthropic, still an object with its fields.
    let out = run(&["compact", "--transport-max-body-bytes", "2000", &path])
        .ok()
        .json();
    assert_eq!(out["model"], "claude-test");
    assert!(out.get("system").is_some());
    assert!(
        serde_json::to_vec(&json!({"system": out["system"], "messages": out["messages"]}))
            .unwrap()
            .len()
            <= 2_000
    );
    assert_eq!(messages_of(&out).last(), messages_of(&doc).last());
}

#[test]
fn estimate_prints_a_readable_table() {
    let path = example(EXAMPLE);
    let out = run(&["estimate", "--config", &example(EXPRESS), &path]).ok();
    let text = out.stdout;
    let doc = read_json(&path);
    let want = expected_estimate(
        &doc,
        "engine",
        &doc,
        "engine",
        &Cfg {
            max_body: 102_400,
            ..Cfg::default()
        },
        "adr-0098",
    );
    let lines: Vec<&str> = text.lines().collect();
    // A header, one line per message, then the footer.
    assert!(lines[0].contains("role") && lines[0].contains("tokens"));
    assert!(lines[1].contains("system"), "{}", lines[1]);
    assert!(lines[4].contains("← call_1"), "{}", lines[4]);
    let grouped = |n: u64| {
        let s = n.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    assert!(
        text.contains(&grouped(want["tokens"].as_u64().unwrap())),
        "{text}"
    );
    assert!(
        text.contains(&grouped(want["bodyBytes"].as_u64().unwrap())),
        "{text}"
    );
    assert!(text.contains("17,920") && text.contains("25,600") && text.contains("102,400"));
    assert!(
        text.contains("would compact") && text.contains("yes"),
        "{text}"
    );
    // Every line is short: previews are cut.
    assert!(text.lines().all(|l| l.chars().count() < 120), "{text}");

    let out = run(&["estimate", &path]).ok();
    let text = out.stdout;
    assert!(text.contains("would compact     no"), "{text}");
}

// -------------------------------------------------------------- compact

#[test]
fn compact_shrinks_the_example_under_the_express_limit_in_its_shape() {
    let path = example(EXAMPLE);
    let input = read_json(&path);
    let out = run(&["compact", "-v", "--config", &example(EXPRESS), &path]).ok();
    let output = out.json();
    let (inp, outp) = (messages_of(&input), messages_of(&output));
    assert!(output.is_array(), "an array in, an array out");
    assert!(outp.len() < inp.len());
    assert!(
        body_bytes(&output, "engine", &Cfg::default()) <= 102_400,
        "the body is under the ceiling"
    );
    assert_eq!(outp[0], inp[0], "the head is kept");
    assert_eq!(outp.last(), inp.last(), "the last iteration is kept");
    assert!(
        outp.iter().any(|m| m.get("toolCalls").is_some()),
        "engine format"
    );
    assert!(outp.iter().all(|m| m.get("tool_calls").is_none()));
    // One line of compact JSON.
    assert_eq!(out.stdout.matches('\n').count(), 1);
    assert!(!out.stdout.starts_with("[\n"));
    // --verbose: the summary on stderr.
    out.stderr_has("compacted");
    out.stderr_has("102,400");
}

#[test]
fn compact_keeps_an_object_and_its_format() {
    let tmp = TempDir::new("compact-object");
    // An openai object with extra fields, compacted with a small ceiling.
    let mut doc = openai_corners();
    let big = "y".repeat(4_000);
    let msgs = doc["messages"].as_array_mut().unwrap();
    msgs[4]["content"] = json!(big);
    msgs.push(json!({"role": "user", "content": "and the engine side?"}));
    msgs.push(json!({"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "call_9", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"default.ex\"}"}}]}));
    msgs.push(json!({"role": "tool", "tool_call_id": "call_9", "content": "defmodule ..."}));
    let path = tmp.file("openai.json", doc.to_string());
    let out = run(&["compact", "--transport-max-body-bytes", "2000", &path])
        .ok()
        .json();
    let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["source", "format", "messages"],
        "fields and their order"
    );
    assert_eq!(out["source"], doc["source"]);
    let (inp, outp) = (messages_of(&doc), messages_of(&out));
    assert!(outp.len() < inp.len());
    assert!(body_bytes(&out, "openai", &Cfg::default()) <= 2_000);
    assert_eq!(outp.last(), inp.last());
    assert_eq!(
        outp[outp.len() - 2],
        inp[inp.len() - 2],
        "call and result together"
    );
    assert!(
        outp.iter().any(|m| m.get("tool_calls").is_some()),
        "openai format"
    );
    assert!(outp.iter().all(|m| m.get("toolCalls").is_none()));
}

#[test]
fn compact_keeps_a_real_openai_history_in_its_shape() {
    let Some(dir) = real_histories() else { return };
    let path = dir.join("letta-agent-file/002.json");
    let path = path.to_str().unwrap();
    let input = read_json(path);
    let output = run(&["compact", "--config", &example(EXPRESS), path])
        .ok()
        .json();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&output), keys(&input));
    for k in ["source", "license", "format"] {
        assert_eq!(output[k], input[k]);
    }
    assert!(body_bytes(&output, "openai", &Cfg::default()) <= 102_400);
    assert_eq!(messages_of(&output).last(), messages_of(&input).last());
    assert!(messages_of(&output)
        .iter()
        .all(|m| m.get("toolCalls").is_none()));
}

#[test]
fn compact_under_the_trigger_returns_the_history_unchanged() {
    let tmp = TempDir::new("unchanged");
    let mut paths = vec![
        example(EXAMPLE),
        tmp.file("engine.json", engine_corners()),
        tmp.file("openai.json", openai_corners().to_string()),
    ];
    if let Some(dir) = real_histories() {
        for f in [
            "tau-bench/001.json",
            "swe-agent/002.json",
            "toolbench/001.json",
        ] {
            paths.push(dir.join(f).to_str().unwrap().to_owned());
        }
    }
    for path in &paths {
        let input = read_json(path);
        let out = run(&["compact", path]).ok();
        assert_eq!(out.json(), input, "{path}");
    }
    // Byte for byte, when the input is compact JSON in the writer's field order.
    let compact_text = serde_json::to_string(&read_json(&example(EXAMPLE))).unwrap() + "\n";
    let path = tmp.file("example-compact.json", &compact_text);
    assert_eq!(run(&["compact", &path]).ok().stdout, compact_text);
}

#[test]
fn stdin_is_read_with_a_dash_or_no_file() {
    let path = example(EXAMPLE);
    let bytes = std::fs::read(&path).unwrap();
    let config = example(EXPRESS);
    let from_file = run(&["compact", "--config", &config, &path]).ok().stdout;
    let dash = ctxgate(&["compact", "--config", &config, "-"], Some(&bytes)).ok();
    let none = ctxgate(&["compact", "--config", &config], Some(&bytes)).ok();
    assert_eq!(dash.stdout, from_file);
    assert_eq!(none.stdout, from_file);
    let from_file = run(&["estimate", "--json", &path]).ok().json();
    let dash = ctxgate(&["estimate", "--json", "-"], Some(&bytes)).ok();
    assert_eq!(dash.json(), from_file);
}

#[test]
fn cannot_fit_exits_1_with_the_bytes_needed_and_the_ceiling() {
    let path = example(EXAMPLE);
    let doc = read_json(&path);
    let msgs = messages_of(&doc);
    // Head (the system message) and the last iteration (assistant + tool).
    let minimal = json!([msgs[0], msgs[msgs.len() - 2], msgs[msgs.len() - 1]]);
    let needed = body_bytes(&minimal, "engine", &Cfg::default());
    let out = run(&["compact", "--transport-max-body-bytes", "1000", &path]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.is_empty());
    out.stderr_has("cannot_fit");
    out.stderr_has(&path);
    assert!(
        out.stderr.contains(&format!("{needed} bytes")),
        "needs {needed}: {}",
        out.stderr
    );
    out.stderr_has("1000-byte ceiling");
}

// ------------------------------------------------------------ bad input

/// Run both commands on `file` and check exit 2 and a message naming the
/// file, the message index (when there is one) and the problem.
fn assert_bad_input(file: &str, index: Option<usize>, problem: &[&str]) {
    for command in ["estimate", "compact"] {
        let out = run(&[command, file]);
        check_bad(&out, file, index, problem);
    }
}

fn check_bad(out: &Out, file: &str, index: Option<usize>, problem: &[&str]) {
    assert_eq!(out.code, 2, "exit code; stderr: {}", out.stderr);
    assert!(out.stdout.is_empty(), "nothing on stdout");
    let err = &out.stderr;
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(&format!("{file}: ")), "names {file}: {err}");
    if let Some(i) = index {
        assert!(
            err.contains(&format!("{file}: message {i}: ")),
            "names message {i}: {err}"
        );
    } else {
        let names_one = err
            .match_indices("message ")
            .any(|(at, m)| err[at + m.len()..].starts_with(|c: char| c.is_ascii_digit()));
        assert!(!names_one, "no index to name: {err}");
    }
    for p in problem {
        assert!(err.contains(p), "says {p:?}: {err}");
    }
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

#[test]
fn malformed_and_truncated_json() {
    let tmp = TempDir::new("malformed");
    let f = tmp.file(
        "malformed.json",
        r#"[{"role":"user","content":"a"},{"role":"user","content":x}]"#,
    );
    assert_bad_input(&f, Some(1), &["malformed JSON", "line 1", "column"]);
    let f = tmp.file(
        "truncated.json",
        r#"{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","cont"#,
    );
    assert_bad_input(&f, Some(2), &["truncated JSON"]);
}

#[test]
fn invalid_utf8() {
    let tmp = TempDir::new("utf8");
    let mut bytes = br#"[{"role":"user","content":"a"},{"role":"user","content":""#.to_vec();
    let at = bytes.len();
    bytes.extend_from_slice(b"\xff\xfe\"}]");
    let f = tmp.file("latin1.json", bytes);
    // The library names the byte offset but not the message index (reported).
    for command in ["estimate", "compact"] {
        let out = run(&[command, &f]);
        assert_eq!(out.code, 2);
        out.stderr_has(&f);
        out.stderr_has("UTF-8");
        out.stderr_has(&format!("byte {at}"));
        assert!(!out.stderr.contains("panicked"));
    }
}

/// A file that starts with a byte-order mark (Windows editors,
/// PowerShell) is told so — a history, a config, a fixture — not "expected
/// value at line 1 column 1".
#[test]
fn a_byte_order_mark_is_named() {
    let tmp = TempDir::new("bom");
    let history = br#"[{"role":"user","content":"a"}]"#;
    let utf8_bom = tmp.file("bom.json", [&b"\xEF\xBB\xBF"[..], history].concat());
    assert_bad_input(&utf8_bom, None, &["UTF-8 byte-order mark", "RFC 8259"]);
    let utf16: Vec<u8> = std::iter::once(0xFEFFu16)
        .chain(std::str::from_utf8(history).unwrap().encode_utf16())
        .flat_map(u16::to_le_bytes)
        .collect();
    let utf16 = tmp.file("utf16.json", utf16);
    assert_bad_input(&utf16, None, &["is UTF-16", "must be UTF-8"]);
    let config = tmp.file("config.json", b"\xEF\xBB\xBF{\"contextWindow\": 1000}");
    let out = run(&["check", "--config", &config, "--cases", "1"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has(&format!(
        "{config}: config: starts with a UTF-8 byte-order mark"
    ));
    let fixture = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/regressions/tool-call-arguments-weigh.json"),
    )
    .unwrap();
    let fixture = tmp.file("fixture.json", [&b"\xEF\xBB\xBF"[..], &fixture].concat());
    let out = run(&["replay", &fixture]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has(&format!("{fixture}: starts with a UTF-8 byte-order mark"));
}

#[test]
fn ill_formed_histories() {
    let tmp = TempDir::new("ill-formed");
    let f = tmp.file(
        "role.json",
        r#"[{"role":"user","content":"a"},{"role":"robot","content":"b"}]"#,
    );
    assert_bad_input(&f, Some(1), &["unknown role", "robot"]);
    // OpenAI logs' own two: the error says what to write instead.
    let f = tmp.file(
        "developer.json",
        r#"[{"role":"developer","content":"be brief"},{"role":"user","content":"a"}]"#,
    );
    assert_bad_input(&f, Some(0), &["unknown role", "newer name for `system`"]);
    let f = tmp.file(
        "function.json",
        r#"[{"role":"user","content":"a"},{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}},{"role":"function","name":"f","content":"r"}]"#,
    );
    assert_bad_input(
        &f,
        Some(2),
        &["unknown role", "deprecated function calling"],
    );

    let f = tmp.file(
        "orphan.json",
        r#"[{"role":"system","content":"s"},{"role":"user","content":"a"},{"role":"tool","toolCallId":"call_9","content":"b"}]"#,
    );
    assert_bad_input(&f, Some(2), &["tool message", "call_9"]);

    // The call left unanswered before a later iteration is found first.
    let f = tmp.file(
        "wrong-call.json",
        r#"[{"role":"assistant","toolCalls":[{"id":"call_1","name":"f","arguments":{}}]},{"role":"tool","toolCallId":"call_2","content":"b"}]"#,
    );
    assert_bad_input(&f, Some(0), &["\"call_1\"", "never answered"]);
    let f = tmp.file(
        "wrong-call-pending.json",
        r#"[{"role":"assistant","toolCalls":[{"id":"call_1","name":"f","arguments":{}}]},{"role":"tool","toolCallId":"call_1","content":"a"},{"role":"tool","toolCallId":"call_2","content":"b"}]"#,
    );
    assert_bad_input(&f, Some(2), &["\"call_2\"", "message 0"]);

    let f = tmp.file(
        "twice.json",
        r#"[{"role":"user","content":"a"},{"role":"assistant","toolCalls":[{"id":"c1","name":"f","arguments":{}}]},{"role":"tool","toolCallId":"c1","content":"r"},{"role":"tool","toolCallId":"c1","content":"r2"}]"#,
    );
    assert_bad_input(&f, Some(3), &["\"c1\"", "twice"]);

    let f = tmp.file(
        "openai-twice.json",
        json!({"format": "openai", "messages": [
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
            {"role": "user", "content": "again?"},
            {"role": "tool", "tool_call_id": "c1", "content": "r2"}
        ]})
        .to_string(),
    );
    assert_bad_input(&f, Some(3), &["\"c1\""]);

    let f = tmp.file("wrong-type.json", r#"{"model":"m","messages":"hello"}"#);
    assert_bad_input(&f, None, &["`messages`", "array", "a string"]);
    let f = tmp.file("number.json", "42");
    assert_bad_input(&f, None, &["a number"]);
}

#[test]
fn arguments_nested_100000_deep() {
    let tmp = TempDir::new("deep");
    let mut text = String::from(
        r#"[{"role":"user","content":"a"},{"role":"assistant","toolCalls":[{"id":"c","name":"n","arguments":"#,
    );
    text.push_str(&"[".repeat(100_000));
    text.push_str(&"]".repeat(100_000));
    text.push_str("}]}]");
    let f = tmp.file("deep.json", &text);
    assert_bad_input(&f, Some(1), &["nested deeper than"]);
    // The same on stdin, where the file is `-`.
    let out = ctxgate(&["estimate", "-"], Some(text.as_bytes()));
    check_bad(&out, "-", Some(1), &["nested deeper than"]);
    // And openai argument text nested as deep is kept as a string, not a crash.
    let args = "[".repeat(100_000) + &"]".repeat(100_000);
    let doc = json!({"format": "openai", "messages": [
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "n", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "c", "content": "ok"}
    ]});
    let f = tmp.file("deep-text.json", doc.to_string());
    check_estimate(&f, "openai", &Cfg::default(), &[]);
}

#[test]
fn empty_input() {
    let tmp = TempDir::new("empty");
    let f = tmp.file("empty.json", "");
    assert_bad_input(&f, None, &["empty input"]);
    let f = tmp.file("blank.json", " \n\t\n");
    assert_bad_input(&f, None, &["empty input"]);
    let out = ctxgate(&["compact", "-"], Some(b""));
    check_bad(&out, "-", None, &["empty input"]);
    // Each command says what it expected: a history, a fixture, a report.
    let path = f.as_str();
    let cases: [(&[&str], &str); 3] = [
        (&["compact", path], "a JSON array of messages"),
        (&["replay", path, "--subject", "true"], "a ctxgate fixture"),
        (&["report", "merge", path], "`ctxgate check --report json`"),
    ];
    for (args, expected) in cases {
        let out = ctxgate(args, None);
        check_bad(&out, path, None, &["empty input: expected ", expected]);
        assert!(
            expected.contains("messages") || !out.stderr.contains("messages"),
            "{args:?} speaks of messages: {}",
            out.stderr
        );
    }
}

#[test]
fn fifty_megabytes_of_random_bytes() {
    let tmp = TempDir::new("random");
    // splitmix64, seeded: the same 50 MB on every run.
    let mut state: u64 = 0x0098_0413;
    let mut bytes = Vec::with_capacity(50 << 20);
    while bytes.len() < 50 << 20 {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        bytes.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    let f = tmp.file("random.bin", &bytes);
    assert_bad_input(&f, None, &["not valid UTF-8"]);
    // Random ASCII is valid UTF-8 but not JSON.
    for b in bytes.iter_mut().take(1 << 20) {
        *b = b' ' + *b % 95;
    }
    bytes.truncate(1 << 20);
    let f = tmp.file("random-ascii.txt", &bytes);
    let out = run(&["estimate", &f]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(&f) && out.stderr.contains("JSON"),
        "{}",
        out.stderr
    );
}

#[test]
fn missing_file() {
    let f = std::env::temp_dir().join(format!(
        "ctxgate-cli-{}-no-such-file.json",
        std::process::id()
    ));
    let f = f.to_str().unwrap();
    assert_bad_input(f, None, &["cannot read the history", "No such file"]);
}

#[test]
fn bad_config_files_and_flags() {
    let tmp = TempDir::new("bad-config");
    let history = example(EXAMPLE);
    let cases = [
        (
            "unknown-field.json",
            r#"{"contextWindo": 5}"#,
            "unknown field `contextWindo`: did you mean `contextWindow`?",
        ),
        (
            "threshold.json",
            r#"{"threshold": 2}"#,
            "`threshold` must be in (0, 1]",
        ),
        (
            "wrong-type.json",
            r#"{"keepRecent": "two"}"#,
            r#"`keepRecent`: found string "two", expected a whole number"#,
        ),
        ("truncated.json", r#"{"threshold": "#, "truncated JSON"),
        (
            "array.json",
            "[1, 2]",
            "expected a JSON object, found an array",
        ),
        ("empty.json", "", "empty"),
        ("format.json", r#"{"wireFormat": "xml"}"#, "xml"),
    ];
    for (name, text, problem) in cases {
        let f = tmp.file(name, text);
        for command in ["estimate", "compact"] {
            let out = run(&[command, "--config", &f, &history]);
            check_bad(&out, &f, None, &["config", problem]);
        }
    }
    let missing = tmp.0.join("missing.config.json");
    let missing = missing.to_str().unwrap();
    let out = run(&["compact", "--config", missing, &history]);
    check_bad(&out, missing, None, &["cannot read the config"]);

    // Flags are checked as the config's fields are.
    let out = run(&["estimate", "--threshold", "1.5", &history]);
    assert_eq!(out.code, 2);
    out.stderr_has("`threshold` must be in (0, 1]");
    let out = run(&["compact", "--keep-recent", "0", &history]);
    assert_eq!(out.code, 2);
    out.stderr_has("keepRecent");
    let out = run(&["estimate", "--envelope", "[1]", &history]);
    assert_eq!(out.code, 2);
    out.stderr_has("--envelope: envelope: expected a JSON object");
    let out = run(&["estimate", "--envelope", r#"{"model": "#, &history]);
    assert_eq!(out.code, 2);
    out.stderr_has("truncated JSON");
}

#[test]
fn bad_usage_exits_2() {
    let history = example(EXAMPLE);
    for args in [
        vec!["estimate", "--bogus", &history],
        vec!["estimate", "--estimator", "tiktoken", &history],
        vec!["compact", "--format", "xml", &history],
        vec!["compact", "--wire-format", "xml", &history],
        vec!["compact", "--threshold", "high", &history],
        vec!["compact", &history, &history],
        vec!["frobnicate"],
        vec![],
    ] {
        let out = run(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
    assert_eq!(run(&["--help"]).code, 0);
    assert_eq!(run(&["compact", "--help"]).code, 0);
    let help = run(&["estimate", "--help"]).stdout;
    assert!(help.contains("--wire-format") && help.contains("--envelope"));
}

/// `--cases 0` and an empty `--invariants` check nothing: bad usage (exit 2),
/// before any subject starts.
#[test]
fn a_check_that_would_check_nothing_is_bad_usage() {
    for args in [
        &["check", "--cases", "0"][..],
        &["check", "--invariants", ""],
        &["check", "--invariants", " , "],
    ] {
        let out = run(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("checks nothing"),
            "{args:?}: {}",
            out.stderr
        );
    }
    // An invariant the one case of seed 14 never exercises (the reference
    // answers it cannot_fit, which verbatim-suffix does not judge; progress
    // does, contract-notes 42): exit 1, saying why.
    let out = run(&[
        "check",
        "--cases",
        "1",
        "--seed",
        "14",
        "--invariants",
        "verbatim-suffix",
    ]);
    let stdout = out.stdout.as_str();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        stdout.contains(
            "verbatim-suffix was never exercised in 1 case(s): the subject answered cannot_fit (1)"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("NOT OK"), "{stdout}");
}

/// `ctxgate report merge` joins a seed's shards into the report of the
/// whole run, exits as that run would (1 here: the defect is caught), and
/// refuses reports of different seeds (2).
#[test]
fn report_merge_joins_shards_as_one_run() {
    let tmp = TempDir::new("merge");
    let dir = tmp.0.to_str().unwrap().to_owned();
    let base = [
        "check",
        "--defect",
        "cut-by-message-count",
        "--cases",
        "120",
        "--seed",
        "4",
        "--jobs",
        "2",
        "--report",
        "json",
    ];
    let mut reports = Vec::new();
    for shard in ["1/2", "2/2"] {
        let out = format!("{dir}/shard-{}.json", &shard[..1]);
        let mut args: Vec<&str> = base.to_vec();
        args.extend(["--shard", shard, "--out", &out, "--save", &dir]);
        assert_eq!(run(&args).code, 1);
        reports.push(out);
    }
    let whole = format!("{dir}/whole.json");
    let mut args: Vec<&str> = base.to_vec();
    args.extend(["--out", &whole, "--save", &dir]);
    assert_eq!(run(&args).code, 1);
    let merged = format!("{dir}/merged.json");
    let out = run(&[
        "report",
        "merge",
        &reports[0],
        &reports[1],
        "--report",
        "json",
        "--out",
        &merged,
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let strip = |path: &str| {
        let mut v = read_json(path);
        for k in ["seconds", "casesPerSecond", "protocol", "shard"] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    };
    assert_eq!(strip(&merged), strip(&whole));
    // One merge writes every form a CI job wants, as `check` does: the
    // same reports as a merge a form, the human one on stdout.
    let (md, xml, again) = (
        format!("{dir}/merged.md"),
        format!("{dir}/merged.xml"),
        format!("{dir}/again.json"),
    );
    let also = [format!("markdown={md}"), format!("junit={xml}")];
    let all = run(&[
        "report",
        "merge",
        &reports[0],
        &reports[1],
        "--out",
        &again,
        "--report",
        "json",
        "--also-report",
        &also[0],
        "--also-report",
        &also[1],
    ]);
    assert_eq!(all.code, 1, "{}", all.stderr);
    all.stdout_has("FAILED: ");
    assert_eq!(strip(&again), strip(&merged));
    for (form, path) in [("markdown", &md), ("junit", &xml)] {
        let alone = run(&[
            "report",
            "merge",
            &reports[0],
            &reports[1],
            "--report",
            form,
        ]);
        let written = std::fs::read_to_string(path).unwrap();
        assert_eq!(
            without_times(&written),
            without_times(&alone.stdout),
            "{form}"
        );
    }
    // Another seed's shard does not merge.
    let other = format!("{dir}/other.json");
    let mut args: Vec<&str> = base.to_vec();
    args[6] = "5";
    args.extend(["--shard", "2/2", "--out", &other, "--save", &dir]);
    run(&args);
    let out = run(&["report", "merge", &reports[0], &other]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has("seeds differ");
    // Only the whole set of a run's shards merges, each once.
    for (files, says) in [
        (
            vec![&reports[0], &reports[0], &reports[1]],
            "shard 1/2 again",
        ),
        (
            vec![&reports[1]; 1].into_iter().chain([&whole]).collect(),
            "the report of a whole run",
        ),
    ] {
        let mut args = vec!["report", "merge"];
        args.extend(files.iter().map(|f| f.as_str()));
        let out = run(&args);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains(says), "{says}: {}", out.stderr);
    }
    // A baseline gate's report is named as one, not merged with check's.
    let gate = format!("{dir}/gate.json");
    let serve = format!("{} serve", env!("CARGO_BIN_EXE_ctxgate"));
    let mut args: Vec<&str> = base.to_vec();
    args.extend(["--baseline", &serve, "--shard", "1/2"]);
    args.extend(["--out", &gate, "--save", &dir]);
    let ran = run(&args);
    assert!(ran.code == 0 || ran.code == 1, "{}", ran.stderr);
    let out = run(&["report", "merge", &gate, &reports[1]]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has("shard-2.json: a `check` report, among `check --baseline` reports");
}

/// A run with `--with-suite` replays the suite in shard 1 only; the merge
/// of its shards keeps the suite's outcome — in every form, and in the
/// exit code: a suite fixture that failed fails the merged run, as it
/// failed the run.
#[test]
fn report_merge_keeps_the_suites_outcome() {
    let tmp = TempDir::new("merge-suite");
    let dir = tmp.0.to_str().unwrap().to_owned();
    let suite = concat!(env!("CARGO_MANIFEST_DIR"), "/suites/known-bugs");
    let mut base = common::words("check --cases 40 --seed 3 --report json");
    base.extend(["--with-suite", suite, "--save", &dir]);
    let mut shards = Vec::new();
    for k in ["1/2", "2/2"] {
        let out = format!("{dir}/shard-{}.json", &k[..1]);
        let mut args = base.clone();
        args.extend(["--shard", k, "--out", &out]);
        assert_eq!(run(&args).code, 0);
        shards.push(out);
    }
    let whole = format!("{dir}/whole.json");
    let mut args = base.to_vec();
    args.extend(["--out", &whole]);
    let out = run(&args);
    assert_eq!(out.code, 0);
    // The banner says what is about to run, the suite first.
    out.stderr_has("ctxgate check: subject ctxgate-reference 0.1.0, seed 3, up to 40 cases\n");
    out.stderr_has("ctxgate check: the suite ");
    out.stderr_has(&format!(
        " first ({} fixture(s))\n",
        common::json_files(suite)
    ));
    let merged = format!("{dir}/merged.json");
    let merge = |files: &[&str], extra: &[&str]| {
        let mut args = vec!["report", "merge"];
        args.extend(files);
        args.extend(extra);
        run(&args)
    };
    let out = merge(
        &[&shards[0], &shards[1]],
        &["--report", "json", "--out", &merged],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let strip = |path: &str| {
        let mut v = read_json(path);
        for k in ["seconds", "casesPerSecond", "protocol", "shard"] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    };
    let (m, w) = (strip(&merged), strip(&whole));
    assert!(w["suite"]["held"].as_u64().unwrap() > 0, "{}", w["suite"]);
    assert_eq!(m, w);
    // Shard 1's first fixture failed: the merged run fails, and says so
    // in each form.
    let mut failed = read_json(&shards[0]);
    let first = &mut failed["suite"]["fixtures"][0];
    first["outcome"] = "failed".into();
    first["violations"] = serde_json::json!([
        {"invariant": "tool-pairing", "detail": "a result without its call"}
    ]);
    let name = first["path"].as_str().unwrap().to_owned();
    let failed_path = tmp.file("shard-1-failed.json", failed.to_string());
    // Every fixture of the suite is replayed once, in shard 1.
    let total = common::json_files(suite);
    let one_of = format!("1 of {total} suite fixture(s) failed");
    let out = merge(&[&failed_path, &shards[1]], &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    out.stderr_has(&one_of);
    let human = out.stdout.as_str();
    assert!(human.contains(&format!("FAIL  {name}")), "{human}");
    assert!(human.contains("a result without its call"), "{human}");
    // Its verdict is the last line, and not the generated cases' "OK".
    let last = human.trim_end().lines().last().unwrap();
    assert!(last.starts_with(&format!("FAILED: {one_of}")), "{last}");
    let out = merge(&[&failed_path, &shards[1]], &["--report", "markdown"]);
    let md = out.stdout.as_str();
    let head = md
        .lines()
        .find(|l| l.starts_with("### ctxgate check"))
        .unwrap();
    assert!(head.contains(&format!("— ❌ {one_of}")), "{head}");
    let out = merge(&[&failed_path, &shards[1]], &["--report", "json"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    let out = merge(&[&failed_path, &shards[1]], &["--report", "junit"]);
    let junit = out.stdout.as_str();
    assert!(
        junit.contains("skipped=\"0\" errors=\"0\" failures=\"1\"")
            && junit.contains("type=\"tool-pairing\""),
        "{junit}"
    );
    // The suite's outcome in two shards would count its fixtures twice.
    let mut twice = read_json(&shards[1]);
    twice["suite"] = read_json(&shards[0])["suite"].clone();
    let twice_path = tmp.file("shard-2-suite.json", twice.to_string());
    let out = merge(&[&shards[0], &twice_path], &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has("only shard 1");
}

/// The shards of a baseline gate merge into the report of the gate over
/// all their cases: regressions (each shrunk on its first case), known
/// failures, fixes, the invariants' counts on both sides, and the behaviour
/// table with its sums and its cases that changed most — whatever the
/// shards and their `--jobs`. Gates of another baseline or `--fail-on`
/// do not merge.
#[test]
fn report_merge_joins_a_baseline_gates_shards_as_one_gate() {
    let tmp = TempDir::new("merge-gate");
    let dir = tmp.0.to_str().unwrap().to_owned();
    let bin = env!("CARGO_BIN_EXE_ctxgate");
    let side = |defect: &str| format!("{bin} serve --defect {defect}");
    // Both sides fail progress: known where both fail, a regression where
    // only the subject does; the baseline's other failures are fixes.
    let (subject, baseline) = (
        side("no-fallback-below-keep-recent"),
        side("cut-by-message-count"),
    );
    let gate_of = |baseline: &str, extra: &[&str], out: &str| {
        let mut args = vec!["check", "--subject", &subject, "--baseline", baseline];
        // Seed 7: its 150 cases hold one regression, a known failure and
        // fixes (seed 4 did until the generator's image cases changed).
        args.extend(common::words("--cases 150 --seed 7 --report json"));
        args.extend(["--save", &dir, "--out", out]);
        args.extend(extra);
        run(&args)
    };
    let gate = |extra: &[&str], out: &str| gate_of(&baseline, extra, out);
    let whole = format!("{dir}/whole.json");
    assert_eq!(gate(&["--jobs", "1"], &whole).code, 1);
    let mut shards = Vec::new();
    for (k, jobs) in [("1/3", "2"), ("2/3", "1"), ("3/3", "3")] {
        let out = format!("{dir}/shard-{}.json", &k[..1]);
        let ran = gate(&["--shard", k, "--jobs", jobs], &out);
        assert!(ran.code == 0 || ran.code == 1, "{}", ran.stderr);
        shards.push(out);
    }
    let merged = format!("{dir}/merged.json");
    let mut args = vec!["report", "merge", &shards[0], &shards[1], &shards[2]];
    args.extend(["--report", "json", "--out", &merged]);
    args.extend(["--subject", &subject, "--baseline", &baseline]);
    let out = run(&args);
    assert_eq!(out.code, 1, "{}", out.stderr);
    out.stderr_has("regression(s)");
    let strip = |path: &str| {
        let mut v = read_json(path);
        for k in ["seconds", "shard"] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    };
    let (m, w) = (strip(&merged), strip(&whole));
    // The scenario has what is merged: else equality shows little.
    for k in ["regressions", "known", "fixes"] {
        assert!(!w[k].as_array().unwrap().is_empty(), "no {k}: {w}");
    }
    assert_eq!(
        w["behaviour"]["over both"]["changedMost"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(m, w);
    // The human form of the merged gate reads as the whole gate's.
    let human = run(&["report", "merge", &shards[2], &shards[0], &shards[1]]);
    assert_eq!(human.code, 1);
    let text = human.stdout.as_str();
    assert!(text.contains("FAILED: 1 regression(s)"), "{text}");
    // Two shards of three leave a third of the cases unsaid: no merge.
    let out = run(&["report", "merge", &shards[0], &shards[2]]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has("shard(s) 2/3 missing");
    // Another baseline, or another --fail-on, does not merge.
    let other = format!("{dir}/other.json");
    let serve = format!("{bin} serve");
    gate_of(&serve, &["--shard", "2/3"], &other);
    let out = run(&["report", "merge", &shards[0], &other]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has("baselines differ");
    gate(&["--shard", "2/3", "--fail-on", "never"], &other);
    let out = run(&["report", "merge", &shards[0], &other]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has("--fail-on differs");
}

/// A run that ends before its report (here: a subject that cannot start)
/// leaves no report file where there was none — not an empty one a CI step
/// would read as a report — and the old contents where there was one; a
/// run that reports writes every file whole.
#[test]
fn a_run_without_a_report_leaves_no_report_file() {
    let dir = TempDir::new("no-report");
    let fresh = dir.0.join("fresh.json");
    let also = dir.0.join("also.xml");
    let old = dir.file("old.json", "the last run's report\n");
    let out = run(&[
        "check",
        "--subject",
        "/nonexistent/ctxgate-no-such-subject",
        "--cases",
        "5",
        "--report",
        "json",
        "--out",
        fresh.to_str().unwrap(),
        "--also-report",
        &format!("junit={}", also.display()),
    ]);
    assert_ne!(out.code, 0, "a subject that cannot start is not a pass");
    assert!(!fresh.exists(), "an empty --out file was left");
    assert!(!also.exists(), "an empty --also-report file was left");
    let out = run(&[
        "check",
        "--subject",
        "/nonexistent/ctxgate-no-such-subject",
        "--cases",
        "5",
        "--out",
        &old,
    ]);
    assert_ne!(out.code, 0);
    assert_eq!(
        std::fs::read_to_string(&old).unwrap(),
        "the last run's report\n"
    );
    // A run that reports replaces the old contents entirely.
    let out = run(&[
        "check", "--cases", "5", "--seed", "1", "--report", "json", "--out", &old,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&old).unwrap())
        .expect("the report replaced the old text whole");
    assert!(report.is_object());
}

#[test]
fn list_defects_prints_one_line_per_defect_with_what_it_breaks() {
    let out = run(&["check", "--list-defects"]).ok();
    let text = out.stdout;
    let lines: Vec<&str> = text.lines().collect();
    let all = ctxgate::subject::defects::Defect::ALL;
    assert_eq!(lines.len(), all.len(), "{text}");
    for (line, d) in lines.iter().zip(all) {
        let name = line.split_whitespace().next().unwrap();
        assert_eq!(name, d.name(), "{line}");
        assert!(line.contains(d.describe()), "{line}");
        assert!(
            line.ends_with(&format!("(caught by {})", d.caught_by()[0].name()))
                || line.contains(&format!("(caught by {}, ", d.caught_by()[0].name())),
            "{line}"
        );
        // Every name it prints runs.
        assert!(ctxgate::subject::defects::Defect::parse(name).is_some());
    }
}

#[test]
fn estimate_lines_measures_each_generated_case_as_estimate_json_does() {
    let tmp = TempDir::new("estimate-lines");
    let cases = run(&["gen", "--seed", "5", "--cases", "12"])
        .ok()
        .stdout_bytes;
    let out = ctxgate(
        &["estimate", "--lines", "--wire-format", "anthropic", "-"],
        Some(&cases),
    )
    .ok();
    let answers: Vec<Value> = out
        .stdout_bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("one JSON object a line"))
        .collect();
    let lines: Vec<&[u8]> = cases
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(answers.len(), 12);
    // Each line's figures are what `estimate --json` prints for that case
    // alone, under the case's config with the wire format given.
    for (i, (line, answer)) in lines.iter().zip(&answers).enumerate().take(4) {
        let case: Value = serde_json::from_slice(line).unwrap();
        let mut config = case["config"].clone();
        config["wireFormat"] = json!("anthropic");
        let config = tmp.file(&format!("config-{i}.json"), config.to_string());
        let history = tmp.file(&format!("history-{i}.json"), case["messages"].to_string());
        let alone = run(&[
            "estimate", "--json", "--format", "engine", "--config", &config, &history,
        ])
        .ok()
        .json();
        assert_eq!(answer, &alone, "case {i}");
    }
    // A bad line is named, with the problem; nothing panics.
    let bad = ctxgate(
        &["estimate", "--lines"],
        Some(b"{\"messages\":[]}\n\n{\"config\":{\"keepRecent\":0},\"messages\":[]}\n"),
    );
    assert_eq!(bad.code, 2, "stderr: {}", bad.stderr);
    assert!(
        bad.stderr.contains("stdin, line 3: ") && bad.stderr.contains("keepRecent"),
        "{}",
        bad.stderr
    );
    let path = tmp.file("cases.jsonl", "[1]\n");
    let bad = run(&["estimate", "--lines", &path]);
    assert_eq!(bad.code, 2);
    bad.stderr_has("cases.jsonl, line 1: ");
    // A config flag other than --wire-format has no case to apply to.
    assert_eq!(
        run(&["estimate", "--lines", "--keep-recent", "3", &path]).code,
        2
    );
}

/// `check --seed S --case N` reruns the one case a report cites (issue 28):
/// the same failure at the same index, one case run.
#[test]
fn check_case_reruns_the_case_a_report_cites() {
    let whole = run(&[
        "check",
        "--defect",
        "drops-system-prompt",
        "--seed",
        "7",
        "--cases",
        "200",
        "--invariants",
        "pinned-kept",
    ]);
    assert_eq!(whole.code, 1, "{}", whole.stderr);
    let stdout = whole.stdout.clone();
    let line = stdout
        .lines()
        .find(|l| l.starts_with("FAILED pinned-kept (case "))
        .unwrap();
    let index = line
        .trim_start_matches("FAILED pinned-kept (case ")
        .trim_end_matches(')');
    let one = run(&[
        "check",
        "--defect",
        "drops-system-prompt",
        "--seed",
        "7",
        "--case",
        index,
        "--invariants",
        "pinned-kept",
    ]);
    assert_eq!(one.code, 1, "{}", one.stderr);
    let text = one.stdout.as_str();
    assert!(text.contains(line), "{text}");
    assert!(text.contains("\n1 cases in "), "{text}");
    // --case with --shard is bad usage, and so is --case without the
    // run's seed (an index under a new random seed is another case).
    assert_eq!(run(&["check", "--case", "3", "--shard", "1/2"]).code, 2);
    let unseeded = run(&["check", "--case", "3"]);
    assert_eq!(unseeded.code, 2);
    unseeded.stderr_has("--case N needs the run's --seed");
}

/// A gate's behaviour table cites case numbers and prints the command that
/// reruns one; run, that command shows the same case changed the same way.
/// A case rerun alone passes when what it exercised held (it need not
/// exercise every invariant: a run of one case cannot).
#[test]
fn the_behaviour_table_prints_the_command_that_reruns_a_case() {
    let baseline = format!("{} serve", env!("CARGO_BIN_EXE_ctxgate"));
    let gate = |extra: &[&str]| {
        let mut args = vec![
            "check",
            "--defect",
            "premature-compaction",
            "--baseline",
            &baseline,
            "--seed",
            "98",
        ];
        args.extend_from_slice(extra);
        let out = run(&args);
        (out.code, out.stdout.clone())
    };
    let (code, text) = gate(&["--cases", "150"]);
    assert_eq!(code, 1, "{text}");
    let header = text
        .lines()
        .find(|l| l.starts_with("changed most (rerun case N: "))
        .expect(&text);
    let command = header
        .trim_start_matches("changed most (rerun case N: ")
        .trim_end_matches("):");
    let words = shell_words::split(command).unwrap();
    assert_eq!(
        &words[..6],
        ["ctxgate", "check", "--seed", "98", "--case", "N"],
        "{command}"
    );
    assert!(
        command.contains("--defect premature-compaction --baseline "),
        "{command}"
    );
    let cited = text
        .lines()
        .find(|l| l.starts_with("    case ") && l.contains("baseline unchanged; subject compacted"))
        .expect(&text);
    let n = cited
        .trim_start_matches("    case ")
        .split(':')
        .next()
        .unwrap();
    let args: Vec<String> = words[1..]
        .iter()
        .map(|w| if w == "N" { n.to_owned() } else { w.clone() })
        .collect();
    let one = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let one_text = one.stdout.as_str();
    assert_eq!(one.code, 1, "{one_text}");
    assert!(one_text.contains(cited), "{cited}\n{one_text}");
    assert!(
        one_text.contains("REGRESSION no-premature-compaction"),
        "{one_text}"
    );
    assert!(!one_text.contains("NOT COMPARED"), "{one_text}");
    // The reference alone on that case: passes on what the case exercised.
    let alone = run(&["check", "--seed", "98", "--case", n]);
    let alone_text = alone.stdout.as_str();
    assert_eq!(alone.code, 0, "{alone_text}");
    assert!(
        alone_text.contains("this one case exercised held"),
        "{alone_text}"
    );
}

/// `replay --trace` prints each protocol line as it went: the hellos, the
/// requests (→) and the subject's answers (←) as it wrote them, a line
/// with an image capped, for an external subject and for the built-in one
/// (which then runs as `ctxgate serve`). A defect's trace shows what it
/// answered: its answer has no system message, the request had one.
#[test]
fn replay_trace_prints_each_request_and_answer_line() {
    let image =
        "suites/known-bugs/codegraff-260-pasted-screenshot-read-as-text-compacts-a-fresh-chat.json";
    let subject = "python3 adapters/python-minimal/compactor.py";
    for args in [
        vec!["replay", image, "--trace"],
        vec!["replay", image, "--trace", "--subject", subject],
    ] {
        let out = run(&args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        let stdout = out.stdout.clone();
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(
            lines.contains(&r#"→ {"op":"hello","protocol":1}"#),
            "{stdout}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with(r#"← {"op":"hello""#)),
            "{stdout}"
        );
        let sent = lines
            .iter()
            .filter(|l| l.starts_with(r#"→ {"op":"compact","id":"#))
            .count();
        let answered = lines
            .iter()
            .filter(|l| l.starts_with(r#"← {"id":"#))
            .count();
        assert!(sent >= 1 && answered >= sent, "{stdout}");
        // The screenshot's base64 is left out of the middle, and counted.
        let capped = lines
            .iter()
            .find(|l| l.contains(" bytes left out …] "))
            .expect(&stdout);
        assert!(
            capped.len() < 4300,
            "a traced line is capped: {} bytes",
            capped.len()
        );
        assert!(stdout.contains("replay: 1 held"), "{stdout}");
    }
    let fixture = "tests/fixtures/regressions/pending-approval-with-pinned-requirement.json";
    let out = run(&[
        "replay",
        fixture,
        "--trace",
        "--defect",
        "drops-system-prompt",
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let stdout = out.stdout.clone();
    let head = r#"{"role":"system","content":"You are the QA gate."}"#;
    let request = stdout
        .lines()
        .find(|l| l.starts_with(r#"→ {"op":"compact""#));
    let answer = stdout.lines().find(|l| l.starts_with(r#"← {"id":"#));
    assert!(request.expect(&stdout).contains(head), "{stdout}");
    assert!(!answer.expect(&stdout).contains(head), "{stdout}");
    // Without --trace, no protocol line is printed.
    let quiet = run(&["replay", image]);
    assert!(!quiet.stdout.contains("→ "));
}

/// A reader that stops early (`ctxgate … | head`) ends the run quietly
/// with 141, as a process ended by SIGPIPE: no panic on stderr, and not 0.
/// Every command alike: `replay` prints line by line, `gen` streams its
/// cases through a buffer.
#[test]
fn a_reader_that_goes_away_ends_the_run_without_a_panic() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    for (args, first_line) in [
        (&["replay", "suites/known-bugs", "--trace"][..], "(tracing"),
        (&["gen", "--cases", "1000000"][..], "{\"config\""),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(first.starts_with(first_line), "{args:?}: {first}");
        // stdout is closed here: the next writes fail.
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn refusals_left_unjudged_are_counted_and_the_claim_that_judges_them_named() {
    // The reference at seed 1, narrowed to `invariants`, saving into a
    // folder of its own.
    let check_narrowed = |invariants: &str| {
        let dir = TempDir::new("unjudged");
        run(&[
            "check",
            "--cases",
            "200",
            "--seed",
            "1",
            "--invariants",
            invariants,
            "--save",
            dir.dir(),
        ])
    };
    // Narrowed to tool-pairing, the reference's cannot_fit answers have no
    // judge: the report says how many, and which invariant would judge them.
    let out = check_narrowed("tool-pairing");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("cannot_fit: "))
        .unwrap_or_else(|| panic!("no cannot_fit line:\n{}", out.stdout));
    let n: u64 = line["cannot_fit: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(n > 0 && line.contains("body-under-ceiling"), "{line}");
    assert!(
        line.contains("progress (a refusal of a due history, on the subject's own terms"),
        "{line}"
    );
    // Judged, they are not mentioned: by body-under-ceiling, or by progress
    // (a due history) and no-premature-compaction (nothing due) together.
    for judged in [
        "tool-pairing,body-under-ceiling",
        "tool-pairing,progress,no-premature-compaction",
    ] {
        let out = check_narrowed(judged);
        assert_eq!(out.code, 0, "{judged}: {}", out.stderr);
        assert!(
            !out.stdout.contains("not judged"),
            "{judged}: {}",
            out.stdout
        );
    }
    // Progress alone leaves the refusals of histories that were not due
    // (none, from the reference) and names only what it lacks.
    let out = check_narrowed("tool-pairing,progress");
    assert!(!out.stdout.contains("not judged"), "{}", out.stdout);
}

/// A token limiter that claims `progress` but not the ceiling invariants
/// (tests/subjects/limiter.py): refusing when its minimal output is over
/// the trigger, which `progress` accepts as an answer, fails `progress`;
/// refusing only when, by its own count (here twice ADR 0098's), that
/// output is over the effective window passes — its refusals judged, none
/// left unjudged.
#[test]
fn a_limiters_refusals_are_judged_by_its_own_count() {
    let script = manifest_dir().join("tests/subjects/limiter.py");
    let limiter = |mode: &str| {
        let dir = TempDir::new(&format!("limiter-{}", mode.replace(' ', "-")));
        let subject = format!(
            "python3 {} {mode}",
            shell_words::quote(script.to_str().unwrap())
        );
        run(&[
            "check",
            "--cases",
            "300",
            "--seed",
            "1",
            "--subject",
            &subject,
            "--save",
            dir.dir(),
        ])
    };
    let wrong = limiter("trigger 1");
    assert_eq!(wrong.code, 1, "{}", wrong.all());
    assert!(wrong.stdout.contains("FAILED progress"), "{}", wrong.stdout);
    assert!(
        wrong.stdout.contains("answered cannot_fit (the last iteration alone is over the limit) to a history that was due"),
        "{}",
        wrong.stdout
    );
    let own_terms = limiter("window 2");
    assert_eq!(own_terms.code, 0, "{}", own_terms.all());
    assert!(
        own_terms.stdout.contains("% cannot_fit"),
        "{}",
        own_terms.stdout
    );
    assert!(
        !own_terms.stdout.contains("not judged"),
        "{}",
        own_terms.stdout
    );
}

/// README's usage block names every option of `estimate` and `gen` (their
/// own, not the config flags `--config FILE` stands for): a flag added to
/// the binary and not to the README is a newcomer's lost minute.
#[test]
fn readme_usage_names_every_option_of_estimate_and_gen() {
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    let usage = readme
        .split("## Usage")
        .nth(1)
        .and_then(|rest| rest.split("```sh\n").nth(1))
        .and_then(|rest| rest.split("\n```").next())
        .expect("a sh block under ## Usage");
    for command in ["estimate", "gen"] {
        // The command's lines: each `ctxgate CMD …` and its indented continuations.
        let mut lines = String::new();
        let mut inside = false;
        for line in usage.lines() {
            if line.starts_with(&format!("ctxgate {command} ")) {
                inside = true;
            } else if !line.starts_with(' ') {
                inside = false;
            }
            if inside {
                lines.push_str(line);
                lines.push('\n');
            }
        }
        assert!(
            !lines.is_empty(),
            "no `ctxgate {command}` in README's usage"
        );
        let help = run(&[command, "-h"]).ok().stdout;
        let options = help
            .split("Options:\n")
            .nth(1)
            .expect("an Options section")
            .lines()
            .take_while(|l| l.is_empty() || l.starts_with(' '));
        for option in options {
            let Some(flag) = option.trim_start().strip_prefix("--") else {
                continue;
            };
            let flag = format!("--{}", flag.split([' ', '=']).next().unwrap());
            if ["--help", "--version", "--max-input-bytes"].contains(&flag.as_str()) {
                continue;
            }
            assert!(
                lines.contains(&format!("[{flag}"))
                    || lines.contains(&format!(" {flag}"))
                    || lines.contains(&format!("|{flag}")),
                "README's usage of `ctxgate {command}` lacks {flag}:\n{lines}"
            );
        }
    }
}
