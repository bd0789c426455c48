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

use std::ops::Range;

use serde_json::{Map, Value};

use super::history::set_trigger;
use super::Case;
use crate::model::{iterations, Content, Message, Part, Role, WireFormat};

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

/// One way to make a case smaller (indexes refer to the case it was made for).
#[derive(Debug, Clone)]
pub(crate) enum Edit {
    /// Remove iterations `from..to` (indexes into `iterations(messages)`).
    RemoveIterations(Range<usize>),
    /// Remove one message (ill-formed cases only).
    RemoveMessage(usize),
    /// Remove call `call` of message `msg` and the results that answer it.
    RemoveCall {
        msg: usize,
        call: usize,
    },
    /// Remove iterations `span` (as [`Edit::RemoveIterations`]) and fold
    /// what they carried into the biggest message of the iteration just
    /// before them (`after: false`) or just after them (`after: true`).
    FoldIterations {
        span: Range<usize>,
        after: bool,
    },
    /// Remove call `call` of message `msg` as [`Edit::RemoveCall`] does,
    /// folding its arguments into a neighbouring call's and its results
    /// into that call's result.
    FoldCall {
        msg: usize,
        call: usize,
    },
    DropPins,
    DropPin(usize),
    DropExtras,
    DropMessageExtras(usize),
    /// The `nth` simpler envelope.
    Envelope(usize),
    /// The `nth` simpler arguments of a call.
    Arguments {
        msg: usize,
        call: usize,
        nth: usize,
    },
    /// Keep the first `keep` bytes of a message's content.
    Text {
        msg: usize,
        keep: usize,
    },
    /// Remove part `part` of a message's content parts.
    RemovePart {
        msg: usize,
        part: usize,
    },
    /// Keep the first `keep` characters of an inline image's base64 (a
    /// multiple of four, past its header).
    ImagePayload {
        msg: usize,
        part: usize,
        keep: usize,
    },
    /// The `nth` simpler config.
    Config(usize),
}

/// The fewest base64 characters an image is shortened to: a whole PNG,
/// GIF, WebP or plain JPEG header, so that its pixels still read.
const IMAGE_KEEP: usize = 64;

