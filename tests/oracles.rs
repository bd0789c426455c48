//! Every oracle, on hand-built cases: for each SPEC §5 invariant a
//! violating output it must fail and a conforming one it must pass, so
//! that an oracle stubbed to return nothing turns this red; and the
//! leniencies the contract requires (SPEC §5's equality by JSON value, the
//! two readings of the head, the trigger's rounding) hold without losing
//! the failures next to them.

use std::sync::Arc;

use ctxgate::contract::SUMMARY_PREFIX;
use ctxgate::model::{Message, ToolCall};
use ctxgate::oracle::{
    check_one, Facts, Invariant, Observation, SessionTurn, TurnOutcome, Verdict,
};
use ctxgate::subject::{CompactAnswer, EstimateAnswer, EstimateReply};
use ctxgate::Config;
use serde_json::{json, Value};

use Invariant::*;

fn call(id: &str, args: Value) -> ToolCall {
    ToolCall::new(id, "read_file", args)
}

fn iteration(id: &str, result: &str) -> Vec<Message> {
    vec![
        Message::assistant_calls("", vec![call(id, json!({"path": "a.ts", "n": 653.5}))]),
        Message::tool(id, result),
    ]
}

/// system, user, three iterations with calls (the last one small).
fn history() -> Vec<Message> {
    let mut h = vec![
        Message::system("You are the QA gate."),
        Message::user("Review PR 412"),
    ];
    h.extend(iteration("c1", &"x".repeat(400)));
    h.extend(iteration("c2", &"y".repeat(400)));
    h.extend(iteration("c3", "small"));
    h
}

/// A config under which `history()` is over the trigger (about 300 tokens).
fn tight() -> Config {
    Config {
        context_window: 200,
        threshold: 0.5,
        keep_recent: 1,
        summary_max_bytes: 64,
        ..Config::default()
    }
}

fn judge(inv: Invariant, config: &Config, input: &[Message], obs: &Observation) -> Verdict {
    check_one(inv, &Facts::of(config, input), obs)
}

fn answered(o: Vec<Message>) -> Observation {
    let a = CompactAnswer::Messages(o);
    Observation {
        answer: Some(a.clone()),
        second: Some(a),
        ..Observation::default()
    }
}

fn fails(v: &Verdict) -> bool {
    v.is_fail()
}

fn passes(v: &Verdict) -> bool {
    *v == Verdict::Pass
}

/// The reference's output for `history()` under `tight()`.
fn compacted() -> Vec<Message> {
    ctxgate::compact(&tight(), &history()).expect("the reference compacts")
}

#[test]
fn tool_pairing() {
    let (c, h) = (tight(), history());
    assert!(passes(&judge(ToolPairing, &c, &h, &answered(compacted()))));
    // A cut between a call and its result: the orphan result of c3 stays.
    let mut cut = compacted();
    let at = cut.iter().position(|m| m.opens_iteration()).unwrap();
    cut.remove(at);
    let v = judge(ToolPairing, &c, &h, &answered(cut));
    assert!(fails(&v), "{v:?}");
}

#[test]
fn estimate_covers_tool_calls() {
    let (c, h) = (Config::default(), history());
    let floor: u64 = h
        .iter()
        .map(|m| ctxgate::estimate::tool_call_tokens(m, 4))
        .sum();
    let obs = |tokens: u64, per: Option<Vec<u64>>| Observation {
        estimate: Some(EstimateReply::Tokens(EstimateAnswer {
            tokens,
            per_message: per,
        })),
        ..Observation::default()
    };
    assert!(passes(&judge(
        EstimateCoversToolCalls,
        &c,
        &h,
        &obs(floor, None)
    )));
    assert!(fails(&judge(
        EstimateCoversToolCalls,
        &c,
        &h,
        &obs(floor - 1, None)
    )));
    // Per message: the total is fine, one message is not.
    let mut per = vec![0; h.len()];
    per[0] = floor; // all on the system prompt
    assert!(fails(&judge(
        EstimateCoversToolCalls,
        &c,
        &h,
        &obs(floor, Some(per))
    )));
}

