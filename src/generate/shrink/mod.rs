//! Shrinking that understands histories (issue 3, item 3).
//!
//! A candidate is made by one *edit*: remove whole iterations (halves,
//! quarters, …, then one at a time), remove one parallel call together with
//! its result, drop pins, drop extra fields, shrink the envelope, shrink a
//! call's arguments, shorten a text (to nothing, to half, then trimmed by
//! ever smaller steps), remove one content part, shorten an image's payload
//! (its header kept, so its pixels — and its tokens — stay), or simplify
//! the config (engine format, fewer recent iterations, bytesPerToken toward
//! 4, a plainer threshold, smaller and rounder numbers).
//!
//! Under a pinned config (`--config`) the ceiling cannot move, and a body
//! just over it falls under once any message goes. So iterations and
//! parallel calls may also be *folded* away (issue 28, item 4): removed,
//! with their text, images and arguments moved into a message that stays
//! and that message padded back to the body's size to the byte; the text
//! edits then trim the filler. A 29-message case 1 byte over Express's
//! 100 KB shrinks to 4 messages this way.
//!
//! Every edit that changes the history is tried twice: first *anchored*,
//! with the ceiling and the trigger moved by as much as the body and the
//! estimate moved, so that a case sitting on a boundary stays on it while
//! it shrinks (off-by-one failures would vanish otherwise); then plain.
//!
//! Candidates of a well-formed case are well formed (checked, not hoped
//! for: STYLE habit 4), and every config validates. An ill-formed case
//! (opt-in) may also lose single messages. Each edit makes the case
//! strictly smaller in some measure, and the search is bounded.
//!
//! Here: the greedy walk ([`shrink`], [`Shrinker`]). The edits and how
//! one is applied are in `edits`; folding in `fold`; the simpler JSON
//! values (arguments, envelope) in `values`; the simpler configs in
//! `config`.

mod config;
mod edits;
mod fold;
mod values;

use super::Case;
use edits::{apply, edits, Edit};

/// Default bound on the predicate calls of [`shrink`].
pub const MAX_SHRINK_CALLS: usize = 5_000;

/// All one-edit candidates of `case`, biggest reductions first.
pub fn shrink_candidates(case: &Case) -> Vec<Case> {
    let well_formed = case.is_well_formed();
    edits(case)
        .iter()
        .filter_map(|(e, anchored)| apply(case, e, *anchored, well_formed))
        .collect()
}

/// Greedy shrinking to a local minimum: take the first candidate that
/// still fails, repeat until no candidate does, within
/// [`MAX_SHRINK_CALLS`] calls of `still_fails`.
pub fn shrink(case: Case, still_fails: impl FnMut(&Case) -> bool) -> Case {
    shrink_with_limit(case, MAX_SHRINK_CALLS, still_fails)
}

/// [`shrink`] with an explicit bound on the calls of `still_fails`.
pub fn shrink_with_limit(
    case: Case,
    max_calls: usize,
    mut still_fails: impl FnMut(&Case) -> bool,
) -> Case {
    let mut s = Shrinker::new(case);
    let mut calls = 0;
    while calls < max_calls {
        let Some(candidate) = s.next_candidate() else {
            break;
        };
        calls += 1;
        if still_fails(&candidate) {
            s.accept(candidate);
        }
    }
    s.case
}

/// The state of a greedy walk over the edits of the current case: tries
/// them in a cycle and stops after a full cycle without success. Shared
/// by [`shrink`] and the proptest value tree.
pub(crate) struct Shrinker {
    pub case: Case,
    well_formed: bool,
    edits: Vec<(Edit, bool)>,
    next: usize,
    since_success: usize,
}

impl Shrinker {
    pub fn new(case: Case) -> Self {
        let edits = edits(&case);
        Shrinker {
            well_formed: case.is_well_formed(),
            case,
            edits,
            next: 0,
            since_success: 0,
        }
    }

    /// The next candidate, or None after a full cycle without success.
    pub fn next_candidate(&mut self) -> Option<Case> {
        while self.since_success < self.edits.len() {
            let (edit, anchored) = &self.edits[self.next % self.edits.len()];
            self.next += 1;
            self.since_success += 1;
            if let Some(c) = apply(&self.case, edit, *anchored, self.well_formed) {
                return Some(c);
            }
        }
        None
    }

    /// The candidate still fails: it becomes the case to shrink.
    pub fn accept(&mut self, candidate: Case) {
        self.case = candidate;
        self.edits = edits(&self.case);
        self.next %= self.edits.len().max(1);
        self.since_success = 0;
    }
}
