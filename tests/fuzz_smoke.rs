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