#[test]
fn estimate_monotone() {
    let (c, h) = (Config::default(), history());
    let tokens = |t| {
        EstimateReply::Tokens(EstimateAnswer {
            tokens: t,
            per_message: None,
        })
    };
    let obs = |before, after| Observation {
        estimate: Some(tokens(before)),
        estimate_appended: Some((tokens(after), Message::user("more"))),
        ..Observation::default()
    };
    assert!(passes(&judge(EstimateMonotone, &c, &h, &obs(500, 500))));
    assert!(fails(&judge(EstimateMonotone, &c, &h, &obs(500, 499))));
}

#[test]
fn body_under_ceiling() {
    let h = history();
    let c = Config {
        transport_max_body_bytes: 400,
        ..Config::default()
    };
    let v = judge(BodyUnderCeiling, &c, &h, &answered(h.clone()));
    assert!(fails(&v), "the history itself is over 400 bytes: {v:?}");
    // cannot_fit when head + last iteration fits is not an answer…
    let gave_up = Observation {
        answer: Some(CompactAnswer::CannotFit {
            message: "no".into(),
        }),
        ..Observation::default()
    };
    assert!(fails(&judge(BodyUnderCeiling, &c, &h, &gave_up)));
    // …but it is when even the minimal output is over.
    let tiny = Config {
        transport_max_body_bytes: 40,
        ..Config::default()
    };
    assert!(passes(&judge(BodyUnderCeiling, &tiny, &h, &gave_up)));
    // Each failure says what a correct compactor would have done (issue 28
    // item 5): cannot_fit with the smallest size, or a smaller body.
    let minimal = ctxgate::contract::minimal_body(&tiny, &h);
    let detail = |v: Verdict| match v {
        Verdict::Fail(vs) => vs[0].detail.clone(),
        other => panic!("{other:?}"),
    };
    assert!(detail(judge(BodyUnderCeiling, &tiny, &h, &answered(h.clone()))).ends_with(
        &format!("; a correct compactor answers cannot_fit: the smallest output (head + pinned + last iteration) is {minimal} bytes")
    ));
    let minimal = ctxgate::contract::minimal_body(&c, &h);
    assert!(minimal <= 400);
    assert!(detail(judge(BodyUnderCeiling, &c, &h, &answered(h.clone())))
        .contains(&format!("until the body fits: the smallest output (head + pinned + last iteration) is {minimal} bytes")));
}

#[test]
fn no_premature_compaction() {
    let (c, h) = (Config::default(), history());
    assert!(passes(&judge(
        NoPrematureCompaction,
        &c,
        &h,
        &answered(h.clone())
    )));
    let dropped = h[1..].to_vec();
    assert!(fails(&judge(
        NoPrematureCompaction,
        &c,
        &h,
        &answered(dropped)
    )));
}

#[test]
fn progress() {
    let (c, h) = (tight(), history());
    assert!(passes(&judge(Progress, &c, &h, &answered(compacted()))));
    // Due, and returned unchanged: over the trigger and far from minimal.
    let v = judge(Progress, &c, &h, &answered(h.clone()));
    let Verdict::Fail(vs) = v else {
        panic!("{v:?}")
    };
    let facts = Facts::of(&c, &h);
    assert!(
        vs[0].detail.starts_with(&format!(
            "returned the history unchanged although it was due: adr-0098 estimate {} > trigger {}; a correct compactor",
            facts.estimate,
            c.trigger()
        )),
        "{}",
        vs[0].detail
    );
    // Kept too much, changed: what it kept that it need not have.
    let mut kept_one_more = compacted();
    kept_one_more.insert(1, h[1].clone());
    let v = judge(Progress, &c, &h, &answered(kept_one_more));
    if let Verdict::Fail(vs) = v {
        assert!(
            vs[0]
                .detail
                .contains("after compaction the adr-0098 estimate is"),
            "{}",
            vs[0].detail
        );
    }
    // Keeping *less* than the minimal output says what is missing (issue 11 item 8).
    let c0 = Config {
        context_window: 1,
        threshold: 0.4,
        ..Config::default()
    };
    assert_eq!(c0.trigger(), 0);
    let small = vec![
        Message::system("n"),
        Message::assistant_calls("", vec![call("call_3", json!({}))]),
        Message::tool("call_3", ""),
    ];
    let v = judge(Progress, &c0, &small, &answered(vec![Message::system("n")]));
    let Verdict::Fail(vs) = v else {
        panic!("{v:?}")
    };
    assert!(
        vs[0]
            .detail
            .contains("does not end with the input's last iteration"),
        "{}",
        vs[0].detail
    );
}

