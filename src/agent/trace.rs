//! What a case recorded: every request the agent sent, as its exact bytes
//! and as read, with what the endpoint answered; and how the agent's
//! process ended. The judges are functions of a trace (STYLE: the
//! endpoint only answers and records).

use std::time::Duration;

use super::dialect::{Dialect, Request};

/// A whole case: the requests, then the process's end.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub requests: Vec<Recorded>,
    pub exit: Exit,
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Its place among the case's requests, from 0.
    pub index: usize,
    /// Since the agent was started.
    pub at: Duration,
    pub method: String,
    pub path: String,
    /// Its headers, credentials redacted ([`redact`]).
    pub headers: Vec<(String, String)>,
    /// The body's exact bytes (none kept past the receive cap: then
    /// [`Recorded::body_len`] is what the request declared).
    pub body: Vec<u8>,
    pub body_len: u64,
    pub dialect: Option<Dialect>,
    /// The request as read, a Responses request's earlier conversation
    /// (`previous_response_id`) put back in front.
    pub request: Option<Request>,
    /// Why the request could not be read, when it could not.
    pub unreadable: Option<String>,
    pub kind: Kind,
    /// ctxgate's estimate of the request's messages, in tokens (SPEC §3).
    pub tokens: u64,
    pub answer: Answer,
    pub status: u16,
}

impl Recorded {
    /// A request to the model (not `GET /v1/models`, not a token count).
    pub fn is_model_request(&self) -> bool {
        matches!(self.kind, Kind::Loop | Kind::Summary | Kind::Side)
    }

    /// The endpoint refused it (413, or over the window).
    pub fn refused(&self) -> bool {
        matches!(self.answer, Answer::TooLarge | Answer::OverWindow)
    }

    /// A body past the receive cap whose length was not declared
    /// (chunked, which a Content-Length beside it does not declare: RFC
    /// 9112 §6.3): `body_len` is a byte more than was received.
    pub fn chunked_past_cap(&self) -> bool {
        self.body.is_empty()
            && self.body_len > 0
            && self.headers.iter().any(|(k, v)| {
                k.eq_ignore_ascii_case("transfer-encoding")
                    && v.to_ascii_lowercase().contains("chunked")
            })
    }

    /// The messages of a readable request.
    pub fn messages(&self) -> &[crate::model::Message] {
        self.request.as_ref().map_or(&[], |r| &r.messages)
    }
}

/// What a request is, by what it asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A turn of the agent's tool loop: it advertises tools.
    Loop,
    /// A request for a summary (the summary matcher, SPEC §9).
    Summary,
    /// Any other model request (a title, a classification).
    Side,
    /// Not a model request: `GET /v1/models`, a token count, an unknown path.
    Other,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Loop => "loop",
            Kind::Summary => "summary",
            Kind::Side => "side",
            Kind::Other => "other",
        }
    }
}

/// What the endpoint answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Model turn `turn` of the script, its calls from `first_call` on (all
    /// of them unless the request forbade parallel calls).
    Turn {
        turn: usize,
        first_call: usize,
        calls: usize,
    },
    /// The final answer.
    Final,
    /// A summary of this many bytes.
    Summary { bytes: usize },
    /// A short answer to a side request.
    Side,
    /// `413` as the gateway answers it.
    TooLarge,
    /// The provider's context-length error.
    OverWindow,
    /// `400`: the request could not be read, or named a response the
    /// endpoint never gave.
    BadRequest,
    /// The request advertises tools, none of which reads a file.
    Unbound(String),
    /// `GET /v1/models`, a token count, an unknown path.
    Other,
}

/// How the agent's process ended.
#[derive(Debug, Clone, Default)]
pub struct Exit {
    /// Its exit code; `None` when a signal ended it or it never started.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// Killed at the case's deadline.
    pub timed_out: bool,
    /// Stopped by ctxgate at one of its request caps (a runaway loop, a
    /// flood): after how many requests, and the cap.
    pub capped: Option<String>,
    /// It could not be started: why.
    pub spawn_error: Option<String>,
    /// The last bytes it wrote.
    pub stdout_tail: String,
    pub stderr_tail: String,
    pub elapsed: Duration,
}

impl Exit {
    pub fn succeeded(&self) -> bool {
        self.code == Some(0) && !self.stopped()
    }

    /// ctxgate ended it: at the deadline or at a request cap.
    pub fn stopped(&self) -> bool {
        self.timed_out || self.capped.is_some()
    }

    /// One line: "exit 0", "exit 3", "killed by signal 9", "timed out".
    pub fn shown(&self) -> String {
        if let Some(e) = &self.spawn_error {
            return format!("could not start: {}", crate::model::one_line(e));
        }
        if self.timed_out {
            return format!("timed out after {:.1} s", self.elapsed.as_secs_f64());
        }
        if let Some(cap) = &self.capped {
            return cap.clone();
        }
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "ended".into(),
        }
    }
}

/// Header names whose values are credentials, lower-cased parts of names.
const SECRET_HEADER_WORDS: [&str; 6] =
    ["authorization", "key", "token", "secret", "cookie", "auth"];

/// Headers as a fixture keeps them: every credential replaced by
/// `[redacted]`.
pub fn redact(headers: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
    headers
        .into_iter()
        .map(|(k, v)| {
            let lower = k.to_ascii_lowercase();
            if SECRET_HEADER_WORDS.iter().any(|w| lower.contains(w)) {
                (k, "[redacted]".into())
            } else {
                (k, v)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_redacted_and_the_rest_kept() {
        let h = redact([
            ("Authorization".to_string(), "Bearer sk-real".to_string()),
            ("x-api-key".into(), "sk-ant".into()),
            ("content-type".into(), "application/json".into()),
            ("Cookie".into(), "s=1".into()),
        ]);
        assert_eq!(h[0].1, "[redacted]");
        assert_eq!(h[1].1, "[redacted]");
        assert_eq!(h[2].1, "application/json");
        assert_eq!(h[3].1, "[redacted]");
    }
}
