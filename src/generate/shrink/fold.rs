//! Folding (issue 28, item 4): messages removed, with what they carried
//! moved into a message that stays and that message padded back to the
//! body's size, so that a body over a fixed ceiling stays over it.

use std::ops::Range;

use serde_json::Value;

use crate::generate::Case;
use crate::model::{iterations, Content, Message, Part, Role, WireFormat};

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
pub(super) fn keep_body(before: &Case, after: &mut Case, t: usize) {
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
pub(super) fn fold_iterations(
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
pub(super) fn fold_call(
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

#[cfg(test)]
mod tests {
    use super::super::edits::{apply, edits, Edit};
    use super::*;

    #[test]
    fn folds_keep_the_body_and_well_formedness_with_fewer_messages() {
        let (mut folds, mut calls) = (0, 0);
        for (i, case) in crate::generate::seeded(7, 300) {
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
}
