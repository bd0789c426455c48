//! The real transport, end to end (`probe-ceiling`, `check --transport`),
//! against small HTTP servers this test starts on 127.0.0.1 — one with a
//! body limit that answers 413, one that closes the connection instead,
//! one that never answers. Nothing leaves the machine: the loopback rule's
//! test points ctxgate at 0.0.0.0, which on Linux would land on the test's
//! own listener, and asserts that no connection came.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

#[derive(Clone, Copy)]
enum Mode {
    /// Reads the body, answers 200, or 413 above the limit.
    Limit(u64),
    /// Closes the connection without an answer above the limit.
    CloseAbove(u64),
    /// Accepts, and never answers.
    Silent,
}

struct Server {
    port: u16,
    connections: Arc<AtomicUsize>,
    /// The Content-Length of each request.
    bodies: Arc<Mutex<Vec<u64>>>,
}

impl Server {
    fn start(mode: Mode) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let (c, b) = (connections.clone(), bodies.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                c.fetch_add(1, Ordering::SeqCst);
                let b = b.clone();
                std::thread::spawn(move || handle(stream, mode, &b));
            }
        });
        Server {
            port,
            connections,
            bodies,
        }
    }

    fn url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/internal/sessions/s1/llm-turn",
            self.port
        )
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn bodies(&self) -> Vec<u64> {
        self.bodies.lock().unwrap().clone()
    }
}

