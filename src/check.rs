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
use crate::config::Config;
use crate::contract::cannot_fit_justified;
use crate::fixture::Fixture;
use crate::generate::{case_for_config, case_from_seed, shrink, Case, Coverage, GenConfig};
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
    /// One shard of the seed's cases (`--shard K/N`), or all of them.
    pub shard: Option<Shard>,
    /// Every case runs under this config (`--config`), and shrinking
    /// keeps it: the user's production values, or a live endpoint's
    /// ceiling (`--transport`). The generator aims at its trigger and
    /// ceiling ([`case_at`]).
    pub config: Option<Config>,
    /// Where the cases come from when not from the generator (`--corpus`).
    pub source: Option<std::sync::Arc<dyn CaseSource>>,
}

/// Cases from somewhere other than the generator (real histories as
/// seeds, `corpus`): case `index` of the run seeded `seed`, the same every
/// time, and where it came from, for the fixture's `see`.
pub trait CaseSource: std::fmt::Debug + Send + Sync {
    /// `exact_numbers`: the subject keeps numbers as spelled (its hello's
    /// `"numbers": "exact"`); else the case's numbers are to be sent in
    /// their portable spelling, as `replay` sends a fixture's.
    fn case(&self, seed: u64, index: u64, exact_numbers: bool) -> Case;
    /// Where case `index` came from ("the corpus file swe-agent/001.json,
    /// grown results"), named in its fixture's `see`.
    fn provenance(&self, seed: u64, index: u64) -> String;
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
            shard: None,
            config: None,
            source: None,
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
    pub reasons: BTreeMap<std::borrow::Cow<'static, str>, u64>,
}

impl Tally {
    /// Judged at least once, pass or fail.
    pub fn exercised(&self) -> bool {
        self.pass + self.fail > 0
    }

    /// Count another run's or shard's verdicts too.
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
    /// The shard this run was, if it was one.
    pub shard: Option<Shard>,
    /// Cases with images that the subject was not sent, because its hello
    /// says it takes text only (`contentParts: false`, SPEC §6): generated
    /// ones went without their images, corpus ones not at all.
    pub images_not_sent: u64,
}

