//! The trimmer as a ctxgate subject: its `Message` trait for ctxgate's
//! messages, its limits from ctxgate's config, and the body measured
//! exactly as ctxgate measures it (in the config's wire format). Shared by
//! the property (tests/conformance.rs) and the fuzz target.

use ctxgate::config::Config;
use ctxgate::model::{engine, Message as CtxMessage, Role as CtxRole};
use ctxgate::subject::{CompactAnswer, EstimateAnswer};
use ctxgate::testing::Compactor;
use rust_trimmer::{estimate, trim, Limits, Message, Role, TrimError};

/// ctxgate's message type in the trimmer's terms. (A newtype: ctxgate's
/// type and ctxgate's trait are not this crate's.)
#[derive(Clone)]
pub struct M(pub CtxMessage);

impl Message for M {
    fn role(&self) -> Role {
        match self.0.role {
            CtxRole::System => Role::System,
            CtxRole::User => Role::User,
            CtxRole::Assistant => Role::Assistant,
            CtxRole::Tool => Role::Tool,
        }
    }
    fn content(&self) -> &str {
        // Text only: the subject says so (`text_only`), and ctxgate sends
        // it no content parts.
        match &self.0.content {
            ctxgate::model::Content::Text(s) => s,
            _ => "",
        }
    }
    fn call_ids(&self) -> Vec<&str> {
        match (&self.0.role, &self.0.tool_calls) {
            (CtxRole::Assistant, Some(calls)) => calls.iter().map(|c| c.id.as_str()).collect(),
            _ => Vec::new(),
        }
    }
    fn tool_calls_json(&self) -> Option<String> {
        match &self.0.tool_calls {
            Some(calls) if !calls.is_empty() && self.0.role == CtxRole::Assistant => {
                Some(engine::tool_calls_to_value(calls).to_string())
            }
            _ => None,
        }
    }
    fn tool_call_id(&self) -> Option<&str> {
        self.0.tool_call_id.as_deref()
    }
    fn pinned(&self) -> bool {
        self.0.pinned == Some(true)
    }
}

fn limits(config: &Config) -> Limits {
    Limits {
        context_window: config.context_window,
        threshold: config.threshold,
        max_body_bytes: config.transport_max_body_bytes,
        bytes_per_token: config.bytes_per_token,
    }
}

fn wrap(msgs: &[CtxMessage]) -> Vec<M> {
    msgs.iter().cloned().map(M).collect()
}

/// The trimmer's `compact`.
pub fn compact(config: &Config, msgs: &[CtxMessage]) -> CompactAnswer {
    let body = |h: &[M]| ctxgate::body::body_bytes(config, h.iter().map(|m| &m.0));
    match trim(&wrap(msgs), &limits(config), body) {
        Ok(out) => CompactAnswer::Messages(out.into_iter().map(|m| m.0).collect()),
        Err(e @ TrimError::CannotFit { .. }) => CompactAnswer::CannotFit {
            message: e.to_string(),
        },
        Err(e @ TrimError::InvalidInput(_)) => CompactAnswer::InvalidInput {
            message: e.to_string(),
        },
    }
}

/// The trimmer as a subject: compact and estimate, every invariant
/// claimed; text content only (it has no images to count).
pub fn subject() -> ctxgate::subject::InProcess {
    Compactor::new("rust-trimmer", env!("CARGO_PKG_VERSION"), compact)
        .text_only()
        .with_estimate(|config, msgs| {
            let (per, total) = estimate(&wrap(msgs), config.bytes_per_token);
            EstimateAnswer {
                tokens: total,
                per_message: Some(per),
            }
        })
        .into_subject()
}
