//! The model's side of one case: each request the endpoint receives is
//! read, recorded in the trace, and answered — refused as the gateway or
//! the provider would when it is over the ceiling or the window, else with
//! the script's next model turn, a summary, or a short answer to a side
//! request. Nothing here judges: the judges read the trace afterwards.
//!
//! Which turn comes next is the play's own count of turns answered, so a
//! request is answered the same way however the agent rebuilt its history
//! (after a summary, after a refusal). A request whose messages equal the
//! last loop request's (a retry) gets the same turn again.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use regex::Regex;
use serde_json::{json, Value};

use super::dialect::{responses, AnswerContext, Call, Dialect, Rendered, Request, Turn};
use super::gateway::Gateway;
use super::script::Script;
use super::settings::Settings;
use super::tools::{bind, ToolSpec};
use super::trace::{redact, Answer, Kind, Recorded, Trace};
use crate::estimate::{Adr0098, Estimator};
use crate::generate::{text, ContentClass, SplitMix64};
use crate::model::{engine, Message, Role, ToolCall};

/// What a whole run shares: the agent's settings and how to answer.
#[derive(Debug, Clone)]
pub struct Stage {
    pub settings: Settings,
    pub gateway: Gateway,
    /// Answer only this dialect (`--dialect`); others get `404`.
    pub dialect: Option<Dialect>,
    pub tools: Vec<ToolSpec>,
    pub summary: SummaryMatcher,
    /// The model `GET /v1/models` lists.
    pub model: String,
}

#[cfg(test)]
impl Stage {
    /// A stage of `settings` as tests build it: Express's 413, every
    /// dialect, no tools, the default summary wording, model `m`.
    pub(crate) fn bare(settings: Settings) -> Stage {
        Stage {
            settings,
            gateway: Gateway::Express,
            dialect: None,
            tools: Vec::new(),
            summary: SummaryMatcher::new(None).expect("the default pattern compiles"),
            model: "m".into(),
        }
    }
}

/// Tells a summary request (SPEC §9, `--summary-match`).
#[derive(Debug, Clone)]
pub struct SummaryMatcher {
    declared: Option<Regex>,
}

/// The wordings agents use to ask for a summary, case-insensitive.
pub const DEFAULT_SUMMARY_PATTERN: &str = r"(?i)\b(summari[sz]e|summari[sz]ing|summari[sz]ation|summary|compact|compaction|compress|condense|checkpoint|handoff|state_snapshot)\b";

impl SummaryMatcher {
    /// The default wordings, or `pattern` instead.
    pub fn new(pattern: Option<&str>) -> Result<SummaryMatcher, String> {
        let declared = pattern
            .map(|p| Regex::new(p).map_err(|e| format!("--summary-match {p:?}: {e}")))
            .transpose()?;
        Ok(SummaryMatcher { declared })
    }

    /// Whether `r` asks for a summary. A declared pattern is matched
    /// against the model's name, the system prompt and the last user
    /// message; the default against the last user message (never the
    /// task itself, nor a summary ctxgate `written` that a request
    /// offering tools carries, nor what comes before it there), and
    /// against the system prompt of a request that lets the model call no
    /// tool.
    pub fn is_summary(&self, r: &Request, task: &str, written: &[String]) -> bool {
        let system: String = r
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.text().into_owned())
            .collect::<Vec<_>>()
            .join("\n");
        let last_user = r
            .messages
            .iter()
            .rev()
            .find(|m| m.role != Role::System)
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.text().into_owned())
            .unwrap_or_default();
        if let Some(re) = &self.declared {
            return re.is_match(&r.model) || re.is_match(&system) || re.is_match(&last_user);
        }
        let default = default_pattern();
        // The wording must be outside the task: a task may say "summary",
        // and a summary prompt may embed the transcript, task and all. Both
        // read without quotes and backslashes: an agent may pass the task
        // on quoted and escaped (`opencode run` wraps it in quotes and
        // escapes those in it), and the task's own words are still the task's.
        let plain = |t: &str| -> String {
            t.chars()
                .filter(|c| !matches!(c, '"' | '\\' | '\'' | '`'))
                .collect()
        };
        // Nor is a reminder the agent injects (`<system-reminder>…`, as
        // Claude Code, opencode and Kilo Code wrap theirs) an ask: Kilo's
        // "The active agent has changed from compaction to code", sent with
        // its tools after every compaction, is the loop going on.
        let mut own = without_reminders(&last_user);
        let toolless = r.tools.is_empty() || !r.tools_allowed;
        // A loop request that carries a summary ctxgate wrote introduces
        // it in the agent's words (Codex's bridge: "…produced a summary of
        // its thinking process… Here is the summary produced by the other
        // language model…", then the summary): only what follows the
        // summary may ask for another.
        if !toolless {
            let after = (written.iter())
                .filter(|s| !s.is_empty())
                .filter_map(|s| own.rfind(s.as_str()).map(|at| at + s.len()))
                .max();
            if let Some(end) = after {
                own = own[end..].to_owned().into();
            }
        }
        let asks = default.is_match(&plain(&own).replacen(&plain(task), "", 1));
        asks || (toolless && default.is_match(&system))
    }
}