/// `trims-when-due` (an extension, contract-notes 41): due and more than
/// minimal, an output that keeps every input message verbatim fails —
/// unchanged, or with a message added — and one that leaves out any passes
/// however far over the trigger it stays; not due, due by the body alone,
/// or an input that is its own minimal output, it does not apply.
#[test]
fn trims_when_due() {
    let (c, h) = (tight(), history());
    assert!(passes(&judge(TrimsWhenDue, &c, &h, &answered(compacted()))));
    // Dropping one old message is enough, even over the trigger still
    // (what progress would fail).
    let mut one_less = h.clone();
    one_less.remove(1);
    assert!(passes(&judge(
        TrimsWhenDue,
        &c,
        &h,
        &answered(one_less.clone())
    )));
    assert!(fails(&judge(Progress, &c, &h, &answered(one_less))));
    let v = judge(TrimsWhenDue, &c, &h, &answered(h.clone()));
    let Verdict::Fail(vs) = &v else {
        panic!("{v:?}")
    };
    assert!(
        vs[0]
            .detail
            .contains("yet the subject returned the history unchanged"),
        "{}",
        vs[0].detail
    );
    let mut added = h.clone();
    added.insert(1, Message::system("a note that replaces nothing"));
    let v = judge(TrimsWhenDue, &c, &h, &answered(added));
    assert!(fails(&v), "{v:?}");
    // Not due: nothing asked.
    let roomy = Config::default();
    assert_eq!(
        judge(TrimsWhenDue, &roomy, &h, &answered(h.clone())),
        Verdict::NotApplicable("compaction was not due")
    );
    // Due by the body alone: body-under-ceiling's.
    let body = ctxgate::body::body_bytes(&roomy, &h);
    let small_ceiling = Config {
        transport_max_body_bytes: body - 1,
        threshold: 1.0,
        ..Config::default()
    };
    assert!(Facts::of(&small_ceiling, &h).estimate <= small_ceiling.trigger());
    assert!(matches!(
        judge(TrimsWhenDue, &small_ceiling, &h, &answered(h.clone())),
        Verdict::NotApplicable(why) if why.contains("body alone")
    ));
    // Head + pinned + last iteration: nothing a correct trimmer could drop.
    let mut minimal = vec![h[0].clone(), h[1].clone().pinned()];
    minimal.extend(iteration("c9", &"z".repeat(2_000)));
    assert!(matches!(
        judge(TrimsWhenDue, &c, &minimal, &answered(minimal.clone())),
        Verdict::NotApplicable(why) if why.contains("its own minimal output")
    ));
}

#[test]
fn verbatim_suffix() {
    let (c, h) = (tight(), history());
    assert!(passes(&judge(
        VerbatimSuffix,
        &c,
        &h,
        &answered(compacted())
    )));
    let mut changed = compacted();
    let last = changed.len() - 1;
    changed[last] = Message::tool("c3", "small, reworded");
    assert!(fails(&judge(VerbatimSuffix, &c, &h, &answered(changed))));
}

#[test]
fn order_preserved() {
    let (c, h) = (tight(), history());
    assert!(passes(&judge(
        OrderPreserved,
        &c,
        &h,
        &answered(compacted())
    )));
    // Two kept iterations swapped.
    let mut swapped = h.clone();
    swapped.swap(2, 4);
    swapped.swap(3, 5);
    assert!(fails(&judge(OrderPreserved, &c, &h, &answered(swapped))));
}

#[test]
fn pinned_kept() {
    let (c, mut h) = (tight(), history());
    h[1] = h[1].clone().pinned();
    let out = ctxgate::compact(&c, &h).unwrap();
    assert!(passes(&judge(PinnedKept, &c, &h, &answered(out.clone()))));
    let without: Vec<Message> = out.into_iter().filter(|m| !m.is_pinned()).collect();
    assert!(fails(&judge(
        PinnedKept,
        &c,
        &h,
        &answered(without.clone())
    )));
    // The head too.
    assert!(fails(&judge(
        PinnedKept,
        &c,
        &h,
        &answered(without[1..].to_vec())
    )));
}

#[test]
fn single_bounded_summary() {
    let (c, h) = (tight(), history());
    assert!(passes(&judge(
        SingleBoundedSummary,
        &c,
        &h,
        &answered(compacted())
    )));
    let mut two = compacted();
    two.insert(1, Message::system("another summary"));
    assert!(fails(&judge(SingleBoundedSummary, &c, &h, &answered(two))));
    let mut long = compacted();
    long[1] = Message::system("s".repeat(65));
    assert!(fails(&judge(SingleBoundedSummary, &c, &h, &answered(long))));
}