fn edits(case: &Case) -> Vec<(Edit, bool)> {
    let msgs = &case.messages;
    let mut out: Vec<Edit> = Vec::new();
    let its = iterations(msgs);
    let n = its.len();
    let mut size = n / 2;
    while size >= 1 {
        let mut from = 0;
        while from < n {
            out.push(Edit::RemoveIterations(from..(from + size).min(n)));
            from += size;
        }
        size = if size == 1 {
            0
        } else {
            size.div_ceil(2).min(size - 1)
        };
    }
    if n == 1 {
        out.push(Edit::RemoveIterations(0..1));
    }
    if !case.is_well_formed() {
        out.extend((0..msgs.len()).map(Edit::RemoveMessage));
    }
    for (i, m) in msgs.iter().enumerate() {
        if m.calls().len() >= 2 {
            out.extend((0..m.calls().len()).map(|call| Edit::RemoveCall { msg: i, call }));
        }
    }
    // Folds come after the plain removals: a case that still fails
    // without the messages needs none of their bytes.
    let removals: Vec<Range<usize>> = out
        .iter()
        .filter_map(|e| match e {
            Edit::RemoveIterations(r) if r.len() < n => Some(r.clone()),
            _ => None,
        })
        .collect();
    for span in removals {
        if span.end < n {
            out.push(Edit::FoldIterations {
                span: span.clone(),
                after: true,
            });
        }
        if span.start > 0 {
            out.push(Edit::FoldIterations { span, after: false });
        }
    }
    for (i, m) in msgs.iter().enumerate() {
        if m.calls().len() >= 2 {
            out.extend((0..m.calls().len()).map(|call| Edit::FoldCall { msg: i, call }));
        }
    }
    if !case.config.envelope.is_empty() {
        let k = envelope_candidate_count(&case.config.envelope);
        out.extend((0..k).map(Edit::Envelope));
    }
    for (i, m) in msgs.iter().enumerate() {
        let parts = m.content.parts();
        out.extend((0..parts.len()).map(|part| Edit::RemovePart { msg: i, part }));
        for (j, p) in parts.iter().enumerate() {
            let Some(d) = p.as_image().and_then(|img| img.data()) else {
                continue;
            };
            let len = d.data().len();
            for keep in [IMAGE_KEEP, len / 2 / 4 * 4] {
                if keep >= IMAGE_KEEP && keep < len {
                    out.push(Edit::ImagePayload {
                        msg: i,
                        part: j,
                        keep,
                    });
                }
            }
        }
    }
    for (i, m) in msgs.iter().enumerate() {
        if !matches!(m.content, Content::Text(_)) {
            continue;
        }
        let len = m.content.text_len();
        if len == 0 {
            continue;
        }
        let mut keeps = vec![0, len / 2];
        let mut step = len / 4;
        while step >= 1 {
            keeps.push(len - step);
            step /= 2;
        }
        let s = m.content.text();
        let mut last = usize::MAX;
        for keep in keeps {
            let mut k = keep.min(len);
            while !s.is_char_boundary(k) {
                k -= 1;
            }
            if k < len && k != last {
                out.push(Edit::Text { msg: i, keep: k });
                last = k;
            }
        }
    }
    for (i, m) in msgs.iter().enumerate() {
        for (j, c) in m.calls().iter().enumerate() {
            let k = value_candidate_count(&c.arguments, 0);
            out.extend((0..k).map(|nth| Edit::Arguments {
                msg: i,
                call: j,
                nth,
            }));
        }
    }
    let pinned: Vec<usize> = (0..msgs.len())
        .filter(|&i| msgs[i].pinned.is_some())
        .collect();
    if pinned.len() > 1 {
        out.push(Edit::DropPins);
    }
    out.extend(pinned.into_iter().map(Edit::DropPin));
    let extras: Vec<usize> = (0..msgs.len())
        .filter(|&i| {
            !msgs[i].extra.is_empty() || msgs[i].calls().iter().any(|c| !c.extra.is_empty())
        })
        .collect();
    if extras.len() > 1 {
        out.push(Edit::DropExtras);
    }
    out.extend(extras.into_iter().map(Edit::DropMessageExtras));
    let mut pairs: Vec<(Edit, bool)> = out
        .into_iter()
        .flat_map(|e| [(e.clone(), true), (e, false)])
        .collect();
    pairs.extend((0..config_candidates(case).len()).map(|k| (Edit::Config(k), false)));
    pairs
}

