//! OpenAI Chat Completions (`POST /v1/chat/completions`): a request read
//! by `model::openai`, a turn answered as a `chat.completion` or streamed
//! as `chat.completion.chunk` events ending in `[DONE]`.

use serde_json::{json, Map, Value};

use super::{arguments_text, max_tokens_of, read_tools, AnswerContext, Request, Turn};
use crate::model::openai;

pub(super) fn read(obj: &Map<String, Value>) -> Result<Request, String> {
    let Some(Value::Array(raw)) = obj.get("messages") else {
        return Err("the request has no `messages` array".into());
    };
    // `developer` is the newer name of `system` (o1 and later).
    let raw: Vec<Value> = raw
        .iter()
        .map(|m| match m.get("role").and_then(Value::as_str) {
            Some("developer") => {
                let mut m = m.clone();
                m["role"] = "system".into();
                m
            }
            _ => m.clone(),
        })
        .collect();
    let messages = openai::read_messages(&raw).map_err(|e| e.to_string())?;
    let mut request = Request::new(messages, read_tools(obj.get("tools")));
    request.stream_usage = obj
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    request.max_tokens = max_tokens_of(obj, &["max_completion_tokens", "max_tokens"])?;
    request.tools_allowed = obj.get("tool_choice").and_then(Value::as_str) != Some("none");
    request.parallel_calls = obj.get("parallel_tool_calls").and_then(Value::as_bool) != Some(false);
    Ok(request)
}

fn id(ctx: &AnswerContext) -> String {
    format!("chatcmpl-ctxgate{}", ctx.serial)
}

fn usage(ctx: &AnswerContext) -> Value {
    json!({"prompt_tokens": ctx.input_tokens, "completion_tokens": ctx.output_tokens,
        "total_tokens": ctx.input_tokens + ctx.output_tokens})
}

fn finish_reason(turn: &Turn) -> &'static str {
    if turn.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

pub(super) fn answer(turn: &Turn, ctx: &AnswerContext) -> Value {
    let mut message = json!({"role": "assistant",
        "content": if turn.text.is_empty() && !turn.calls.is_empty() { Value::Null } else { turn.text.clone().into() },
        "refusal": null});
    if !turn.calls.is_empty() {
        message["tool_calls"] = turn
            .calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": arguments_text(&c.arguments)}})
            })
            .collect();
    }
    json!({"id": id(ctx), "object": "chat.completion", "created": ctx.created,
        "model": ctx.model, "system_fingerprint": null,
        "choices": [{"index": 0, "message": message, "logprobs": null,
            "finish_reason": finish_reason(turn)}],
        "usage": usage(ctx)})
}

pub(super) fn events(turn: &Turn, ctx: &AnswerContext) -> Vec<(Option<&'static str>, Value)> {
    let chunk = |delta: Value, finish: Value| {
        (
            None,
            json!({"id": id(ctx), "object": "chat.completion.chunk", "created": ctx.created,
                "model": ctx.model, "system_fingerprint": null,
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]}),
        )
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
    )];
    if !turn.text.is_empty() {
        out.push(chunk(json!({"content": turn.text}), Value::Null));
    }
    for (i, c) in turn.calls.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": ""}}]}),
            Value::Null,
        ));
        out.push(chunk(
            json!({"tool_calls": [{"index": i, "function": {"arguments": arguments_text(&c.arguments)}}]}),
            Value::Null,
        ));
    }
    out.push(chunk(json!({}), finish_reason(turn).into()));
    if ctx.stream_usage {
        out.push((
            None,
            json!({"id": id(ctx), "object": "chat.completion.chunk", "created": ctx.created,
                "model": ctx.model, "system_fingerprint": null, "choices": [], "usage": usage(ctx)}),
        ));
    }
    out.push((None, Value::String("[DONE]".into())));
    out
}
