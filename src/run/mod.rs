//! The one runner of `check` and `check --baseline`: cases are dealt to
//! workers — one per subject process (`--jobs`, `--lanes`) — and each
//! worker loops: deal an index → make the case → run it on its sides →
//! judge and count → claim the finds that are the first of their kind →
//! shrink them → keep them if they still are. Once every worker is done,
//! the kept finds are saved as fixtures and the report is built.
//!
//! What differs between `check` and the gate is a `Judge`: what a case
//! is run on (one subject, or a subject and its baseline), what is counted,
//! what a find is and how it is shrunk. The loop, the dealing, the time
//! budget, the first-of-kind rule and the shrink budgets exist once, here.
//!
//! The same seed gives the same report whatever the number of workers
//! (without `--time`): every case is judged on its own, and the find kept
//! for each kind is that of the lowest case index.
//!
//! What it does not do: start subjects (the CLI and `testing` do), or
//! render reports (`report`). What a run says on stderr while it runs —
//! its banner, its progress — is [`progress`]'s.

pub mod own_aim;
pub mod progress;
pub mod shape;
pub(crate) mod shrink;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::generate::{case_for_config, case_from_seed, Case, GenConfig};
use crate::model::WireFormats;
use crate::oracle::InvariantSet;
use crate::subject::{Subject, SubjectInfo};

pub use shrink::{save, Saved};

/// What to run.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub cases: u64,
    pub time: Option<Duration>,
    pub seed: u64,
    pub invariants: InvariantSet,
    /// Invariants judged beyond what the subject claims (`--claim`): an
    /// exploration, whose failures fail the run like any other but are
    /// reported as findings beyond the subject's promises. Those it claims
    /// already are checked as claims; those it cannot be judged on
    /// (`SubjectInfo::unjudgeable`) are left out. A check's only: the gate
    /// (`baseline`) judges what both sides claim.
    pub explore: InvariantSet,
    /// How many failures of one invariant are kept (and saved), distinct
    /// by their shrunk shape (`--save-distinct`; `run::shape`): at least 1,
    /// the first failure alone. At most [`shape::classes_to_shrink`] of an
    /// invariant's failures are shrunk to find them.
    pub distinct: usize,
    /// Where failing cases are saved as fixtures.
    pub save: Option<PathBuf>,
    pub gen: GenConfig,
    /// At most this many subject runs while shrinking one failure.
    pub shrink_runs: usize,
    /// Send numbers that stock JSON libraries re-spell or round (`1.50`,
    /// 2^64, `1e400`: `gen.exotic_numbers_percent` of the cases)? `None`:
    /// when the subjects' hellos say `"numbers": "exact"`.
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
    /// The wire formats cases may be measured in (`--wire-format`; all
    /// three by default), narrowed further to those the sides measure.
    pub wire_formats: WireFormats,
    /// A fixture suite replayed before the generated cases
    /// (`--with-suite`): by the whole run, or by its shard 1 alone.
    pub suite: Option<std::sync::Arc<crate::suite::Suite>>,
}

/// The formats of a run whose sides do not all measure every format
/// (their hellos' `wireFormats`, SPEC §6).
#[derive(Debug, Clone, Copy)]
struct Formats {
    /// What every side measures.
    kept: WireFormats,
    /// `--config`'s own format was not among them: it was re-aimed at
    /// the first kept one, and every case counts as re-aimed.
    config_re_aimed: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            cases: 1000,
            time: None,
            seed: 0,
            invariants: InvariantSet::default_run(),
            explore: InvariantSet::empty(),
            distinct: 1,
            save: None,
            gen: GenConfig::default(),
            shrink_runs: 2000,
            exact_numbers: None,
            shard: None,
            config: None,
            source: None,
            wire_formats: WireFormats::ALL,
            suite: None,
        }
    }
}

impl CheckOptions {
    /// The suite this run replays first: none in a shard other than 1.
    pub fn suite_to_run(&self) -> Option<&crate::suite::Suite> {
        let first_shard = self.shard.is_none_or(|s| s.k == 1);
        self.suite.as_deref().filter(|_| first_shard)
    }

