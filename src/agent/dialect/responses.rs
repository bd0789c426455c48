//! OpenAI Responses (`POST /v1/responses`): `instructions` and the
//! `input` items read into engine messages — messages, `function_call`
//! (consecutive ones are one assistant turn) and `function_call_output` —
//! and a turn answered as a `response` or streamed as `response.created` …
//! `response.completed` events.
//!
//! An `item_reference` names an item the endpoint answered earlier in the
//! case ([`Stored`]), as OpenAI resolves one against a stored response: it
//! is read as that item. Items that are not conversation (`reasoning`, a
//! provider tool's call) are left out of the messages; they still count in
//! the body's bytes, which are always those received.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::{arguments_text, max_tokens_of, read_tools, AnswerContext, Request, Turn};
use crate::model::engine;

/// The output items the endpoint answered in one case, by id: what a later
/// request's `item_reference` names. OpenAI keeps a response's items when
/// it is stored (`store`, on by default), and a client that relies on it —
/// the Vercel AI SDK's Responses provider, by default — sends a reference
/// in place of an item it was answered.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    items: HashMap<String, Value>,
}

impl Stored {
    /// Keep the output items of an answer.
    pub fn keep(&mut self, turn: &Turn, ctx: &AnswerContext) {
        for item in items(turn, ctx) {
            if let Some(id) = item["id"].as_str() {
                self.items.insert(id.to_owned(), item.clone());
            }
        }
    }
}

pub(super) fn read(obj: &Map<String, Value>, stored: &Stored) -> Result<Request, String> {
    let mut out: Vec<Value> = Vec::new();
    if let Some(text) = obj.get("instructions").and_then(Value::as_str) {
        out.push(json!({"role": "system", "content": text}));
    }
    match obj.get("input") {
        Some(Value::String(text)) => out.push(json!({"role": "user", "content": text})),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                read_item(item, stored, &mut out).map_err(|p| format!("input[{i}]: {p}"))?;
            }
        }
        None | Some(Value::Null) => {}
        Some(_) => return Err("`input` must be a string or an array of items".into()),
    }
    let messages = engine::read_messages(&out).map_err(|e| e.to_string())?;
    let mut request = Request::new(messages, read_tools(obj.get("tools")));
    request.max_tokens = max_tokens_of(obj, &["max_output_tokens"])?;
    request.previous_response_id = obj
        .get("previous_response_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    request.tools_allowed = obj.get("tool_choice").and_then(Value::as_str) != Some("none");
    request.parallel_calls = obj.get("parallel_tool_calls").and_then(Value::as_bool) != Some(false);
    Ok(request)
}

/// One input item, appended to `out` as engine message values.
fn read_item(item: &Value, stored: &Stored, out: &mut Vec<Value>) -> Result<(), String> {
    let obj = item.as_object().ok_or("expected an item object")?;
    let kind = obj.get("type").and_then(Value::as_str);
    match kind {
        None | Some("message") => {
            let role = match obj.get("role").and_then(Value::as_str) {
                Some("developer") | Some("system") => "system",
                Some(r @ ("user" | "assistant")) => r,
                Some(other) => return Err(format!("a message of role {other:?}")),
                None => return Err("a message item has no `role`".into()),
            };
            let content = content_of(obj.get("content"))?;
            out.push(json!({"role": role, "content": content}));
        }
        Some("function_call") => {
            let call_id = obj
                .get("call_id")
                .and_then(Value::as_str)
                .ok_or("a `function_call` has no `call_id`")?;
            let name = obj.get("name").and_then(Value::as_str).unwrap_or("");
            let arguments = match obj.get("arguments") {
                Some(Value::String(t)) => crate::model::openai::parse_arguments(t),
                Some(other) => other.clone(),
                None => json!({}),
            };
            let call = json!({"id": call_id, "name": name, "arguments": arguments});
            // Calls right after an assistant message (or after other calls)
            // are that message's calls: one model turn.
            match out.last_mut() {
                Some(m) if m["role"] == "assistant" => match m.get_mut("toolCalls") {
                    Some(Value::Array(calls)) => calls.push(call),
                    _ => m["toolCalls"] = json!([call]),
                },
                _ => out.push(json!({"role": "assistant", "content": "", "toolCalls": [call]})),
            }
        }
        Some("function_call_output") => {
            let call_id = obj
                .get("call_id")
                .and_then(Value::as_str)
                .ok_or("a `function_call_output` has no `call_id`")?;
            let content = content_of(obj.get("output"))?;
            out.push(json!({"role": "tool", "toolCallId": call_id, "content": content}));
        }
        Some("item_reference") => {
            let id = obj
                .get("id")
                .and_then(Value::as_str)
                .ok_or("an `item_reference` has no `id`")?;
            // What the endpoint stored is a message or a function call:
            // read as if the client had sent it whole.
            let item = stored.items.get(id).ok_or_else(|| {
                format!("Item with id '{id}' not found (an `item_reference` names an item this case did not answer)")
            })?;
            read_item(item, stored, out)?;
        }
        Some(_) => {}
    }
    Ok(())
}

