//! Defective compactors, one per bug class seen in the wild, for mutation
//! adequacy: a harness that lets any of these through is not doing its job.
//! Each is the reference with exactly one thing broken.

use std::sync::atomic::{AtomicU64, Ordering};

use std::ops::Range;

use super::in_process::{answer, estimator_fn, EstimateFn};
use super::{CompactAnswer, InProcess, SubjectInfo};
use crate::body::{body_bytes, body_value};
use crate::config::Config;
use crate::contract::{compaction_due, Head};
use crate::estimate::{tool_call_tokens, Adr0098, ContentOnly, Estimator};
use crate::invariant::Invariant;
use crate::model::{check_well_formed, head_len, iterations, truncate_utf8, Message, Role};
use crate::reference::{exact_body, BodyMeasure, DigestSummariser, Elision, Reference, Summariser};

/// The defects, one row each: the bug class (documented), its name, what
/// it does wrong in a few words (for `check --list-defects`), and the
/// invariants that rightly catch it, the first the one that names it best.
macro_rules! defects {
    ($($(#[$doc:meta])* $defect:ident $name:literal $describe:literal [$($inv:ident),+];)+) => {
        /// A bug class, each with the invariant that must catch it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Defect {
            $($(#[$doc])* $defect,)+
        }

        impl Defect {
            pub const ALL: [Defect; [$(stringify!($defect)),+].len()] = [$(Defect::$defect),+];

            pub fn name(self) -> &'static str {
                match self {
                    $(Defect::$defect => $name,)+
                }
            }

            /// What it does wrong, in a few words (for `check --list-defects`).
            pub fn describe(self) -> &'static str {
                match self {
                    $(Defect::$defect => $describe,)+
                }
            }

            /// The invariants that rightly catch this defect; the first is
            /// the one that names it best.
            pub fn caught_by(self) -> &'static [Invariant] {
                use Invariant::*;
                match self {
                    $(Defect::$defect => &[$($inv),+],)+
                }
            }
        }
    };
}

