//! Stable-Rust smoke tests for the fuzz targets (STYLE habit 3): each
//! target's function, as `fuzz/fuzz_targets/<name>.rs` calls it, on a few
//! hundred seeded pseudo-random inputs (splitmix64), so `cargo test`
//! exercises every target without nightly or cargo-fuzz.
//!
//! A failure here is a failure the fuzzer would report: the panic message
//! says what broke (for `compact`, with the SPEC §7 fixture to save).

use ctxgate::fixture::Fixture;
use ctxgate::fuzzing::{self, run_n_times};
use ctxgate::generate::SplitMix64;
use ctxgate::harness::run_case;
use ctxgate::subject::defects::Defect;
use ctxgate::subject::InProcess;

fn target(name: &str) -> fuzzing::Target {
    fuzzing::TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .expect("a target of that name")
}

#[test]
fn compact_smoke() {
    run_n_times(target("compact"), 300, 512, 0xc0_3ac7);
}

#[test]
fn estimate_smoke() {
    run_n_times(target("estimate"), 500, 512, 0xe5_71a7e);
}

#[test]
fn parse_smoke() {
    run_n_times(target("parse"), 400, 256, 0x9a_75e);
    // Random bytes rarely make JSON: also the targets' seed shapes.
    for text in [
        r#"[{"role":"system","content":"s"},{"role":"user","content":"hi"}]"#,
        r#"{"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}"#,
        r#"[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"r"}]"#,
        r#"{"op":"hello","protocol":1,"name":"x","ops":["compact","estimate"],"format":"openai"}"#,
        r#"{"id":1,"messages":[{"role":"user","content":"u"}]}"#,
        r#"{"id":1,"error":{"kind":"cannot_fit","message":"m"}}"#,
        r#"{"contextWindow":1000,"threshold":0.5,"wireFormat":"anthropic"}"#,
        r#"{"ctxgate":1,"see":"s","messages":[{"role":"user","content":"u"}]}"#,
        "",
        "[",
        "\u{feff}[]",
    ] {
        fuzzing::parse_target(text.as_bytes());
        // and a few cheap mutations of each: a byte replaced, a cut.
        let mut rng = SplitMix64::new(text.len() as u64);
        for _ in 0..40 {
            let mut bytes = text.as_bytes().to_vec();
            if bytes.is_empty() {
                break;
            }
            let r = rng.next_u64();
            let at = (r as usize) % bytes.len();
            if r & 1 == 0 {
                bytes[at] = (r >> 8) as u8;
            } else {
                bytes.truncate(at);
            }
            fuzzing::parse_target(&bytes);
        }
    }
}

#[test]
fn wire_roundtrip_smoke() {
    run_n_times(target("wire_roundtrip"), 400, 512, 0x317e);
}

#[test]
fn body_size_smoke() {
    run_n_times(target("body_size"), 400, 512, 0xb0d1);
    let mut case = vec![7u8; 64];
    case.extend_from_slice(br#"{"model":"m","n":1.10,"big":123456789012345678901234567890}"#);
    fuzzing::body_size_target(&case);
}

/// Crash inputs the fuzzer found, kept as `fuzz/regressions/<target>/*`
/// (raw bytes; `compact` findings are SPEC §7 fixtures under
/// tests/fixtures/fuzz/ instead, replayed by tests/fixtures_replay.rs).
#[test]
fn kept_crash_inputs_replay_clean() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut replayed = 0;
    for (name, f) in fuzzing::TARGETS {
        // A target with no kept input has no folder; a folder that does not
        // read is a failure, not a skip.
        let folder = dir.join(name);
        if !folder.exists() {
            continue;
        }
        let entries =
            std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        for entry in entries {
            let path = entry.expect("readable").path();
            if path.extension().is_some_and(|e| e == "md") {
                continue;
            }
            eprintln!("replaying {}", path.display());
            f(&std::fs::read(&path).expect("readable"));
            replayed += 1;
        }
    }
    // The folder holds kept inputs (fuzz/regressions/parse/…): a moved or
    // emptied folder would pass vacuously.
    assert!(replayed > 0, "no kept crash input under {}", dir.display());
}

/// The documented crash-to-fixture step: a defective compactor makes the
/// `compact` target panic; the message holds a SPEC §7 fixture (the lines
/// from `{` to `}`) that fails the defect and replays clean on the reference.
#[test]
fn a_compact_crash_prints_a_replayable_fixture() {
    let defect = Defect::DropsSystemPrompt;
    let mut rng = SplitMix64::new(0xf1c7);
    let message = (0..200)
        .find_map(|_| {
            let bytes: Vec<u8> = (0..64).flat_map(|_| rng.next_u64().to_le_bytes()).collect();
            let caught = std::panic::catch_unwind(|| {
                fuzzing::compact_against(&mut defect.subject(), &bytes)
            });
            let payload = caught.err()?;
            payload.downcast_ref::<String>().cloned()
        })
        .expect("the defect is found within 200 inputs");
    let json: String = message
        .lines()
        .skip_while(|l| *l != "{")
        .take_while(|l| *l != "}")
        .chain(["}"])
        .collect::<Vec<_>>()
        .join("\n");
    let fixture = Fixture::from_json(serde_json::from_str(&json).expect("the fixture is JSON"))
        .expect("a SPEC §7 fixture");
    assert!(fixture.found.is_some());
    let run = |s: &mut dyn ctxgate::subject::Subject| {
        run_case(s, &fixture.config, &fixture.messages, fixture.invariants).ok()
    };
    assert!(
        !run(&mut defect.subject()),
        "the fixture reproduces the finding"
    );
    assert!(run(&mut InProcess::reference()), "the reference passes it");
}