    /// How many workers run it: `requested` (`--jobs`), else the machine's
    /// parallelism, but no more than it has cases to give them.
    pub fn workers(&self, requested: Option<usize>) -> usize {
        let jobs = requested
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let cases = usize::try_from(self.run_cases()).unwrap_or(usize::MAX);
        jobs.min(cases.max(1))
    }

    /// How many cases this run has: all of `cases`, or its shard's share.
    pub fn run_cases(&self) -> u64 {
        match self.shard {
            Some(s) => (self.cases + s.n - s.k) / s.n,
            None => self.cases,
        }
    }
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

/// Whether a case's history holds content parts (SPEC §1.4: images, and
/// the text parts beside them).
pub fn holds_parts(case: &Case) -> bool {
    case.messages.iter().any(|m| !m.content.parts().is_empty())
}

/// Case `index` as a subject that takes text only (its hello's
/// `"contentParts": false`, SPEC §6) is sent it: `case` (case `index` of
/// `opts`, drawn with `gen`) when it holds no content parts; a generated
/// one that does, drawn again with `gen` without images (the same index:
/// the same history, its screenshots left out); one from a corpus, none
/// (it is not sent). What `check` sends such a subject, and what `ctxgate
/// gen --text-only` prints.
pub fn text_only(opts: &CheckOptions, gen: &GenConfig, index: u64, case: Case) -> Option<Case> {
    if !holds_parts(&case) {
        return Some(case);
    }
    if opts.source.is_some() {
        return None;
    }
    let opts = CheckOptions {
        gen: gen.without_images(),
        ..opts.clone()
    };
    Some(case_at(&opts, index))
}

/// Which of a seed's cases a run takes: all of `0..cases`, or shard `k`
/// of `n` (1-based): the indices `i` with `i % n == k - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub k: u64,
    pub n: u64,
    /// Case `k - 1` rerun alone (`check --case N`), taken as the last
    /// shard of `n` = N+1 cases: not a shard of a run, and its report
    /// says so (`report merge` refuses it). A shard `K/K` of K cases
    /// (`--shard 3/3 --cases 3`) runs one case too, and is a shard.
    pub one_case: bool,
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
        Ok(Shard {
            k,
            n,
            one_case: false,
        })
    }

    /// Case `index` alone (`check --case N`): shard N+1 of a run of N+1
    /// cases, whose one index is N; `None` when N is too large.
    pub fn alone_case(index: u64) -> Option<Shard> {
        let n = index.checked_add(1).filter(|&n| n < u64::MAX)?;
        Some(Shard {
            k: n,
            n,
            one_case: true,
        })
    }

    /// The one case a [`one_case`](Self::one_case) run reruns.
    pub fn case(self) -> u64 {
        self.k - 1
    }

    /// The `j`-th case index of this shard.
    fn index(self, j: u64) -> u64 {
        j.saturating_mul(self.n).saturating_add(self.k - 1)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// A seed for a run not given one: the clock and the process id, below
/// 10^9 so that it is short to type back.
pub fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    (nanos ^ (std::process::id() as u64).rotate_left(32)) % 1_000_000_000
}

/// Progress, for a bar or a line.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
    pub failures: usize,
    pub faults: usize,
}

/// The first case index of each kind of find (an invariant, a fault
/// kind): the worker that finds an earlier one than any so far claims it
/// and shrinks it; what it shrank is kept only if no worker found an even
/// earlier one meanwhile.
///
/// [`at_most`](Self::at_most) `n` kinds: those whose first cases come
/// first. A kind beyond them is not claimed, and one pushed out by a kind
/// found earlier is no longer first; so, whatever order workers record
/// cases in, the kinds held at the end are the `n` a run in case order
/// would have claimed, each with its first case.
#[derive(Debug, Clone)]
pub(crate) struct FirstOf<K: Ord> {
    first: BTreeMap<K, u64>,
    cap: usize,
}

impl<K: Ord> Default for FirstOf<K> {
    fn default() -> Self {
        FirstOf::at_most(usize::MAX)
    }
}

