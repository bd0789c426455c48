//! Oracles: given a case and what a subject answered, decide whether an
//! invariant of SPEC §5 was broken. Pure functions of values — an oracle
//! never runs a subject; the harness collects the answers (a second run for
//! `deterministic`, a re-compaction for `idempotent`, a simulated ToolLoop
//! for `session-never-overflows`) and hands them over.
//!
//! Every violation is a value naming the invariant, the message indexes and
//! call ids involved, and the numbers (bytes, tokens, ceiling, trigger):
//! never a bare bool. The same oracles serve in-process subjects, external
//! subjects, fuzz targets and fixtures.
//!
//! The harness judges sizes with its own yardsticks: the exact body size of
//! SPEC §2 and the `adr-0098` estimator of SPEC §3, whatever the subject
//! uses internally.

mod budget;
mod invariant;
mod pairing;
mod repeat;
mod session;
mod shape;

use std::fmt;

pub use budget::{
    body_under_ceiling, compaction_due, estimate_covers_tool_calls, estimate_monotone,
    judge_estimate, minimal_output, no_premature_compaction, progress, EstimateAnswer,
};
pub use invariant::{Invariant, InvariantSet};
pub use pairing::tool_pairing;
pub use repeat::{deterministic, idempotent};
pub use session::{session_never_overflows, SessionTurn, TurnOutcome};
pub use shape::{order_preserved, pinned_kept, single_bounded_summary, verbatim_suffix};

use crate::config::Config;
use crate::model::Message;

/// What a subject answered to `compact`: a history, or one of the two
/// error kinds the protocol accepts as answers (SPEC §6).
#[derive(Debug, Clone, PartialEq)]
pub enum CompactAnswer {
    Messages(Vec<Message>),
    CannotFit { message: String },
    InvalidInput { message: String },
}

impl CompactAnswer {
    pub fn messages(&self) -> Option<&[Message]> {
        match self {
            CompactAnswer::Messages(m) => Some(m),
            _ => None,
        }
    }

    /// A short description for reports.
    pub fn describe(&self) -> String {
        match self {
            CompactAnswer::Messages(m) => format!("{} messages", m.len()),
            CompactAnswer::CannotFit { message } => format!("cannot_fit: {message}"),
            CompactAnswer::InvalidInput { message } => format!("invalid_input: {message}"),
        }
    }
}

/// One broken invariant, with what a person needs to see why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub invariant: Invariant,
    /// Indexes of the messages involved. Which history they index is said
    /// in `detail` ("input" or "output").
    pub messages: Vec<usize>,
    /// Tool-call ids involved.
    pub ids: Vec<String>,
    /// Named figures: bytes, tokens, ceiling, trigger…
    pub numbers: Vec<(&'static str, u64)>,
    /// One sentence: what should have held and what was seen.
    pub detail: String,
}

impl Violation {
    pub fn new(invariant: Invariant, detail: impl Into<String>) -> Self {
        Violation {
            invariant,
            messages: Vec::new(),
            ids: Vec::new(),
            numbers: Vec::new(),
            detail: detail.into(),
        }
    }

    pub fn message(mut self, index: usize) -> Self {
        self.messages.push(index);
        self
    }

    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.ids.push(id.into());
        self
    }

    pub fn number(mut self, name: &'static str, value: u64) -> Self {
        self.numbers.push((name, value));
        self
    }

    pub fn to_json(&self) -> serde_json::Value {
        let numbers: serde_json::Map<String, serde_json::Value> = self
            .numbers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).into()))
            .collect();
        serde_json::json!({
            "invariant": self.invariant.name(),
            "messages": self.messages,
            "ids": self.ids,
            "numbers": numbers,
            "detail": self.detail,
        })
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.invariant, self.detail)?;
        if !self.numbers.is_empty() {
            let parts: Vec<String> = self
                .numbers
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            write!(f, " [{}]", parts.join(", "))?;
        }
        Ok(())
    }
}

/// The verdict of one invariant on one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail(Vec<Violation>),
    /// The invariant does not apply (the subject lacks the op, the answer
    /// was an error, no compaction happened…), with the reason.
    NotApplicable(&'static str),
}

impl Verdict {
    /// `Pass` for no violations, `Fail` otherwise.
    pub fn from_violations(v: Vec<Violation>) -> Verdict {
        if v.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail(v)
        }
    }

    pub fn is_fail(&self) -> bool {
        matches!(self, Verdict::Fail(_))
    }
}

