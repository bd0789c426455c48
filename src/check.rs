//! `ctxgate check`, as a library: generate cases, run a subject on each,
//! judge the invariants, shrink every failure to a minimal history across
//! the subject boundary, and keep it as a fixture.
//!
//! One failure per invariant (and per fault kind) is shrunk and saved —
//! up to `CheckOptions::distinct` of an invariant, distinct by their shrunk
//! shape (`run::shape`); later ones are counted, and listed unshrunk
//! ([`FailingCases`]). Invariants the subject does not claim are judged
//! too when the run explores them (`CheckOptions::explore`), and the
//! report says which. The run stops at `cases` or at the time budget,
//! whichever comes first; the seed is always in the report, so a CI run is
//! reproducible from it.

use std::collections::BTreeMap;

use crate::body::body_bytes;
use crate::fixture::Fixture;
use crate::generate::{Case, Coverage};
use crate::harness::{judge_case, CaseResult};
use crate::oracle::{Invariant, InvariantSet, Verdict, Violation};
use crate::run::shape::{self, classes_to_shrink};
use crate::run::shrink::{shrink_failing, shrink_fault};
use crate::run::{Dealt, FirstOf, Judge, RunContext, Runner};
use crate::subject::{Fault, FaultKind, Subject, SubjectInfo};

pub(crate) use crate::run::add_count;
pub use crate::run::{case_at, save, CaseSource, CheckOptions, Progress, RunFacts, Saved, Shard};

/// How often an invariant held; in JSON `pass`, `fail`, `notApplicable`
/// and `notApplicableBecause`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    pub pass: u64,
    pub fail: u64,
    pub not_applicable: u64,
    /// Why it did not apply, and how often.
    #[serde(rename = "notApplicableBecause", default)]
    pub reasons: BTreeMap<std::borrow::Cow<'static, str>, u64>,
}

impl Tally {
    /// Judged at least once, pass or fail.
    pub fn exercised(&self) -> bool {
        self.pass + self.fail > 0
    }

    /// Count one case's verdict (`None`: the invariant was not judged).
    pub(crate) fn count(&mut self, verdict: Option<&Verdict>) {
        match verdict {
            Some(Verdict::Pass) => self.pass += 1,
            Some(Verdict::Fail(_)) => self.fail += 1,
            Some(Verdict::NotApplicable(why)) => {
                self.not_applicable += 1;
                *self
                    .reasons
                    .entry(std::borrow::Cow::Borrowed(why))
                    .or_default() += 1;
            }
            None => {}
        }
    }

    /// Count another run's or shard's verdicts too.
    /// A tally read back from a report (`at` is where): its counts add up
    /// to the run's `cases`, its reasons to its not-applicable count.
    pub(crate) fn adds_up_to(&self, cases: u64, at: &str) -> Result<(), String> {
        let sum =
            (self.pass.checked_add(self.fail)).and_then(|s| s.checked_add(self.not_applicable));
        if sum != Some(cases) {
            return Err(format!(
                "`{at}`: pass {} + fail {} + notApplicable {} is not `cases` ({cases})",
                self.pass, self.fail, self.not_applicable
            ));
        }
        let reasons = (self.reasons.values()).try_fold(0u64, |a, &n| a.checked_add(n));
        if !self.reasons.is_empty() && reasons != Some(self.not_applicable) {
            return Err(format!(
                "`{at}.notApplicableBecause` adds up to {}, not notApplicable ({})",
                reasons.map_or("more than 2^64".to_owned(), |n| n.to_string()),
                self.not_applicable
            ));
        }
        Ok(())
    }

    pub fn add(&mut self, other: &Tally) {
        self.pass += other.pass;
        self.fail += other.fail;
        self.not_applicable += other.not_applicable;
        for (why, n) in &other.reasons {
            *self.reasons.entry(why.clone()).or_default() += n;
        }
    }

