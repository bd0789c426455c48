//! The `openai` wire format (SPEC §1.3): Chat Completions messages,
//! `tool_calls: [{id, type: "function", function: {name, arguments}}]`
//! with arguments as JSON text, and `tool_call_id`.
//!
//! Reading parses the argument text into a JSON value (text that is not
//! valid JSON stays a JSON string) and keeps, in the call's `wire` hint, the
//! original text (or that the arguments came as a JSON value, not text) and
//! the spelling of `type` (or its absence), so that writing gives back
//! exactly what was read.

use serde_json::{json, Map, Value};

use super::engine::{non_empty_id, read_content, read_role};
use super::{Content, Message, Role, ToolCall};
use crate::error::{json_type, InputError};

pub fn read_messages(arr: &[Value]) -> Result<Vec<Message>, InputError> {
    arr.iter()
        .enumerate()
        .map(|(i, v)| message_from_value(v).map_err(|p| InputError::shape_at(i, p)))
        .collect()
}

pub fn write_messages(msgs: &[Message]) -> Vec<Value> {
    msgs.iter().map(message_to_value).collect()
}

pub(crate) fn message_from_value(v: &Value) -> Result<Message, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("expected a message object, found {}", json_type(v)))?;
    let role = read_role(obj)?;
    let mut msg = Message::new(role, Content::Absent);
    for (key, value) in obj {
        match key.as_str() {
            "role" => {}
            "content" => msg.content = read_content(value)?,
            "tool_calls" => {
                if role != Role::Assistant {
                    return Err(format!(
                        "`tool_calls` on {} message (assistant only)",
                        role.with_article()
                    ));
                }
                let arr = value.as_array().ok_or_else(|| {
                    format!("`tool_calls` must be an array, found {}", json_type(value))
                })?;
                let calls = arr
                    .iter()
                    .enumerate()
                    .map(|(j, c)| read_call(c).map_err(|p| format!("tool_calls[{j}]: {p}")))
                    .collect::<Result<Vec<_>, _>>()?;
                msg.tool_calls = Some(calls);
            }
            "tool_call_id" => {
                if role != Role::Tool {
                    return Err(format!(
                        "`tool_call_id` on {} message (tool only)",
                        role.with_article()
                    ));
                }
                msg.tool_call_id = Some(
                    value
                        .as_str()
                        .ok_or_else(|| {
                            format!(
                                "`tool_call_id` must be a string, found {}",
                                json_type(value)
                            )
                        })?
                        .to_owned(),
                );
            }
            "pinned" => match value {
                Value::Bool(b) => msg.pinned = Some(*b),
                other => {
                    return Err(format!(
                        "`pinned` must be a boolean, found {}",
                        json_type(other)
                    ))
                }
            },
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
    let obj = v
        .as_object()
        .ok_or_else(|| format!("expected a call object, found {}", json_type(v)))?;
    let id = non_empty_id(obj.get("id").ok_or("call has no `id`")?)?;
    let function = obj
        .get("function")
        .ok_or_else(|| format!("call {id:?} has no `function`"))?
        .as_object()
        .ok_or_else(|| format!("call {id:?}: `function` must be an object"))?;
    let name = match function.get("name") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(format!(
                "call {id:?}: `function.name` must be a string, found {}",
                json_type(other)
            ))
        }
        None => return Err(format!("call {id:?} has no `function.name`")),
    };
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

pub(crate) fn message_to_value(m: &Message) -> Value {
    let mut obj = Map::new();
    obj.insert("role".into(), Value::String(m.role.as_str().into()));
    if let Some(content) = m.content.to_value() {
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
