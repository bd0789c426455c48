//! Writing engine messages as anthropic messages: the `system` head, then
//! drafts that one or more engine messages fill.

use serde_json::{Map, Value};

use super::block::{add_fields, block_type, text_block};
use super::parts::{part_block, part_blocks};
use super::{hint, hint_fields, hint_usize, Fields};
use crate::model::engine::{CALL_FIELDS, MESSAGE_FIELDS};
use crate::model::field::own_fields;
use crate::model::{Content, Message, Role, ToolCall};

pub(super) fn write_system(head: &[Message], first: Option<&Message>) -> Option<Value> {
    let Some(only) = head.first() else {
        return first
            .and_then(|m| hint(&m.wire))
            .and_then(|h| h.get("emptySystem"))
            .cloned();
    };
    let h = hint(&only.wire);
    let plain = head.len() == 1
        && h.is_none_or(|h| !h.contains_key("systemShape") && !h.contains_key("blockExtra"))
        && only.pinned.is_none()
        && own_fields(&only.extra, &MESSAGE_FIELDS).next().is_none();
    if plain && !matches!(only.content, Content::Parts(_)) {
        return Some(Value::String(only.content.text().into_owned()));
    }
    let blocks = head
        .iter()
        .map(|m| {
            // A system message of parts (text only, in practice: the
            // format's system prompt holds text blocks) writes its first
            // part's block with the message's fields, then the others.
            let mut b = match &m.content {
                Content::Parts(parts) if !parts.is_empty() => match part_block(&parts[0]) {
                    Value::Object(o) => o,
                    other => {
                        let mut o = Fields::new();
                        o.insert("block".into(), other);
                        o
                    }
                },
                _ => text_block(&m.content.text()),
            };
            if let Some(p) = m.pinned {
                b.insert("pinned".into(), Value::Bool(p));
            }
            close_block(b, &m.extra, &MESSAGE_FIELDS, hint(&m.wire))
        })
        .collect();
    Some(Value::Array(blocks))
}

/// An anthropic message being assembled from one or more engine messages.
struct Draft {
    role: &'static str,
    content: DraftContent,
    pinned: Option<bool>,
    extra: Fields,
}

enum DraftContent {
    Absent,
    /// A string or `null`.
    Scalar(Value),
    /// Blocks with the keys they sort by: their index in the message read,
    /// `usize::MAX` for blocks with no such index (they keep their order).
    Blocks(Vec<(usize, Value)>),
}

#[derive(Default)]
pub(super) struct Writer {
    out: Vec<Value>,
    draft: Option<Draft>,
    prev_tool: bool,
    prev_group: Option<usize>,
}

