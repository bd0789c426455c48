//! The harness: runs a subject on a case, collects what the oracles need,
//! and asks them for verdicts. Data flows one way — case → subject →
//! observation → oracles → verdicts; shrinking and reports build on this.

use crate::body::body_bytes;
use crate::config::Config;
use crate::contract::{judge_estimate, minimal_body, minimal_output, Head, TriggerRange};
use crate::model::{check_well_formed, iterations, unanswered_calls, Message, ToolCall};
use crate::oracle::{
    check_with, Facts, Invariant, InvariantSet, Observation, SessionTurn, TurnOutcome, Verdict,
    Violation,
};
use crate::subject::{
    CompactAnswer, Fault, FaultKind, Reply, Request, Subject, CONTENT_PARTS_HINT,
};

/// How many iterations the simulated ToolLoop runs at most (the ADR's
/// ceiling for execution/gate agents).
pub const SESSION_MAX_ITERATIONS: usize = 60;

/// The outcome of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub verdicts: Vec<(Invariant, Verdict)>,
    /// A subject fault stops the case: the verdicts hold what was judged before.
    pub fault: Option<Fault>,
    /// The subject returned a history different from the input.
    pub compacted: bool,
    pub cannot_fit: bool,
    /// The input's exact body, in bytes.
    pub body: u64,
    /// The answer to `compact(input)`, when one was asked for and given
    /// (for behaviour measures: `baseline`).
    pub answer: Option<CompactAnswer>,
    /// The subject's `estimate(input)` in tokens, when it gave one.
    pub estimate: Option<u64>,
}

impl CaseResult {
    pub fn violations(&self) -> impl Iterator<Item = &Violation> {
        self.verdicts.iter().flat_map(|(_, v)| match v {
            Verdict::Fail(vs) => vs.as_slice(),
            _ => &[],
        })
    }

    /// The invariants that failed, in SPEC order.
    pub fn failed(&self) -> Vec<Invariant> {
        self.verdicts
            .iter()
            .filter(|(_, v)| v.is_fail())
            .map(|(i, _)| *i)
            .collect()
    }

    pub fn fails(&self, inv: Invariant) -> bool {
        self.verdicts.iter().any(|(i, v)| *i == inv && v.is_fail())
    }

    /// Whether a `cannot_fit` answer got a verdict from an invariant that
    /// judges refusals: `body-under-ceiling` (always), `progress` (one to a
    /// history that was due, by the subject's own terms), or
    /// `no-premature-compaction` (one where nothing was due).
    pub fn refusal_judged(&self) -> bool {
        self.verdicts.iter().any(|(i, v)| {
            matches!(
                i,
                Invariant::BodyUnderCeiling
                    | Invariant::Progress
                    | Invariant::NoPrematureCompaction
            ) && !matches!(v, Verdict::NotApplicable(_))
        })
    }

    pub fn ok(&self) -> bool {
        self.fault.is_none() && self.failed().is_empty()
    }
}

/// Run `subject` on one case and judge the invariants of `set` (narrowed to
/// what the subject claims).
pub fn run_case(
    subject: &mut dyn Subject,
    config: &Config,
    input: &[Message],
    set: InvariantSet,
) -> CaseResult {
    let set = set.intersect(subject.info().claimed());
    judge_case(subject, config, input, set)
}