/// The case after `edit`, or None when the edit does not apply, changes
/// nothing, or would break well-formedness or the config.
pub(crate) fn apply(case: &Case, edit: &Edit, anchored: bool, well_formed: bool) -> Option<Case> {
    let mut c = case.clone();
    let msgs = &mut c.messages;
    match edit {
        Edit::RemoveIterations(r) => {
            let its = iterations(msgs);
            let span = its.get(r.start)?.start..its.get(r.end.checked_sub(1)?)?.end;
            msgs.drain(span);
        }
        Edit::RemoveMessage(i) => {
            if *i >= msgs.len() {
                return None;
            }
            msgs.remove(*i);
        }
        Edit::RemoveCall { msg, call } => {
            let its = iterations(msgs);
            let range = its.iter().find(|r| r.start == *msg)?.clone();
            let calls = msgs[*msg].tool_calls.as_mut()?;
            if *call >= calls.len() || calls.len() < 2 {
                return None;
            }
            let id = calls.remove(*call).id;
            let mut k = range.end;
            while k > range.start + 1 {
                k -= 1;
                if msgs[k].role == Role::Tool && msgs[k].tool_call_id.as_deref() == Some(&id) {
                    msgs.remove(k);
                }
            }
        }
        Edit::FoldIterations { span, after } => {
            let t = fold_iterations(msgs, span.clone(), *after, c.config.wire_format)?;
            keep_body(case, &mut c, t);
        }
        Edit::FoldCall { msg, call } => {
            let t = fold_call(msgs, *msg, *call, c.config.wire_format)?;
            keep_body(case, &mut c, t);
        }
        Edit::DropPins => msgs.iter_mut().for_each(|m| m.pinned = None),
        Edit::DropPin(i) => msgs.get_mut(*i)?.pinned = None,
        Edit::DropExtras => {
            for m in msgs.iter_mut() {
                m.extra.clear();
                m.tool_calls
                    .iter_mut()
                    .flatten()
                    .for_each(|c| c.extra.clear());
            }
        }
        Edit::DropMessageExtras(i) => {
            let m = msgs.get_mut(*i)?;
            m.extra.clear();
            m.tool_calls
                .iter_mut()
                .flatten()
                .for_each(|c| c.extra.clear());
        }
        Edit::Envelope(nth) => {
            let env = Value::Object(std::mem::take(&mut c.config.envelope));
            match value_candidate(&env, 0, *nth)? {
                Value::Object(o) => c.config.envelope = o,
                _ => return None,
            }
        }
        Edit::Arguments { msg, call, nth } => {
            let call = msgs.get_mut(*msg)?.tool_calls.as_mut()?.get_mut(*call)?;
            call.arguments = std::sync::Arc::new(value_candidate(&call.arguments, 0, *nth)?);
        }
        Edit::Text { msg, keep } => match &mut msgs.get_mut(*msg)?.content {
            Content::Text(s) if *keep < s.len() && s.is_char_boundary(*keep) => s.truncate(*keep),
            _ => return None,
        },
        Edit::RemovePart { msg, part } => match &mut msgs.get_mut(*msg)?.content {
            Content::Parts(p) if *part < p.len() => {
                p.remove(*part);
            }
            _ => return None,
        },
        Edit::ImagePayload { msg, part, keep } => {
            let Content::Parts(p) = &mut msgs.get_mut(*msg)?.content else {
                return None;
            };
            let crate::model::Part::Image(img) = p.get_mut(*part)? else {
                return None;
            };
            let crate::model::ImageSource::Inline(d) = &img.source else {
                return None;
            };
            let data = d.data().get(..*keep)?;
            if data.len() >= d.data().len() {
                return None;
            }
            img.source = crate::model::ImageSource::Inline(crate::model::ImageData::new(
                d.media_type(),
                data,
            ));
        }
        Edit::Config(nth) => c.config = config_candidates(case).into_iter().nth(*nth)?,
    }
    if anchored && !reanchor(case, &mut c) {
        return None;
    }
    if c == *case || c.config.validate().is_err() || (well_formed && !c.is_well_formed()) {
        return None;
    }
    Some(c)
}

/// What removed messages carried, to be folded into one that stays: the
/// history loses messages but keeps (nearly) its bytes, so that a body
/// over a fixed ceiling stays over it with fewer messages.
#[derive(Default)]
struct Folded {
    text: String,
    images: Vec<Part>,
    arguments: Vec<Value>,
}

impl Folded {
    fn of(msgs: &[Message]) -> Folded {
        let mut f = Folded::default();
        for m in msgs {
            f.text.push_str(&m.content.text());
            f.images.extend(
                m.content
                    .parts()
                    .iter()
                    .filter(|p| p.as_image().is_some())
                    .cloned(),
            );
            f.arguments
                .extend(m.calls().iter().map(|c| Value::clone(&c.arguments)));
        }
        f
    }

