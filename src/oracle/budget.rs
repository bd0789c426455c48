//! The size invariants: `body-under-ceiling`, `no-premature-compaction`,
//! `progress`, `estimate-covers-tool-calls`, `estimate-monotone`. The ADR's
//! two ends — the estimator that counted only `content`, the window that
//! ignored the transport — are caught here.

use std::collections::HashSet;

use super::{CompactAnswer, Invariant, Verdict, Violation};
use crate::body::body_bytes;
use crate::config::Config;
use crate::estimate::{tool_call_tokens, Adr0098, Estimator};
use crate::model::{check_well_formed, head_len, iterations, Message};

/// What a subject answered to `estimate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EstimateAnswer {
    pub tokens: u64,
    pub per_message: Option<Vec<u64>>,
}

/// The harness's estimate of a history: the `adr-0098` estimator.
pub fn judge_estimate(config: &Config, msgs: &[Message]) -> u64 {
    Adr0098.tokens(&mut msgs.iter(), config)
}

/// True when compaction is due: over the trigger or over the ceiling.
pub fn compaction_due(config: &Config, msgs: &[Message]) -> bool {
    judge_estimate(config, msgs) > config.trigger()
        || body_bytes(config, msgs) > config.transport_max_body_bytes
}

/// The smallest output SPEC §4 allows: head + pinned iterations + the last
/// iteration, no summary.
pub fn minimal_output(input: &[Message]) -> Vec<Message> {
    let head = head_len(input);
    let iters = iterations(&input[head..]);
    let mut out: Vec<Message> = input[..head].to_vec();
    if let Some((last, rest)) = iters.split_last() {
        for r in rest {
            let r = r.start + head..r.end + head;
            if input[r.clone()].iter().any(Message::is_pinned) {
                out.extend_from_slice(&input[r]);
            }
        }
        out.extend_from_slice(&input[last.start + head..last.end + head]);
    }
    out
}

/// The body is never over the ceiling; `cannot_fit` only when the minimal
/// output is itself over it; `invalid_input` only for input that is not
/// well formed.
pub fn body_under_ceiling(
    config: &Config,
    input: &[Message],
    answer: &CompactAnswer,
) -> Vec<Violation> {
    let inv = Invariant::BodyUnderCeiling;
    let ceiling = config.transport_max_body_bytes;
    match answer {
        CompactAnswer::Messages(o) => {
            let body = body_bytes(config, o);
            if body > ceiling {
                vec![Violation::new(
                    inv,
                    format!("the compacted body is {body} bytes, {} over the ceiling", body - ceiling),
                )
                .number("body", body)
                .number("ceiling", ceiling)]
            } else {
                vec![]
            }
        }
        CompactAnswer::CannotFit { message } => {
            let minimal = body_bytes(config, &minimal_output(input));
            if minimal > ceiling {
                vec![]
            } else {
                vec![Violation::new(
                    inv,
                    format!("answered cannot_fit ({message}), but head + pinned + last iteration is {minimal} bytes, under the ceiling"),
                )
                .number("minimal", minimal)
                .number("ceiling", ceiling)]
            }
        }
        CompactAnswer::InvalidInput { message } => match check_well_formed(input) {
            Err(_) => vec![],
            Ok(()) => vec![Violation::new(
                inv,
                format!("answered invalid_input ({message}) to a well-formed history: no body was produced"),
            )],
        },
    }
}

/// Under the trigger and under the ceiling, the output is the input.
pub fn no_premature_compaction(
    config: &Config,
    input: &[Message],
    answer: &CompactAnswer,
) -> Verdict {
    let inv = Invariant::NoPrematureCompaction;
    if matches!(answer, CompactAnswer::InvalidInput { .. }) && check_well_formed(input).is_err() {
        // The right answer to an ill-formed history (body-under-ceiling judges it).
        return Verdict::NotApplicable("the input is not well formed");
    }
    let estimate = judge_estimate(config, input);
    let body = body_bytes(config, input);
    let (trigger, ceiling) = (config.trigger(), config.transport_max_body_bytes);
    if estimate > trigger || body > ceiling {
        return Verdict::NotApplicable("compaction was due");
    }
    let changed_at = match answer {
        CompactAnswer::Messages(o) => match super::repeat::first_difference(input, o) {
            None => return Verdict::Pass,
            Some(i) => format!(
                "changed the history at message {i} ({} → {} messages)",
                input.len(),
                o.len()
            ),
        },
        other => format!("answered {}", other.describe()),
    };
    Verdict::Fail(vec![Violation::new(
        inv,
        format!("nothing was due (estimate {estimate} ≤ trigger {trigger}, body {body} ≤ ceiling {ceiling}), yet the subject {changed_at}"),
    )
    .number("estimate", estimate)
    .number("trigger", trigger)
    .number("body", body)
    .number("ceiling", ceiling)])
}