defects! {
    /// The estimator before ADR 0098: tool-call arguments weigh nothing.
    ContentOnlyEstimator "content-only-estimator"
        "estimates content only: tool-call arguments weigh nothing"
        [EstimateCoversToolCalls, Progress];
    /// The compaction window ignores the transport ceiling (the other end of the ADR).
    WindowIgnoresCeiling "window-ignores-ceiling"
        "compacts for the token window only, ignoring the body ceiling"
        [BodyUnderCeiling, SessionNeverOverflows];
    /// The cut keeps the last N messages, splitting an iteration.
    CutByMessageCount "cut-by-message-count"
        "keeps the last N messages, splitting an iteration"
        [ToolPairing, VerbatimSuffix];
    /// Compacts at half the trigger.
    PrematureCompaction "premature-compaction"
        "compacts at half the trigger"
        [NoPrematureCompaction];
    /// Measures the body without JSON escaping (quotes, backslashes, control characters).
    CeilingWithoutEscaping "ceiling-without-escaping"
        "measures the body without JSON escaping"
        [BodyUnderCeiling, SessionNeverOverflows];
    /// Counts characters (UTF-16 units, as JavaScript's `length`) instead of bytes.
    CharsNotBytes "chars-not-bytes"
        "counts characters (UTF-16 units) instead of bytes"
        [BodyUnderCeiling, SessionNeverOverflows, EstimateCoversToolCalls];
    /// Drops the system prompt when it compacts.
    DropsSystemPrompt "drops-system-prompt"
        "drops the system prompt when it compacts"
        [PinnedKept];
    /// The summary is every replaced message's content, unbounded.
    UnboundedSummary "unbounded-summary"
        "writes an unbounded summary: every replaced message's content"
        [SingleBoundedSummary];
    /// The summary carries a counter, so two runs differ.
    NondeterministicSummary "nondeterministic-summary"
        "writes a counter into its summary, so two runs differ"
        [Deterministic, Idempotent];
    /// The estimator counts the content of the last two iterations only
    /// (older messages weigh just their tool calls): appending an iteration
    /// pushes an old one's text out of the count, and compaction fires late.
    WindowedEstimator "windowed-estimator"
        "estimates the last two iterations' content only"
        [EstimateMonotone, Progress];
    /// Keeps `keepRecent` iterations however far over the trigger that
    /// leaves it: it falls back to fewer only for the transport ceiling.
    NoFallbackBelowKeepRecent "no-fallback-below-keep-recent"
        "keeps keepRecent iterations however far over the trigger"
        [Progress];
    /// Truncates every long tool result in place, the recent ones too.
    TruncatesToolResults "truncates-tool-results"
        "truncates every long tool result in place, recent ones too"
        [VerbatimSuffix, SingleBoundedSummary, PinnedKept];
    /// Cuts every kept tool result over 16 KiB to its first 16 KiB when it
    /// compacts (a per-result cap applied on the way out, half RN-150's
    /// 32 KiB one): only histories with big results show it — the real
    /// ones `check --corpus` grows to the cap do.
    TruncatesResultsOver16K "truncates-results-over-16k"
        "cuts every kept tool result to its first 16 KiB"
        [VerbatimSuffix, PinnedKept];
    /// Sorts each iteration's tool results by call id (a map keyed by id).
    SortsResultsById "sorts-results-by-id"
        "sorts each iteration's tool results by call id"
        [OrderPreserved, VerbatimSuffix];
    /// Re-summarises its own summary on the next compaction instead of
    /// keeping it: compacting an output again changes it.
    ResummarisesSummary "resummarises-summary"
        "re-summarises its own summary on the next compaction"
        [Idempotent];
    /// Does not recognise its own summaries on the next turn, so they join
    /// the head and pile up until the ToolLoop gives up with cannot_fit.
    SummariesPileUp "summaries-pile-up"
        "does not recognise its own summaries, which pile up in the head"
        [SessionNeverOverflows];
    /// Images weigh nothing: the estimate counts their text only, and the
    /// body is measured without their payload (openai/codex#41338: "~230
    /// tokens but 4.2 MB on the wire").
    ImagesWeightless "images-weightless"
        "images weigh nothing, in the estimate and the body"
        [EstimateCoversImages, BodyUnderCeiling, SessionNeverOverflows];
    /// An image's base64 is counted as text, bytes ÷ 4: a pasted
    /// screenshot reads as hundreds of thousands of tokens and a fresh chat
    /// is compacted before its first request (justrach/codegraff#259).
    Base64AsText "base64-as-text"
        "counts an image's base64 as text, compacting a fresh chat"
        [NoPrematureCompaction];
    /// Elides images of the last iteration (and pinned ones) too, once the
    /// others are gone: the 413 recovery that evicts from the protected
    /// tail (NousResearch/hermes-agent#47339).
    ElidesLastIteration "elides-last-iteration"
        "elides images of the last iteration and pinned ones too"
        [VerbatimSuffix];
    /// Elides an image by dropping its part, with no text in its place.
    ElisionDropsPart "elision-drops-part"
        "elides an image by dropping its part, with no text in its place"
        [SingleBoundedSummary];
    /// An elided message's text changes too: a note is added.
    ElisionChangesText "elision-changes-text"
        "changes an elided message's text too"
        [SingleBoundedSummary];
    /// Resizes nothing and re-embeds every replaced image in the summary
    /// (anomalyco/opencode#14562: the compaction request carries every
    /// base64 image).
    SummaryReembedsImages "summary-reembeds-images"
        "re-embeds every replaced image in its summary"
        [SingleBoundedSummary, BodyUnderCeiling];
}

impl Defect {
    /// The defects of images (issue 26), each caught by the invariant
    /// that names it.
    pub const IMAGES: [Defect; 6] = [
        Defect::ImagesWeightless,
        Defect::Base64AsText,
        Defect::ElidesLastIteration,
        Defect::ElisionDropsPart,
        Defect::ElisionChangesText,
        Defect::SummaryReembedsImages,
    ];

    /// One line per defect: its name, what it does wrong, and the
    /// invariants that catch it (`check --list-defects`).
    pub fn list() -> String {
        let width = Defect::ALL
            .iter()
            .map(|d| d.name().len())
            .max()
            .unwrap_or(0);
        Defect::ALL
            .iter()
            .map(|d| {
                let caught: Vec<&str> = d.caught_by().iter().map(|i| i.name()).collect();
                format!(
                    "{:width$}  {} (caught by {})\n",
                    d.name(),
                    d.describe(),
                    caught.join(", ")
                )
            })
            .collect()
    }

