//! The reference compactor: ADR 0098, hardened (SPEC §4). The executable
//! spec that every other subject is compared against.
//!
//! 1. Under the trigger and under the ceiling: the history is returned as is.
//! 2. The head (leading `system` run) is always kept; the rest is split
//!    into iterations, and an iteration with a pinned message is pinned.
//! 3. The last `keepRecent` iterations stay verbatim; the earlier unpinned
//!    ones become one summary message (`role: system`), placed after the
//!    pinned iterations of the replaced span.
//! 4. Over the ceiling: elide images outside the head, the last iteration
//!    and pinned iterations, oldest first, until it fits — each image part
//!    becomes one text part `[image elided: M, W×H, N bytes]`. Still over
//!    the ceiling or the trigger: keep fewer recent iterations, down to one.
//! 5. One left and still over the ceiling: shorten the summary to the room
//!    that is left, or drop it.
//! 6. Head + pinned + last iteration alone over the ceiling: `cannot_fit`,
//!    saying how much of it is the last iteration's own images (never
//!    elided).
//!
//! Only inline images are elided: a remote image is a URL of a few dozen
//! bytes, which a placeholder would hardly shorten (docs/contract-notes.md).
//!
//! The cut is always at an iteration boundary, so an assistant message and
//! the tool results that answer it travel together (ADR 0098's
//! `group_by_iteration/1`). The result's body is never over the ceiling.

mod floors;
mod summarise;

use std::borrow::Cow;
use std::ops::Range;

pub use crate::contract::SUMMARY_PREFIX;
pub use floors::ElisionFloors;
pub use summarise::{DigestSummariser, Summariser};

use crate::body::body_bytes;
use crate::config::Config;
use crate::contract::{self, is_summary, Head};
use crate::error::InputError;
use crate::estimate::{Adr0098, Estimator};
use crate::model::{check_well_formed, iterations, truncate_utf8, Content, Message, Part};

/// Why the reference did not return a history (SPEC §6 error kinds).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactError {
    /// Even head + pinned + the last iteration, with no summary, is over
    /// the ceiling. `images` says how much of it is images the contract
    /// never elides (those of the last iteration and pinned ones).
    #[error("cannot_fit: the smallest history the contract allows (head, pinned messages and the last iteration, no summary) is {needed} bytes, over the {ceiling}-byte ceiling{images}")]
    CannotFit {
        needed: u64,
        ceiling: u64,
        images: KeptImages,
    },
    /// The input is not a well-formed history, or the config is invalid.
    #[error("invalid_input: {0}")]
    InvalidInput(InputError),
}

/// The images of a minimal output, which the contract never elides: how
/// many, and their payload bytes. Displays as nothing when there are none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeptImages {
    pub count: u64,
    pub bytes: u64,
}

impl KeptImages {
    fn of<'m>(msgs: impl IntoIterator<Item = &'m Message>) -> KeptImages {
        let mut k = KeptImages::default();
        for i in msgs.into_iter().flat_map(|m| m.content.images()) {
            k.count += 1;
            k.bytes += i.payload_bytes();
        }
        k
    }
}

impl std::fmt::Display for KeptImages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.count > 0 {
            write!(
                f,
                "; {} bytes of it are {} image(s) of the head, the last iteration or pinned ones, which are never elided",
                self.bytes, self.count
            )?;
        }
        Ok(())
    }
}

impl CompactError {
    /// The protocol's error kind: `cannot_fit` or `invalid_input`.
    pub fn kind(&self) -> &'static str {
        match self {
            CompactError::CannotFit { .. } => "cannot_fit",
            CompactError::InvalidInput(_) => "invalid_input",
        }
    }
}

impl From<InputError> for CompactError {
    fn from(e: InputError) -> Self {
        CompactError::InvalidInput(e)
    }
}

/// The reference compactor with its parts: an estimator and a summariser.
pub struct Reference<'a> {
    pub estimator: &'a dyn Estimator,
    pub summariser: &'a dyn Summariser,
    /// How the body is measured: the exact size, [`exact_body`]. Swappable
    /// only so that the mutation tests can build the defects seen in the
    /// wild (a ceiling measured without JSON escaping, or in characters).
    pub body: BodyMeasure,
    /// How images are elided (SPEC §4 step 4): [`Elision::Spec`].
    /// Swappable, like `body`, only for the mutation tests' defects.
    pub elision: Elision,
}

