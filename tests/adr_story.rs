//! ADR 0098's own story, with its figures asserted rather than printed.
//!
//! - The numbers: 128,000 tokens × 0.7 at 4 bytes/token puts the trigger
//!   at 350 KiB of payload; under Express's 100 KB default the effective
//!   window is 25,600 tokens and the trigger 17,920.
//! - The 413: a QA gate's ToolLoop (assistant messages holding only
//!   `toolCalls`, three 32 KiB tool results per iteration) overflows the api's
//!   102,400-byte body limit long before the pre-ADR compactor (content-only
//!   estimator, window from the model only) would act; the reference,
//!   compacting before each send, keeps every body under the limit for the
//!   60 iterations of a gate, and answers `cannot_fit` only for an iteration
//!   (four 32 KiB results) that cannot fit on its own.
//! - Tool calls weigh: an assistant message with only `toolCalls` counts
//!   under `adr-0098` and weighs nothing under `content-only`.
//! - With the decided limits (engine 8 MiB, api 10mb) even a gate of four
//!   32 KiB results per iteration runs its 60 iterations.
//! - No cut separates an assistant message from its tool results.
//! - Two regression tests, at the end, for a defect of the reference these
//!   tests found: summaries of earlier compactions piled up in the head.
//!
//! The synthetic gate reuses the call ids `call_0`, `call_1`, … on every
//! iteration (as some models do), so pairing can only be right if it is
//! judged per iteration; each result names its iteration so that the tests
//! can check, directly, which assistant message it belongs to.

use ctxgate::body::body_bytes;
use ctxgate::config::{Config, EXPRESS_DEFAULT_LIMIT};
use ctxgate::estimate::{Adr0098, ContentOnly, Estimator};
use ctxgate::model::{check_well_formed, head_len, Message, Role, ToolCall};
use ctxgate::reference::{compact, exact_body, DigestSummariser, Reference, SUMMARY_PREFIX};
use ctxgate::CompactError;
use serde_json::{json, Value};

/// RN-150's individual cap on a tool result, the size of every result here.
const RESULT_BYTES: usize = 32 * 1024;
/// The iteration ceiling of execution/gate agents.
const GATE_ITERATIONS: usize = 60;
const TOOLS: [&str; 4] = [
    "search_workspace",
    "read_file",
    "run_tests",
    "scan_dependencies",
];

// ---------------------------------------------------------------------------
// The figures.

#[test]
fn the_pre_adr_trigger_sits_near_350_kb_of_payload() {
    let c = Config::default();
    assert_eq!(c.context_window, 128_000);
    assert_eq!(c.threshold, 0.7);
    assert_eq!(c.bytes_per_token, 4);
    assert_eq!(c.effective_window(), 128_000);
    assert_eq!(c.trigger(), 89_600);
    let trigger_bytes = c.trigger() * c.bytes_per_token;
    assert_eq!(trigger_bytes, 358_400);
    assert_eq!(trigger_bytes, 350 * 1024, "exactly 350 KiB");
    // 3.5 times the Express limit the api was actually running with.
    assert_eq!(trigger_bytes * 2, EXPRESS_DEFAULT_LIMIT * 7);
}

#[test]
fn under_express_default_the_effective_window_is_the_transport() {
    assert_eq!(EXPRESS_DEFAULT_LIMIT, 102_400);
    let c = express();
    assert_eq!(c.effective_window(), 25_600);
    assert_eq!(c.trigger(), 17_920);
    assert_eq!(c.trigger() * c.bytes_per_token, 71_680);
    // The engine's own 8 MiB leaves the model window in charge.
    let engine = Config::default();
    assert_eq!(engine.transport_max_body_bytes, 8 * 1024 * 1024);
    assert!(engine.transport_max_body_bytes / engine.bytes_per_token > 128_000);
    assert_eq!(engine.effective_window(), 128_000);
}

// ---------------------------------------------------------------------------
// The gate's history.

fn express() -> Config {
    Config {
        transport_max_body_bytes: EXPRESS_DEFAULT_LIMIT,
        ..Config::default()
    }
}

/// The pre-ADR configuration: the window of the model only, no transport at all.
fn pre_adr() -> Config {
    Config {
        transport_max_body_bytes: u64::MAX,
        ..Config::default()
    }
}

fn head() -> Vec<Message> {
    vec![
        Message::system(
            "You are the QA/SecOps gate. Review the pull request, run the checks you need \
             through your tools and answer APPROVE or REJECT with reasons.",
        ),
        Message::user("Review PR 412: fix for 413 request entity too large (RN-412)."),
    ]
}

