//! The `anthropic` wire format (SPEC §1.3): Anthropic Messages.
//!
//! `system` is a top-level field (a string, or an array of text blocks);
//! `messages` are `user` or `assistant` turns whose `content` is a string or
//! an array of blocks: `text`, assistant `tool_use {id, name, input}`, user
//! `tool_result {tool_use_id, content, is_error?}`, and any other block type
//! (`image`, `thinking`, `document`, …), which is kept as it is.
//!
//! # Mapping to the engine model
//!
//! | anthropic | engine |
//! |---|---|
//! | `system: "…"` | one leading `system` message |
//! | `system: [text blocks]` | one leading `system` message per block; a block's other fields (`cache_control`) are the message's `extra` |
//! | assistant message | one `assistant` message: its text blocks, concatenated, are `content`; its `tool_use` blocks are `toolCalls` (`input` is `arguments`; a block's other fields are the call's `extra`) |
//! | user message, string content | one `user` message |
//! | user message, array content | one `tool` message per `tool_result` block, in block order (the block's other fields, `is_error` among them, are its `extra`), then one `user` message holding the other blocks, if there are any (or if there are no blocks at all) |
//! | message fields other than `role`, `content` | `extra` of the message (of the `user` part, for a split user message) |
//! | `pinned` on a message | `pinned` of every engine message read from it |
//!
//! Text blocks are concatenated with no separator, so `content` has exactly
//! the bytes the model sees as text — unless the blocks hold an image.
//!
//! # Images (SPEC §1.4)
//!
//! A user message's (or a `tool_result`'s) array content that holds an
//! `image` block — `{"type": "image", "source": {"type": "base64",
//! "media_type", "data"}}` or `{"source": {"type": "url", "url"}}` — is
//! read as engine *parts*, one per block: text blocks as text parts (their
//! other fields, `cache_control` among them, in the part's `extra`), image
//! blocks as images (the source's other fields in the image's hint), any
//! other block as a part kept verbatim. An image block with another source
//! type (`file`) is kept verbatim too: its pixels cannot be read. Array
//! content without an image is read as before, its text joined. An array with no text block gives
//! `content: null`. Tool results come first in the engine even where a user
//! message puts text before them: the engine needs them right after their
//! calls (SPEC §1.2).
//!
//! # Writing back without loss
//!
//! What the engine model cannot hold is kept in the hidden `wire` hints of
//! [`Message`] and [`ToolCall`], under an `"anthropic"` key: the block
//! layout of array content (text blocks as templates holding their byte
//! length in place of their text; non-text blocks verbatim; `null` marking
//! where a `tool_use` goes), the place of each `tool_result` block in its
//! message, which engine messages came from one user message (`group`,
//! `part`), the shape of `system`, and fields whose names the engine
//! reserves. Writing a message read from this format gives back the same
//! JSON value. Writing a message whose text changed since it was read falls
//! back to one text block where the first one was.
//!
//! # Writing other histories
//!
//! - The leading run of `system` messages becomes the top-level `system`: a
//!   string when there is one plain message, else an array of text blocks.
//! - Consecutive `tool` messages become one user message of `tool_result`
//!   blocks (what the API requires); a `user` message joins them only where
//!   the message it was read from held both.
//! - An assistant message with calls gets array content: a text block (when
//!   its content is not empty), then one `tool_use` block per call.
//! - A `system` message after the head (a compactor's summary placed after
//!   pinned messages) has no place in this format: it is written as a `user`
//!   message with one text block. Its text, order and fields are kept; its
//!   role is not, so reading it back gives a `user` message.
//! - An empty history with `system: null` or `system: []` writes no `system`
//!   (there is no message to remember it by).

use serde_json::{Map, Value};

use super::engine::{non_empty_id, CALL_FIELDS, MESSAGE_FIELDS};
use super::parts::{Image, ImageData, ImageSource, Part, TextPart};
use super::{head_len, Content, Message, Role, ToolCall};
use crate::error::{json_type, InputError, InputErrorKind};

/// Marks, inside this module's error texts, a problem with a content part
/// (an image block without a source…): such an error is
/// [`InputErrorKind::Part`], the rest [`InputErrorKind::Shape`]. Removed
/// before a person sees the text.
const PART_ERROR: &str = "\u{1}part\u{1}";

/// A message's reading error, with its kind.
fn read_error(i: usize, p: String) -> InputError {
    match p.find(PART_ERROR) {
        Some(_) => InputError::at(InputErrorKind::Part, i, p.replacen(PART_ERROR, "", 1)),
        None => InputError::shape_at(i, p),
    }
}