    /// The reasons it did not apply, most frequent first: "compaction was
    /// not due (25), the subject answered cannot_fit (5)".
    pub fn reasons_line(&self) -> String {
        let mut r: Vec<_> = self.reasons.iter().collect();
        r.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        r.iter()
            .map(|(why, n)| format!("{why} ({n})"))
            .collect::<Vec<_>>()
            .join(", ")
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
    /// What the subject answered to `compact` on the minimal case, when
    /// the invariant asked it (the report shows it and its diff).
    pub answer: Option<crate::subject::CompactAnswer>,
}

/// The most failing cases a report lists (`failingCases`): the first,
/// by case index; the rest are counted (`failingCasesLeftOut`). A run of
/// 100,000 cases that all fail lists 1,000 of them.
pub const FAILING_CASES_KEPT: usize = 1000;

/// The most bytes of a failing case's detail, on one line, kept before
/// it is cut (then `…` and ` (+N more)` may follow: [`FailingCase`]).
pub const FAILING_DETAIL_BYTES: usize = 200;

/// One failing case as it was found, before shrinking: one a failed
/// invariant (a case that fails two is listed twice).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct FailingCase {
    pub case: u64,
    pub invariant: Invariant,
    /// The violation's detail on one line: whole when it is at most
    /// [`FAILING_DETAIL_BYTES`] bytes, else its first ones up to a char
    /// boundary and `…` (3 bytes); then ` (+N more)` when the case had N
    /// more violations of the invariant.
    pub detail: String,
}

impl FailingCase {
    pub(crate) fn of(case: u64, invariant: Invariant, result: &CaseResult) -> FailingCase {
        let mut found = result.violations().filter(|v| v.invariant == invariant);
        let first = found.next().map_or("failed".into(), |v| v.detail.clone());
        let more = found.count();
        let line = crate::model::one_line(&first);
        let mut detail = crate::model::truncate_utf8(&line, FAILING_DETAIL_BYTES).to_owned();
        if detail.len() < line.len() {
            detail.push('…');
        }
        if more > 0 {
            detail.push_str(&format!(" (+{more} more)"));
        }
        FailingCase {
            case,
            invariant,
            detail,
        }
    }
}

/// Every failing case of a run, in case order: the first
/// [`FAILING_CASES_KEPT`], and how many more there were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailingCases {
    pub kept: Vec<FailingCase>,
    pub left_out: u64,
}

impl FailingCases {
    /// How many failing cases there were, listed or not.
    pub fn total(&self) -> u64 {
        self.kept.len() as u64 + self.left_out
    }

    /// Join another shard's: the first [`FAILING_CASES_KEPT`] of both
    /// (each lists its own first, so these are the run's first), the
    /// rest counted.
    pub(crate) fn merge(&mut self, other: FailingCases) -> Result<(), String> {
        add_count(&mut self.left_out, other.left_out, "failingCasesLeftOut")?;
        self.kept.extend(other.kept);
        self.kept.sort();
        let over = self.kept.len().saturating_sub(FAILING_CASES_KEPT);
        self.kept.truncate(FAILING_CASES_KEPT);
        add_count(&mut self.left_out, over as u64, "failingCasesLeftOut")
    }
}

/// The failures to keep of those shrunk: of each invariant, in case
/// order, the first of each shape (`run::shape`), at most `distinct` of
/// them; in case order.
pub(crate) fn select_distinct(mut failures: Vec<Failure>, distinct: usize) -> Vec<Failure> {
    failures.sort_by_key(|f| (f.invariant, f.case_index));
    let mut seen: Vec<(Invariant, String)> = Vec::new();
    let mut kept = Vec::new();
    for f in failures {
        let shape = f.shape();
        let of_it = seen.iter().filter(|(i, _)| *i == f.invariant);
        if of_it.clone().count() >= distinct.max(1) || of_it.clone().any(|(_, s)| *s == shape) {
            continue;
        }
        seen.push((f.invariant, shape));
        kept.push(f);
    }
    kept.sort_by_key(|f| (f.case_index, f.invariant));
    kept
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
    /// Its time, images not sent, formats re-aimed, formats measured.
    pub run: RunFacts,
    /// Body bytes of every generated case, summed (throughput).
    pub bytes: u64,
    /// Every invariant judged: those claimed and asked for, and the
    /// explored ones.
    pub checked: InvariantSet,
    /// Of `checked`, those the subject does not claim, judged because the
    /// run asked to explore them (`--claim`): their failures are findings
    /// beyond what the subject promises.
    pub explored: InvariantSet,
    pub tally: BTreeMap<Invariant, Tally>,
    /// Each failed invariant's first failure, shrunk, and up to
    /// `distinct` in all of distinct shapes; in case order.
    pub failures: Vec<Failure>,
    /// How many failures of an invariant the run keeps, distinct by their
    /// shrunk shape (`--save-distinct`; 1: the first alone).
    pub distinct: usize,
    /// Every failing case, before shrinking (`failingCases`).
    pub failing_cases: FailingCases,
    pub faults: Vec<FaultRecord>,
    pub coverage: Coverage,
    /// What the protocol carried, for a subject behind a process boundary
    /// (shrinking included).
    pub traffic: Option<crate::subject::Traffic>,
    /// The suite replayed before the cases (`CheckOptions::suite`).
    pub suite: Option<crate::suite::SuiteReport>,
    /// The shard this run was, if it was one.
    pub shard: Option<Shard>,
}