impl<K: Ord> FirstOf<K> {
    /// Of at most `cap` kinds (at least one).
    pub(crate) fn at_most(cap: usize) -> Self {
        FirstOf {
            first: BTreeMap::new(),
            cap: cap.max(1),
        }
    }

    /// Case `index` found `kind`: true when it is the earliest so far (the
    /// caller is to shrink it).
    pub(crate) fn claim(&mut self, kind: K, index: u64) -> bool {
        if let Some(first) = self.first.get_mut(&kind) {
            let earliest = index < *first;
            if earliest {
                *first = index;
            }
            return earliest;
        }
        if self.first.len() >= self.cap {
            // Full: the kind whose first case comes last makes room for
            // an earlier one, or this one is not claimed.
            let last = self.first.iter().max_by_key(|(_, i)| **i).map(|(_, i)| *i);
            match last {
                Some(last) if index < last => {
                    let mut gone = false;
                    self.first.retain(|_, i| {
                        let out = !gone && *i == last;
                        gone |= out;
                        !out
                    });
                }
                _ => return false,
            }
        }
        self.first.insert(kind, index);
        true
    }

    /// Case `index` is still the earliest of `kind`.
    pub(crate) fn is_first(&self, kind: &K, index: u64) -> bool {
        self.first.get(kind) == Some(&index)
    }

    /// How many kinds were found.
    pub(crate) fn len(&self) -> usize {
        self.first.len()
    }
}

/// What a run's judge does with each case: run it on a worker's sides,
/// count it, say what to shrink, shrink it, keep what shrinking gave.
/// `check` judges one subject; the gate a subject and its baseline.
pub(crate) trait Judge: Sync {
    /// What running one case on every side gave.
    type Result;
    /// A find to shrink: an invariant, a fault kind.
    type Claim;
    /// What shrinking a claim gave: a failure, a regression, a fault.
    type Kept;
    /// The counts and records of the run, under the runner's lock.
    type State: Send;

    /// Nothing is checked (no invariant claimed and asked for): no case
    /// is dealt.
    fn checks_nothing(&self) -> bool;
    /// Run `case` on the worker's sides (`[subject]` or `[subject,
    /// baseline]`).
    fn run(&self, sides: &mut [&mut dyn Subject], case: &Case) -> Self::Result;
    /// The run's time ended inside the case: it is not judged.
    fn stopped(&self, result: &Self::Result) -> bool;
    /// Move case `index` before it is run (onto the subject's own point:
    /// `own_aim`); `None` when it was not tried.
    fn aim(
        &self,
        _sides: &mut [&mut dyn Subject],
        _case: &mut Case,
        _index: u64,
    ) -> Option<own_aim::Aimed> {
        None
    }
    /// Count the case; the finds this worker is to shrink (those that are,
    /// so far, the first of their kind).
    fn record(&self, state: &mut Self::State, dealt: &Dealt<'_, Self::Result>) -> Vec<Self::Claim>;
    /// Shrink one claim to the smallest case that shows it still.
    fn shrink(
        &self,
        sides: &mut [&mut dyn Subject],
        run: &RunContext<'_>,
        dealt: &Dealt<'_, Self::Result>,
        claim: &Self::Claim,
    ) -> Self::Kept;
    /// Keep what shrinking gave, unless a worker found an earlier case of
    /// the claim's kind meanwhile.
    fn keep(&self, state: &mut Self::State, index: u64, claim: Self::Claim, kept: Self::Kept);
    /// Cases counted, and kinds of failure and fault found so far.
    fn progress(&self, state: &Self::State) -> (u64, usize, usize);
}

/// A case as a worker dealt and ran it: its index in the run, the case,
/// and what running it on every side gave.
pub(crate) struct Dealt<'c, R> {
    pub index: u64,
    pub case: &'c Case,
    pub result: &'c R,
}

/// What a judge's shrinking needs to know of the run.
pub(crate) struct RunContext<'o> {
    pub opts: &'o CheckOptions,
    /// The end of `--time`, which bounds shrinking too.
    pub deadline: Option<Instant>,
}

