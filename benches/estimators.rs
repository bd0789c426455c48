//! Estimators and the exact body size against serde_json and memcpy, on
//! 60-iteration ToolLoop histories (three 32 KiB tool results per
//! iteration, about 6 MB) of each content class, on the real histories, and
//! on a computer-use loop of 60 screenshots (images, issue 26).
//!
//! Throughput is counted in the history's raw text bytes (contents, call
//! ids, names and arguments): every function of a group reads the same
//! history, so the ratio of two throughputs is the inverse ratio of their
//! times. `memcpy` copies those raw bytes once.

mod common;

use std::hint::black_box;

use common::{raw_bytes, real_histories, toolloop, CLASSES};
use criterion::{BenchmarkId, Criterion, Throughput};
use ctxgate::body;
use ctxgate::estimate::{tokens, tokens_for_bytes, Adr0098, ContentOnly, Estimator};
use ctxgate::model::engine;
use ctxgate::{Config, Message};

/// ADR 0098's estimator as first written: the `toolCalls` JSON built with
/// serde_json and measured by its length.
fn adr0098_via_serde_json(msgs: &[Message], config: &Config) -> u64 {
    msgs.iter()
        .map(|m| {
            let calls = match m.tool_calls.as_deref() {
                Some(calls) if !calls.is_empty() => tokens_for_bytes(
                    serde_json::to_vec(&engine::tool_calls_to_value(calls))
                        .unwrap()
                        .len() as u64,
                    config.bytes_per_token,
                ),
                _ => 0,
            };
            tokens(&m.content.text(), config.bytes_per_token) + calls
        })
        .sum()
}

/// One group: every function over the same history.
fn group(c: &mut Criterion, name: &str, histories: &[Vec<Message>]) {
    let config = Config::default();
    let raw: Vec<Vec<u8>> = histories.iter().map(|h| raw_bytes(h)).collect();
    let raw_total: usize = raw.iter().map(Vec::len).sum();
    let raw_text: Vec<String> = raw
        .iter()
        .map(|r| String::from_utf8(r.clone()).expect("UTF-8 pieces"))
        .collect();
    let values: Vec<serde_json::Value> = histories
        .iter()
        .map(|h| body::body_value(&config, h))
        .collect();
    let body_total: u64 = histories.iter().map(|h| body::body_bytes(&config, h)).sum();
    eprintln!(
        "estimators/{name}: {} histories, {} messages, raw text {raw_total} B, body {body_total} B (×{:.2})",
        histories.len(),
        histories.iter().map(Vec::len).sum::<usize>(),
        body_total as f64 / raw_total as f64
    );

    let mut g = c.benchmark_group(format!("estimators/{name}"));
    g.throughput(Throughput::Bytes(raw_total as u64));

    let mut dst: Vec<Vec<u8>> = raw.iter().map(|r| vec![0u8; r.len()]).collect();
    g.bench_function("memcpy", |b| {
        b.iter(|| {
            for (d, s) in dst.iter_mut().zip(&raw) {
                d.copy_from_slice(black_box(s));
            }
            black_box(&dst);
        })
    });
    type PerHistory = fn(&[Message], &Config) -> u64;
    let per_history: [(&str, PerHistory); 4] = [
        ("content-only", |h, c| ContentOnly.tokens(&mut h.iter(), c)),
        ("adr-0098/serde_json", adr0098_via_serde_json),
        ("adr-0098/fast", |h, c| Adr0098.tokens(&mut h.iter(), c)),
        ("exact-body-size", |h, c| body::body_bytes(c, h)),
    ];
    for (name, measure) in per_history {
        g.bench_function(name, |b| {
            b.iter(|| {
                (histories.iter())
                    .map(|h| measure(black_box(h), &config))
                    .sum::<u64>()
            })
        });
    }
    g.bench_function("serde_json-to_vec-len", |b| {
        b.iter(|| {
            values
                .iter()
                .map(|v| serde_json::to_vec(black_box(v)).unwrap().len() as u64)
                .sum::<u64>()
        })
    });
    type Sizer = fn(&str) -> u64;
    let sizers: [(&str, Sizer); 3] = [
        ("lanes", body::string_size),
        ("swar", body::string_size_swar),
        ("scalar-table", body::string_size_scalar),
    ];
    for (name, size) in sizers {
        g.bench_function(BenchmarkId::new("string-size", name), |b| {
            b.iter(|| raw_text.iter().map(|s| size(black_box(s))).sum::<u64>())
        });
    }
    g.finish();
}