/// `text` without its `<system-reminder>…</system-reminder>` blocks (an
/// unclosed one runs to the end).
fn without_reminders(text: &str) -> std::borrow::Cow<'_, str> {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    if !text.contains(OPEN) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        rest = &rest[at + OPEN.len()..];
        rest = match rest.find(CLOSE) {
            Some(end) => &rest[end + CLOSE.len()..],
            None => "",
        };
    }
    out.push_str(rest);
    out.into()
}

fn default_pattern() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| Regex::new(DEFAULT_SUMMARY_PATTERN).expect("the default pattern compiles"))
}

/// A request's body as the endpoint received it.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    /// Every byte.
    Whole(Vec<u8>),
    /// Longer than ctxgate keeps: the length it declared.
    OverCap(u64),
    /// Longer than ctxgate keeps, its length not declared (chunked): more
    /// than this many bytes.
    PastCap(u64),
    /// The body could not be read (the connection ended before the length
    /// it declared, a chunk size that is not hex): why.
    Broken(String),
}

/// The most bytes a summary is allowed before its overshoot: 1,048,576
/// tokens at the usual 4 bytes a token.
pub const SUMMARY_MAX_BYTES: u64 = 4 << 20;

/// How an unreadable body past the receive cap whose length was not
/// declared is told.
pub const PAST_CAP: &str = "more than ";

/// The start of a body kept for a request that is not to the model.
const OTHER_BODY_KEPT: usize = 64 << 10;

/// The mark every summary ctxgate writes begins with: how the judges know
/// a summary in a later request.
pub const SUMMARY_MARK: &str = "[ctxgate summary";

/// The play of one case.
pub struct Play {
    stage: Arc<Stage>,
    script: Arc<Script>,
    workspace: PathBuf,
    started: Instant,
    requests: Vec<Recorded>,
    /// How many of them went to the model's endpoints.
    model_requests: usize,
    /// Request-body bytes received.
    received: u64,
    turn: usize,
    call: usize,
    summaries: usize,
    /// The text of each summary written, in order.
    written: Vec<String>,
    /// The last loop request's messages (hashed) and what it was answered.
    last_loop: Option<(u64, Answer, Turn)>,
    /// Responses' conversations by response id (`previous_response_id`).
    conversations: HashMap<String, Vec<Message>>,
    /// Responses' output items by id (`item_reference`).
    stored: responses::Stored,
    serial: u64,
}

impl Play {
    pub fn new(stage: Arc<Stage>, script: Arc<Script>, workspace: PathBuf) -> Play {
        Play {
            stage,
            script,
            workspace,
            started: Instant::now(),
            requests: Vec::new(),
            model_requests: 0,
            received: 0,
            turn: 0,
            call: 0,
            summaries: 0,
            written: Vec::new(),
            last_loop: None,
            conversations: HashMap::new(),
            stored: responses::Stored::default(),
            serial: 0,
        }
    }

    /// How many requests it has received.
    pub fn request_count(&self) -> usize {
        self.requests.len()
    }

    /// How many of them were model requests (a POST to a model endpoint,
    /// read or not): what `finishes` counts — not `GET /v1/models`, a
    /// token count or a 404.
    pub fn model_request_count(&self) -> usize {
        self.model_requests
    }

    /// The bytes of request bodies received (declared, for one past the
    /// receive cap).
    pub fn received_bytes(&self) -> u64 {
        self.received
    }

    /// The requests recorded so far.
    pub fn into_trace(self) -> Trace {
        Trace {
            requests: self.requests,
            exit: Default::default(),
        }
    }