/// The key of this format's hints inside a `wire` value.
const NS: &str = "anthropic";

type Fields = Map<String, Value>;

/// Read an anthropic history: the top-level `system` (if the document has
/// one) and the `messages` array.
pub fn read_messages(system: Option<&Value>, raw: &[Value]) -> Result<Vec<Message>, InputError> {
    let mut out = match system {
        None => Vec::new(),
        Some(v) => read_system(v)?,
    };
    let empty_system = system.filter(|_| out.is_empty()).cloned();
    let first = out.len();
    for (i, v) in raw.iter().enumerate() {
        read_message(v, i, &mut out).map_err(|p| read_error(i, p))?;
    }
    // `system: null` or `[]` reads as no message; the first message remembers it.
    if let (Some(v), Some(m)) = (empty_system, out.get_mut(first)) {
        let mut h = hint(&m.wire).cloned().unwrap_or_default();
        h.insert("emptySystem".into(), v);
        m.wire = wrap(h);
    }
    Ok(out)
}

/// Write a history: the top-level `system` (`None` when there is nothing to
/// put there) and the `messages` array.
pub fn write_messages(msgs: &[Message]) -> (Option<Value>, Vec<Value>) {
    let head = head_len(msgs);
    let system = write_system(&msgs[..head], msgs.first());
    let mut w = Writer::default();
    for m in &msgs[head..] {
        w.push(m);
    }
    (system, w.finish())
}

// ---------------------------------------------------------------- reading

fn read_system(v: &Value) -> Result<Vec<Message>, InputError> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(vec![Message::system(s.as_str())]),
        Value::Array(blocks) => blocks
            .iter()
            .enumerate()
            .map(|(j, b)| {
                read_system_block(b).map_err(|p| InputError::shape(format!("`system[{j}]`: {p}")))
            })
            .collect(),
        other => Err(InputError::shape(format!(
            "`system` must be a string or an array of text blocks, found {}",
            json_type(other)
        ))),
    }
}

fn read_system_block(b: &Value) -> Result<Message, String> {
    let obj = block_object(b)?;
    match obj.get("type") {
        Some(Value::String(t)) if t == "text" => {}
        Some(Value::String(t)) => {
            return Err(format!(
                "expected a text block, found a {t:?} block (the system prompt holds text only)"
            ))
        }
        _ => return Err("expected a text block; this block has no string `type`".into()),
    }
    let mut m = Message::system(Content::Absent);
    let mut reserved = Fields::new();
    for (k, v) in obj {
        match k.as_str() {
            "type" => {}
            "text" => m.content = Content::Text(read_text(v)?.to_owned()),
            "pinned" => m.pinned = Some(read_pinned(v)?),
            _ => keep(k, v, &mut m.extra, &mut reserved, &MESSAGE_FIELDS),
        }
    }
    if m.content == Content::Absent {
        return Err("text block has no `text`".into());
    }
    let mut h = Fields::new();
    h.insert("systemShape".into(), "block".into());
    put(&mut h, "blockExtra", reserved);
    m.wire = wrap(h);
    Ok(m)
}

