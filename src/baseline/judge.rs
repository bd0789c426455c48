//! The gate's judge (`run::Judge`): each worker holds a subject and a
//! baseline, and each case is run on both; each invariant's verdicts are
//! compared ([`classify`]). A find is a regression (of an invariant, or a
//! fault kind the baseline does not share), shrunk on "the baseline does
//! not fail, the subject fails". The runner deals, times and keeps the
//! first of each kind, as for `check`.

use std::collections::BTreeMap;

use super::suite::SuiteGate;
use super::{
    classify, BaselineFault, BaselineReport, Behaviour, Change, FailOn, InvariantDelta, Regression,
    Shared, SubjectFault,
};
use crate::check::{fault_record, save, CheckOptions, Failure, FaultRecord, Progress, Tally};
use crate::fixture::Fixture;
use crate::generate::Case;
use crate::harness::{run_case, CaseResult};
use crate::oracle::{Invariant, InvariantSet, Verdict, Violation};
use crate::run::shrink::{shrink_failing, shrink_fault};
use crate::run::{Dealt, FirstOf, Judge, RunContext, Runner};
use crate::subject::{CompactAnswer, Fault, FaultKind, Subject, SubjectInfo};

/// Compare `subject` with `baseline`, on this thread.
pub fn run(
    subject: &mut dyn Subject,
    baseline: &mut dyn Subject,
    opts: &CheckOptions,
    fail_on: FailOn,
    on_progress: &mut dyn FnMut(Progress),
) -> BaselineReport {
    let suite = both_sides(opts, &mut *subject, &mut *baseline);
    let runner = Pair::runner(subject.info(), baseline.info(), opts, fail_on);
    runner.work(&mut [subject, baseline], Some(on_progress));
    BaselineReport {
        suite,
        ..Pair::finish(runner)
    }
}

/// The run's suite, replayed on both sides, fixture by fixture.
fn both_sides(
    opts: &CheckOptions,
    subject: &mut dyn Subject,
    baseline: &mut dyn Subject,
) -> Option<SuiteGate> {
    let suite = opts.suite_to_run()?;
    let none = crate::oracle::InvariantSet::empty();
    let gate = SuiteGate::new(suite.run(subject, none), suite.run(baseline, none));
    Some(gate.expect("both sides ran the same fixtures"))
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
    let suite = both_sides(opts, subjects[0].as_mut(), baselines[0].as_mut());
    let runner = Pair::runner(subjects[0].info(), baselines[0].info(), opts, fail_on);
    runner.work_in_parallel(
        subjects
            .iter_mut()
            .zip(baselines.iter_mut())
            .map(|(s, b)| vec![s.as_mut(), b.as_mut()])
            .collect(),
        on_progress,
    );
    BaselineReport {
        suite,
        ..Pair::finish(runner)
    }
}

/// The judge of a gate: the subject's invariants, and of those the ones
/// the baseline claims.
struct Pair {
    subject: SubjectInfo,
    baseline: SubjectInfo,
    fail_on: FailOn,
    /// Checked on the subject.
    checked: InvariantSet,
    /// Of those, what the baseline claims.
    baseline_checked: InvariantSet,
}

/// A subject fault kind as the gate counts it: its first case, and how
/// many cases were new (the baseline answered) or shared (it faulted too).
struct FaultCount {
    first: u64,
    fault: Fault,
    case: Case,
    new: u64,
    shared: u64,
}

/// What a gate counts while it runs.
#[derive(Default)]
struct PairState {
    cases: u64,
    baseline_faulted: u64,
    uncompared_failures: u64,
    invariants: BTreeMap<Invariant, InvariantDelta>,
    first_regression: FirstOf<Invariant>,
    regressions: BTreeMap<Invariant, Regression>,
    known: BTreeMap<Invariant, Shared>,
    fixes: BTreeMap<Invariant, Shared>,
    first_fault_regression: FirstOf<FaultKind>,
    fault_regressions: BTreeMap<FaultKind, FaultRecord>,
    subject_faults: BTreeMap<FaultKind, FaultCount>,
    baseline_faults: BTreeMap<FaultKind, BaselineFault>,
    behaviour: Behaviour,
}

/// A gate's find: a fault new in the subject, or a regressed invariant
/// (and whether the baseline held it on the case, rather than not apply).
enum Find {
    Fault(Fault),
    Regression { inv: Invariant, baseline_held: bool },
}

enum Shrunk {
    Fault(FaultRecord),
    Regression(Regression),
}

impl Pair {
    fn runner(
        subject: &SubjectInfo,
        baseline: &SubjectInfo,
        opts: &CheckOptions,
        fail_on: FailOn,
    ) -> Runner<Pair> {
        let checked = opts.invariants.intersect(subject.claimed());
        let baseline_checked = checked.intersect(baseline.claimed());
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
        let judge = Pair {
            subject: subject.clone(),
            baseline: baseline.clone(),
            fail_on,
            checked,
            baseline_checked,
        };
        let state = PairState {
            invariants,
            ..PairState::default()
        };
        Runner::new(judge, state, &[subject, baseline], opts)
    }