    /// Answer one HTTP request.
    pub fn answer(
        &mut self,
        method: &str,
        path: &str,
        headers: Vec<(String, String)>,
        body: Received,
    ) -> Rendered {
        let (body, body_len, cut) = match body {
            Received::Whole(b) => {
                let n = b.len() as u64;
                (b, n, None)
            }
            Received::OverCap(declared) => (Vec::new(), declared, None),
            // Counted a byte past what was received: over any ceiling the
            // received part was not, and said as "more than" below.
            Received::PastCap(seen) => (Vec::new(), seen + 1, None),
            Received::Broken(why) => (Vec::new(), 0, Some(why)),
        };
        let mut rec = Recorded {
            index: self.requests.len(),
            at: self.started.elapsed(),
            method: method.to_owned(),
            path: path.to_owned(),
            headers: redact(headers),
            body,
            body_len,
            dialect: None,
            request: None,
            unreadable: None,
            kind: Kind::Other,
            tokens: 0,
            answer: Answer::Other,
            status: 200,
        };
        let rendered = match cut {
            Some(why) => {
                // A model request whose body did not all come is an
                // unreadable one, as a body that is not JSON is.
                if rec.method == "POST" && Dialect::of_path(&rec.path).is_some() {
                    rec.kind = Kind::Side;
                }
                rec.answer = Answer::BadRequest;
                let rendered = Rendered::json(json!({"error": {"message": format!("incomplete body: {why}"), "type": "invalid_request_error"}}))
                    .with_status(400);
                rec.unreadable = Some(why);
                rendered
            }
            None => self.respond(&mut rec),
        };
        rec.status = rendered.status;
        self.model_requests += usize::from(rec.is_model_request());
        self.received += rec.body_len;
        // Nothing judges the body of a request that is not to the model
        // (a 404, a model list, a token count): only its start is kept,
        // for a fixture to show, so that such bodies by the gigabyte do not
        // fill ctxgate's memory.
        if !rec.is_model_request() && rec.body.len() > OTHER_BODY_KEPT {
            rec.body.truncate(OTHER_BODY_KEPT);
            rec.body.shrink_to_fit();
        }
        self.requests.push(rec);
        rendered
    }

    /// A body past what ctxgate receives (none of it kept) is refused as
    /// the gateway refuses one over the ceiling, and recorded unreadable.
    fn past_what_is_received(&self, rec: &mut Recorded) -> Option<Rendered> {
        if !(rec.body.is_empty() && rec.body_len > 0) {
            return None;
        }
        rec.unreadable = Some(match rec.chunked_past_cap() {
            true => format!(
                "{PAST_CAP}{} bytes (chunked, its length not declared), past what ctxgate receives",
                rec.body_len - 1
            ),
            false => format!("{} bytes, past what ctxgate receives", rec.body_len),
        });
        rec.answer = Answer::TooLarge;
        let ceiling = self.stage.settings.config.transport_max_body_bytes;
        Some(self.stage.gateway.too_large(rec.body_len, ceiling))
    }

