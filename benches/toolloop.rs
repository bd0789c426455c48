//! A 60-iteration ToolLoop (three 32 KiB tool results per iteration) with
//! a compaction check every turn: "estimate over the trigger or body over
//! the ceiling?". From scratch, a turn re-estimates and re-measures the
//! whole history; incrementally ([`Incremental`]), it appends the new
//! iteration's figures and reads the running sums.
//!
//! `turn/<t>` is the cost of turn `t` alone: the target is turn 60 /
//! turn 1 ≤ 1.5 for the incremental check. `session` is all 60 turns.

mod common;

use std::hint::black_box;

use common::{toolloop, Class};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use ctxgate::estimate::{Adr0098, Estimator, Incremental};
use ctxgate::{body, Config, Message};

const TURNS: usize = 60;

/// Messages of the history after `t` turns (iterations).
fn upto(t: usize) -> usize {
    2 + 4 * t
}

fn from_scratch(config: &Config, msgs: &[Message]) -> bool {
    Adr0098.tokens(&mut msgs.iter(), config) > config.trigger()
        || body::body_bytes(config, msgs) > config.transport_max_body_bytes
}

fn toolloop_bench(c: &mut Criterion) {
    let config = Config::default();
    let h = toolloop(Class::Ascii, TURNS, 32 * 1024, 60);

    let mut g = c.benchmark_group("toolloop/turn");
    for t in [1usize, 15, 30, 60] {
        g.bench_with_input(BenchmarkId::new("from-scratch", t), &t, |b, &t| {
            b.iter(|| from_scratch(&config, black_box(&h[..upto(t)])))
        });
        let before = Incremental::from_messages(&Adr0098, &config, &h[..upto(t - 1)]);
        let new = &h[upto(t - 1)..upto(t)];
        g.bench_with_input(BenchmarkId::new("incremental", t), &t, |b, _| {
            b.iter_batched_ref(
                || before.clone(),
                |inc| {
                    inc.extend(black_box(new));
                    inc.needs_compaction()
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();

    let mut g = c.benchmark_group("toolloop/session");
    g.bench_function("from-scratch", |b| {
        b.iter(|| {
            (1..=TURNS)
                .filter(|&t| from_scratch(&config, black_box(&h[..upto(t)])))
                .count()
        })
    });
    g.bench_function("incremental", |b| {
        b.iter(|| {
            let mut inc = Incremental::from_messages(&Adr0098, &config, &h[..upto(0)]);
            (1..=TURNS)
                .filter(|&t| {
                    inc.extend(black_box(&h[upto(t - 1)..upto(t)]));
                    inc.needs_compaction()
                })
                .count()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = toolloop_bench
}
criterion_main!(benches);