/// A run's shared state: its settled options, the dealer of case indices,
/// and what the case counts under a judge's lock.
pub(crate) struct Runner<J: Judge> {
    pub judge: J,
    /// Options with the numbers and images every side takes settled.
    pub opts: CheckOptions,
    /// Every side takes content parts (its hello's `contentParts`).
    content_parts: bool,
    /// `None` when every side measures every wire format.
    formats: Option<Formats>,
    start: Instant,
    next: AtomicU64,
    state: Mutex<J::State>,
    /// The time ended the run before its cases.
    stopped_by_time: std::sync::atomic::AtomicBool,
    /// Cases with images a side that takes text only was not sent them.
    images_not_sent: AtomicU64,
    /// Cases drawn in a wire format a side does not measure, sent in one
    /// it does.
    formats_re_aimed: AtomicU64,
    /// Cases aimed at the subject's own point, and those that reached it.
    own_aimed: AtomicU64,
    own_on_point: AtomicU64,
}

impl<J: Judge> Runner<J> {
    /// A run of `judge` on sides described by `infos`: numbers are exact
    /// only when every side says so (or `opts` does), and images go only
    /// to sides that take content parts.
    pub(crate) fn new(
        judge: J,
        state: J::State,
        infos: &[&SubjectInfo],
        opts: &CheckOptions,
    ) -> Self {
        let exact = opts
            .exact_numbers
            .unwrap_or(infos.iter().all(|i| i.exact_numbers));
        let mut gen = opts.gen.clone();
        if !exact {
            gen.exotic_numbers_percent = 0;
        }
        let mut config = opts.config.clone();
        let formats = Self::formats(opts.wire_formats, infos, config.as_mut());
        Runner {
            judge,
            opts: CheckOptions {
                gen,
                exact_numbers: Some(exact),
                config,
                ..opts.clone()
            },
            content_parts: infos.iter().all(|i| i.content_parts),
            formats,
            start: Instant::now(),
            next: AtomicU64::new(0),
            state: Mutex::new(state),
            stopped_by_time: Default::default(),
            images_not_sent: AtomicU64::new(0),
            formats_re_aimed: AtomicU64::new(0),
            own_aimed: AtomicU64::new(0),
            own_on_point: AtomicU64::new(0),
        }
    }

