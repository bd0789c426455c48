//! `ctxgate check` on the built-in reference: cases per second with the
//! default generator, in process, on one core (`check::run`, as the CLI
//! runs it, without the progress bar).

mod common;

use criterion::{criterion_main, Criterion, Throughput};
use ctxgate::check::{self, CheckOptions};
use ctxgate::generate::{case_from_seed, GenConfig};
use ctxgate::subject::InProcess;

const CASES: u64 = 200;

fn check_bench(c: &mut Criterion) {
    let g = GenConfig::default();
    let bytes: u64 = (0..CASES)
        .map(|i| case_from_seed(1, i, &g).body_bytes())
        .sum();
    eprintln!(
        "check/reference: {CASES} cases, mean body {:.1} KiB",
        bytes as f64 / CASES as f64 / 1024.0
    );
    let opts = CheckOptions {
        cases: CASES,
        seed: 1,
        ..CheckOptions::default()
    };
    let mut group = c.benchmark_group("check");
    group.throughput(Throughput::Elements(CASES));
    group.bench_function("reference", |b| {
        b.iter(|| {
            let mut subject = InProcess::reference();
            check::run(&mut subject, &opts, &mut |_| {}).cases
        })
    });
    group.bench_function("generate-only", |b| {
        b.iter(|| {
            (0..CASES)
                .map(|i| case_from_seed(1, i, &g).messages.len())
                .sum::<usize>()
        })
    });
    group.finish();
}

common::benches!(check_bench);
criterion_main!(benches);
