//! A context trimmer: the example compactor of ctxgate's Rust library
//! (see README.md). It drops the oldest whole iterations until the history
//! fits under the ADR 0098 trigger and the transport ceiling, and writes no
//! summary. It depends on nothing: the messages are the caller's own type,
//! seen through [`Message`], and the body size is the caller's own
//! serialisation, passed as a function — the ADR's lesson: measure the real
//! body, never assume it.

/// A message's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// What the trimmer needs to know of a message.
pub trait Message {
    fn role(&self) -> Role;
    /// The text content (empty when null or absent).
    fn content(&self) -> &str;
    /// The ids of an assistant message's tool calls.
    fn call_ids(&self) -> Vec<&str>;
    /// The JSON text of an assistant message's tool calls, as the request
    /// body carries it (`None` without calls).
    fn tool_calls_json(&self) -> Option<String>;
    /// The call a tool message answers.
    fn tool_call_id(&self) -> Option<&str>;
    /// Never dropped.
    fn pinned(&self) -> bool;
}

/// The limits a request must respect.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Tokens the model accepts.
    pub context_window: u64,
    /// The trigger, as a fraction of the effective window.
    pub threshold: f64,
    /// The transport's body ceiling in bytes (Express: 102,400 by default).
    pub max_body_bytes: u64,
    /// The estimator's bytes per token.
    pub bytes_per_token: u64,
}

impl Limits {
    /// `round(threshold × min(contextWindow, maxBodyBytes / bytesPerToken))`.
    pub fn trigger(&self) -> u64 {
        let window = self
            .context_window
            .min(self.max_body_bytes / self.bytes_per_token.max(1));
        (self.threshold * window as f64).round() as u64
    }
}

/// Why a history was not trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrimError {
    /// A tool result that answers no call of its iteration, a call
    /// answered twice, or one left unanswered before the last iteration.
    InvalidInput(String),
    /// The head, the pinned iterations and the last one are over the
    /// ceiling on their own.
    CannotFit { needed: u64, ceiling: u64 },
}

impl std::fmt::Display for TrimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrimError::InvalidInput(why) => write!(f, "invalid input: {why}"),
            TrimError::CannotFit { needed, ceiling } => write!(
                f,
                "the last iteration needs a {needed}-byte body; the ceiling is {ceiling}"
            ),
        }
    }
}

impl std::error::Error for TrimError {}

fn tokens(bytes: usize, bytes_per_token: u64) -> u64 {
    (bytes as u64).div_ceil(bytes_per_token.max(1))
}

/// Tokens per message and in total: content, plus the JSON of the tool
/// calls (what the pre-ADR estimator forgot).
pub fn estimate<M: Message>(msgs: &[M], bytes_per_token: u64) -> (Vec<u64>, u64) {
    let per: Vec<u64> = msgs
        .iter()
        .map(|m| {
            let calls = m
                .tool_calls_json()
                .map_or(0, |j| tokens(j.len(), bytes_per_token));
            tokens(m.content().len(), bytes_per_token) + calls
        })
        .collect();
    let total = per.iter().sum();
    (per, total)
}

/// The iterations of `msgs` as index ranges: an assistant message with
/// calls and the tool results right after it that answer them; every
/// other message alone.
fn iterations<M: Message>(msgs: &[M]) -> Result<Vec<std::ops::Range<usize>>, TrimError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < msgs.len() {
        let start = i;
        let ids = msgs[i].call_ids();
        i += 1;
        if msgs[start].role() == Role::Tool {
            return Err(TrimError::InvalidInput(format!(
                "message {start}: a tool result that answers no call of its iteration"
            )));
        }
        let mut answered: Vec<&str> = Vec::new();
        while i < msgs.len() && msgs[i].role() == Role::Tool {
            let id = msgs[i].tool_call_id().unwrap_or_default();
            if !ids.contains(&id) {
                break; // starts an iteration of its own: refused above
            }
            if answered.contains(&id) {
                return Err(TrimError::InvalidInput(format!(
                    "message {i}: call {id:?} is answered twice"
                )));
            }
            answered.push(id);
            i += 1;
        }
        if i < msgs.len() && answered.len() < ids.len() {
            return Err(TrimError::InvalidInput(format!(
                "message {start}: a call is left unanswered before the last iteration"
            )));
        }
        out.push(start..i);
    }
    Ok(out)
}

/// The history to send: `msgs` itself when it is under the trigger and
/// the ceiling; else the head (the leading system messages), the pinned
/// iterations and as many of the last iterations as fit under both — at
/// least the last one, which must fit under the ceiling.
pub fn trim<M: Message + Clone>(
    msgs: &[M],
    limits: &Limits,
    body_bytes: impl Fn(&[M]) -> u64,
) -> Result<Vec<M>, TrimError> {
    let head = msgs.iter().take_while(|m| m.role() == Role::System).count();
    let spans = iterations(&msgs[head..])?;
    let trigger = limits.trigger();
    let fits = |h: &[M]| estimate(h, limits.bytes_per_token).1 <= trigger;
    let body = body_bytes(msgs);
    if body <= limits.max_body_bytes && fits(msgs) {
        return Ok(msgs.to_vec());
    }
    let pinned = |r: &std::ops::Range<usize>| msgs[head..][r.clone()].iter().any(M::pinned);
    // Keep the last `keep` iterations and every earlier pinned one.
    let keeping = |keep: usize| -> Vec<M> {
        let cut = spans.len() - keep;
        let mut out = msgs[..head].to_vec();
        for (n, r) in spans.iter().enumerate() {
            if n >= cut || pinned(r) {
                out.extend_from_slice(&msgs[head..][r.clone()]);
            }
        }
        out
    };
    for keep in (1..=spans.len()).rev() {
        let candidate = keeping(keep);
        let size = body_bytes(&candidate);
        if size <= limits.max_body_bytes && (fits(&candidate) || keep == 1) {
            return Ok(candidate);
        }
        if keep == 1 {
            return Err(TrimError::CannotFit {
                needed: size,
                ceiling: limits.max_body_bytes,
            });
        }
    }
    // No iterations after the head: nothing can go.
    if body <= limits.max_body_bytes {
        Ok(msgs.to_vec())
    } else {
        Err(TrimError::CannotFit {
            needed: body,
            ceiling: limits.max_body_bytes,
        })
    }
}
