//! A 60-iteration ToolLoop (three 32 KiB tool results per iteration) with
//! a compaction check every turn: the estimate and the exact body size,
//! to compare with the trigger and the ceiling. From scratch, a turn re-estimates and re-measures the
//! whole history; incrementally ([`Incremental`]), it appends the new
//! iteration's figures and reads the running sums.
//!
//! `turn/<t>` is the cost of turn `t` alone: the target is turn 60 /
//! turn 1 ≤ 1.5 for the incremental check. `session` is all 60 turns.

mod common;

use std::hint::black_box;

use common::toolloop;
use criterion::{criterion_main, BatchSize, BenchmarkId, Criterion};
use ctxgate::estimate::{Adr0098, Estimator, Incremental};
use ctxgate::{body, Config, Message};

const TURNS: usize = 60;

/// Messages of the history after `t` turns (iterations).
fn upto(t: usize) -> usize {
    2 + 4 * t
}

/// Both figures a gate reports every turn (the estimate and the exact
/// body size; `||` on the two comparisons would skip the body as soon as
/// the estimate is over the trigger, which hides its cost).
fn from_scratch(config: &Config, msgs: &[Message]) -> (u64, u64) {
    (
        Adr0098.tokens(&mut msgs.iter(), config),
        body::body_bytes(config, msgs),
    )
}

fn incremental(inc: &Incremental<'_>) -> (u64, u64) {
    (inc.tokens(), inc.body_bytes())
}

fn toolloop_bench(c: &mut Criterion) {
    let config = Config::default();
    let h = toolloop(
        ctxgate::generate::text::ContentClass::Prose,
        TURNS,
        32 * 1024,
        60,
    );

    let mut g = c.benchmark_group("toolloop/turn");
    for t in [1usize, 15, 30, 60] {
        g.bench_with_input(BenchmarkId::new("from-scratch", t), &t, |b, &t| {
            b.iter(|| from_scratch(&config, black_box(&h[..upto(t)])))
        });
        let before = Incremental::from_messages(&Adr0098, &config, &h[..upto(t - 1)]);
        let new = &h[upto(t - 1)..upto(t)];
        g.bench_with_input(BenchmarkId::new("incremental", t), &t, |b, _| {
            b.iter_batched_ref(
                || {
                    let mut inc = before.clone();
                    inc.reserve(new.len());
                    inc
                },
                |inc| {
                    inc.extend(black_box(new));
                    incremental(inc)
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
                .map(|t| from_scratch(&config, black_box(&h[..upto(t)])).1)
                .sum::<u64>()
        })
    });
    g.bench_function("incremental", |b| {
        b.iter(|| {
            let mut inc = Incremental::from_messages(&Adr0098, &config, &h[..upto(0)]);
            (1..=TURNS)
                .map(|t| {
                    inc.extend(black_box(&h[upto(t - 1)..upto(t)]));
                    incremental(&inc).1
                })
                .sum::<u64>()
        })
    });
    g.finish();
}

common::benches!(toolloop_bench);
criterion_main!(benches);
