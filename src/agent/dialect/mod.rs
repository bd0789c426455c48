//! The three dialects agents speak to a model, at the edge of agent mode:
//! a request read into engine messages (through `model`'s wire formats),
//! and a model turn rendered back — as one JSON answer or as the SSE event
//! sequence the providers stream and their official SDKs parse.
//!
//! - `openai-chat`: OpenAI Chat Completions, `POST /v1/chat/completions`
//!   ([`chat`]), read by `model::openai`.
//! - `openai-responses`: OpenAI Responses, `POST /v1/responses`
//!   ([`responses`]); its input items become engine messages here.
//! - `anthropic`: Anthropic Messages, `POST /v1/messages` ([`anthropic`]),
//!   read by `model::anthropic`.
//!
//! Everything between the edges speaks engine messages. What it does not
//! do: decide what to answer (`agent::play`), or judge (`agent::judge`).

pub mod anthropic;
pub mod chat;
pub mod responses;

use serde_json::{json, Map, Value};

use crate::model::Message;

/// A dialect an agent speaks (SPEC §9, `--dialect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dialect {
    OpenaiChat,
    OpenaiResponses,
    Anthropic,
}

impl Dialect {
    pub const ALL: [Dialect; 3] = [
        Dialect::OpenaiChat,
        Dialect::OpenaiResponses,
        Dialect::Anthropic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Dialect::OpenaiChat => "openai-chat",
            Dialect::OpenaiResponses => "openai-responses",
            Dialect::Anthropic => "anthropic",
        }
    }

    pub fn parse(s: &str) -> Option<Dialect> {
        Dialect::ALL.into_iter().find(|d| d.name() == s)
    }

    /// The dialect a request path is in: `/v1/chat/completions`, and the
    /// same without `/v1` (a base URL given without it), whatever query
    /// follows (Azure's `?api-version=…`, the Anthropic SDK's
    /// `?beta=true`).
    pub fn of_path(path: &str) -> Option<Dialect> {
        let path = path.split(['?', '#']).next().unwrap_or("");
        let path = path.trim_end_matches('/');
        let path = path.strip_prefix("/v1").unwrap_or(path);
        match path {
            "/chat/completions" => Some(Dialect::OpenaiChat),
            "/responses" => Some(Dialect::OpenaiResponses),
            "/messages" => Some(Dialect::Anthropic),
            _ => None,
        }
    }

    /// Read a request body of this dialect (with nothing stored: an
    /// `item_reference` is unknown).
    pub fn read(self, body: &[u8]) -> Result<Request, String> {
        self.read_in(body, &responses::Stored::default())
    }

    /// Read a request body of this dialect; Responses' `item_reference`s
    /// are the items of `stored` (the case's earlier answers).
    pub fn read_in(self, body: &[u8], stored: &responses::Stored) -> Result<Request, String> {
        let value = read_body(body)?;
        let Value::Object(obj) = value else {
            return Err("the request body is not a JSON object".into());
        };
        let mut request = match self {
            Dialect::OpenaiChat => chat::read(&obj),
            Dialect::OpenaiResponses => responses::read(&obj, stored),
            Dialect::Anthropic => anthropic::read(&obj),
        }?;
        request.dialect = self;
        request.model = obj
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        request.stream = obj.get("stream").and_then(Value::as_bool).unwrap_or(false);
        Ok(request)
    }

    /// A model turn as this dialect answers it: one JSON object, or, when
    /// the request asked to stream, the provider's SSE events.
    pub fn render(self, turn: &Turn, ctx: &AnswerContext) -> Rendered {
        match (self, ctx.stream) {
            (Dialect::OpenaiChat, false) => Rendered::json(chat::answer(turn, ctx)),
            (Dialect::OpenaiChat, true) => Rendered::sse(chat::events(turn, ctx)),
            (Dialect::OpenaiResponses, false) => Rendered::json(responses::answer(turn, ctx)),
            (Dialect::OpenaiResponses, true) => Rendered::sse(responses::events(turn, ctx)),
            (Dialect::Anthropic, false) => Rendered::json(anthropic::answer(turn, ctx)),
            (Dialect::Anthropic, true) => Rendered::sse(anthropic::events(turn, ctx)),
        }
    }

    /// The provider's answer to a request over the model's window: its
    /// status and error body (what agents match on to compact).
    pub fn context_length_error(self, tokens: u64, window: u64) -> Rendered {
        let body = match self {
            Dialect::OpenaiChat => json!({"error": {
                "message": format!("This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            Dialect::OpenaiResponses => json!({"error": {
                "message": format!("Your input exceeds the context window of this model ({tokens} tokens > {window}). Please adjust your input and try again."),
                "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}),
            Dialect::Anthropic => json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": format!("prompt is too long: {tokens} tokens > {window} maximum")}}),
        };
        Rendered::json(body).with_status(400)
    }

    /// The provider's answer to a request it cannot read.
    pub fn bad_request(self, why: &str) -> Rendered {
        let body = match self {
            Dialect::Anthropic => json!({"type": "error", "error": {
                "type": "invalid_request_error", "message": why}}),
            _ => json!({"error": {"message": why, "type": "invalid_request_error",
                "param": null, "code": null}}),
        };
        Rendered::json(body).with_status(400)
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A model request as ctxgate reads it.
#[derive(Debug, Clone)]
pub struct Request {
    pub dialect: Dialect,
    pub model: String,
    pub stream: bool,
    /// Chat Completions' `stream_options.include_usage`.
    pub stream_usage: bool,
    /// The conversation, in the engine model: the system prompt (Chat's
    /// `system`/`developer` messages, Anthropic's `system`, Responses'
    /// `instructions`) as `system` messages at its head.
    pub messages: Vec<Message>,
    /// The tools the request advertises.
    pub tools: Vec<Tool>,
    /// The most output tokens the request allows (`max_tokens`,
    /// `max_completion_tokens`, `max_output_tokens`).
    pub max_tokens: Option<u64>,
    /// Responses' `previous_response_id`: the conversation continues one
    /// the endpoint answered (`agent::play` puts it back in front).
    pub previous_response_id: Option<String>,
    /// Whether the request lets the model call tools (`tool_choice` is not
    /// `none`).
    pub tools_allowed: bool,
    /// Whether the model may make several calls in one turn
    /// (`parallel_tool_calls`, Anthropic's `disable_parallel_tool_use`).
    pub parallel_calls: bool,
}

impl Request {
    fn new(messages: Vec<Message>, tools: Vec<Tool>) -> Request {
        Request {
            dialect: Dialect::OpenaiChat,
            model: String::new(),
            stream: false,
            stream_usage: false,
            messages,
            tools,
            max_tokens: None,
            previous_response_id: None,
            tools_allowed: true,
            parallel_calls: true,
        }
    }
}

/// A tool a request advertises: its name and the JSON schema of its input.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub schema: Value,
}

/// A model turn to answer with: text, then tool calls (none in a final
/// answer or a summary).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    pub text: String,
    pub calls: Vec<Call>,
}

/// One tool call of a model turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// What an answer carries besides the turn: ids, the model's name, usage.
#[derive(Debug, Clone)]
pub struct AnswerContext {
    /// A number unique to this answer within the run (its ids).
    pub serial: u64,
    pub model: String,
    pub stream: bool,
    pub stream_usage: bool,
    /// Prompt tokens: ctxgate's estimate of the request (SPEC §9).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Unix seconds.
    pub created: u64,
}

/// An HTTP answer: status, headers, body.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Rendered {
    pub fn json(v: Value) -> Rendered {
        Rendered {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: v.to_string().into_bytes(),
        }
    }

    /// Server-sent events: each `(event name, data)`; a `None` name writes
    /// the data line alone (Chat Completions names no events), a string
    /// data is written as it is (`[DONE]`).
    pub fn sse(events: Vec<(Option<&'static str>, Value)>) -> Rendered {
        let mut body = String::new();
        for (name, data) in events {
            if let Some(name) = name {
                body.push_str("event: ");
                body.push_str(name);
                body.push('\n');
            }
            body.push_str("data: ");
            match data {
                Value::String(s) => body.push_str(&s),
                other => body.push_str(&other.to_string()),
            }
            body.push_str("\n\n");
        }
        Rendered {
            status: 200,
            headers: vec![
                (
                    "content-type".into(),
                    "text/event-stream; charset=utf-8".into(),
                ),
                ("cache-control".into(), "no-cache".into()),
            ],
            body: body.into_bytes(),
        }
    }

    pub fn with_status(mut self, status: u16) -> Rendered {
        self.status = status;
        self
    }
}

/// The `tools` of a request, whichever of the shapes it uses:
/// `{"type": "function", "function": {name, parameters}}` (Chat),
/// `{"type": "function", name, parameters}` (Responses),
/// `{name, input_schema}` (Anthropic). Tools of other types (a provider's
/// own, `web_search`) are not the agent's and are left out.
pub(crate) fn read_tools(v: Option<&Value>) -> Vec<Tool> {
    let Some(Value::Array(tools)) = v else {
        return Vec::new();
    };
    tools
        .iter()
        .filter_map(|t| {
            let t = t.as_object()?;
            let f = t.get("function").and_then(Value::as_object).unwrap_or(t);
            let name = f.get("name")?.as_str()?.to_owned();
            let schema = ["parameters", "input_schema", "inputSchema"]
                .iter()
                .find_map(|k| f.get(*k))
                .cloned()
                .unwrap_or_else(|| json!({}));
            Some(Tool { name, schema })
        })
        .collect()
}

/// The output cap of `keys` (the first present), refused as OpenAI and
/// Anthropic refuse it (400) when it is a number under 1: a summary is
/// never longer than the cap, and there is no answer of 0 tokens or
/// fewer.
pub(crate) fn max_tokens_of(
    obj: &Map<String, Value>,
    keys: &[&str],
) -> Result<Option<u64>, String> {
    for k in keys {
        if let Some(v) = obj.get(*k).filter(|v| v.is_number()) {
            if v.as_f64().is_some_and(|n| n < 1.0) {
                return Err(format!("`{k}`: {v} is below the minimum of 1"));
            }
            return Ok(v.as_u64());
        }
    }
    Ok(None)
}

/// Arguments as JSON text, as Chat and Responses carry them.
pub(crate) fn arguments_text(v: &Value) -> String {
    v.to_string()
}

/// A request body read as a model server's JSON parser reads it
/// (`JSON.parse`, Python's `json.loads`): a repeated key keeps its last
/// value, and an escaped lone UTF-16 surrogate — `\ud83d` without its
/// other half, what serialising a JavaScript string cut between the two
/// halves of an emoji writes — is read as U+FFFD. ctxgate's own inputs
/// are read strictly (`model::parse_json`: a fixture with a repeated key
/// is refused); an agent's request is read as the server it stands in for
/// would read it, so that ctxgate never answers 400 to a body a real
/// endpoint takes. The error, for a body no such parser reads, is the
/// strict reader's, which says where.
pub(crate) fn read_body(body: &[u8]) -> Result<Value, String> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    if let Some(v) = lone_surrogates_replaced(body).and_then(|b| serde_json::from_slice(&b).ok()) {
        return Ok(v);
    }
    Err(match crate::model::parse_json(body) {
        Err(e) => e.to_string(),
        Ok(_) => "the request body is not JSON a server reads".into(),
    })
}

/// `body` with every `\uXXXX` escape of a lone UTF-16 surrogate in its
/// strings written `\ufffd`; `None` when it has none. A high surrogate
/// followed by the escape of a low one is a pair and kept; an escaped
/// backslash before `u` (`\\u`) is no escape.
fn lone_surrogates_replaced(body: &[u8]) -> Option<Vec<u8>> {
    let hex = |at: usize| -> Option<u16> {
        let digits = body.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    // The code unit of a `\uXXXX` escape starting at `at`, if there is one.
    let escape = |at: usize| -> Option<u16> {
        (body.get(at..at + 2)? == b"\\u")
            .then(|| hex(at + 2))
            .flatten()
    };
    let (mut out, mut copied, mut i, mut in_string) = (Vec::new(), 0, 0, false);
    while i < body.len() {
        match body[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let Some(unit) = escape(i) else {
                    i += 2; // any other escape: skip the escaped byte
                    continue;
                };
                let high = (0xd800..0xdc00).contains(&unit);
                let low = (0xdc00..0xe000).contains(&unit);
                let paired = high && escape(i + 6).is_some_and(|u| (0xdc00..0xe000).contains(&u));
                if paired {
                    i += 12;
                    continue;
                }
                if high || low {
                    out.extend_from_slice(&body[copied..i]);
                    out.extend_from_slice(b"\\ufffd");
                    copied = i + 6;
                }
                i += 6;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if copied == 0 {
        return None;
    }
    out.extend_from_slice(&body[copied..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body a model server's parser takes is read, never answered 400:
    /// lone surrogates (a JavaScript string cut inside an emoji) become
    /// U+FFFD, pairs and an escaped backslash before `u` stay as they are,
    /// and a repeated key keeps its last value, as `JSON.parse` does.
    #[test]
    fn a_body_a_servers_parser_takes_is_read() {
        let text = |body: &str| -> String {
            let v = read_body(body.as_bytes()).unwrap_or_else(|e| panic!("{body}: {e}"));
            v["messages"][0]["content"].as_str().unwrap().to_owned()
        };
        let body =
            |content: &str| format!(r#"{{"messages":[{{"role":"user","content":"{content}"}}]}}"#);
        assert_eq!(text(&body(r"cut \ud83d")), "cut \u{fffd}");
        assert_eq!(text(&body(r"\udc4d alone")), "\u{fffd} alone");
        assert_eq!(text(&body(r"\ud83d\ud83d\udc4d")), "\u{fffd}\u{1f44d}");
        assert_eq!(text(&body(r"pair \ud83d\udc4d")), "pair \u{1f44d}");
        assert_eq!(
            text(&body(r"not an escape \\ud83d")),
            r"not an escape \ud83d"
        );
        assert_eq!(
            text(&body(r#"quote \" then \ud83d"#)),
            "quote \" then \u{fffd}"
        );
        let repeated = r#"{"messages":[{"role":"user","content":"first","content":"last"}]}"#;
        assert_eq!(text(repeated), "last");
        // What no server reads is still refused, saying where.
        let bad = read_body(br#"{"messages":[}"#).unwrap_err();
        assert!(bad.contains("line 1"), "{bad}");
        assert!(lone_surrogates_replaced(body("plain \\u0041").as_bytes()).is_none());
    }

    #[test]
    fn paths_name_their_dialect_with_or_without_v1() {
        for (path, d) in [
            ("/v1/chat/completions", Some(Dialect::OpenaiChat)),
            ("/chat/completions", Some(Dialect::OpenaiChat)),
            ("/v1/responses", Some(Dialect::OpenaiResponses)),
            ("/v1/messages", Some(Dialect::Anthropic)),
            ("/v1/messages/", Some(Dialect::Anthropic)),
            ("/v1/messages?beta=true", Some(Dialect::Anthropic)),
            (
                "/v1/chat/completions?api-version=2024-10-21",
                Some(Dialect::OpenaiChat),
            ),
            (
                "/v1/responses/?a=/v1/messages",
                Some(Dialect::OpenaiResponses),
            ),
            ("/v1/models?x=/v1/messages", None),
            ("/v1/messages/count_tokens", None),
        ] {
            assert_eq!(Dialect::of_path(path), d, "{path}");
        }
    }

    #[test]
    fn tools_are_read_in_every_shape() {
        let v = json!([
            {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
            {"type": "function", "name": "bash", "parameters": {"properties": {"command": {}}}},
            {"name": "Read", "input_schema": {"properties": {"file_path": {}}}},
            {"type": "web_search_preview"}
        ]);
        let names: Vec<_> = read_tools(Some(&v)).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["read_file", "bash", "Read"]);
    }

    #[test]
    fn sse_writes_named_and_unnamed_events() {
        let r = Rendered::sse(vec![
            (Some("message_stop"), json!({"type": "message_stop"})),
            (None, Value::String("[DONE]".into())),
        ]);
        assert_eq!(
            String::from_utf8(r.body).unwrap(),
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\ndata: [DONE]\n\n"
        );
    }
}