/// Everything the harness observed of a subject on one case.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// The answer to `compact(input)`.
    pub answer: Option<CompactAnswer>,
    /// The answer to the same request sent again.
    pub second: Option<CompactAnswer>,
    /// The answer to `compact(output)`.
    pub recompacted: Option<CompactAnswer>,
    /// `estimate(input)`, when the subject implements it.
    pub estimate: Option<EstimateAnswer>,
    /// `estimate(input + appended)` and the appended message.
    pub estimate_appended: Option<(EstimateAnswer, Message)>,
    /// The simulated ToolLoop, turn by turn.
    pub session: Option<Vec<SessionTurn>>,
}

/// Judge every invariant in `set` on one case and what was observed.
pub fn check_all(
    config: &Config,
    input: &[Message],
    obs: &Observation,
    set: &InvariantSet,
) -> Vec<(Invariant, Verdict)> {
    set.iter()
        .map(|inv| (inv, check_one(inv, config, input, obs)))
        .collect()
}

/// Judge one invariant.
pub fn check_one(inv: Invariant, config: &Config, input: &[Message], obs: &Observation) -> Verdict {
    use Invariant::*;
    // The estimate invariants need no compaction answer.
    if inv.needs_estimate() {
        let Some(e) = &obs.estimate else {
            return Verdict::NotApplicable("the subject does not estimate");
        };
        return match inv {
            EstimateCoversToolCalls => {
                Verdict::from_violations(estimate_covers_tool_calls(config, input, e))
            }
            EstimateMonotone => match &obs.estimate_appended {
                Some((b, _)) => Verdict::from_violations(estimate_monotone(e, b)),
                None => Verdict::NotApplicable("no estimate of the longer history"),
            },
            _ => real_tokens(input, e),
        };
    }
    let Some(answer) = obs.answer.as_ref() else {
        return Verdict::NotApplicable("the subject was not asked to compact");
    };
    let out = answer.messages();
    let with_output = |f: &dyn Fn(&[Message]) -> Vec<Violation>| match out {
        Some(o) => Verdict::from_violations(f(o)),
        None => Verdict::NotApplicable("the subject answered with an error"),
    };
    match inv {
        ToolPairing => with_output(&|o| tool_pairing(input, o)),
        BodyUnderCeiling => Verdict::from_violations(body_under_ceiling(config, input, answer)),
        NoPrematureCompaction => no_premature_compaction(config, input, answer),
        Progress => progress(config, input, answer),
        VerbatimSuffix => with_output(&|o| verbatim_suffix(input, o)),
        OrderPreserved => with_output(&|o| order_preserved(input, o)),
        PinnedKept => with_output(&|o| pinned_kept(input, o)),
        SingleBoundedSummary => with_output(&|o| single_bounded_summary(config, input, o)),
        Deterministic => match &obs.second {
            Some(second) => Verdict::from_violations(deterministic(answer, second)),
            None => Verdict::NotApplicable("no second run"),
        },
        Idempotent => match (out, &obs.recompacted) {
            (Some(o), Some(again)) => Verdict::from_violations(idempotent(o, again)),
            (None, _) => Verdict::NotApplicable("the subject answered with an error"),
            (_, None) => Verdict::NotApplicable("no re-compaction"),
        },
        SessionNeverOverflows => match &obs.session {
            Some(turns) => Verdict::from_violations(session_never_overflows(config, turns)),
            None => Verdict::NotApplicable("no session was simulated"),
        },
        EstimateCoversToolCalls | EstimateMonotone | EstimateCoversRealTokens => {
            unreachable!("judged above")
        }
    }
}

/// `estimate-covers-real-tokens`: the subject's total against cl100k_base
/// and o200k_base. Totals only: a class-wise estimator bounds a history,
/// not every short message (see docs/calibration.md).
#[cfg(feature = "calibrate")]
fn real_tokens(input: &[Message], e: &EstimateAnswer) -> Verdict {
    use crate::calibrate::{estimate_covers_real_tokens, Encoding};
    let shortfalls = estimate_covers_real_tokens(input, e.tokens, None, &Encoding::ALL);
    Verdict::from_violations(
        shortfalls
            .into_iter()
            .map(|s| {
                let mut v = Violation::new(Invariant::EstimateCoversRealTokens, s.to_string())
                    .number("estimate", s.estimate)
                    .number("real", s.real);
                if let Some(i) = s.message {
                    v = v.message(i);
                }
                v
            })
            .collect(),
    )
}

#[cfg(not(feature = "calibrate"))]
fn real_tokens(_input: &[Message], _e: &EstimateAnswer) -> Verdict {
    Verdict::NotApplicable("ctxgate was built without the calibrate feature")
}
