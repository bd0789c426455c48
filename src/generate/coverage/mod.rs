//! Coverage statistics (issue 3, item 7): what a run's cases held, so that
//! a reviewer sees the space explored rather than assumed.
//!
//! [`Coverage::record_case`] measures a case after the fact (content
//! classes are recognised in the text, sizes measured, boundaries computed
//! with the adr-0098 estimator and the exact body size), so it judges any
//! case, generated or loaded. [`Coverage::record_result`] adds what the
//! subject did. Each bin counts the cases that reached it at least once;
//! [`Coverage::missing`] lists the bins no case reached.
//!
//! Here: [`Coverage`], its sums and what they say. The groups and bins are
//! in `bins`; measuring a case and a subject's answer in `record`; the
//! JSON form and the table in `report`.

mod bins;
mod record;
mod report;

use super::anthropic_ready;
use bins::{
    BPT, CEILING, ELIDED_BIN, ENVELOPE, FORMAT, GROUPS, IMAGES, KEEP, RESULTS, SUMMARY, THRESHOLD,
    WINDOW, WINDOW_BY,
};

/// The groups a config decides alone: under `--config` every case has
/// the one value of each, and their other bins are pinned, not missed.
const CONFIG_GROUPS: [usize; 9] = [
    FORMAT, BPT, KEEP, THRESHOLD, CEILING, WINDOW, WINDOW_BY, SUMMARY, ENVELOPE,
];

pub use record::elided_images;

/// What a run's cases covered. See the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    cases: u64,
    ill_formed: u64,
    body_total: u64,
    body_max: u64,
    messages_total: u64,
    at_trigger: u64,
    at_ceiling: u64,
    at_either: u64,
    counts: Vec<Vec<u64>>,
    results: [u64; 3],
    /// Cases the subject gave no answer to (it faulted first): in none of
    /// `results`, which would otherwise count them as unchanged.
    unanswered: u64,
    /// `cannot_fit` answers no invariant of the run judged
    /// (`CaseResult::refusal_judged`): of `results`' cannot_fit.
    unjudged_refusals: u64,
    /// Every case had one config (`--config`): the bins of the groups it
    /// decides ([`CONFIG_GROUPS`]) that no case reached are pinned by it,
    /// not gaps of the generator.
    pinned_by_config: bool,
}

impl Default for Coverage {
    fn default() -> Self {
        Coverage {
            cases: 0,
            ill_formed: 0,
            body_total: 0,
            body_max: 0,
            messages_total: 0,
            at_trigger: 0,
            at_ceiling: 0,
            at_either: 0,
            counts: GROUPS.iter().map(|(_, bins)| vec![0; bins.len()]).collect(),
            results: [0; 3],
            unanswered: 0,
            unjudged_refusals: 0,
            pinned_by_config: false,
        }
    }
}

impl Coverage {
    pub fn new() -> Self {
        Coverage::default()
    }

    /// Number of cases recorded.
    pub fn cases(&self) -> u64 {
        self.cases
    }

    /// How many cases the subject answered `cannot_fit`.
    pub fn cannot_fit(&self) -> u64 {
        self.results[2]
    }

    /// How many of those no invariant of the run judged.
    pub fn unjudged_refusals(&self) -> u64 {
        self.unjudged_refusals.min(self.results[2])
    }

    /// Add another run's coverage (a shard's). Sums saturate: coverage
    /// read back from a report file is not trusted to add up.
    pub fn merge(&mut self, other: &Coverage) {
        let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        add(&mut self.cases, other.cases);
        add(&mut self.ill_formed, other.ill_formed);
        add(&mut self.body_total, other.body_total);
        self.body_max = self.body_max.max(other.body_max);
        add(&mut self.messages_total, other.messages_total);
        add(&mut self.at_trigger, other.at_trigger);
        add(&mut self.at_ceiling, other.at_ceiling);
        add(&mut self.at_either, other.at_either);
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                add(a, *b);
            }
        }
        for (a, b) in self.results.iter_mut().zip(other.results) {
            add(a, b);
        }
        add(&mut self.unanswered, other.unanswered);
        add(&mut self.unjudged_refusals, other.unjudged_refusals);
        self.pinned_by_config |= other.pinned_by_config;
    }

    /// Every case of the run has one config (`--config`): what it decides
    /// is pinned, and the table and [`missing`](Self::missing) say so
    /// rather than call its other values never reached.
    pub fn pin_config(&mut self) {
        self.pinned_by_config = true;
    }

    /// Whether the bins of group `g` are pinned by `--config`.
    fn pinned(&self, g: usize) -> bool {
        self.pinned_by_config && CONFIG_GROUPS.contains(&g)
    }

    /// The groups `--config` pins in this run (none without one).
    pub fn pinned_groups(&self) -> Vec<&'static str> {
        (0..GROUPS.len())
            .filter(|&g| self.pinned(g))
            .map(|g| GROUPS[g].0)
            .collect()
    }

    fn share(&self, n: u64) -> f64 {
        if self.cases == 0 {
            0.0
        } else {
            n as f64 / self.cases as f64
        }
    }

    fn results_total(&self) -> u64 {
        self.results.iter().sum()
    }

    /// Whether a subject was run on the cases: it answered some, or
    /// faulted before answering (`gen --stats` records no results).
    fn subject_ran(&self) -> bool {
        self.results_total() + self.unanswered > 0
    }

    /// Mean body bytes and mean messages per case.
    pub fn means(&self) -> (f64, f64) {
        (self.share(self.body_total), self.share(self.messages_total))
    }

    /// Share of cases whose estimate is within ±1 token of the trigger,
    /// whose body is within ±1 byte of the ceiling, and either.
    pub fn boundary_shares(&self) -> (f64, f64, f64) {
        (
            self.share(self.at_trigger),
            self.share(self.at_ceiling),
            self.share(self.at_either),
        )
    }

    /// Number of cases in bin `label` of group `group` (None if no such bin).
    pub fn count(&self, group: &str, label: &str) -> Option<u64> {
        let g = GROUPS.iter().position(|(name, _)| *name == group)?;
        let b = GROUPS[g].1.iter().position(|l| *l == label)?;
        Some(self.counts[g][b])
    }

    /// The bins no case reached, as `"group: bin"`. The `anthropic` format
    /// counts only once it is implemented; results only once recorded; the
    /// groups `--config` pins not at all ([`pinned_groups`](Self::pinned_groups)).
    pub fn missing(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (g, (name, bins)) in GROUPS.iter().enumerate() {
            if self.pinned(g) {
                continue;
            }
            for (b, label) in bins.iter().enumerate() {
                if g == FORMAT && b == 2 && !anthropic_ready() {
                    continue;
                }
                // What the subject did, only once a subject was run.
                if g == IMAGES && b == ELIDED_BIN && !self.subject_ran() {
                    continue;
                }
                if self.counts[g][b] == 0 {
                    out.push(format!("{name}: {label}"));
                }
            }
        }
        if self.subject_ran() {
            for (k, label) in RESULTS.iter().enumerate() {
                if self.results[k] == 0 {
                    out.push(format!("result: {label}"));
                }
            }
        }
        out
    }
}
