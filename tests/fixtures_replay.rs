//! Every fixture under tests/fixtures/ replays clean against the reference:
//! a failure found once is checked for ever. A fixture that does not parse
//! fails the test (it is never skipped).

use std::path::{Path, PathBuf};

use ctxgate::fixture::{collect, replay, Fixture, Replayed};
use ctxgate::subject::InProcess;

#[test]
fn every_fixture_replays_clean_against_the_reference() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let files = collect(&[PathBuf::from(&dir)])
        .expect("tests/fixtures is readable")
        .files;
    // An empty or moved folder would pass vacuously.
    assert!(
        files.len() >= 10,
        "only {} fixture(s) under {}",
        files.len(),
        dir.display()
    );
    let mut problems = Vec::new();
    for path in &files {
        let fixture = match Fixture::load(path) {
            Ok(f) => f,
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        if fixture.see.trim().is_empty() {
            problems.push(format!("{}: a fixture needs a `see`", path.display()));
        }
        // The replay `ctxgate replay` does: a fixture of which nothing is
        // judged is no pass.
        let mut subject = InProcess::reference();
        match replay(&mut subject, &fixture).0 {
            Replayed::Held { judged } if judged > 0 => {}
            other => problems.push(format!("{}: {other:?}", path.display())),
        }
    }
    assert!(
        problems.is_empty(),
        "{} fixture(s) failed:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// A fixture whose minimal output is over the ceiling (SPEC §4 step 6)
/// saves what a correct compactor must answer (`expect: "cannot_fit"`,
/// contract-notes 43), and replay judges the answer by it: a fixed
/// compactor that refuses, judged on an invariant a refusal leaves
/// unjudged, holds instead of being SKIPped; one that returns a history
/// fails, where it is judged on body-under-ceiling.
#[test]
fn a_fixture_over_the_ceiling_expects_cannot_fit_and_replay_judges_it() {
    use ctxgate::fixture::Expect;
    use ctxgate::invariant::{Invariant, InvariantSet};
    use ctxgate::model::{Message, ToolCall};
    use ctxgate::subject::{answer, CompactAnswer, SubjectInfo};
    use ctxgate::Config;

    let messages = vec![
        Message::system("You are the QA gate."),
        Message::user("Review PR 412"),
        Message::assistant_calls(
            "",
            vec![ToolCall::new(
                "c1",
                "read_file",
                serde_json::json!({"path": "a.ts"}),
            )],
        ),
        Message::tool("c1", "x".repeat(600)),
    ];
    let config = Config {
        transport_max_body_bytes: 400,
        ..Config::default()
    };
    let pairing = InvariantSet::parse_list("tool-pairing").unwrap();
    let fixture = Fixture::new(config.clone(), messages.clone(), pairing, "a test");
    assert_eq!(fixture.expect, Some(Expect::CannotFit));
    assert_eq!(fixture.to_json()["expect"], "cannot_fit");
    assert_eq!(Fixture::from_json(fixture.to_json()).unwrap(), fixture);
    // Under a roomy ceiling nothing is forced: no `expect`.
    let roomy = Fixture::new(Config::default(), messages.clone(), pairing, "a test");
    assert_eq!(roomy.expect, None);
    assert!(roomy.to_json().get("expect").is_none());

    let subject = |claims: &str, compact: fn(&Config, &[Message]) -> CompactAnswer| {
        let mut info = SubjectInfo::new("fixed", "1");
        info.invariants = Some(InvariantSet::parse_list(claims).unwrap());
        ctxgate::subject::InProcess::new(info, compact, None)
    };
    let reference: fn(&Config, &[Message]) -> CompactAnswer = |c, m| answer(ctxgate::compact(c, m));
    // The fixed compactor refuses: held, the answer judged.
    let mut fixed = subject("tool-pairing", reference);
    assert_eq!(replay(&mut fixed, &fixture).0, Replayed::Held { judged: 1 });
    // Without `expect` (a fixture saved before it), the same replay judged
    // nothing.
    let mut old = fixture.clone();
    old.expect = None;
    assert!(matches!(
        replay(&mut fixed, &old).0,
        Replayed::Skipped { why } if why.contains("cannot_fit")
    ));
    // A history returned where cannot_fit was the one answer: a failure,
    // under body-under-ceiling, for a subject judged on it.
    let identity: fn(&Config, &[Message]) -> CompactAnswer =
        |_, m| CompactAnswer::Messages(m.to_vec());
    let mut wrong = subject("tool-pairing,body-under-ceiling", identity);
    let Replayed::Failed(vs) = replay(&mut wrong, &fixture).0 else {
        panic!("a history passed where cannot_fit was expected")
    };
    assert_eq!(vs[0].invariant, Invariant::BodyUnderCeiling);
    assert!(
        vs[0].detail.contains("the fixture expects cannot_fit"),
        "{}",
        vs[0].detail
    );
    // Not judged on it, the subject is judged by the fixture's invariants.
    let mut unclaimed = subject("tool-pairing", identity);
    assert_eq!(
        replay(&mut unclaimed, &fixture).0,
        Replayed::Held { judged: 1 }
    );
    // A bad `expect` is bad input naming the field.
    let mut bad = fixture.to_json();
    bad["expect"] = "messages".into();
    let e = Fixture::from_json(bad).unwrap_err();
    assert!(
        e.to_string().contains("`expect` must be \"cannot_fit\""),
        "{e}"
    );
}

/// A fixture whose `expect: "cannot_fit"` its own config and history
/// contradict — the minimal output fits, or the history is ill-formed — is
/// bad input (exit 2) naming the file and the numbers: replayed, it failed
/// the reference with "… 621 bytes, over the ceiling 100000", and
/// `--expect-failures` counted that as a bug still there (the blind
/// audit's F4). So in `replay`, `replay --expect-failures` and a suite.
#[test]
fn a_fixture_whose_expect_contradicts_its_config_is_inconsistent() {
    use ctxgate::fixture::Expect;
    use ctxgate::invariant::InvariantSet;
    use ctxgate::model::Message;
    use ctxgate::Config;

    let messages = vec![Message::system("You are the QA gate."), Message::user("hi")];
    let pairing = InvariantSet::parse_list("tool-pairing").unwrap();
    let mut fixture = Fixture::new(Config::default(), messages, pairing, "a test");
    assert_eq!(fixture.expect, None);
    fixture.expect = Some(Expect::CannotFit);
    let minimal = ctxgate::contract::minimal_body(&fixture.config, &fixture.messages);
    let ceiling = fixture.config.transport_max_body_bytes;
    let e = Fixture::from_json(fixture.to_json()).unwrap_err();
    let said = format!(
        "the fixture is inconsistent: expect is cannot_fit, but its minimal output (head, pinned, last iteration) is {minimal} bytes, under the ceiling {ceiling}"
    );
    assert!(e.to_string().starts_with(&said), "{e}");
    assert_eq!(e.kind, ctxgate::error::InputErrorKind::Fixture);

    // An ill-formed history: the one right answer is invalid_input.
    let mut orphan = fixture.to_json();
    orphan["messages"] = serde_json::json!([
        {"role": "user", "content": "u"},
        {"role": "tool", "toolCallId": "nope", "content": "r"}
    ]);
    orphan["config"]["transportMaxBodyBytes"] = 10.into();
    let e = Fixture::from_json(orphan).unwrap_err();
    assert!(
        e.problem.contains("the fixture is inconsistent")
            && e.problem.contains("not well-formed")
            && e.problem.contains("invalid_input"),
        "{e}"
    );

    // On the command line: exit 2 naming the file, also where a failure
    // is what is expected, and in a suite before any case runs.
    let dir = std::env::temp_dir().join(format!("ctxgate-inconsistent-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("expects-cannot-fit.json");
    std::fs::write(&file, fixture.to_json().to_string()).unwrap();
    let path = file.to_str().unwrap();
    let dir_arg = dir.to_str().unwrap();
    let runs: [&[&str]; 3] = [
        &["replay", path],
        &["replay", "--expect-failures", path],
        &[
            "check",
            "--cases",
            "1",
            "--with-suite",
            dir_arg,
            "--save",
            dir_arg,
        ],
    ];
    for args in runs {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("{path}: {said}")),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("as expected"), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
