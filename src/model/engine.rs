//! The engine wire format (SPEC §1.1), the canonical one: camelCase fields,
//! `toolCalls: [{id, name, arguments}]`, `toolCallId`.
//!
//! Reading checks each message's shape (types of the named fields, which
//! role may carry which field) and reports the first problem with the
//! message's index. Pairing across messages is `model::iteration`'s job.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::field::{into_string, own_fields, typed};
use super::{Content, Message, Role, ToolCall};
use crate::error::{json_type, InputError, InputErrorKind};

/// Read one message from its engine JSON form.
pub fn message_from_value(v: &Value, index: usize) -> Result<Message, InputError> {
    message_from_owned(v.clone(), index)
}

/// [`message_from_value`], taking the value: its text, parts and extra
/// fields are moved into the message, not copied, so that a history read
/// as it is parsed holds each message once (a message of a million extra
/// fields is not built twice).
pub fn message_from_owned(v: Value, index: usize) -> Result<Message, InputError> {
    let err = |p: String| InputError::shape_at(index, p);
    let object = |v: Value| match v {
        Value::Object(o) => Some(o),
        _ => None,
    };
    let mut obj = typed(v, object, "expected a message object").map_err(err)?;
    let role = read_role(&obj).map_err(err)?;
    let mut msg = Message::new(role, Content::Absent);
    // The named fields are taken out, in their order (the first bad one is
    // the error); the fields left are `extra`, in theirs.
    let mut named = Vec::with_capacity(MESSAGE_FIELDS.len());
    obj.retain(|key, value| {
        let extra = !MESSAGE_FIELDS.contains(&key.as_str());
        if !extra {
            named.push((key.clone(), std::mem::take(value)));
        }
        extra
    });
    for (key, value) in named {
        match key.as_str() {
            "content" => {
                msg.content = read_content_owned(value).map_err(|e| e.at_message(index))?
            }
            "toolCalls" => {
                role.may_carry(&key, Role::Assistant).map_err(err)?;
                msg.tool_calls = Some(read_tool_calls(&value).map_err(err)?);
            }
            "toolCallId" => {
                role.may_carry(&key, Role::Tool).map_err(err)?;
                let id = typed(value, into_string, "`toolCallId` must be a string");
                msg.tool_call_id = Some(id.map_err(err)?);
            }
            "pinned" => msg.pinned = Some(read_pinned(&value).map_err(err)?),
            _ => {}
        }
    }
    // A few fields left (most messages have none) are moved into a map of
    // their size: the parsed object's table was sized for all its fields.
    msg.extra = match obj.len() {
        0 => Map::new(),
        n if n <= 16 => obj.into_iter().collect(),
        _ => obj,
    };
    if role == Role::Tool && msg.tool_call_id.is_none() {
        return Err(err("tool message without `toolCallId`".into()));
    }
    Ok(msg)
}

/// `role`, present and one of the four.
pub(crate) fn read_role(obj: &Map<String, Value>) -> Result<Role, String> {
    match obj.get("role") {
        None => Err("message has no `role`".into()),
        Some(Value::String(s)) => Role::parse(s).ok_or_else(|| {
            // Two roles of OpenAI's own logs, named with what to write.
            let hint = match s.as_str() {
                "developer" => "; `developer` is OpenAI's newer name for `system`: write it so",
                "function" => {
                    "; `function` is OpenAI's deprecated function calling: write its call as \
                     `tool_calls` and its result as a `tool` message"
                }
                _ => "",
            };
            format!("unknown role {s:?} (expected system, user, assistant or tool{hint})")
        }),
        Some(other) => Err(format!(
            "`role` must be a string, found {}",
            json_type(other)
        )),
    }
}

/// `pinned`: a boolean.
pub(crate) fn read_pinned(v: &Value) -> Result<bool, String> {
    typed(v, Value::as_bool, "`pinned` must be a boolean")
}

/// `content`: a string, null, or an array of engine parts (SPEC §1.4).
pub(crate) fn read_content(v: &Value) -> Result<Content, InputError> {
    read_content_owned(v.clone())
}

/// [`read_content`], taking the value (its text and parts are moved).
fn read_content_owned(v: Value) -> Result<Content, InputError> {
    match v {
        Value::Null => Ok(Content::Null),
        Value::String(s) => Ok(Content::Text(s)),
        Value::Array(parts) => super::parts::parts_from_values(parts)
            .map(Content::Parts)
            .map_err(|p| InputError::new(InputErrorKind::Part, p)),
        other => Err(InputError::shape(format!(
            "`content` must be a string, null or an array of parts, found {}",
            json_type(&other)
        ))),
    }
}

fn read_tool_calls(v: &Value) -> Result<Vec<ToolCall>, String> {
    let arr = typed(v, Value::as_array, "`toolCalls` must be an array")?;
    arr.iter()
        .enumerate()
        .map(|(j, call)| read_tool_call(call).map_err(|p| format!("toolCalls[{j}]: {p}")))
        .collect()
}

