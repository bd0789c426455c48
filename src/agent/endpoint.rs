//! The loopback model endpoint of one case: an axum server on
//! `127.0.0.1`, an ephemeral port, whose one handler reads the request's
//! exact bytes and hands them to the case's [`Play`], which records and
//! answers. The server lives on the run's tokio runtime and stops with the
//! case.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Router;

use super::dialect::Rendered;
use super::play::{Play, Received};

/// The state every request of a case shares.
#[derive(Clone)]
struct Shared {
    play: Arc<Mutex<Play>>,
    /// The most body bytes kept; a longer body is refused as over the
    /// ceiling without being held.
    receive_cap: usize,
}

/// A running endpoint; stopped when dropped.
pub struct Endpoint {
    pub addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    runtime: tokio::runtime::Handle,
}

impl Endpoint {
    /// Start serving `play` on a loopback port of its own.
    pub fn start(
        runtime: &tokio::runtime::Handle,
        play: Arc<Mutex<Play>>,
        receive_cap: u64,
    ) -> std::io::Result<Endpoint> {
        let std_listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let shared = Shared {
            play,
            receive_cap: usize::try_from(receive_cap).unwrap_or(usize::MAX),
        };
        let router = Router::new().fallback(handle).with_state(shared);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(std_listener)?
        };
        let server = runtime.spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(Endpoint {
            addr,
            shutdown: Some(tx),
            server: Some(server),
            runtime: runtime.clone(),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            // Connections the agent left open end with it; a server that
            // still waits on one after a second is stopped outright.
            self.runtime.block_on(async {
                let abort = server.abort_handle();
                if tokio::time::timeout(Duration::from_secs(1), server)
                    .await
                    .is_err()
                {
                    abort.abort();
                }
            });
        }
    }
}

async fn handle(State(shared): State<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    // The length the request declares — none when it is chunked: HTTP/1.1
    // reads a body by its Transfer-Encoding then, whatever Content-Length
    // says (RFC 9112 §6.3), and so does hyper.
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .filter(|_| {
            !parts
                .headers
                .contains_key(axum::http::header::TRANSFER_ENCODING)
        })
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let body = match declared {
        // Declared past the cap: refused on its word, nothing read.
        Some(n) if n > shared.receive_cap as u64 => Received::OverCap(n),
        _ => receive(body, shared.receive_cap, declared).await,
    };
    // The rest of a body not read leaves the connection unusable: the
    // answer says it is closed, as nginx's does.
    let unread = matches!(body, Received::OverCap(_));
    let headers = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let method = parts.method.as_str().to_owned();
    let play = shared.play.clone();
    // Reading a request of megabytes is work: off the runtime's workers.
    let rendered = tokio::task::spawn_blocking(move || {
        play.lock()
            .unwrap_or_else(|e| e.into_inner())
            .answer(&method, &path, headers, body)
    })
    .await
    .unwrap_or_else(|_| {
        Rendered::json(serde_json::json!({"error": "ctxgate failed"})).with_status(500)
    });
    let mut response = into_response(rendered);
    if unread {
        response.headers_mut().insert(
            axum::http::header::CONNECTION,
            HeaderValue::from_static("close"),
        );
    }
    response
}

/// The body of a request, read up to `cap` bytes. A body that cannot be
/// read — the connection ended before its declared length, a chunk size
/// that is not hex, a malformed trailer — is [`Received::Broken`] with
/// the reason: it is not over the ceiling, however many bytes it claimed.
async fn receive(mut body: Body, cap: usize, declared: Option<u64>) -> Received {
    use axum::body::HttpBody;
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => return Received::Whole(bytes),
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue; // trailers: not the body
                };
                if bytes.len().saturating_add(data.len()) > cap {
                    return match declared {
                        Some(n) => Received::OverCap(n),
                        None => Received::PastCap(cap as u64),
                    };
                }
                bytes.extend_from_slice(&data);
            }
            Some(Err(e)) => {
                let mut why = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    let cause_text = cause.to_string();
                    if !why.contains(&cause_text) {
                        why = format!("{why}: {cause_text}");
                    }
                    source = cause.source();
                }
                let read = bytes.len();
                return Received::Broken(match declared {
                    Some(n) => format!(
                        "the body could not be read after {read} of its declared {n} bytes ({why})"
                    ),
                    None => {
                        format!("the chunked body could not be read after {read} bytes ({why})")
                    }
                });
            }
        }
    }
}

