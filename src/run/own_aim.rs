//! Aiming a case at the subject's own trigger (issue 46 item 1b). The
//! generator puts a share of its cases on the trigger by ctxgate's
//! `adr-0098` count; a subject that answers `estimate` is timed by its own
//! count (SPEC §6), whose trigger is elsewhere whenever that count differs
//! — so an off-by-one in the subject's own comparison (`>=` for `>`) was
//! never reached. Here a share of cases is moved onto the subject's own
//! point instead, by asking its estimate while one text of the case grows
//! or shrinks: the point itself (nothing due, by its count), or one token
//! either side.
//!
//! Generated cases only: a corpus's histories (`--corpus`) are judged as
//! they are. The case is changed before it is judged, so that what fails, shrinks and
//! is saved is the case as judged: a fixture replays it as it is. A case is
//! left as it is when its point is out of reach of one text (a head over
//! it, a pad past [`MAX_PAD_BYTES`]) or when the subject's count steps over
//! the point (a count that moves two tokens at a time); the report counts
//! both.

use crate::config::Config;
use crate::contract::TriggerRange;
use crate::generate::{text, Case, ContentClass, SplitMix64};
use crate::invariant::Invariant;
use crate::model::{check_well_formed, head_len, iterations, Content, Message};
use crate::subject::{EstimateReply, Subject};

/// One case in this many is aimed at the subject's own point.
pub const OWN_AIM_EVERY: u64 = 6;
/// The most a text grows by while aiming.
pub const MAX_PAD_BYTES: usize = 512 * 1024;
/// No case whose body is over this is aimed (each probe sends the whole
/// history: image cases would cost megabytes a probe).
pub const MAX_AIMED_BODY_BYTES: u64 = 2 * 1024 * 1024;
/// The most estimates one case may take.
const MAX_PROBES: usize = 40;

/// What aiming did with a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aimed {
    /// Its own estimate is now the point aimed at.
    OnPoint,
    /// Left as it was: out of reach, or the count stepped over the point.
    Missed,
}

/// Whether case `index` is aimed, for a subject that estimates and claims
/// an invariant its own count times.
pub fn wanted(subject: &dyn Subject, checked: crate::invariant::InvariantSet, index: u64) -> bool {
    let info = subject.info();
    let claimed = checked.intersect(info.claimed());
    info.estimates
        && Invariant::TIMED.iter().any(|i| claimed.contains(*i))
        && crate::generate::mix(0x6f77_6e5f_6169_6d00, index).is_multiple_of(OWN_AIM_EVERY)
}

/// Move `case` onto the subject's own point: its estimate the low end of
/// the point it declared (`compactAt × trigger`; nothing due by its count),
/// or one token under or over it. `None` when the case was not tried (ill
/// formed, too big, no text to move); a fault of the subject while aiming
/// leaves the case as it was, for the run to meet the fault again.
pub fn aim(subject: &mut dyn Subject, case: &mut Case, index: u64) -> Option<Aimed> {
    if check_well_formed(&case.messages).is_err()
        || crate::body::body_bytes(&case.config, &case.messages) > MAX_AIMED_BODY_BYTES
    {
        return None;
    }
    let point = TriggerRange::of(&case.config).scaled(subject.info().compact_at);
    let mut rng = SplitMix64::new(crate::generate::mix(0x7061_645f_7465_7874, index));
    let want = match rng.below(4) {
        0 => point.low.checked_sub(1)?,
        1 => point.high + 1,
        _ => point.low,
    };
    // Over the point already: the longest run of whole iterations under
    // it (a text then grows it onto the point).
    let mut messages = case.messages.clone();
    let Some(cut) = under_point(subject, &case.config, &messages, want) else {
        return Some(Aimed::Missed);
    };
    messages.truncate(cut);
    let Some(at) = moved_text(&messages) else {
        return Some(Aimed::Missed);
    };
    let Content::Text(original) = &messages[at].content else {
        return None;
    };
    let full = format!(
        "{original}{}",
        text::text(&mut rng, ContentClass::Prose, MAX_PAD_BYTES)
    );
    let base = original.len();
    let mut probe = Probe {
        subject,
        config: &case.config,
        messages: messages.clone(),
        at,
        full: &full,
        probes: 0,
        faulted: false,
    };
    let Some((len, estimate)) = probe.seek(base, want) else {
        return (!probe.faulted).then_some(Aimed::Missed);
    };
    if estimate == want {
        messages[at].content = Content::Text(crate::model::truncate_utf8(&full, len).to_owned());
        case.messages = messages;
        Some(Aimed::OnPoint)
    } else {
        Some(Aimed::Missed)
    }
}