    /// Fold into message `t`: the text after its own, the images into its
    /// parts (a user message's, or any message's that has parts already),
    /// the arguments into `call`'s (an index into `msgs[call.0]`'s calls),
    /// or as JSON text when there is no call to take them. Returns `t`.
    fn into(
        self,
        msgs: &mut [Message],
        t: usize,
        call: Option<(usize, usize)>,
        format: WireFormat,
    ) -> Option<usize> {
        let Folded {
            mut text,
            images,
            arguments,
        } = self;
        match call {
            Some((m, c)) => {
                let into = &mut msgs[m].tool_calls.as_mut()?[c].arguments;
                let mut v = Value::clone(into);
                arguments
                    .into_iter()
                    .for_each(|a| merge_arguments(&mut v, a));
                *into = std::sync::Arc::new(v);
            }
            None => arguments.iter().for_each(|a| text.push_str(&a.to_string())),
        }
        let target = &mut msgs[t];
        // `openai` carries a tool's images in a user message: keep them
        // where that format has them.
        let takes_images = match target.role {
            Role::User => true,
            Role::Tool if format == WireFormat::Openai => false,
            _ => matches!(target.content, Content::Parts(_)),
        };
        if text.is_empty() && (images.is_empty() || !takes_images) {
            return Some(t);
        }
        let content = std::mem::take(&mut target.content);
        target.content = match content {
            Content::Parts(mut parts) => {
                match parts.iter_mut().rev().find_map(|p| match p {
                    Part::Text(t) => Some(t),
                    _ => None,
                }) {
                    Some(last) => last.text.push_str(&text),
                    None if !text.is_empty() => parts.push(Part::text(text)),
                    None => {}
                }
                parts.extend(images);
                Content::Parts(parts)
            }
            other if images.is_empty() || !takes_images => {
                let mut s = other.text().into_owned();
                s.push_str(&text);
                Content::Text(s)
            }
            other => {
                let mut s = other.text().into_owned();
                s.push_str(&text);
                let mut parts = vec![Part::text(s)];
                parts.extend(images);
                Content::Parts(parts)
            }
        };
        Some(t)
    }
}

/// Grow message `m`'s text by `bytes` ASCII bytes (in its last text part,
/// if it has parts): what the removed messages' envelopes (role, ids,
/// brackets) weighed, so that a fold keeps the body's size to the byte and
/// a body just over a fixed ceiling stays over it. The text edits that
/// follow trim the filler first.
fn pad(m: &mut Message, bytes: usize) {
    let filler = ".".repeat(bytes);
    match &mut m.content {
        Content::Text(s) => s.push_str(&filler),
        Content::Parts(parts) => match parts.iter_mut().rev().find_map(|p| match p {
            Part::Text(t) => Some(t),
            _ => None,
        }) {
            Some(last) => last.text.push_str(&filler),
            None => parts.push(Part::text(filler)),
        },
        other => *other = Content::Text(filler),
    }
}

/// `more` inside `into`: a member of an object (under a key it does not
/// have), an element of an array, the tail of a string; otherwise both
/// as an array.
fn merge_arguments(into: &mut Value, more: Value) {
    match (into, more) {
        (Value::Object(o), more) => {
            let mut key = "folded".to_owned();
            let mut k = 1;
            while o.contains_key(&key) {
                k += 1;
                key = format!("folded{k}");
            }
            o.insert(key, more);
        }
        (Value::Array(a), more) => a.push(more),
        (Value::String(s), Value::String(t)) => s.push_str(&t),
        (into, more) => *into = Value::Array(vec![into.take(), more]),
    }
}

/// Pad message `t` of the folded case `after` back to the body of `before`;
/// a second round when the first fell short: a wire format may write the
/// padded message with other bytes around it than before.
fn keep_body(before: &Case, after: &mut Case, t: usize) {
    for _ in 0..3 {
        let lost = before.body_bytes().saturating_sub(after.body_bytes());
        if lost == 0 {
            return;
        }
        pad(&mut after.messages[t], lost as usize);
    }
}

/// [`Edit::FoldIterations`]: the messages of iterations `span` removed,
/// what they carried folded into the biggest non-system message of the
/// neighbouring iteration (its arguments into that iteration's first call).
fn fold_iterations(
    msgs: &mut Vec<Message>,
    span: Range<usize>,
    after: bool,
    format: WireFormat,
) -> Option<usize> {
    let its = iterations(msgs);
    let removed = its.get(span.start)?.start..its.get(span.end.checked_sub(1)?)?.end;
    let neighbour = if after {
        its.get(span.end)?.clone()
    } else {
        its.get(span.start.checked_sub(1)?)?.clone()
    };
    let t = neighbour
        .clone()
        .filter(|&i| msgs[i].role != Role::System)
        .max_by_key(|&i| msgs[i].content.text_len())?;
    let call = msgs[neighbour.start]
        .opens_iteration()
        .then_some((neighbour.start, 0));
    let folded = Folded::of(&msgs[removed.clone()]);
    let shift = |i: usize| if after { i - removed.len() } else { i };
    msgs.drain(removed.clone());
    folded.into(msgs, shift(t), call.map(|(m, c)| (shift(m), c)), format)
}

