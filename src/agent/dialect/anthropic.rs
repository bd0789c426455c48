//! Anthropic Messages (`POST /v1/messages`): a request read by
//! `model::anthropic` (its top-level `system`, `tool_use` and
//! `tool_result` blocks), a turn answered as a `message` or streamed as
//! `message_start` … `message_stop` events.

use serde_json::{json, Map, Value};

use super::{max_tokens_of, read_tools, AnswerContext, Request, Turn};
use crate::model::anthropic;

pub(super) fn read(obj: &Map<String, Value>) -> Result<Request, String> {
    let Some(Value::Array(raw)) = obj.get("messages") else {
        return Err("the request has no `messages` array".into());
    };
    let messages = anthropic::read_messages(obj.get("system"), raw).map_err(|e| e.to_string())?;
    let mut request = Request::new(messages, read_tools(obj.get("tools")));
    request.max_tokens = max_tokens_of(obj, &["max_tokens"])?;
    let choice = obj.get("tool_choice");
    request.tools_allowed =
        choice.and_then(|c| c.get("type")).and_then(Value::as_str) != Some("none");
    request.parallel_calls = choice
        .and_then(|c| c.get("disable_parallel_tool_use"))
        .and_then(Value::as_bool)
        != Some(true);
    Ok(request)
}

fn id(ctx: &AnswerContext) -> String {
    format!("msg_ctxgate{}", ctx.serial)
}

fn stop_reason(turn: &Turn) -> &'static str {
    if turn.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn blocks(turn: &Turn) -> Vec<Value> {
    let text = (!turn.text.is_empty()).then(|| json!({"type": "text", "text": turn.text}));
    text.into_iter()
        .chain(
            turn.calls.iter().map(
                |c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}),
            ),
        )
        .collect()
}

fn usage(ctx: &AnswerContext, output: u64) -> Value {
    json!({"input_tokens": ctx.input_tokens, "output_tokens": output,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

pub(super) fn answer(turn: &Turn, ctx: &AnswerContext) -> Value {
    json!({"id": id(ctx), "type": "message", "role": "assistant", "model": ctx.model,
        "content": blocks(turn), "stop_reason": stop_reason(turn), "stop_sequence": null,
        "usage": usage(ctx, ctx.output_tokens)})
}

pub(super) fn events(turn: &Turn, ctx: &AnswerContext) -> Vec<(Option<&'static str>, Value)> {
    let mut out = vec![
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": id(ctx), "type": "message",
                "role": "assistant", "model": ctx.model, "content": [], "stop_reason": null,
                "stop_sequence": null, "usage": usage(ctx, 1)}}),
        ),
        (Some("ping"), json!({"type": "ping"})),
    ];
    for (index, block) in blocks(turn).into_iter().enumerate() {
        let (start, delta) = match block["type"].as_str() {
            Some("text") => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            ),
            _ => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            ),
        };
        out.push((
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        out.push((
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
        out.push((
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    out.push((
        Some("message_delta"),
        json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(turn), "stop_sequence": null},
            "usage": {"output_tokens": ctx.output_tokens}}),
    ));
    out.push((Some("message_stop"), json!({"type": "message_stop"})));
    out
}