/// How many of `msgs` to keep so that the subject's estimate is under
/// `want`: all of them when it is, else the head and the most whole
/// iterations after it that are (found by halving). `None` when even the
/// head alone is not, or the subject did not answer.
fn under_point(
    subject: &mut dyn Subject,
    config: &Config,
    msgs: &[Message],
    want: u64,
) -> Option<usize> {
    let mut estimate = |n: usize| match subject.estimate(config, &msgs[..n]) {
        Ok(EstimateReply::Tokens(e)) => Some(e.tokens),
        _ => None,
    };
    if estimate(msgs.len())? < want {
        return Some(msgs.len());
    }
    let head = head_len(msgs);
    let cuts: Vec<usize> = std::iter::once(head)
        .chain(iterations(&msgs[head..]).iter().map(|r| head + r.end))
        .filter(|&c| c < msgs.len())
        .collect();
    // cuts[lo] is under; cuts[hi] (or the whole history) is not.
    if estimate(*cuts.first()?)? >= want {
        return None;
    }
    let (mut lo, mut hi) = (0, cuts.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if estimate(cuts[mid])? < want {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(cuts[lo])
}

/// The text that moves: the longest plain-text content after the head,
/// else in it.
fn moved_text(msgs: &[Message]) -> Option<usize> {
    let head = head_len(msgs);
    let longest = |range: std::ops::Range<usize>| {
        range
            .filter(|&i| matches!(msgs[i].content, Content::Text(_)))
            .max_by_key(|&i| (msgs[i].content.text().len(), i))
    };
    longest(head..msgs.len()).or_else(|| longest(0..head))
}

/// The subject's estimate of the case with its moving text cut to a length
/// of `full` (the original text, then the pad).
struct Probe<'a> {
    subject: &'a mut dyn Subject,
    config: &'a Config,
    messages: Vec<Message>,
    at: usize,
    full: &'a str,
    probes: usize,
    /// The subject did not answer an estimate.
    faulted: bool,
}

impl Probe<'_> {
    fn estimate(&mut self, len: usize) -> Option<u64> {
        if self.probes >= MAX_PROBES {
            return None;
        }
        self.probes += 1;
        let text = crate::model::truncate_utf8(self.full, len).to_owned();
        self.messages[self.at].content = Content::Text(text);
        match self.subject.estimate(self.config, &self.messages) {
            Ok(EstimateReply::Tokens(e)) => Some(e.tokens),
            _ => {
                self.faulted = true;
                None
            }
        }
    }

    /// The shortest length at which the estimate is at least `want`, and
    /// the estimate there, found by galloping from `base` and halving: a
    /// count that is monotone in the text's length (every estimate-monotone
    /// one near enough) takes a dozen or two probes. `None` when no length
    /// reaches it, or a probe went unanswered.
    fn seek(&mut self, base: usize, want: u64) -> Option<(usize, u64)> {
        let max = self.full.len();
        let now = self.estimate(base)?;
        // [lo, hi]: estimate(lo) < want <= estimate(hi).
        let (mut lo, mut hi, mut at_hi);
        if now >= want {
            hi = base;
            at_hi = now;
            let mut step = 64usize;
            loop {
                let next = hi.saturating_sub(step);
                let e = self.estimate(next)?;
                if e < want {
                    lo = next;
                    break;
                }
                if next == 0 {
                    return None; // the rest of the case is over it already
                }
                (hi, at_hi) = (next, e);
                step = step.saturating_mul(2);
            }
        } else {
            lo = base;
            let mut step = 64usize;
            loop {
                let next = (lo + step).min(max);
                let e = self.estimate(next)?;
                if e >= want {
                    (hi, at_hi) = (next, e);
                    break;
                }
                if next == max {
                    return None; // past the pad
                }
                lo = next;
                step = step.saturating_mul(2);
            }
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let e = self.estimate(mid)?;
            if e >= want {
                (hi, at_hi) = (mid, e);
            } else {
                lo = mid;
            }
        }
        Some((hi, at_hi))
    }
}
