//! The real transport, end to end (`probe-ceiling`, `check --transport`),
//! against small HTTP servers this test starts on 127.0.0.1 — one with a
//! body limit that answers 413, one that closes the connection instead,
//! one that never answers, one whose answers carry terminal escapes.
//!
//! Nothing leaves the machine, even when the code under test is wrong:
//! every test here runs in a network namespace of its own
//! (`common::netns`), whose only interface is `lo`, whose DNS resolver is
//! a server of the test's, and whose "other machine" (192.0.2.2) is an
//! address on that `lo` with the test's own listener on it, so that a
//! connection the loopback rule should have prevented is seen, not sent.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

mod common;
use common::netns;
use common::process::{ctxgate, Out, TestDir};

#[derive(Clone, Copy)]
enum Mode {
    /// Reads the body, answers 200, or 413 above the limit.
    Limit(u64),
    /// Closes the connection without an answer above the limit.
    CloseAbove(u64),
    /// Accepts, and never answers.
    Silent,
    /// Answers 413 to everything, its body full of terminal escapes.
    Hostile,
    /// Answers 413 to everything, its body the request's head as it came
    /// (as a debugging gateway does): credentials included.
    Echo,
}

struct Server {
    port: u16,
    connections: Arc<AtomicUsize>,
    /// The Content-Length of each request.
    bodies: Arc<Mutex<Vec<u64>>>,
    /// Each request's head, lowercased.
    heads: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(mode: Mode) -> Server {
        Server::listen(TcpListener::bind("127.0.0.1:0").unwrap(), mode)
    }

    /// A server on `ip`, at the port given (0: any).
    fn start_on(ip: &str, port: u16, mode: Mode) -> Server {
        Server::listen(TcpListener::bind((ip, port)).unwrap(), mode)
    }

    fn listen(listener: TcpListener, mode: Mode) -> Server {
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (c, b, h) = (connections.clone(), bodies.clone(), heads.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                c.fetch_add(1, Ordering::SeqCst);
                let (b, h) = (b.clone(), h.clone());
                std::thread::spawn(move || handle(stream, mode, &b, &h));
            }
        });
        Server {
            port,
            connections,
            bodies,
            heads,
        }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
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

fn handle(mut stream: TcpStream, mode: Mode, bodies: &Mutex<Vec<u64>>, heads: &Mutex<Vec<String>>) {
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
    let raw_head = String::from_utf8_lossy(&head).into_owned();
    let head = raw_head.to_ascii_lowercase();
    heads.lock().unwrap().push(head.clone());
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
        Mode::Hostile => (
            "413 Payload Too Large",
            "\u{1b}[2J\u{1b}]0;pwned\u{7}too large\u{1b}[31m \u{9b}1;1H\u{202e}",
        ),
        Mode::Echo => ("413 Payload Too Large", raw_head.as_str()),
        Mode::Silent => unreachable!(),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

/// A fresh folder of the test's, removed when the test ends.
fn scratch(name: &str) -> TestDir {
    TestDir::new("transport", name)
}

fn express_config() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/express-100kb.config.json"
    )
    .to_owned()
}