/// How the reference elides images. Only [`Elision::Spec`] is SPEC §4's;
/// the others are the image defects of the mutation suite
/// (`subject::defects`), seen in the wild.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Elision {
    /// Oldest first, outside the head, the last iteration and pinned
    /// iterations; each image becomes one short text part.
    #[default]
    Spec,
    /// The last iteration's and pinned iterations' images too, once the
    /// others are gone (a 413 recovery that evicts from the protected
    /// tail: NousResearch/hermes-agent#47339).
    AlsoLastAndPinned,
    /// The image part is dropped, with no text in its place.
    DropPart,
    /// The elided message's text changes too (a note added).
    AndText,
}

/// Measures the body of a candidate history, in bytes.
pub type BodyMeasure = fn(&Config, &[&Message]) -> u64;

/// The exact body size (SPEC §2): what the reference uses.
pub fn exact_body(config: &Config, msgs: &[&Message]) -> u64 {
    body_bytes(config, msgs.iter().copied())
}

impl Default for Reference<'static> {
    fn default() -> Self {
        Reference {
            estimator: &Adr0098,
            summariser: &DigestSummariser,
            body: exact_body,
            elision: Elision::Spec,
        }
    }
}

/// Compact `history` with the reference (ADR 0098 estimator, digest summariser).
pub fn compact(config: &Config, history: &[Message]) -> Result<Vec<Message>, CompactError> {
    Reference::default().compact(config, history)
}

impl Reference<'_> {
    pub fn compact(&self, config: &Config, h: &[Message]) -> Result<Vec<Message>, CompactError> {
        self.compact_cow(config, h).map(Cow::into_owned)
    }

    /// [`Reference::compact`], borrowing the history when it comes back
    /// unchanged: a big history under the ceiling is never copied.
    pub fn compact_cow<'h>(
        &self,
        config: &Config,
        h: &'h [Message],
    ) -> Result<Cow<'h, [Message]>, CompactError> {
        config.validate()?;
        check_well_formed(h)?;
        let ceiling = config.transport_max_body_bytes;
        let fits = |msgs: &[&Message]| (self.body)(config, msgs) <= ceiling;
        let estimate = |msgs: &[&Message]| self.estimator.tokens(&mut msgs.iter().copied(), config);
        let under_trigger = |msgs: &[&Message]| estimate(msgs) <= config.trigger();

        // Step 1: nothing to do.
        let all: Vec<&Message> = h.iter().collect();
        if !contract::due_with(config, estimate(&all), || (self.body)(config, &all)) {
            return Ok(Cow::Borrowed(h));
        }

        // Step 2: head and iterations. A summary of an earlier compaction is
        // not part of the head: it is replaced like any other old iteration
        // (one summary, never a pile).
        let head = Head::of(h).kept;
        let iters: Vec<Range<usize>> = iterations(&h[head..])
            .into_iter()
            .map(|r| r.start + head..r.end + head)
            .collect();
        if iters.is_empty() {
            let needed = (self.body)(config, &all);
            return if needed <= ceiling {
                Ok(Cow::Borrowed(h))
            } else {
                Err(CompactError::CannotFit {
                    needed,
                    ceiling,
                    images: KeptImages::of(h),
                })
            };
        }

        // Steps 3–4: keep `k` recent iterations, from keepRecent down to one.
        let n = iters.len();
        for k in (1..=config.keep_recent.min(n)).rev() {
            let (replaced, recent) = iters.split_at(n - k);
            let (kept_pinned, to_summarise) = split_replaced(h, replaced);
            let summary = self.summary(config, &to_summarise);
            let recent_msgs = &h[recent[0].start..];
            let parts = Parts {
                head: &h[..head],
                pinned: &kept_pinned,
                recent: recent_msgs,
            };
            let candidate = parts.assemble(summary.as_ref());
            // Step 4: over the ceiling, elide the images of the recent
            // iterations but the last (and pinned ones), oldest first.
            let protected = self.elision == Elision::AlsoLastAndPinned;
            let elidable = elidable_at(h, recent, candidate.len(), protected);
            let elided;
            let candidate = if elidable.is_empty() || fits(&candidate) {
                candidate
            } else {
                elided = self.elide(config, &candidate, &elidable);
                let mut c = candidate;
                for (at, m) in &elided {
                    c[*at] = m;
                }
                c
            };
            if fits(&candidate) && (k == 1 || under_trigger(&candidate)) {
                return Ok(Cow::Owned(owned(&candidate)));
            }
            if k > 1 {
                continue;
            }

            // Steps 5–6: one recent iteration left, still over the ceiling.
            let minimal = parts.assemble(None);
            debug_assert!(
                owned(&minimal) == contract::minimal_output(h, head),
                "the reference's minimal output is the contract's"
            );
            let needed = (self.body)(config, &minimal);
            if needed > ceiling {
                return Err(CompactError::CannotFit {
                    needed,
                    ceiling,
                    images: KeptImages::of(minimal.iter().copied()),
                });
            }
            return Ok(Cow::Owned(match summary {
                Some(summary) => shorten_summary(config, self, &summary, &parts),
                None => owned(&minimal),
            }));
        }
        unreachable!("the loop returns at k = 1")
    }
}

