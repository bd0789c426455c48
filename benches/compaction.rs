//! The reference compactor: cost against history length (10 to 100,000
//! messages: linear growth shows as a flat time per message), and the
//! compaction of a 6 MB history against one exact body-size pass over it.

mod common;

use std::hint::black_box;

use common::{toolloop, CLASSES};
use criterion::{criterion_main, BenchmarkId, Criterion, Throughput};
use ctxgate::{body, reference, Config};

/// A history of about `n` messages: system, user, then iterations of one
/// assistant message with three calls and three 256-byte results.
fn history_of(n: usize) -> Vec<ctxgate::Message> {
    let iterations = n.saturating_sub(2).div_ceil(4).max(1);
    toolloop(
        ctxgate::generate::text::ContentClass::Prose,
        iterations,
        256,
        n as u64,
    )
}

fn by_length(c: &mut Criterion) {
    let config = Config::default();
    let mut g = c.benchmark_group("compaction/messages");
    for n in [10usize, 100, 1_000, 10_000, 100_000] {
        let h = history_of(n);
        let out = reference::compact(&config, &h).expect("fits");
        eprintln!(
            "compaction/messages/{n}: {} messages, body {} B -> {} messages",
            h.len(),
            body::body_bytes(&config, &h),
            out.len()
        );
        g.throughput(Throughput::Elements(h.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &h, |b, h| {
            b.iter(|| reference::compact(&config, black_box(h)))
        });
    }
    g.finish();
}

fn six_mb(c: &mut Criterion) {
    let config = Config::default();
    for class in CLASSES {
        let h = toolloop(class, 60, 32 * 1024, 0x6000 + class as u64);
        let size = body::body_bytes(&config, &h);
        let mut g = c.benchmark_group(format!("compaction/6MB/{}", class.name()));
        g.throughput(Throughput::Bytes(size));
        g.bench_function("exact-body-size", |b| {
            b.iter(|| body::body_bytes(&config, black_box(&h)))
        });
        g.bench_function("reference-compact", |b| {
            b.iter(|| reference::compact(&config, black_box(&h)))
        });
        g.finish();
    }
}

common::benches!(by_length, six_mb);
criterion_main!(benches);