    pub fn parse(name: &str) -> Option<Defect> {
        Defect::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The defective compactor as a subject.
    pub fn subject(self) -> InProcess {
        let info = SubjectInfo::new(format!("defect:{}", self.name()), "0");
        let adr = || Some(estimator_fn(Adr0098));
        match self {
            Defect::ContentOnlyEstimator => estimating(info, ContentOnly, exact_body),
            Defect::WindowIgnoresCeiling => reference_under(info, Reference::default, |c| Config {
                transport_max_body_bytes: u64::MAX / 2,
                ..c.clone()
            }),
            Defect::CutByMessageCount => InProcess::new(info, cut_by_message_count, adr()),
            Defect::PrematureCompaction => reference_under(info, Reference::default, |c| Config {
                threshold: c.threshold / 2.0,
                ..c.clone()
            }),
            Defect::CeilingWithoutEscaping => estimating(info, Adr0098, unescaped_body),
            Defect::CharsNotBytes => estimating(info, Utf16Estimator, utf16_body),
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
            Defect::UnboundedSummary => reference_under(
                info,
                || with(&Adr0098, &Concatenate, exact_body),
                |c| Config {
                    summary_max_bytes: usize::MAX / 2,
                    ..c.clone()
                },
            ),
            Defect::NondeterministicSummary => summarising(info, &Counter),
            Defect::WindowedEstimator => estimating(info, RecentWindow, exact_body),
            Defect::NoFallbackBelowKeepRecent => {
                InProcess::new(info, no_fallback_below_keep_recent, adr())
            }
            Defect::TruncatesToolResults => reference_changed(info, cut_results::<512, true>),
            Defect::TruncatesResultsOver16K => {
                reference_changed(info, cut_results::<RESULT_CAP_16K, false>)
            }
            Defect::SortsResultsById => reference_changed(info, |out| {
                for r in iterations(out) {
                    out[r.start + 1..r.end].sort_by(|a, b| a.tool_call_id.cmp(&b.tool_call_id));
                }
            }),
            Defect::ResummarisesSummary => summarising(info, &FreshDigest),
            Defect::SummariesPileUp => summarising(info, &Notes),
            Defect::ImagesWeightless => estimating(info, TextOnly, body_without_images),
            // It does not answer `estimate`: a subject is timed by its own
            // count when it does (SPEC §6), and by that count this one is
            // consistent; ctxgate's adr-0098 shows the premature compaction.
            Defect::Base64AsText => reference_as(
                info,
                || with(&Base64Text, &DigestSummariser, exact_body),
                None,
            ),
            Defect::ElidesLastIteration => {
                reference_as(info, || eliding(Elision::AlsoLastAndPinned), adr())
            }
            Defect::ElisionDropsPart => reference_as(info, || eliding(Elision::DropPart), adr()),
            Defect::ElisionChangesText => reference_as(info, || eliding(Elision::AndText), adr()),
            Defect::SummaryReembedsImages => InProcess::new(info, summary_reembeds_images, adr()),
        }
    }
}

/// The cap of [`Defect::TruncatesResultsOver16K`], in bytes.
const RESULT_CAP_16K: usize = 16 * 1024;

/// Cut every tool result over `CAP` bytes to its first `CAP` (on a
/// character boundary), marked `…[truncated]` when `MARKED`.
fn cut_results<const CAP: usize, const MARKED: bool>(out: &mut [Message]) {
    for msg in out.iter_mut().filter(|x| x.role == Role::Tool) {
        let text = msg.content.text();
        if text.len() > CAP {
            let cut = truncate_utf8(&text, CAP);
            msg.content = match MARKED {
                true => format!("{cut}…[truncated]"),
                false => cut.to_owned(),
            }
            .into();
        }
    }
}

/// The reference counting with `estimator` (and answering `estimate` with
/// it) and measuring the body with `body`.
fn estimating<E: Estimator + Copy + Send + 'static>(
    info: SubjectInfo,
    estimator: E,
    body: BodyMeasure,
) -> InProcess {
    let compact = move |c: &Config, m: &[Message]| {
        answer(with(&estimator, &DigestSummariser, body).compact(c, m))
    };
    InProcess::new(info, compact, Some(estimator_fn(estimator)))
}

