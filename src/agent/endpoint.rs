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
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let body = match axum::body::to_bytes(body, shared.receive_cap).await {
        Ok(bytes) => Received::Whole(bytes.to_vec()),
        Err(_) => match declared {
            // Past the cap: only its declared length is kept.
            Some(n) if n > shared.receive_cap as u64 => Received::OverCap(n),
            None => Received::OverCap(shared.receive_cap as u64 + 1),
            // The connection ended before the declared length.
            Some(n) => Received::CutShort(n),
        },
    };
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
    into_response(rendered)
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