/// [`Edit::FoldCall`]: call `call` of message `msg` removed with its
/// results; its arguments folded into the call before it (after it, for
/// the first), its results into that call's first result (or, when it has
/// none, the iteration's biggest).
fn fold_call(
    msgs: &mut Vec<Message>,
    msg: usize,
    call: usize,
    format: WireFormat,
) -> Option<usize> {
    let its = iterations(msgs);
    let range = its.iter().find(|r| r.start == msg)?.clone();
    let calls = msgs[msg].calls();
    if call >= calls.len() || calls.len() < 2 {
        return None;
    }
    let keep = if call == 0 { 1 } else { call - 1 };
    let (id, keep_id) = (calls[call].id.clone(), calls[keep].id.clone());
    let answers = |id: &str, m: &Message| m.tool_call_id.as_deref() == Some(id);
    let results: Vec<usize> = (range.start + 1..range.end)
        .filter(|&k| answers(&id, &msgs[k]))
        .collect();
    if results.is_empty() {
        // Nothing to fold: `RemoveCall` is the smaller move.
        return None;
    }
    let mut folded = Folded::of(&results.iter().map(|&k| msgs[k].clone()).collect::<Vec<_>>());
    let removed_call = msgs[msg].tool_calls.as_mut()?.remove(call);
    folded.arguments = vec![Value::clone(&removed_call.arguments)];
    for &k in results.iter().rev() {
        msgs.remove(k);
    }
    let end = range.end - results.len();
    let t = (range.start + 1..end)
        .find(|&k| answers(&keep_id, &msgs[k]))
        .or_else(|| (range.start..end).max_by_key(|&k| msgs[k].content.text_len()))?;
    let keep = if call == 0 { 0 } else { keep };
    folded.into(msgs, t, Some((msg, keep)), format)
}

/// Move the ceiling and the trigger by as much as the edit moved the body
/// and the estimate. False when nothing moved or no config can follow.
fn reanchor(before: &Case, after: &mut Case) -> bool {
    let body_delta = before.body_bytes() as i64 - after.body_bytes() as i64;
    let tokens_delta = before.estimate() as i64 - after.estimate() as i64;
    if body_delta == 0 && tokens_delta == 0 {
        return false;
    }
    let ceiling = before.config.transport_max_body_bytes as i64 - body_delta;
    let trigger = before.config.trigger() as i64 - tokens_delta;
    if ceiling < 1 || trigger < 0 {
        return false;
    }
    after.config.transport_max_body_bytes = ceiling as u64;
    after.config.trigger() == trigger as u64
        || set_trigger(&mut after.config, trigger as u64, false, true, 0)
}

/// How many members a container's candidates touch, and how many
/// candidates of each member are tried (keeps the edit list short for
/// wide values; the greedy loop comes back to the rest after a success).
const WIDE: usize = 24;
const PER_MEMBER: usize = 3;
const DEEP: usize = 4;

/// The number of simpler JSON values [`value_candidate`] offers for `v`:
/// empty, fewer members, simpler members (to depth [`DEEP`]), a shorter
/// string, a shorter number. Counted without building them.
fn value_candidate_count(v: &Value, depth: usize) -> usize {
    let members = |children: &mut dyn Iterator<Item = &Value>| -> usize {
        if depth >= DEEP {
            return 0;
        }
        children
            .take(WIDE)
            .map(|c| value_candidate_count(c, depth + 1).min(PER_MEMBER))
            .sum()
    };
    match v {
        Value::Object(o) if !o.is_empty() => {
            let fewer = if o.len() > 1 { o.len().min(WIDE) } else { 0 };
            1 + fewer + members(&mut o.values())
        }
        Value::Array(a) if !a.is_empty() => {
            let half = (a.len() > 2) as usize;
            let fewer = if a.len() > 1 { a.len().min(WIDE) } else { 0 };
            1 + half + fewer + members(&mut a.iter())
        }
        Value::String(s) if !s.is_empty() => {
            1 + (!crate::model::truncate_utf8(s, s.len() / 2).is_empty()) as usize
        }
        // Shorter digits only, so that every edit makes the case smaller.
        Value::Number(n) if n.to_string().len() > 1 => 1,
        _ => 0,
    }
}