/// Read `messages[i]` into one or more engine messages, appended to `out`.
fn read_message(v: &Value, i: usize, out: &mut Vec<Message>) -> Result<(), String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("expected a message object, found {}", json_type(v)))?;
    let role = match obj.get("role") {
        Some(Value::String(s)) if s == "user" => Role::User,
        Some(Value::String(s)) if s == "assistant" => Role::Assistant,
        Some(Value::String(s)) => {
            return Err(format!(
                "unknown role {s:?} (anthropic messages are user or assistant; the system prompt is the top-level `system`)"
            ))
        }
        Some(other) => return Err(format!("`role` must be a string, found {}", json_type(other))),
        None => return Err("message has no `role`".into()),
    };
    let mut msg = Message::new(role, Content::Absent);
    let mut content = None;
    let mut reserved = Fields::new();
    for (k, v) in obj {
        match k.as_str() {
            "role" => {}
            "content" => content = Some(v),
            "pinned" => msg.pinned = Some(read_pinned(v)?),
            _ => keep(k, v, &mut msg.extra, &mut reserved, &MESSAGE_FIELDS),
        }
    }
    let blocks = match content {
        None => None,
        Some(Value::Null) => {
            msg.content = Content::Null;
            None
        }
        Some(Value::String(s)) => {
            msg.content = Content::Text(s.clone());
            None
        }
        Some(Value::Array(blocks)) => Some(blocks),
        Some(other) => {
            return Err(format!(
                "`content` must be a string or an array of content blocks, found {}",
                json_type(other)
            ))
        }
    };
    let mut h = Fields::new();
    let Some(blocks) = blocks else {
        put(&mut h, "messageExtra", reserved);
        msg.wire = wrap(h);
        out.push(msg);
        return Ok(());
    };
    if role == Role::Assistant {
        read_assistant_blocks(blocks, &mut msg)?;
        put(&mut h, "messageExtra", reserved);
        msg.wire = merge_hint(msg.wire.take(), h);
        out.push(msg);
        return Ok(());
    }
    // A user message with array content: tool results, then the rest.
    // The message's `pinned` holds for every part.
    let pinned = msg.pinned;
    let mut parts = Vec::new();
    let mut text = None;
    let (mut rest, mut at, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    for (j, b) in blocks.iter().enumerate() {
        let ctx = |p: String| format!("content[{j}]: {p}");
        let obj = block_object(b).map_err(ctx)?;
        match block_type(obj) {
            Some("tool_result") => parts.push(read_tool_result(obj, j).map_err(ctx)?),
            Some("tool_use") => {
                return Err(ctx(
                    "a `tool_use` block in a user message (calls are made by the assistant)".into(),
                ))
            }
            Some("text") => {
                rest.push(text_template(obj, &mut text).map_err(ctx)?);
                at.push(Value::from(j));
                raw.push((j, b));
            }
            _ => {
                rest.push(b.clone());
                at.push(Value::from(j));
                raw.push((j, b));
            }
        }
    }
    let user_part = !rest.is_empty() || parts.is_empty();
    if user_part {
        let mut uh = Fields::new();
        if raw.iter().any(|(_, b)| is_image_block(b)) {
            let blocks = raw
                .iter()
                .map(|&(j, b)| block_to_part(b).map_err(|p| format!("content[{j}]: {p}")))
                .collect::<Result<Vec<_>, _>>()?;
            msg.content = Content::Parts(blocks);
        } else {
            msg.content = text.map_or(Content::Null, Content::Text);
            uh.insert("blocks".into(), Value::Array(rest));
        }
        uh.insert("at".into(), Value::Array(at));
        msg.wire = wrap(uh);
        parts.push(msg);
    } else {
        // No user part to carry the message's fields: the first part remembers them.
        reserved.extend(std::mem::take(&mut msg.extra));
    }
    let carrier = if user_part { parts.len() - 1 } else { 0 };
    for (k, m) in parts.iter_mut().enumerate() {
        let mut ph = Fields::new();
        ph.insert("group".into(), Value::from(i));
        ph.insert("part".into(), Value::from(k));
        if k == carrier {
            put(&mut ph, "messageExtra", std::mem::take(&mut reserved));
        }
        m.wire = merge_hint(m.wire.take(), ph);
        m.pinned = pinned;
    }
    out.extend(parts);
    Ok(())
}

fn read_assistant_blocks(blocks: &[Value], msg: &mut Message) -> Result<(), String> {
    let mut text = None;
    let mut calls = Vec::new();
    let mut templates = Vec::with_capacity(blocks.len());
    for (j, b) in blocks.iter().enumerate() {
        let ctx = |p: String| format!("content[{j}]: {p}");
        let obj = block_object(b).map_err(ctx)?;
        match block_type(obj) {
            Some("text") => templates.push(text_template(obj, &mut text).map_err(ctx)?),
            Some("tool_use") => {
                calls.push(read_tool_use(obj).map_err(ctx)?);
                templates.push(Value::Null);
            }
            Some("tool_result") => {
                return Err(ctx(
                    "a `tool_result` block in an assistant message (results belong in the next user message)".into(),
                ))
            }
            _ => templates.push(b.clone()),
        }
    }
    msg.content = text.map_or(Content::Null, Content::Text);
    if !calls.is_empty() {
        msg.tool_calls = Some(calls);
    }
    let mut h = Fields::new();
    h.insert("blocks".into(), Value::Array(templates));
    msg.wire = wrap(h);
    Ok(())
}

