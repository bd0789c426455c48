//! Oracles: given a case and what a subject answered, decide whether an
//! invariant of SPEC §5 was broken. Pure functions of values — an oracle
//! never runs a subject; the harness collects the answers (a second run for
//! `deterministic`, a re-compaction for `idempotent`, a simulated ToolLoop
//! for `session-never-overflows`) and hands them over as an [`Observation`].
//!
//! Every verdict is one of three: [`Verdict::Pass`], [`Verdict::Fail`] with
//! violations that name the invariant, the message indexes and call ids
//! involved, and the numbers (bytes, tokens, ceiling, trigger); or
//! [`Verdict::NotApplicable`] with the reason, which a run counts so that
//! one that exercised nothing never passes.
//!
//! The oracles' contract:
//!
//! - **Equality is by JSON value** (SPEC §5, `model::value`): a subject
//!   whose JSON library writes `653.50` back as `653.5` changed nothing.
//!   Where a summary equals an input message by value, the shape oracles
//!   look for an alignment that holds rather than failing the first greedy
//!   match.
//! - **The harness's own yardsticks**: the exact body size of SPEC §2 and
//!   the `adr-0098` estimator of SPEC §3, whatever the subject uses
//!   internally — except when compaction was due: a subject that answers
//!   `estimate` is timed by its own count, against the point it declared
//!   (SPEC §6, [`Facts::timed_by`]), while the estimate invariants keep
//!   that count from dodging by being low; the words of the contract (compaction due, the head, the
//!   minimal output, the trigger's rounding) come from `contract`, and where
//!   the contract admits two readings, an oracle accepts both.
//! - **Refusing a well-formed history is a finding.** `invalid_input` to a
//!   well-formed history fails every invariant judged on that answer, for
//!   `compact` and `estimate` alike; to an ill-formed one it is the right
//!   answer (`body-under-ceiling` passes it, the rest do not apply).

mod budget;
mod pairing;
#[cfg(feature = "calibrate")]
pub mod real_tokens;
mod repeat;
mod session;
mod shape;

use std::borrow::Cow;
use std::fmt;

pub use crate::invariant::{invariant_list, Invariant, InvariantSet};
pub use budget::{
    body_under_ceiling, estimate_covers_images, estimate_covers_tool_calls, estimate_monotone,
    minimal_form, no_premature_compaction, progress, trims_when_due,
};
pub use pairing::tool_pairing;
pub use repeat::{deterministic, idempotent};
pub use session::{session_never_overflows, SessionTurn, TurnOutcome};
pub use shape::{order_preserved, pinned_kept, single_bounded_summary, verbatim_suffix};

use crate::body::body_bytes;
use crate::config::Config;
use crate::contract::{judge_estimate, Head, TriggerRange};
use crate::model::{check_well_formed, Message};
use crate::subject::{CompactAnswer, EstimateReply};

/// One broken invariant, with what a person needs to see why. In JSON
/// (a report, `report merge` reading it back) its fields in this order,
/// `numbers` an object.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Violation {
    pub invariant: Invariant,
    /// Indexes of the messages involved. Which history they index is said
    /// in `detail` ("input" or "output").
    #[serde(default)]
    pub messages: Vec<usize>,
    /// Tool-call ids involved.
    #[serde(default)]
    pub ids: Vec<String>,
    /// Named figures: bytes, tokens, ceiling, trigger…
    #[serde(default, with = "named_numbers")]
    pub numbers: Vec<(Cow<'static, str>, u64)>,
    /// One sentence: what should have held and what was seen.
    pub detail: String,
}

/// How a violation names a body size: the wire format it was measured in,
/// that the count is ctxgate's exact one, and how to see that body. The
/// protocol carries no body size from the subject (an `estimate` answers
/// tokens), so the subject's side can only be compared by diffing bodies.
pub(crate) fn body_measure(format: crate::model::WireFormat) -> String {
    format!("bytes of {format} body (ctxgate's exact count; `ctxgate body --wire-format {format} FILE` prints that body to diff against your measurer)")
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
        self.numbers.push((Cow::Borrowed(name), value));
        self
    }
}