/// Candidate `k` (in `0..value_candidate_count(v)`) of a simpler `v`.
fn value_candidate(v: &Value, depth: usize, mut k: usize) -> Option<Value> {
    match v {
        Value::Object(o) if !o.is_empty() => {
            if k == 0 {
                return Some(Value::Object(Map::new()));
            }
            k -= 1;
            if o.len() > 1 {
                let n = o.len().min(WIDE);
                if k < n {
                    let mut smaller = o.clone();
                    let key = o.keys().nth(k)?;
                    smaller.shift_remove(key);
                    return Some(Value::Object(smaller));
                }
                k -= n;
            }
            if depth < DEEP {
                for (key, child) in o.iter().take(WIDE) {
                    let n = value_candidate_count(child, depth + 1).min(PER_MEMBER);
                    if k < n {
                        let mut o2 = o.clone();
                        o2.insert(key.clone(), value_candidate(child, depth + 1, k)?);
                        return Some(Value::Object(o2));
                    }
                    k -= n;
                }
            }
            None
        }
        Value::Array(a) if !a.is_empty() => {
            if k == 0 {
                return Some(Value::Array(Vec::new()));
            }
            k -= 1;
            if a.len() > 2 {
                if k == 0 {
                    return Some(Value::Array(a[..a.len() / 2].to_vec()));
                }
                k -= 1;
            }
            if a.len() > 1 {
                let n = a.len().min(WIDE);
                if k < n {
                    let mut smaller = a.clone();
                    smaller.remove(k);
                    return Some(Value::Array(smaller));
                }
                k -= n;
            }
            if depth < DEEP {
                for (i, child) in a.iter().enumerate().take(WIDE) {
                    let n = value_candidate_count(child, depth + 1).min(PER_MEMBER);
                    if k < n {
                        let mut a2 = a.clone();
                        a2[i] = value_candidate(child, depth + 1, k)?;
                        return Some(Value::Array(a2));
                    }
                    k -= n;
                }
            }
            None
        }
        Value::String(s) if !s.is_empty() => match k {
            0 => Some(Value::String(String::new())),
            1 => {
                let half = crate::model::truncate_utf8(s, s.len() / 2);
                (!half.is_empty()).then(|| Value::String(half.to_owned()))
            }
            _ => None,
        },
        Value::Number(n) if k == 0 && n.to_string().len() > 1 => Some(Value::from(0)),
        _ => None,
    }
}

/// [`value_candidate_count`] of the envelope as an object, without copying it.
fn envelope_candidate_count(env: &Map<String, Value>) -> usize {
    let fewer = if env.len() > 1 {
        env.len().min(WIDE)
    } else {
        0
    };
    let members: usize = env
        .values()
        .take(WIDE)
        .map(|c| value_candidate_count(c, 1).min(PER_MEMBER))
        .sum();
    1 + fewer + members
}