#[test]
fn deterministic() {
    let (c, h) = (tight(), history());
    let mut obs = answered(compacted());
    assert!(passes(&judge(Deterministic, &c, &h, &obs)));
    let mut other = compacted();
    other[1] = Message::system("a different summary");
    obs.second = Some(CompactAnswer::Messages(other));
    assert!(fails(&judge(Deterministic, &c, &h, &obs)));
}

#[test]
fn idempotent() {
    let (c, h) = (tight(), history());
    let out = compacted();
    let mut obs = answered(out.clone());
    obs.recompacted = Some(CompactAnswer::Messages(out.clone()));
    assert!(passes(&judge(Idempotent, &c, &h, &obs)));
    obs.recompacted = Some(CompactAnswer::Messages(out[1..].to_vec()));
    assert!(fails(&judge(Idempotent, &c, &h, &obs)));
}

#[test]
fn session_never_overflows() {
    let (c, h) = (tight(), history());
    let turn = |n, outcome| SessionTurn {
        turn: n,
        history_len: 4,
        outcome,
        delivery: None,
    };
    let mut obs = answered(compacted());
    obs.session = Some(vec![turn(
        1,
        TurnOutcome::Sent {
            body: 900,
            minimal: None,
        },
    )]);
    assert!(passes(&judge(SessionNeverOverflows, &c, &h, &obs)));
    let ceiling = c.transport_max_body_bytes;
    obs.session = Some(vec![
        turn(
            1,
            TurnOutcome::Sent {
                body: 900,
                minimal: None,
            },
        ),
        turn(
            2,
            TurnOutcome::Sent {
                body: ceiling + 1,
                minimal: Some(ceiling + 10),
            },
        ),
    ]);
    assert!(fails(&judge(SessionNeverOverflows, &c, &h, &obs)));
    obs.session = Some(vec![turn(1, TurnOutcome::CannotFit { minimal: 300 })]);
    assert!(fails(&judge(SessionNeverOverflows, &c, &h, &obs)));
    obs.session = Some(vec![]);
    assert!(matches!(
        judge(SessionNeverOverflows, &c, &h, &obs),
        Verdict::NotApplicable(_)
    ));
}