impl Reference<'_> {
    /// Step 3's summary of `to_summarise`, bounded by `summaryMaxBytes`;
    /// none when there is nothing to summarise, the bound is 0, or the
    /// bound would cut the summary's marker.
    fn summary(&self, config: &Config, to_summarise: &[&Message]) -> Option<Message> {
        if to_summarise.is_empty() || config.summary_max_bytes == 0 {
            return None;
        }
        let text = self
            .summariser
            .summarise(to_summarise, config.summary_max_bytes);
        let bounded = truncate_utf8(&text, config.summary_max_bytes);
        // A bound shorter than the summary's marker leaves a text that no
        // longer reads as a summary: on the next turn it would join the
        // head and pile up. No summary instead.
        let cut_marker =
            bounded.len() < SUMMARY_PREFIX.len() && SUMMARY_PREFIX.starts_with(bounded);
        (!cut_marker).then(|| Message::system(bounded))
    }

    /// Step 4: elide the inline images of the candidate's messages at
    /// `elidable` (positions in `candidate`, in order), oldest first, until
    /// the body fits or none is left. The elided messages, by position.
    ///
    /// With the exact body measure, the body is measured once and each
    /// elision's change worked out from the one message (or, in the
    /// anthropic format, the one block) it touches — a session of a
    /// hundred screenshots is not re-measured a hundred times; a test
    /// checks the result against a measure from scratch.
    fn elide(
        &self,
        config: &Config,
        candidate: &[&Message],
        elidable: &[usize],
    ) -> Vec<(usize, Message)> {
        let ceiling = config.transport_max_body_bytes;
        let exact = std::ptr::fn_addr_eq(self.body, exact_body as BodyMeasure)
            && matches!(self.elision, Elision::Spec | Elision::AlsoLastAndPinned);
        let mut body = (self.body)(config, candidate);
        let mut out: Vec<(usize, Message)> = Vec::new();
        for &at in elidable {
            if body <= ceiling {
                break;
            }
            let mut m = candidate[at].clone();
            let mut j = 0;
            let mut noted = false;
            while j < m.content.parts().len() {
                if body <= ceiling {
                    break;
                }
                let Content::Parts(parts) = &mut m.content else {
                    break;
                };
                let Some(img) = parts[j].as_image().filter(|i| i.data().is_some()) else {
                    j += 1;
                    continue;
                };
                let text = img.elided();
                let before = std::mem::replace(&mut parts[j], text);
                match self.elision {
                    Elision::DropPart => {
                        parts.remove(j);
                    }
                    Elision::AndText => {
                        if !noted {
                            parts.push(Part::text(" [screenshot removed to save space]"));
                            noted = true;
                        }
                        j += 1;
                    }
                    Elision::Spec | Elision::AlsoLastAndPinned => j += 1,
                }
                body = if exact {
                    elided_body(config, body, &m, j - 1, &before)
                } else {
                    let mut trial = candidate.to_vec();
                    for (p, em) in &out {
                        trial[*p] = em;
                    }
                    trial[at] = &m;
                    (self.body)(config, &trial)
                };
            }
            out.push((at, m));
        }
        debug_assert!(
            !exact || {
                let mut check = candidate.to_vec();
                for (p, em) in &out {
                    check[*p] = em;
                }
                body == (self.body)(config, &check)
            },
            "the elided body, worked out part by part, is the body measured afresh"
        );
        out
    }
}

