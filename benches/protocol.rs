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

use criterion::{Criterion, Throughput};
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

/// The goals' ratios measured in pairs. Criterion measures one
/// configuration after another, a few seconds each; on a shared machine
/// whose speed drifts by a tenth within a minute, a ratio of two of its
/// means compares two different machines. Here each round runs both sides
/// of a ratio back to back on the same cases (subjects started once), and
/// the median of the rounds' ratios is written to
/// `criterion/protocol-paired.json`, which `benches/ratios.py` reports
/// beside the means'.
fn paired() {
    let serve = [env!("CARGO_BIN_EXE_ctxgate"), "serve"];
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/python-minimal/compactor.py");
    let python = ["python3", script.to_str().expect("a UTF-8 path")];
    type Side<'a> = (u64, Box<dyn Fn() -> Option<Subjects> + 'a>);
    let pairs: Vec<(&str, Side, Side)> = vec![
        (
            "serve-jobs-1-lanes-2/in-process-jobs-1",
            (400, Box::new(|| process(&serve, 1, 2))),
            (400, Box::new(|| Some(reference(1)))),
        ),
        (
            "serve-jobs-1-lanes-1/in-process-jobs-1",
            (400, Box::new(|| process(&serve, 1, 1))),
            (400, Box::new(|| Some(reference(1)))),
        ),
        (
            "serve-jobs-2-lanes-2/in-process-jobs-2",
            (400, Box::new(|| process(&serve, 2, 2))),
            (400, Box::new(|| Some(reference(2)))),
        ),
        (
            "python-minimal-jobs-2-lanes-1/python-minimal-jobs-1-lanes-1",
            (300, Box::new(|| process(&python, 2, 1))),
            (300, Box::new(|| process(&python, 1, 1))),
        ),
    ];
    const ROUNDS: usize = 15;
    let mut out = serde_json::Map::new();
    for (name, (cases_a, make_a), (cases_b, make_b)) in &pairs {
        let (Some(mut a), Some(mut b)) = (make_a(), make_b()) else {
            eprintln!("protocol-paired/{name}: a subject does not start here; skipped");
            continue;
        };
        let per_second = |subjects: &mut Subjects, cases: u64| {
            let opts = CheckOptions {
                cases,
                seed: 1,
                ..CheckOptions::default()
            };
            let t = std::time::Instant::now();
            run_parallel(subjects, &opts, &mut |_| {});
            cases as f64 / t.elapsed().as_secs_f64()
        };
        // One round each first, unmeasured: caches and page tables warm.
        per_second(&mut a, *cases_a);
        per_second(&mut b, *cases_b);
        // Which side goes first alternates: a drift within a round counts
        // against each side as often.
        let mut ratios: Vec<f64> = (0..ROUNDS)
            .map(|round| match round % 2 {
                0 => per_second(&mut a, *cases_a) / per_second(&mut b, *cases_b),
                _ => {
                    let second = per_second(&mut b, *cases_b);
                    per_second(&mut a, *cases_a) / second
                }
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        let median = ratios[ROUNDS / 2];
        eprintln!(
            "protocol-paired/{name}: median ratio {median:.3} of {ROUNDS} rounds {ratios:.3?}"
        );
        out.insert(
            name.to_string(),
            serde_json::json!({"median": median, "rounds": ratios}),
        );
    }
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
        .join("criterion");
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        std::fs::write(
            dir.join("protocol-paired.json"),
            serde_json::to_vec_pretty(&out).expect("JSON"),
        )
    });
    if let Err(e) = written {
        eprintln!("protocol-paired: cannot write {}: {e}", dir.display());
    }
}

common::benches!(protocol);

fn main() {
    benches();
    // Under `cargo bench` only (not `cargo test --benches`, which runs each
    // bench once to see that it works).
    if std::env::args().any(|a| a == "--bench") {
        paired();
    }
    Criterion::default().configure_from_args().final_summary();
}