fn read_tool_use(obj: &Fields) -> Result<ToolCall, String> {
    let id = non_empty_id(obj.get("id").ok_or("`tool_use` block has no `id`")?)?;
    let name = match obj.get("name") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(format!(
                "`tool_use` {id:?}: `name` must be a string, found {}",
                json_type(other)
            ))
        }
        None => return Err(format!("`tool_use` {id:?} has no `name`")),
    };
    let input = obj
        .get("input")
        .ok_or_else(|| format!("`tool_use` {id:?} has no `input`"))?
        .clone();
    let mut call = ToolCall::new(id, name, input);
    let mut reserved = Fields::new();
    for (k, v) in obj {
        if !matches!(k.as_str(), "type" | "id" | "name" | "input") {
            keep(k, v, &mut call.extra, &mut reserved, &CALL_FIELDS);
        }
    }
    let mut h = Fields::new();
    put(&mut h, "blockExtra", reserved);
    call.wire = wrap(h);
    Ok(call)
}

fn read_tool_result(obj: &Fields, index: usize) -> Result<Message, String> {
    let id = match obj.get("tool_use_id") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(format!(
                "`tool_use_id` must be a string, found {}",
                json_type(other)
            ))
        }
        None => return Err("`tool_result` block has no `tool_use_id`".into()),
    };
    let mut m = Message::tool(id, Content::Absent);
    let mut h = Fields::new();
    h.insert("index".into(), Value::from(index));
    let mut reserved = Fields::new();
    for (k, v) in obj {
        match k.as_str() {
            "type" | "tool_use_id" => {}
            "content" => match v {
                Value::Null => m.content = Content::Null,
                Value::String(s) => m.content = Content::Text(s.clone()),
                Value::Array(blocks) if blocks.iter().any(is_image_block) => {
                    let parts = blocks
                        .iter()
                        .enumerate()
                        .map(|(n, b)| {
                            block_to_part(b).map_err(|p| format!("`tool_result` content[{n}]: {p}"))
                        })
                        .collect::<Result<Vec<_>, String>>()?;
                    m.content = Content::Parts(parts);
                }
                Value::Array(blocks) => {
                    let mut text = None;
                    let templates = blocks
                        .iter()
                        .enumerate()
                        .map(|(n, b)| {
                            let o = block_object(b)
                                .map_err(|p| format!("`tool_result` content[{n}]: {p}"))?;
                            if block_type(o) == Some("text") {
                                text_template(o, &mut text)
                                    .map_err(|p| format!("`tool_result` content[{n}]: {p}"))
                            } else {
                                Ok(b.clone())
                            }
                        })
                        .collect::<Result<Vec<_>, String>>()?;
                    m.content = text.map_or(Content::Null, Content::Text);
                    h.insert("blocks".into(), Value::Array(templates));
                }
                other => {
                    return Err(format!(
                        "`tool_result` `content` must be a string or an array of blocks, found {}",
                        json_type(other)
                    ))
                }
            },
            _ => keep(k, v, &mut m.extra, &mut reserved, &MESSAGE_FIELDS),
        }
    }
    put(&mut h, "blockExtra", reserved);
    m.wire = wrap(h);
    Ok(m)
}

/// An `image` block (whatever its source: a bad one is an error, an
/// unknown one a block kept verbatim).
fn is_image_block(b: &Value) -> bool {
    b.get("type").and_then(Value::as_str) == Some("image")
}

/// The key, inside an image's `wire` value, of the source's other fields.
const SOURCE: &str = "source";