/// The arguments of call `k` in iteration `i`: a few hundred bytes.
fn arguments(i: usize, k: usize) -> Value {
    json!({
        "iteration": i,
        "query": format!("413 request entity too large body limit, pass {k}"),
        "path": format!("apps/engine/lib/engine/harness/context_manager/default_{k}.ex"),
        "reason": "The gate needs the transport limits on both ends of engine -> api \
                   POST /internal/sessions/:sessionId/llm-turn to judge the change, \
                   and the estimator's handling of toolCalls.",
        "maxBytes": RESULT_BYTES,
    })
}

/// The tag every result of iteration `i`, call `k` starts with.
fn tag(i: usize, k: usize) -> String {
    format!("[iteration {i} call_{k}]")
}

/// A content-heavy tool result of exactly [`RESULT_BYTES`] bytes, with no
/// byte that JSON escapes (so that its body weight is its length plus quotes).
fn result_text(i: usize, k: usize) -> String {
    let mut s = tag(i, k);
    let filler = " lib/engine/harness/context_manager.ex estimate group_by_iteration transport";
    while s.len() < RESULT_BYTES {
        s.push_str(filler);
    }
    s.truncate(RESULT_BYTES);
    s
}

/// One ToolLoop iteration: an assistant message holding only `toolCalls`
/// (empty content) and `results` tool messages of 32 KiB each.
fn iteration(i: usize, results: usize) -> Vec<Message> {
    let calls = (0..results)
        .map(|k| ToolCall::new(format!("call_{k}"), TOOLS[k % TOOLS.len()], arguments(i, k)))
        .collect();
    let mut out = vec![Message::assistant_calls("", calls)];
    out.extend((0..results).map(|k| Message::tool(format!("call_{k}"), result_text(i, k))));
    out
}

/// One send of a simulated ToolLoop.
#[derive(Debug)]
struct Send {
    iteration: usize,
    /// What the compactor returned: the body that goes over the wire.
    sent: Vec<Message>,
    /// The history before compaction.
    before: Vec<Message>,
}

impl Send {
    fn compacted(&self) -> bool {
        self.sent != self.before
    }
}

/// The compactor's refusal: the iteration, the history it refused, the error.
type Refusal = (usize, Vec<Message>, CompactError);

/// A ToolLoop: append iteration `i` (with `results(i)` results), compact,
/// send, carry the compacted history into the next turn; up to 60
/// iterations, or until the compactor answers an error.
fn session(
    compactor: &Reference<'_>,
    config: &Config,
    results: impl Fn(usize) -> usize,
) -> (Vec<Send>, Option<Refusal>) {
    session_of(compactor, config, |i| iteration(i, results(i)))
}

/// [`session`] with any iteration `make(i)`.
fn session_of(
    compactor: &Reference<'_>,
    config: &Config,
    make: impl Fn(usize) -> Vec<Message>,
) -> (Vec<Send>, Option<Refusal>) {
    let mut history = head();
    let mut sends = Vec::new();
    for i in 1..=GATE_ITERATIONS {
        history.extend(make(i));
        match compactor.compact(config, &history) {
            Ok(sent) => {
                let before = std::mem::replace(&mut history, sent.clone());
                sends.push(Send {
                    iteration: i,
                    sent,
                    before,
                });
            }
            Err(e) => return (sends, Some((i, history, e))),
        }
    }
    (sends, None)
}

fn reference() -> Reference<'static> {
    Reference::default()
}

/// The pre-ADR compactor: the same cut, but the content-only estimator.
fn pre_adr_compactor() -> Reference<'static> {
    Reference {
        estimator: &ContentOnly,
        summariser: &DigestSummariser,
        body: exact_body,
        ..Reference::default()
    }
}

/// The iteration a message belongs to, read from its tag or its arguments.
fn iteration_of(m: &Message) -> Option<usize> {
    match m.role {
        Role::Tool => {
            let text = m.content.text();
            let rest = text.strip_prefix("[iteration ")?;
            rest[..rest.find(' ')?].parse().ok()
        }
        Role::Assistant => {
            let firsts: Vec<u64> = m
                .calls()
                .iter()
                .map(|c| c.arguments["iteration"].as_u64())
                .collect::<Option<_>>()?;
            assert!(
                firsts.windows(2).all(|w| w[0] == w[1]),
                "one assistant message, calls of two iterations: {firsts:?}"
            );
            firsts.first().map(|&n| n as usize)
        }
        _ => None,
    }
}