/// Run `subject` on one case and judge every invariant of `set`, whether
/// the subject claims it or not: what an exploration beyond the claims
/// (`check --claim`) runs. The caller leaves out what the subject cannot be
/// judged on (`SubjectInfo::unjudgeable`).
pub fn judge_case(
    subject: &mut dyn Subject,
    config: &Config,
    input: &[Message],
    set: InvariantSet,
) -> CaseResult {
    // Judged on the history as the subject is sent it: without the
    // spellings engine messages cannot carry, and, to a subject that
    // speaks `openai`, with its tool results' images in user messages
    // after them (where that format carries them).
    let as_sent;
    let forget = !subject.sees_spellings() && crate::model::has_spellings(input);
    let carry = subject.info().format == crate::model::WireFormat::Openai
        && crate::model::openai::has_tool_images(input);
    let input = if forget || carry {
        as_sent = {
            let mut msgs = if carry {
                crate::model::openai::carry_tool_images(input)
            } else {
                input.to_vec()
            };
            if forget {
                crate::model::forget_spellings(&mut msgs);
            }
            msgs
        };
        &as_sent[..]
    } else {
        input
    };
    let facts = Facts::of(config, input);
    let mut obs = Observation::default();
    let mut result = CaseResult {
        verdicts: Vec::new(),
        fault: None,
        compacted: false,
        cannot_fit: false,
        body: facts.body,
        answer: None,
        estimate: None,
    };
    if let Err(mut fault) = observe(subject, config, input, facts.well_formed, set, &mut obs) {
        let its_own = !matches!(fault.kind, FaultKind::Spawn | FaultKind::Stopped);
        if its_own && subject.info().undeclared_parts(input) {
            fault.detail = format!("{} — {CONTENT_PARTS_HINT}", fault.detail);
        }
        result.fault = Some(fault);
        obs.faulted = true;
    }
    if let Some(answer) = &obs.answer {
        result.compacted = answer.messages().is_some_and(|o| o != input);
        result.cannot_fit = matches!(answer, CompactAnswer::CannotFit { .. });
    }
    // A subject that estimates is timed by its own count (SPEC §6).
    let own = obs
        .estimate
        .as_ref()
        .and_then(|e| e.tokens())
        .map(|e| e.tokens);
    let facts = facts.timed_by(own, subject.info().compact_at);
    result.verdicts = check_with(&facts, &obs, &set);
    result.estimate = obs
        .estimate
        .as_ref()
        .and_then(|e| e.tokens())
        .map(|e| e.tokens);
    result.answer = obs.answer.take();
    result
}