/// After a compaction (one that was due), the estimate is under the
/// trigger, unless the output is down to head + pinned + summary + last
/// iteration. Returning the input unchanged when compaction was due is a
/// failure of progress too.
pub fn progress(config: &Config, input: &[Message], answer: &CompactAnswer) -> Verdict {
    let inv = Invariant::Progress;
    let Some(o) = answer.messages() else {
        return Verdict::NotApplicable("the subject answered with an error");
    };
    if !compaction_due(config, input) {
        return Verdict::NotApplicable("compaction was not due");
    }
    let estimate = judge_estimate(config, o);
    let trigger = config.trigger();
    if estimate <= trigger || is_minimal_form(input, o) {
        return Verdict::Pass;
    }
    Verdict::Fail(vec![Violation::new(
        inv,
        format!(
            "after compaction the estimate is {estimate} tokens, over the trigger {trigger}, and the output ({} of {} messages) keeps more than head + pinned + summary + last iteration",
            o.len(),
            input.len()
        ),
    )
    .number("estimate", estimate)
    .number("trigger", trigger)
    .number("input estimate", judge_estimate(config, input))])
}

/// `o` is head + messages of pinned iterations + at most one new message +
/// the last iteration of `input`.
fn is_minimal_form(input: &[Message], o: &[Message]) -> bool {
    let head = head_len(input);
    let iters = iterations(&input[head..]);
    let Some(last) = iters.last() else {
        return o == input;
    };
    let last = &input[last.start + head..];
    if o.len() < head + last.len()
        || o[..head] != input[..head]
        || o[o.len() - last.len()..] != *last
    {
        return false;
    }
    let pinned: Vec<&Message> = iterations(&input[head..])
        .into_iter()
        .map(|r| &input[r.start + head..r.end + head])
        .filter(|it| it.iter().any(Message::is_pinned))
        .flatten()
        .collect();
    let mut new = 0;
    for m in &o[head..o.len() - last.len()] {
        if !pinned.contains(&m) {
            new += 1;
        }
    }
    new <= 1
}

/// The estimate is never below Σ tokens(JSON of toolCalls), in total and,
/// where the subject reports per-message figures, per message.
pub fn estimate_covers_tool_calls(
    config: &Config,
    input: &[Message],
    est: &EstimateAnswer,
) -> Vec<Violation> {
    let inv = Invariant::EstimateCoversToolCalls;
    let bpt = config.bytes_per_token;
    let floor: u64 = input.iter().map(|m| tool_call_tokens(m, bpt)).sum();
    let mut out = Vec::new();
    if est.tokens < floor {
        out.push(
            Violation::new(
                inv,
                format!(
                    "the estimate is {} tokens, below the {floor} tokens of the serialised toolCalls alone",
                    est.tokens
                ),
            )
            .number("estimate", est.tokens)
            .number("toolCalls tokens", floor),
        );
    }
    if let Some(per) = &est.per_message {
        if per.len() != input.len() {
            out.push(Violation::new(
                inv,
                format!(
                    "perMessage has {} figures for {} messages",
                    per.len(),
                    input.len()
                ),
            ));
        } else {
            let mut seen = HashSet::new();
            for (i, (m, &t)) in input.iter().zip(per).enumerate() {
                let need = tool_call_tokens(m, bpt);
                if t < need && seen.insert(i) {
                    let mut v = Violation::new(
                        inv,
                        format!("message {i} is estimated at {t} tokens, below the {need} tokens of its toolCalls"),
                    )
                    .message(i)
                    .number("estimate", t)
                    .number("toolCalls tokens", need);
                    for c in m.calls() {
                        v = v.id(c.id.clone());
                    }
                    out.push(v);
                }
            }
        }
    }
    out
}

/// Appending a message never lowers the estimate.
pub fn estimate_monotone(before: &EstimateAnswer, after: &EstimateAnswer) -> Vec<Violation> {
    if after.tokens >= before.tokens {
        return vec![];
    }
    vec![Violation::new(
        Invariant::EstimateMonotone,
        format!(
            "appending a message lowered the estimate from {} to {} tokens",
            before.tokens, after.tokens
        ),
    )
    .number("before", before.tokens)
    .number("after", after.tokens)]
}
