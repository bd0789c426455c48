//! `ctxgate check`, as a library: generate cases, run a subject on each,
//! judge the invariants, shrink every failure to a minimal history across
//! the subject boundary, and keep it as a fixture.
//!
//! One failure per invariant (and per fault kind) is shrunk and saved; later
//! ones are counted. The run stops at `cases` or at the time budget,
//! whichever comes first; the seed is always in the report, so a CI run is
//! reproducible from it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::body::body_bytes;
use crate::contract::cannot_fit_justified;
use crate::fixture::Fixture;
use crate::generate::{case_from_seed, shrink, Case, Coverage, GenConfig};
use crate::harness::{run_case, CaseResult};
use crate::oracle::{Invariant, InvariantSet, Verdict, Violation};
use crate::subject::{Fault, FaultKind, Subject, SubjectInfo};

/// What to run.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub cases: u64,
    pub time: Option<Duration>,
    pub seed: u64,
    pub invariants: InvariantSet,
    /// Where failing cases are saved as fixtures.
    pub save: Option<PathBuf>,
    pub gen: GenConfig,
    /// At most this many subject runs while shrinking one failure.
    pub shrink_runs: usize,
    /// Send numbers that stock JSON libraries re-spell or round (`1.50`,
    /// 2^64, `1e400`: `gen.exotic_numbers_percent` of the cases)? `None`:
    /// when the subject's hello says `"numbers": "exact"`.
    pub exact_numbers: Option<bool>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            cases: 1000,
            time: None,
            seed: 0,
            invariants: InvariantSet::all(),
            save: None,
            gen: GenConfig::default(),
            shrink_runs: 2000,
            exact_numbers: None,
        }
    }
}

/// How often an invariant held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub pass: u64,
    pub fail: u64,
    pub not_applicable: u64,
    /// Why it did not apply, and how often.
    pub reasons: BTreeMap<&'static str, u64>,
}

impl Tally {
    /// Judged at least once, pass or fail.
    pub fn exercised(&self) -> bool {
        self.pass + self.fail > 0
    }

    /// The reasons it did not apply, most frequent first: "compaction was
    /// not due (25), the subject answered cannot_fit (5)".
    pub fn reasons_line(&self) -> String {
        let mut r: Vec<(&&str, &u64)> = self.reasons.iter().collect();
        r.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        r.iter()
            .map(|(why, n)| format!("{why} ({n})"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Where a failure's fixture went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// No save folder was given.
    NotAsked,
    /// Saved here.
    At(PathBuf),
    /// Saving failed: the error, said loudly in every report.
    Failed(String),
}

impl Saved {
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Saved::At(p) => Some(p),
            _ => None,
        }
    }
}

/// One failed invariant, shrunk.
#[derive(Debug, Clone)]
pub struct Failure {
    pub invariant: Invariant,
    /// The generated case's index (replay it with the same seed).
    pub case_index: u64,
    /// The violation on the shrunk case.
    pub violation: Violation,
    /// Messages and body bytes of the case as generated.
    pub original_size: (usize, u64),
    /// The minimal case, as a fixture.
    pub fixture: Fixture,
    pub saved: Saved,
}

/// One subject fault, with the (shrunk) case that caused it.
#[derive(Debug, Clone)]
pub struct FaultRecord {
    pub case_index: u64,
    pub fault: Fault,
    pub fixture: Fixture,
    pub saved: Saved,
    /// How many cases hit a fault of this kind.
    pub count: u64,
}

/// Everything a check run found.
#[derive(Debug, Clone)]
pub struct CheckReport {
    pub subject: SubjectInfo,
    pub seed: u64,
    pub cases: u64,
    pub elapsed: Duration,
    /// Body bytes of every generated case, summed (throughput).
    pub bytes: u64,
    pub checked: InvariantSet,
    pub tally: BTreeMap<Invariant, Tally>,
    pub failures: Vec<Failure>,
    pub faults: Vec<FaultRecord>,
    pub coverage: Coverage,
    /// The time budget ended the run before `cases`.
    pub stopped_by_time: bool,
    /// What the protocol carried, for a subject behind a process boundary
    /// (shrinking included).
    pub traffic: Option<crate::subject::Traffic>,
}

impl CheckReport {
    /// Every checked invariant held, no subject fault, and the run checked
    /// something: at least one case, and every checked invariant exercised
    /// at least once (SPEC §8).
    pub fn ok(&self) -> bool {
        self.failures.is_empty() && self.faults.is_empty() && self.not_checked().is_empty()
    }