fn estimators(c: &mut Criterion) {
    for class in CLASSES {
        let h = toolloop(class, 60, 32 * 1024, 0x6000 + class as u64);
        group(c, class.name(), &[h]);
    }
    if let Some(real) = real_histories() {
        let hs: Vec<Vec<Message>> = real.into_iter().map(|(_, m)| m).collect();
        group(c, "real-histories", &hs);
    }
    // The first of them, 1.2 MB of text: with the messages around it, what
    // a 2 MiB L2 holds. The walk without the first touches from L3 that
    // are most of its cost on all of them (issue 48, third round).
    if let Some(real) = common::real_histories_up_to(1_200_000) {
        let hs: Vec<Vec<Message>> = real.into_iter().map(|(_, m)| m).collect();
        group(c, "real-histories-in-l2", &hs);
    }
    // Issue 26: 60 screenshots of 100 KB (about 8 MB of base64): the body
    // is exact and costs O(1) per image, its escaping counted when read.
    group(c, "images", &[common::screenshot_loop(60, 100_000, 0x2600)]);
}

// Instruction counts (benches/callgrind.sh): with `CTXGATE_ICOUNT` set, the
// binary runs each measured function once per history, each in its own
// non-inlined `icount_*` function, and exits; callgrind reports the
// instructions of each `icount_*` function, stable from run to run.

#[inline(never)]
fn icount_content_only(h: &[Message], config: &Config) -> u64 {
    ContentOnly.tokens(&mut h.iter(), config)
}

#[inline(never)]
fn icount_adr0098_serde_json(h: &[Message], config: &Config) -> u64 {
    adr0098_via_serde_json(h, config)
}

#[inline(never)]
fn icount_adr0098_fast(h: &[Message], config: &Config) -> u64 {
    Adr0098.tokens(&mut h.iter(), config)
}

#[inline(never)]
fn icount_exact_body_size(h: &[Message], config: &Config) -> u64 {
    body::body_bytes(config, h)
}

#[inline(never)]
fn icount_real_exact_body_size(hs: &[Vec<Message>], config: &Config) -> u64 {
    hs.iter().map(|h| body::body_bytes(config, h)).sum()
}

#[inline(never)]
fn icount_real_memcpy(raw: &[Vec<u8>], dst: &mut [Vec<u8>]) {
    for (d, s) in dst.iter_mut().zip(raw) {
        d.copy_from_slice(black_box(s));
    }
}

#[inline(never)]
fn icount_serde_json_to_vec_len(v: &serde_json::Value) -> u64 {
    serde_json::to_vec(v).unwrap().len() as u64
}

fn icount() {
    let config = Config::default();
    let mut total = 0u64;
    for class in CLASSES {
        let h = toolloop(class, 60, 32 * 1024, 0x6000 + class as u64);
        let v = body::body_value(&config, &h);
        total += icount_content_only(black_box(&h), &config);
        total += icount_adr0098_serde_json(black_box(&h), &config);
        total += icount_adr0098_fast(black_box(&h), &config);
        total += icount_exact_body_size(black_box(&h), &config);
        total += icount_serde_json_to_vec_len(black_box(&v));
    }
    // The real histories (issue 48): the exact body size against copying
    // their raw text, both over every history, the allocations as read.
    if let Some(real) = real_histories() {
        let hs: Vec<Vec<Message>> = real.into_iter().map(|(_, m)| m).collect();
        let raw: Vec<Vec<u8>> = hs.iter().map(|h| raw_bytes(h)).collect();
        let mut dst: Vec<Vec<u8>> = raw.iter().map(|r| vec![0u8; r.len()]).collect();
        total += icount_real_exact_body_size(black_box(&hs), &config);
        icount_real_memcpy(black_box(&raw), &mut dst);
        total += dst.iter().map(|d| d.len() as u64).sum::<u64>();
    }
    println!("icount: done ({total})");
}

common::benches!(estimators);

fn main() {
    if std::env::var_os("CTXGATE_ICOUNT").is_some() {
        icount();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