#[test]
fn every_target_has_a_smoke_test_and_a_fuzz_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
    for (name, _) in fuzzing::TARGETS {
        let path = dir.join(format!("{name}.rs"));
        assert!(path.exists(), "{} is missing", path.display());
    }
}

/// `answer`: a few thousand inputs, most of them answers made from the
/// request's own history and mutated. The differential (fast paths against
/// the plain reading) is only as good as the lines that reach the fast
/// paths: count them.
#[test]
fn answer_smoke() {
    use ctxgate::fuzzing::{answer_run, AnswerReader};
    let mut rng = SplitMix64::new(0xa25e);
    let (mut runs, mut shaped, mut engine) = (0, 0, 0);
    let mut by = std::collections::BTreeMap::new();
    let mut replied = 0;
    for _ in 0..3000 {
        let len = 16 + rng.below(240) as usize;
        let bytes: Vec<u8> = (0..len.div_ceil(8))
            .flat_map(|_| rng.next_u64().to_le_bytes())
            .take(len)
            .collect();
        let Some(run) = answer_run(&bytes) else {
            continue;
        };
        runs += 1;
        shaped += run.shaped as usize;
        engine += (run.shaped && run.engine_compact) as usize;
        replied += run.replied as usize;
        let reader = match run.reader {
            AnswerReader::Echo => "Echo",
            AnswerReader::Fast => "Fast",
            AnswerReader::Value => "Value",
            AnswerReader::Nothing => "Nothing",
        };
        *by.entry(reader).or_insert(0) += 1;
    }
    eprintln!("answer: {runs} runs, {shaped} shaped, {engine} shaped engine compacts, {replied} replies; by reader {by:?}");
    let count = |r: &str| by.get(r).copied().unwrap_or(0);
    assert!(runs >= 2900, "{runs}");
    assert!(shaped * 10 >= runs * 8, "shaped {shaped} of {runs}");
    assert!(count("Echo") >= 150, "echo fast path {by:?}");
    assert!(count("Fast") >= 400, "one-pass reader {by:?}");
    assert!(count("Value") >= 400, "Value reader {by:?}");
    assert!(count("Nothing") >= 300, "malformed lines {by:?}");
    assert!(replied >= 1000, "{replied}");
}

/// `agent_request`: random bytes, then real request bodies of the three
/// dialects and mutations of them, under every stage the first byte picks.
#[test]
#[cfg(feature = "agent")]
fn agent_request_smoke() {
    use ctxgate::fuzzing::{agent_request_run, AgentRun};
    run_n_times(target("agent_request"), 1000, 256, 0xa9e7);
    let bodies: [&str; 6] = [
        r#"{"model":"m","messages":[{"role":"system","content":"You are an agent."},{"role":"user","content":"Task: read the notes"}],"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}],"max_tokens":100}"#,
        r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"Task: read the notes"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_0_0","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"/workspace/t000-0.txt\"}"}}]},{"role":"tool","tool_call_id":"call_0_0","content":"alpha"},{"role":"user","content":"Summarize the conversation so far."}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"properties":{"command":{"type":"string"}}}}}]}"#,
        r#"{"model":"m","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"Task: read the notes"}]},{"type":"function_call","call_id":"c1","name":"read","arguments":"{\"path\":\"a\"}"},{"type":"function_call_output","call_id":"c1","output":"A"}],"tools":[{"type":"function","name":"read","parameters":{"properties":{"path":{}}}}],"parallel_tool_calls":false}"#,
        r#"{"model":"m","stream":true,"input":"Task: read the notes","tools":[{"type":"function","name":"shell","parameters":{"properties":{"command":{"type":"array"}}}}]}"#,
        r#"{"model":"m","max_tokens":4096,"system":[{"type":"text","text":"You are Claude Code."}],"messages":[{"role":"user","content":"Task: read the notes"},{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/workspace/t000-0.txt"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"alpha"}]}],"tools":[{"name":"Read","input_schema":{"properties":{"file_path":{}}}}]}"#,
        r#"{"model":"m","stream":true,"max_tokens":512,"messages":[{"role":"user","content":"Please write a recap: compact the notes."}]}"#,
    ];
    let mut total = AgentRun::default();
    let mut rng = SplitMix64::new(0xa9e8);
    for body in bodies {
        for setup in 0..=255u8 {
            let mut bytes = vec![setup];
            bytes.extend_from_slice(body.as_bytes());
            // Most as they are, some with a byte replaced or a cut.
            if setup % 4 == 3 {
                let r = rng.next_u64();
                let at = 1 + (r as usize >> 8) % body.len();
                match r & 1 {
                    0 => bytes[at] = (r >> 32) as u8,
                    _ => bytes.truncate(at),
                }
            }
            let run = agent_request_run(&bytes);
            total.read += run.read;
            total.answered += run.answered;
            total.streamed += run.streamed;
            total.read_back += run.read_back;
            total.refused += run.refused;
            total.summaries += run.summaries;
        }
    }
    eprintln!("agent_request on real bodies: {total:?}");
    assert!(total.read >= 1000, "{total:?}");
    assert!(total.answered >= 1000, "{total:?}");
    assert!(total.streamed >= 500, "{total:?}");
    assert!(total.read_back >= 400, "{total:?}");
    assert!(total.refused >= 100, "{total:?}");
    assert!(total.summaries >= 100, "{total:?}");
}