    /// The formats of `asked` every side measures, `None` when that is all
    /// three; `config` (`--config`) re-aimed at the first of them when its
    /// own format is not one. When none is left, the first side's (the
    /// subject under test; the CLI refuses such a run).
    fn formats(
        asked: WireFormats,
        infos: &[&SubjectInfo],
        config: Option<&mut Config>,
    ) -> Option<Formats> {
        let mut kept = infos
            .iter()
            .fold(asked, |set, i| set.intersect(i.wire_formats));
        if kept.is_empty() {
            kept = infos.first().map_or(WireFormats::ALL, |i| i.wire_formats);
        }
        if kept.is_all() {
            return None;
        }
        let mut config_re_aimed = false;
        if let Some(c) = config {
            if !kept.contains(c.wire_format) {
                c.wire_format = kept.iter().next().unwrap_or_default();
                config_re_aimed = true;
            }
        }
        Some(Formats {
            kept,
            config_re_aimed,
        })
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, J::State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn deadline(&self) -> Option<Instant> {
        self.opts.time.map(|t| self.start + t)
    }

    /// The next case index of the run (of its shard), until its cases or
    /// its time run out. The time stopped the run only if a case was left
    /// (a last shrink that ends past the deadline cut nothing short).
    fn deal(&self) -> Option<u64> {
        if self.judge.checks_nothing() {
            return None;
        }
        let j = self.next.fetch_add(1, Ordering::Relaxed);
        let index = match self.opts.shard {
            Some(shard) => shard.index(j),
            None => j,
        };
        if index >= self.opts.cases {
            return None;
        }
        if shrink::out_of_time(self.deadline()) {
            self.stopped_by_time.store(true, Ordering::Relaxed);
            return None;
        }
        Some(index)
    }

    /// Case `index`, as the sides may be sent it: to a side that takes
    /// text only (`contentParts: false`), a generated case without its
    /// images, and no case at all for one from a corpus that holds images;
    /// each counted in the report, never silently.
    fn case(&self, index: u64) -> Option<Case> {
        let case = self.case_in_formats(index);
        if self.content_parts || !holds_parts(&case) {
            return Some(case);
        }
        self.images_not_sent.fetch_add(1, Ordering::Relaxed);
        text_only(&self.opts, &self.gen_in_formats(), index, case)
    }

    /// The generator's settings, with only the formats every side measures.
    fn gen_in_formats(&self) -> GenConfig {
        match self.formats {
            Some(f) if self.opts.source.is_none() && self.opts.config.is_none() => {
                self.opts.gen.in_formats(f.kept)
            }
            _ => self.opts.gen.clone(),
        }
    }

    /// Case `index` in a wire format every side measures (SPEC §6
    /// `wireFormats`): a generated case drawn in another format is drawn
    /// again with only theirs (the same history, measured and aimed in a
    /// kept format), a corpus case is measured in a kept format, and under
    /// `--config` re-aimed at a kept format every case is; each counted as
    /// re-aimed in the report, never silently.
    fn case_in_formats(&self, index: u64) -> Case {
        let mut case = case_at(&self.opts, index);
        let Some(formats) = self.formats else {
            return case;
        };
        if let (true, Some(config)) = (formats.config_re_aimed, &self.opts.config) {
            self.formats_re_aimed.fetch_add(1, Ordering::Relaxed);
            case.config.wire_format = config.wire_format; // a corpus case's too
            return case;
        }
        if formats.kept.contains(case.config.wire_format) {
            return case;
        }
        self.formats_re_aimed.fetch_add(1, Ordering::Relaxed);
        if self.opts.source.is_some() || self.opts.config.is_some() {
            let kept: Vec<_> = formats.kept.iter().collect();
            case.config.wire_format = kept[(index % kept.len() as u64) as usize];
            return case;
        }
        let opts = CheckOptions {
            gen: self.gen_in_formats(),
            ..self.opts.clone()
        };
        case_at(&opts, index)
    }

    pub(crate) fn progress(&self) -> Progress {
        let (done, failures, faults) = self.judge.progress(&self.lock());
        Progress {
            done,
            total: self.opts.run_cases(),
            failures,
            faults,
        }
    }

    /// One worker: cases until none is left.
    pub(crate) fn work(
        &self,
        sides: &mut [&mut dyn Subject],
        mut on_progress: Option<&mut dyn FnMut(Progress)>,
    ) {
        let run = RunContext {
            opts: &self.opts,
            deadline: self.deadline(),
        };
        for side in sides.iter_mut() {
            side.stop_at(run.deadline);
        }
        while let Some(index) = self.deal() {
            let Some(mut case) = self.case(index) else {
                continue;
            };
            // A corpus's histories are judged as they are: only generated
            // cases are moved onto the subject's own point.
            let aimed = match self.opts.source {
                None => self.judge.aim(sides, &mut case, index),
                Some(_) => None,
            };
            match aimed {
                Some(own_aim::Aimed::OnPoint) => {
                    self.own_aimed.fetch_add(1, Ordering::Relaxed);
                    self.own_on_point.fetch_add(1, Ordering::Relaxed);
                }
                Some(own_aim::Aimed::Missed) => {
                    self.own_aimed.fetch_add(1, Ordering::Relaxed);
                }
                None => {}
            }
            let result = self.judge.run(sides, &case);
            if self.judge.stopped(&result) {
                self.stopped_by_time.store(true, Ordering::Relaxed);
                break; // not judged: the run is over
            }
            let dealt = Dealt {
                index,
                case: &case,
                result: &result,
            };
            let claims = self.judge.record(&mut self.lock(), &dealt);
            for claim in claims {
                let kept = self.judge.shrink(sides, &run, &dealt, &claim);
                self.judge.keep(&mut self.lock(), index, claim, kept);
            }
            if let Some(p) = on_progress.as_mut() {
                p(self.progress());
            }
        }
    }

    /// Run one worker on each of `workers`, each on a thread of its own.
    pub(crate) fn work_in_parallel<'w>(
        &self,
        workers: Vec<Vec<&'w mut (dyn Subject + Send + 'static)>>,
        on_progress: &mut dyn FnMut(Progress),
    ) {
        on_threads(
            workers.into_iter(),
            |w| {
                let mut sides: Vec<&mut dyn Subject> =
                    w.into_iter().map(|s| s as &mut dyn Subject).collect();
                self.work(&mut sides, None)
            },
            &mut || on_progress(self.progress()),
        );
    }

    /// The run is over: what its judge counted and kept.
    pub(crate) fn finish(self) -> Done<J> {
        Done {
            facts: RunFacts {
                elapsed: self.start.elapsed(),
                stopped_by_time: self.stopped_by_time.into_inner(),
                images_not_sent: self.images_not_sent.into_inner(),
                formats_re_aimed: self.formats_re_aimed.into_inner(),
                own_aimed: self.own_aimed.into_inner(),
                own_on_point: self.own_on_point.into_inner(),
                wire_formats: self.formats.map_or(WireFormats::ALL, |f| f.kept),
                faulted_on_parts: 0,
            },
            state: self.state.into_inner().unwrap_or_else(|e| e.into_inner()),
            judge: self.judge,
            opts: self.opts,
        }
    }
}

