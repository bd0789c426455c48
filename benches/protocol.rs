//! The protocol path against the in-process one (issue 13): cases per
//! second of `check` on the built-in reference in process, on the same
//! reference through `ctxgate serve`, and on python-minimal (a CPU-bound
//! Python subject), each at `--jobs 1` and `--jobs 2`. Subjects are started
//! once, outside the timed loop, as a run starts them once; every
//! iteration runs the same seed's cases. `benches/ratios.py` prints the
//! ratios against the goals.

mod common;

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ctxgate::check::{run_parallel, CheckOptions};
use ctxgate::subject::{InProcess, ProcessOptions, ProcessSubject, Subject};

fn reference(n: usize) -> Subjects {
    (0..n)
        .map(|_| Box::new(InProcess::reference()) as Box<dyn Subject + Send>)
        .collect()
}

fn process(argv: &[&str], n: usize) -> Option<Subjects> {
    (0..n)
        .map(|_| {
            ProcessSubject::start(
                argv.iter().map(|s| s.to_string()).collect(),
                ProcessOptions::default(),
            )
            .ok()
            .map(|s| Box::new(s) as Box<dyn Subject + Send>)
        })
        .collect()
}

type Subjects = Vec<Box<dyn Subject + Send>>;

/// One measured configuration: a subject, how many of it, how many cases.
struct Run {
    name: &'static str,
    jobs: usize,
    cases: u64,
    make: Box<dyn Fn(usize) -> Option<Subjects>>,
}

impl Run {
    fn new(
        name: &'static str,
        jobs: usize,
        cases: u64,
        make: impl Fn(usize) -> Option<Subjects> + 'static,
    ) -> Run {
        Run {
            name,
            jobs,
            cases,
            make: Box::new(make),
        }
    }
}

fn protocol(c: &mut Criterion) {
    let serve = [env!("CARGO_BIN_EXE_ctxgate"), "serve"];
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/python-minimal/compactor.py");
    let script: &'static str = script.to_str().expect("a UTF-8 path").to_owned().leak();
    let python = ["python3", script];
    let runs: Vec<Run> = vec![
        Run::new("in-process", 1, 400, |n| Some(reference(n))),
        Run::new("in-process", 2, 400, |n| Some(reference(n))),
        Run::new("serve", 1, 400, move |n| process(&serve, n)),
        Run::new("serve", 2, 400, move |n| process(&serve, n)),
        Run::new("python-minimal", 1, 100, move |n| process(&python, n)),
        Run::new("python-minimal", 2, 100, move |n| process(&python, n)),
    ];
    let mut group = c.benchmark_group("protocol");
    for Run {
        name,
        jobs,
        cases,
        make,
    } in &runs
    {
        let Some(mut subjects) = make(*jobs) else {
            eprintln!("protocol/{name}: the subject does not start here; skipped");
            continue;
        };
        let opts = CheckOptions {
            cases: *cases,
            seed: 1,
            ..CheckOptions::default()
        };
        group.throughput(Throughput::Elements(*cases));
        group.bench_function(format!("{name}/jobs-{jobs}"), |b| {
            b.iter(|| run_parallel(&mut subjects, &opts, &mut |_| {}).cases)
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = protocol
}
criterion_main!(benches);