impl CheckReport {
    /// Every checked invariant held, no subject fault, and the run checked
    /// something: at least one case, and every checked invariant exercised
    /// at least once (SPEC §8).
    pub fn ok(&self) -> bool {
        self.failures.is_empty() && self.faults.is_empty() && self.not_checked().is_empty()
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
            let sum = t
                .pass
                .checked_add(t.fail)
                .and_then(|s| s.checked_add(t.not_applicable));
            if sum != Some(self.cases) {
                return Err(format!(
                    "`invariants.{name}`: pass {} + fail {} + notApplicable {} is not `cases` ({})",
                    t.pass, t.fail, t.not_applicable, self.cases
                ));
            }
            let reasons = t.reasons.values().try_fold(0u64, |a, &n| a.checked_add(n));
            if !t.reasons.is_empty() && reasons != Some(t.not_applicable) {
                return Err(format!(
                    "`invariants.{name}.notApplicableBecause` adds up to {}, not notApplicable ({})",
                    reasons.map_or("more than 2^64".to_owned(), |n| n.to_string()),
                    t.not_applicable
                ));
            }
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
        let names = |r: &CheckReport| r.tally.keys().map(|i| i.name()).collect::<Vec<_>>();
        if names(self) != names(&other) {
            return Err(format!(
                "it checked {} where the others checked {}: the shards of one run check the same invariants (`--invariants`)",
                names(&other).join(", "),
                names(self).join(", ")
            ));
        }
        let too_many = |what: &str| format!("`{what}` added up passes 2^64");
        self.cases = self
            .cases
            .checked_add(other.cases)
            .ok_or_else(|| too_many("cases"))?;
        self.bytes = self
            .bytes
            .checked_add(other.bytes)
            .ok_or_else(|| too_many("bodyBytes"))?;
        self.images_not_sent = self
            .images_not_sent
            .checked_add(other.images_not_sent)
            .ok_or_else(|| too_many("imagesNotSent"))?;
        self.elapsed = self.elapsed.max(other.elapsed);
        self.stopped_by_time |= other.stopped_by_time;
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
        for f in other.failures {
            match self
                .failures
                .iter_mut()
                .find(|g| g.invariant == f.invariant)
            {
                Some(g) if f.case_index < g.case_index => *g = f,
                Some(_) => {}
                None => self.failures.push(f),
            }
        }
        for f in other.faults {
            match self
                .faults
                .iter_mut()
                .find(|g| g.fault.kind == f.fault.kind)
            {
                Some(g) => {
                    let count = g.count + f.count;
                    if f.case_index < g.case_index {
                        *g = f;
                    }
                    g.count = count;
                }
                None => self.faults.push(f),
            }
        }
        self.failures.sort_by_key(|f| (f.case_index, f.invariant));
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

/// Run the check with one subject, on this thread.
pub fn run(
    subject: &mut dyn Subject,
    opts: &CheckOptions,
    on_progress: &mut dyn FnMut(Progress),
) -> CheckReport {
    let engine = Engine::new(subject.info(), opts);
    engine.work(subject, Some(on_progress));
    let mut report = engine.finish();
    report.traffic = subject.traffic();
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
    let engine = Engine::new(subjects[0].info(), opts);
    on_threads(
        subjects.iter_mut(),
        |s| engine.work(s.as_mut(), None),
        &mut || on_progress(engine.progress()),
    );
    let mut report = engine.finish();
    // Summed once every worker is done (lanes share a process's counts).
    report.traffic = subjects
        .iter()
        .filter_map(|s| s.traffic())
        .reduce(|a, b| a + b);
    report
}

/// Run `work` on each of `items`, each on a thread of its own, calling
/// `tick` every 100 ms and once more at the end — which is when the last
/// thread is done, not the next tick after it (a run of a few hundred
/// cases would otherwise take up to a tenth of a second more).
pub(crate) fn on_threads<I: Send>(
    items: impl Iterator<Item = I>,
    work: impl Fn(I) + Sync,
    tick: &mut dyn FnMut(),
) {
    use std::sync::mpsc::RecvTimeoutError;
    std::thread::scope(|scope| {
        let (done, finished) = std::sync::mpsc::channel();
        let mut left = 0;
        for item in items {
            let (work, done) = (&work, done.clone());
            scope.spawn(move || {
                work(item);
                let _ = done.send(());
            });
            left += 1;
        }
        drop(done);
        while left > 0 {
            match finished.recv_timeout(Duration::from_millis(100)) {
                Ok(()) => left -= 1,
                Err(RecvTimeoutError::Timeout) => tick(),
                // A thread panicked: the scope joins it and passes the panic on.
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        tick();
    });
}

/// Case `index` of the run `opts` describes: from its source (`--corpus`),
/// else generated — under the fixed config, aimed at its boundaries, when
/// there is one (`--config`). What `check` and `check --baseline` run
/// (`opts.exact_numbers` settled by then: `None` is portable numbers).
pub fn case_at(opts: &CheckOptions, index: u64) -> Case {
    let (seed, gen) = (opts.seed, &opts.gen);
    match (&opts.source, &opts.config) {
        (Some(source), _) => source.case(seed, index, opts.exact_numbers.unwrap_or(false)),
        (None, Some(config)) => case_for_config(seed, index, gen, config),
        (None, None) => case_from_seed(seed, index, gen),
    }
}

/// Which of a seed's cases a run takes: all of `0..cases`, or shard `k`
/// of `n` (1-based): the indices `i` with `i % n == k - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub k: u64,
    pub n: u64,
}

impl Shard {
    /// `K/N` with 1 ≤ K ≤ N.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard takes K/N with 1 ≤ K ≤ N, found {s:?}");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (k, n): (u64, u64) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if n == 0 || k == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }

    /// The `j`-th case index of this shard.
    fn index(self, j: u64) -> u64 {
        j.saturating_mul(self.n).saturating_add(self.k - 1)
    }
}

/// Deals a run's case indices to its workers, in order — its shard's only
/// (`--shard`) — until the cases or the time (`--time`) run out (`check`
/// and `check --baseline`).
pub(crate) struct Dealer {
    start: Instant,
    time: Option<Duration>,
    shard: Option<Shard>,
    cases: u64,
    next: std::sync::atomic::AtomicU64,
}

/// What a worker is dealt.
pub(crate) enum Deal {
    Case(u64),
    /// Every case of the run is dealt.
    Done,
    /// The run's time is up.
    OutOfTime,
}

impl Dealer {
    /// Starting now.
    pub(crate) fn new(opts: &CheckOptions) -> Dealer {
        Dealer {
            start: Instant::now(),
            time: opts.time,
            shard: opts.shard,
            cases: opts.cases,
            next: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub(crate) fn started(&self) -> Instant {
        self.start
    }

    /// When the run's time is up, if it has a time.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.time.map(|t| self.start + t)
    }

    pub(crate) fn next(&self) -> Deal {
        if out_of_time(self.deadline()) {
            return Deal::OutOfTime;
        }
        let j = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let index = match self.shard {
            Some(shard) => shard.index(j),
            None => j,
        };
        match index < self.cases {
            true => Deal::Case(index),
            false => Deal::Done,
        }
    }
}

/// The state a run's workers share.
struct Engine {
    opts: CheckOptions,
    /// The subject takes content parts (its hello's `contentParts`).
    content_parts: bool,
    checked: InvariantSet,
    dealer: Dealer,
    state: std::sync::Mutex<State>,
}

struct State {
    report: CheckReport,
    first_failure: BTreeMap<Invariant, u64>,
    first_fault: BTreeMap<FaultKind, u64>,
    fault_counts: BTreeMap<FaultKind, u64>,
}

impl Engine {
    fn new(info: &SubjectInfo, opts: &CheckOptions) -> Self {
        let checked = opts.invariants.intersect(info.claimed());
        let mut gen = opts.gen.clone();
        let exact = opts.exact_numbers.unwrap_or(info.exact_numbers);
        if !exact {
            gen.exotic_numbers_percent = 0;
        }
        let report = CheckReport {
            subject: info.clone(),
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
            shard: opts.shard,
            images_not_sent: 0,
        };
        Engine {
            opts: CheckOptions {
                gen,
                exact_numbers: Some(exact),
                ..opts.clone()
            },
            content_parts: info.content_parts,
            checked,
            dealer: Dealer::new(opts),
            state: std::sync::Mutex::new(State {
                report,
                first_failure: BTreeMap::new(),
                first_fault: BTreeMap::new(),
                fault_counts: BTreeMap::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn deadline(&self) -> Option<Instant> {
        self.dealer.deadline()
    }

    /// The next case index to run, if any is left (and time is).
    fn next_index(&self) -> Option<u64> {
        if self.checked.is_empty() {
            return None;
        }
        match self.dealer.next() {
            Deal::Case(index) => Some(index),
            Deal::Done => None,
            Deal::OutOfTime => {
                self.lock().report.stopped_by_time = true;
                None
            }
        }
    }

    fn progress(&self) -> Progress {
        let st = self.lock();
        let total = match self.opts.shard {
            Some(s) => (self.opts.cases + s.n - s.k) / s.n,
            None => self.opts.cases,
        };
        Progress {
            done: st.report.cases,
            total,
            failures: st.first_failure.len(),
            faults: st.first_fault.len(),
        }
    }

    /// Run cases on `subject` until none is left.
    fn work(&self, subject: &mut dyn Subject, mut on_progress: Option<&mut dyn FnMut(Progress)>) {
        let run = RunContext {
            opts: &self.opts,
            checked: self.checked,
            deadline: self.deadline(),
        };
        subject.stop_at(self.deadline());
        while let Some(index) = self.next_index() {
            let Some(case) = self.case(index) else {
                continue;
            };
            let result = run_case(subject, &case.config, &case.messages, self.checked);
            if result
                .fault
                .as_ref()
                .is_some_and(|f| f.kind == FaultKind::Stopped)
            {
                self.lock().report.stopped_by_time = true;
                break; // not judged: the run is over
            }
            let (fault_claim, claims) = self.lock().record(index, &case, &result);
            if let Some(fault) = fault_claim {
                let rec = shrink_fault(subject, &run, index, &case, &fault);
                let mut st = self.lock();
                if st.first_fault.get(&fault.kind) == Some(&index) {
                    st.report.faults.retain(|r| r.fault.kind != fault.kind);
                    st.report.faults.push(rec);
                }
            }
            for inv in claims {
                let failure = shrink_failure(subject, &run, index, &case, &result, inv);
                let mut st = self.lock();
                if st.first_failure.get(&inv) == Some(&index) {
                    st.report.failures.retain(|f| f.invariant != inv);
                    st.report.failures.push(failure);
                }
            }
            if let Some(p) = on_progress.as_mut() {
                p(self.progress());
            }
        }
    }

    /// Case `index`, as the subject may be sent it: to a subject that
    /// takes text only (`contentParts: false`), a generated case without
    /// its images, and no case at all for one from a corpus that holds
    /// images; each counted in the report, never silently.
    fn case(&self, index: u64) -> Option<Case> {
        let case = case_at(&self.opts, index);
        if self.content_parts || !case.messages.iter().any(|m| !m.content.parts().is_empty()) {
            return Some(case);
        }
        self.lock().report.images_not_sent += 1;
        if self.opts.source.is_some() {
            return None;
        }
        let opts = CheckOptions {
            gen: self.opts.gen.without_images(),
            ..self.opts.clone()
        };
        Some(case_at(&opts, index))
    }

    /// The report, failures and faults in case order.
    fn finish(self) -> CheckReport {
        let elapsed = self.dealer.started().elapsed();
        let st = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut report = st.report;
        report.elapsed = elapsed;
        report.failures.sort_by_key(|f| (f.case_index, f.invariant));
        report
            .faults
            .sort_by(|a, b| (a.case_index, &a.fault.kind).cmp(&(b.case_index, &b.fault.kind)));
        for rec in &mut report.faults {
            rec.count = st.fault_counts.get(&rec.fault.kind).copied().unwrap_or(1);
        }
        // Saved once the run is over: only the failures kept (with several
        // workers, a later one may have replaced an earlier find).
        for f in &mut report.failures {
            f.saved = save(&self.opts, &f.fixture);
        }
        for f in &mut report.faults {
            f.saved = save(&self.opts, &f.fixture);
        }
        report
    }
}

impl State {
    /// Count one case; which of its failures this worker is to shrink
    /// (those that are, so far, the first of their invariant or kind).
    fn record(
        &mut self,
        index: u64,
        case: &Case,
        result: &CaseResult,
    ) -> (Option<Fault>, Vec<Invariant>) {
        let report = &mut self.report;
        report.coverage.record_case(case);
        report.bytes += result.body;
        report
            .coverage
            .record_result(result.compacted, result.cannot_fit);
        let output = result.answer.as_ref().and_then(|a| a.messages());
        if output.is_some_and(|o| crate::generate::coverage::elided_images(&case.messages, o)) {
            report.coverage.record_elided();
        }
        report.cases += 1;
        tally(&mut report.tally, result);
        let mut fault_claim = None;
        if let Some(fault) = &result.fault {
            *self.fault_counts.entry(fault.kind.clone()).or_default() += 1;
            let first = self
                .first_fault
                .entry(fault.kind.clone())
                .or_insert(u64::MAX);
            if index < *first {
                *first = index;
                fault_claim = Some(fault.clone());
            }
        }
        let mut claims = Vec::new();
        for inv in result.failed() {
            let first = self.first_failure.entry(inv).or_insert(u64::MAX);
            if index < *first {
                *first = index;
                claims.push(inv);
            }
        }
        (fault_claim, claims)
    }
}

fn tally(t: &mut BTreeMap<Invariant, Tally>, result: &CaseResult) {
    for (inv, verdict) in &result.verdicts {
        let e = t.entry(*inv).or_default();
        match verdict {
            Verdict::Pass => e.pass += 1,
            Verdict::Fail(_) => e.fail += 1,
            Verdict::NotApplicable(why) => {
                e.not_applicable += 1;
                *e.reasons
                    .entry(std::borrow::Cow::Borrowed(why))
                    .or_default() += 1;
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

/// Shrink the case of a subject fault to the smallest that still faults
/// the same way, and keep it as a fixture.
fn shrink_fault(
    subject: &mut dyn Subject,
    run: &RunContext<'_>,
    index: u64,
    case: &Case,
    fault: &Fault,
) -> FaultRecord {
    let (opts, checked, deadline) = (run.opts, run.checked, run.deadline);
    let kind = fault.kind.clone();
    // Each attempt at shrinking a hang costs a whole timeout.
    let budget = match kind {
        FaultKind::Timeout | FaultKind::ClosedStdout => 8,
        _ => 60,
    };
    // The fault of the last candidate that reproduced it is the shrunk
    // case's: kept, not asked for again (a hang would cost a timeout).
    let mut last = fault.clone();
    let runs = opts.shrink_runs.min(budget);
    let fixed = opts.config.as_ref();
    let shrunk = shrink_with_budget(case.clone(), runs, deadline, fixed, |c| {
        match run_case(subject, &c.config, &c.messages, checked).fault {
            Some(f) if f.kind == kind => {
                last = f;
                true
            }
            _ => false,
        }
    });
    let fault = last;
    let mut fixture = Fixture::new(
        shrunk.config,
        shrunk.messages,
        checked,
        see(subject.info(), opts, index),
    );
    fixture.name = format!("fault-{}-{}", fault.kind.name(), fixture.name);
    fixture.found = Some(fault.to_string());
    FaultRecord {
        case_index: index,
        fault,
        fixture,
        saved: Saved::NotAsked,
        count: 1,
    }
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
    let (opts, deadline) = (run.opts, run.deadline);
    let only = InvariantSet::from_iter([inv]);
    // A ceiling shrunk below any possible answer makes a true but
    // useless counterexample: "15 bytes over a 1-byte ceiling", or, for
    // any other invariant, a case a correct subject answers cannot_fit,
    // where the invariant no longer applies and the fixture judges
    // nothing. Keep the shrunk case one where a fitting answer exists,
    // if the original was — or if it fails as well under a ceiling
    // that leaves room, for an invariant that is not about the ceiling.
    // The violation of the last case that still failed is the shrunk
    // case's: kept, not asked for again.
    let mut last: Option<Violation> = None;
    let mut fails = |c: &Case, last: &mut Option<Violation>| {
        let r = run_case(subject, &c.config, &c.messages, only);
        let failed = r.fails(inv);
        if failed {
            *last = r.violations().find(|v| v.invariant == inv).cloned();
        }
        failed
    };
    let shrunk = shrink_failing(
        case,
        inv,
        opts.shrink_runs,
        deadline,
        opts.config.as_ref(),
        |c| fails(c, &mut last),
    );
    let found = result.violations().find(|v| v.invariant == inv).cloned();
    let violation = if shrunk == *case {
        found
    } else {
        last.or(found)
    }
    .unwrap_or_else(|| Violation::new(inv, "failed"));
    let mut fixture = Fixture::new(
        shrunk.config,
        shrunk.messages,
        only,
        see(subject.info(), opts, index),
    );
    fixture.found = Some(format!("{}: {}", subject.info().name, violation));
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
    }
}

/// Shrink the failing `case` of `inv` to a minimal one on which `fails`
/// still holds, in at most `runs` evaluations: first under a roomier
/// ceiling when that still fails (see `roomier`; not when the config is
/// `fixed`, which every candidate keeps), and keeping the case one
/// where a fitting answer exists if it started as one. What a failure is
/// shrunk with; `baseline` shrinks a regression with its own predicate.
pub(crate) fn shrink_failing(
    case: &Case,
    inv: Invariant,
    runs: usize,
    deadline: Option<Instant>,
    fixed: Option<&crate::Config>,
    mut fails: impl FnMut(&Case) -> bool,
) -> Case {
    let start = roomier(case, inv)
        .filter(|_| !out_of_time(deadline) && fixed.is_none())
        .filter(|c| fails(c))
        .unwrap_or_else(|| case.clone());
    let keep_fittable = fittable(&start);
    shrink_with_budget(start, runs, deadline, fixed, |c| {
        (!keep_fittable || fittable(c)) && fails(c)
    })
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
pub(crate) fn shrink_with_budget(
    case: Case,
    runs: usize,
    deadline: Option<Instant>,
    fixed: Option<&Config>,
    mut still_fails: impl FnMut(&Case) -> bool,
) -> Case {
    let mut left = runs;
    shrink(case, |c| {
        if left == 0 || out_of_time(deadline) || fixed.is_some_and(|f| c.config != *f) {
            return false;
        }
        left -= 1;
        still_fails(c)
    })
}

pub(crate) fn out_of_time(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
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

pub(crate) fn save(opts: &CheckOptions, fixture: &Fixture) -> Saved {
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