/// An item's content as engine content: a string stays one; parts become
/// engine text and image parts (other parts are kept as they are).
fn content_of(v: Option<&Value>) -> Result<Value, String> {
    match v {
        None | Some(Value::Null) => Ok(Value::String(String::new())),
        Some(Value::String(s)) => Ok(Value::String(s.clone())),
        Some(Value::Array(parts)) => Ok(Value::Array(parts.iter().map(part_of).collect())),
        Some(_) => Err("`content` must be a string or an array of parts".into()),
    }
}

fn part_of(p: &Value) -> Value {
    match p.get("type").and_then(Value::as_str) {
        Some("input_text" | "output_text" | "text") => {
            json!({"type": "text", "text": p.get("text").cloned().unwrap_or_default()})
        }
        Some("input_image") => match p.get("image_url").and_then(Value::as_str) {
            Some(url) => match data_url(url) {
                Some((media, data)) => json!({"type": "image", "mediaType": media, "data": data}),
                None => json!({"type": "image", "url": url}),
            },
            None => p.clone(),
        },
        _ => p.clone(),
    }
}

/// `data:M;base64,DATA` → (M, DATA).
fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (media, data) = rest.split_once(";base64,")?;
    Some((media, data))
}

/// The id of the response an answer is: what `previous_response_id`
/// names later.
pub fn response_id(serial: u64) -> String {
    format!("resp_ctxgate{serial}")
}

fn items(turn: &Turn, ctx: &AnswerContext) -> Vec<Value> {
    let text = (!turn.text.is_empty()).then(|| {
        json!({"type": "message", "id": format!("msg_ctxgate{}", ctx.serial), "status": "completed",
            "role": "assistant", "content": [{"type": "output_text", "text": turn.text,
                "annotations": [], "logprobs": []}]})
    });
    text.into_iter()
        .chain(turn.calls.iter().enumerate().map(|(i, c)| {
            json!({"type": "function_call", "id": format!("fc_ctxgate{}_{i}", ctx.serial),
                "call_id": c.id, "name": c.name, "arguments": arguments_text(&c.arguments),
                "status": "completed"})
        }))
        .collect()
}

fn response(ctx: &AnswerContext, status: &str, output: Vec<Value>, usage: bool) -> Value {
    json!({"id": response_id(ctx.serial), "object": "response", "created_at": ctx.created,
        "status": status, "background": false, "error": null, "incomplete_details": null,
        "instructions": null, "max_output_tokens": null, "max_tool_calls": null,
        "model": ctx.model, "output": output, "parallel_tool_calls": true,
        "previous_response_id": null, "reasoning": {"effort": null, "summary": null},
        "service_tier": "default", "store": false, "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": "auto",
        "tools": [], "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled",
        "usage": if usage { json!({"input_tokens": ctx.input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": ctx.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": ctx.input_tokens + ctx.output_tokens}) } else { Value::Null },
        "user": null, "metadata": {}})
}

pub(super) fn answer(turn: &Turn, ctx: &AnswerContext) -> Value {
    response(ctx, "completed", items(turn, ctx), true)
}

