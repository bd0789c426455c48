//! The `openai` wire format (SPEC §1.3): Chat Completions messages,
//! `tool_calls: [{id, type: "function", function: {name, arguments}}]`
//! with arguments as JSON text, and `tool_call_id`.
//!
//! Reading parses the argument text into a JSON value (text that is not
//! valid JSON stays a JSON string) and keeps, in the call's `wire` hint, the
//! original text (or that the arguments came as a JSON value, not text) and
//! the spelling of `type` (or its absence), so that writing gives back
//! exactly what was read.
//!
//! # Content parts (SPEC §1.4)
//!
//! `content` may be an array of parts: `{"type": "text", "text"}`,
//! `{"type": "image_url", "image_url": {"url", "detail"}}` — a base64 data
//! URL (`data:M;base64,DATA`, an inline image) or any other URL (a remote
//! one) — and parts of other types, kept verbatim. `image_url.detail` is
//! the engine part's `detail`; `image_url`'s other fields are kept in the
//! image's hint.
//!
//! Chat Completions `tool` messages carry text only, so a tool's images
//! travel in a `user` message after the run of tool results it stands in,
//! as agents send them: one `user` message of image parts per tool message
//! that has images, in order, after the last result of the run (it may be
//! pinned, when its tool message is). The tool message keeps its other
//! parts (`""` when none is left). [`carry_tool_images`] is that move on
//! engine messages: writing a history in this format writes exactly what
//! writing `carry_tool_images(history)` writes, and reading it back gives
//! `carry_tool_images(history)` — so an engine history whose tool results
//! hold images round-trips through `openai` to its carried form (images
//! after the results, as user messages), and that form round-trips to
//! itself.

use serde_json::{json, Map, Value};

use super::engine::{non_empty_id, read_pinned, read_role};
use super::field::{expect, typed};
use super::parts::{split_data_url, Image, ImageData, ImageSource, Part, TextPart};
use super::{Content, Message, Role, ToolCall};
use crate::error::{json_type, InputError, InputErrorKind};

pub fn read_messages(arr: &[Value]) -> Result<Vec<Message>, InputError> {
    arr.iter()
        .enumerate()
        .map(|(i, v)| message_from_value(v).map_err(|e| e.at_message(i)))
        .collect()
}

/// Write messages in this format: a tool's images move to a `user`
/// message after the run of results it stands in (see the module docs).
pub fn write_messages(msgs: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(msgs.len());
    let mut carried: Vec<Value> = Vec::new();
    for m in msgs {
        if m.role != Role::Tool && !carried.is_empty() {
            out.append(&mut carried);
        }
        out.push(message_to_value(m));
        if let Some(user) = carried_images(m) {
            carried.push(message_to_value(&user));
        }
    }
    out.append(&mut carried);
    out
}

/// The engine history as this format carries it: each tool message's
/// images moved to a `user` message after its run of results (module
/// docs). Histories without images in tool messages come back as they are.
pub fn carry_tool_images(msgs: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(msgs.len());
    let mut carried = Vec::new();
    for m in msgs {
        if m.role != Role::Tool && !carried.is_empty() {
            out.append(&mut carried);
        }
        match carried_images(m) {
            Some(user) => {
                out.push(without_images(m));
                carried.push(user);
            }
            None => out.push(m.clone()),
        }
    }
    out.append(&mut carried);
    out
}

/// Whether some tool message of `msgs` holds an image (which this format
/// moves).
pub fn has_tool_images(msgs: &[Message]) -> bool {
    msgs.iter().any(|m| m.role == Role::Tool && m.has_images())
}

/// The `user` message that carries a tool message's images, if it has any.
fn carried_images(m: &Message) -> Option<Message> {
    if m.role != Role::Tool || !m.has_images() {
        return None;
    }
    let images: Vec<Part> = m
        .content
        .parts()
        .iter()
        .filter(|p| matches!(p, Part::Image(_)))
        .cloned()
        .collect();
    let mut user = Message::user(Content::Parts(images));
    if m.is_pinned() {
        user.pinned = Some(true);
    }
    Some(user)
}

