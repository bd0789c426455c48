//! The proptest face of the generators: [`cases`], a strategy whose value
//! tree shrinks with the history-aware shrinker (never by shrinking raw
//! bytes).
//!
//! Values come from [`case_from_seed`] with a seed drawn from the test
//! runner's RNG, so proptest's seed (and `PROPTEST_RNG_SEED`) decides the
//! cases, and a failure found by `ctxgate check` and one found here are the
//! same kind of value.

use proptest::strategy::{NewTree, Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use super::shrink::Shrinker;
use super::{case_from_seed, Case, GenConfig};

/// Cases generated under `g`, shrinking with [`super::shrink_candidates`]'s edits.
pub fn cases(g: GenConfig) -> CaseStrategy {
    CaseStrategy { g }
}

/// See [`cases`].
#[derive(Debug, Clone)]
pub struct CaseStrategy {
    g: GenConfig,
}

impl Strategy for CaseStrategy {
    type Tree = CaseTree;
    type Value = Case;

    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        use proptest::prelude::Rng;
        let seed = runner.rng().next_u64();
        Ok(CaseTree::new(case_from_seed(seed, 0, &self.g)))
    }
}

/// A case and the state of its shrinking.
///
/// proptest's protocol: after `simplify` the runner tests `current()`; if
/// it still fails it calls `simplify` again (the trial is kept), if it
/// passes it calls `complicate` (the trial is dropped and the next
/// candidate tried). `current()` is the last failing case whenever no
/// trial is pending.
pub struct CaseTree {
    shrinker: Shrinker,
    trial: Option<Case>,
}

impl CaseTree {
    pub fn new(case: Case) -> Self {
        CaseTree {
            shrinker: Shrinker::new(case),
            trial: None,
        }
    }

    fn advance(&mut self) -> bool {
        self.trial = self.shrinker.next_candidate();
        self.trial.is_some()
    }
}

impl ValueTree for CaseTree {
    type Value = Case;

    fn current(&self) -> Case {
        self.trial
            .clone()
            .unwrap_or_else(|| self.shrinker.case.clone())
    }

    fn simplify(&mut self) -> bool {
        if let Some(failing) = self.trial.take() {
            self.shrinker.accept(failing);
        }
        self.advance()
    }

    fn complicate(&mut self) -> bool {
        self.trial = None;
        self.advance()
    }
}
