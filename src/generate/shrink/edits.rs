//! The edits that make a case smaller, in the order they are tried, and
//! applying one: plain, or anchored to the case's boundaries.

use std::ops::Range;

use serde_json::Value;

use super::config::config_candidates;
use super::fold::{fold_call, fold_iterations, keep_body};
use super::values::{envelope_candidate_count, value_candidate, value_candidate_count};
use crate::generate::history::set_trigger;
use crate::generate::Case;
use crate::model::{iterations, Content, Message, Role};

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

pub(super) fn edits(case: &Case) -> Vec<(Edit, bool)> {
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
        Edit::DropExtras => msgs.iter_mut().for_each(drop_extras),
        Edit::DropMessageExtras(i) => drop_extras(msgs.get_mut(*i)?),
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

/// A message's extra fields and its calls' gone.
fn drop_extras(m: &mut Message) {
    m.extra.clear();
    m.tool_calls
        .iter_mut()
        .flatten()
        .for_each(|c| c.extra.clear());
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