fn read_tool_call(v: &Value) -> Result<ToolCall, String> {
    let obj = typed(v, Value::as_object, "expected a call object")?;
    let mut call = ToolCall::default();
    let (mut has_id, mut has_name) = (false, false);
    for (key, value) in obj {
        match key.as_str() {
            "id" => {
                call.id = non_empty_id(value)?;
                has_id = true;
            }
            "name" => {
                call.name = typed(value, Value::as_str, "`name` must be a string")?.to_owned();
                has_name = true;
            }
            "arguments" => call.arguments = Arc::new(value.clone()),
            _ => {
                call.extra.insert(key.clone(), value.clone());
            }
        }
    }
    if !has_id {
        return Err("call has no `id`".into());
    }
    if !has_name {
        return Err(format!("call {:?} has no `name`", call.id));
    }
    if !obj.contains_key("arguments") {
        return Err(format!("call {:?} has no `arguments`", call.id));
    }
    Ok(call)
}

pub(crate) fn non_empty_id(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) if !s.is_empty() => Ok(s.clone()),
        Value::String(_) => Err("call `id` is empty".into()),
        other => Err(format!(
            "call `id` must be a string, found {}",
            json_type(other)
        )),
    }
}

/// The engine JSON form of a message: named fields first, then `extra` in order.
pub fn message_to_value(m: &Message) -> Value {
    let mut obj = Map::new();
    obj.insert("role".into(), Value::String(m.role.as_str().into()));
    if let Some(content) = m.content.to_value() {
        obj.insert("content".into(), content);
    }
    if let Some(calls) = &m.tool_calls {
        obj.insert("toolCalls".into(), tool_calls_to_value(calls));
    }
    if let Some(id) = &m.tool_call_id {
        obj.insert("toolCallId".into(), Value::String(id.clone()));
    }
    if let Some(p) = m.pinned {
        obj.insert("pinned".into(), Value::Bool(p));
    }
    for (k, v) in own_fields(&m.extra, &MESSAGE_FIELDS) {
        obj.insert(k.clone(), v.clone());
    }
    Value::Object(obj)
}

/// The fields the engine format names on a message; an `extra` entry with
/// one of these names is never written (the named field wins).
pub const MESSAGE_FIELDS: [&str; 5] = ["role", "content", "toolCalls", "toolCallId", "pinned"];
/// The fields the engine format names on a tool call.
pub const CALL_FIELDS: [&str; 3] = ["id", "name", "arguments"];

/// The engine JSON of a `toolCalls` array: what ADR 0098's estimator counts.
pub fn tool_calls_to_value(calls: &[ToolCall]) -> Value {
    Value::Array(calls.iter().map(tool_call_to_value).collect())
}

pub fn tool_call_to_value(c: &ToolCall) -> Value {
    let mut obj = Map::new();
    obj.insert("id".into(), Value::String(c.id.clone()));
    obj.insert("name".into(), Value::String(c.name.clone()));
    obj.insert("arguments".into(), Value::clone(&c.arguments));
    for (k, v) in own_fields(&c.extra, &CALL_FIELDS) {
        obj.insert(k.clone(), v.clone());
    }
    Value::Object(obj)
}

/// The engine JSON of a message, serialised directly, without building a
/// `Value` tree: the same text as [`message_to_value`] gives (named fields
/// first, then `extra` in order), for requests and answers of the protocol.
pub struct MessageJson<'a>(pub &'a Message);

/// A slice as a JSON array, each item serialised through the direct
/// writer given ([`MessageJson`], `CallJson`, `PartJson`).
struct Seq<'a, T, W>(&'a [T], fn(&'a T) -> W);

/// An engine history as a JSON array, serialised directly.
pub struct MessagesJson<'a>(pub &'a [Message]);

impl serde::Serialize for MessagesJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Seq(self.0, MessageJson).serialize(s)
    }
}

impl<'a, T, W: serde::Serialize> serde::Serialize for Seq<'a, T, W> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(self.1))
    }
}

struct CallJson<'a>(&'a ToolCall);

impl serde::Serialize for MessageJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let m = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("role", m.role.as_str())?;
        match &m.content {
            Content::Absent => {}
            Content::Null => map.serialize_entry("content", &())?,
            Content::Text(t) => map.serialize_entry("content", t)?,
            Content::Parts(p) => map.serialize_entry("content", &Seq(p, super::parts::PartJson))?,
        }
        if let Some(calls) = &m.tool_calls {
            map.serialize_entry("toolCalls", &Seq(calls, CallJson))?;
        }
        if let Some(id) = &m.tool_call_id {
            map.serialize_entry("toolCallId", id)?;
        }
        if let Some(p) = m.pinned {
            map.serialize_entry("pinned", &p)?;
        }
        for (k, v) in own_fields(&m.extra, &MESSAGE_FIELDS) {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl serde::Serialize for CallJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let c = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("id", &c.id)?;
        map.serialize_entry("name", &c.name)?;
        map.serialize_entry("arguments", &*c.arguments)?;
        for (k, v) in own_fields(&c.extra, &CALL_FIELDS) {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Read an engine history from a JSON array.
pub fn read_messages(arr: &[Value]) -> Result<Vec<Message>, InputError> {
    arr.iter()
        .enumerate()
        .map(|(i, v)| message_from_value(v, i))
        .collect()
}

pub fn write_messages(msgs: &[Message]) -> Vec<Value> {
    msgs.iter().map(message_to_value).collect()
}
