//! The real transport: ADR 0098's other end. ctxgate checks a compactor
//! against `transportMaxBodyBytes`; this module asks the real HTTP stack
//! what that number is, and whether the bodies a ToolLoop sends really get
//! through.
//!
//! - [`Target`]: an endpoint's URL under the loopback rule — any host but
//!   127.0.0.0/8, ::1 or `localhost` (which is 127.0.0.1 and ::1, never
//!   looked up) is refused before anything is sent, unless the caller
//!   allows remote hosts; a loopback target is connected to at exactly the
//!   addresses checked. URLs are shown with their secrets masked.
//! - [`Wire`]: sends one request body and says what came back, as an
//!   [`Answer`]; [`HttpWire`] is the real one (ureq, a per-request
//!   timeout, no redirects, no proxy).
//! - [`probe`]: the largest body an endpoint accepts, to the byte, by a
//!   galloping then binary search over exact-size bodies shaped like a
//!   real request ([`shaped_body`]).
//! - [`Wired`]: a subject whose every ToolLoop body (`session-never-overflows`'s
//!   simulated session) is also sent to a live endpoint; the harness hands
//!   each body to it through [`Transport`], and the oracle judges the
//!   server's answer with ctxgate's own exact size ([`Delivery`]).
//!
//! What counts as what: a 2xx, 3xx (never followed) or 4xx other than 413
//! is an *accepted* body — the server read it and answered about something
//! else; 413, any 5xx, or a connection reset or closed before an answer is
//! a *refused* one; no connection at all, or no answer within the timeout,
//! is *no answer*, which judges nothing and stops the sending (a refused
//! body is never sent again in a loop).

mod http;
mod probe;
pub mod shown;
mod target;
mod wired;

pub use http::{HttpOptions, HttpWire};
pub use probe::{
    probe, shaped_body, smallest_shaped_body, Limit, Probe, ProbeOptions, ProbeReport,
    ProbeSummary, KNOWN_LIMITS, MAX_PROBE_BYTES,
};
pub use target::{
    is_loopback, redact_header, redact_url, Secrets, Target, TargetError, TargetErrorKind,
};
pub use wired::{Disagreement, Live, TransportLog, TransportSummary, Wired};

use std::fmt;

use crate::config::Config;
use crate::model::one_line;
use crate::model::Message;

/// What an endpoint did with one request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// An HTTP answer: its status and the start of its body, whitespace
    /// collapsed (`excerpt`).
    Status { code: u16, excerpt: String },
    /// The connection was reset or closed before a whole answer came back:
    /// the server would not take the body.
    Closed { error: String },
    /// No answer at all: no connection, or nothing within the per-request
    /// timeout. Says nothing about the body.
    NoAnswer { error: String },
}

/// An [`Answer`], as far as the body is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reception {
    Accepted,
    Refused,
    /// No answer: the body was neither accepted nor refused.
    Unknown,
}

/// A status that means the server took the body: 2xx, 3xx and every 4xx
/// but 413 (the server read the body and answered about something else).
pub fn accepts(code: u16) -> bool {
    (200..500).contains(&code) && code != 413
}

impl Answer {
    pub fn reception(&self) -> Reception {
        match self {
            Answer::Status { code, .. } if accepts(*code) => Reception::Accepted,
            Answer::Status { .. } | Answer::Closed { .. } => Reception::Refused,
            Answer::NoAnswer { .. } => Reception::Unknown,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            Answer::Status { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// A short name for tallies: `413`, `reset`, `no answer`.
    pub fn label(&self) -> String {
        match self {
            Answer::Status { code, .. } => code.to_string(),
            Answer::Closed { .. } => "reset".to_owned(),
            Answer::NoAnswer { .. } => "no answer".to_owned(),
        }
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Status { code, excerpt } => {
                let reason = ureq::http::StatusCode::from_u16(*code)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("");
                write!(f, "{code} {reason}")?;
                if !excerpt.is_empty() {
                    write!(f, " (body: {excerpt})")?;
                }
                Ok(())
            }
            Answer::Closed { error } => {
                write!(
                    f,
                    "connection closed without an answer ({})",
                    one_line(error)
                )
            }
            Answer::NoAnswer { error } => write!(f, "no answer ({})", one_line(error)),
        }
    }
}

/// One body sent to a live endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The bytes sent: ctxgate's exact size of the same body, if it is right.
    pub sent: u64,
    pub answer: Answer,
}

/// Sends request bodies somewhere and says what came back.
pub trait Wire: Send + Sync {
    /// Send one body, once.
    fn post(&self, body: &[u8]) -> Answer;