impl CheckReport {
    /// Every checked invariant held, no subject fault, and the run checked
    /// something: at least one case, and every checked invariant exercised
    /// at least once (SPEC §8).
    pub fn ok(&self) -> bool {
        self.failures.is_empty() && self.faults.is_empty() && self.not_checked().is_empty()
    }

    /// The invariants that failed (each with one failure or more kept).
    pub fn broken(&self) -> InvariantSet {
        self.failures.iter().map(|f| f.invariant).collect()
    }

    /// A rerun of one case (`check --case N`: a shard of one case), which
    /// need not exercise every invariant to pass.
    pub fn one_case(&self) -> bool {
        self.shard.is_some_and(|s| s.one_case)
    }

    /// The report is one a run could have written: every invariant's
    /// counts add up to the cases, and its reasons to its not-applicable
    /// count; an invariant has a failure on record exactly when its count
    /// of failures is not zero, and a failure or fault is of a case the run
    /// had. A report read back from a file is checked with this before it
    /// is merged: the merge adds what the reports say.
    pub fn consistent(&self) -> Result<(), String> {
        for (inv, t) in &self.tally {
            let name = inv.name();
            t.adds_up_to(self.cases, &format!("invariants.{name}"))?;
            let recorded = self.failures.iter().any(|f| f.invariant == *inv);
            if (t.fail > 0) != recorded {
                return Err(match recorded {
                    false => format!(
                        "`invariants.{name}.fail` is {} but `failures` holds none of {name}",
                        t.fail
                    ),
                    true => format!("`failures` holds {name}, whose `fail` count is 0"),
                });
            }
        }
        if let Some(f) = self
            .failures
            .iter()
            .find(|f| !self.tally.contains_key(&f.invariant))
        {
            return Err(format!(
                "`failures` holds {}, which the report did not check",
                f.invariant.name()
            ));
        }
        if let Some(f) = self
            .failures
            .iter()
            .find(|f| f.case_index >= self.cases && self.shard.is_none())
        {
            return Err(format!(
                "a failure of {} at case {}, of a run of {} case(s)",
                f.invariant.name(),
                f.case_index,
                self.cases
            ));
        }
        if let Some((inv, _)) = self.tally.iter().find(|(inv, _)| {
            self.failures
                .iter()
                .filter(|f| f.invariant == **inv)
                .count()
                > self.distinct
        }) {
            return Err(format!(
                "`failures` holds more failures of {inv} than `saveDistinct` ({})",
                self.distinct
            ));
        }
        let failed = (self.tally.values()).try_fold(0u64, |a, t| a.checked_add(t.fail));
        if failed != Some(self.failing_cases.total()) {
            return Err(format!(
                "`failingCases` lists {} and leaves out {}, but the invariants failed {} time(s)",
                self.failing_cases.kept.len(),
                self.failing_cases.left_out,
                failed.map_or("more than 2^64".to_owned(), |n| n.to_string())
            ));
        }
        if let Some(c) =
            (self.failing_cases.kept.iter()).find(|c| !self.tally.contains_key(&c.invariant))
        {
            return Err(format!(
                "`failingCases` holds {}, which the report did not check",
                c.invariant
            ));
        }
        if self.failing_cases.kept.len() > FAILING_CASES_KEPT {
            return Err(format!(
                "`failingCases` lists {} cases, more than the {FAILING_CASES_KEPT} a report keeps",
                self.failing_cases.kept.len()
            ));
        }
        let faulted = self
            .faults
            .iter()
            .try_fold(0u64, |a, f| a.checked_add(f.count));
        if self.faults.iter().any(|f| f.count == 0) || faulted.is_none_or(|n| n > self.cases) {
            return Err(format!(
                "`faults` counts {} faulted case(s) in a run of {} (a fault kind counts 1 or more)",
                faulted.map_or("more than 2^64".to_owned(), |n| n.to_string()),
                self.cases
            ));
        }
        Ok(())
    }