/// Directly, without the library's iteration code: every tool message
/// stands in a run of tool messages right after the assistant message of its
/// own iteration, answers a call that message makes, and no call is
/// answered twice; every call of an iteration but the last is answered.
fn assert_no_cut_separates(msgs: &[Message], context: &str) {
    check_well_formed(msgs).unwrap_or_else(|e| panic!("{context}: not well formed: {e}"));
    let mut opener: Option<usize> = None;
    let mut answered: Vec<&str> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if m.role != Role::Tool {
            if let Some(j) = opener {
                let calls = msgs[j].calls().len();
                assert_eq!(
                    answered.len(),
                    calls,
                    "{context}: the assistant message {j} makes {calls} calls, {} answered",
                    answered.len()
                );
            }
            opener = m.opens_iteration().then_some(i);
            answered.clear();
            continue;
        }
        let j = opener.unwrap_or_else(|| {
            panic!("{context}: tool message {i} has no assistant message with calls before it")
        });
        let id = m.tool_call_id.as_deref().unwrap();
        assert!(
            msgs[j].calls().iter().any(|c| c.id == id),
            "{context}: tool message {i} answers {id:?}, which message {j} does not make"
        );
        assert!(!answered.contains(&id), "{context}: {id:?} answered twice");
        answered.push(id);
        assert_eq!(
            iteration_of(m),
            iteration_of(&msgs[j]),
            "{context}: tool message {i} is a result of another iteration than message {j}"
        );
        // The result is the one this call was answered with, verbatim.
        let k: usize = id.strip_prefix("call_").unwrap().parse().unwrap();
        assert_eq!(
            m.content.text(),
            result_text(iteration_of(m).unwrap(), k),
            "{context}: tool message {i} is not verbatim"
        );
    }
}

// ---------------------------------------------------------------------------
// The 413, before the ADR.

#[test]
fn designed_numbers_one_iteration_of_three_fits_one_of_four_does_not() {
    let c = express();
    let with = |results: usize| {
        let mut h = head()[..1].to_vec();
        h.extend(iteration(1, results));
        body_bytes(&c, &h)
    };
    let args = serde_json::to_vec(&arguments(60, 3)).unwrap().len();
    assert!((200..500).contains(&args), "a few hundred bytes: {args}");
    // 3 × 32 KiB = 98,304 bytes of results: with the system prompt and the
    // JSON around them, under 102,400.
    let three = with(3);
    assert!(
        three > 3 * RESULT_BYTES as u64 && three <= 102_400,
        "{three}"
    );
    // 4 × 32 KiB = 131,072: one iteration alone is over the ceiling.
    let four = with(4);
    assert!(four > 4 * RESULT_BYTES as u64 && four > 102_400, "{four}");
    // The last iteration of the 60 is the largest (more digits): still fits.
    let mut h = head()[..1].to_vec();
    h.extend(iteration(GATE_ITERATIONS, 3));
    assert!(body_bytes(&c, &h) <= 102_400);
}

#[test]
fn before_the_adr_the_body_overflows_within_a_few_iterations_and_nothing_compacts() {
    let config = pre_adr();
    assert_eq!(config.trigger(), 89_600, "round(0.7 × 128,000)");
    let compactor = pre_adr_compactor();
    let (sends, error) = session(&compactor, &config, |_| 3);
    assert!(error.is_none(), "the pre-ADR compactor never refuses");
    assert_eq!(sends.len(), GATE_ITERATIONS);

    let api = express();
    let overflow = sends
        .iter()
        .find(|s| body_bytes(&api, &s.sent) > api.transport_max_body_bytes)
        .expect("the body passes 102,400 bytes");
    let first_compaction = sends.iter().find(|s| s.compacted()).unwrap();

    // The 413: the second send is already over the api's limit …
    assert_eq!(overflow.iteration, 2);
    assert!(overflow.iteration <= 3);
    let overflow_body = body_bytes(&api, &overflow.sent);
    assert!(
        (2 * 3 * RESULT_BYTES as u64..2 * 102_400).contains(&overflow_body),
        "{overflow_body}"
    );
    // … while the pre-ADR estimate is far under its trigger,
    let content_only = ContentOnly.tokens(&mut overflow.sent.iter(), &config);
    let head_tokens: u64 = head()
        .iter()
        .map(|m| (m.content.text().len() as u64).div_ceil(4))
        .sum();
    assert_eq!(
        content_only,
        2 * 3 * (RESULT_BYTES as u64 / 4) + head_tokens
    );
    assert!(content_only <= config.trigger());
    assert!(!overflow.compacted());
    // and it undercounts: the toolCalls bytes, real in the body, weigh nothing.
    let adr = Adr0098.tokens(&mut overflow.sent.iter(), &config);
    assert!(adr > content_only + 2 * 3 * 50, "{adr} vs {content_only}");

    // The pre-ADR compaction first acts at iteration 4, past 350 KiB of body:
    // three and a half times the api's limit.
    assert_eq!(first_compaction.iteration, 4);
    assert!(first_compaction.iteration > overflow.iteration);
    let before = body_bytes(&api, &first_compaction.before);
    assert!(before > 358_400, "{before}");
    // Every send in between is a 413.
    for s in &sends[overflow.iteration - 1..first_compaction.iteration - 1] {
        assert!(!s.compacted());
        assert!(body_bytes(&api, &s.sent) > 102_400);
    }
}