fn into_response(r: Rendered) -> Response {
    let mut response = Response::new(Body::from(r.body));
    *response.status_mut() = StatusCode::from_u16(r.status).unwrap_or(StatusCode::OK);
    for (k, v) in r.headers {
        if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
            response.headers_mut().insert(k, v);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::play::Stage;
    use crate::agent::script::Script;
    use crate::agent::settings::Settings;
    use crate::agent::trace::Answer;
    use std::io::{Read, Write};

    const GOOD: &[u8] = br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;

    /// An endpoint on a script of no turns, a 100 KB ceiling and a
    /// receive cap of `cap` bytes.
    fn endpoint(cap: u64) -> (tokio::runtime::Runtime, Endpoint, Arc<Mutex<Play>>) {
        let runtime = crate::agent::run::runtime().unwrap();
        let mut settings = Settings::default();
        settings.config.transport_max_body_bytes = 100_000;
        let stage = Stage::bare(settings);
        let script: Script = serde_json::from_value(serde_json::json!(
            {"task": "Task: nothing", "final": "done", "summaries": [50], "turns": []}
        ))
        .unwrap();
        let play = Arc::new(Mutex::new(Play::new(
            Arc::new(stage),
            Arc::new(script),
            std::env::temp_dir(),
        )));
        let endpoint = Endpoint::start(runtime.handle(), play.clone(), cap).unwrap();
        (runtime, endpoint, play)
    }

    /// Send `bytes` on a connection of its own (closing its sending side
    /// when `close`), and read the status and body of the answer.
    fn exchange(addr: SocketAddr, bytes: &[u8], close: bool) -> (u16, String) {
        let (status, _, body) = exchange_head(addr, bytes, close);
        (status, body)
    }

    /// [`exchange`], with the answer's head (status line and headers).
    fn exchange_head(addr: SocketAddr, bytes: &[u8], close: bool) -> (u16, String, String) {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(bytes).unwrap();
        if close {
            s.shutdown(std::net::Shutdown::Write).unwrap();
        }
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let out = String::from_utf8_lossy(&out).into_owned();
        let status = out
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
        (status, head.to_ascii_lowercase(), body.to_owned())
    }

    /// The play's trace once the endpoint is stopped. A connection's task
    /// may drop its hold on the play a moment after the server says it
    /// has shut down (axum drops the close signal first): wait for it.
    fn trace_of(ep: Endpoint, mut play: Arc<Mutex<Play>>) -> crate::agent::trace::Trace {
        drop(ep);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match Arc::try_unwrap(play) {
                Ok(play) => return play.into_inner().unwrap().into_trace(),
                Err(shared) if std::time::Instant::now() < until => {
                    play = shared;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(_) => panic!("the endpoint still holds the play 10 s after it stopped"),
            }
        }
    }

    fn post(path: &str, headers: &str, body: &[u8]) -> Vec<u8> {
        let mut r =
            format!("POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n")
                .into_bytes();
        r.extend_from_slice(body);
        r
    }

    fn chunked(body: &[u8]) -> Vec<u8> {
        let mut b = format!("{:x}\r\n", body.len()).into_bytes();
        b.extend_from_slice(body);
        b.extend_from_slice(b"\r\n0\r\n\r\n");
        b
    }

    /// A body that cannot be read — a chunk size that is not hex, a chunk
    /// or a declared length the connection ends inside, a bad trailer — is
    /// a `400` naming what is wrong, recorded as unreadable with no bytes:
    /// never a `413`, never a body over the ceiling the agent did not send.
    #[test]
    fn a_body_that_cannot_be_read_is_a_bad_request_not_over_the_ceiling() {
        let (_rt, ep, play) = endpoint(64 << 20);
        let te = "Transfer-Encoding: chunked\r\n";
        let mut bad_trailer = chunked(GOOD);
        bad_trailer.truncate(bad_trailer.len() - 2);
        bad_trailer.extend_from_slice(b"X-T: \x1b[31m\r\n\r\n");
        let cases: [(&str, Vec<u8>, bool, &str); 4] = [
            (
                "no hex",
                post("/v1/chat/completions", te, b"zz\r\nhello\r\n0\r\n\r\n"),
                false,
                "chunk size",
            ),
            (
                "chunk cut",
                post("/v1/chat/completions", te, b"1000\r\nabc"),
                true,
                "chunked body",
            ),
            (
                "length cut",
                post("/v1/chat/completions", "Content-Length: 5000\r\n", GOOD),
                true,
                "declared 5000 bytes",
            ),
            (
                "bad trailer",
                post("/v1/chat/completions", te, &bad_trailer),
                false,
                "chunked body",
            ),
        ];
        for (what, bytes, close, says) in cases {
            let (status, body) = exchange(ep.addr, &bytes, close);
            assert_eq!(status, 400, "{what}: {body}");
            assert!(body.contains(says), "{what}: {body}");
            // The next request is answered.
            let (status, body) = exchange(
                ep.addr,
                &post(
                    "/v1/chat/completions",
                    &format!("Content-Length: {}\r\n", GOOD.len()),
                    GOOD,
                ),
                false,
            );
            assert_eq!(status, 200, "after {what}: {body}");
        }
        let trace = trace_of(ep, play);
        assert_eq!(trace.requests.len(), 8);
        for r in trace.requests.iter().step_by(2) {
            assert_eq!((r.status, r.body_len), (400, 0), "{:?}", r.unreadable);
            assert_eq!(r.answer, Answer::BadRequest);
            assert!(r
                .unreadable
                .as_ref()
                .is_some_and(|w| w.contains("could not be read")));
        }
    }

    /// A length declared past the receive cap is refused on its word,
    /// before a byte of the body is read: a client announcing 2 GB gets
    /// its `413` at once, and ctxgate holds none of it.
    #[test]
    fn a_length_past_the_cap_is_refused_unread() {
        let (_rt, ep, play) = endpoint(1 << 20);
        let started = std::time::Instant::now();
        // Kept alive (no `Connection: close` asked): the answer closes it.
        let (status, head, _) = exchange_head(
            ep.addr,
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2147483648\r\n\r\n{\"mess",
            false,
        );
        assert_eq!(status, 413);
        assert!(head.contains("connection: close"), "{head}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let trace = trace_of(ep, play);
        assert_eq!(trace.requests[0].body_len, 2_147_483_648);
        assert_eq!(trace.requests[0].answer, Answer::TooLarge);
    }

    /// A chunked body past the receive cap is refused, and told as more
    /// than what was read: its length was never declared.
    #[test]
    fn a_chunked_body_past_the_cap_is_more_than_what_was_read() {
        let (_rt, ep, play) = endpoint(1 << 20);
        let big = vec![b'x'; (1 << 20) + 10];
        let te = "Transfer-Encoding: chunked\r\n";
        // Refused with the rest unread: the answer may be lost to the
        // connection's reset, the record is not.
        let _ = exchange(
            ep.addr,
            &post("/v1/chat/completions", te, &chunked(&big)),
            true,
        );
        let trace = trace_of(ep, play);
        let r = &trace.requests[0];
        assert!(r.chunked_past_cap());
        assert_eq!((r.body_len, &r.answer), ((1 << 20) + 1, &Answer::TooLarge));
        let why = r.unreadable.as_deref().unwrap();
        assert!(why.starts_with("more than 1048576 bytes (chunked"), "{why}");
    }

    /// What else a client may send that a model API takes: a chunked body
    /// with a Content-Length beside it (read by its chunks, RFC 9112
    /// §6.3), a query after the path (Azure's `api-version`, the Anthropic
    /// SDK's `beta=true`); and a compressed body, refused with a `400`
    /// that names its Content-Encoding.
    #[test]
    fn chunks_over_a_stated_length_and_queries_are_read_and_a_compressed_body_is_named() {
        let (_rt, ep, play) = endpoint(64 << 20);
        let te = "Transfer-Encoding: chunked\r\nContent-Length: 999999999999\r\n";
        let (status, body) = exchange(
            ep.addr,
            &post("/v1/chat/completions", te, &chunked(GOOD)),
            false,
        );
        assert_eq!(status, 200, "{body}");
        let length = format!("Content-Length: {}\r\n", GOOD.len());
        for path in [
            "/v1/chat/completions?api-version=2024-10-21",
            "/chat/completions/?x=1",
        ] {
            let (status, body) = exchange(ep.addr, &post(path, &length, GOOD), false);
            assert_eq!(status, 200, "{path}: {body}");
        }
        let anthropic =
            br#"{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}"#;
        let (status, body) = exchange(
            ep.addr,
            &post(
                "/v1/messages?beta=true",
                &format!("Content-Length: {}\r\n", anthropic.len()),
                anthropic,
            ),
            false,
        );
        assert_eq!(status, 200, "{body}");
        // gzip's magic bytes and a little more: not JSON.
        let gz = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03";
        let (status, body) = exchange(
            ep.addr,
            &post(
                "/v1/chat/completions",
                &format!("Content-Encoding: gzip\r\nContent-Length: {}\r\n", gz.len()),
                gz,
            ),
            false,
        );
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("Content-Encoding"), "{body}");
        let trace = trace_of(ep, play);
        assert!(trace.requests[..4]
            .iter()
            .all(|r| r.dialect.is_some() && r.request.is_some()));
    }
}
