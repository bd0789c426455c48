//! What `ctxgate estimate` shows of a history: its figures as one JSON
//! object, or a table (index, role, tokens, a preview) with a footer — the
//! total, the trigger, the effective window, the body against the ceiling,
//! and whether the reference would compact (SPEC §4 step 1).

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{Adr0098, Estimator};
use crate::body::body_bytes;
use crate::config::Config;
use crate::contract::Pressure;
use crate::model::text::{collapse, group};
use crate::model::{Message, Role};

/// Width of the preview column, in characters.
const PREVIEW_CHARS: usize = 64;

/// `{"estimator", "tokens", "perMessage", "bodyBytes", "trigger",
/// "effectiveWindow"}`: the estimate, the exact body, the trigger.
pub fn figures(estimator: &dyn Estimator, config: &Config, msgs: &[Message]) -> Value {
    let (per_message, tokens) = estimator.per_message(msgs, config);
    json!({
        "estimator": estimator.name(),
        "tokens": tokens,
        "perMessage": per_message,
        "bodyBytes": body_bytes(config, msgs),
        "trigger": config.trigger(),
        "effectiveWindow": config.effective_window(),
    })
}

/// The table and its footer.
pub fn table(estimator: &dyn Estimator, config: &Config, msgs: &[Message]) -> String {
    let (per_message, tokens) = estimator.per_message(msgs, config);
    let mut out = String::new();
    let index_w = msgs.len().saturating_sub(1).to_string().len().max(1);
    let tokens_w = group(tokens).len().max("tokens".len());
    let _ = writeln!(
        out,
        "{:>index_w$}  {:<9}  {:>tokens_w$}  preview",
        "#", "role", "tokens"
    );
    for (i, (m, t)) in msgs.iter().zip(&per_message).enumerate() {
        let role = if m.is_pinned() {
            format!("{}*", m.role)
        } else {
            m.role.to_string()
        };
        let _ = writeln!(
            out,
            "{i:>index_w$}  {role:<9}  {:>tokens_w$}  {}",
            group(*t),
            preview(m)
        );
    }
    if msgs.iter().any(Message::is_pinned) {
        out.push_str("(* pinned)\n");
    }
    footer(&mut out, estimator.name(), config, msgs, tokens);
    out
}

fn footer(out: &mut String, estimator: &str, c: &Config, msgs: &[Message], tokens: u64) {
    let ceiling = c.transport_max_body_bytes;
    let body = body_bytes(c, msgs);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "total             {} tokens ({estimator}), {} messages",
        group(tokens),
        msgs.len()
    );
    let _ = writeln!(
        out,
        "trigger           {} tokens = round({} × effective window)",
        group(c.trigger()),
        c.threshold
    );
    let _ = writeln!(
        out,
        "effective window  {} tokens = min(contextWindow {}, {} bytes / {} bytes per token)",
        group(c.effective_window()),
        group(c.context_window),
        group(ceiling),
        c.bytes_per_token
    );
    let verdict = if body > ceiling {
        format!("OVER by {}", group(body - ceiling))
    } else {
        format!("{} to spare", group(ceiling - body))
    };
    let _ = writeln!(
        out,
        "body              {} bytes ({}) vs ceiling {}: {verdict}",
        group(body),
        c.wire_format,
        group(ceiling)
    );
    // SPEC §4 step 1, with the reference's own estimator.
    let reference_tokens = Adr0098.tokens(&mut msgs.iter(), c);
    let pressure = Pressure::of(c, reference_tokens, body);
    let mut why = Vec::new();
    if pressure.over_trigger {
        why.push("the estimate is over the trigger");
    }
    if pressure.over_ceiling {
        why.push("the body is over the ceiling");
    }
    let answer = if why.is_empty() {
        "no: the estimate is within the trigger and the body within the ceiling".to_owned()
    } else {
        format!("yes: {}", why.join(" and "))
    };
    let note = if estimator == Adr0098.name() {
        String::new()
    } else {
        format!(
            " (the reference estimates with {}: {} tokens)",
            Adr0098.name(),
            group(reference_tokens)
        )
    };
    let _ = writeln!(out, "would compact     {answer}{note}");
}

/// A one-line preview: the text, the calls made (`→`) or the call answered (`←`).
fn preview(m: &Message) -> String {
    let mut text = String::new();
    if m.role == Role::Tool {
        let _ = write!(text, "← {}: ", m.tool_call_id.as_deref().unwrap_or(""));
    }
    text.push_str(&m.content.text());
    for call in m.calls() {
        if !text.is_empty() {
            text.push(' ');
        }
        let _ = write!(text, "→ {}({})", call.name, call.arguments);
    }
    collapse(&text, PREVIEW_CHARS)
}
