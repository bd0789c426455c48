//! [`HttpWire`]: request bodies over real HTTP/1.1, with ureq.
//!
//! ureq (a small, well-kept blocking client) rather than a hand-written
//! client: it writes the whole body, then hands back the server's answer
//! with any status as a response (`http_status_as_error(false)`), and
//! tells a timeout ([`ureq::Error::Timeout`]) from a refused connection or
//! a reset (`Error::Io` with its `ErrorKind`) — all that the rule in
//! [`super`] needs. Express and nginx read (or drain) a too-large body
//! before they answer 413, so the status arrives; a server that resets
//! instead is reported as a refusal without a status, as the rule says.
//!
//! Settings that keep the loopback rule true: the addresses the rule
//! checked are the only ones connected to (a resolver that answers them and
//! never looks a name up: [`Pinned`]), no proxy (ureq reads `HTTP_PROXY` by
//! default), no redirects followed (a 3xx is an answer), and one timeout
//! for the whole request, connection included.
//!
//! Framing is ctxgate's: `--header` may not set `Content-Length`,
//! `Transfer-Encoding`, `Host`, `Connection` or the other hop-by-hop
//! headers — a false length would make ctxgate's own framing error read as
//! the server's refusal.

use std::io::Read;
use std::net::SocketAddr;
use std::time::Duration;

use ureq::http::{HeaderName, HeaderValue, Method, Request, Uri};
// The resolver and connector traits are ureq's `unversioned` API: the
// dependency is pinned to 3.5.x in Cargo.toml for them.
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};
use ureq::Agent;

use super::target::{redact_header, Secrets};
use super::{excerpt, Answer, Target, TargetError, TargetErrorKind, Wire};

/// Headers that frame or route the request: ctxgate sets them, a
/// `--header` may not (exit 2).
const FRAMING_HEADERS: [&str; 10] = [
    "content-length",
    "transfer-encoding",
    "host",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "proxy-connection",
];

/// How much of an answer's body is read and kept, in bytes.
const ANSWER_BYTES: u64 = 64 * 1024;
/// How much of it a report shows.
const EXCERPT_BYTES: usize = 240;

/// How to send.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// POST (the default), PUT or PATCH.
    pub method: String,
    /// Extra headers (`Authorization`, …), sent with every body.
    pub headers: Vec<(String, String)>,
    /// For one request, from connecting to the end of the answer.
    pub timeout: Duration,
    /// Reuse connections (`check --transport`: thousands of bodies); a
    /// reset on a reused connection is confirmed once on a new one. Off
    /// (`probe-ceiling`): a new connection for each body, so that no
    /// answer is ever a leftover of the one before.
    pub keep_alive: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            method: "POST".to_owned(),
            headers: Vec::new(),
            timeout: Duration::from_secs(10),
            keep_alive: false,
        }
    }
}

/// A live endpoint that request bodies are sent to.
pub struct HttpWire {
    target: Target,
    method: Method,
    headers: Vec<(HeaderName, HeaderValue)>,
    agent: Agent,
    /// A new connection for each request: for confirming a reset.
    fresh: Option<Agent>,
    timeout: Duration,
    /// The header values and URL credentials, masked in every answer.
    secrets: Secrets,
}

