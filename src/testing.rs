//! ctxgate for a compactor written in Rust: a dev-dependency, one value to
//! build, and a property or a fuzz target of a few lines that check *your*
//! compactor with ctxgate's generators and oracles (issue 15).
//!
//! ```
//! use ctxgate::config::Config;
//! use ctxgate::model::Message;
//! use ctxgate::subject::CompactAnswer;
//! use ctxgate::testing::{check_case, Compactor};
//!
//! // A compactor that never compacts: correct until a history is due.
//! fn keep_everything(_config: &Config, messages: &[Message]) -> CompactAnswer {
//!     CompactAnswer::Messages(messages.to_vec())
//! }
//!
//! let mut subject = Compactor::new("keep-everything", "0.1.0", keep_everything).into_subject();
//! let found = (0..50)
//!     .map(|i| ctxgate::generate::case_from_seed(1, i, &Default::default()))
//!     .filter_map(|case| check_case(&mut subject, &case).err())
//!     .next()
//!     .expect("a history that was due");
//! // What failed, and the SPEC §7 fixture that replays it.
//! assert!(found.to_string().contains("progress") || found.to_string().contains("ceiling"));
//! ```
//!
//! In a proptest property, [`cases`] generates and shrinks histories the
//! way `ctxgate check` does, and a [`Counterexample`] (a `std::error::Error`)
//! becomes proptest's failure with `?`:
//!
//! ```ignore
//! proptest! {
//!     #[test]
//!     fn conforms(case in ctxgate::testing::cases()) {
//!         ctxgate::testing::check_case(&mut my_subject(), &case)?;
//!     }
//! }
//! ```
//!
//! In a `cargo fuzz` target, [`fuzz_case`] turns the fuzzer's bytes into a
//! case and panics with the fixture on a violation:
//!
//! ```ignore
//! fuzz_target!(|data: &[u8]| ctxgate::testing::fuzz_case(&mut my_subject(), data));
//! ```
//!
//! And [`check`] is a whole `ctxgate check` run — seeds, shrinking, the
//! rule that a run which checked nothing fails — in process.

use std::fmt;

use crate::check::{CheckOptions, CheckReport};
use crate::config::Config;
use crate::fixture::Fixture;
use crate::generate::{Case, CaseStrategy, GenConfig};
use crate::harness::run_case;
use crate::invariant::{Invariant, InvariantSet};
use crate::model::{Message, WireFormat, WireFormats};
use crate::subject::{
    CompactAnswer, CompactFn, EstimateAnswer, EstimateFn, InProcess, Subject, SubjectInfo,
};

/// A compactor in this process, as a [`Subject`]: its `compact`, and
/// optionally its `estimate` and the invariants it claims. A panic in
/// either is reported as a crash of the subject, with the case.
pub struct Compactor {
    info: SubjectInfo,
    compact: CompactFn,
    estimate: Option<EstimateFn>,
    exact_numbers: bool,
    text_only: bool,
}

