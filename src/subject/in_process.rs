//! Subjects that run in this process: the reference, and the mutation
//! suite's defective compactors. A panic is caught and reported as a
//! `crash` fault, as a dying external process would be.

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use super::{CompactAnswer, EstimateAnswer, EstimateReply, Fault, FaultKind, Subject, SubjectInfo};
use crate::config::Config;
use crate::estimate::{Adr0098, Estimator};
use crate::model::Message;
use crate::reference::{CompactError, Reference};

/// A compactor's `compact`, in process.
pub type CompactFn = Box<dyn Fn(&Config, &[Message]) -> CompactAnswer + Send>;
/// A compactor's `estimate`, in process.
pub type EstimateFn = Box<dyn Fn(&Config, &[Message]) -> EstimateAnswer + Send>;

/// A compactor's `compact` that says `None` for a history it hands back
/// unchanged, rather than copying it.
type BorrowingFn = Box<dyn Fn(&Config, &[Message]) -> Option<CompactAnswer> + Send>;

/// A subject made of two functions.
pub struct InProcess {
    info: SubjectInfo,
    compact: Compact,
    estimate: Option<EstimateFn>,
}

enum Compact {
    Owned(CompactFn),
    Borrowing(BorrowingFn),
}

impl InProcess {
    pub fn new(
        info: SubjectInfo,
        compact: impl Fn(&Config, &[Message]) -> CompactAnswer + Send + 'static,
        estimate: Option<EstimateFn>,
    ) -> Self {
        InProcess::with(info, Compact::Owned(Box::new(compact)), estimate)
    }

    fn with(mut info: SubjectInfo, compact: Compact, estimate: Option<EstimateFn>) -> Self {
        info.estimates = estimate.is_some();
        // serde_json with `arbitrary_precision` keeps every number as written.
        info.exact_numbers = true;
        InProcess {
            info,
            compact,
            estimate,
        }
    }

    /// A subject whose `compact` says `None` for a history it hands back
    /// unchanged (see [`Subject::compact_unless_unchanged`]).
    fn borrowing(
        info: SubjectInfo,
        compact: impl Fn(&Config, &[Message]) -> Option<CompactAnswer> + Send + 'static,
        estimate: Option<EstimateFn>,
    ) -> Self {
        InProcess::with(info, Compact::Borrowing(Box::new(compact)), estimate)
    }

    /// Whether it keeps every JSON number exactly as written (see
    /// [`SubjectInfo::exact_numbers`]); [`InProcess::new`] says it does.
    pub fn with_exact_numbers(mut self, exact: bool) -> Self {
        self.info.exact_numbers = exact;
        self
    }

    /// The built-in reference compactor (SPEC §4) with the adr-0098 estimator.
    pub fn reference() -> Self {
        InProcess::borrowing(
            SubjectInfo::new("ctxgate-reference", env!("CARGO_PKG_VERSION")),
            |config, msgs| borrowed_answer(Reference::default().compact_cow(config, msgs)),
            Some(estimator_fn(Adr0098)),
        )
    }

    /// The reference with another estimator (`estimate::by_name`), both to
    /// decide when to compact and to answer `estimate`: how `check`
    /// compares estimator versions (e.g. `safe-classwise` against
    /// `estimate-covers-real-tokens`).
    pub fn reference_with(estimator: Box<dyn Estimator>) -> Self {
        let name = format!("ctxgate-reference+{}", estimator.name());
        let shared: Arc<dyn Estimator> = Arc::from(estimator);
        let for_compact = Arc::clone(&shared);
        InProcess::borrowing(
            SubjectInfo::new(name, env!("CARGO_PKG_VERSION")),
            move |config, msgs| {
                let reference = Reference {
                    estimator: for_compact.as_ref(),
                    ..Reference::default()
                };
                borrowed_answer(reference.compact_cow(config, msgs))
            },
            Some(Box::new(move |config: &Config, msgs: &[Message]| {
                let (per, total) = shared.per_message(msgs, config);
                EstimateAnswer {
                    tokens: total,
                    per_message: Some(per),
                }
            })),
        )
    }
}

/// A protocol answer from the reference's result.
pub fn answer(result: Result<Vec<Message>, CompactError>) -> CompactAnswer {
    match result {
        Ok(msgs) => CompactAnswer::Messages(msgs),
        Err(e @ CompactError::CannotFit { .. }) => CompactAnswer::CannotFit {
            message: e.to_string(),
        },
        Err(CompactError::InvalidInput(e)) => CompactAnswer::InvalidInput {
            message: e.to_string(),
        },
    }
}

/// [`answer`], but `None` for a history handed back unchanged.
fn borrowed_answer(result: Result<Cow<'_, [Message]>, CompactError>) -> Option<CompactAnswer> {
    match result {
        Ok(Cow::Borrowed(_)) => None,
        Ok(Cow::Owned(msgs)) => Some(CompactAnswer::Messages(msgs)),
        Err(e) => Some(answer(Err(e))),
    }
}

/// An `estimate` op from an estimator: total and per-message figures.
pub fn estimator_fn(e: impl Estimator + 'static) -> EstimateFn {
    Box::new(move |config, msgs| {
        let (per, total) = e.per_message(msgs, config);
        EstimateAnswer {
            tokens: total,
            per_message: Some(per),
        }
    })
}

fn caught<T>(f: impl FnOnce() -> T) -> Result<T, Fault> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        Fault::new(FaultKind::Crash, format!("the compactor panicked: {what}"))
    })
}

impl Subject for InProcess {
    fn info(&self) -> &SubjectInfo {
        &self.info
    }

    fn compact(&mut self, config: &Config, msgs: &[Message]) -> Result<CompactAnswer, Fault> {
        match &self.compact {
            Compact::Owned(f) => caught(|| f(config, msgs)),
            Compact::Borrowing(f) => {
                caught(|| f(config, msgs).unwrap_or_else(|| CompactAnswer::Messages(msgs.to_vec())))
            }
        }
    }

    fn compact_unless_unchanged(
        &mut self,
        config: &Config,
        msgs: &[Message],
    ) -> Result<Option<CompactAnswer>, Fault> {
        match &self.compact {
            Compact::Owned(f) => caught(|| Some(f(config, msgs))),
            Compact::Borrowing(f) => caught(|| f(config, msgs)),
        }
    }

    fn estimate(&mut self, config: &Config, msgs: &[Message]) -> Result<EstimateReply, Fault> {
        match &self.estimate {
            Some(f) => caught(|| f(config, msgs)).map(EstimateReply::Tokens),
            None => Err(Fault::new(
                FaultKind::Protocol,
                "the subject does not implement estimate",
            )),
        }
    }
}