    fn respond(&mut self, rec: &mut Recorded) -> Rendered {
        let bare = rec
            .path
            .split('?')
            .next()
            .unwrap_or("")
            .trim_end_matches('/');
        let bare = bare.strip_prefix("/v1").unwrap_or(bare);
        match (rec.method.as_str(), bare) {
            ("GET", "/models") => return Rendered::json(self.models()),
            ("GET", p) if p.starts_with("/models/") => {
                return Rendered::json(self.models()["data"][0].clone())
            }
            ("POST", "/messages/count_tokens") => {
                // Counted as the API counts; a body it could not read is
                // refused as the API refuses it, never counted as 0.
                if let Some(refused) = self.past_what_is_received(rec) {
                    return refused;
                }
                return match Dialect::Anthropic.read(&rec.body) {
                    Ok(r) => Rendered::json(json!({"input_tokens": self.tokens(&r.messages)})),
                    Err(why) => {
                        rec.unreadable = Some(why.clone());
                        rec.answer = Answer::BadRequest;
                        Dialect::Anthropic.bad_request(&why)
                    }
                };
            }
            _ => {}
        }
        let dialect = match Dialect::of_path(&rec.path) {
            Some(d) if rec.method == "POST" && self.stage.dialect.is_none_or(|only| only == d) => d,
            _ => {
                return Rendered::json(json!({"error": {"message": format!(
                    "ctxgate plays the model at POST /v1/chat/completions, /v1/responses and /v1/messages{}; not {} {}",
                    self.stage.dialect.map(|d| format!(" (this run: {d} only)")).unwrap_or_default(),
                    rec.method, rec.path),
                    "type": "not_found", "code": "not_found"}}))
                .with_status(404)
            }
        };
        rec.dialect = Some(dialect);
        rec.kind = Kind::Side;
        let ceiling = self.stage.settings.config.transport_max_body_bytes;
        if let Some(refused) = self.past_what_is_received(rec) {
            return refused;
        }
        let mut request = match dialect.read_in(&rec.body, &self.stored) {
            Ok(r) => r,
            Err(why) => {
                // A compressed body is read as it came: say so.
                let encoding = (rec.headers.iter())
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-encoding"))
                    .map(|(_, v)| v.trim())
                    .filter(|v| !v.is_empty() && !v.eq_ignore_ascii_case("identity"));
                let why = match encoding {
                    Some(e) => format!(
                        "Content-Encoding {e:?}: ctxgate reads request bodies uncompressed ({why})"
                    ),
                    None => why,
                };
                rec.unreadable = Some(why.clone());
                rec.answer = Answer::BadRequest;
                if rec.body_len > ceiling {
                    rec.answer = Answer::TooLarge;
                    return self.stage.gateway.too_large(rec.body_len, ceiling);
                }
                return dialect.bad_request(&why);
            }
        };
        if let Some(prev) = &request.previous_response_id {
            match self.conversations.get(prev) {
                Some(earlier) => {
                    let head = crate::model::head_len(earlier);
                    let mut all = request.messages.clone();
                    let at = crate::model::head_len(&all);
                    all.splice(at..at, earlier[head..].iter().cloned());
                    request.messages = all;
                }
                None => {
                    rec.answer = Answer::BadRequest;
                    let why = format!("Previous response with id '{prev}' not found.");
                    rec.unreadable = Some(why.clone());
                    return dialect.bad_request(&why);
                }
            }
        }
        rec.tokens = self.tokens(&request.messages);
        rec.kind = if (self.stage.summary).is_summary(&request, &self.script.task, &self.written) {
            Kind::Summary
        } else if !request.tools.is_empty() && request.tools_allowed {
            Kind::Loop
        } else {
            Kind::Side
        };
        let config = &self.stage.settings.config;
        let refusal = if rec.body_len > ceiling {
            rec.answer = Answer::TooLarge;
            Some(self.stage.gateway.too_large(rec.body_len, ceiling))
        } else if rec.tokens > config.context_window {
            rec.answer = Answer::OverWindow;
            Some(dialect.context_length_error(rec.tokens, config.context_window))
        } else {
            None
        };
        if let Some(r) = refusal {
            rec.request = Some(request);
            return r;
        }
        let (answer, turn) = match rec.kind {
            Kind::Summary => self.summary(&request),
            Kind::Loop => self.loop_turn(&request),
            _ => (Answer::Side, text_turn("OK.")),
        };
        self.serial += 1;
        let ctx = AnswerContext {
            serial: self.serial,
            model: if request.model.is_empty() {
                self.stage.model.clone()
            } else {
                request.model.clone()
            },
            stream: request.stream,
            stream_usage: request.stream_usage,
            input_tokens: rec.tokens,
            output_tokens: self.turn_tokens(&turn),
            created: unix_now(),
        };
        if dialect == Dialect::OpenaiResponses {
            let mut conversation = request.messages.clone();
            conversation.push(turn_message(&turn));
            self.conversations
                .insert(responses::response_id(ctx.serial), conversation);
            self.stored.keep(&turn, &ctx);
        }
        rec.answer = answer;
        rec.request = Some(request);
        dialect.render(&turn, &ctx)
    }

    fn models(&self) -> Value {
        let m = &self.stage.model;
        json!({"object": "list", "data": [{"id": m, "object": "model", "created": 0,
            "owned_by": "ctxgate", "type": "model", "display_name": m,
            "created_at": "2026-01-01T00:00:00Z"}],
            "has_more": false, "first_id": m, "last_id": m})
    }

    fn tokens(&self, msgs: &[Message]) -> u64 {
        Adr0098.tokens(&mut msgs.iter(), &self.stage.settings.config)
    }