/// A run, done: what its judge counted and kept, and its settled options.
pub(crate) struct Done<J: Judge> {
    pub judge: J,
    pub opts: CheckOptions,
    pub state: J::State,
    pub facts: RunFacts,
}

/// What a run as a whole did, beside its verdicts: the same for a check
/// and a gate, written at the top of their JSON reports and joined alike
/// when shards are merged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFacts {
    pub elapsed: Duration,
    /// The time budget ended the run before its cases.
    pub stopped_by_time: bool,
    /// Cases with images that the subject was not sent, because its hello
    /// says it takes text only (`contentParts: false`, SPEC §6): generated
    /// ones went without their images, corpus ones not at all.
    pub images_not_sent: u64,
    /// Cases drawn in a wire format the subject does not measure (its
    /// hello's `wireFormats`, SPEC §6) and sent in one it does: generated
    /// ones drawn again in its formats, corpus ones and a `--config` of
    /// another format measured in its first.
    pub formats_re_aimed: u64,
    /// Cases aimed at the subject's own point (`own_aim`: its estimate on
    /// `compactAt × trigger` or a token either side), and those of them
    /// that reached it.
    pub own_aimed: u64,
    pub own_on_point: u64,
    /// The wire formats the cases were measured in: those of
    /// `--wire-format` (default all three) the subject measures.
    pub wire_formats: WireFormats,
    /// Cases the subject faulted on that held content parts (images) it
    /// was sent without its hello saying `contentParts` (a check's count;
    /// the report names the field that opts out).
    pub faulted_on_parts: u64,
}

impl RunFacts {
    /// Join another shard's facts: counts add up, the longest time stands.
    pub(crate) fn merge(&mut self, other: &RunFacts) -> Result<(), String> {
        add_count(
            &mut self.images_not_sent,
            other.images_not_sent,
            "imageCasesNotSent",
        )?;
        add_count(
            &mut self.formats_re_aimed,
            other.formats_re_aimed,
            "casesReAimedToWireFormats",
        )?;
        add_count(&mut self.own_aimed, other.own_aimed, "casesAimedAtOwnPoint")?;
        add_count(
            &mut self.own_on_point,
            other.own_on_point,
            "casesOnOwnPoint",
        )?;
        add_count(
            &mut self.faulted_on_parts,
            other.faulted_on_parts,
            "faultedCasesWithContentParts",
        )?;
        self.elapsed = self.elapsed.max(other.elapsed);
        self.stopped_by_time |= other.stopped_by_time;
        Ok(())
    }
}

/// A merge's check that two shards checked the same invariants (the
/// keys of their reports' `invariants`).
pub(crate) fn same_invariants<A, B>(
    mine: &std::collections::BTreeMap<crate::oracle::Invariant, A>,
    theirs: &std::collections::BTreeMap<crate::oracle::Invariant, B>,
) -> Result<(), String> {
    let names = |keys: Vec<&crate::oracle::Invariant>| {
        keys.iter().map(|i| i.name()).collect::<Vec<_>>().join(", ")
    };
    let (mine, theirs) = (names(mine.keys().collect()), names(theirs.keys().collect()));
    match mine == theirs {
        true => Ok(()),
        false => Err(format!(
            "it checked {theirs} where the others checked {mine}: the shards of one run check the same invariants (`--invariants`)"
        )),
    }
}