/// The control of a refusal: `ctxgate ARGS` succeeds, and `listener` was
/// connected to (so it would have seen a leak).
#[track_caller]
fn connects_to(listener: &Server, args: &[&str]) {
    let out = ctxgate(args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(listener.connections() > 0);
}

/// `ctxgate probe-ceiling URL --json MORE…`, which must succeed: its report.
#[track_caller]
fn probe_json(url: &str, more: &[&str]) -> Value {
    let out = ctxgate(&[&["probe-ceiling", url, "--json"][..], more].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.json()
}

/// `ctxgate check RUN… --transport URL --config <the Express config> MORE…`.
fn check_express(run: &[&str], url: &str, more: &[&str]) -> Out {
    let config = express_config();
    let transport = ["--transport", url, "--config", &config];
    ctxgate(&[&["check"][..], run, &transport, more].concat())
}

#[test]
fn probe_ceiling_measures_a_limit_to_the_byte() {
    if !netns::isolated("probe_ceiling_measures_a_limit_to_the_byte") {
        return;
    }
    let server = Server::start(Mode::Limit(12_345));
    let v = probe_json(&server.url(), &[]);
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
    human.stdout_has("limit: 12,345 bytes — the largest body accepted; 12,346 bytes refused (413)");
}

#[test]
fn probe_ceiling_finds_express_default_in_few_requests_and_checks_the_config() {
    if !netns::isolated("probe_ceiling_finds_express_default_in_few_requests_and_checks_the_config")
    {
        return;
    }
    let server = Server::start(Mode::Limit(102_400));
    let v = probe_json(&server.url(), &["--config", &express_config()]);
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
    out.stdout_has("transportMaxBodyBytes is 8,388,608, above this endpoint's limit of 102,400 bytes: your compactor will send bodies this server refuses");
}

#[test]
fn a_connection_closed_without_an_answer_counts_as_refused() {
    if !netns::isolated("a_connection_closed_without_an_answer_counts_as_refused") {
        return;
    }
    let server = Server::start(Mode::CloseAbove(102_400));
    let v = probe_json(&server.url(), &[]);
    assert_eq!(v["limit"], 102_400, "{v}");
    assert!(
        v["answers"]["reset"].as_u64().unwrap() >= 1,
        "{}",
        v["answers"]
    );
    assert!(v["answers"].get("413").is_none());
}

#[test]
fn hosts_other_than_loopback_are_refused_before_any_connection() {
    if !netns::isolated("hosts_other_than_loopback_are_refused_before_any_connection") {
        return;
    }
    let server = Server::start(Mode::Limit(102_400));
    // 0.0.0.0 is not loopback by the rule, but a connection to it would
    // reach this listener: none may come.
    let elsewhere = format!("http://0.0.0.0:{}/", server.port);
    let out = ctxgate(&["probe-ceiling", &elsewhere]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    out.stderr_has("is not loopback");
    out.stderr_has("--allow-remote");
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
    out.stderr_has("is not loopback");
    for url in [
        "http://example.invalid/",
        "http://10.255.255.1:8080/",
        "http://[::2]/",
    ] {
        let out = ctxgate(&["probe-ceiling", url, "--timeout", "1"]);
        assert_eq!(out.code, 2, "{url}: {}", out.stderr);
        out.stderr_has("nothing was sent");
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(server.connections(), 0, "a refused URL was connected to");

    // The control: with --allow-remote the same URL is connected to, so
    // the listener above would have seen a leak.
    let args = [
        "probe-ceiling",
        &elsewhere,
        "--allow-remote",
        "--max",
        "4000",
    ];
    connects_to(&server, &args);
}

#[test]
fn an_endpoint_that_never_answers_does_not_hang_the_run() {
    if !netns::isolated("an_endpoint_that_never_answers_does_not_hang_the_run") {
        return;
    }
    let server = Server::start(Mode::Silent);
    let out = ctxgate(&["probe-ceiling", &server.url(), "--timeout", "0.5"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    out.stderr_has("no answer to a 1,024-byte body");
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
    out.stderr_has("no answer to a");
    out.stdout_has("transport: STOPPED");
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
    if !netns::isolated("check_transport_with_the_reference_under_the_real_limit_has_no_refusal") {
        return;
    }
    let server = Server::start(Mode::Limit(102_400));
    let dir = scratch("reference");
    let out = check_express(
        &["--cases", "60", "--seed", "3"],
        &server.url(),
        &["--save", dir.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let bodies = server.bodies();
    assert!(!bodies.is_empty());
    assert!(bodies.iter().all(|&b| b <= 102_400), "{bodies:?}");
    let line = format!("{} accepted, 0 refused", bodies.len());
    assert!(out.stdout.contains(&line), "{line}:\n{}", out.stdout);
    out.stdout_has("agreed on every body answered");
}

#[test]
fn check_transport_against_a_compactor_that_ignores_the_ceiling_gets_413s() {
    if !netns::isolated("check_transport_against_a_compactor_that_ignores_the_ceiling_gets_413s") {
        return;
    }
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
        out.stdout.contains("over the ceiling; ")
            && out.stdout.contains("; the live endpoint refused it too: 413 Payload Too Large (body: request entity too large)"),
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
    if !netns::isolated("bad_transport_usage_is_exit_2_and_sends_nothing") {
        return;
    }
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
    if !netns::isolated("the_suite_of_check_with_suite_is_not_sent_to_the_endpoint") {
        return;
    }
    let suite = concat!(env!("CARGO_MANIFEST_DIR"), "/suites/known-bugs");
    let run = |with_suite: bool| {
        let server = Server::start(Mode::Limit(102_400));
        let dir = scratch(if with_suite { "suite" } else { "nosuite" });
        let mut more = vec!["--save", dir.to_str().unwrap()];
        if with_suite {
            more.extend(["--with-suite", suite]);
        }
        let cases = ["--cases", "20", "--seed", "4", "--jobs", "1"];
        let out = check_express(&cases, &server.url(), &more);
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

/// Issue 25, item 1: a name that passes the loopback rule is connected to
/// only at the addresses the rule checked — never at what a resolver says.
/// Here the namespace's DNS answers every name with the "other machine"
/// (192.0.2.2, which has a listener of its own on the same port): the
/// trailing-dot spellings of `localhost` must still reach 127.0.0.1.
#[test]
fn a_name_that_passed_the_rule_is_connected_to_at_the_addresses_checked() {
    if !netns::isolated("a_name_that_passed_the_rule_is_connected_to_at_the_addresses_checked") {
        return;
    }
    let queries = netns::fake_dns(netns::ELSEWHERE.parse().unwrap());
    let here = Server::start(Mode::Limit(102_400));
    let elsewhere = Server::start_on(netns::ELSEWHERE, here.port, Mode::Limit(102_400));
    // The control: this machine's resolver does send `localhost.` elsewhere,
    // so a client that resolved the name itself would be caught.
    use std::net::ToSocketAddrs;
    let resolved: Vec<_> = ("localhost.", here.port)
        .to_socket_addrs()
        .unwrap()
        .collect();
    assert!(
        resolved
            .iter()
            .any(|a| a.ip().to_string() == netns::ELSEWHERE),
        "the namespace's resolver does not answer {}: {resolved:?}",
        netns::ELSEWHERE
    );
    let before = queries.load(Ordering::SeqCst);
    for host in ["localhost.", "LocalHost.", "localhost", "LOCALHOST"] {
        let url = format!("http://{host}:{}/internal/sessions/s1/llm-turn", here.port);
        let out = ctxgate(&[
            "probe-ceiling",
            &url,
            "--header",
            "Authorization: Bearer SECRET-TOKEN",
            "--max",
            "200000",
        ]);
        assert_eq!(out.code, 0, "{url}: {}{}", out.stdout, out.stderr);
        out.stdout_has("limit: 102,400 bytes");
        let out = check_express(&["--cases", "10", "--seed", "3"], &url, &[]);
        assert_eq!(out.code, 0, "{url}: {}{}", out.stdout, out.stderr);
        out.stdout_has(" refused; ");
    }
    assert!(!here.bodies().is_empty(), "nothing reached 127.0.0.1");
    assert_eq!(
        elsewhere.connections(),
        0,
        "a body (and its Authorization header) went to {}",
        netns::ELSEWHERE
    );
    assert_eq!(
        queries.load(Ordering::SeqCst),
        before,
        "a DNS query left for a name the rule had passed"
    );
    // With --allow-remote a name is resolved as usual: the listener
    // elsewhere would have seen a leak.
    let url = format!("http://api.example:{}/", here.port);
    connects_to(
        &elsewhere,
        &["probe-ceiling", &url, "--allow-remote", "--max", "4000"],
    );
}

/// Issue 25, item 3: a URL's userinfo (sent as Basic auth) and its
/// credential-like query values, and every `--header` value, are sent but
/// never printed — in probe-ceiling's header line, its JSON, check
/// --transport's summary, and errors.
#[test]
fn secrets_in_urls_and_headers_are_sent_and_never_printed() {
    if !netns::isolated("secrets_in_urls_and_headers_are_sent_and_never_printed") {
        return;
    }
    let server = Server::start(Mode::Limit(102_400));
    let url = format!(
        "http://ci:PW-s3cret@127.0.0.1:{}/llm-turn?api_key=KEY-s3cret&page=1",
        server.port
    );
    let secret = |out: &Out| {
        let all = format!("{}{}", out.stdout, out.stderr);
        assert!(!all.contains("s3cret"), "a secret was printed:\n{all}");
        all
    };
    let human = ctxgate(&[
        "probe-ceiling",
        &url,
        "--max",
        "200000",
        "--header",
        "X-Api: TOKEN-s3cret",
    ]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(
        secret(&human).contains("http://***@127.0.0.1:"),
        "{}",
        human.stdout
    );
    let json = ctxgate(&["probe-ceiling", &url, "--max", "200000", "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    secret(&json);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        v["url"],
        format!(
            "http://***@127.0.0.1:{}/llm-turn?api_key=***&page=1",
            server.port
        )
    );
    let check = check_express(
        &["--cases", "10", "--seed", "3"],
        &url,
        &["--transport-header", "Cookie: sid=s3cret"],
    );
    assert_eq!(check.code, 0, "{}", check.stderr);
    assert!(
        secret(&check).contains("transport http://***@127.0.0.1"),
        "{}",
        check.stdout
    );
    // Errors too: a refused host, a bad port, a header ctxgate will not send.
    for args in [
        vec!["probe-ceiling", "http://ci:PW-s3cret@10.0.0.1/"],
        vec!["probe-ceiling", "http://ci:PW-s3cret@127.0.0.1:99999/"],
        vec![
            "probe-ceiling",
            &url,
            "--header",
            "Authorization Bearer s3cret",
        ],
        vec!["probe-ceiling", &url, "--header", "Host: s3cret"],
    ] {
        let out = ctxgate(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        secret(&out);
    }
    // An endpoint that echoes the request in its answer: what ctxgate
    // shows of the answer has every credential masked, Basic auth too.
    let echo = Server::start(Mode::Echo);
    let echo_url = format!(
        "http://ci:PW-s3cret@127.0.0.1:{}/llm-turn?api_key=KEY-s3cret",
        echo.port
    );
    let probe = ctxgate(&[
        "probe-ceiling",
        &echo_url,
        "--max",
        "2000",
        "--header",
        "Authorization: Bearer TOKEN-s3cret",
    ]);
    let shown = secret(&probe);
    assert!(shown.contains("authorization: ***"), "{shown}");
    assert!(
        !shown.contains("Y2k6UFctczNjcmV0"),
        "Basic auth shown: {shown}"
    );
    let dir = scratch("echo");
    let config = dir.join("config.json");
    std::fs::write(&config, r#"{"transportMaxBodyBytes": 100000}"#).unwrap();
    let run = ctxgate(&[
        "check",
        "--cases",
        "3",
        "--seed",
        "3",
        "--config",
        config.to_str().unwrap(),
        "--transport",
        &echo_url,
        "--transport-header",
        "Cookie: sid=s3cret",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(secret(&run).contains("cookie: ***"), "{}", run.stdout);
    // They were sent: Basic auth from the userinfo, the header as given.
    let heads = server.heads();
    for sent in [
        "authorization: basic ",
        "x-api: token-s3cret",
        "cookie: sid=s3cret",
    ] {
        assert!(heads.iter().any(|h| h.contains(sent)), "{sent}: {heads:?}");
    }
}

/// Issue 25, item 4: framing is ctxgate's — a `--header` that would set
/// the length, the encoding, the host or the connection is refused (exit
/// 2) and nothing is sent; a port that is not 1..=65535 is refused rather
/// than read as 80 (a listener on port 80 here would see it); a server's
/// terminal escapes are escaped on stdout as in the reports.
#[test]
fn framing_headers_and_bad_ports_are_refused_and_answers_are_escaped() {
    if !netns::isolated("framing_headers_and_bad_ports_are_refused_and_answers_are_escaped") {
        return;
    }
    let server = Server::start(Mode::Limit(102_400));
    let port80 = Server::start_on("127.0.0.1", 80, Mode::Limit(102_400));
    let url = server.url();
    for header in [
        "Content-Length: 10",
        "content-length: 10, 10",
        "Content-Length: 99999999",
        "Transfer-Encoding: chunked",
        "Host: example.com",
        "Connection: close",
    ] {
        for flag in ["--header", "--transport-header"] {
            let out = if flag == "--header" {
                ctxgate(&["probe-ceiling", &url, "--header", header])
            } else {
                check_express(&["--cases", "3"], &url, &["--transport-header", header])
            };
            assert_eq!(out.code, 2, "{flag} {header}: {}{}", out.stdout, out.stderr);
            out.stderr_has("frames each request itself");
        }
    }
    for port in ["65536", "99999", "4294967377", "0"] {
        let bad = format!("http://127.0.0.1:{port}/");
        let out = ctxgate(&["probe-ceiling", &bad, "--max", "4000"]);
        assert_eq!(out.code, 2, "{bad}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("bad port"), "{bad}: {}", out.stderr);
        let out = check_express(&["--cases", "3"], &bad, &[]);
        assert_eq!(out.code, 2, "{bad}: {}{}", out.stdout, out.stderr);
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(server.connections(), 0, "a refused header was sent");
    assert_eq!(port80.connections(), 0, "a bad port became port 80");
    // The control: port 80 is reachable here.
    connects_to(
        &port80,
        &["probe-ceiling", "http://127.0.0.1/", "--max", "4000"],
    );

    let hostile = Server::start(Mode::Hostile);
    let (hostile_url, config) = (hostile.url(), express_config());
    for args in [
        vec!["probe-ceiling", &hostile_url],
        vec!["probe-ceiling", &hostile_url, "--json"],
        vec![
            "check",
            "--cases",
            "20",
            "--seed",
            "3",
            "--transport",
            &hostile_url,
            "--config",
            &config,
        ],
    ] {
        let out = ctxgate(&args);
        assert!(out.code == 0 || out.code == 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stdout.contains("too large") || out.stdout.contains("413"),
            "{}",
            out.stdout
        );
        for c in out.stdout.chars().chain(out.stderr.chars()) {
            assert!(
                !(c.is_control() && c != '\n' && c != '\t') && c != '\u{202e}',
                "{args:?}: a raw {c:?} reached the terminal:\n{}",
                out.stdout
            );
        }
    }
}