    /// Why a run checked too little to pass, one line per reason; empty
    /// when it checked enough (whatever it found).
    pub fn not_checked(&self) -> Vec<String> {
        if self.checked.is_empty() {
            let claimed = self.subject.claimed();
            return vec![if claimed.is_empty() {
                format!(
                    "no invariant was checked: the subject {:?} claims none{}",
                    self.subject.name,
                    if self.subject.invariants.is_some_and(|s| s.is_empty()) {
                        " (its hello's `invariants` is empty)"
                    } else {
                        ""
                    }
                )
            } else {
                format!(
                    "no invariant was checked: the subject claims {}, and none of them was asked for",
                    claimed.names().join(", ")
                )
            }];
        }
        if self.cases == 0 {
            return vec![if self.stopped_by_time {
                "no case ran: the time budget ended before the first case".into()
            } else {
                "no case ran".into()
            }];
        }
        self.tally
            .iter()
            .filter(|(_, t)| !t.exercised())
            .map(|(inv, t)| {
                format!(
                    "{inv} was never exercised in {} case(s): {}",
                    self.cases,
                    t.reasons_line()
                )
            })
            .collect()
    }
}

/// Progress, for a bar or a line.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
    pub failures: usize,
    pub faults: usize,
}

/// Run the check.
pub fn run(
    subject: &mut dyn Subject,
    opts: &CheckOptions,
    on_progress: &mut dyn FnMut(Progress),
) -> CheckReport {
    let start = Instant::now();
    let checked = opts.invariants.intersect(subject.info().claimed());
    let mut gen = opts.gen.clone();
    if !opts.exact_numbers.unwrap_or(subject.info().exact_numbers) {
        gen.exotic_numbers_percent = 0;
    }
    let opts = &CheckOptions {
        gen,
        ..opts.clone()
    };
    let mut report = CheckReport {
        subject: subject.info().clone(),
        seed: opts.seed,
        cases: 0,
        elapsed: Duration::ZERO,
        bytes: 0,
        checked,
        tally: checked.iter().map(|i| (i, Tally::default())).collect(),
        failures: Vec::new(),
        faults: Vec::new(),
        coverage: Coverage::default(),
        stopped_by_time: false,
        traffic: None,
    };
    let cases = if checked.is_empty() { 0 } else { opts.cases };
    for index in 0..cases {
        if opts.time.is_some_and(|t| start.elapsed() >= t) {
            report.stopped_by_time = true;
            break;
        }
        let case = case_from_seed(opts.seed, index, &opts.gen);
        report.coverage.record_case(&case);
        let result = run_case(subject, &case.config, &case.messages, checked);
        report.bytes += result.body;
        report
            .coverage
            .record_result(result.compacted, result.cannot_fit);
        report.cases += 1;
        tally(&mut report.tally, &result);
        let run = RunContext {
            opts,
            checked,
            deadline: opts.time.map(|t| start + t),
        };
        record_failures(subject, &run, index, &case, &result, &mut report);
        on_progress(Progress {
            done: index + 1,
            total: opts.cases,
            failures: report.failures.len(),
            faults: report.faults.len(),
        });
    }
    report.elapsed = start.elapsed();
    report.traffic = subject.traffic();
    report
}

fn tally(t: &mut BTreeMap<Invariant, Tally>, result: &CaseResult) {
    for (inv, verdict) in &result.verdicts {
        let e = t.entry(*inv).or_default();
        match verdict {
            Verdict::Pass => e.pass += 1,
            Verdict::Fail(_) => e.fail += 1,
            Verdict::NotApplicable(why) => {
                e.not_applicable += 1;
                *e.reasons.entry(why).or_default() += 1;
            }
        }
    }
}

/// What shrinking a failure needs to know of the run.
struct RunContext<'o> {
    opts: &'o CheckOptions,
    checked: InvariantSet,
    /// The end of `--time`, which bounds shrinking too.
    deadline: Option<Instant>,
}