    fn turn_tokens(&self, turn: &Turn) -> u64 {
        self.tokens(&[turn_message(turn)])
    }

    fn summary(&mut self, r: &Request) -> (Answer, Turn) {
        let sizes = &self.script.summaries;
        let mut percent = if sizes.is_empty() {
            50
        } else {
            sizes[self.summaries % sizes.len()]
        };
        // A model overshoots the length a prompt asks for, never the API's
        // `max_tokens`: there an answer stops, marked cut (`length`), and a
        // summary so marked is rightly dropped by an agent. A request with
        // a cap gets at most 99% of it; one without, 4,096 tokens' worth or
        // more now and then.
        if r.max_tokens.is_some() {
            percent = percent.min(99);
        }
        // In bytes at most SUMMARY_MAX_BYTES, whatever `bytesPerToken`
        // multiplies the agent's `max_tokens` by.
        let allowed = (r.max_tokens.unwrap_or(4096).min(1 << 20))
            .saturating_mul(self.stage.settings.config.bytes_per_token)
            .min(SUMMARY_MAX_BYTES);
        self.summaries += 1;
        let head = format!("{SUMMARY_MARK} {}] ", self.summaries);
        // Never shorter than its mark, by which the judges know it: the
        // one summary over a cap is the mark alone, for a cap too small
        // to hold it (under 99% of 20-odd bytes' tokens).
        let bytes = (allowed.saturating_mul(percent as u64) / 100).max(head.len() as u64) as usize;
        let mut rng = SplitMix64::new(self.summaries as u64 ^ bytes as u64);
        let body = text::text(
            &mut rng,
            ContentClass::Prose,
            bytes.saturating_sub(head.len()),
        );
        let text = head + &body;
        self.written.push(text.clone());
        (Answer::Summary { bytes }, text_turn(&text))
    }

    fn loop_turn(&mut self, r: &Request) -> (Answer, Turn) {
        let key = messages_hash(&r.messages);
        if let Some((last, answer, turn)) = &self.last_loop {
            if *last == key {
                return (answer.clone(), turn.clone());
            }
        }
        let (answer, turn) = self.next_turn(r);
        self.last_loop = Some((key, answer.clone(), turn.clone()));
        (answer, turn)
    }

    fn next_turn(&mut self, r: &Request) -> (Answer, Turn) {
        let final_turn = || text_turn(&self.script.final_answer);
        let Some(turn) = self.script.turns.get(self.turn) else {
            return (Answer::Final, final_turn());
        };
        let binding = match bind(&self.stage.tools, &r.tools) {
            Ok(b) => b,
            Err(why) => return (Answer::Unbound(why), final_turn()),
        };
        let first = self.call;
        let count = if r.parallel_calls {
            turn.calls.len() - first
        } else {
            1
        };
        let calls = turn.calls[first..first + count]
            .iter()
            .map(|c| {
                let file = self.script.relative(&c.file);
                let path = self.workspace.join(&file);
                Call {
                    id: c.id.clone(),
                    name: binding.tool.clone(),
                    arguments: binding.arguments(&path.to_string_lossy(), &file),
                }
            })
            .collect();
        let text = if first == 0 {
            turn.text.clone()
        } else {
            String::new()
        };
        let answer = Answer::Turn {
            turn: self.turn,
            first_call: first,
            calls: count,
        };
        self.call += count;
        if self.call >= turn.calls.len() {
            self.turn += 1;
            self.call = 0;
        }
        (answer, Turn { text, calls })
    }
}

fn text_turn(text: &str) -> Turn {
    Turn {
        text: text.to_owned(),
        calls: Vec::new(),
    }
}

/// A model turn as the engine message an agent echoes back.
pub fn turn_message(turn: &Turn) -> Message {
    if turn.calls.is_empty() {
        return Message::assistant(turn.text.as_str());
    }
    let calls = turn
        .calls
        .iter()
        .map(|c| ToolCall::new(c.id.clone(), c.name.clone(), c.arguments.clone()))
        .collect();
    Message::assistant_calls(turn.text.as_str(), calls)
}