/// The reference summarising with `summariser`, answering `estimate` with
/// adr-0098.
fn summarising(info: SubjectInfo, summariser: &'static (dyn Summariser + Sync)) -> InProcess {
    let compact = move |c: &Config, m: &[Message]| {
        answer(with(&Adr0098, summariser, exact_body).compact(c, m))
    };
    InProcess::new(info, compact, Some(estimator_fn(Adr0098)))
}

/// A reference of the defect's own making (another estimator, summariser,
/// body measure or elision; `make` runs for every request), answering
/// `estimate` with `estimate`.
fn reference_as(
    info: SubjectInfo,
    make: fn() -> Reference<'static>,
    estimate: Option<EstimateFn>,
) -> InProcess {
    InProcess::new(info, move |c, m| answer(make().compact(c, m)), estimate)
}

/// The reference `make` makes, run under `change` of the config asked for
/// (a defect that ignores a limit or moves the trigger), answering
/// `estimate` with adr-0098.
fn reference_under(
    info: SubjectInfo,
    make: fn() -> Reference<'static>,
    change: fn(&Config) -> Config,
) -> InProcess {
    InProcess::new(
        info,
        move |c, m| answer(make().compact(&change(c), m)),
        Some(estimator_fn(Adr0098)),
    )
}

/// The reference's answer, with `change` applied to the history when it compacted.
fn reference_then(
    config: &Config,
    msgs: &[Message],
    change: impl FnOnce(&mut Vec<Message>),
) -> CompactAnswer {
    match Reference::default().compact(config, msgs) {
        Ok(mut out) if out != msgs => {
            change(&mut out);
            CompactAnswer::Messages(out)
        }
        other => answer(other),
    }
}

/// [`reference_then`] as a subject, answering `estimate` with adr-0098.
fn reference_changed(info: SubjectInfo, change: fn(&mut [Message])) -> InProcess {
    InProcess::new(
        info,
        move |c, m| reference_then(c, m, |out| change(out)),
        Some(estimator_fn(Adr0098)),
    )
}

/// SPEC §4 steps 1–3 only: head + pinned + summary + the last `keepRecent`
/// iterations, however far over the trigger; the reference's ceiling
/// handling when that is over the ceiling.
fn no_fallback_below_keep_recent(config: &Config, msgs: &[Message]) -> CompactAnswer {
    if !compaction_due(config, msgs) || check_well_formed(msgs).is_err() {
        return answer(Reference::default().compact(config, msgs));
    }
    let head = Head::of(msgs).kept;
    let iters: Vec<Range<usize>> = iterations(&msgs[head..])
        .into_iter()
        .map(|r| r.start + head..r.end + head)
        .collect();
    let k = config.keep_recent.min(iters.len());
    if k == 0 {
        return answer(Reference::default().compact(config, msgs));
    }
    let (replaced, recent) = iters.split_at(iters.len() - k);
    let pinned = |r: &&Range<usize>| msgs[(*r).clone()].iter().any(Message::is_pinned);
    let mut out = msgs[..head].to_vec();
    out.extend(
        replaced
            .iter()
            .filter(pinned)
            .flat_map(|r| msgs[r.clone()].iter().cloned()),
    );
    let old: Vec<&Message> = replaced
        .iter()
        .filter(|r| !pinned(r))
        .flat_map(|r| &msgs[r.clone()])
        .collect();
    if !old.is_empty() && config.summary_max_bytes > 0 {
        out.push(Message::system(
            DigestSummariser.summarise(&old, config.summary_max_bytes),
        ));
    }
    out.extend_from_slice(&msgs[recent[0].start..]);
    if body_bytes(config, &out) > config.transport_max_body_bytes {
        return answer(Reference::default().compact(config, msgs));
    }
    CompactAnswer::Messages(out)
}

/// The reference with another way of eliding images.
fn eliding(elision: Elision) -> Reference<'static> {
    Reference {
        elision,
        ..Reference::default()
    }
}