impl HttpWire {
    /// Check the method and headers and build the client. Nothing is sent.
    pub fn new(target: Target, options: &HttpOptions) -> Result<HttpWire, TargetError> {
        let bad = |kind, problem: String| TargetError {
            kind,
            url: target.shown.clone(),
            problem,
        };
        let method = match options.method.to_ascii_uppercase().as_str() {
            "POST" => Method::POST,
            "PUT" => Method::PUT,
            "PATCH" => Method::PATCH,
            other => {
                return Err(bad(
                    TargetErrorKind::BadUrl,
                    format!("--method {other}: request bodies are sent with POST, PUT or PATCH"),
                ))
            }
        };
        let mut headers = Vec::new();
        let mut secrets = target.secrets();
        for (k, v) in &options.headers {
            secrets.add(v);
            let header = |problem: &str| {
                bad(
                    TargetErrorKind::BadHeader,
                    format!("--header '{}': {problem}", redact_header(k)),
                )
            };
            let name = HeaderName::from_bytes(k.trim().as_bytes())
                .map_err(|_| header("not a header name"))?;
            if FRAMING_HEADERS.contains(&name.as_str()) {
                return Err(header(
                    "ctxgate frames each request itself (Content-Length, Transfer-Encoding, Host, Connection and the other hop-by-hop headers are its own); leave this header out",
                ));
            }
            let value = HeaderValue::from_str(v.trim())
                .map_err(|_| header("the value is not a header value"))?;
            headers.push((name, value));
        }
        if !headers
            .iter()
            .any(|(k, _)| k == ureq::http::header::CONTENT_TYPE)
        {
            headers.push((
                ureq::http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ));
        }
        let agent = |pool: bool| -> Agent {
            let config = Agent::config_builder()
                .timeout_global(Some(options.timeout))
                .http_status_as_error(false)
                .max_redirects(0)
                .proxy(None)
                .max_idle_connections(if pool { 4 } else { 0 })
                .max_idle_connections_per_host(if pool { 4 } else { 0 })
                .user_agent(concat!("ctxgate/", env!("CARGO_PKG_VERSION")))
                .build();
            match target.pinned() {
                Some(addrs) => {
                    Agent::with_parts(config, DefaultConnector::default(), Pinned(addrs.to_vec()))
                }
                None => config.into(),
            }
        };
        Ok(HttpWire {
            method,
            headers,
            agent: agent(options.keep_alive),
            fresh: options.keep_alive.then(|| agent(false)),
            timeout: options.timeout,
            target,
            secrets,
        })
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    fn post_with(&self, agent: &Agent, body: &[u8]) -> Answer {
        let mut request = Request::builder()
            .method(self.method.clone())
            .uri(self.target.uri.clone());
        for (k, v) in &self.headers {
            request = request.header(k, v);
        }
        let request = match request.body(body) {
            Ok(r) => r,
            Err(e) => {
                return Answer::NoAnswer {
                    error: format!("the request could not be built: {e}"),
                }
            }
        };
        match agent.run(request) {
            Ok(mut response) => {
                let code = response.status().as_u16();
                let html = response
                    .headers()
                    .get(ureq::http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/html"));
                let mut text = Vec::new();
                // What the server said about the body, when it said it in
                // its answer; a body cut short still leaves the status.
                let _ = response
                    .body_mut()
                    .as_reader()
                    .take(ANSWER_BYTES)
                    .read_to_end(&mut text);
                let text = String::from_utf8_lossy(&text);
                let text = if html {
                    without_tags(&text)
                } else {
                    text.into_owned()
                };
                Answer::Status {
                    code,
                    excerpt: excerpt(&self.secrets.mask(&text), EXCERPT_BYTES),
                }
            }
            Err(e) => match classify(e, self.timeout) {
                Answer::Closed { error } => Answer::Closed {
                    error: self.secrets.mask(&error),
                },
                Answer::NoAnswer { error } => Answer::NoAnswer {
                    error: self.secrets.mask(&error),
                },
                status => status,
            },
        }
    }
}

impl Wire for HttpWire {
    fn post(&self, body: &[u8]) -> Answer {
        let answer = self.post_with(&self.agent, body);
        match (&answer, &self.fresh) {
            // A kept-alive connection the server had just closed looks
            // like a reset: confirmed once, on a new connection; that
            // answer stands. Never more than once.
            (Answer::Closed { .. }, Some(fresh)) => self.post_with(fresh, body),
            _ => answer,
        }
    }

    fn describe(&self) -> String {
        format!("{} {}", self.method, self.target.shown)
    }
}

/// The resolver of a loopback target: it answers the addresses the
/// loopback rule checked, whatever the URI's host, and looks nothing up.
#[derive(Debug)]
struct Pinned(Vec<SocketAddr>);

impl Resolver for Pinned {
    fn resolve(
        &self,
        _uri: &Uri,
        _config: &ureq::config::Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let mut out = self.empty();
        for a in &self.0 {
            if out.try_push(*a).is_err() {
                break;
            }
        }
        if out.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(out)
    }
}

/// The text of an HTML error page (`<pre>Payload Too Large</pre>` →
/// `Payload Too Large`): tags and the head's title dropped, for a report.
fn without_tags(html: &str) -> String {
    let body = match html.to_ascii_lowercase().find("</head>") {
        Some(i) => &html[i + "</head>".len()..],
        None => html,
    };
    let mut out = String::with_capacity(body.len());
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// An error from ureq, as the rule in [`super`] reads it.
fn classify(e: ureq::Error, timeout: Duration) -> Answer {
    use std::io::ErrorKind::*;
    match e {
        ureq::Error::Timeout(_) => Answer::NoAnswer {
            error: format!("nothing within the {} s timeout", timeout.as_secs_f64()),
        },
        ureq::Error::Io(io) => match io.kind() {
            ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => Answer::Closed {
                error: io.to_string(),
            },
            TimedOut | WouldBlock => Answer::NoAnswer {
                error: format!(
                    "nothing within the {} s timeout ({io})",
                    timeout.as_secs_f64()
                ),
            },
            _ => Answer::NoAnswer {
                error: io.to_string(),
            },
        },
        // The connection ended in the middle of an answer, or what came
        // back was not HTTP: the body did not get through.
        ureq::Error::Protocol(p) => Answer::Closed {
            error: format!("no valid HTTP answer: {p}"),
        },
        other => Answer::NoAnswer {
            error: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_pages_read_as_their_text() {
        let express = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Error</title>\n</head>\n<body>\n<pre>Payload Too Large</pre>\n</body>\n</html>\n";
        assert_eq!(excerpt(&without_tags(express), 240), "Payload Too Large");
        let nginx = "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n";
        assert_eq!(
            excerpt(&without_tags(nginx), 240),
            "413 Request Entity Too Large nginx/1.22.1"
        );
    }
}
