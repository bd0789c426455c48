//! Every failure shows what the compactor answered and how it differs
//! from what it was sent (issue 28): a compactor that drops the fields it
//! does not know fails verbatim-suffix or pinned-kept, and the report
//! names the dropped field by its path — the cause, not only the verdict.
//! A fault shows it too: what the subject sent that the protocol cannot
//! read (a message, a hello, an estimate) is quoted beside the problem.

mod common;

use ctxgate::config::Config;
use ctxgate::model::{engine, Message, WireFormat};
use ctxgate::subject::{protocol, FaultKind};
use serde_json::{json, Value};

/// The reference's answer, with every message's unknown fields dropped.
fn drops_unknown_fields(c: &Config, m: &[Message]) -> ctxgate::subject::CompactAnswer {
    let known = ["role", "content", "toolCalls", "toolCallId", "pinned"];
    let out = ctxgate::reference::compact(c, m).map(|msgs| {
        msgs.iter()
            .enumerate()
            .map(|(i, m)| {
                let mut v = engine::message_to_value(m);
                v.as_object_mut()
                    .unwrap()
                    .retain(|k, _| known.contains(&k.as_str()));
                engine::message_from_value(&v, i).unwrap()
            })
            .collect()
    });
    ctxgate::subject::answer(out)
}

#[test]
fn a_failure_shows_the_answer_and_the_dropped_field() {
    let mut subject =
        ctxgate::testing::Compactor::new("drops-fields", "0", drops_unknown_fields).into_subject();
    let opts = ctxgate::check::CheckOptions {
        cases: 300,
        seed: 28,
        ..Default::default()
    };
    let report = ctxgate::testing::check(&mut subject, &opts);
    assert!(
        !report.failures.is_empty(),
        "dropping fields went unnoticed"
    );
    let text = ctxgate::report::human(&report, &Default::default());
    assert!(text.contains("answered "), "{text}");
    assert!(
        text.contains(" → absent"),
        "the dropped field is not named: {text}"
    );
    // The JSON report carries the answer and its diff, and reads back.
    let json = ctxgate::report::to_json(&report, &Default::default());
    let first = &json["failures"][0];
    assert_eq!(first["answer"]["kind"], "messages", "{first}");
    assert!(first["answer"]["diff"]
        .as_array()
        .is_some_and(|d| !d.is_empty()));
    let back = ctxgate::report::from_json(&json).unwrap();
    assert_eq!(back.failures[0].answer, report.failures[0].answer);
}

/// A gate's regression shows the subject's answer too, in every form, and
/// the JSON report's answer reads back (`report merge`).
#[test]
fn a_gate_regression_shows_the_answer_in_every_form() {
    use ctxgate::report::render::{Outcome, ReportKind};
    let mut subject =
        ctxgate::testing::Compactor::new("drops-fields", "0", drops_unknown_fields).into_subject();
    let report = common::gate_against_reference(&mut subject, 300, 28);
    assert!(
        !report.regressions.is_empty(),
        "dropping fields went unnoticed"
    );
    assert!(report
        .regressions
        .iter()
        .all(|g| g.failure.answer.is_some()));
    let outcome = Outcome::Gate {
        report,
        hints: Default::default(),
    };
    let gate = |kind| outcome.render(kind);
    for kind in [ReportKind::Human, ReportKind::Markdown, ReportKind::Junit] {
        let text = gate(kind);
        assert!(
            text.contains(" → absent"),
            "{kind:?}: the dropped field is not named: {text}"
        );
    }
    let json: serde_json::Value = serde_json::from_str(&gate(ReportKind::Json)).unwrap();
    assert_eq!(json["regressions"][0]["answer"]["kind"], "messages");
    let back = ctxgate::baseline::json::from_json(&json).unwrap();
    let Outcome::Gate { report, .. } = &outcome else {
        unreachable!("built as a gate")
    };
    assert_eq!(
        back.regressions[0].failure.answer,
        report.regressions[0].failure.answer
    );
}

// What a subject sent that the protocol cannot read is shown in its
// fault, beside what is wrong with it: the newcomer's first failures.

/// A compact answer whose message does not read is a protocol fault
/// that shows the message as the subject wrote it, by either reader.
#[test]
fn a_bad_answer_message_is_shown_in_the_fault() {
    let line = json!({"id": 1, "messages": [{"role": "user", "content": "a"}, {"rol": "user"}]});
    let shown = r#"message 1: message has no `role`; as written: {"rol":"user"}"#;
    let owned = protocol::parse_compact_reply(line.clone(), WireFormat::Engine).unwrap_err();
    let Value::Object(obj) = line else {
        unreachable!()
    };
    let borrowed = protocol::parse_compact_answer(&obj, WireFormat::Engine).unwrap_err();
    for fault in [owned, borrowed] {
        assert_eq!(fault.kind, FaultKind::Protocol);
        assert!(fault.detail.ends_with(shown), "{}", fault.detail);
    }
}

/// An answer without `messages` names the fields it had instead.
#[test]
fn an_answer_without_messages_names_its_fields() {
    let line = json!({"id": 1, "result": []});
    let fault = protocol::parse_compact_reply(line, WireFormat::Engine).unwrap_err();
    let shown = r#"no `messages` (its fields: "id", "result")"#;
    assert!(fault.detail.ends_with(shown), "{}", fault.detail);
}

/// A bad estimate answer's fault shows what the subject wrote.
#[test]
fn a_bad_estimate_answer_is_shown_in_the_fault() {
    for (answer, shown) in [
        (
            json!({"tokens": 12.5}),
            "`tokens` must be a non-negative integer, found 12.5: a fractional count is refused; round it up (ceil) — rounded down, an estimate can fall under the floors the estimate invariants hold it to",
        ),
        (
            serde_json::from_str(r#"{"tokens": 12.0}"#).unwrap(),
            "`tokens` must be a non-negative integer, found 12.0: write it as an integer, without a fraction or an exponent (12, not 12.0)",
        ),
        (
            json!({"tokens": 3, "perMessage": [1, 0.25]}),
            "`perMessage` must hold non-negative integers, found 0.25: a fractional count is refused; round it up (ceil) — rounded down, an estimate can fall under the floors the estimate invariants hold it to",
        ),
        (
            json!({"tokens": "12"}),
            "`tokens` must be a non-negative integer, found \"12\"",
        ),
        (
            json!({}),
            "`tokens` must be a non-negative integer, found nothing",
        ),
        (
            json!({"tokens": 3, "perMessage": [1, -2]}),
            "non-negative integers, found -2",
        ),
        (
            json!({"tokens": 3, "perMessage": 3}),
            "`perMessage` must be an array, found 3",
        ),
    ] {
        let Value::Object(obj) = answer else {
            unreachable!()
        };
        let fault = protocol::parse_estimate_answer(&obj).unwrap_err();
        assert!(fault.detail.ends_with(shown), "{}", fault.detail);
    }
}

/// A hello that is not one shows what the subject answered instead.
#[test]
fn a_bad_hello_is_shown_in_the_fault() {
    let no_op = json!({"protocol": 1, "name": "x", "ops": ["compact"]});
    let fault = protocol::parse_hello(&no_op).unwrap_err();
    assert!(
        fault.detail.ends_with(&format!("it was {no_op}")),
        "{}",
        fault.detail
    );
    let fault = protocol::parse_hello(&json!({"op": "hello", "protocol": 1, "ops": ["compress"]}));
    let detail = fault.unwrap_err().detail;
    assert!(detail.ends_with(r#"found ["compress"]"#), "{detail}");
}