/// How many items a report shows at each end of a long list (a case's
/// messages, a fixture's violations); the rest are counted.
pub const EDGE: usize = 4;

/// A fixture's violations, one line each, capped at [`EDGE`] lines and a
/// count of the rest (a shape repeated over a long case is one finding).
pub fn violation_lines(vs: &[Violation]) -> Vec<String> {
    let mut lines: Vec<String> = vs.iter().take(EDGE).map(|v| v.to_string()).collect();
    if vs.len() > EDGE {
        lines.push(format!("… {} more violation(s)", vs.len() - EDGE));
    }
    lines
}

/// A violation's named figures as a JSON object, in their order.
mod named_numbers {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::borrow::Cow;

    type Numbers = Vec<(Cow<'static, str>, u64)>;

    pub fn serialize<S: Serializer>(numbers: &Numbers, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(numbers.iter().map(|(k, v)| (k, v)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Numbers, D::Error> {
        let map = serde_json::Map::deserialize(d)?;
        Ok(map
            .into_iter()
            .filter_map(|(k, v)| Some((Cow::Owned(k), v.as_u64()?)))
            .collect())
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // On one line, whatever the detail holds: a violation read back
        // from a report (`report merge`) is text from outside.
        let one_line = crate::model::one_line;
        write!(f, "{}: {}", self.invariant, one_line(&self.detail))?;
        if !self.numbers.is_empty() {
            let parts: Vec<String> = self
                .numbers
                .iter()
                .map(|(k, v)| format!("{}={v}", one_line(k)))
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
    /// was `cannot_fit`, no compaction was due…), with the reason.
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

/// What the oracles know of a case's input, worked out once per case.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub config: &'a Config,
    pub input: &'a [Message],
    /// SPEC §1.2.
    pub well_formed: bool,
    /// The estimate "compaction due" is judged by, in tokens: the
    /// subject's own when it estimates (SPEC §6), else adr-0098's.
    pub estimate: u64,
    /// Whose count `estimate` is.
    pub yardstick: Yardstick,
    /// The exact body, in bytes.
    pub body: u64,
    pub head: Head,
    pub trigger: TriggerRange,
    /// Where compaction may start: the trigger, scaled to the point the
    /// subject declared it compacts at (hello `compactAt`;
    /// `TriggerRange::scaled`). Only "due" moves; what `progress` asks of
    /// a compaction stays SPEC's `trigger`.
    pub point: TriggerRange,
    /// That declared fraction of the trigger (1: none declared).
    pub compact_at: f64,
}

/// Whose estimate decides whether compaction was due (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Yardstick {
    /// ctxgate's `adr-0098`: the subject does not estimate.
    Adr0098,
    /// The subject's own answer to `estimate`; its floors are held by
    /// `estimate-covers-tool-calls` and `estimate-covers-images`.
    Subject,
}

impl Yardstick {
    /// "adr-0098 estimate" or "own estimate", for violation texts.
    pub fn words(self) -> &'static str {
        match self {
            Yardstick::Adr0098 => "adr-0098 estimate",
            Yardstick::Subject => "own estimate",
        }
    }
}

impl<'a> Facts<'a> {
    pub fn of(config: &'a Config, input: &'a [Message]) -> Facts<'a> {
        Facts {
            config,
            input,
            well_formed: check_well_formed(input).is_ok(),
            estimate: judge_estimate(config, input),
            yardstick: Yardstick::Adr0098,
            body: body_bytes(config, input),
            head: Head::of(input),
            trigger: TriggerRange::of(config),
            point: TriggerRange::of(config),
            compact_at: 1.0,
        }
    }

    /// The same facts timed by the subject: by its own estimate of the
    /// input when it gave one (SPEC §6), and against the point it declared
    /// (`compact_at`, a fraction of the trigger; 1 when it declared none).
    pub fn timed_by(mut self, own: Option<u64>, compact_at: f64) -> Facts<'a> {
        if let Some(e) = own {
            self.estimate = e;
            self.yardstick = Yardstick::Subject;
        }
        self.point = self.trigger.scaled(compact_at);
        self.compact_at = compact_at;
        self
    }

    /// Compaction may have been due: over the ceiling, or over a trigger
    /// some conforming compactor computes (or the point it declared).
    pub fn maybe_due(&self) -> bool {
        self.point.maybe_due(self.config, self.estimate, self.body)
    }
}

/// Everything the harness observed of a subject on one case.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// The answer to `compact(input)`.
    pub answer: Option<CompactAnswer>,
    /// The answer to the same request sent again.
    pub second: Option<CompactAnswer>,
    /// The answer to `compact(output)`, when the output was well formed.
    pub recompacted: Option<CompactAnswer>,
    /// `estimate(input)`, when the subject implements it.
    pub estimate: Option<EstimateReply>,
    /// The subject's estimate of its own output, when it estimates and
    /// compacted a history that may have been due (`progress` by its count).
    pub output_estimate: Option<u64>,
    /// The subject's estimate of the input's minimal output (head, pinned
    /// iterations and last iteration, literal head), when it estimates and
    /// answered `cannot_fit` (`progress` judges the refusal by its count).
    pub minimal_estimate: Option<u64>,
    /// `estimate(input + appended)` and the appended message.
    pub estimate_appended: Option<(EstimateReply, Message)>,
    /// The simulated ToolLoop, turn by turn.
    pub session: Option<Vec<SessionTurn>>,
    /// A subject fault cut the observation short (the fault is reported).
    pub faulted: bool,
}

/// Judge every invariant in `set` on one case and what was observed.
pub fn check_all(
    config: &Config,
    input: &[Message],
    obs: &Observation,
    set: &InvariantSet,
) -> Vec<(Invariant, Verdict)> {
    check_with(&Facts::of(config, input), obs, set)
}

/// [`check_all`] with the input's facts already worked out.
pub fn check_with(
    facts: &Facts<'_>,
    obs: &Observation,
    set: &InvariantSet,
) -> Vec<(Invariant, Verdict)> {
    set.iter()
        .map(|inv| (inv, check_one(inv, facts, obs)))
        .collect()
}

/// The violation for refusing a well-formed history with `invalid_input`.
fn refused(inv: Invariant, op: &str, message: &str) -> Verdict {
    Verdict::Fail(vec![Violation::new(
        inv,
        format!("answered invalid_input to {op} a well-formed history ({message}): nothing to judge, and a ToolLoop would stop here"),
    )])
}

/// Judge one invariant.
pub fn check_one(inv: Invariant, facts: &Facts<'_>, obs: &Observation) -> Verdict {
    use Invariant::*;
    if inv.needs_estimate() {
        return check_estimate(inv, facts, obs);
    }
    let Some(answer) = obs.answer.as_ref() else {
        return Verdict::NotApplicable(if obs.faulted {
            "the subject faulted before it answered"
        } else {
            "the subject was not asked to compact"
        });
    };
    if let CompactAnswer::InvalidInput { message } = answer {
        return match (facts.well_formed, inv) {
            (true, _) => refused(inv, "compact", message),
            (false, BodyUnderCeiling) => Verdict::Pass,
            (false, _) => Verdict::NotApplicable("the input is not well formed"),
        };
    }
    let input = facts.input;
    let with_output = |f: &dyn Fn(&[Message]) -> Vec<Violation>| match answer.messages() {
        Some(o) => Verdict::from_violations(f(o)),
        None => Verdict::NotApplicable("the subject answered cannot_fit"),
    };
    match inv {
        ToolPairing => with_output(&|o| tool_pairing(input, o)),
        BodyUnderCeiling => Verdict::from_violations(body_under_ceiling(facts.config, input, answer)),
        NoPrematureCompaction => no_premature_compaction(facts, answer),
        Progress => progress(facts, answer, obs.output_estimate, obs.minimal_estimate),
        TrimsWhenDue => trims_when_due(facts, answer),
        VerbatimSuffix => with_output(&|o| verbatim_suffix(input, o)),
        OrderPreserved => with_output(&|o| order_preserved(input, o)),
        PinnedKept => with_output(&|o| pinned_kept(input, o)),
        SingleBoundedSummary => with_output(&|o| single_bounded_summary(facts.config, input, o)),
        Deterministic => match &obs.second {
            Some(second) => Verdict::from_violations(deterministic(answer, second)),
            None => Verdict::NotApplicable("no second run"),
        },
        Idempotent => match (answer.messages(), &obs.recompacted) {
            (Some(o), Some(again)) => Verdict::from_violations(idempotent(o, again)),
            (None, _) => Verdict::NotApplicable("the subject answered cannot_fit"),
            (_, None) => Verdict::NotApplicable(
                "the output is not well formed (tool-pairing judges it), so it was not compacted again",
            ),
        },
        SessionNeverOverflows => match &obs.session {
            Some(turns) if turns.is_empty() => {
                Verdict::NotApplicable("the history has no iteration after its head to replay")
            }
            Some(turns) => Verdict::from_violations(session_never_overflows(facts.config, turns)),
            None => Verdict::NotApplicable("the input is not well formed, so no ToolLoop was simulated"),
        },
        EstimateCoversToolCalls
        | EstimateMonotone
        | EstimateCoversImages
        | EstimateCoversRealTokens
        | EstimateCoversText => {
            unreachable!("judged by check_estimate")
        }
    }
}

/// The invariants judged on the `estimate` op.
fn check_estimate(inv: Invariant, facts: &Facts<'_>, obs: &Observation) -> Verdict {
    let Some(reply) = &obs.estimate else {
        return Verdict::NotApplicable(if obs.faulted {
            "the subject faulted before it answered"
        } else {
            "the subject does not estimate"
        });
    };
    let e = match reply {
        EstimateReply::Tokens(e) => e,
        EstimateReply::InvalidInput { message } if facts.well_formed => {
            return refused(inv, "estimate", message)
        }
        EstimateReply::InvalidInput { .. } => {
            return Verdict::NotApplicable("the input is not well formed")
        }
    };
    match inv {
        Invariant::EstimateCoversToolCalls => {
            Verdict::from_violations(estimate_covers_tool_calls(facts.config, facts.input, e))
        }
        // Without images the floor is 0 and the invariant holds, as
        // estimate-covers-tool-calls does on a history without calls.
        Invariant::EstimateCoversImages => {
            Verdict::from_violations(estimate_covers_images(facts.config, facts.input, e))
        }
        Invariant::EstimateMonotone => match &obs.estimate_appended {
            Some((EstimateReply::Tokens(after), _)) => {
                Verdict::from_violations(estimate_monotone(e, after))
            }
            Some((EstimateReply::InvalidInput { message }, _)) if facts.well_formed => {
                // The appended history is well formed too: the harness builds it so.
                refused(inv, "estimate", message)
            }
            Some((EstimateReply::InvalidInput { .. }, _)) => {
                Verdict::NotApplicable("the longer history is not well formed")
            }
            None => Verdict::NotApplicable("no estimate of the longer history"),
        },
        Invariant::EstimateCoversText => covers_text(facts, e),
        _ => real_tokens(facts.input, e),
    }
}

/// `estimate-covers-text`: judged on an own estimate only, the yardstick a
/// subject is timed by (SPEC §6).
#[cfg(feature = "calibrate")]
fn covers_text(facts: &Facts<'_>, e: &crate::subject::EstimateAnswer) -> Verdict {
    Verdict::from_violations(real_tokens::estimate_covers_text(
        facts.config,
        facts.input,
        e,
    ))
}

#[cfg(not(feature = "calibrate"))]
fn covers_text(_facts: &Facts<'_>, _e: &crate::subject::EstimateAnswer) -> Verdict {
    Verdict::NotApplicable("ctxgate was built without the calibrate feature")
}

/// `estimate-covers-real-tokens`: the subject's total against cl100k_base
/// and o200k_base. Totals only: a class-wise estimator bounds a history,
/// not every short message (see docs/calibration.md).
#[cfg(feature = "calibrate")]
fn real_tokens(input: &[Message], e: &crate::subject::EstimateAnswer) -> Verdict {
    use crate::estimate::Encoding;
    use real_tokens::estimate_covers_real_tokens;
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
fn real_tokens(_input: &[Message], _e: &crate::subject::EstimateAnswer) -> Verdict {
    Verdict::NotApplicable("ctxgate was built without the calibrate feature")
}