pub(super) fn events(turn: &Turn, ctx: &AnswerContext) -> Vec<(Option<&'static str>, Value)> {
    let mut out: Vec<(Option<&'static str>, Value)> = Vec::new();
    let mut push = |name: &'static str, mut data: Value| {
        data["type"] = name.into();
        data["sequence_number"] = out.len().into();
        out.push((Some(name), data));
    };
    push(
        "response.created",
        json!({"response": response(ctx, "in_progress", vec![], false)}),
    );
    push(
        "response.in_progress",
        json!({"response": response(ctx, "in_progress", vec![], false)}),
    );
    let done = items(turn, ctx);
    for (index, item) in done.iter().enumerate() {
        let item_id = item["id"].clone();
        if item["type"] == "message" {
            let text = item["content"][0]["text"].clone();
            let mut added = item.clone();
            added["status"] = "in_progress".into();
            added["content"] = json!([]);
            push(
                "response.output_item.added",
                json!({"output_index": index, "item": added}),
            );
            let empty =
                json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []});
            push(
                "response.content_part.added",
                json!({"item_id": item_id, "output_index": index, "content_index": 0, "part": empty}),
            );
            push(
                "response.output_text.delta",
                json!({"item_id": item_id, "output_index": index, "content_index": 0,
                    "delta": text, "logprobs": []}),
            );
            push(
                "response.output_text.done",
                json!({"item_id": item_id, "output_index": index, "content_index": 0,
                    "text": text, "logprobs": []}),
            );
            push(
                "response.content_part.done",
                json!({"item_id": item_id, "output_index": index, "content_index": 0,
                    "part": item["content"][0]}),
            );
        } else {
            let mut added = item.clone();
            added["status"] = "in_progress".into();
            added["arguments"] = "".into();
            push(
                "response.output_item.added",
                json!({"output_index": index, "item": added}),
            );
            push(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": index, "delta": item["arguments"]}),
            );
            push(
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": index, "name": item["name"],
                    "arguments": item["arguments"]}),
            );
        }
        push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }
    push(
        "response.completed",
        json!({"response": response(ctx, "completed", done, true)}),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::super::Call;
    use super::*;
    use crate::model::Role;

    #[test]
    fn items_become_one_turn_and_its_results() {
        let obj = json!({"model": "m", "instructions": "be brief", "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "task"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"a\"}"},
            {"type": "function_call", "call_id": "c2", "name": "read", "arguments": "{\"path\":\"b\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "A"},
            {"type": "function_call_output", "call_id": "c2", "output": "B"}
        ]});
        let r = read(obj.as_object().unwrap(), &Stored::default()).unwrap();
        let roles: Vec<_> = r.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Tool
            ]
        );
        assert_eq!(r.messages[2].calls().len(), 2);
        assert_eq!(r.messages[3].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(r.messages[4].content.text(), "B");
    }

    fn ctx(serial: u64, stream: bool) -> AnswerContext {
        AnswerContext {
            serial,
            model: "m".into(),
            stream,
            stream_usage: false,
            input_tokens: 10,
            output_tokens: 2,
            created: 1,
        }
    }

    fn turn() -> Turn {
        Turn {
            text: "Reading two files.".into(),
            calls: vec![
                Call {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                },
                Call {
                    id: "c2".into(),
                    name: "read".into(),
                    arguments: json!({"path": "b"}),
                },
            ],
        }
    }

    /// openai-python's `ResponseUsage.InputTokensDetails` requires
    /// `cache_write_tokens` besides `cached_tokens`: an answer without it
    /// does not validate as the SDK's `Response`.
    #[test]
    fn usage_has_every_field_the_sdk_types_require() {
        let answered = answer(&turn(), &ctx(1, false));
        let streamed = events(&turn(), &ctx(1, true));
        let completed = &streamed.last().unwrap().1["response"];
        for usage in [&answered["usage"], &completed["usage"]] {
            for key in ["input_tokens", "output_tokens", "total_tokens"] {
                assert!(usage[key].is_u64(), "{key} in {usage}");
            }
            assert_eq!(usage["input_tokens_details"]["cached_tokens"], 0);
            assert_eq!(usage["input_tokens_details"]["cache_write_tokens"], 0);
            assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 0);
        }
    }

    /// The Vercel AI SDK's Responses provider (store on, its default) sends
    /// an `item_reference` in place of an output item it was answered: it
    /// reads as that item, so the turn it belongs to is whole.
    #[test]
    fn item_references_read_as_the_items_answered() {
        let mut stored = Stored::default();
        stored.keep(&turn(), &ctx(3, false));
        let obj = json!({"model": "m", "input": [
            {"role": "user", "content": "task"},
            {"type": "item_reference", "id": "msg_ctxgate3"},
            {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"a\"}"},
            {"type": "item_reference", "id": "fc_ctxgate3_1"},
            {"type": "function_call_output", "call_id": "c1", "output": "A"},
            {"type": "function_call_output", "call_id": "c2", "output": "B"}
        ]});
        let r = read(obj.as_object().unwrap(), &stored).unwrap();
        assert_eq!(r.messages.len(), 4);
        let turn = &r.messages[1];
        assert_eq!(turn.role, Role::Assistant);
        assert_eq!(turn.content.text(), "Reading two files.");
        let ids: Vec<_> = turn.calls().iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2"]);
        assert_eq!(*turn.calls()[1].arguments, json!({"path": "b"}));

        // A reference to an item this case never answered is refused,
        // naming it — never read as nothing.
        let obj = json!({"input": [{"type": "item_reference", "id": "msg_elsewhere"}]});
        let err = read(obj.as_object().unwrap(), &stored).unwrap_err();
        assert!(
            err.contains("input[0]") && err.contains("'msg_elsewhere'"),
            "{err}"
        );
    }
}