/// A tool message without its images: its other parts, or `""`.
fn without_images(m: &Message) -> Message {
    let rest: Vec<Part> = m
        .content
        .parts()
        .iter()
        .filter(|p| !matches!(p, Part::Image(_)))
        .cloned()
        .collect();
    let mut t = m.clone();
    t.content = if rest.is_empty() {
        Content::Text(String::new())
    } else {
        Content::Parts(rest)
    };
    t
}

/// The two messages an imaged tool message is written as (its text, then
/// its images' user message), for measuring: `None` for any other message.
pub fn split_tool_images(m: &Message) -> Option<(Message, Message)> {
    carried_images(m).map(|user| (without_images(m), user))
}

/// `content` in this format: a string, null, or an array of parts.
fn read_content(v: &Value) -> Result<Content, InputError> {
    match v {
        Value::Array(parts) => parts
            .iter()
            .enumerate()
            .map(|(j, p)| {
                part_from_value(p).map_err(|e| {
                    InputError::new(InputErrorKind::Part, format!("content[{j}]: {e}"))
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Content::Parts),
        other => super::engine::read_content(other),
    }
}

/// The key of this format's hints inside an image's `wire` value.
const NS: &str = "openai";

/// One part in this format.
fn part_from_value(v: &Value) -> Result<Part, String> {
    let obj = v.as_object().ok_or_else(|| {
        format!(
            "expected a part object ({{\"type\": …}}), found {}",
            json_type(v)
        )
    })?;
    match obj.get("type").and_then(Value::as_str) {
        Some("text") => {
            let text = expect(
                obj.get("text"),
                Value::as_str,
                "a text part's `text` must be a string",
                "a text part has no `text`",
            )?
            .to_owned();
            let extra = obj
                .iter()
                .filter(|(k, _)| *k != "type" && *k != "text")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Ok(Part::Text(TextPart { text, extra }))
        }
        Some("image_url") => {
            let inner = expect(
                obj.get("image_url"),
                Value::as_object,
                "`image_url` must be an object with a `url`",
                "an `image_url` part has no `image_url`",
            )?;
            let url = expect(
                inner.get("url"),
                Value::as_str,
                "`image_url.url` must be a string",
                "`image_url` has no `url`",
            )?;
            let source = match split_data_url(url)? {
                Some((media, data)) => ImageSource::Inline(ImageData::new(media, data)),
                None => ImageSource::Url(url.to_owned()),
            };
            let mut extra: Map<String, Value> = obj
                .iter()
                .filter(|(k, _)| *k != "type" && *k != "image_url")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            // `detail` is the engine part's, unless the part has a
            // `detail` of its own (then it stays in the hint).
            let mut hint = Map::new();
            for (k, v) in inner.iter().filter(|(k, _)| *k != "url") {
                if k == "detail" && !extra.contains_key("detail") {
                    extra.insert(k.clone(), v.clone());
                } else {
                    hint.insert(k.clone(), v.clone());
                }
            }
            let wire = (!hint.is_empty()).then(|| {
                let mut w = Map::new();
                w.insert(NS.into(), Value::Object(hint));
                Box::new(Value::Object(w))
            });
            Ok(Part::Image(Image {
                source,
                extra,
                wire,
            }))
        }
        _ => match super::parts::anthropic_tool_block(obj, "openai") {
            Some(problem) => Err(problem),
            None => Ok(Part::Other(v.clone())),
        },
    }
}

/// `image_url`'s fields other than `url` and the engine's `detail`, as
/// read from this format.
fn image_url_hint(i: &Image) -> Option<&Map<String, Value>> {
    i.wire.as_deref()?.get(NS)?.as_object()
}

/// Where an image's `detail` is written: inside `image_url` (true), or
/// on the part, where it was read (false).
fn detail_inside(i: &Image) -> bool {
    !image_url_hint(i).is_some_and(|h| h.contains_key("detail"))
}

/// One part in this format (what this format's reader reads back as that part).
pub fn part_to_value(p: &Part) -> Value {
    match p {
        Part::Image(i) => {
            let mut inner = Map::new();
            let url = match &i.source {
                ImageSource::Inline(d) => data_url(d),
                ImageSource::Url(u) => u.clone(),
            };
            inner.insert("url".into(), Value::String(url));
            let inside = detail_inside(i);
            if inside {
                if let Some(d) = i.extra.get("detail") {
                    inner.insert("detail".into(), d.clone());
                }
            }
            for (k, v) in image_url_hint(i).into_iter().flatten() {
                inner.entry(k.clone()).or_insert_with(|| v.clone());
            }
            let mut o = Map::new();
            o.insert("type".into(), "image_url".into());
            o.insert("image_url".into(), Value::Object(inner));
            for (k, v) in &i.extra {
                if !(inside && k == "detail") {
                    o.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            Value::Object(o)
        }
        Part::Text(t) => {
            let mut o = Map::new();
            o.insert("type".into(), "text".into());
            o.insert("text".into(), Value::String(t.text.clone()));
            for (k, v) in &t.extra {
                o.entry(k.clone()).or_insert_with(|| v.clone());
            }
            Value::Object(o)
        }
        Part::Other(v) => v.clone(),
    }
}

/// `data:M;base64,DATA`.
fn data_url(d: &ImageData) -> String {
    let mut s = String::with_capacity(d.data().len() + d.media_type().len() + 13);
    s.push_str("data:");
    s.push_str(d.media_type());
    s.push_str(";base64,");
    s.push_str(d.data());
    s
}

/// Serialised size of one part in this format, without writing it.
pub fn part_size(p: &Part) -> u64 {
    use super::json_size::{add_sizes, object_size_of, string_size, value_size};
    match p {
        Part::Image(i) => {
            let url = match &i.source {
                // "data:" + M + ";base64," + DATA, as one JSON string.
                ImageSource::Inline(d) => string_size(d.media_type()) + 13 + d.data_json_size() - 2,
                ImageSource::Url(u) => string_size(u),
            };
            let inside = detail_inside(i);
            let mut inner: Vec<(&str, u64)> = vec![("url", url)];
            if inside {
                if let Some(d) = i.extra.get("detail") {
                    inner.push(("detail", value_size(d)));
                }
            }
            add_sizes(&mut inner, image_url_hint(i).into_iter().flatten());
            let mut outer: Vec<(&str, u64)> = vec![
                ("type", string_size("image_url")),
                ("image_url", object_size_of(inner.into_iter())),
            ];
            let moved = |k: &String| inside && k == "detail";
            add_sizes(&mut outer, i.extra.iter().filter(|(k, _)| !moved(k)));
            object_size_of(outer.into_iter())
        }
        Part::Text(t) => {
            let mut o: Vec<(&str, u64)> = vec![
                ("type", string_size("text")),
                ("text", string_size(&t.text)),
            ];
            add_sizes(&mut o, &t.extra);
            object_size_of(o.into_iter())
        }
        Part::Other(v) => value_size(v),
    }
}

/// `content` in this format, `None` when absent.
fn content_to_value(c: &Content) -> Option<Value> {
    match c {
        Content::Parts(p) => Some(Value::Array(p.iter().map(part_to_value).collect())),
        other => other.to_value(),
    }
}

pub(crate) fn message_from_value(v: &Value) -> Result<Message, InputError> {
    message_shape(v).map_err(|e| match e {
        Bad::Shape(p) => InputError::shape(p),
        Bad::Input(e) => e,
    })
}

/// What is wrong with a message: its shape, or a part of its content.
enum Bad {
    Shape(String),
    Input(InputError),
}

impl From<String> for Bad {
    fn from(p: String) -> Self {
        Bad::Shape(p)
    }
}

impl From<&str> for Bad {
    fn from(p: &str) -> Self {
        Bad::Shape(p.into())
    }
}

fn message_shape(v: &Value) -> Result<Message, Bad> {
    let obj = typed(v, Value::as_object, "expected a message object")?;
    let role = read_role(obj)?;
    let mut msg = Message::new(role, Content::Absent);
    for (key, value) in obj {
        match key.as_str() {
            "role" => {}
            "content" => msg.content = read_content(value).map_err(Bad::Input)?,
            "tool_calls" => {
                role.may_carry(key, Role::Assistant)?;
                let arr = typed(value, Value::as_array, "`tool_calls` must be an array")?;
                let calls = arr
                    .iter()
                    .enumerate()
                    .map(|(j, c)| read_call(c).map_err(|p| format!("tool_calls[{j}]: {p}")))
                    .collect::<Result<Vec<_>, _>>()?;
                msg.tool_calls = Some(calls);
            }
            "tool_call_id" => {
                role.may_carry(key, Role::Tool)?;
                let id = typed(value, Value::as_str, "`tool_call_id` must be a string")?;
                msg.tool_call_id = Some(id.to_owned());
            }
            "pinned" => msg.pinned = Some(read_pinned(value)?),
            _ => {
                msg.extra.insert(key.clone(), value.clone());
            }
        }
    }
    if role == Role::Tool && msg.tool_call_id.is_none() {
        return Err("tool message without `tool_call_id`".into());
    }
    Ok(msg)
}

fn read_call(v: &Value) -> Result<ToolCall, String> {
    let obj = typed(v, Value::as_object, "expected a call object")?;
    let id = non_empty_id(obj.get("id").ok_or("call has no `id`")?)?;
    let function = obj
        .get("function")
        .ok_or_else(|| format!("call {id:?} has no `function`"))?
        .as_object()
        .ok_or_else(|| format!("call {id:?}: `function` must be an object"))?;
    let name = expect(
        function.get("name"),
        Value::as_str,
        format_args!("call {id:?}: `function.name` must be a string"),
        format_args!("call {id:?} has no `function.name`"),
    )?
    .to_owned();
    let (arguments, text) = match function.get("arguments") {
        Some(Value::String(text)) => (parse_arguments(text), Some(text.clone())),
        // Some producers send arguments as an object already: keep the value.
        Some(other) => (other.clone(), None),
        None => return Err(format!("call {id:?} has no `function.arguments`")),
    };
    let mut call = ToolCall::new(id, name, arguments);
    let mut hint = Map::new();
    match text {
        Some(text) => {
            hint.insert("argumentsText".into(), Value::String(text));
        }
        // Arguments sent as a value, not text: write them back as a value.
        None => {
            hint.insert("argumentsValue".into(), Value::Bool(true));
        }
    }
    // `type` as read, `typeAbsent` when there was none (`"type": null` is kept too).
    match obj.get("type") {
        Some(t) => hint.insert("type".into(), t.clone()),
        None => hint.insert("typeAbsent".into(), Value::Bool(true)),
    };
    let fn_extra: Map<String, Value> = function
        .iter()
        .filter(|(k, _)| *k != "name" && *k != "arguments")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !fn_extra.is_empty() {
        hint.insert("function".into(), Value::Object(fn_extra));
    }
    for (k, v) in obj {
        if !matches!(k.as_str(), "id" | "type" | "function") {
            call.extra.insert(k.clone(), v.clone());
        }
    }
    call.wire = Some(Box::new(Value::Object(hint)));
    Ok(call)
}

/// Argument text as a JSON value; text that is not valid JSON (or is nested
/// past serde_json's limit) is kept as a JSON string (SPEC §1.3).
pub fn parse_arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// How a call's `function.arguments` is written: the writer's rule, shared
/// with `body`, which measures it without writing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArgumentsOut<'a> {
    /// As a JSON value (the call was read with arguments that were not text).
    Value(&'a Value),
    /// As this string: the text as read, or a string argument that is not
    /// itself JSON text, written back raw.
    Text(&'a str),
    /// As a string holding the compact serialisation of this value.
    Serialised(&'a Value),
}

/// The writer's choice for a call's `function.arguments`: the original
/// text when it still means the same value, else the compact serialisation
/// of the value (or the value itself, for arguments read as a value).
pub fn arguments_out(call: &ToolCall) -> ArgumentsOut<'_> {
    let hint = call.wire.as_deref();
    if hint.is_some_and(|h| h.get("argumentsValue") == Some(&Value::Bool(true))) {
        return ArgumentsOut::Value(&call.arguments);
    }
    let original = hint
        .and_then(|h| h.get("argumentsText"))
        .and_then(Value::as_str);
    match original {
        Some(text) if parse_arguments(text) == *call.arguments => ArgumentsOut::Text(text),
        _ => match &*call.arguments {
            // A string that is not itself JSON text was kept as a string: write it back raw.
            Value::String(s) if serde_json::from_str::<Value>(s).is_err() => ArgumentsOut::Text(s),
            v => ArgumentsOut::Serialised(v),
        },
    }
}

/// A call's `type`, as the writer writes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CallType<'a> {
    /// Read from openai without a `type`: none is written.
    Absent,
    /// As read (`"function"`, `null`, anything).
    Read(&'a Value),
    /// `"function"`, for calls that were not read from openai.
    Function,
}

pub fn call_type(call: &ToolCall) -> CallType<'_> {
    let hint = call.wire.as_deref();
    if hint.is_some_and(|h| h.get("typeAbsent") == Some(&Value::Bool(true))) {
        return CallType::Absent;
    }
    match hint.and_then(|h| h.get("type")) {
        Some(t) => CallType::Read(t),
        None => CallType::Function,
    }
}

/// Fields of `function` kept from the call as read, other than `name` and
/// `arguments` (they are written after those two, unless named the same).
pub fn function_extra(call: &ToolCall) -> Option<&Map<String, Value>> {
    match call.wire.as_deref().and_then(|h| h.get("function")) {
        Some(Value::Object(extra)) => Some(extra),
        _ => None,
    }
}

/// One message in this format, as it is: a tool message's images are
/// moved by [`write_messages`], not here.
pub(crate) fn message_to_value(m: &Message) -> Value {
    let split;
    let m = match split_tool_images(m) {
        Some((tool, _)) => {
            split = tool;
            &split
        }
        None => m,
    };
    let mut obj = Map::new();
    obj.insert("role".into(), Value::String(m.role.as_str().into()));
    if let Some(content) = content_to_value(&m.content) {
        obj.insert("content".into(), content);
    }
    if let Some(calls) = &m.tool_calls {
        obj.insert(
            "tool_calls".into(),
            Value::Array(calls.iter().map(call_to_value).collect()),
        );
    }
    if let Some(id) = &m.tool_call_id {
        obj.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    if let Some(p) = m.pinned {
        obj.insert("pinned".into(), Value::Bool(p));
    }
    for (k, v) in &m.extra {
        obj.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Value::Object(obj)
}

fn call_to_value(c: &ToolCall) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), Value::String(c.name.clone()));
    let arguments = match arguments_out(c) {
        ArgumentsOut::Value(v) => v.clone(),
        ArgumentsOut::Text(text) => Value::String(text.to_owned()),
        ArgumentsOut::Serialised(v) => Value::String(v.to_string()),
    };
    function.insert("arguments".into(), arguments);
    for (k, v) in function_extra(c).into_iter().flatten() {
        function.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut obj = Map::new();
    obj.insert("id".into(), Value::String(c.id.clone()));
    match call_type(c) {
        CallType::Absent => {}
        CallType::Read(t) => {
            obj.insert("type".into(), t.clone());
        }
        CallType::Function => {
            obj.insert("type".into(), json!("function"));
        }
    }
    obj.insert("function".into(), Value::Object(function));
    for (k, v) in &c.extra {
        obj.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Value::Object(obj)
}