impl Writer {
    pub(super) fn push(&mut self, m: &Message) {
        let h = hint(&m.wire);
        let group = hint_usize(h, "group");
        let part = hint_usize(h, "part").unwrap_or(0);
        let continues_group = group.is_some() && part > 0 && self.prev_group == group;
        let can_join = self
            .draft
            .as_ref()
            .is_some_and(|d| d.role == "user" && matches!(d.content, DraftContent::Blocks(_)));
        let own_extra = |names: &[&str]| -> Fields {
            let mut f: Fields = own_fields(&m.extra, names)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            add_fields(&mut f, hint_fields(h, "messageExtra").into_iter().flatten());
            f
        };
        match m.role {
            Role::Tool => {
                let key = hint_usize(h, "index").unwrap_or(usize::MAX);
                let block = (key, tool_result_block(m, h));
                // Consecutive results share a user message, except where the
                // message read started a new one (`part` 0).
                let join = can_join && self.prev_tool && (group.is_none() || part > 0);
                let mut extra = Fields::new();
                add_fields(
                    &mut extra,
                    hint_fields(h, "messageExtra").into_iter().flatten(),
                );
                if join {
                    self.join(vec![block], m.pinned, extra);
                } else {
                    self.start("user", DraftContent::Blocks(vec![block]), m.pinned, extra);
                }
            }
            Role::User => {
                let extra = own_extra(&MESSAGE_FIELDS);
                if let Content::Parts(parts) = &m.content {
                    let at = h.and_then(|h| h.get("at")).and_then(Value::as_array);
                    let blocks = part_blocks(parts, at);
                    if continues_group && can_join {
                        self.join(blocks, m.pinned, extra);
                    } else {
                        self.start("user", DraftContent::Blocks(blocks), m.pinned, extra);
                    }
                    self.prev_tool = false;
                    self.prev_group = group;
                    return;
                }
                match h.and_then(|h| h.get("blocks")).and_then(Value::as_array) {
                    Some(templates) => {
                        let at = h.and_then(|h| h.get("at")).and_then(Value::as_array);
                        let keyed = templates
                            .iter()
                            .enumerate()
                            .map(|(n, t)| {
                                let key = at
                                    .and_then(|a| a.get(n))
                                    .and_then(Value::as_u64)
                                    .and_then(|k| usize::try_from(k).ok())
                                    .unwrap_or(usize::MAX);
                                (key, t)
                            })
                            .collect();
                        let blocks = render(keyed, &m.content, &[]);
                        if continues_group && can_join {
                            self.join(blocks, m.pinned, extra);
                        } else {
                            self.start("user", DraftContent::Blocks(blocks), m.pinned, extra);
                        }
                    }
                    None => self.start("user", scalar(&m.content), m.pinned, extra),
                }
            }
            Role::Assistant => {
                let extra = own_extra(&MESSAGE_FIELDS);
                let content = match h.and_then(|h| h.get("blocks")).and_then(Value::as_array) {
                    _ if matches!(m.content, Content::Parts(_)) => {
                        let mut blocks = part_blocks(m.content.parts(), None);
                        blocks.extend(m.calls().iter().map(|c| (usize::MAX, tool_use_block(c))));
                        DraftContent::Blocks(blocks)
                    }
                    Some(templates) => DraftContent::Blocks(render(
                        templates.iter().enumerate().collect(),
                        &m.content,
                        m.calls(),
                    )),
                    None if !m.calls().is_empty() => {
                        let text = (!m.content.is_empty())
                            .then(|| Value::Object(text_block(&m.content.text())));
                        let calls = m.calls().iter().map(tool_use_block);
                        DraftContent::Blocks(text.into_iter().chain(calls).enumerate().collect())
                    }
                    None => scalar(&m.content),
                };
                self.start("assistant", content, m.pinned, extra);
            }
            Role::System => {
                // A system message after the head: a user message with one
                // text block (or its parts' blocks).
                let blocks = match &m.content {
                    Content::Parts(parts) => part_blocks(parts, None),
                    _ => vec![(0, Value::Object(text_block(&m.content.text())))],
                };
                let extra = own_extra(&MESSAGE_FIELDS);
                self.start("user", DraftContent::Blocks(blocks), m.pinned, extra);
            }
        }
        self.prev_tool = m.role == Role::Tool;
        self.prev_group = group;
    }

    fn start(
        &mut self,
        role: &'static str,
        content: DraftContent,
        pinned: Option<bool>,
        extra: Fields,
    ) {
        self.flush();
        self.draft = Some(Draft {
            role,
            content,
            pinned,
            extra,
        });
    }

    fn join(&mut self, blocks: Vec<(usize, Value)>, pinned: Option<bool>, extra: Fields) {
        let Some(d) = self.draft.as_mut() else { return };
        if let DraftContent::Blocks(b) = &mut d.content {
            b.extend(blocks);
        }
        d.pinned = match (d.pinned, pinned) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (a, b) => a.or(b),
        };
        add_fields(&mut d.extra, extra.iter());
    }

    fn flush(&mut self) {
        let Some(d) = self.draft.take() else { return };
        let mut obj = Map::new();
        obj.insert("role".into(), Value::String(d.role.into()));
        match d.content {
            DraftContent::Absent => {}
            DraftContent::Scalar(v) => {
                obj.insert("content".into(), v);
            }
            DraftContent::Blocks(mut blocks) => {
                blocks.sort_by_key(|(k, _)| *k);
                let arr = blocks.into_iter().map(|(_, b)| b).collect();
                obj.insert("content".into(), Value::Array(arr));
            }
        }
        if let Some(p) = d.pinned {
            obj.insert("pinned".into(), Value::Bool(p));
        }
        add_fields(&mut obj, d.extra.iter());
        self.out.push(Value::Object(obj));
    }

    pub(super) fn finish(mut self) -> Vec<Value> {
        self.flush();
        self.out
    }
}

fn scalar(c: &Content) -> DraftContent {
    match c {
        Content::Absent => DraftContent::Absent,
        Content::Null => DraftContent::Scalar(Value::Null),
        Content::Text(s) => DraftContent::Scalar(Value::String(s.clone())),
        Content::Parts(parts) => DraftContent::Blocks(part_blocks(parts, None)),
    }
}

