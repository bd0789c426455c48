//! Driving the estimators: every estimate request of every set, through
//! each *lane* — an estimator as it answers (a protocol subject, or a
//! built-in in process), a built-in through the protocol (`ctxgate serve
//! --estimator NAME`), and `ctxgate serve` itself, whose time on the same
//! requests is the protocol's own cost.
//!
//! Each pass over a set sends, per history, an estimate of the history and
//! one of the history with a message appended, pipelined a few histories at
//! a time ([`Subject::batch`]). Passes are repeated `rounds` times, lanes
//! taking turns within a set so that a noisy moment is shared; a lane's
//! time on a set is the sum, over its batches, of each batch's fastest
//! round — a moment of load on a shared machine costs the batches it hit
//! in one round, not the whole pass. The answers of the first pass of an
//! estimator's own lane are what its accuracy is judged on.

use std::time::{Duration, Instant};

use super::inputs::Set;
use crate::config::Config;
use crate::subject::{EstimateAnswer, EstimateReply, Fault, Reply, Request, Subject};

/// Histories per pipelined batch (two requests each). Enough to keep a
/// subject busy; few enough that finding the histories a batch shares
/// (`ProcessSubject`'s JSON reuse) stays cheap.
const BATCH_HISTORIES: usize = 16;

/// What a lane is to the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneKind {
    /// The estimator's own answers: a subject through the protocol, or a
    /// built-in in process.
    Own,
    /// A built-in through the protocol (`ctxgate serve --estimator NAME`).
    BuiltinProtocol,
    /// `ctxgate serve` with its adr-0098 estimator: the protocol's cost.
    Serve,
}

/// One way of asking for estimates.
pub struct Lane {
    /// The estimator's index (`None` for [`LaneKind::Serve`]).
    pub estimator: Option<usize>,
    pub kind: LaneKind,
    pub subject: Box<dyn Subject>,
}

/// Per history: the estimate of it and of it with a message appended.
pub type SetAnswers = Vec<(EstimateAnswer, EstimateAnswer)>;

/// What measuring gave: per lane, per set, the time (Σ of each batch's
/// fastest round); per estimator, per set, the answers of its own lane.
pub struct Measured {
    pub times: Vec<Vec<Duration>>,
    pub answers: Vec<Vec<SetAnswers>>,
}

/// A pass that did not finish: the history it was on and why.
#[derive(Debug)]
pub struct PassError {
    /// The lane's index.
    pub lane: usize,
    pub set: String,
    pub history: String,
    pub why: PassFailure,
}

#[derive(Debug)]
pub enum PassFailure {
    Fault(Box<Fault>),
    /// `invalid_input` to a well-formed history.
    Refused(String),
}

/// Every lane over every set, `rounds` times.
pub fn measure(
    lanes: &mut [Lane],
    estimators: usize,
    sets: &[Set],
    config: &Config,
    rounds: usize,
) -> Result<Measured, PassError> {
    // Per lane, per set, per batch: the fastest round so far.
    let mut best: Vec<Vec<Vec<Duration>>> = vec![Vec::new(); lanes.len()];
    let mut answers: Vec<Vec<SetAnswers>> = vec![Vec::new(); estimators];
    for round in 0..rounds.max(1) {
        for (s, set) in sets.iter().enumerate() {
            for (l, lane) in lanes.iter_mut().enumerate() {
                let keep = round == 0 && lane.kind == LaneKind::Own;
                let (got, took) =
                    pass(lane.subject.as_mut(), config, set, keep).map_err(|(history, why)| {
                        PassError {
                            lane: l,
                            set: set.name.clone(),
                            history: set.labels[history].clone(),
                            why,
                        }
                    })?;
                if round == 0 {
                    best[l].push(took);
                } else {
                    for (b, t) in best[l][s].iter_mut().zip(took) {
                        *b = (*b).min(t);
                    }
                }
                if let (true, Some(e)) = (keep, lane.estimator) {
                    answers[e].push(got);
                }
            }
        }
    }
    let times = best
        .into_iter()
        .map(|sets| sets.into_iter().map(|b| b.into_iter().sum()).collect())
        .collect();
    Ok(Measured { times, answers })
}

/// One pass over a set: its answers (when kept) and each batch's wall time.
fn pass(
    subject: &mut dyn Subject,
    config: &Config,
    set: &Set,
    keep: bool,
) -> Result<(SetAnswers, Vec<Duration>), (usize, PassFailure)> {
    let mut out = Vec::with_capacity(if keep { set.histories.len() } else { 0 });
    let mut took = Vec::with_capacity(set.histories.len().div_ceil(BATCH_HISTORIES));
    let n = set.histories.len();
    let mut requests = Vec::with_capacity(2 * BATCH_HISTORIES);
    for start in (0..n).step_by(BATCH_HISTORIES) {
        let end = (start + BATCH_HISTORIES).min(n);
        requests.clear();
        for i in start..end {
            requests.push(Request::Estimate(config, &set.histories[i]));
            requests.push(Request::Estimate(config, &set.longer[i]));
        }
        let began = Instant::now();
        let replies = subject
            .batch(&requests)
            .map_err(|f| (start, PassFailure::Fault(Box::new(f))))?;
        took.push(began.elapsed());
        let mut replies = replies.into_iter();
        for i in start..end {
            let mut next = || match replies.next().and_then(Reply::into_estimate) {
                Some(EstimateReply::Tokens(a)) => Ok(a),
                Some(EstimateReply::InvalidInput { message }) => {
                    Err((i, PassFailure::Refused(message)))
                }
                None => Err((
                    i,
                    PassFailure::Fault(Box::new(Fault::new(
                        crate::subject::FaultKind::Protocol,
                        "fewer estimate answers than requests",
                    ))),
                )),
            };
            let (a, b) = (next()?, next()?);
            // One figure per message of the request (docs/protocol.md), as
            // `check` holds it to: another count is a malformed answer.
            for (answer, msgs) in [(&a, &set.histories[i]), (&b, &set.longer[i])] {
                if let Some(per) = answer
                    .per_message
                    .as_ref()
                    .filter(|p| p.len() != msgs.len())
                {
                    return Err((
                        i,
                        PassFailure::Fault(Box::new(Fault::new(
                            crate::subject::FaultKind::Protocol,
                            format!(
                                "estimate answer: `perMessage` has {} figures for {} messages (one per message of the request)",
                                per.len(),
                                msgs.len()
                            ),
                        ))),
                    ));
                }
            }
            if keep {
                out.push((a, b));
            }
        }
    }
    Ok((out, took))
}