#[test]
fn with_four_results_the_pre_adr_gate_overflows_on_its_first_send() {
    let config = pre_adr();
    let (sends, _) = session(&pre_adr_compactor(), &config, |_| 4);
    let api = express();
    let overflow = sends
        .iter()
        .find(|s| body_bytes(&api, &s.sent) > 102_400)
        .unwrap();
    assert_eq!(overflow.iteration, 1);
    assert!(!overflow.compacted());
}

// ---------------------------------------------------------------------------
// After the ADR: the reference.

#[test]
fn the_reference_keeps_every_body_under_express_limit_for_60_iterations() {
    let config = express();
    let (sends, error) = session(&reference(), &config, |_| 3);
    if let Some((i, _, e)) = &error {
        panic!("iteration {i}: {e}");
    }
    assert_eq!(sends.len(), GATE_ITERATIONS);
    for s in &sends {
        let context = format!("iteration {}", s.iteration);
        let body = body_bytes(&config, &s.sent);
        assert!(body <= 102_400, "{context}: body {body}");
        // One 3 × 32 KiB iteration alone is over the trigger, so every send compacts.
        assert!(s.compacted(), "{context}");
        assert_no_cut_separates(&s.sent, &context);
        // The head is kept verbatim; the iteration just appended is sent whole.
        assert_eq!(s.sent[0], head()[0], "{context}");
        let last = iteration(s.iteration, 3);
        assert!(
            s.sent.ends_with(&last),
            "{context}: last iteration not verbatim"
        );
        // Nothing but the head, summaries and that iteration is left.
        let before_last = &s.sent[..s.sent.len() - last.len()];
        assert!(
            before_last.iter().all(|m| m.role == Role::System),
            "{context}: {:?}",
            before_last.iter().map(|m| m.role).collect::<Vec<_>>()
        );
    }
}

#[test]
fn the_reference_compacts_before_the_body_overflows_not_after() {
    // Smaller results (4 KiB, two per iteration): compaction can keep
    // `keepRecent` iterations, so cuts fall between multi-result iterations.
    let config = express();
    let mut history = head();
    let mut compactions = 0;
    for i in 1..=GATE_ITERATIONS {
        let mut it = iteration(i, 2);
        for m in it.iter_mut().skip(1) {
            let text = m.content.text()[..4096].to_owned();
            m.content = text.into();
        }
        history.extend(it);
        let sent = compact(&config, &history).unwrap();
        let context = format!("iteration {i}");
        assert!(body_bytes(&config, &sent) <= 102_400, "{context}");
        if sent != history {
            compactions += 1;
            assert!(
                Adr0098.tokens(&mut history.iter(), &config) > config.trigger(),
                "{context}: compacted under the trigger"
            );
        }
        check_well_formed(&sent).unwrap();
        // Two iterations kept after the head and the summaries.
        let tools: Vec<usize> = sent
            .iter()
            .filter(|m| m.role == Role::Tool)
            .filter_map(iteration_of)
            .collect();
        if sent != history {
            assert_eq!(tools, [i - 1, i - 1, i, i], "{context}");
        }
        history = sent;
    }
    assert!(compactions >= 5, "{compactions}");
}

