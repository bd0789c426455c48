//! Agent mode's endpoint (issue 45): requests a second and MB/s it takes
//! from a local client, for Chat Completions requests of 1 KB to 10 MB —
//! each read through the dialect, estimated, recorded and answered with a
//! model turn, as in a case. One endpoint a sample (its trace grows with
//! every request), the client a blocking ureq agent on one connection.
//!
//! ctxgate's CPU share of a whole run against a real (Python) agent is
//! not a criterion figure: every `ctxgate agent` report prints it ("CPU:
//! the agent 4.6 s, ctxgate 0.4 s (8%)"), and benches/README.md records it.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use ctxgate::agent::endpoint::Endpoint;
use ctxgate::agent::play::{Play, Stage, SummaryMatcher};
use ctxgate::agent::script::{Script, ScriptCall, ScriptTurn};
use ctxgate::agent::{Gateway, Settings};

fn stage() -> Arc<Stage> {
    let mut settings = Settings::default();
    settings.config.transport_max_body_bytes = 64 << 20;
    settings.config.context_window = 1 << 30;
    Arc::new(Stage {
        settings,
        gateway: Gateway::Express,
        dialect: None,
        tools: Vec::new(),
        summary: SummaryMatcher::new(None).unwrap(),
        model: "bench".into(),
    })
}

fn script() -> Arc<Script> {
    let turn = ScriptTurn {
        text: String::new(),
        calls: vec![ScriptCall {
            id: "call_0_0".into(),
            file: "t000-0.txt".into(),
            content: "x".into(),
            image: None,
        }],
    };
    Arc::new(Script {
        task: "Task: bench".into(),
        turns: vec![turn; 4],
        final_answer: "done".into(),
        summaries: vec![50],
        folders: Vec::new(),
    })
}

/// A Chat Completions request of about `bytes` bytes: a system prompt, the
/// task, and one tool result carrying the bulk.
fn request(bytes: usize) -> Vec<u8> {
    let bulk = "lorem ipsum dolor sit amet, ".repeat(bytes / 28 + 1);
    serde_json::to_vec(&serde_json::json!({
    "model": "bench", "stream": false,
    "tools": [{"type": "function", "function": {"name": "read_file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
    "messages": [
        {"role": "system", "content": "You are a bench."},
        {"role": "user", "content": "Task: bench"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_0_0", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"path\":\"/w/t000-0.txt\"}"}}]},
        {"role": "tool", "tool_call_id": "call_0_0", "content": &bulk[..bytes]},
    ]}))
    .unwrap()
}

fn endpoint_throughput(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("agent-endpoint");
    group.measurement_time(Duration::from_secs(3));
    for (name, bytes) in [
        ("1KB", 1_000),
        ("100KB", 100_000),
        ("1MB", 1_000_000),
        ("10MB", 10_000_000),
    ] {
        let body = request(bytes);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(BenchmarkId::new("chat", name), &body, |b, body| {
            b.iter_custom(|iters| {
                let play = Arc::new(Mutex::new(Play::new(stage(), script(), "/w".into())));
                let endpoint = Endpoint::start(runtime.handle(), play, 1 << 30).unwrap();
                let url = format!("{}/v1/chat/completions", endpoint.url());
                let client = ureq::Agent::new_with_defaults();
                let started = Instant::now();
                for _ in 0..iters {
                    let answer = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .send(&body[..])
                        .unwrap()
                        .into_body()
                        .read_to_vec()
                        .unwrap();
                    assert!(!answer.is_empty());
                }
                started.elapsed()
            })
        });
    }
    group.finish();
}

common::benches!(endpoint_throughput);
criterion::criterion_main!(benches);