impl Compactor {
    /// A compactor named `name` at `version` (as a protocol subject's hello
    /// says), claiming every invariant that applies to `compact`.
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
        compact: impl Fn(&Config, &[Message]) -> CompactAnswer + Send + 'static,
    ) -> Self {
        Compactor {
            info: SubjectInfo::new(name, version),
            compact: Box::new(compact),
            estimate: None,
            exact_numbers: false,
            text_only: false,
        }
    }

    /// Its `estimate` op (tokens in total, and per message if it has them):
    /// the estimate invariants are checked too.
    pub fn with_estimate(
        mut self,
        estimate: impl Fn(&Config, &[Message]) -> EstimateAnswer + Send + 'static,
    ) -> Self {
        self.estimate = Some(Box::new(estimate));
        self
    }

    /// Only these invariants are checked (a trimmer that writes no summary
    /// still claims `single-bounded-summary`: it holds trivially).
    pub fn claiming(mut self, invariants: &[Invariant]) -> Self {
        let mut set = InvariantSet::empty();
        invariants.iter().for_each(|i| set.insert(*i));
        self.info.invariants = Some(set);
        self
    }

    /// It keeps every JSON number exactly as written, in its output and in
    /// the sizes it measures (`1.50` stays `1.50`): then it is sent numbers
    /// that stock JSON libraries re-spell, too. By default it is sent only
    /// numbers every mainstream library writes back unchanged.
    pub fn exact_numbers(mut self) -> Self {
        self.exact_numbers = true;
        self
    }

    /// It compacts at `fraction` of the trigger, by its own estimate (a
    /// protocol subject's hello `compactAt`, SPEC §6): a deliberate safety
    /// margin. `no-premature-compaction` and `progress` judge it against
    /// that point; compacting below it still fails.
    pub fn compacting_at(mut self, fraction: f64) -> Self {
        self.info.compact_at = fraction;
        self
    }

    /// It takes text `content` only (a protocol subject's hello
    /// `contentParts: false`, SPEC §6): it is sent no content parts or
    /// images — [`check`] sends image cases without their images and counts
    /// them, [`check_case`] passes a case that holds parts without running
    /// it.
    pub fn text_only(mut self) -> Self {
        self.text_only = true;
        self
    }

    /// It measures its body in these wire formats only (a protocol
    /// subject's hello `wireFormats`, SPEC §6; default all three): [`check`]
    /// sends cases in these only and counts those it re-aimed,
    /// [`check_case`] passes a case in another format without running it.
    pub fn wire_formats(mut self, formats: &[WireFormat]) -> Self {
        self.info.wire_formats = WireFormats::of(formats);
        self
    }

    /// The [`Subject`] the harness drives.
    pub fn into_subject(self) -> InProcess {
        let mut info = self.info;
        info.content_parts = !self.text_only;
        InProcess::new(info, self.compact, self.estimate).with_exact_numbers(self.exact_numbers)
    }
}

impl From<Compactor> for InProcess {
    fn from(c: Compactor) -> InProcess {
        c.into_subject()
    }
}

/// Cases as `ctxgate check` generates them (the default generator), as a
/// proptest strategy that shrinks them with ctxgate's history-aware
/// shrinker.
pub fn cases() -> CaseStrategy {
    crate::generate::cases(GenConfig::default())
}

/// What a case showed: the invariants that failed or the fault, and the
/// SPEC §7 fixture that replays it (`ctxgate replay FILE`, or a test).
#[derive(Debug, Clone)]
pub struct Counterexample {
    /// One line per violation or fault.
    pub found: Vec<String>,
    /// The case, as a fixture of the invariants that failed.
    pub fixture: Box<Fixture>,
}

impl fmt::Display for Counterexample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.found.join("\n"))?;
        writeln!(
            f,
            "save as {}.json and replay with `ctxgate replay` (fill in `see`):",
            self.fixture.name
        )?;
        let json = serde_json::to_string_pretty(&self.fixture.to_json()).map_err(|_| fmt::Error)?;
        write!(f, "{json}")
    }
}

impl std::error::Error for Counterexample {}