#[test]
fn an_iteration_that_cannot_fit_alone_is_cannot_fit_with_the_bytes_needed() {
    let config = express();
    let mut h = head();
    h.extend(iteration(1, 4));
    let err = compact(&config, &h).unwrap_err();
    // Head (the leading system message) + the last iteration, no summary:
    // the user message is not part of what the contract must keep.
    let mut minimal = head()[..1].to_vec();
    minimal.extend(iteration(1, 4));
    let needed_body = body_bytes(&config, &minimal);
    assert!(needed_body > 102_400);
    assert_eq!(
        err,
        CompactError::CannotFit {
            needed: needed_body,
            ceiling: 102_400,
            images: Default::default(),
        }
    );
    assert_eq!(err.kind(), "cannot_fit");
}

#[test]
fn in_a_gate_session_only_the_four_result_iteration_is_cannot_fit() {
    let config = express();
    let (sends, error) = session(&reference(), &config, |i| if i == 7 { 4 } else { 3 });
    assert_eq!(sends.len(), 6);
    for s in &sends {
        assert!(body_bytes(&config, &s.sent) <= 102_400);
    }
    let (at, history, err) = error.expect("iteration 7 cannot fit");
    assert_eq!(at, 7);
    let CompactError::CannotFit {
        needed, ceiling, ..
    } = err
    else {
        panic!("{err}")
    };
    assert_eq!(ceiling, 102_400);
    assert!(needed > ceiling);
    // `needed` is the body of head + the last iteration (there is no pinned
    // message). The head is the leading run of system messages of the
    // history as it stands, up to the summary an earlier compaction placed
    // after it: that summary is replaced, not kept (see the regression
    // tests at the end).
    let head_n = history[..head_len(&history)]
        .iter()
        .take_while(|m| !m.content.text().starts_with(SUMMARY_PREFIX))
        .count();
    let mut minimal = history[..head_n].to_vec();
    minimal.extend(iteration(7, 4));
    assert_eq!(needed, body_bytes(&config, &minimal));
    // Even the system prompt alone with that iteration is over.
    let mut bare = head()[..1].to_vec();
    bare.extend(iteration(7, 4));
    assert!(body_bytes(&config, &bare) > ceiling);
}

#[test]
fn with_the_adr_limits_a_four_result_gate_runs_all_60_iterations() {
    // The decision: the api accepts 10mb, the engine's own ceiling is 8 MiB.
    let api_limit = 10 * 1024 * 1024;
    let config = Config::default();
    let (sends, error) = session(&reference(), &config, |_| 4);
    assert!(error.is_none());
    assert_eq!(sends.len(), GATE_ITERATIONS);
    for s in &sends {
        let body = body_bytes(&config, &s.sent);
        assert!(body <= config.transport_max_body_bytes && body < api_limit);
        // The trigger (89,600 tokens, 350 KiB) now bounds the body well under both.
        assert!(
            body < 4 * 102_400 + 4096,
            "iteration {}: {body}",
            s.iteration
        );
        assert_no_cut_separates(&s.sent, &format!("iteration {}", s.iteration));
    }
    // Three iterations of 4 × 8,192 tokens of results plus their calls pass
    // 89,600; two do not.
    let first = sends.iter().find(|s| s.compacted()).unwrap();
    assert_eq!(first.iteration, 3);
    assert!(Adr0098.tokens(&mut first.before.iter(), &config) > 89_600);
}

// ---------------------------------------------------------------------------
// Tool calls weigh.

#[test]
fn an_assistant_message_with_only_tool_calls_counts_under_adr_0098_only() {
    let config = Config::default();
    let m = &iteration(12, 3)[0];
    assert!(m.content.is_empty());
    // The JSON of the toolCalls array, built here from the SPEC's shape.
    let array: Vec<Value> = (0..3)
        .map(
            |k| json!({"id": format!("call_{k}"), "name": TOOLS[k], "arguments": arguments(12, k)}),
        )
        .collect();
    let json_len = serde_json::to_vec(&array).unwrap().len() as u64;
    assert!(json_len > 3 * 200, "{json_len}");
    let tokens = Adr0098.message_tokens(m, &config);
    assert!(tokens > 0);
    assert_eq!(tokens, json_len.div_ceil(4));
    assert_eq!(ContentOnly.message_tokens(m, &config), 0);

    // The same holds over a history: the difference is exactly the calls.
    let h = iteration(12, 3);
    let adr = Adr0098.tokens(&mut h.iter(), &config);
    let before = ContentOnly.tokens(&mut h.iter(), &config);
    assert_eq!(adr - before, json_len.div_ceil(4));
    assert_eq!(before, 3 * RESULT_BYTES as u64 / 4);
}

