//! `ctxgate compare-estimators` (SPEC §8, issue 14): two or more token
//! estimators side by side on the same inputs — any protocol subject's
//! `estimate` op (SPEC §6), whatever its language, or a built-in
//! (`estimate::NAMES`) — for accuracy against the real tokenizers, the ADR
//! floor, and speed.
//!
//! The flow: [`inputs`] builds the sets (calibrate's generated content
//! classes, the real histories of a corpus, generated ToolLoop histories)
//! with the real cl100k/o200k count of every message; [`drive`] sends every
//! history, and the history with a message appended, to each estimator,
//! timing the passes; [`stats`] turns the answers into figures, judging the
//! floor and monotonicity with `check`'s own oracles; the [`Comparison`]
//! prints as a table (`Display`), markdown, JSON and a picture
//! ([`report`]); [`gate()`] says whether a later estimator is worse than the
//! first.
//!
//! Speed is wall time through the protocol, for a subject as it answers,
//! for a built-in through `ctxgate serve --estimator NAME` (and in process
//! too); `ctxgate serve` with its own cheap estimator answers the same
//! requests, and its time is the protocol's cost — what is left is the
//! estimator's own (its side of the protocol included: a JSON parser
//! slower than serve's shows as the estimator's).
//!
//! What it does not do: compact (only `estimate` is asked), or choose an
//! estimator's `bytesPerToken` (every request carries the same config).

pub mod drive;
pub mod gate;
pub mod inputs;
pub mod report;
pub mod stats;
mod table;

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use gate::{gate, GateFailure};
pub use inputs::{InputOptions, Set, SetKind};
pub use report::{Comparison, EstimatorInfo, SetResult, Speed};
pub use stats::{Example, PerMessage, SetStats};

use crate::calibrate::{resolve_corpus, CalibrateError};
use crate::config::Config;
use crate::estimate;
use crate::subject::{FaultKind, InProcess, ProcessOptions, ProcessSubject, Subject};
use drive::{Lane, LaneKind, PassFailure};

/// The estimators' labels in reports, in command-line order.
pub const LABELS: [&str; 26] = [
    "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R", "S",
    "T", "U", "V", "W", "X", "Y", "Z",
];

/// The default seed of the ToolLoop histories: the check gate's.
pub const DEFAULT_TOOLLOOP_SEED: u64 = 98;
/// Generated ToolLoop histories by default.
pub const DEFAULT_TOOLLOOP_HISTORIES: usize = 100;
/// Passes over the inputs by default; each batch's fastest counts.
pub const DEFAULT_ROUNDS: usize = 3;

/// One estimator to compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EstimatorSpec {
    /// A built-in estimator by name (`estimate::NAMES`).
    Builtin(String),
    /// A protocol subject: the program and its arguments.
    Subject(Vec<String>),
}

impl EstimatorSpec {
    /// How the user gave it: the builtin's name, or the command.
    pub fn shown(&self) -> String {
        match self {
            EstimatorSpec::Builtin(name) => name.clone(),
            EstimatorSpec::Subject(argv) => shell_words::join(argv),
        }
    }
}

/// What to compare, on what.
#[derive(Debug, Clone)]
pub struct Options {
    pub estimators: Vec<EstimatorSpec>,
    /// The real-history folder; `None` looks in calibrate's default places
    /// and skips the real histories when there are none.
    pub corpus: Option<PathBuf>,
    /// The cap on one corpus file, in bytes (`--max-input-bytes`).
    pub max_input_bytes: u64,
    pub inputs: InputOptions,
    /// The `bytesPerToken` every request's config carries.
    pub bytes_per_token: u64,
    /// Passes over the inputs; each batch's fastest round counts (`drive`).
    pub rounds: usize,
    /// Limits of each protocol subject.
    pub process: ProcessOptions,
    /// A command that speaks the protocol as `ctxgate serve` does: the
    /// yardstick of the protocol's own cost and, with `--estimator NAME`
    /// appended, the way built-ins are run through the protocol. `None`:
    /// neither is measured.
    pub serve: Option<Vec<String>>,
}

impl Options {
    /// The defaults for `estimators`: calibrate's samples and seed.
    pub fn new(estimators: Vec<EstimatorSpec>) -> Options {
        Options {
            estimators,
            corpus: None,
            max_input_bytes: crate::input::DEFAULT_MAX_INPUT_BYTES,
            inputs: InputOptions {
                seed: crate::calibrate::DEFAULT_SEED,
                samples_per_class: crate::calibrate::DEFAULT_SAMPLES,
                toolloop_seed: DEFAULT_TOOLLOOP_SEED,
                toolloop_histories: DEFAULT_TOOLLOOP_HISTORIES,
            },
            bytes_per_token: Config::default().bytes_per_token,
            rounds: DEFAULT_ROUNDS,
            process: ProcessOptions::default(),
            serve: None,
        }
    }
}