/// SPEC §5: a subject whose JSON library re-spells numbers changed nothing.
#[test]
fn respelled_numbers_are_the_same_values() {
    let spelled = |text: &str| -> Value { serde_json::from_str(text).unwrap() };
    let input = vec![
        Message::user("go"),
        Message::assistant_calls(
            "",
            vec![call("c", spelled(r#"{"x": 653.50, "y": 1.0, "z": 1E+2}"#))],
        ),
        Message::tool("c", "ok"),
    ];
    // What Python's json writes back.
    let python = {
        let mut o = input.clone();
        o[1].tool_calls.as_mut().unwrap()[0].arguments =
            Arc::new(spelled(r#"{"z": 100.0, "y": 1.0, "x": 653.5}"#));
        o
    };
    let c = Config::default();
    for inv in [
        NoPrematureCompaction,
        VerbatimSuffix,
        PinnedKept,
        OrderPreserved,
        SingleBoundedSummary,
    ] {
        let v = judge(inv, &c, &input, &answered(python.clone()));
        assert!(passes(&v), "{inv}: {v:?}");
    }
    // The floor counts the shortest spelling: Python's 653.5, JavaScript's 1 and 100.
    let js = r#"[{"id":"c","name":"read_file","arguments":{"x":653.5,"y":1,"z":100}}]"#;
    let obs = Observation {
        estimate: Some(EstimateReply::Tokens(EstimateAnswer {
            tokens: (js.len() as u64).div_ceil(4),
            per_message: None,
        })),
        ..Observation::default()
    };
    assert!(passes(&judge(EstimateCoversToolCalls, &c, &input, &obs)));
    // A changed value is still a change.
    let mut changed = python;
    changed[1].tool_calls.as_mut().unwrap()[0].arguments =
        Arc::new(spelled(r#"{"x": 653.51, "y": 1, "z": 100}"#));
    assert!(fails(&judge(
        NoPrematureCompaction,
        &c,
        &input,
        &answered(changed)
    )));
}

/// An empty summary at summaryMaxBytes 0 is the very value of an empty
/// system prompt: `[system "", summary "", last iteration]` aligns.
#[test]
fn a_summary_equal_to_an_input_message_aligns() {
    let mut h = vec![Message::system("")];
    h.extend(iteration("c1", "a"));
    h.extend(iteration("c2", "b"));
    let c = Config {
        summary_max_bytes: 0,
        ..tight()
    };
    let mut out = vec![Message::system(""), Message::system("")];
    out.extend(iteration("c2", "b"));
    for inv in [OrderPreserved, SingleBoundedSummary] {
        let v = judge(inv, &c, &h, &answered(out.clone()));
        assert!(passes(&v), "{inv}: {v:?}");
    }
}

/// SPEC §4's head, read literally or stopped before an earlier summary:
/// a subject following either reading passes.
#[test]
fn both_readings_of_the_head_are_accepted() {
    let summary = Message::system(format!("{SUMMARY_PREFIX} 6 earlier messages"));
    let mut h = vec![Message::system("You are the QA gate."), summary.clone()];
    h.extend(iteration("c1", &"x".repeat(400)));
    h.extend(iteration("c2", &"y".repeat(400)));
    h.extend(iteration("c3", "small"));
    let c = tight();
    // The reference folds the earlier summary into its new one.
    let folded = ctxgate::compact(&c, &h).unwrap();
    assert!(!folded.contains(&summary));
    // A literal reader keeps it and adds its own.
    let mut literal = h[..2].to_vec();
    literal.push(Message::system("[summary] 4 earlier messages"));
    literal.extend(iteration("c3", "small"));
    for out in [folded, literal] {
        for inv in [PinnedKept, Progress, SingleBoundedSummary, OrderPreserved] {
            let v = judge(inv, &c, &h, &answered(out.clone()));
            assert!(passes(&v), "{inv}: {v:?} on {out:?}");
        }
    }
    // Dropping the system prompt itself is still caught.
    let mut dropped = vec![Message::system("[summary] 5 earlier messages")];
    dropped.extend(iteration("c3", "small"));
    assert!(fails(&judge(PinnedKept, &c, &h, &answered(dropped))));
}

/// threshold × window = n + ½: Python's round() gives n, SPEC's n + 1.
#[test]
fn a_trigger_at_an_exact_half_admits_both_roundings() {
    let c = Config {
        context_window: 33,
        threshold: 0.5,
        ..Config::default()
    };
    assert_eq!(c.trigger(), 17);
    // 17 tokens: nothing is due for SPEC, compaction is due for Python.
    let h = vec![Message::user("x".repeat(17 * 4)), Message::assistant("")];
    let mut trimmed = h.clone();
    trimmed.remove(0);
    let compacting = answered(trimmed);
    let v = judge(NoPrematureCompaction, &c, &h, &compacting);
    assert!(matches!(v, Verdict::NotApplicable(_)), "{v:?}");
    assert!(passes(&judge(Progress, &c, &h, &answered(h.clone()))));
    // 16 tokens: nothing is due for either.
    let h16 = vec![Message::user("x".repeat(16 * 4)), Message::assistant("")];
    assert!(fails(&judge(
        NoPrematureCompaction,
        &c,
        &h16,
        &answered(h16[1..].to_vec())
    )));
}

/// invalid_input to a well-formed history fails every invariant judged on
/// it; to an ill-formed one it is the right answer.
#[test]
fn refusing_a_well_formed_history_is_a_finding() {
    let h = history();
    let c = Config::default();
    let refused = Observation {
        answer: Some(CompactAnswer::InvalidInput {
            message: "no".into(),
        }),
        estimate: Some(EstimateReply::InvalidInput {
            message: "no".into(),
        }),
        ..Observation::default()
    };
    for inv in Invariant::ALL {
        if inv == SessionNeverOverflows {
            continue; // judged on the session's own turns
        }
        assert!(fails(&judge(inv, &c, &h, &refused)), "{inv}");
    }
    let orphan = vec![Message::user("go"), Message::tool("nope", "")];
    assert!(passes(&judge(BodyUnderCeiling, &c, &orphan, &refused)));
    for inv in [ToolPairing, NoPrematureCompaction, EstimateCoversToolCalls] {
        assert!(
            matches!(judge(inv, &c, &orphan, &refused), Verdict::NotApplicable(_)),
            "{inv}"
        );
    }
}

/// A `cannot_fit` to a due history is judged by `progress` on the
/// subject's own terms (contract-notes 42): right when the minimal output is
/// over the ceiling, or over the effective window by the subject's own
/// estimate of it; wrong when it fits both.
#[test]
fn a_refusal_is_judged_by_progress_on_the_subjects_own_terms() {
    let (c, h) = (tight(), history());
    let refused = |minimal_estimate: Option<u64>| Observation {
        answer: Some(CompactAnswer::CannotFit {
            message: "the last message alone is over max_tokens".into(),
        }),
        minimal_estimate,
        ..Observation::default()
    };
    let facts = Facts::of(&c, &h);
    assert!(facts.estimate > c.trigger(), "due");
    // By adr-0098 the minimal output (system + the small last iteration)
    // is far inside the window of 200: a wrong refusal.
    let v = check_one(Progress, &facts, &refused(None));
    let Verdict::Fail(vs) = &v else {
        panic!("{v:?}")
    };
    assert!(
        vs[0].detail.contains("within the effective window 200"),
        "{}",
        vs[0].detail
    );
    // By its own count the minimal output is over the window: refused on
    // its own terms, the count it is timed by.
    let own = facts.timed_by(Some(facts.estimate), 1.0);
    assert!(passes(&check_one(Progress, &own, &refused(Some(201)))));
    assert!(fails(&check_one(Progress, &own, &refused(Some(200)))));
    // Its own count is read only from a subject timed by it.
    assert!(fails(&check_one(Progress, &facts, &refused(Some(201)))));
    // Over the ceiling, the refusal is SPEC §4's own answer.
    let tiny = Config {
        transport_max_body_bytes: 100,
        ..tight()
    };
    assert!(passes(&judge(Progress, &tiny, &h, &refused(None))));
    // Nothing due: no-premature-compaction's finding, not progress's.
    let roomy = Config::default();
    assert!(matches!(
        judge(Progress, &roomy, &h, &refused(None)),
        Verdict::NotApplicable(why) if why.contains("no-premature-compaction")
    ));
    assert!(fails(&judge(
        NoPrematureCompaction,
        &roomy,
        &h,
        &refused(None)
    )));
}

#[test]
fn a_subject_that_estimates_is_timed_by_its_own_count() {
    let (c, h) = (tight(), history());
    let facts = Facts::of(&c, &h);
    let trigger = c.trigger();
    assert!(facts.estimate > trigger, "due by adr-0098");
    // By its own count nothing was due: compacting is premature, and
    // returning the history unchanged is no failure of progress.
    let own = facts.timed_by(Some(trigger), 1.0);
    let v = check_one(NoPrematureCompaction, &own, &answered(compacted()));
    let Verdict::Fail(vs) = v else {
        panic!("{v:?}")
    };
    assert!(
        vs[0].detail.starts_with(&format!(
            "nothing was due (own estimate {trigger} ≤ trigger {trigger}"
        )),
        "{}",
        vs[0].detail
    );
    assert!(!fails(&check_one(Progress, &own, &answered(h.clone()))));
    // A margin declared at 0.9: 95% of the trigger is due by it…
    let near = trigger * 95 / 100;
    let margin = facts.timed_by(Some(near), 0.9);
    assert!(!fails(&check_one(
        NoPrematureCompaction,
        &margin,
        &answered(compacted())
    )));
    // …and progress reads the subject's estimate of its output.
    let mut obs = answered(h[..4].iter().chain(&h[6..]).cloned().collect());
    // (the margin moves where compaction starts, not what SPEC asks of it)
    obs.output_estimate = Some(near);
    assert!(passes(&check_one(Progress, &margin, &obs)));
    obs.output_estimate = Some(trigger + 1);
    let v = check_one(Progress, &margin, &obs);
    let Verdict::Fail(vs) = v else {
        panic!("{v:?}")
    };
    assert!(
        vs[0].detail.contains(&format!(
            "the own estimate is {} tokens, over the trigger {trigger}",
            trigger + 1
        )),
        "{}",
        vs[0].detail
    );
    // Without its count the subject is judged by adr-0098 at the point.
    let adr = facts.timed_by(None, 0.9);
    assert_eq!(adr.estimate, facts.estimate);
}