/// Simpler configs: defaults where they keep the case's trigger, smaller
/// and rounder numbers, with the ratios between ceiling and window kept
/// in one of the candidates.
fn config_candidates(case: &Case) -> Vec<crate::Config> {
    let c = &case.config;
    let mut out = Vec::new();
    let mut with = |f: &dyn Fn(&mut crate::Config)| {
        let mut d = c.clone();
        f(&mut d);
        if d != *c && d.validate().is_ok() {
            out.push(d);
        }
    };
    if c.wire_format != WireFormat::Engine {
        with(&|d| d.wire_format = WireFormat::Engine);
    }
    if c.keep_recent > 1 {
        with(&|d| d.keep_recent = 1);
        with(&|d| d.keep_recent -= 1);
    }
    if c.bytes_per_token != 4 {
        // Keep the trigger's size in bytes: window × bytesPerToken.
        with(&|d| {
            d.context_window = (d.context_window * d.bytes_per_token / 4).max(1);
            d.bytes_per_token = 4;
        });
    }
    if c.threshold != 0.7 && c.threshold != 1.0 {
        for t in [
            0.7,
            1.0,
            (c.threshold * 10.0).round().clamp(1.0, 10.0) / 10.0,
        ] {
            with(&|d| {
                let trigger = d.trigger();
                d.threshold = t;
                set_trigger(d, trigger, false, true, 0);
            });
        }
    }
    let halve_both = |d: &mut crate::Config| {
        d.transport_max_body_bytes = (d.transport_max_body_bytes / 2).max(1);
        d.context_window = (d.context_window / 2).max(1);
    };
    with(&halve_both);
    with(&|d| d.transport_max_body_bytes = (d.transport_max_body_bytes / 2).max(1));
    with(&|d| d.context_window = (d.context_window / 2).max(1));
    with(&|d| d.transport_max_body_bytes = round_down(d.transport_max_body_bytes));
    with(&|d| d.context_window = round_down(d.context_window));
    if c.summary_max_bytes > 0 {
        with(&|d| d.summary_max_bytes = 0);
        with(&|d| d.summary_max_bytes /= 2);
        with(&|d| d.summary_max_bytes = round_down(d.summary_max_bytes as u64) as usize);
    }
    out
}

/// `x` rounded down to two significant digits (at least 1).
fn round_down(x: u64) -> u64 {
    let mut p = 1;
    while x / p >= 100 {
        p *= 10;
    }
    (x / p * p).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::SplitMix64;

    #[test]
    fn value_candidates_are_counted_exactly_and_smaller() {
        let mut rng = SplitMix64::new(3);
        for _ in 0..200 {
            let v = crate::generate::text::value(&mut rng, 6, 600);
            let n = value_candidate_count(&v, 0);
            for k in 0..n {
                let c = value_candidate(&v, 0, k)
                    .unwrap_or_else(|| panic!("candidate {k} of {n} missing for {v}"));
                assert!(crate::body::value_size(&c) < crate::body::value_size(&v));
            }
            assert_eq!(value_candidate(&v, 0, n), None);
        }
    }

    #[test]
    fn folds_keep_the_body_and_well_formedness_with_fewer_messages() {
        let g = crate::generate::GenConfig::default();
        let (mut folds, mut calls) = (0, 0);
        for i in 0..300 {
            let case = crate::generate::case_from_seed(7, i, &g);
            if case.messages.len() > 60 || !case.is_well_formed() {
                continue;
            }
            for (e, _) in edits(&case) {
                if !matches!(e, Edit::FoldIterations { .. } | Edit::FoldCall { .. }) {
                    continue;
                }
                let Some(c) = apply(&case, &e, false, true) else {
                    continue;
                };
                assert!(c.is_well_formed(), "case {i}, {e:?}: {c:?}");
                assert!(c.messages.len() < case.messages.len(), "case {i}, {e:?}");
                assert!(
                    c.body_bytes() >= case.body_bytes(),
                    "case {i}, {e:?}: the body fell from {} to {} bytes",
                    case.body_bytes(),
                    c.body_bytes()
                );
                folds += 1;
                calls += matches!(e, Edit::FoldCall { .. }) as usize;
            }
        }
        assert!(
            folds > 1_000 && calls > 50,
            "{folds} folds, {calls} of calls"
        );
    }

    #[test]
    fn merged_arguments_keep_every_value() {
        let mut v = serde_json::json!({"path": "a", "folded": 1});
        merge_arguments(&mut v, serde_json::json!({"q": 2}));
        assert_eq!(
            v,
            serde_json::json!({"path": "a", "folded": 1, "folded2": {"q": 2}})
        );
        let mut s = Value::from("ab");
        merge_arguments(&mut s, Value::from("cd"));
        assert_eq!(s, Value::from("abcd"));
        let mut n = Value::from(3);
        merge_arguments(&mut n, Value::from("x"));
        assert_eq!(n, serde_json::json!([3, "x"]));
    }

    #[test]
    fn round_down_keeps_two_digits() {
        assert_eq!(round_down(102_400), 100_000);
        assert_eq!(round_down(8_388_608), 8_300_000);
        assert_eq!(round_down(99), 99);
        assert_eq!(round_down(0), 1);
    }
}