/// Start the estimators, read and build the inputs, measure, and report.
pub fn compare(options: &Options) -> Result<Comparison, CompareError> {
    let started = Instant::now();
    let n = options.estimators.len();
    if n < 2 {
        return Err(CompareError::TooFewEstimators(n));
    }
    if n > LABELS.len() {
        return Err(CompareError::TooManyEstimators(n));
    }
    for spec in &options.estimators {
        match spec {
            EstimatorSpec::Builtin(name) if estimate::by_name(name).is_none() => {
                return Err(CompareError::UnknownBuiltin(name.clone()))
            }
            EstimatorSpec::Subject(argv) if argv.is_empty() => {
                return Err(CompareError::EmptyCommand)
            }
            _ => {}
        }
    }
    let resolved = resolve_corpus(options.corpus.as_deref(), options.max_input_bytes)
        .map_err(CompareError::Corpus)?;

    let (mut lanes, infos, text_only) = start_lanes(options)?;
    let mut sets = inputs::build(&resolved.histories, &options.inputs);
    // A subject that takes text only is sent no parts (SPEC §6): without
    // it, the images set would not be the same inputs for every estimator.
    let images_skipped = (!text_only.is_empty()
        && sets.iter().any(|s| s.kind == SetKind::Images))
    .then(|| {
        sets.retain(|s| s.kind != SetKind::Images);
        format!(
            "the images set is skipped: {} take(s) text only (its hello says \"contentParts\": false)",
            text_only.join(", ")
        )
    });
    let config = Config {
        bytes_per_token: options.bytes_per_token.max(1),
        ..Config::default()
    };
    let measured = drive::measure(&mut lanes, n, &sets, &config, options.rounds).map_err(|e| {
        let lane = &lanes[e.lane];
        let estimator = match lane.estimator {
            Some(k) => format!("{} ({})", LABELS[k], infos[k].describe()),
            None => "ctxgate serve (the protocol's yardstick)".to_owned(),
        };
        CompareError::Pass {
            estimator,
            set: e.set,
            history: e.history,
            why: e.why,
        }
    })?;

    let time = |kind: LaneKind, k: Option<usize>, s: usize| {
        lanes
            .iter()
            .position(|l| l.kind == kind && l.estimator == k)
            .map(|l| measured.times[l][s])
    };
    let results = sets
        .iter()
        .enumerate()
        .map(|(s, set)| {
            let estimators = (0..n)
                .map(|k| {
                    let stats = SetStats::of(LABELS[k], set, &measured.answers[k][s], &config);
                    let own = time(LaneKind::Own, Some(k), s);
                    let speed = match options.estimators[k] {
                        EstimatorSpec::Subject(_) => Speed {
                            protocol: own,
                            in_process: None,
                        },
                        EstimatorSpec::Builtin(_) => Speed {
                            protocol: time(LaneKind::BuiltinProtocol, Some(k), s),
                            in_process: own,
                        },
                    };
                    (stats, speed)
                })
                .collect();
            SetResult {
                name: set.name.clone(),
                kind: set.kind,
                histories: set.histories.len(),
                messages: set.messages(),
                requests: set.requests(),
                bytes: set.bytes,
                real_tokens: (0..2)
                    .map(|e| {
                        (0..set.histories.len())
                            .map(|i| set.real_tokens(e, i))
                            .sum()
                    })
                    .collect(),
                serve: time(LaneKind::Serve, None, s),
                estimators,
                images: if set.kind == SetKind::Images {
                    set.histories
                        .iter()
                        .flat_map(|h| crate::calibrate::images::figures(h))
                        .collect()
                } else {
                    Vec::new()
                },
            }
        })
        .collect();
    Ok(Comparison {
        estimators: infos,
        corpus: resolved.read,
        images_skipped,
        inputs: options.inputs.clone(),
        bytes_per_token: config.bytes_per_token,
        rounds: options.rounds.max(1),
        serve: options.serve.as_ref().map(shell_words::join),
        sets: results,
        elapsed: started.elapsed(),
    })
}

/// The lanes, what each estimator says of itself, and the subjects
/// (labelled) that take text only.
type Started = (Vec<Lane>, Vec<EstimatorInfo>, Vec<String>);