    fn finish(runner: Runner<Pair>) -> BaselineReport {
        let done = runner.finish();
        let (judge, opts, st) = (done.judge, done.opts, done.state);
        let mut regressions: Vec<Regression> = st.regressions.into_values().collect();
        regressions.sort_by_key(|r| (r.failure.case_index, r.failure.invariant));
        for r in &mut regressions {
            r.failure.saved = save(&opts, &r.failure.fixture);
        }
        let mut fault_regressions = st.fault_regressions;
        let mut subject_faults: Vec<SubjectFault> = st
            .subject_faults
            .into_iter()
            .map(|(kind, c)| {
                let record = match fault_regressions.remove(&kind) {
                    Some(mut rec) => {
                        rec.saved = save(&opts, &rec.fixture);
                        rec
                    }
                    None => FaultRecord {
                        case_index: c.first,
                        fixture: Fixture::new(
                            c.case.config,
                            c.case.messages,
                            judge.checked,
                            see(opts.seed, &judge.subject, &judge.baseline, c.first),
                        ),
                        fault: c.fault,
                        saved: crate::check::Saved::NotAsked,
                        count: 1,
                    },
                };
                SubjectFault {
                    record: FaultRecord {
                        count: c.new + c.shared,
                        ..record
                    },
                    new: c.new,
                    shared: c.shared,
                }
            })
            .collect();
        subject_faults.sort_by_key(|f| f.record.case_index);
        let mut baseline_faults: Vec<BaselineFault> = st.baseline_faults.into_values().collect();
        baseline_faults.sort_by_key(|f| f.case_index);
        BaselineReport {
            subject: judge.subject,
            baseline: judge.baseline,
            seed: opts.seed,
            shard: opts.shard,
            cases: st.cases,
            baseline_faulted: st.baseline_faulted,
            uncompared_failures: st.uncompared_failures,
            run: done.facts,
            checked: judge.checked,
            invariants: st.invariants,
            regressions,
            known: st.known.into_values().collect(),
            fixes: st.fixes.into_values().collect(),
            subject_faults,
            baseline_faults,
            behaviour: st.behaviour,
            fail_on: judge.fail_on,
            suite: None,
        }
    }
}

fn stopped(r: &CaseResult) -> bool {
    r.fault
        .as_ref()
        .is_some_and(|f| f.kind == FaultKind::Stopped)
}

impl Judge for Pair {
    type Result = (CaseResult, CaseResult);
    type Claim = Find;
    type Kept = Shrunk;
    type State = PairState;

    fn checks_nothing(&self) -> bool {
        self.checked.is_empty()
    }

    fn run(&self, sides: &mut [&mut dyn Subject], case: &Case) -> (CaseResult, CaseResult) {
        let s = run_case(&mut *sides[0], &case.config, &case.messages, self.checked);
        let b = if stopped(&s) {
            s.clone()
        } else {
            run_case(
                &mut *sides[1],
                &case.config,
                &case.messages,
                self.baseline_checked,
            )
        };
        (s, b)
    }

    fn stopped(&self, (s, b): &(CaseResult, CaseResult)) -> bool {
        stopped(s) || stopped(b)
    }

    fn record(&self, st: &mut PairState, dealt: &Dealt<'_, (CaseResult, CaseResult)>) -> Vec<Find> {
        let (s, b) = dealt.result;
        st.record(dealt.index, dealt.case, s, b)
    }

    fn shrink(
        &self,
        sides: &mut [&mut dyn Subject],
        run: &RunContext<'_>,
        dealt: &Dealt<'_, (CaseResult, CaseResult)>,
        find: &Find,
    ) -> Shrunk {
        let [subject, baseline] = sides else {
            unreachable!("a gate's worker has a subject and a baseline")
        };
        let (s, b) = (&mut **subject, &mut **baseline);
        match find {
            Find::Fault(fault) => Shrunk::Fault(self.shrink_fault(s, b, run, dealt, fault)),
            Find::Regression { inv, baseline_held } => {
                Shrunk::Regression(self.shrink_regression(s, b, run, dealt, *inv, *baseline_held))
            }
        }
    }

    fn keep(&self, st: &mut PairState, index: u64, find: Find, shrunk: Shrunk) {
        match (find, shrunk) {
            (Find::Fault(f), Shrunk::Fault(rec))
                if st.first_fault_regression.is_first(&f.kind, index) =>
            {
                st.fault_regressions.insert(f.kind, rec);
            }
            (Find::Regression { inv, .. }, Shrunk::Regression(r))
                if st.first_regression.is_first(&inv, index) =>
            {
                st.regressions.insert(inv, r);
            }
            _ => {}
        }
    }

    fn progress(&self, st: &PairState) -> (u64, usize, usize) {
        (
            st.cases,
            st.first_regression.len(),
            st.first_fault_regression.len(),
        )
    }
}