/// One block of an array content that holds images, as an engine part.
fn block_to_part(b: &Value) -> Result<Part, String> {
    let obj = block_object(b)?;
    let rest = |skip: &[&str]| -> Fields {
        obj.iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    match block_type(obj) {
        Some("text") => Ok(Part::Text(TextPart {
            text: read_text(obj.get("text").ok_or("text block has no `text`")?)?.to_owned(),
            extra: rest(&["type", "text"]),
        })),
        Some("image") => {
            let bad = |p: &str| format!("{PART_ERROR}an image block's {p}");
            let source = match obj.get("source") {
                Some(Value::Object(s)) => s,
                Some(other) => {
                    return Err(bad(&format!(
                        "`source` must be an object, found {}",
                        json_type(other)
                    )))
                }
                None => return Err(bad("`source` is missing")),
            };
            let str_field = |k: &str| match source.get(k) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(bad(&format!(
                    "`source.{k}` must be a string, found {}",
                    json_type(other)
                ))),
                None => Err(bad(&format!("`source` has no `{k}`"))),
            };
            let (image_source, named): (ImageSource, &[&str]) =
                match source.get("type").and_then(Value::as_str) {
                    Some("base64") => (
                        ImageSource::Inline(ImageData::new(
                            str_field("media_type")?,
                            str_field("data")?,
                        )),
                        &["type", "media_type", "data"],
                    ),
                    Some("url") => (ImageSource::Url(str_field("url")?), &["type", "url"]),
                    // `file` (the Files API) and others: kept as they are.
                    _ => return Ok(Part::Other(b.clone())),
                };
            let others: Fields = source
                .iter()
                .filter(|(k, _)| !named.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let wire = (!others.is_empty()).then(|| {
                let mut h = Fields::new();
                h.insert(SOURCE.into(), Value::Object(others));
                let mut w = Fields::new();
                w.insert(NS.into(), Value::Object(h));
                Box::new(Value::Object(w))
            });
            Ok(Part::Image(Image {
                source: image_source,
                extra: rest(&["type", "source"]),
                wire,
            }))
        }
        _ => Ok(Part::Other(b.clone())),
    }
}

/// A part as an anthropic block (what this format's reader reads back as that part).
pub fn part_block(p: &Part) -> Value {
    match p {
        Part::Text(t) => {
            let mut b = text_block(&t.text);
            add_fields(&mut b, t.extra.iter());
            Value::Object(b)
        }
        Part::Image(i) => {
            let mut source = Fields::new();
            match &i.source {
                ImageSource::Inline(d) => {
                    source.insert("type".into(), "base64".into());
                    source.insert("media_type".into(), Value::String(d.media_type().into()));
                    source.insert("data".into(), Value::String(d.data().into()));
                }
                ImageSource::Url(u) => {
                    source.insert("type".into(), "url".into());
                    source.insert("url".into(), Value::String(u.clone()));
                }
            }
            add_fields(&mut source, source_hint(i).into_iter().flatten());
            let mut b = Fields::new();
            b.insert("type".into(), "image".into());
            b.insert("source".into(), Value::Object(source));
            add_fields(&mut b, i.extra.iter());
            Value::Object(b)
        }
        Part::Other(v) => v.clone(),
    }
}

/// The source's other fields, as read from this format.
fn source_hint(i: &Image) -> Option<&Fields> {
    i.wire.as_deref()?.get(NS)?.get(SOURCE)?.as_object()
}

/// Serialised size of [`part_block`]`(p)`, without copying an image's data.
pub fn part_block_size(p: &Part) -> u64 {
    use super::json_size::{object_size_of, string_size, value_size};
    match p {
        Part::Image(i) => {
            let mut source: Vec<(&str, u64)> = match &i.source {
                ImageSource::Inline(d) => vec![
                    ("type", string_size("base64")),
                    ("media_type", string_size(d.media_type())),
                    ("data", d.data_json_size()),
                ],
                ImageSource::Url(u) => vec![("type", string_size("url")), ("url", string_size(u))],
            };
            for (k, v) in source_hint(i).into_iter().flatten() {
                if !source.iter().any(|(n, _)| *n == k) {
                    source.push((k.as_str(), value_size(v)));
                }
            }
            let mut b: Vec<(&str, u64)> = vec![
                ("type", string_size("image")),
                ("source", object_size_of(source.into_iter())),
            ];
            for (k, v) in &i.extra {
                if !b.iter().any(|(n, _)| *n == k) {
                    b.push((k.as_str(), value_size(v)));
                }
            }
            object_size_of(b.into_iter())
        }
        other => value_size(&part_block(other)),
    }
}

/// Blocks of parts, keyed by the positions the message read had (`at`),
/// or in order after everything that has one.
fn part_blocks(parts: &[Part], at: Option<&Vec<Value>>) -> Vec<(usize, Value)> {
    parts
        .iter()
        .enumerate()
        .map(|(n, p)| {
            let key = at
                .filter(|a| a.len() == parts.len())
                .and_then(|a| a.get(n))
                .and_then(Value::as_u64)
                .and_then(|k| usize::try_from(k).ok())
                .unwrap_or(usize::MAX);
            (key, part_block(p))
        })
        .collect()
}

fn block_object(b: &Value) -> Result<&Fields, String> {
    b.as_object()
        .ok_or_else(|| format!("expected a content block object, found {}", json_type(b)))
}

fn block_type(obj: &Fields) -> Option<&str> {
    obj.get("type").and_then(Value::as_str)
}

fn read_text(v: &Value) -> Result<&str, String> {
    v.as_str()
        .ok_or_else(|| format!("`text` must be a string, found {}", json_type(v)))
}

fn read_pinned(v: &Value) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| format!("`pinned` must be a boolean, found {}", json_type(v)))
}

