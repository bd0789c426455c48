//! Reading anthropic messages and their blocks into engine messages.

use serde_json::Value;

use super::block::{block_object, block_type, read_text};
use super::parts::{block_to_part, is_image_block};
use super::{merge_hint, put, wrap, Fields};
use crate::error::{json_type, InputError};
use crate::model::engine::{non_empty_id, read_pinned, CALL_FIELDS, MESSAGE_FIELDS};
use crate::model::field::{expect, typed};
use crate::model::{Content, Message, Role, ToolCall};

pub(super) fn read_system(v: &Value) -> Result<Vec<Message>, InputError> {
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
pub(super) fn read_message(v: &Value, i: usize, out: &mut Vec<Message>) -> Result<(), String> {
    let obj = typed(v, Value::as_object, "expected a message object")?;
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
    let name = expect(
        obj.get("name"),
        Value::as_str,
        format_args!("`tool_use` {id:?}: `name` must be a string"),
        format_args!("`tool_use` {id:?} has no `name`"),
    )?
    .to_owned();
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
    let id = expect(
        obj.get("tool_use_id"),
        Value::as_str,
        "`tool_use_id` must be a string",
        "`tool_result` block has no `tool_use_id`",
    )?
    .to_owned();
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