/// Every SPEC §5 invariant the subject claims, on one case: `Ok` when all held
/// (or did not apply), else what failed with its fixture. A case of which
/// nothing could be judged is `Ok` here; [`check`] is the run that fails
/// when nothing was exercised.
pub fn check_case(subject: &mut dyn Subject, case: &Case) -> Result<(), Counterexample> {
    // A subject that takes text only is not sent parts, nor one a format
    // it does not measure (SPEC §6).
    if !subject.info().content_parts && case.messages.iter().any(|m| !m.content.parts().is_empty())
    {
        return Ok(());
    }
    if !subject
        .info()
        .wire_formats
        .contains(case.config.wire_format)
    {
        return Ok(());
    }
    let all = InvariantSet::default_run();
    let result = run_case(subject, &case.config, &case.messages, all);
    if result.ok() {
        return Ok(());
    }
    let mut found: Vec<String> = result.violations().map(|v| v.to_string()).collect();
    found.extend(result.fault.as_ref().map(|f| f.to_string()));
    let failed = result.failed();
    let set = if failed.is_empty() {
        all.intersect(subject.info().claimed())
    } else {
        let mut s = InvariantSet::empty();
        failed.iter().for_each(|i| s.insert(*i));
        s
    };
    let mut fixture = Fixture::new(
        case.config.clone(),
        case.messages.clone(),
        set,
        format!("found in {} by ctxgate::testing", subject.info().name),
    );
    fixture.found = Some(found.join("; "));
    Err(Counterexample {
        found,
        fixture: Box::new(fixture),
    })
}

/// A fuzz target's body: the fuzzer's bytes as a case (bytes that make
/// none are ignored), [`check_case`] on it, and a panic with the
/// counterexample on a violation or a fault.
pub fn fuzz_case(subject: &mut dyn Subject, data: &[u8]) {
    use arbitrary::Arbitrary;
    let mut u = arbitrary::Unstructured::new(data);
    let Ok(case) = Case::arbitrary(&mut u) else {
        return;
    };
    if let Err(c) = check_case(subject, &case) {
        panic!("{} fails on a fuzzed case: {c}", subject.info().name);
    }
}

/// A whole `ctxgate check` run in process: the fixture suite in
/// `opts.suite` first, if any (`report.suite`), then `opts.cases` cases of
/// `opts.seed`, each failure shrunk (and saved when `opts.save` is set).
/// `report.ok()` is false on a failure, a fault, or a run that exercised
/// nothing; the suite's verdict is `report.suite`'s (`SuiteReport::ok`).
pub fn check(subject: &mut dyn Subject, opts: &CheckOptions) -> CheckReport {
    crate::check::run(subject, opts, &mut |_| {})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, mut state: u64) -> Vec<u8> {
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    fn reference_compact(config: &Config, msgs: &[Message]) -> CompactAnswer {
        crate::subject::answer(crate::reference::Reference::default().compact(config, msgs))
    }

    #[test]
    fn a_panicking_compactor_is_a_fault_with_its_fixture() {
        let mut s = Compactor::new(
            "panics",
            "0",
            |_: &Config, _: &[Message]| -> CompactAnswer { panic!("boom") },
        )
        .into_subject();
        let case = crate::generate::case_from_seed(1, 0, &GenConfig::default());
        let c = check_case(&mut s, &case).expect_err("a crash is not a pass");
        assert!(c.found.iter().any(|f| f.contains("boom")), "{:?}", c.found);
        assert_eq!(c.fixture.messages, case.messages);
    }

    #[test]
    fn the_reference_as_a_compactor_holds_and_claims_narrow_the_check() {
        let mut s = Compactor::new("reference", "0", reference_compact)
            .claiming(&[Invariant::ToolPairing])
            .into_subject();
        assert!(!s.info().estimates && !s.info().exact_numbers);
        for i in 0..40 {
            let case = crate::generate::case_from_seed(3, i, &GenConfig::default());
            check_case(&mut s, &case).unwrap();
        }
        let report = check(
            &mut s,
            &CheckOptions {
                cases: 60,
                seed: 3,
                ..CheckOptions::default()
            },
        );
        assert!(report.ok());
        assert_eq!(report.tally.len(), 1, "{:?}", report.tally.keys());
    }

    #[test]
    #[should_panic(expected = "fails on a fuzzed case")]
    fn fuzz_case_panics_with_the_counterexample() {
        let mut s = Compactor::new("drops-everything", "0", |_: &Config, _: &[Message]| {
            CompactAnswer::Messages(Vec::new())
        })
        .into_subject();
        for seed in 1..200 {
            fuzz_case(&mut s, &bytes(4096, seed));
        }
    }
}