/// The messages of the `replaced` iterations of `h`: those of pinned
/// iterations, which stay (SPEC §4 step 3), and the others, which the
/// summary replaces.
fn split_replaced<'h>(
    h: &'h [Message],
    replaced: &[Range<usize>],
) -> (Vec<&'h Message>, Vec<&'h Message>) {
    let (mut kept, mut summarised) = (Vec::new(), Vec::new());
    for r in replaced {
        let msgs = &h[r.clone()];
        match msgs.iter().any(Message::is_pinned) {
            true => kept.extend(msgs),
            false => summarised.extend(msgs),
        }
    }
    (kept, summarised)
}

/// The positions, in a candidate of `len` messages that ends with the
/// `recent` iterations of `h`, of the messages whose inline images step 4
/// may elide: those of the recent iterations but the last, outside pinned
/// iterations — or, with `protected`, of every recent iteration (the
/// defect [`Elision::AlsoLastAndPinned`], and the floor below which only
/// that defect fits: [`Reference::elision_floors`]).
fn elidable_at(h: &[Message], recent: &[Range<usize>], len: usize, protected: bool) -> Vec<usize> {
    let k = recent.len();
    recent[..if protected { k } else { k - 1 }]
        .iter()
        .filter(|r| protected || !h[(*r).clone()].iter().any(Message::is_pinned))
        .flat_map(|r| r.clone())
        .filter(|&i| h[i].content.images().any(|i| i.data().is_some()))
        .map(|i| len - (h.len() - i))
        .collect()
}

/// The exact body after part `j` of `m` (now elided) replaced `before`:
/// the body `body` was with `before` in place.
fn elided_body(config: &Config, body: u64, m: &Message, j: usize, before: &Part) -> u64 {
    use crate::model::WireFormat;
    let after = &m.content.parts()[j];
    match config.wire_format {
        WireFormat::Anthropic => {
            let (was, now) = (
                crate::model::anthropic::part_block_size(before),
                crate::model::anthropic::part_block_size(after),
            );
            body + now - was
        }
        format => {
            let now = crate::body::message_size_in(format, m);
            let mut old = m.clone();
            if let Content::Parts(p) = &mut old.content {
                p[j] = before.clone();
            }
            let was = crate::body::message_size_in(format, &old);
            body + now - was
        }
    }
}

/// The pieces a candidate output is assembled from.
struct Parts<'m> {
    head: &'m [Message],
    pinned: &'m [&'m Message],
    recent: &'m [Message],
}

impl<'m> Parts<'m> {
    /// head + pinned + summary + recent, in that order (SPEC §4 step 3).
    fn assemble<'s>(&self, summary: Option<&'s Message>) -> Vec<&'s Message>
    where
        'm: 's,
    {
        self.head
            .iter()
            .chain(self.pinned.iter().copied())
            .chain(summary)
            .chain(self.recent)
            .collect()
    }
}

/// Step 5: the longest prefix of the summary (on a char boundary) that keeps
/// the body under the ceiling; no summary at all when no text fits.
fn shorten_summary(
    config: &Config,
    reference: &Reference<'_>,
    summary: &Message,
    parts: &Parts<'_>,
) -> Vec<Message> {
    let body = reference.body;
    let text = summary.content.text();
    let boundaries: Vec<usize> = (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    let fits_with = |end: usize| {
        let shorter = Message::system(&text[..end]);
        body(config, &parts.assemble(Some(&shorter))) <= config.transport_max_body_bytes
    };
    // Invariant: boundaries[lo] fits (0 is checked by the caller's minimal
    // history plus an empty summary, or dropped), boundaries[hi] does not.
    let (mut lo, mut hi) = (0usize, boundaries.len() - 1);
    if fits_with(boundaries[hi]) {
        lo = hi;
    }
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if fits_with(boundaries[mid]) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let end = boundaries[lo];
    let shorter = Message::system(&text[..end]);
    // A summary cut so short that it no longer reads as one would join the
    // head on the next turn: drop it instead.
    let unrecognisable = is_summary(summary) && !is_summary(&shorter);
    if end == 0 || unrecognisable {
        return owned(&parts.assemble(None));
    }
    owned(&parts.assemble(Some(&shorter)))
}

fn owned(msgs: &[&Message]) -> Vec<Message> {
    msgs.iter().map(|m| (*m).clone()).collect()
}
