//! The protocol path against the in-process one (issue 13): cases per
//! second of `check` on the built-in reference in process, on the same
//! reference through `ctxgate serve`, and on python-minimal (a CPU-bound
//! Python subject), each at `--jobs 1` and `--jobs 2`, and with `--lanes`
//! 1 and 2 (workers sharing one process; `check`'s default is 2). Subjects are started
//! once, outside the timed loop, as a run starts them once; every
//! iteration runs the same seed's cases. `benches/ratios.py` prints the
//! ratios against the goals.

mod common;

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ctxgate::check::{run_parallel, CheckOptions};
use ctxgate::subject::{InProcess, Lane, ProcessOptions, ProcessSubject, Subject};

fn reference(n: usize) -> Subjects {
    (0..n)
        .map(|_| Box::new(InProcess::reference()) as Box<dyn Subject + Send>)
        .collect()
}

/// `jobs` processes, each shared by `lanes` workers, as `check --jobs
/// --lanes` starts them.
fn process(argv: &[&str], jobs: usize, lanes: usize) -> Option<Subjects> {
    let mut out: Subjects = Vec::new();
    for _ in 0..jobs {
        let s = ProcessSubject::start(
            argv.iter().map(|s| s.to_string()).collect(),
            ProcessOptions::default(),
        )
        .ok()?;
        if lanes == 1 {
            out.push(Box::new(s));
        } else {
            out.extend(
                Lane::split(s, lanes)
                    .into_iter()
                    .map(|l| Box::new(l) as Box<dyn Subject + Send>),
            );
        }
    }
    Some(out)
}

type Subjects = Vec<Box<dyn Subject + Send>>;

/// One measured configuration: a subject, how many of it, how many cases.
struct Run {
    name: &'static str,
    jobs: usize,
    lanes: usize,
    cases: u64,
    make: Box<dyn Fn(usize) -> Option<Subjects>>,
}

impl Run {
    fn new(
        name: &'static str,
        (jobs, lanes): (usize, usize),
        cases: u64,
        make: impl Fn(usize, usize) -> Option<Subjects> + 'static,
    ) -> Run {
        Run {
            name,
            jobs,
            lanes,
            cases,
            make: Box::new(move |_| make(jobs, lanes)),
        }
    }
}

fn protocol(c: &mut Criterion) {
    let serve = [env!("CARGO_BIN_EXE_ctxgate"), "serve"];
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/python-minimal/compactor.py");
    let script: &'static str = script.to_str().expect("a UTF-8 path").to_owned().leak();
    let python = ["python3", script];
    let runs: Vec<Run> = vec![
        Run::new("in-process", (1, 1), 400, |n, _| Some(reference(n))),
        Run::new("in-process", (2, 1), 400, |n, _| Some(reference(n))),
        Run::new("serve", (1, 1), 400, move |j, l| process(&serve, j, l)),
        Run::new("serve", (1, 2), 400, move |j, l| process(&serve, j, l)),
        Run::new("serve", (2, 2), 400, move |j, l| process(&serve, j, l)),
        Run::new("python-minimal", (1, 1), 300, move |j, l| {
            process(&python, j, l)
        }),
        Run::new("python-minimal", (2, 1), 300, move |j, l| {
            process(&python, j, l)
        }),
        Run::new("python-minimal", (1, 2), 300, move |j, l| {
            process(&python, j, l)
        }),
        Run::new("python-minimal", (2, 2), 300, move |j, l| {
            process(&python, j, l)
        }),
    ];
    let mut group = c.benchmark_group("protocol");
    for Run {
        name,
        jobs,
        lanes,
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
        group.bench_function(format!("{name}/jobs-{jobs}-lanes-{lanes}"), |b| {
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