fn observe(
    subject: &mut dyn Subject,
    config: &Config,
    input: &[Message],
    well_formed: bool,
    set: InvariantSet,
    obs: &mut Observation,
) -> Result<(), Fault> {
    // What does not depend on an answer goes out in one batch, which a
    // process subject pipelines: compact, compact again (deterministic),
    // estimate, estimate of the longer history (estimate-monotone).
    let needs_compact = set.iter().any(|i| !i.needs_estimate());
    let twice = needs_compact && set.contains(Invariant::Deterministic);
    // The subject's estimate also times `no-premature-compaction`,
    // `progress` and `trims-when-due` (SPEC §6).
    let timed = Invariant::TIMED.iter().any(|i| set.contains(*i));
    let estimates =
        subject.info().estimates && (timed || set.iter().any(Invariant::needs_estimate));
    let monotone = estimates && set.contains(Invariant::EstimateMonotone);
    let appended = monotone.then(|| appended_message(input));
    let longer: Vec<Message> = match &appended {
        Some(m) => {
            let mut l = input.to_vec();
            l.push(m.clone());
            debug_assert!(
                !well_formed || check_well_formed(&l).is_ok(),
                "the harness made an ill-formed history: {:?}",
                check_well_formed(&l)
            );
            l
        }
        None => Vec::new(),
    };
    // The ToolLoop's first turn that needs the subject has a history of
    // the case's own first messages, known now: it goes out with the rest.
    let session = (set.contains(Invariant::SessionNeverOverflows) && well_formed)
        .then(|| SessionStart::of(config, input));
    let early = session
        .as_ref()
        .and_then(SessionStart::first_due)
        .filter(|&len| len < input.len());
    let mut batch = Vec::with_capacity(5);
    // First, so that the whole history is that one and messages more: a
    // subject that knows what it just read (`ctxgate serve`) reads only
    // those, and the harness writes only theirs.
    if let Some(len) = early {
        batch.push(Request::Compact(config, &input[..len]));
    }
    if needs_compact {
        batch.push(Request::Compact(config, input));
    }
    if twice {
        batch.push(Request::Compact(config, input));
    }
    if estimates {
        batch.push(Request::Estimate(config, input));
    }
    if monotone {
        batch.push(Request::Estimate(config, &longer));
    }
    let mut replies = subject.batch(&batch)?.into_iter();
    let first = early.and_then(|_| replies.next().and_then(Reply::into_compact));
    if needs_compact {
        obs.answer = replies.next().and_then(Reply::into_compact);
    }
    if twice {
        obs.second = replies.next().and_then(Reply::into_compact);
    }
    if estimates {
        obs.estimate = replies.next().and_then(Reply::into_estimate);
    }
    if let Some(m) = appended {
        obs.estimate_appended = replies
            .next()
            .and_then(Reply::into_estimate)
            .map(|e| (e, m));
    }
    // `progress` by the subject's count: its estimate of what it returned,
    // when that is not the input (whose estimate it gave already).
    if estimates && set.contains(Invariant::Progress) {
        if let Some(CompactAnswer::Messages(o)) = &obs.answer {
            if o != input {
                obs.output_estimate = subject.estimate(config, o)?.tokens().map(|e| e.tokens);
            }
        }
    }
    // A refusal, by the subject's count: its estimate of the minimal
    // output, which `progress` accepts as an answer (contract-notes 42).
    if estimates && well_formed && set.contains(Invariant::Progress) {
        if let Some(CompactAnswer::CannotFit { .. }) = &obs.answer {
            let minimal = minimal_output(input, Head::of(input).literal);
            obs.minimal_estimate = subject
                .estimate(config, &minimal)?
                .tokens()
                .map(|e| e.tokens);
        }
    }
    // An answer already given to the same request, by a subject that gave
    // it twice alike: not asked a third time.
    let known = match (&obs.answer, &obs.second) {
        (Some(a), Some(b)) if a == b => Some(a.clone()),
        _ => None,
    };
    // The output compacted again (idempotent): sent with the ToolLoop's
    // next turn when there is one.
    let mut again = None;
    if set.contains(Invariant::Idempotent) {
        // An ill-formed output is tool-pairing's finding; sending it
        // back would only earn a justified invalid_input.
        if let Some(CompactAnswer::Messages(o)) = &obs.answer {
            if known.is_some() && o == input {
                obs.recompacted = known.clone();
            } else if check_well_formed(o).is_ok() {
                again = Some(o.as_slice());
            }
        }
    }
    match &session {
        Some(start) => {
            let answers = Answers {
                whole: known.as_ref(),
                first,
                again,
            };
            let (turns, recompacted) = run_session(subject, config, input, start, answers)?;
            obs.session = Some(turns);
            if again.is_some() {
                obs.recompacted = recompacted;
            }
        }
        None => {
            if let Some(o) = again {
                obs.recompacted = Some(subject.compact(config, o)?);
            }
        }
    }
    Ok(())
}

/// The message appended for `estimate-monotone`, chosen so that a
/// well-formed history stays well formed: the answer to a call the last
/// iteration left pending, or else a new assistant turn that makes one call
/// (a pending call as the history's end is well formed, SPEC §1.2).
pub fn appended_message(input: &[Message]) -> Message {
    let pending = iterations(input).last().and_then(|r| {
        unanswered_calls(input, r.clone())
            .first()
            .map(|id| id.to_string())
    });
    match pending {
        Some(id) => Message::tool(id, "approved"),
        None => Message::assistant_calls(
            "checking",
            vec![ToolCall::new(
                "ctxgate_appended",
                "read_file",
                serde_json::json!({"path": "apps/api/src/main.ts"}),
            )],
        ),
    }
}