/// A hash of messages by their engine JSON: two requests carry the same
/// conversation when it is equal.
pub fn messages_hash(msgs: &[Message]) -> u64 {
    let mut h = DefaultHasher::new();
    for v in engine::write_messages(msgs) {
        v.to_string().hash(&mut h);
    }
    h.finish()
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(last_user: &str) -> Request {
        Request {
            dialect: Dialect::OpenaiChat,
            model: "m".into(),
            stream: false,
            stream_usage: false,
            messages: vec![
                Message::system("You are an agent."),
                Message::user(last_user),
            ],
            tools: vec![crate::agent::dialect::Tool {
                name: "read_file".into(),
                schema: json!({}),
            }],
            max_tokens: None,
            previous_response_id: None,
            tools_allowed: true,
            parallel_calls: true,
        }
    }

    /// A play of a script with no turns, under the default settings.
    fn bare_play() -> Play {
        let script: Script = serde_json::from_value(json!(
            {"task": "Task: nothing", "final": "done", "summaries": [150], "turns": []}
        ))
        .unwrap();
        let stage = Arc::new(Stage::bare(crate::agent::settings::Settings::default()));
        Play::new(stage, Arc::new(script), PathBuf::new())
    }

    /// A summary is as long as the request's `max_tokens` allows, in
    /// bytes by `bytesPerToken` — never past SUMMARY_MAX_BYTES: an agent
    /// asking a million tokens under a config of a billion bytes a token
    /// made ctxgate allocate 450 TB and abort.
    #[test]
    fn a_summary_is_bounded_whatever_max_tokens_and_bytes_per_token() {
        let mut settings = crate::agent::settings::Settings::default();
        settings.config.bytes_per_token = 1_000_000_000;
        settings.config.transport_max_body_bytes = 1 << 20;
        let stage = Stage::bare(settings);
        let script: Script = serde_json::from_value(json!(
            {"task": "Task: nothing", "final": "done", "summaries": [150], "turns": []}
        ))
        .unwrap();
        let mut play = Play::new(Arc::new(stage), Arc::new(script), PathBuf::new());
        for max in ["1000000", "18446744073709551615"] {
            let body = format!(
                r#"{{"model":"m","max_tokens":{max},"messages":[{{"role":"user","content":"Summarize the conversation."}}]}}"#
            );
            let r = play.answer(
                "POST",
                "/v1/chat/completions",
                Vec::new(),
                Received::Whole(body.into_bytes()),
            );
            assert_eq!(r.status, 200, "{max}");
            assert!(
                r.body.len() <= SUMMARY_MAX_BYTES as usize * 2,
                "{max}: {}",
                r.body.len()
            );
        }
    }

    /// A summary is never over the request's own `max_tokens` (at most
    /// 99% of it once the cap holds the mark), however small the cap; a
    /// cap under 1 is refused 400, as OpenAI and Anthropic refuse it
    /// (a floor of 64 bytes answered 16 tokens to `max_tokens` 1, 3 and
    /// 8, and a negative cap was read as none: 3,523 tokens, 200).
    #[test]
    fn a_summary_keeps_within_a_small_max_tokens_and_a_cap_under_one_is_refused() {
        let mut play = bare_play();
        let ask = |play: &mut Play, path: &str, body: Value| {
            play.answer(
                "POST",
                path,
                Vec::new(),
                Received::Whole(body.to_string().into_bytes()),
            )
        };
        let user = json!([{"role": "user", "content": "Summarize the conversation."}]);
        for max in [8u64, 12, 100, 1000] {
            let r = ask(
                &mut play,
                "/v1/chat/completions",
                json!({"model": "m", "max_tokens": max, "messages": user}),
            );
            assert_eq!(r.status, 200, "{max}");
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            let used = v["usage"]["completion_tokens"].as_u64().unwrap();
            let text = v["choices"][0]["message"]["content"].as_str().unwrap();
            assert!(text.starts_with(SUMMARY_MARK), "{text}");
            assert!(used <= max, "max_tokens {max}: {used} tokens");
        }
        for (path, body) in [
            (
                "/v1/chat/completions",
                json!({"model": "m", "max_tokens": -5, "messages": user}),
            ),
            (
                "/v1/chat/completions",
                json!({"model": "m", "max_completion_tokens": 0, "messages": user}),
            ),
            (
                "/v1/messages",
                json!({"model": "m", "max_tokens": 0, "messages": user}),
            ),
            (
                "/v1/responses",
                json!({"model": "m", "max_output_tokens": 0, "input": "Summarize the conversation."}),
            ),
        ] {
            let r = ask(&mut play, path, body.clone());
            assert_eq!(r.status, 400, "{body}");
            assert!(
                String::from_utf8_lossy(&r.body).contains("below the minimum of 1"),
                "{}",
                String::from_utf8_lossy(&r.body)
            );
        }
    }

    /// `count_tokens` counts a body it reads and refuses one it cannot,
    /// as the API does: an unreadable body was answered 200 with
    /// `input_tokens: 0`, which an agent takes as an empty context.
    #[test]
    fn count_tokens_refuses_what_it_cannot_read() {
        let mut play = bare_play();
        let path = "/v1/messages/count_tokens";
        let good =
            json!({"model": "m", "messages": [{"role": "user", "content": "Count me, please."}]});
        let r = play.answer(
            "POST",
            path,
            Vec::new(),
            Received::Whole(good.to_string().into_bytes()),
        );
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(r.status, 200);
        assert!(v["input_tokens"].as_u64().unwrap() > 0, "{v}");
        for bad in [&b"{not json"[..], b"{\"model\": \"m\"}", b""] {
            let r = play.answer("POST", path, Vec::new(), Received::Whole(bad.to_vec()));
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(r.status, 400, "{v}");
            assert_eq!(v["error"]["type"], "invalid_request_error", "{v}");
        }
        assert!(play.requests[1..].iter().all(|r| r.unreadable.is_some()));
    }

    #[test]
    fn the_default_matcher_reads_the_wording_outside_the_task() {
        let task = "Task: write a summary of the parser";
        let m = SummaryMatcher::new(None).unwrap();
        assert!(
            !m.is_summary(&request(task), task, &[]),
            "the task says summary"
        );
        assert!(!m.is_summary(
            &request(&format!("{task}\n<reminder>be brief</reminder>")),
            task,
            &[]
        ));
        // pydantic-ai-harness: the transcript (task and all) then the ask.
        let ask =
            format!("Conversation:\nuser: {task}\nassistant: …\nWrite a summarization of it.");
        assert!(m.is_summary(&request(&ask), task, &[]));
        assert!(m.is_summary(&request("Please summarize the above."), task, &[]));
        // The task passed on quoted and escaped (opencode's `run`): still the task.
        let quoted_task = "Task: write a \"summary\" of the \"parser\"";
        let quoted = format!("\"{}\"", quoted_task.replace('"', "\\\""));
        assert!(
            !m.is_summary(&request(&quoted), quoted_task, &[]),
            "{quoted}"
        );
        assert!(m.is_summary(
            &request(&format!("{quoted}\nNow compact the conversation.")),
            quoted_task,
            &[]
        ));
        // An injected reminder that names compaction is not an ask (Kilo
        // Code's first request after compacting, tools and all) — but an
        // ask beside a reminder still is.
        let reminder = "<system-reminder>\nThe active agent has changed from compaction to code.\n</system-reminder>";
        assert!(!m.is_summary(&request(&format!("{task}\n{reminder}")), task, &[]));
        assert!(!m.is_summary(&request(reminder), task, &[]));
        assert!(
            !m.is_summary(&request("<system-reminder>compact soon"), task, &[]),
            "an unclosed reminder runs to the end"
        );
        assert!(m.is_summary(
            &request(&format!("{reminder}\nSummarize the conversation so far.")),
            task,
            &[]
        ));
        // A loop request (tools offered) carrying a summary ctxgate wrote,
        // introduced in the agent's words (Codex's bridge), asks nothing;
        // words after the summary still may, and a request offering no
        // tool is judged on all of it.
        let summary = format!("{SUMMARY_MARK} 2] the parser reads the config");
        let written = [summary.clone()];
        let bridge = format!(
            "Another language model started to solve this problem and produced a summary \
             of its thinking process. Here is the summary produced by the other language \
             model:\n{summary}"
        );
        assert!(!m.is_summary(&request(&bridge), task, &written));
        assert!(
            m.is_summary(&request(&bridge), task, &[]),
            "unknown: as before"
        );
        let update = format!("{bridge}\nUpdate the summary with the turns since.");
        assert!(m.is_summary(&request(&update), task, &written));
        let mut toolless = request(&bridge);
        toolless.tools.clear();
        assert!(m.is_summary(&toolless, task, &written));
        let declared = SummaryMatcher::new(Some("(?i)recap")).unwrap();
        assert!(declared.is_summary(&request("Recap, please"), task, &[]));
        assert!(!declared.is_summary(&request("Please summarize."), task, &[]));
    }
}
