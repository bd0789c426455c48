//! Shrinking a run's finds, within the run's budgets: at most
//! `--shrink-runs` evaluations of a failure's predicate, fewer for a fault
//! (a hang costs a whole timeout an attempt), none once `--time` is spent,
//! and never a candidate off the fixed config (`--config`). Then saving
//! what was kept, as a fixture.

use std::time::Instant;

use super::{CheckOptions, RunContext};
use crate::body::body_bytes;
use crate::config::Config;
use crate::contract::cannot_fit_justified;
use crate::fixture::Fixture;
use crate::generate::{shrink, Case};
use crate::oracle::Invariant;
use crate::subject::FaultKind;

/// Most evaluations shrinking one fault may spend: a hang or a closed
/// stdout costs a whole timeout each.
pub(crate) fn fault_runs(kind: &FaultKind, shrink_runs: usize) -> usize {
    let budget = match kind {
        FaultKind::Timeout | FaultKind::ClosedStdout => 8,
        _ => 60,
    };
    shrink_runs.min(budget)
}

/// Shrink the case of a fault to the smallest on which `faults` still
/// holds.
pub(crate) fn shrink_fault(
    case: &Case,
    kind: &FaultKind,
    run: &RunContext<'_>,
    faults: impl FnMut(&Case) -> bool,
) -> Case {
    let runs = fault_runs(kind, run.opts.shrink_runs);
    shrink_with_budget(case.clone(), run, runs, faults)
}

/// Shrink the failing `case` of `inv` to a minimal one on which `fails`
/// still holds, in at most `--shrink-runs` evaluations: first under a
/// roomier ceiling when that still fails (see `roomier`; not when the
/// config is fixed, which every candidate keeps), and keeping the case one
/// where a fitting answer exists if it started as one.
///
/// A ceiling shrunk below any possible answer makes a true but useless
/// counterexample: "15 bytes over a 1-byte ceiling", or, for any other
/// invariant, a case a correct subject answers cannot_fit, where the
/// invariant no longer applies and the fixture judges nothing.
pub(crate) fn shrink_failing(
    case: &Case,
    inv: Invariant,
    run: &RunContext<'_>,
    mut fails: impl FnMut(&Case) -> bool,
) -> Case {
    let start = roomier(case, inv)
        .filter(|_| !out_of_time(run.deadline) && run.opts.config.is_none())
        .filter(|c| fails(c))
        .unwrap_or_else(|| case.clone());
    let keep_fittable = fittable(&start);
    shrink_with_budget(start, run, run.opts.shrink_runs, |c| {
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
    roomy.config.transport_max_body_bytes = Config::default()
        .transport_max_body_bytes
        .max(2 * body_bytes(&case.config, &case.messages));
    fittable(&roomy).then_some(roomy)
}

/// The smallest output SPEC §4 allows fits under the ceiling.
fn fittable(case: &Case) -> bool {
    !cannot_fit_justified(&case.config, &case.messages)
}

/// Shrink with at most `runs` evaluations of the predicate, none once the
/// run's time budget is spent (`--time` bounds shrinking too), and never a
/// candidate off the run's fixed config (`--config`).
fn shrink_with_budget(
    case: Case,
    run: &RunContext<'_>,
    runs: usize,
    still_fails: impl FnMut(&Case) -> bool,
) -> Case {
    shrink_within(
        case,
        runs,
        run.deadline,
        run.opts.config.as_ref(),
        still_fails,
    )
}

/// Shrink `case` with at most `runs` evaluations of `still_fails`, none
/// past `deadline`, and never a candidate whose config is not `fixed`
/// (when one is): the budget rule of every shrink, `check`'s and agent
/// mode's (which re-runs the agent for each candidate).
pub(crate) fn shrink_within(
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

/// Where a failure's fixture went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// No save folder was given.
    NotAsked,
    /// Saved here.
    At(std::path::PathBuf),
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

/// Save `fixture` where the run saves them (`--save`), saying loudly when
/// it cannot.
pub fn save(opts: &CheckOptions, fixture: &Fixture) -> Saved {
    let Some(dir) = opts.save.as_ref() else {
        return Saved::NotAsked;
    };
    match fixture.save(dir) {
        Ok(saved) => {
            if let Some(note) = saved.note() {
                crate::fixture::say_saved(&note);
            }
            Saved::At(saved.path)
        }
        Err(e) => {
            let why = format!(
                "cannot save fixture {} in {}: {e}",
                fixture.name,
                crate::model::one_line(&dir.display().to_string())
            );
            let line = format!("ctxgate: ERROR: {why}\n");
            use std::io::Write as _;
            let _ = std::io::stderr()
                .lock()
                .write_all(crate::model::text::for_log(&line).as_bytes());
            Saved::Failed(why)
        }
    }
}
