//! Every failure shows what the compactor answered and how it differs
//! from what it was sent (issue 28): a compactor that drops the fields it
//! does not know fails verbatim-suffix or pinned-kept, and the report
//! names the dropped field by its path — the cause, not only the verdict.

mod common;

use ctxgate::config::Config;
use ctxgate::model::{engine, Message};

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