/// A ToolLoop replayed from the case: start from the head, append the
/// case's iterations one at a time (up to 60), compact before each send,
/// carry the compacted history into the next turn. Every history sent is
/// well formed: when a compacted history would not make one with the next
/// iteration (the subject broke its pairing, which `tool-pairing` judges),
/// the loop ends there.
///
/// A turn whose answer is known is not sent: while the history is still the
/// conversation itself and nothing is due under any trigger a conforming
/// compactor may compute (`contract::TriggerRange`), the answer is the
/// history, unchanged — what `no-premature-compaction` requires, and checks
/// on the case itself — and its body is under the ceiling; and a turn
/// whose history is the whole case gets `answered`, the answer the subject
/// already gave to it (twice alike), when there is one. The loop sends what
/// only the subject can say: the turns from the first one that is due.
///
/// A `cannot_fit` turn is justified when the minimal output is over the
/// ceiling — counting only messages of the conversation itself: the
/// conversation's own minimal output (its head, pinned iterations and the
/// iteration just appended), or the carried history's without the messages
/// the subject wrote. A system message of the conversation that compaction
/// moved into the head counts; a compactor whose own summaries pile up in
/// its head, turn after turn, gives up on a conversation that fits.
///
/// When the subject has a live endpoint (`Subject::transport`), every body
/// sent, known answers included, also goes to it, and the endpoint's
/// answer is kept with the turn for the oracle.
pub fn simulate_session(
    subject: &mut dyn Subject,
    config: &Config,
    input: &[Message],
    answered: Option<&CompactAnswer>,
) -> Result<Vec<SessionTurn>, Fault> {
    let start = SessionStart::of(config, input);
    let answers = Answers {
        whole: answered,
        first: None,
        again: None,
    };
    Ok(run_session(subject, config, input, &start, answers)?.0)
}

/// The turns of a case's ToolLoop that need no answer (see
/// [`simulate_session`]): each the case's own history so far, with
/// nothing due under any trigger; the turn after them is the first the
/// subject is asked.
pub struct SessionStart {
    /// The literal head's length; the iterations after it (up to 60).
    head: usize,
    ranges: Vec<std::ops::Range<usize>>,
    /// The bodies of the first turns, sent as they are.
    quiet: Vec<u64>,
}

impl SessionStart {
    pub fn of(config: &Config, input: &[Message]) -> SessionStart {
        let head = Head::of(input).literal;
        let ranges: Vec<_> = iterations(&input[head..])
            .into_iter()
            .take(SESSION_MAX_ITERATIONS)
            .collect();
        let trigger = TriggerRange::of(config);
        let mut quiet = Vec::new();
        for range in &ranges {
            let history = &input[..range.end + head];
            let body = body_bytes(config, history);
            if !trigger.nothing_due(config, judge_estimate(config, history), body) {
                break;
            }
            quiet.push(body);
        }
        SessionStart {
            head,
            ranges,
            quiet,
        }
    }

    /// The length of the first history the subject is asked to compact,
    /// a prefix of the case (none: the loop ends before one is due).
    pub fn first_due(&self) -> Option<usize> {
        self.ranges
            .get(self.quiet.len())
            .map(|range| range.end + self.head)
    }
}

/// Answers a ToolLoop starts with, and what it asks along with its turns.
struct Answers<'a> {
    /// The subject's answer (given twice alike) to the whole case.
    whole: Option<&'a CompactAnswer>,
    /// Its answer to the first turn it is asked, when asked already.
    first: Option<CompactAnswer>,
    /// A history to compact along with the first turn asked from here on
    /// (the output again, for `idempotent`); its answer is returned.
    again: Option<&'a [Message]>,
}

