//! Defective compactors, one per bug class seen in the wild, for mutation
//! adequacy: a harness that lets any of these through is not doing its job.
//! Each is the reference with exactly one thing broken.

use std::sync::atomic::{AtomicU64, Ordering};

use super::in_process::{answer, estimator_fn};
use super::{InProcess, SubjectInfo};
use crate::body::body_value;
use crate::config::Config;
use crate::estimate::{Adr0098, ContentOnly, Estimator};
use crate::model::{head_len, Message};
use crate::oracle::{compaction_due, CompactAnswer, Invariant};
use crate::reference::{exact_body, DigestSummariser, Reference, Summariser};

/// A bug class, each with the invariant that must catch it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Defect {
    /// The estimator before ADR 0098: tool-call arguments weigh nothing.
    ContentOnlyEstimator,
    /// The compaction window ignores the transport ceiling (the other end of the ADR).
    WindowIgnoresCeiling,
    /// The cut keeps the last N messages, splitting an iteration.
    CutByMessageCount,
    /// Compacts at half the trigger.
    PrematureCompaction,
    /// Measures the body without JSON escaping (quotes, backslashes, control characters).
    CeilingWithoutEscaping,
    /// Counts characters (UTF-16 units, as JavaScript's `length`) instead of bytes.
    CharsNotBytes,
    /// Drops the system prompt when it compacts.
    DropsSystemPrompt,
    /// The summary is every replaced message's content, unbounded.
    UnboundedSummary,
    /// The summary carries a counter, so two runs differ.
    NondeterministicSummary,
}

impl Defect {
    pub const ALL: [Defect; 9] = [
        Defect::ContentOnlyEstimator,
        Defect::WindowIgnoresCeiling,
        Defect::CutByMessageCount,
        Defect::PrematureCompaction,
        Defect::CeilingWithoutEscaping,
        Defect::CharsNotBytes,
        Defect::DropsSystemPrompt,
        Defect::UnboundedSummary,
        Defect::NondeterministicSummary,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Defect::ContentOnlyEstimator => "content-only-estimator",
            Defect::WindowIgnoresCeiling => "window-ignores-ceiling",
            Defect::CutByMessageCount => "cut-by-message-count",
            Defect::PrematureCompaction => "premature-compaction",
            Defect::CeilingWithoutEscaping => "ceiling-without-escaping",
            Defect::CharsNotBytes => "chars-not-bytes",
            Defect::DropsSystemPrompt => "drops-system-prompt",
            Defect::UnboundedSummary => "unbounded-summary",
            Defect::NondeterministicSummary => "nondeterministic-summary",
        }
    }

    pub fn parse(name: &str) -> Option<Defect> {
        Defect::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The invariants that rightly catch this defect; the first is the one
    /// that names it best.
    pub fn caught_by(self) -> &'static [Invariant] {
        use Invariant::*;
        match self {
            Defect::ContentOnlyEstimator => &[EstimateCoversToolCalls, Progress],
            Defect::WindowIgnoresCeiling => &[BodyUnderCeiling, SessionNeverOverflows],
            Defect::CutByMessageCount => &[ToolPairing, VerbatimSuffix],
            Defect::PrematureCompaction => &[NoPrematureCompaction],
            Defect::CeilingWithoutEscaping => &[BodyUnderCeiling, SessionNeverOverflows],
            Defect::CharsNotBytes => &[
                BodyUnderCeiling,
                SessionNeverOverflows,
                EstimateCoversToolCalls,
            ],
            Defect::DropsSystemPrompt => &[PinnedKept],
            Defect::UnboundedSummary => &[SingleBoundedSummary],
            Defect::NondeterministicSummary => &[Deterministic, Idempotent],
        }
    }

    /// The defective compactor as a subject.
    pub fn subject(self) -> InProcess {
        let info = SubjectInfo::new(format!("defect:{}", self.name()), "0");
        let adr = || Some(estimator_fn(Adr0098));
        match self {
            Defect::ContentOnlyEstimator => InProcess::new(
                info,
                |c, m| answer(with(&ContentOnly, &DigestSummariser, exact_body).compact(c, m)),
                Some(estimator_fn(ContentOnly)),
            ),
            Defect::WindowIgnoresCeiling => InProcess::new(
                info,
                |c, m| {
                    let blind = Config {
                        transport_max_body_bytes: u64::MAX / 2,
                        ..c.clone()
                    };
                    answer(Reference::default().compact(&blind, m))
                },
                adr(),
            ),
            Defect::CutByMessageCount => InProcess::new(info, cut_by_message_count, adr()),
            Defect::PrematureCompaction => InProcess::new(
                info,
                |c, m| {
                    let eager = Config {
                        threshold: c.threshold / 2.0,
                        ..c.clone()
                    };
                    answer(Reference::default().compact(&eager, m))
                },
                adr(),
            ),
            Defect::CeilingWithoutEscaping => InProcess::new(
                info,
                |c, m| answer(with(&Adr0098, &DigestSummariser, unescaped_body).compact(c, m)),
                adr(),
            ),
            Defect::CharsNotBytes => InProcess::new(
                info,
                |c, m| answer(with(&Utf16Estimator, &DigestSummariser, utf16_body).compact(c, m)),
                Some(estimator_fn(Utf16Estimator)),
            ),
            Defect::DropsSystemPrompt => InProcess::new(
                info,
                |c, m| match Reference::default().compact(c, m) {
                    Ok(out) if out != m => {
                        CompactAnswer::Messages(out[head_len(m).min(out.len())..].to_vec())
                    }
                    other => answer(other),
                },
                adr(),
            ),
            Defect::UnboundedSummary => InProcess::new(
                info,
                |c, m| {
                    let loose = Config {
                        summary_max_bytes: usize::MAX / 2,
                        ..c.clone()
                    };
                    let out = with(&Adr0098, &Concatenate, exact_body).compact(&loose, m);
                    answer(out)
                },
                adr(),
            ),
            Defect::NondeterministicSummary => InProcess::new(
                info,
                |c, m| answer(with(&Adr0098, &Counter, exact_body).compact(c, m)),
                adr(),
            ),
        }
    }
}