    /// Where to, for messages.
    fn describe(&self) -> String;
}

/// What the harness calls for each body a simulated ToolLoop sends.
pub trait Transport {
    /// Send the request body of `msgs` under `config` (SPEC §2: the
    /// envelope with `messages`, in `wireFormat`), which ctxgate measured
    /// at `measured` bytes. `None`: nothing was sent (the transport stopped
    /// after an endpoint gave no answer).
    fn deliver(&mut self, config: &Config, msgs: &[Message], measured: u64) -> Option<Delivery>;

    /// Hold the sending (`true`) or take it up again: a suite's fixtures,
    /// which keep their own ceilings, are never sent to the run's endpoint.
    fn hold(&mut self, held: bool);
}

/// Whitespace collapsed, at most `max` bytes (on a character boundary),
/// `…` when cut; terminal control characters escaped (`\u{1b}`), for a
/// server's answer is printed on a terminal.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    let mut out = String::new();
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() > max {
            break;
        }
    }
    if out.len() > max {
        let cut = crate::model::truncate_utf8(&out, max).len();
        out.truncate(cut);
        out.push('…');
    }
    one_line(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receptions_follow_the_status_rule() {
        let status = |code| Answer::Status {
            code,
            excerpt: String::new(),
        };
        for code in [200, 201, 204, 301, 400, 401, 404, 422, 499] {
            assert_eq!(status(code).reception(), Reception::Accepted, "{code}");
        }
        for code in [413, 500, 502, 503] {
            assert_eq!(status(code).reception(), Reception::Refused, "{code}");
        }
        let closed = Answer::Closed {
            error: "reset".into(),
        };
        assert_eq!(closed.reception(), Reception::Refused);
        let none = Answer::NoAnswer {
            error: "timed out".into(),
        };
        assert_eq!(none.reception(), Reception::Unknown);
        assert_eq!(
            Answer::Status {
                code: 413,
                excerpt: "Payload Too Large".into()
            }
            .to_string(),
            "413 Payload Too Large (body: Payload Too Large)"
        );
    }

    #[test]
    fn excerpts_collapse_whitespace_and_cut_on_a_boundary() {
        assert_eq!(
            excerpt("<pre>\n  Payload   Too Large</pre>\n", 100),
            "<pre> Payload Too Large</pre>"
        );
        let cut = excerpt(&"é".repeat(100), 11);
        assert_eq!(cut, format!("{}…", "é".repeat(5)));
    }

    #[test]
    fn a_servers_control_characters_never_reach_a_terminal_raw() {
        let hostile = "413 \u{1b}[2J\u{1b}]0;pwned\u{7}\u{9b}31m\u{202e}gnp.exe";
        let shown = excerpt(hostile, 240);
        assert!(
            !shown.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{shown:?}"
        );
        assert!(shown.contains("\\u{1b}[2J"), "{shown}");
        for answer in [
            Answer::Closed {
                error: hostile.into(),
            },
            Answer::NoAnswer {
                error: hostile.into(),
            },
        ] {
            let text = answer.to_string();
            assert!(!text.chars().any(|c| c.is_control()), "{text:?}");
        }
    }
}