fn record_failures(
    subject: &mut dyn Subject,
    run: &RunContext<'_>,
    index: u64,
    case: &Case,
    result: &CaseResult,
    report: &mut CheckReport,
) {
    let (opts, checked, deadline) = (run.opts, run.checked, run.deadline);
    if let Some(fault) = &result.fault {
        if let Some(rec) = report
            .faults
            .iter_mut()
            .find(|r| r.fault.kind == fault.kind)
        {
            rec.count += 1;
        } else {
            let kind = fault.kind.clone();
            // Each attempt at shrinking a hang costs a whole timeout.
            let budget = match kind {
                FaultKind::Timeout | FaultKind::ClosedStdout => 8,
                _ => 60,
            };
            let shrunk =
                shrink_with_budget(case.clone(), opts.shrink_runs.min(budget), deadline, |c| {
                    run_case(subject, &c.config, &c.messages, checked)
                        .fault
                        .is_some_and(|f| f.kind == kind)
                });
            let fault = if shrunk == *case {
                fault.clone()
            } else {
                let last = run_case(subject, &shrunk.config, &shrunk.messages, checked);
                last.fault.unwrap_or_else(|| fault.clone())
            };
            let mut fixture = Fixture::new(
                shrunk.config,
                shrunk.messages,
                checked,
                see(&report.subject, opts.seed, index),
            );
            fixture.name = format!("fault-{}-{}", fault.kind.name(), fixture.name);
            fixture.found = Some(fault.to_string());
            let saved = save(opts, &fixture);
            report.faults.push(FaultRecord {
                case_index: index,
                fault,
                fixture,
                saved,
                count: 1,
            });
        }
    }
    for inv in result.failed() {
        if report.failures.iter().any(|f| f.invariant == inv) {
            continue;
        }
        let only = InvariantSet::from_iter([inv]);
        // A ceiling shrunk below any possible answer makes a true but
        // useless counterexample: "15 bytes over a 1-byte ceiling", or, for
        // any other invariant, a case a correct subject answers cannot_fit,
        // where the invariant no longer applies and the fixture judges
        // nothing. Keep the shrunk case one where a fitting answer exists,
        // if the original was — or if it fails as well under a ceiling
        // that leaves room, for an invariant that is not about the ceiling.
        let start = roomier(case, inv)
            .filter(|_| !out_of_time(deadline))
            .filter(|c| run_case(subject, &c.config, &c.messages, only).fails(inv))
            .unwrap_or_else(|| case.clone());
        let keep_fittable = fittable(&start);
        let shrunk = shrink_with_budget(start, opts.shrink_runs, deadline, |c| {
            (!keep_fittable || fittable(c))
                && run_case(subject, &c.config, &c.messages, only).fails(inv)
        });
        let found = result.violations().find(|v| v.invariant == inv).cloned();
        let violation = if shrunk == *case {
            found
        } else {
            let last = run_case(subject, &shrunk.config, &shrunk.messages, only);
            let v = last.violations().next().cloned();
            v.or(found)
        }
        .unwrap_or_else(|| Violation::new(inv, "failed"));
        let mut fixture = Fixture::new(
            shrunk.config,
            shrunk.messages,
            only,
            see(&report.subject, opts.seed, index),
        );
        fixture.found = Some(format!("{}: {}", report.subject.name, violation));
        let saved = save(opts, &fixture);
        report.failures.push(Failure {
            invariant: inv,
            case_index: index,
            violation,
            original_size: (
                case.messages.len(),
                body_bytes(&case.config, &case.messages),
            ),
            fixture,
            saved,
        });
    }
}

/// The case under a ceiling with room for its minimal output, when it has
/// none and `inv` is not one of the two ceiling invariants (for which the
/// tight ceiling is the point).
fn roomier(case: &Case, inv: Invariant) -> Option<Case> {
    if fittable(case)
        || matches!(
            inv,
            Invariant::BodyUnderCeiling | Invariant::SessionNeverOverflows
        )
    {
        return None;
    }
    let mut roomy = case.clone();
    roomy.config.transport_max_body_bytes = crate::Config::default()
        .transport_max_body_bytes
        .max(2 * body_bytes(&case.config, &case.messages));
    fittable(&roomy).then_some(roomy)
}

/// The smallest output SPEC §4 allows fits under the ceiling.
fn fittable(case: &Case) -> bool {
    !cannot_fit_justified(&case.config, &case.messages)
}

/// Shrink with at most `runs` evaluations of the predicate, and none once
/// the run's time budget is spent (`--time` bounds shrinking too).
fn shrink_with_budget(
    case: Case,
    runs: usize,
    deadline: Option<Instant>,
    mut still_fails: impl FnMut(&Case) -> bool,
) -> Case {
    let mut left = runs;
    shrink(case, |c| {
        if left == 0 || out_of_time(deadline) {
            return false;
        }
        left -= 1;
        still_fails(c)
    })
}

fn out_of_time(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

fn see(subject: &SubjectInfo, seed: u64, index: u64) -> String {
    format!(
        "found by `ctxgate check --seed {seed}` against {} {} (case {index}), shrunk",
        subject.name, subject.version
    )
}

fn save(opts: &CheckOptions, fixture: &Fixture) -> Saved {
    let Some(dir) = opts.save.as_ref() else {
        return Saved::NotAsked;
    };
    match fixture.save(dir) {
        Ok(p) => Saved::At(p),
        Err(e) => {
            let why = format!(
                "cannot save fixture {} in {}: {e}",
                fixture.name,
                dir.display()
            );
            eprintln!("ctxgate: ERROR: {why}");
            Saved::Failed(why)
        }
    }
}