/// Blocks from templates: text templates get their share of `content`,
/// `null` templates the next call, other blocks are copied. When `content`
/// no longer splits along the templates' lengths, it all goes to the first
/// text template (or a new text block in front) and the other text
/// templates are dropped. Calls left over go at the end.
fn render(
    templates: Vec<(usize, &Value)>,
    content: &Content,
    calls: &[ToolCall],
) -> Vec<(usize, Value)> {
    let joined = content.text();
    let text: &str = &joined;
    let lens: Vec<usize> = templates.iter().filter_map(|(_, t)| text_len(t)).collect();
    let pieces = split_text(text, &lens);
    let mut calls = calls.iter();
    let mut out = Vec::with_capacity(templates.len());
    let mut nth_text = 0;
    for (key, t) in templates {
        if t.is_null() {
            if let Some(c) = calls.next() {
                out.push((key, tool_use_block(c)));
            }
        } else if text_len(t).is_some() {
            let piece = match &pieces {
                Some(p) => p.get(nth_text).copied(),
                None => (nth_text == 0).then_some(text),
            };
            nth_text += 1;
            if let (Some(piece), Value::Object(obj)) = (piece, t) {
                let mut b = obj.clone();
                b.insert("text".into(), Value::String(piece.to_owned()));
                out.push((key, Value::Object(b)));
            }
        } else {
            out.push((key, t.clone()));
        }
    }
    if pieces.is_none() && lens.is_empty() {
        let key = out.iter().map(|(k, _)| *k).min().unwrap_or(usize::MAX);
        out.insert(0, (key, Value::Object(text_block(text))));
    }
    out.extend(calls.map(|c| (usize::MAX, tool_use_block(c))));
    out
}

/// The byte length a text template stands for; `None` when `t` is not a
/// text template. A length too large for `usize` never splits any text.
fn text_len(t: &Value) -> Option<usize> {
    let obj = t.as_object()?;
    if block_type(obj) != Some("text") {
        return None;
    }
    let n = obj.get("text")?.as_u64()?;
    Some(usize::try_from(n).unwrap_or(usize::MAX))
}

/// `text` cut into pieces of the given byte lengths, if they add up to it
/// and fall on character boundaries.
fn split_text<'a>(text: &'a str, lens: &[usize]) -> Option<Vec<&'a str>> {
    let mut pos = 0usize;
    let mut out = Vec::with_capacity(lens.len());
    for len in lens {
        let end = pos.checked_add(*len)?;
        out.push(text.get(pos..end)?);
        pos = end;
    }
    (pos == text.len()).then_some(out)
}

fn tool_use_block(c: &ToolCall) -> Value {
    let mut b = Map::new();
    b.insert("type".into(), "tool_use".into());
    b.insert("id".into(), Value::String(c.id.clone()));
    b.insert("name".into(), Value::String(c.name.clone()));
    b.insert("input".into(), Value::clone(&c.arguments));
    close_block(b, &c.extra, &CALL_FIELDS, hint(&c.wire))
}

/// A block with what it carries besides its own fields: the message's or
/// call's `extra` (but the names the engine reserves), then the fields the
/// block had when it was read (`blockExtra`), each where not already set.
fn close_block(mut b: Fields, extra: &Fields, reserved: &[&str], h: Option<&Fields>) -> Value {
    add_fields(&mut b, own_fields(extra, reserved));
    add_fields(&mut b, hint_fields(h, "blockExtra").into_iter().flatten());
    Value::Object(b)
}

fn tool_result_block(m: &Message, h: Option<&Fields>) -> Value {
    let mut b = Map::new();
    b.insert("type".into(), "tool_result".into());
    b.insert(
        "tool_use_id".into(),
        Value::String(m.tool_call_id.clone().unwrap_or_default()),
    );
    match h.and_then(|h| h.get("blocks")).and_then(Value::as_array) {
        _ if matches!(m.content, Content::Parts(_)) => {
            let blocks = m.content.parts().iter().map(part_block).collect();
            b.insert("content".into(), Value::Array(blocks));
        }
        Some(templates) => {
            let blocks = render(templates.iter().enumerate().collect(), &m.content, &[]);
            let arr = blocks.into_iter().map(|(_, b)| b).collect();
            b.insert("content".into(), Value::Array(arr));
        }
        None => match &m.content {
            Content::Absent => {}
            Content::Null => {
                b.insert("content".into(), Value::Null);
            }
            Content::Text(s) => {
                b.insert("content".into(), Value::String(s.clone()));
            }
            Content::Parts(_) => unreachable!("parts are written above"),
        },
    }
    close_block(b, &m.extra, &MESSAGE_FIELDS, h)
}