fn with<'a>(
    estimator: &'a dyn Estimator,
    summariser: &'a dyn Summariser,
    body: crate::reference::BodyMeasure,
) -> Reference<'a> {
    Reference {
        estimator,
        summariser,
        body,
    }
}

/// Keeps the head, a summary and the last `2 × keepRecent + 1` messages,
/// wherever that cuts.
fn cut_by_message_count(config: &Config, msgs: &[Message]) -> CompactAnswer {
    if !compaction_due(config, msgs) {
        return CompactAnswer::Messages(msgs.to_vec());
    }
    let head = head_len(msgs);
    let keep = (2 * config.keep_recent + 1).min(msgs.len() - head);
    let cut = msgs.len() - keep;
    let mut out = msgs[..head].to_vec();
    if cut > head {
        let replaced: Vec<&Message> = msgs[head..cut].iter().collect();
        out.push(Message::system(
            DigestSummariser.summarise(&replaced, config.summary_max_bytes),
        ));
    }
    out.extend_from_slice(&msgs[cut..]);
    CompactAnswer::Messages(out)
}

/// The body size with every escape sequence counted as the one character it stands for.
fn unescaped_body(config: &Config, msgs: &[&Message]) -> u64 {
    let owned: Vec<Message> = msgs.iter().map(|m| (*m).clone()).collect();
    let text = serde_json::to_string(&body_value(config, &owned)).expect("serialises");
    let bytes = text.as_bytes();
    let (mut n, mut i) = (0u64, 0usize);
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += if bytes.get(i + 1) == Some(&b'u') {
                6
            } else {
                2
            };
        } else {
            i += 1;
        }
        n += 1;
    }
    n
}

/// The body size as JavaScript's `JSON.stringify(body).length`: UTF-16 units.
fn utf16_body(config: &Config, msgs: &[&Message]) -> u64 {
    let owned: Vec<Message> = msgs.iter().map(|m| (*m).clone()).collect();
    let text = serde_json::to_string(&body_value(config, &owned)).expect("serialises");
    text.encode_utf16().count() as u64
}

/// adr-0098, but over UTF-16 units instead of bytes.
struct Utf16Estimator;

impl Estimator for Utf16Estimator {
    fn name(&self) -> &'static str {
        "utf16-units"
    }
    fn message_tokens(&self, m: &Message, config: &Config) -> u64 {
        let units = |s: &str| s.encode_utf16().count() as u64;
        let calls = match m.tool_calls.as_deref() {
            Some(c) if !c.is_empty() => {
                units(&crate::model::engine::tool_calls_to_value(c).to_string())
            }
            _ => 0,
        };
        units(m.content.text()).div_ceil(config.bytes_per_token)
            + calls.div_ceil(config.bytes_per_token)
    }
}

/// Every replaced content, joined, unbounded.
struct Concatenate;

impl Summariser for Concatenate {
    fn summarise(&self, replaced: &[&Message], _max: usize) -> String {
        replaced
            .iter()
            .map(|m| m.content.text())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The digest plus a run counter: never the same twice.
struct Counter;

static RUNS: AtomicU64 = AtomicU64::new(0);

impl Summariser for Counter {
    fn summarise(&self, replaced: &[&Message], max: usize) -> String {
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        let digest = DigestSummariser.summarise(replaced, max.saturating_sub(12));
        format!("run {n}: {digest}")
    }
}