/// The reference's answer, with every image the output no longer holds
/// put back into the summary message (text first, then the images).
fn summary_reembeds_images(config: &Config, msgs: &[Message]) -> CompactAnswer {
    reference_then(config, msgs, |out| {
        let kept: Vec<&crate::model::Image> = out.iter().flat_map(|m| m.content.images()).collect();
        let gone: Vec<crate::model::Part> = msgs
            .iter()
            .flat_map(|m| m.content.images())
            .filter(|i| !kept.contains(i))
            .map(|i| crate::model::Part::Image(i.clone()))
            .collect();
        if gone.is_empty() {
            return;
        }
        if let Some(s) = out.iter_mut().find(|m| crate::contract::is_summary(m)) {
            let mut parts = vec![crate::model::Part::text(s.content.text().into_owned())];
            parts.extend(gone);
            s.content = crate::model::Content::Parts(parts);
        }
    })
}

/// The body measured with every image's payload left out (its part kept,
/// its `data` empty): what a compactor that counts only text sees.
fn body_without_images(config: &Config, msgs: &[&Message]) -> u64 {
    let blind: Vec<Message> = msgs
        .iter()
        .map(|m| {
            let mut m = (*m).clone();
            if let crate::model::Content::Parts(parts) = &mut m.content {
                for p in parts.iter_mut() {
                    if p.as_image().is_some() {
                        *p = crate::model::Part::text("");
                    }
                }
            }
            m
        })
        .collect();
    body_bytes(config, &blind)
}

/// adr-0098 without images: text and toolCalls only.
#[derive(Clone, Copy)]
struct TextOnly;

impl Estimator for TextOnly {
    fn name(&self) -> &'static str {
        "text-only"
    }
    fn message_tokens(&self, m: &Message, config: &Config) -> u64 {
        crate::estimate::tokens_for_bytes(m.content.text_len() as u64, config.bytes_per_token)
            + tool_call_tokens(m, config.bytes_per_token)
    }
}

/// adr-0098 with each image's base64 counted as text, bytes ÷ bytesPerToken.
struct Base64Text;

impl Estimator for Base64Text {
    fn name(&self) -> &'static str {
        "base64-as-text"
    }
    fn message_tokens(&self, m: &Message, config: &Config) -> u64 {
        let base64: u64 = m.content.images().map(|i| i.payload_bytes()).sum();
        crate::estimate::tokens_for_bytes(
            m.content.text_len() as u64 + base64,
            config.bytes_per_token,
        ) + tool_call_tokens(m, config.bytes_per_token)
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
        ..Reference::default()
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
#[derive(Clone, Copy)]
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
        units(&m.content.text()).div_ceil(config.bytes_per_token)
            + calls.div_ceil(config.bytes_per_token)
            + crate::estimate::images::content_image_tokens(&m.content, config.wire_format)
    }
}

/// adr-0098 over the last two iterations; older messages weigh only their
/// tool calls (never below the ADR's floor, but not monotone).
#[derive(Clone, Copy)]
struct RecentWindow;

impl Estimator for RecentWindow {
    fn name(&self) -> &'static str {
        "recent-window"
    }
    fn message_tokens(&self, m: &Message, config: &Config) -> u64 {
        Adr0098.message_tokens(m, config)
    }
    fn tokens(&self, msgs: &mut dyn Iterator<Item = &Message>, config: &Config) -> u64 {
        let owned: Vec<Message> = msgs.cloned().collect();
        self.per_message(&owned, config).1
    }
    fn per_message(&self, msgs: &[Message], config: &Config) -> (Vec<u64>, u64) {
        let iters = iterations(msgs);
        let window = iters.len().checked_sub(2).map_or(0, |i| iters[i].start);
        let per: Vec<u64> = msgs
            .iter()
            .enumerate()
            .map(|(i, m)| {
                if i >= window {
                    Adr0098.message_tokens(m, config)
                } else {
                    tool_call_tokens(m, config.bytes_per_token)
                }
            })
            .collect();
        let total = per.iter().sum();
        (per, total)
    }
}

/// The digest written afresh every time, its own summary included.
struct FreshDigest;

impl Summariser for FreshDigest {
    fn summarise(&self, replaced: &[&Message], max: usize) -> String {
        DigestSummariser::digest(replaced, max)
    }
}

/// The digest under a prefix of its own, which the next turn does not
/// recognise as a summary (`contract::is_summary`).
struct Notes;

impl Summariser for Notes {
    fn summarise(&self, replaced: &[&Message], max: usize) -> String {
        let digest = DigestSummariser.summarise(replaced, max);
        let text = digest.replacen(crate::contract::SUMMARY_PREFIX, "[notes]", 1);
        truncate_utf8(&text, max).to_owned()
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