/// `*total += n` for a merge of shards' reports; an error naming `what`
/// when the sum passes 2^64.
pub(crate) fn add_count(total: &mut u64, n: u64, what: &str) -> Result<(), String> {
    *total = total
        .checked_add(n)
        .ok_or_else(|| format!("`{what}` added up passes 2^64"))?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_n_alone_is_the_last_shard_of_n_plus_one_cases() {
        let alone = Shard::alone_case(41).unwrap();
        assert_eq!(
            alone,
            Shard {
                k: 42,
                n: 42,
                one_case: true
            }
        );
        let opts = CheckOptions {
            cases: alone.n,
            shard: Some(alone),
            ..CheckOptions::default()
        };
        assert_eq!(opts.run_cases(), 1);
        assert_eq!(alone.index(0), 41);
        assert!(alone.one_case && alone.case() == 41);
        // The last shard of as many cases runs one case too, as a shard.
        assert!(!Shard::parse("42/42").unwrap().one_case);
        assert_eq!(Shard::alone_case(u64::MAX - 1), None);
        assert_eq!(Shard::alone_case(u64::MAX), None);
    }

    /// The time budget stops a run only when a case was left to deal: a
    /// worker that asks for another case past the deadline once all were
    /// dealt (its last shrink ran long) must not report a cut-short run.
    #[test]
    fn a_deadline_with_no_case_left_stops_nothing() {
        let mut subject = crate::subject::InProcess::reference();
        let opts = |cases| CheckOptions {
            cases,
            time: Some(std::time::Duration::ZERO),
            ..CheckOptions::default()
        };
        let report = crate::check::run(&mut subject, &opts(0), &mut |_| {});
        assert!(!report.run.stopped_by_time);
        assert_eq!(report.not_checked(), ["no case ran"]);
        let cut = crate::check::run(&mut subject, &opts(5), &mut |_| {});
        assert!(cut.run.stopped_by_time);
        assert_eq!(cut.cases, 0);
    }

    /// A bounded `FirstOf` ends holding the kinds whose first cases come
    /// first, each with its first case, whatever order cases are recorded
    /// in (workers record them out of order).
    #[test]
    fn a_bounded_first_of_holds_the_first_kinds_in_any_order() {
        // Case i is of kind i % 7 (kinds 0..7 first seen at cases 0..7).
        let cases: Vec<(u64, u64)> = (0..40).map(|i| (i % 7, i)).collect();
        let held = |order: &[(u64, u64)]| {
            let mut first = FirstOf::at_most(3);
            for &(kind, i) in order {
                first.claim(kind, i);
            }
            (0..7).filter(|k| first.is_first(k, *k)).collect::<Vec<_>>()
        };
        assert_eq!(held(&cases), [0, 1, 2]);
        let mut rng = crate::generate::SplitMix64::new(5);
        for _ in 0..50 {
            let mut shuffled = cases.clone();
            for i in (1..shuffled.len()).rev() {
                shuffled.swap(i, rng.below(i as u64 + 1) as usize);
            }
            assert_eq!(held(&shuffled), [0, 1, 2], "{shuffled:?}");
        }
    }

    #[test]
    fn a_run_has_no_more_workers_than_cases() {
        let opts = |cases, shard| CheckOptions {
            cases,
            shard,
            ..CheckOptions::default()
        };
        assert_eq!(opts(3, None).workers(Some(8)), 3);
        assert_eq!(opts(100, None).workers(Some(8)), 8);
        // Shard 3/4 of 10 cases has 2 of them.
        let shard = Shard::parse("3/4").unwrap();
        assert_eq!(opts(10, Some(shard)).workers(Some(8)), 2);
        assert_eq!(opts(0, None).workers(Some(8)), 1);
        assert!(opts(1000, None).workers(None) >= 1);
    }
}