/// A text block as a template: the block with its text replaced by the
/// text's byte length; the text itself is appended to `joined`.
fn text_template(obj: &Fields, joined: &mut Option<String>) -> Result<Value, String> {
    let text = read_text(obj.get("text").ok_or("text block has no `text`")?)?;
    joined.get_or_insert_with(String::new).push_str(text);
    let template = obj
        .iter()
        .map(|(k, v)| {
            let v = if k == "text" {
                Value::from(text.len())
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect();
    Ok(Value::Object(template))
}

/// Keep an unknown field: in `extra`, unless the engine reserves its name
/// (the engine would drop it), then in the hint.
fn keep(k: &str, v: &Value, extra: &mut Fields, reserved: &mut Fields, names: &[&str]) {
    let to = if names.contains(&k) { reserved } else { extra };
    to.insert(k.to_owned(), v.clone());
}

// ------------------------------------------------------------------ hints

fn hint(wire: &Option<Box<Value>>) -> Option<&Fields> {
    wire.as_deref()?.get(NS)?.as_object()
}

fn wrap(h: Fields) -> Option<Box<Value>> {
    if h.is_empty() {
        return None;
    }
    let mut outer = Map::new();
    outer.insert(NS.into(), Value::Object(h));
    Some(Box::new(Value::Object(outer)))
}

fn merge_hint(wire: Option<Box<Value>>, more: Fields) -> Option<Box<Value>> {
    let mut h = hint(&wire).cloned().unwrap_or_default();
    h.extend(more);
    wrap(h)
}

/// Insert a map of fields into a hint when it is not empty.
fn put(h: &mut Fields, key: &str, fields: Fields) {
    if !fields.is_empty() {
        h.insert(key.into(), Value::Object(fields));
    }
}

fn hint_usize(h: Option<&Fields>, key: &str) -> Option<usize> {
    h?.get(key)?.as_u64().and_then(|n| usize::try_from(n).ok())
}

fn hint_fields<'a>(h: Option<&'a Fields>, key: &str) -> Option<&'a Fields> {
    h?.get(key)?.as_object()
}

// ---------------------------------------------------------------- writing

fn write_system(head: &[Message], first: Option<&Message>) -> Option<Value> {
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
            add_fields(&mut b, own_fields(&m.extra, &MESSAGE_FIELDS));
            add_fields(
                &mut b,
                hint_fields(hint(&m.wire), "blockExtra")
                    .into_iter()
                    .flatten(),
            );
            Value::Object(b)
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
struct Writer {
    out: Vec<Value>,
    draft: Option<Draft>,
    prev_tool: bool,
    prev_group: Option<usize>,
}

impl Writer {
    fn push(&mut self, m: &Message) {
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

    fn finish(mut self) -> Vec<Value> {
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

fn text_block(text: &str) -> Fields {
    let mut b = Map::new();
    b.insert("type".into(), "text".into());
    b.insert("text".into(), Value::String(text.to_owned()));
    b
}

fn tool_use_block(c: &ToolCall) -> Value {
    let mut b = Map::new();
    b.insert("type".into(), "tool_use".into());
    b.insert("id".into(), Value::String(c.id.clone()));
    b.insert("name".into(), Value::String(c.name.clone()));
    b.insert("input".into(), Value::clone(&c.arguments));
    add_fields(&mut b, own_fields(&c.extra, &CALL_FIELDS));
    add_fields(
        &mut b,
        hint_fields(hint(&c.wire), "blockExtra")
            .into_iter()
            .flatten(),
    );
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
    add_fields(&mut b, own_fields(&m.extra, &MESSAGE_FIELDS));
    add_fields(&mut b, hint_fields(h, "blockExtra").into_iter().flatten());
    Value::Object(b)
}

/// `extra` without the names the engine reserves (as the engine writes it).
fn own_fields<'a>(
    extra: &'a Fields,
    names: &'a [&'a str],
) -> impl Iterator<Item = (&'a String, &'a Value)> + 'a {
    extra
        .iter()
        .filter(move |(k, _)| !names.contains(&k.as_str()))
}

/// Add fields that are not there yet (the fields already written win).
fn add_fields<'a>(to: &mut Fields, from: impl IntoIterator<Item = (&'a String, &'a Value)>) {
    for (k, v) in from {
        to.entry(k.clone()).or_insert_with(|| v.clone());
    }
}