fn run_session(
    subject: &mut dyn Subject,
    config: &Config,
    input: &[Message],
    start: &SessionStart,
    mut answers: Answers<'_>,
) -> Result<(Vec<SessionTurn>, Option<CompactAnswer>), Fault> {
    let head = start.head;
    let mut turns = Vec::new();
    for (n, &body) in start.quiet.iter().enumerate() {
        let sent = &input[..start.ranges[n].end + head];
        turns.push(SessionTurn {
            turn: n + 1,
            history_len: sent.len(),
            outcome: TurnOutcome::Sent {
                body,
                minimal: None,
            },
            delivery: deliver(subject, config, sent, body),
        });
    }
    let mut again = None;
    let first = start.quiet.len();
    if let Some(range) = start.ranges.get(first) {
        let mut history: Vec<Message> = input[..range.start + head].to_vec();
        // While the subject hands the history back unchanged, it is a
        // prefix of the (well-formed) input and needs no check.
        let mut carried_unchanged = true;
        let trigger = TriggerRange::of(config);
        for (n, range) in start.ranges.iter().enumerate().skip(first) {
            history.extend_from_slice(&input[range.start + head..range.end + head]);
            if !carried_unchanged && check_well_formed(&history).is_err() {
                break;
            }
            if carried_unchanged && n > first {
                let body = body_bytes(config, &history);
                if trigger.nothing_due(config, judge_estimate(config, &history), body) {
                    turns.push(SessionTurn {
                        turn: n + 1,
                        history_len: history.len(),
                        outcome: TurnOutcome::Sent {
                            body,
                            minimal: None,
                        },
                        delivery: deliver(subject, config, &history, body),
                    });
                    continue;
                }
            }
            let whole = carried_unchanged && history.len() == input.len();
            let answer = match (n == first).then(|| answers.first.take()).flatten() {
                Some(a) => a,
                None => match answers.whole.filter(|_| whole) {
                    Some(a) => a.clone(),
                    None => ask(subject, config, &history, &mut answers.again, &mut again)?,
                },
            };
            let mut delivery = None;
            let outcome = match answer {
                CompactAnswer::Messages(o) => {
                    let body = body_bytes(config, &o);
                    carried_unchanged &= o == history;
                    history = o;
                    delivery = deliver(subject, config, &history, body);
                    // Over the ceiling: what a correct compactor would have
                    // done depends on the smallest output (the oracle says).
                    let minimal = (body > config.transport_max_body_bytes)
                        .then(|| minimal_body(config, &input[..range.end + head]));
                    TurnOutcome::Sent { body, minimal }
                }
                CompactAnswer::CannotFit { .. } => {
                    let conversation = &input[..range.end + head];
                    let carried: Vec<Message> =
                        minimal_output(&history, Head::of(&history).literal)
                            .into_iter()
                            .filter(|m| conversation.contains(m))
                            .collect();
                    TurnOutcome::CannotFit {
                        minimal: minimal_body(config, conversation)
                            .max(body_bytes(config, &carried)),
                    }
                }
                CompactAnswer::InvalidInput { message } => TurnOutcome::InvalidInput { message },
            };
            let stop = !matches!(outcome, TurnOutcome::Sent { .. });
            turns.push(SessionTurn {
                turn: n + 1,
                history_len: history.len(),
                outcome,
                delivery,
            });
            if stop {
                break;
            }
        }
    }
    if let Some(o) = answers.again {
        again = Some(subject.compact(config, o)?);
    }
    Ok((turns, again))
}

/// Ask the subject to compact `history`, and `also` (once) in the same
/// batch, before it: its answer goes to `got`.
fn ask(
    subject: &mut dyn Subject,
    config: &Config,
    history: &[Message],
    also: &mut Option<&[Message]>,
    got: &mut Option<CompactAnswer>,
) -> Result<CompactAnswer, Fault> {
    let Some(other) = also.take() else {
        return subject.compact(config, history);
    };
    let mut replies = subject
        .batch(&[
            Request::Compact(config, other),
            Request::Compact(config, history),
        ])?
        .into_iter();
    *got = replies.next().and_then(Reply::into_compact);
    replies.next().and_then(Reply::into_compact).ok_or_else(|| {
        Fault::new(
            crate::subject::FaultKind::Protocol,
            "no answer to a compact request",
        )
    })
}

/// A body the ToolLoop sends, also sent to the subject's live endpoint
/// when it has one (`check --transport`).
fn deliver(
    subject: &mut dyn Subject,
    config: &Config,
    sent: &[Message],
    body: u64,
) -> Option<crate::transport::Delivery> {
    subject
        .transport()
        .and_then(|t| t.deliver(config, sent, body))
}