/// Start every lane; what each estimator says of itself.
fn start_lanes(options: &Options) -> Result<Started, CompareError> {
    let start = |argv: &[String], shown: String| {
        ProcessSubject::start(argv.to_vec(), options.process).map_err(|fault| CompareError::Start {
            command: shown,
            fault: Box::new(fault),
        })
    };
    let mut lanes = Vec::new();
    let mut infos = Vec::new();
    let mut text_only = Vec::new();
    for (k, spec) in options.estimators.iter().enumerate() {
        match spec {
            EstimatorSpec::Subject(argv) => {
                let subject = start(argv, spec.shown())?;
                let info = subject.info();
                if !info.estimates {
                    return Err(CompareError::NoEstimate {
                        command: spec.shown(),
                        name: info.name.clone(),
                        version: info.version.clone(),
                    });
                }
                if !info.content_parts {
                    text_only.push(format!("{} ({})", LABELS[k], info.name));
                }
                infos.push(EstimatorInfo {
                    label: LABELS[k],
                    spec: spec.clone(),
                    name: info.name.clone(),
                    version: info.version.clone(),
                });
                lanes.push(Lane {
                    estimator: Some(k),
                    kind: LaneKind::Own,
                    subject: Box::new(subject),
                });
            }
            EstimatorSpec::Builtin(name) => {
                let e = estimate::by_name(name).expect("checked above");
                infos.push(EstimatorInfo {
                    label: LABELS[k],
                    spec: spec.clone(),
                    name: e.name().to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                });
                lanes.push(Lane {
                    estimator: Some(k),
                    kind: LaneKind::Own,
                    subject: Box::new(InProcess::reference_with(e)),
                });
                if let Some(serve) = &options.serve {
                    let mut argv = serve.clone();
                    argv.extend(["--estimator".to_owned(), name.clone()]);
                    let shown = shell_words::join(&argv);
                    lanes.push(Lane {
                        estimator: Some(k),
                        kind: LaneKind::BuiltinProtocol,
                        subject: Box::new(start(&argv, shown)?),
                    });
                }
            }
        }
    }
    if let Some(serve) = &options.serve {
        lanes.push(Lane {
            estimator: None,
            kind: LaneKind::Serve,
            subject: Box::new(start(serve, shell_words::join(serve))?) as Box<dyn Subject>,
        });
    }
    Ok((lanes, infos, text_only))
}

/// Why a comparison could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum CompareError {
    /// Fewer than two estimators were given.
    TooFewEstimators(usize),
    /// More estimators than there are labels.
    TooManyEstimators(usize),
    /// `--builtin NAME` names no built-in estimator.
    UnknownBuiltin(String),
    /// `--subject ''`.
    EmptyCommand,
    /// The corpus folder is missing, empty or unreadable, or a file in it
    /// is not a history.
    Corpus(CalibrateError),
    /// A subject did not start or its hello failed.
    Start {
        command: String,
        fault: Box<crate::subject::Fault>,
    },
    /// A subject's hello does not list the `estimate` op.
    NoEstimate {
        command: String,
        name: String,
        version: String,
    },
    /// A subject failed during the run: a fault, or `invalid_input` to a
    /// well-formed history.
    Pass {
        estimator: String,
        set: String,
        history: String,
        why: PassFailure,
    },
}

impl CompareError {
    /// Bad usage or bad input (exit 2), as opposed to a subject that
    /// failed (exit 1).
    pub fn is_usage(&self) -> bool {
        match self {
            CompareError::Start { fault, .. } => fault.kind == FaultKind::Spawn,
            CompareError::Pass { .. } => false,
            _ => true,
        }
    }
}

impl fmt::Display for CompareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompareError::TooFewEstimators(n) => write!(
                f,
                "compare-estimators needs at least two estimators (--subject CMD or --builtin NAME), {n} given"
            ),
            CompareError::TooManyEstimators(n) => write!(
                f,
                "compare-estimators compares at most {} estimators, {n} given",
                LABELS.len()
            ),
            CompareError::UnknownBuiltin(name) => write!(
                f,
                "unknown built-in estimator {name:?}; the built-ins are: {}",
                estimate::NAMES.join(", ")
            ),
            CompareError::EmptyCommand => write!(f, "a --subject command is empty"),
            CompareError::Corpus(e) => write!(f, "{e}"),
            CompareError::Start { command, fault } => {
                write!(f, "the subject `{command}` did not start: {fault}")
            }
            CompareError::NoEstimate {
                command,
                name,
                version,
            } => write!(
                f,
                "the subject `{command}` ({name} {version}) does not implement the estimate op: its hello's `ops` lacks \"estimate\", so there is no estimator to compare"
            ),
            CompareError::Pass {
                estimator,
                set,
                history,
                why,
            } => match why {
                PassFailure::Fault(fault) => {
                    write!(f, "{estimator} failed on {set}, {history}: {fault}")
                }
                PassFailure::Refused(message) => write!(
                    f,
                    "{estimator} answered invalid_input to a well-formed history ({set}, {history}): {}",
                    crate::model::one_line(message)
                ),
            },
        }
    }
}

impl std::error::Error for CompareError {}

/// Shorthand for tests and callers: a comparison of built-ins only, with
/// no protocol lanes.
pub fn builtins(names: &[&str]) -> Options {
    Options::new(
        names
            .iter()
            .map(|n| EstimatorSpec::Builtin((*n).to_owned()))
            .collect(),
    )
}

/// Seconds of a duration, for reports.
pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}
