//! The comparison's workers: each holds a subject and a baseline, takes the
//! next case index, runs both sides on the same case, and records how each
//! invariant's verdicts compare. As in `check`, the same seed gives the
//! same report whatever the number of workers (without `--time`): the
//! regression kept for each invariant and fault kind is that of the lowest
//! case index, shrunk by the worker that found it.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use super::{
    classify, BaselineFault, BaselineReport, Behaviour, Change, FailOn, InvariantDelta, Regression,
    Shared, SubjectFault,
};
use crate::body::body_bytes;
use crate::check::{
    save, shrink_failing, shrink_with_budget, CheckOptions, Deal, Dealer, Failure, FaultRecord,
    Progress, Saved, Tally,
};
use crate::fixture::Fixture;
use crate::generate::Case;
use crate::harness::{run_case, CaseResult};
use crate::oracle::{Invariant, InvariantSet, Verdict, Violation};
use crate::subject::{Fault, FaultKind, Subject, SubjectInfo};

/// Compare `subject` with `baseline`, on this thread.
pub fn run(
    subject: &mut dyn Subject,
    baseline: &mut dyn Subject,
    opts: &CheckOptions,
    fail_on: FailOn,
    on_progress: &mut dyn FnMut(Progress),
) -> BaselineReport {
    let engine = Engine::new(subject.info(), baseline.info(), opts, fail_on);
    engine.work(subject, baseline, Some(on_progress));
    engine.finish()
}

/// Compare with one worker per (subject, baseline) pair, each on a thread
/// of its own (`--jobs`, `--lanes`); pairs beyond the shorter list are not
/// used.
pub fn run_parallel(
    subjects: &mut [Box<dyn Subject + Send>],
    baselines: &mut [Box<dyn Subject + Send>],
    opts: &CheckOptions,
    fail_on: FailOn,
    on_progress: &mut dyn FnMut(Progress),
) -> BaselineReport {
    assert!(
        !subjects.is_empty() && !baselines.is_empty(),
        "a comparison needs a subject and a baseline"
    );
    if subjects.len() == 1 || baselines.len() == 1 {
        return run(
            subjects[0].as_mut(),
            baselines[0].as_mut(),
            opts,
            fail_on,
            on_progress,
        );
    }
    let engine = Engine::new(subjects[0].info(), baselines[0].info(), opts, fail_on);
    crate::check::on_threads(
        subjects.iter_mut().zip(baselines.iter_mut()),
        |(s, b)| engine.work(s.as_mut(), b.as_mut(), None),
        &mut || on_progress(engine.progress()),
    );
    engine.finish()
}

struct Engine {
    subject: SubjectInfo,
    baseline: SubjectInfo,
    fail_on: FailOn,
    opts: CheckOptions,
    /// Checked on the subject.
    checked: InvariantSet,
    /// Of those, what the baseline claims.
    baseline_checked: InvariantSet,
    dealer: Dealer,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    cases: u64,
    baseline_faulted: u64,
    uncompared_failures: u64,
    stopped_by_time: bool,
    invariants: BTreeMap<Invariant, InvariantDelta>,
    first_regression: BTreeMap<Invariant, u64>,
    regressions: BTreeMap<Invariant, Regression>,
    known: BTreeMap<Invariant, Shared>,
    fixes: BTreeMap<Invariant, Shared>,
    first_fault_regression: BTreeMap<FaultKind, u64>,
    fault_regressions: BTreeMap<FaultKind, FaultRecord>,
    /// The first case of each kind, new or shared, and the counts.
    subject_faults: BTreeMap<FaultKind, (u64, Fault, Case, u64, u64)>,
    baseline_faults: BTreeMap<FaultKind, BaselineFault>,
    behaviour: Behaviour,
}

/// What one case gave that a worker is to shrink.
struct Claims {
    fault: Option<Fault>,
    regressions: Vec<(Invariant, bool)>,
}