#[test]
fn no_cut_separates_an_assistant_message_from_its_results() {
    // Keep-recent 3 and varied result counts: cuts at many places.
    let config = Config {
        keep_recent: 3,
        ..express()
    };
    let mut history = head();
    for i in 1..=GATE_ITERATIONS {
        let n = 1 + i % 3;
        let mut it = iteration(i, n);
        for m in it.iter_mut().skip(1) {
            let len = 1024 * (1 + i % 5);
            let text = m.content.text()[..len].to_owned();
            m.content = text.into();
        }
        history.extend(it);
        let sent = compact(&config, &history).unwrap();
        let context = format!("iteration {i}");
        check_well_formed(&sent).unwrap_or_else(|e| panic!("{context}: {e}"));
        // Directly: every tool message's call is made by the assistant
        // message of its own iteration (ids repeat across iterations).
        let mut opener: Option<&Message> = None;
        for (j, m) in sent.iter().enumerate() {
            match m.role {
                Role::Tool => {
                    let a = opener.unwrap_or_else(|| panic!("{context}: orphan at {j}"));
                    let id = m.tool_call_id.as_deref().unwrap();
                    assert!(a.calls().iter().any(|c| c.id == id), "{context}: {j}");
                    assert_eq!(iteration_of(m), iteration_of(a), "{context}: {j}");
                }
                _ => opener = m.opens_iteration().then_some(m),
            }
        }
        // Every assistant message with calls keeps all its results.
        for (j, m) in sent.iter().enumerate() {
            if m.opens_iteration() {
                let n = m.calls().len();
                let run = sent[j + 1..]
                    .iter()
                    .take_while(|r| r.role == Role::Tool)
                    .count();
                assert_eq!(run, n, "{context}: message {j}");
            }
        }
        history = sent;
    }
}

// ---------------------------------------------------------------------------
// Regression tests for a defect these tests found in the reference (fixed
// in src/reference/mod.rs: a summary the summariser recognises as its own is
// not part of the head).
//
// The summary is a `role: system` message placed right after the head, so
// the next compaction counted it as part of the head (SPEC §4 step 2: the
// leading run of system messages), keeps it for ever and adds a new summary
// after it. Over a gate session the summaries pile up in the head — one per
// compaction — until they fill the room the last iteration leaves; from then
// on every new summary is dropped (step 5), and an iteration a few bytes
// larger than the previous ones is answered `cannot_fit` although it fits,
// with the system prompt and one summary, under the ceiling.

/// Summaries in a history, recognised by the default summariser's prefix.
fn summaries(msgs: &[Message]) -> usize {
    msgs.iter()
        .filter(|m| m.role == Role::System && m.content.text().starts_with(SUMMARY_PREFIX))
        .count()
}

#[test]
fn earlier_summaries_are_replaced_not_piled_up_in_the_head() {
    let config = express();
    let (sends, error) = session(&reference(), &config, |_| 3);
    assert!(error.is_none());
    let piled: Vec<usize> = sends.iter().map(|s| summaries(&s.sent)).collect();
    // SPEC §4 step 3: the earlier iterations are replaced by *one* summary.
    assert!(
        piled.iter().all(|&n| n <= 1),
        "summary messages in each of the 60 bodies: {piled:?}"
    );
}

#[test]
fn an_iteration_that_fits_with_the_system_prompt_is_not_cannot_fit() {
    let config = express();
    // Iteration 30 makes one more, small call (a 300-byte result).
    let make = |i: usize| {
        let mut it = iteration(i, 3);
        if i == 30 {
            it[0].tool_calls.as_mut().unwrap().push(ToolCall::new(
                "call_3",
                TOOLS[3],
                arguments(i, 3),
            ));
            it.push(Message::tool("call_3", result_text(i, 3)[..300].to_owned()));
        }
        it
    };
    // It fits, with the system prompt and room for a summary to spare.
    let mut alone = head()[..1].to_vec();
    alone.extend(make(30));
    let room = 102_400 - body_bytes(&config, &alone);
    assert!(room > 1_000, "{room}");
    let (sends, error) = session_of(&reference(), &config, make);
    if let Some((i, history, e)) = error {
        panic!(
            "iteration {i}: {e}; the head it kept holds {} summaries, while the system \
             prompt and this iteration leave {room} bytes to spare",
            summaries(&history[..head_len(&history)])
        );
    }
    assert_eq!(sends.len(), GATE_ITERATIONS);
}