    /// Join the report of another shard of the same run (same subject and
    /// seed): counts add up, and the failure kept for each invariant and
    /// fault kind is that of the lowest case index, as one run would have
    /// kept. The time is the longest shard's. Both reports must be
    /// [`consistent`](Self::consistent) and have checked the same
    /// invariants; sums that would pass 2^64 are refused.
    pub fn merge(&mut self, other: CheckReport) -> Result<(), String> {
        if other.seed != self.seed {
            return Err(format!("seeds differ ({} and {})", self.seed, other.seed));
        }
        if other.subject.name != self.subject.name || other.subject.version != self.subject.version
        {
            return Err(format!(
                "subjects differ ({} {} and {} {})",
                self.subject.name, self.subject.version, other.subject.name, other.subject.version
            ));
        }
        crate::run::same_invariants(&self.tally, &other.tally)?;
        if other.explored != self.explored {
            return Err(format!(
                "it explored {} where the others explored {}: the shards of one run explore the same invariants (`--claim`)",
                names_or_none(other.explored),
                names_or_none(self.explored)
            ));
        }
        add_count(&mut self.cases, other.cases, "cases")?;
        add_count(&mut self.bytes, other.bytes, "bodyBytes")?;
        // Only shard 1 replays the suite.
        self.suite = self.suite.take().or(other.suite);
        self.run.merge(&other.run)?;
        self.coverage.merge(&other.coverage);
        self.traffic = match (self.traffic, other.traffic) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.shard = None;
        for (inv, t) in other.tally {
            self.checked.insert(inv);
            self.tally.entry(inv).or_default().add(&t);
        }
        if other.distinct != self.distinct {
            return Err(format!(
                "it kept {} distinct failure(s) an invariant where the others kept {}: the shards of one run keep as many (`--save-distinct`)",
                other.distinct, self.distinct
            ));
        }
        // Of each invariant, the first of each shape, as one run keeps.
        let mut failures = std::mem::take(&mut self.failures);
        failures.extend(other.failures);
        self.failures = select_distinct(failures, self.distinct);
        self.failing_cases.merge(other.failing_cases)?;
        join_first_of_kind(
            &mut self.faults,
            other.faults,
            |f| f.fault.kind.clone(),
            |f| f.case_index,
            |kept, other| kept.count += other.count,
        );
        self.faults
            .sort_by(|a, b| (a.case_index, &a.fault.kind).cmp(&(b.case_index, &b.fault.kind)));
        Ok(())
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
                    "no invariant was checked: the subject claims {}, and none of them was asked for (`--claim INV` judges an invariant it does not claim)",
                    claimed.names().join(", ")
                )
            }];
        }
        if self.cases == 0 {
            return vec![if self.run.stopped_by_time {
                "no case ran: the time budget ended before the first case".into()
            } else {
                "no case ran".into()
            }];
        }
        // One case rerun (`check --case N`) judges what that case
        // exercises: it checked something when any invariant was.
        if self.one_case() && self.tally.values().any(|t| t.exercised()) {
            return Vec::new();
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

/// The names of `set`, or "none".
fn names_or_none(set: InvariantSet) -> String {
    match set.is_empty() {
        true => "none".into(),
        false => set.names().join(", "),
    }
}

/// Join `theirs` into `ours`, shards' records of which a run keeps one of
/// each kind (`key`): of two of a kind, the first (`order`) is kept, and
/// `add` joins the other's counts into it.
pub(crate) fn join_first_of_kind<T, K: PartialEq, O: Ord>(
    ours: &mut Vec<T>,
    theirs: Vec<T>,
    key: impl Fn(&T) -> K,
    order: impl Fn(&T) -> O,
    add: impl Fn(&mut T, &T),
) {
    for mut t in theirs {
        match ours.iter_mut().find(|o| key(o) == key(&t)) {
            Some(kept) => {
                if order(&t) < order(kept) {
                    std::mem::swap(kept, &mut t);
                }
                add(kept, &t);
            }
            None => ours.push(t),
        }
    }
}

/// Run the check with one subject, on this thread.
pub fn run(
    subject: &mut dyn Subject,
    opts: &CheckOptions,
    on_progress: &mut dyn FnMut(Progress),
) -> CheckReport {
    let suite = opts
        .suite_to_run()
        .map(|s| s.run(&mut *subject, opts.explore));
    let runner = Single::runner(subject.info(), opts);
    runner.work(&mut [subject], Some(on_progress));
    let mut report = Single::finish(runner);
    report.traffic = subject.traffic();
    report.suite = suite;
    report
}

/// Run the check with one worker per subject (`--jobs`), each on a thread
/// of its own: cases are dealt to whichever worker is free. The same seed
/// gives the same cases, verdict table and fixtures whatever the number of
/// subjects (without `--time`): every case is judged on its own, and the
/// failure kept for each invariant and fault kind is that of the lowest
/// case index, shrunk by the worker that found it.
pub fn run_parallel(
    subjects: &mut [Box<dyn Subject + Send>],
    opts: &CheckOptions,
    on_progress: &mut dyn FnMut(Progress),
) -> CheckReport {
    if subjects.len() == 1 {
        return run(subjects[0].as_mut(), opts, on_progress);
    }
    let suite = (opts.suite_to_run()).map(|s| s.run(subjects[0].as_mut(), opts.explore));
    let runner = Single::runner(subjects[0].info(), opts);
    runner.work_in_parallel(
        subjects.iter_mut().map(|s| vec![s.as_mut()]).collect(),
        on_progress,
    );
    let mut report = Single::finish(runner);
    report.suite = suite;
    // Summed once every worker is done (lanes share a process's counts).
    report.traffic = subjects
        .iter()
        .filter_map(|s| s.traffic())
        .reduce(|a, b| a + b);
    report
}

/// What a check of `info` judges: the invariants it claims of those asked
/// for (by `--invariants`, or by `--claim`: an extension judged only when
/// asked, which the subject claims, is judged as a claim), and the explored
/// ones (`opts.explore`) it does not claim but can be judged on; and, of
/// all those, the explored ones.
pub fn judged(info: &SubjectInfo, opts: &CheckOptions) -> (InvariantSet, InvariantSet) {
    let claimed = info.claimed();
    let explored: InvariantSet = (opts.explore.minus(claimed).iter())
        .filter(|i| info.unjudgeable(*i).is_none())
        .collect();
    let asked = opts.invariants.union(opts.explore);
    (asked.intersect(claimed).union(explored), explored)
}

/// The judge of a check: one subject, its verdicts counted per invariant;
/// a find is a failed invariant or a fault kind, each shrunk on its own.
struct Single {
    checked: InvariantSet,
    /// Failures kept of an invariant, distinct by shape (`--save-distinct`).
    distinct: usize,
    /// The subject is sent content parts without its hello saying
    /// `contentParts` (`SubjectInfo::undeclared_parts`).
    parts_undeclared: bool,
}

/// What a check counts while it runs.
struct SingleState {
    report: CheckReport,
    /// Of each failed invariant, the first case of each class of failure
    /// (`run::shape::class`), of as many classes as the run shrinks.
    classes: BTreeMap<Invariant, FirstOf<String>>,
    /// Failures shrunk, each with its class; the distinct ones are chosen
    /// from them once the run is over.
    shrunk: Vec<(String, Failure)>,
    /// Every failing case, up to [`FAILING_CASES_KEPT`] of the first.
    failing: std::collections::BinaryHeap<FailingCase>,
    first_fault: FirstOf<FaultKind>,
    fault_counts: BTreeMap<FaultKind, u64>,
    /// Cases the subject faulted on that held content parts it was sent
    /// without its hello saying `contentParts`.
    faulted_on_parts: u64,
}

/// A check's find: a fault kind, or a failed invariant and the class of
/// its failure.
enum Find {
    Fault(Fault),
    Failure(Invariant, String),
}

/// A find, shrunk.
enum Shrunk {
    Fault(FaultRecord),
    Failure(Failure),
}

impl Single {
    fn runner(info: &SubjectInfo, opts: &CheckOptions) -> Runner<Single> {
        let (checked, explored) = judged(info, opts);
        let report = CheckReport {
            subject: info.clone(),
            seed: opts.seed,
            cases: 0,
            run: RunFacts {
                wire_formats: opts.wire_formats,
                ..RunFacts::default()
            },
            bytes: 0,
            checked,
            explored,
            tally: checked.iter().map(|i| (i, Tally::default())).collect(),
            failures: Vec::new(),
            distinct: opts.distinct.max(1),
            failing_cases: FailingCases::default(),
            faults: Vec::new(),
            coverage: {
                let mut c = Coverage::default();
                if opts.config.is_some() {
                    c.pin_config();
                }
                c
            },
            traffic: None,
            suite: None,
            shard: opts.shard,
        };
        let state = SingleState {
            report,
            classes: BTreeMap::new(),
            shrunk: Vec::new(),
            failing: std::collections::BinaryHeap::new(),
            first_fault: FirstOf::default(),
            fault_counts: BTreeMap::new(),
            faulted_on_parts: 0,
        };
        let single = Single {
            checked,
            distinct: opts.distinct.max(1),
            parts_undeclared: info.content_parts && !info.content_parts_declared,
        };
        Runner::new(single, state, &[info], opts)
    }

    /// The report, failures and faults in case order, their fixtures saved.
    fn finish(runner: Runner<Single>) -> CheckReport {
        let done = runner.finish();
        let st = done.state;
        let mut report = st.report;
        report.run = done.facts;
        report.run.faulted_on_parts = st.faulted_on_parts;
        // Shrunk from the first case of a class still held at the end: the
        // same whatever order the workers recorded cases in.
        let held =
            |(class, f): &(String, Failure)| st.classes[&f.invariant].is_first(class, f.case_index);
        let shrunk = st.shrunk.into_iter().filter(held).map(|(_, f)| f);
        report.failures = select_distinct(shrunk.collect(), report.distinct);
        report.failing_cases.kept = st.failing.into_sorted_vec();
        report
            .faults
            .sort_by(|a, b| (a.case_index, &a.fault.kind).cmp(&(b.case_index, &b.fault.kind)));
        for rec in &mut report.faults {
            rec.count = st.fault_counts.get(&rec.fault.kind).copied().unwrap_or(1);
        }
        // Saved once the run is over: only the failures kept (with several
        // workers, a later one may have replaced an earlier find).
        for f in &mut report.failures {
            f.saved = save(&done.opts, &f.fixture);
        }
        for f in &mut report.faults {
            f.saved = save(&done.opts, &f.fixture);
        }
        report
    }
}

impl Judge for Single {
    type Result = CaseResult;
    type Claim = Find;
    type Kept = Shrunk;
    type State = SingleState;

    fn checks_nothing(&self) -> bool {
        self.checked.is_empty()
    }

    fn run(&self, sides: &mut [&mut dyn Subject], case: &Case) -> CaseResult {
        judge_case(&mut *sides[0], &case.config, &case.messages, self.checked)
    }

    fn aim(
        &self,
        sides: &mut [&mut dyn Subject],
        case: &mut Case,
        index: u64,
    ) -> Option<crate::run::own_aim::Aimed> {
        use crate::run::own_aim;
        let subject = &mut *sides[0];
        own_aim::wanted(subject, self.checked, index).then(|| own_aim::aim(subject, case, index))?
    }

    fn stopped(&self, result: &CaseResult) -> bool {
        result
            .fault
            .as_ref()
            .is_some_and(|f| f.kind == FaultKind::Stopped)
    }

    fn record(&self, st: &mut SingleState, dealt: &Dealt<'_, CaseResult>) -> Vec<Find> {
        let Dealt {
            index,
            case,
            result,
        } = *dealt;
        let report = &mut st.report;
        report.bytes += result.body;
        let coverage = &mut report.coverage;
        coverage.record_case(case);
        match &result.answer {
            None => coverage.record_unanswered(),
            Some(_) => coverage.record_result(result.compacted, result.cannot_fit),
        }
        if result.cannot_fit && !result.refusal_judged() {
            coverage.record_unjudged_refusal();
        }
        if let Some(crate::subject::CompactAnswer::Messages(o)) = &result.answer {
            if result.compacted && crate::generate::coverage::elided_images(&case.messages, o) {
                coverage.record_elided();
            }
        }
        report.cases += 1;
        for (inv, verdict) in &result.verdicts {
            report.tally.entry(*inv).or_default().count(Some(verdict));
        }
        let mut finds = Vec::new();
        if let Some(fault) = &result.fault {
            *st.fault_counts.entry(fault.kind.clone()).or_default() += 1;
            if self.parts_undeclared && crate::subject::holds_content_parts(&case.messages) {
                st.faulted_on_parts += 1;
            }
            if st.first_fault.claim(fault.kind.clone(), index) {
                finds.push(Find::Fault(fault.clone()));
            }
        }
        let cap = classes_to_shrink(self.distinct);
        for inv in result.failed() {
            let class = shape::class(&case.messages, &case.config, result, inv);
            let classes = st
                .classes
                .entry(inv)
                .or_insert_with(|| FirstOf::at_most(cap));
            if classes.claim(class.clone(), index) {
                finds.push(Find::Failure(inv, class));
            }
            st.failing.push(FailingCase::of(index, inv, result));
            if st.failing.len() > FAILING_CASES_KEPT {
                st.failing.pop();
                st.report.failing_cases.left_out += 1;
            }
        }
        finds
    }

    fn shrink(
        &self,
        sides: &mut [&mut dyn Subject],
        run: &RunContext<'_>,
        dealt: &Dealt<'_, CaseResult>,
        find: &Find,
    ) -> Shrunk {
        let Dealt {
            index,
            case,
            result,
        } = *dealt;
        let subject = &mut *sides[0];
        match find {
            Find::Fault(fault) => {
                Shrunk::Fault(self.shrink_fault(subject, run, index, case, fault))
            }
            Find::Failure(inv, _) => {
                Shrunk::Failure(shrink_failure(subject, run, index, case, result, *inv))
            }
        }
    }

    fn keep(&self, st: &mut SingleState, index: u64, find: Find, shrunk: Shrunk) {
        match (find, shrunk) {
            (Find::Fault(f), Shrunk::Fault(rec)) if st.first_fault.is_first(&f.kind, index) => {
                st.report.faults.retain(|r| r.fault.kind != f.kind);
                st.report.faults.push(rec);
            }
            (Find::Failure(inv, class), Shrunk::Failure(failure))
                if st.classes[&inv].is_first(&class, index) =>
            {
                st.shrunk.retain(|(c, f)| f.invariant != inv || *c != class);
                st.shrunk.push((class, failure));
            }
            _ => {}
        }
    }

    fn progress(&self, st: &SingleState) -> (u64, usize, usize) {
        (st.report.cases, st.classes.len(), st.first_fault.len())
    }
}

impl Single {
    /// Shrink the case of a subject fault to the smallest that still faults
    /// the same way, and keep it as a fixture.
    fn shrink_fault(
        &self,
        subject: &mut dyn Subject,
        run: &RunContext<'_>,
        index: u64,
        case: &Case,
        fault: &Fault,
    ) -> FaultRecord {
        let kind = fault.kind.clone();
        // The fault of the last candidate that reproduced it is the shrunk
        // case's: kept, not asked for again (a hang would cost a timeout).
        let mut last = fault.clone();
        let shrunk = shrink_fault(case, &kind, run, |c| {
            match judge_case(subject, &c.config, &c.messages, self.checked).fault {
                Some(f) if f.kind == kind => {
                    last = f;
                    true
                }
                _ => false,
            }
        });
        fault_record(
            shrunk,
            self.checked,
            see(subject.info(), run.opts, index),
            index,
            last,
        )
    }
}

/// A fault's record: its shrunk case as a fixture named for the fault
/// alone — `fault-<kind>-<hash>`, not after an invariant, for none failed
/// (a fixture of a failure is named after the invariant it broke).
pub(crate) fn fault_record(
    shrunk: Case,
    checked: InvariantSet,
    see: String,
    index: u64,
    fault: Fault,
) -> FaultRecord {
    let mut fixture = Fixture::new(shrunk.config, shrunk.messages, checked, see);
    fixture.name = fault_fixture_name(&fault.kind, &fixture);
    fixture.found = Some(fault.to_string());
    FaultRecord {
        case_index: index,
        fault,
        fixture,
        saved: Saved::NotAsked,
        count: 1,
    }
}

/// `fault-<kind>-<hash>`: the kind, and the hash of the fixture's config
/// and messages (`Fixture::content_name`'s, without its invariant).
pub(crate) fn fault_fixture_name(kind: &FaultKind, fixture: &Fixture) -> String {
    let hash = fixture.content_name();
    let hash = hash.rsplit('-').next().unwrap_or(&hash);
    format!("fault-{}-{hash}", kind.name())
}

/// Shrink a failure of `inv` to a minimal history, and keep it as a fixture.
fn shrink_failure(
    subject: &mut dyn Subject,
    run: &RunContext<'_>,
    index: u64,
    case: &Case,
    result: &CaseResult,
    inv: Invariant,
) -> Failure {
    let opts = run.opts;
    let only = InvariantSet::from_iter([inv]);
    // The violation of the last case that still failed is the shrunk
    // case's: kept, not asked for again.
    let mut last: Option<Violation> = None;
    let mut last_answer = None;
    let shrunk = shrink_failing(case, inv, run, |c| {
        let r = judge_case(subject, &c.config, &c.messages, only);
        let failed = r.fails(inv);
        if failed {
            last = r.violations().find(|v| v.invariant == inv).cloned();
            last_answer = r.answer;
        }
        failed
    });
    let found = result.violations().find(|v| v.invariant == inv).cloned();
    let (violation, answer) = if shrunk == *case {
        (found, result.answer.clone())
    } else {
        (last.or(found), last_answer)
    };
    let violation = violation.unwrap_or_else(|| Violation::new(inv, "failed"));
    let see = see(subject.info(), opts, index);
    let mut failure = Failure::of(inv, index, violation, case, shrunk, see, subject.info());
    failure.answer = answer;
    failure
}

impl Failure {
    /// The shape of its minimal case (`run::shape`): what makes two
    /// failures of one invariant distinct.
    pub fn shape(&self) -> String {
        shape::shape(
            &self.fixture.config,
            &self.fixture.messages,
            &self.violation,
        )
    }

    /// A failure of `inv` found on `case` (index `index`) and shrunk to
    /// `shrunk`, kept as a fixture that judges `inv` alone.
    pub(crate) fn of(
        inv: Invariant,
        index: u64,
        violation: Violation,
        case: &Case,
        shrunk: Case,
        see: String,
        subject: &SubjectInfo,
    ) -> Failure {
        let mut fixture = Fixture::new(
            shrunk.config,
            shrunk.messages,
            InvariantSet::from_iter([inv]),
            see,
        );
        fixture.found = Some(format!("{}: {}", subject.name, violation));
        Failure {
            invariant: inv,
            case_index: index,
            violation,
            original_size: (
                case.messages.len(),
                body_bytes(&case.config, &case.messages),
            ),
            fixture,
            saved: Saved::NotAsked,
            answer: None,
        }
    }
}

fn see(subject: &SubjectInfo, opts: &CheckOptions, index: u64) -> String {
    let seed = opts.seed;
    let found = format!(
        "found by `ctxgate check --seed {seed}` against {} {} (case {index}), shrunk",
        subject.name, subject.version
    );
    match &opts.source {
        Some(source) => format!("{}; {found}", source.provenance(seed, index)),
        None => found,
    }
}