impl Engine {
    fn new(
        subject: &SubjectInfo,
        baseline: &SubjectInfo,
        opts: &CheckOptions,
        fail_on: FailOn,
    ) -> Self {
        let checked = opts.invariants.intersect(subject.claimed());
        let baseline_checked = checked.intersect(baseline.claimed());
        let mut gen = opts.gen.clone();
        let exact = opts
            .exact_numbers
            .unwrap_or(subject.exact_numbers && baseline.exact_numbers);
        if !exact {
            gen.exotic_numbers_percent = 0;
        }
        // Both sides get the same cases: without images when either takes
        // text only (its hello's `contentParts: false`).
        if !(subject.content_parts && baseline.content_parts) {
            gen = gen.without_images();
        }
        let invariants = checked
            .iter()
            .map(|i| {
                let d = InvariantDelta {
                    baseline: baseline_checked.contains(i).then(Tally::default),
                    ..InvariantDelta::default()
                };
                (i, d)
            })
            .collect();
        Engine {
            subject: subject.clone(),
            baseline: baseline.clone(),
            fail_on,
            opts: CheckOptions {
                gen,
                exact_numbers: Some(exact),
                ..opts.clone()
            },
            checked,
            baseline_checked,
            dealer: Dealer::new(opts),
            state: Mutex::new(State {
                invariants,
                ..State::default()
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn deadline(&self) -> Option<Instant> {
        self.dealer.deadline()
    }

    fn next_index(&self) -> Option<u64> {
        if self.checked.is_empty() {
            return None;
        }
        match self.dealer.next() {
            Deal::Case(index) => Some(index),
            Deal::Done => None,
            Deal::OutOfTime => {
                self.lock().stopped_by_time = true;
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
            done: st.cases,
            total,
            failures: st.first_regression.len(),
            faults: st.first_fault_regression.len(),
        }
    }

    fn work(
        &self,
        subject: &mut dyn Subject,
        baseline: &mut dyn Subject,
        mut on_progress: Option<&mut dyn FnMut(Progress)>,
    ) {
        subject.stop_at(self.deadline());
        baseline.stop_at(self.deadline());
        let stopped = |r: &CaseResult| {
            r.fault
                .as_ref()
                .is_some_and(|f| f.kind == FaultKind::Stopped)
        };
        while let Some(index) = self.next_index() {
            let case = crate::check::case_at(&self.opts, index);
            let s = run_case(subject, &case.config, &case.messages, self.checked);
            let b = if stopped(&s) {
                s.clone()
            } else {
                run_case(
                    baseline,
                    &case.config,
                    &case.messages,
                    self.baseline_checked,
                )
            };
            if stopped(&s) || stopped(&b) {
                self.lock().stopped_by_time = true;
                break; // not judged: the run is over
            }
            let claims = self.lock().record(index, &case, &s, &b);
            if let Some(fault) = claims.fault {
                let rec = self.shrink_fault(subject, baseline, index, &case, fault);
                let mut st = self.lock();
                if st.first_fault_regression.get(&rec.fault.kind) == Some(&index) {
                    st.fault_regressions.insert(rec.fault.kind.clone(), rec);
                }
            }
            for (inv, baseline_held) in claims.regressions {
                let r =
                    self.shrink_regression(subject, baseline, index, &case, &s, inv, baseline_held);
                let mut st = self.lock();
                if st.first_regression.get(&inv) == Some(&index) {
                    st.regressions.insert(inv, r);
                }
            }
            if let Some(p) = on_progress.as_mut() {
                p(self.progress());
            }
        }
    }

    /// Shrink a regression of `inv` on "the baseline does not fail (holds,
    /// if it held on the case), the subject fails".
    #[allow(clippy::too_many_arguments)]
    fn shrink_regression(
        &self,
        subject: &mut dyn Subject,
        baseline: &mut dyn Subject,
        index: u64,
        case: &Case,
        found: &CaseResult,
        inv: Invariant,
        baseline_held: bool,
    ) -> Regression {
        let only = InvariantSet::from_iter([inv]);
        let baseline_checks = self.baseline_checked.contains(inv);
        let mut last: Option<(Violation, String)> = None;
        let mut regresses = |c: &Case| {
            let s = run_case(subject, &c.config, &c.messages, only);
            let Some(v) = s.violations().find(|v| v.invariant == inv).cloned() else {
                return false;
            };
            let said = if baseline_checks {
                let b = run_case(baseline, &c.config, &c.messages, only);
                if b.fault.is_some() {
                    return false;
                }
                match verdict(&b, inv) {
                    Some(Verdict::Pass) => "held".to_owned(),
                    Some(Verdict::NotApplicable(why)) if !baseline_held => {
                        format!("not applicable: {why}")
                    }
                    _ => return false,
                }
            } else {
                "does not check it (not claimed)".to_owned()
            };
            last = Some((v, said));
            true
        };
        let shrunk = shrink_failing(
            case,
            inv,
            self.opts.shrink_runs,
            self.deadline(),
            self.opts.config.as_ref(),
            &mut regresses,
        );
        let (violation, said) = match last.filter(|_| shrunk != *case) {
            Some(l) => l,
            None => (
                found
                    .violations()
                    .find(|v| v.invariant == inv)
                    .cloned()
                    .unwrap_or_else(|| Violation::new(inv, "failed")),
                if !baseline_checks {
                    "does not check it (not claimed)".into()
                } else if baseline_held {
                    "held".into()
                } else {
                    "did not apply".into()
                },
            ),
        };
        let info = subject.info();
        let mut fixture = Fixture::new(
            shrunk.config,
            shrunk.messages,
            only,
            see(self.opts.seed, info, baseline.info(), index),
        );
        fixture.found = Some(format!("{}: {}", info.name, violation));
        Regression {
            failure: Failure {
                invariant: inv,
                case_index: index,
                violation,
                original_size: (
                    case.messages.len(),
                    body_bytes(&case.config, &case.messages),
                ),
                fixture,
                saved: Saved::NotAsked,
            },
            baseline: said,
        }
    }

    /// Shrink a subject fault on "the subject faults this way, the baseline
    /// answers".
    fn shrink_fault(
        &self,
        subject: &mut dyn Subject,
        baseline: &mut dyn Subject,
        index: u64,
        case: &Case,
        fault: Fault,
    ) -> FaultRecord {
        let kind = fault.kind.clone();
        let budget = match kind {
            FaultKind::Timeout | FaultKind::ClosedStdout => 8,
            _ => 60,
        };
        let (checked, baseline_checked) = (self.checked, self.baseline_checked);
        let mut last = fault;
        let shrunk = shrink_with_budget(
            case.clone(),
            self.opts.shrink_runs.min(budget),
            self.deadline(),
            self.opts.config.as_ref(),
            |c| match run_case(subject, &c.config, &c.messages, checked).fault {
                Some(f) if f.kind == kind => {
                    let b = run_case(baseline, &c.config, &c.messages, baseline_checked);
                    if b.fault.is_none() {
                        last = f;
                    }
                    b.fault.is_none()
                }
                _ => false,
            },
        );
        let mut fixture = Fixture::new(
            shrunk.config,
            shrunk.messages,
            checked,
            see(self.opts.seed, subject.info(), baseline.info(), index),
        );
        fixture.name = format!("fault-{}-{}", last.kind.name(), fixture.name);
        fixture.found = Some(last.to_string());
        FaultRecord {
            case_index: index,
            fault: last,
            fixture,
            saved: Saved::NotAsked,
            count: 1,
        }
    }

    fn finish(self) -> BaselineReport {
        let elapsed = self.dealer.started().elapsed();
        let Engine {
            subject,
            baseline,
            fail_on,
            opts,
            checked,
            state,
            ..
        } = self;
        let st = state.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut regressions: Vec<Regression> = st.regressions.into_values().collect();
        regressions.sort_by_key(|r| (r.failure.case_index, r.failure.invariant));
        for r in &mut regressions {
            r.failure.saved = save(&opts, &r.failure.fixture);
        }
        let mut fault_regressions = st.fault_regressions;
        let mut subject_faults: Vec<SubjectFault> = st
            .subject_faults
            .into_iter()
            .map(|(kind, (first, fault, case, new, shared))| {
                let record = match fault_regressions.remove(&kind) {
                    Some(mut rec) => {
                        rec.saved = save(&opts, &rec.fixture);
                        rec
                    }
                    None => FaultRecord {
                        case_index: first,
                        fixture: Fixture::new(
                            case.config,
                            case.messages,
                            checked,
                            see(opts.seed, &subject, &baseline, first),
                        ),
                        fault,
                        saved: Saved::NotAsked,
                        count: 1,
                    },
                };
                SubjectFault {
                    record: FaultRecord {
                        count: new + shared,
                        ..record
                    },
                    new,
                    shared,
                }
            })
            .collect();
        subject_faults.sort_by_key(|f| f.record.case_index);
        let mut baseline_faults: Vec<BaselineFault> = st.baseline_faults.into_values().collect();
        baseline_faults.sort_by_key(|f| f.case_index);
        BaselineReport {
            subject,
            baseline,
            seed: opts.seed,
            shard: opts.shard,
            cases: st.cases,
            baseline_faulted: st.baseline_faulted,
            uncompared_failures: st.uncompared_failures,
            elapsed,
            stopped_by_time: st.stopped_by_time,
            checked,
            invariants: st.invariants,
            regressions,
            known: st.known.into_values().collect(),
            fixes: st.fixes.into_values().collect(),
            subject_faults,
            baseline_faults,
            behaviour: st.behaviour,
            fail_on,
        }
    }
}

fn see(seed: u64, subject: &SubjectInfo, baseline: &SubjectInfo, index: u64) -> String {
    format!(
        "found by `ctxgate check --seed {seed} --baseline …`: fails on {} {}, not on the baseline {} {} (case {index}), shrunk",
        subject.name, subject.version, baseline.name, baseline.version
    )
}

fn verdict(r: &CaseResult, inv: Invariant) -> Option<&Verdict> {
    r.verdicts.iter().find(|(i, _)| *i == inv).map(|(_, v)| v)
}

fn count(t: &mut Tally, v: Option<&Verdict>) {
    match v {
        Some(Verdict::Pass) => t.pass += 1,
        Some(Verdict::Fail(_)) => t.fail += 1,
        Some(Verdict::NotApplicable(why)) => {
            t.not_applicable += 1;
            *t.reasons
                .entry(std::borrow::Cow::Borrowed(why))
                .or_default() += 1;
        }
        None => {}
    }
}

fn first_violation(r: &CaseResult, inv: Invariant) -> Option<Violation> {
    r.violations().find(|v| v.invariant == inv).cloned()
}

impl State {
    /// Count one case; what this worker is to shrink: the subject fault and
    /// the regressions that are, so far, the first of their kind.
    fn record(&mut self, index: u64, case: &Case, s: &CaseResult, b: &CaseResult) -> Claims {
        self.cases += 1;
        let mut claims = Claims {
            fault: None,
            regressions: Vec::new(),
        };
        if let Some(fault) = &b.fault {
            // Not compared: the baseline's fault is reported, never the subject's.
            self.baseline_faulted += 1;
            let e = self
                .baseline_faults
                .entry(fault.kind.clone())
                .or_insert_with(|| BaselineFault {
                    case_index: index,
                    fault: fault.clone(),
                    count: 0,
                });
            e.count += 1;
            if index < e.case_index {
                e.case_index = index;
                e.fault = fault.clone();
            }
            self.uncompared_failures += s.failed().len() as u64;
            if let Some(sf) = &s.fault {
                self.subject_fault(index, case, sf, false);
            }
            return claims;
        }
        if let Some(sf) = &s.fault {
            if self.subject_fault(index, case, sf, true) {
                claims.fault = Some(sf.clone());
            }
        }
        self.behaviour.record(index, case, s, b);
        for (inv, d) in self.invariants.iter_mut() {
            let sv = verdict(s, *inv);
            let bv = d.baseline.as_ref().map(|_| verdict(b, *inv));
            count(&mut d.subject, sv);
            if let (Some(t), Some(v)) = (d.baseline.as_mut(), bv) {
                count(t, v);
            }
            let change = classify(sv, bv);
            if change != Change::NotCompared {
                d.compared += 1;
            }
            match change {
                Change::Regressed => {
                    d.regressed += 1;
                    let first = self.first_regression.entry(*inv).or_insert(u64::MAX);
                    if index < *first {
                        *first = index;
                        claims
                            .regressions
                            .push((*inv, matches!(bv, Some(Some(Verdict::Pass)))));
                    }
                }
                Change::Known | Change::Fixed => {
                    let known = change == Change::Known;
                    if known {
                        d.known += 1;
                    } else {
                        d.fixed += 1;
                    }
                    let map = if known {
                        &mut self.known
                    } else {
                        &mut self.fixes
                    };
                    let shared = Shared {
                        invariant: *inv,
                        case_index: index,
                        count: 0,
                        subject: if known {
                            first_violation(s, *inv)
                        } else {
                            None
                        },
                        baseline: first_violation(b, *inv)
                            .unwrap_or_else(|| Violation::new(*inv, "failed")),
                    };
                    let e = map.entry(*inv).or_insert_with(|| shared.clone());
                    let n = e.count + 1;
                    if index < e.case_index {
                        *e = shared;
                    }
                    e.count = n;
                }
                Change::Held | Change::NotCompared => {}
            }
        }
        claims
    }

    /// Count a subject fault; true when it is new (the baseline answered)
    /// and the first new one of its kind so far.
    fn subject_fault(&mut self, index: u64, case: &Case, fault: &Fault, new: bool) -> bool {
        let e = self
            .subject_faults
            .entry(fault.kind.clone())
            .or_insert_with(|| (index, fault.clone(), case.clone(), 0, 0));
        if new {
            e.3 += 1;
        } else {
            e.4 += 1;
        }
        if index < e.0 {
            *e = (index, fault.clone(), case.clone(), e.3, e.4);
        }
        if !new {
            return false;
        }
        let first = self
            .first_fault_regression
            .entry(fault.kind.clone())
            .or_insert(u64::MAX);
        if index < *first {
            *first = index;
            return true;
        }
        false
    }
}