fn handle(mut stream: TcpStream, mode: Mode, bodies: &Mutex<Vec<u64>>) {
    if let Mode::Silent = mode {
        std::thread::sleep(Duration::from_secs(120));
        return;
    }
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let length: u64 = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    bodies.lock().unwrap().push(length);
    let (status, text) = match mode {
        Mode::CloseAbove(limit) if length > limit => return,
        Mode::Limit(limit) | Mode::CloseAbove(limit) => {
            let mut body = vec![0u8; length as usize];
            if stream.read_exact(&mut body).is_err() {
                return;
            }
            if length > limit {
                ("413 Payload Too Large", "request entity too large")
            } else {
                assert!(
                    serde_json::from_slice::<Value>(&body).is_ok(),
                    "a body that is not JSON"
                );
                ("200 OK", "{\"ok\":true}")
            }
        }
        Mode::Silent => unreachable!(),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Run the binary; a run that has not ended after two minutes is killed
/// and fails the test (a hang, not a speed target).
fn ctxgate(args: &[&str]) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ctxgate {args:?} hung: killed after 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Out {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ctxgate-transport-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn express_config() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/express-100kb.config.json"
    )
    .to_owned()
}

#[test]
fn probe_ceiling_measures_a_limit_to_the_byte() {
    let server = Server::start(Mode::Limit(12_345));
    let out = ctxgate(&["probe-ceiling", &server.url(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["limit"], 12_345);
    assert_eq!(v["smallestRefused"], 12_346);
    let requests = v["requests"].as_u64().unwrap();
    assert!(requests <= 30, "{requests} requests");
    let bodies = server.bodies();
    assert_eq!(
        bodies.len() as u64,
        requests,
        "one connection, one body, per request"
    );
    let mut unique = bodies.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        bodies.len(),
        "a size was sent twice: {bodies:?}"
    );
    assert!(bodies.contains(&12_345) && bodies.contains(&12_346));
    assert_eq!(
        v["answers"]["200"].as_u64().unwrap() + v["answers"]["413"].as_u64().unwrap(),
        requests
    );

    let human = ctxgate(&["probe-ceiling", &server.url()]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(
        human.stdout.contains(
            "limit: 12,345 bytes — the largest body accepted; 12,346 bytes refused (413)"
        ),
        "{}",
        human.stdout
    );
}

#[test]
fn probe_ceiling_finds_express_default_in_few_requests_and_checks_the_config() {
    let server = Server::start(Mode::Limit(102_400));
    let out = ctxgate(&[
        "probe-ceiling",
        &server.url(),
        "--json",
        "--config",
        &express_config(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["limit"], 102_400);
    assert!(v["requests"].as_u64().unwrap() <= 8, "{}", v["requests"]);
    assert_eq!(v["config"]["aboveLimit"], false);

    // A config above the limit: the warning, and exit 1.
    let dir = scratch("above");
    let config = dir.join("engine-default.json");
    std::fs::write(&config, r#"{"transportMaxBodyBytes": 8388608}"#).unwrap();
    let out = ctxgate(&[
        "probe-ceiling",
        &server.url(),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout.contains("transportMaxBodyBytes is 8,388,608, above this endpoint's limit of 102,400 bytes: your compactor will send bodies this server refuses"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_connection_closed_without_an_answer_counts_as_refused() {
    let server = Server::start(Mode::CloseAbove(102_400));
    let out = ctxgate(&["probe-ceiling", &server.url(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["limit"], 102_400, "{}", out.stdout);
    assert!(
        v["answers"]["reset"].as_u64().unwrap() >= 1,
        "{}",
        v["answers"]
    );
    assert!(v["answers"].get("413").is_none());
}

#[test]
fn hosts_other_than_loopback_are_refused_before_any_connection() {
    let server = Server::start(Mode::Limit(102_400));
    // 0.0.0.0 is not loopback by the rule, but a connection to it would
    // reach this listener: none may come.
    let elsewhere = format!("http://0.0.0.0:{}/", server.port);
    let out = ctxgate(&["probe-ceiling", &elsewhere]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is not loopback"), "{}", out.stderr);
    assert!(out.stderr.contains("--allow-remote"), "{}", out.stderr);
    let out = ctxgate(&[
        "check",
        "--cases",
        "5",
        "--transport",
        &elsewhere,
        "--transport-max-body-bytes",
        "102400",
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is not loopback"), "{}", out.stderr);
    for url in [
        "http://example.invalid/",
        "http://10.255.255.1:8080/",
        "http://[::2]/",
    ] {
        let out = ctxgate(&["probe-ceiling", url, "--timeout", "1"]);
        assert_eq!(out.code, 2, "{url}: {}", out.stderr);
        assert!(out.stderr.contains("nothing was sent"), "{}", out.stderr);
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(server.connections(), 0, "a refused URL was connected to");

    // The control: with --allow-remote the same URL is connected to, so
    // the listener above would have seen a leak.
    let out = ctxgate(&[
        "probe-ceiling",
        &elsewhere,
        "--allow-remote",
        "--max",
        "4000",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(server.connections() > 0);
}

#[test]
fn an_endpoint_that_never_answers_does_not_hang_the_run() {
    let server = Server::start(Mode::Silent);
    let out = ctxgate(&["probe-ceiling", &server.url(), "--timeout", "0.5"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("no answer to a 1,024-byte body"),
        "{}",
        out.stderr
    );
    assert_eq!(
        server.connections(),
        1,
        "a body with no answer is not sent again"
    );

    let dir = scratch("silent");
    let before = server.connections();
    let out = ctxgate(&[
        "check",
        "--cases",
        "40",
        "--seed",
        "5",
        "--jobs",
        "2",
        "--transport",
        &server.url(),
        "--transport-max-body-bytes",
        "102400",
        "--transport-timeout",
        "0.5",
        "--save",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("no answer to a"), "{}", out.stderr);
    assert!(out.stdout.contains("transport: STOPPED"), "{}", out.stdout);
    // Each worker waits out at most one timeout (a pooled connection may
    // have its reset confirmed once): the sending stops at once.
    assert!(
        server.connections() - before <= 4,
        "{} connections",
        server.connections() - before
    );
}

#[test]
fn check_transport_with_the_reference_under_the_real_limit_has_no_refusal() {
    let server = Server::start(Mode::Limit(102_400));
    let dir = scratch("reference");
    let out = ctxgate(&[
        "check",
        "--cases",
        "60",
        "--seed",
        "3",
        "--transport",
        &server.url(),
        "--config",
        &express_config(),
        "--save",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let bodies = server.bodies();
    assert!(!bodies.is_empty());
    assert!(bodies.iter().all(|&b| b <= 102_400), "{bodies:?}");
    let line = format!("{} accepted, 0 refused", bodies.len());
    assert!(out.stdout.contains(&line), "{line}:\n{}", out.stdout);
    assert!(
        out.stdout.contains("agreed on every body answered"),
        "{}",
        out.stdout
    );
}

#[test]
fn check_transport_against_a_compactor_that_ignores_the_ceiling_gets_413s() {
    let server = Server::start(Mode::Limit(102_400));
    let dir = scratch("defect");
    let out = ctxgate(&[
        "check",
        "--defect",
        "window-ignores-ceiling",
        "--cases",
        "60",
        "--seed",
        "1",
        "--invariants",
        "session-never-overflows",
        "--transport",
        &server.url(),
        "--transport-max-body-bytes",
        "102400",
        "--save",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("over the ceiling; the live endpoint refused it too: 413 Payload Too Large (body: request entity too large)"),
        "{}",
        out.stdout
    );
    assert!(server.bodies().iter().any(|&b| b > 102_400));
    // Shrunk and saved like any other failure, the server's answer with it.
    let saved: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let fixture: Value = serde_json::from_slice(&std::fs::read(saved[0].path()).unwrap()).unwrap();
    assert_eq!(fixture["invariants"][0], "session-never-overflows");
    assert!(
        fixture["found"].as_str().unwrap().contains("413"),
        "{}",
        fixture["found"]
    );
    assert_eq!(
        fixture["config"]["transportMaxBodyBytes"], 102_400,
        "shrinking keeps the endpoint's ceiling"
    );
}

#[test]
fn bad_transport_usage_is_exit_2_and_sends_nothing() {
    let server = Server::start(Mode::Limit(102_400));
    let url = server.url();
    for args in [
        vec!["probe-ceiling", &url, "--header", "no-colon"],
        vec!["probe-ceiling", &url, "--method", "GET"],
        vec!["probe-ceiling", &url, "--max", "10"],
        vec!["probe-ceiling", &url, "--timeout", "0"],
        vec!["probe-ceiling", "127.0.0.1:8080"],
        vec!["check", "--cases", "5", "--transport", &url],
    ] {
        let out = ctxgate(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.starts_with("error: "),
            "{args:?}: {}",
            out.stderr
        );
    }
    assert_eq!(server.connections(), 0);
}

#[test]
fn the_suite_of_check_with_suite_is_not_sent_to_the_endpoint() {
    let suite = concat!(env!("CARGO_MANIFEST_DIR"), "/suites/known-bugs");
    let run = |with_suite: bool| {
        let server = Server::start(Mode::Limit(102_400));
        let dir = scratch(if with_suite { "suite" } else { "nosuite" });
        let mut args = vec![
            "check",
            "--cases",
            "20",
            "--seed",
            "4",
            "--jobs",
            "1",
            "--transport",
            &server.url(),
            "--config",
            &express_config(),
            "--save",
            dir.to_str().unwrap(),
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
        if with_suite {
            args.extend(["--with-suite".to_owned(), suite.to_owned()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = ctxgate(&args);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        (server.bodies(), out.stdout)
    };
    let (without, _) = run(false);
    let (with, stdout) = run(true);
    assert!(stdout.contains("suite"), "the suite did not run:\n{stdout}");
    assert!(!without.is_empty());
    assert_eq!(
        with, without,
        "the suite's fixtures reached the endpoint (or the cases changed)"
    );
}