impl Pair {
    /// Shrink a regression of `inv` on "the baseline does not fail (holds,
    /// if it held on the case), the subject fails".
    fn shrink_regression(
        &self,
        subject: &mut dyn Subject,
        baseline: &mut dyn Subject,
        run: &RunContext<'_>,
        dealt: &Dealt<'_, (CaseResult, CaseResult)>,
        inv: Invariant,
        baseline_held: bool,
    ) -> Regression {
        let (index, case, (found, _)) = (dealt.index, dealt.case, dealt.result);
        let only = InvariantSet::from_iter([inv]);
        let baseline_checks = self.baseline_checked.contains(inv);
        let mut last: Option<(Violation, String, Option<CompactAnswer>)> = None;
        let mut regresses = |c: &Case| {
            let mut s = run_case(subject, &c.config, &c.messages, only);
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
            last = Some((v, said, s.answer.take()));
            true
        };
        let shrunk = shrink_failing(case, inv, run, &mut regresses);
        let (violation, said, answer) = match last.filter(|_| shrunk != *case) {
            Some(l) => l,
            None => (
                first_violation(found, inv).unwrap_or_else(|| Violation::new(inv, "failed")),
                if !baseline_checks {
                    "does not check it (not claimed)".into()
                } else if baseline_held {
                    "held".into()
                } else {
                    "did not apply".into()
                },
                found.answer.clone(),
            ),
        };
        let see = see(run.opts.seed, &self.subject, &self.baseline, index);
        let mut failure = Failure::of(inv, index, violation, case, shrunk, see, &self.subject);
        failure.answer = answer;
        Regression {
            failure,
            baseline: said,
        }
    }

    /// Shrink a subject fault on "the subject faults this way, the baseline
    /// answers".
    fn shrink_fault(
        &self,
        subject: &mut dyn Subject,
        baseline: &mut dyn Subject,
        run: &RunContext<'_>,
        dealt: &Dealt<'_, (CaseResult, CaseResult)>,
        fault: &Fault,
    ) -> FaultRecord {
        let (index, case) = (dealt.index, dealt.case);
        let kind = fault.kind.clone();
        let (checked, baseline_checked) = (self.checked, self.baseline_checked);
        let mut last = fault.clone();
        let shrunk = shrink_fault(case, &kind, run, |c| {
            match run_case(subject, &c.config, &c.messages, checked).fault {
                Some(f) if f.kind == kind => {
                    let b = run_case(baseline, &c.config, &c.messages, baseline_checked);
                    if b.fault.is_none() {
                        last = f;
                    }
                    b.fault.is_none()
                }
                _ => false,
            }
        });
        let see = see(run.opts.seed, &self.subject, &self.baseline, index);
        fault_record(shrunk, checked, see, index, last)
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

fn first_violation(r: &CaseResult, inv: Invariant) -> Option<Violation> {
    r.violations().find(|v| v.invariant == inv).cloned()
}

impl PairState {
    /// Count one case; the finds this worker is to shrink: the subject
    /// fault and the regressions that are, so far, the first of their kind.
    fn record(&mut self, index: u64, case: &Case, s: &CaseResult, b: &CaseResult) -> Vec<Find> {
        self.cases += 1;
        let mut finds = Vec::new();
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
            return finds;
        }
        if let Some(sf) = &s.fault {
            if self.subject_fault(index, case, sf, true) {
                finds.push(Find::Fault(sf.clone()));
            }
        }
        self.behaviour.record(index, case, s, b);
        for (inv, d) in self.invariants.iter_mut() {
            let sv = verdict(s, *inv);
            let bv = d.baseline.as_ref().map(|_| verdict(b, *inv));
            d.subject.count(sv);
            if let (Some(t), Some(v)) = (d.baseline.as_mut(), bv) {
                t.count(v);
            }
            let change = classify(sv, bv);
            if change != Change::NotCompared {
                d.compared += 1;
            }
            match change {
                Change::Regressed => {
                    d.regressed += 1;
                    if self.first_regression.claim(*inv, index) {
                        finds.push(Find::Regression {
                            inv: *inv,
                            baseline_held: matches!(bv, Some(Some(Verdict::Pass))),
                        });
                    }
                }
                Change::Known | Change::Fixed => {
                    let known = change == Change::Known;
                    let map = if known {
                        d.known += 1;
                        &mut self.known
                    } else {
                        d.fixed += 1;
                        &mut self.fixes
                    };
                    let shared = Shared {
                        invariant: *inv,
                        case_index: index,
                        count: 0,
                        subject: known.then(|| first_violation(s, *inv)).flatten(),
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
        finds
    }

    /// Count a subject fault; true when it is new (the baseline answered)
    /// and the first new one of its kind so far.
    fn subject_fault(&mut self, index: u64, case: &Case, fault: &Fault, new: bool) -> bool {
        let e = self
            .subject_faults
            .entry(fault.kind.clone())
            .or_insert_with(|| FaultCount {
                first: index,
                fault: fault.clone(),
                case: case.clone(),
                new: 0,
                shared: 0,
            });
        if new {
            e.new += 1;
        } else {
            e.shared += 1;
        }
        if index < e.first {
            (e.first, e.fault, e.case) = (index, fault.clone(), case.clone());
        }
        new && self.first_fault_regression.claim(fault.kind.clone(), index)
    }
}
