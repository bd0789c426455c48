//! Calibration (SPEC §8 `ctxgate calibrate`, issue 7): how far each
//! estimator is from the real BPE tokenizers, per content class and over
//! real agent histories — the accuracy side of comparing estimator
//! versions, where benchmarks give the speed side.
//!
//! The flow: [`samples`] writes deterministic texts per content class,
//! [`corpus`] reads the real histories from a folder at run time, and
//! [`calibrate`] counts real tokens (`estimate::tokenizer`, tiktoken-rs) and each
//! estimator's estimate on every sample, into a [`Report`]: a table
//! (`Display`), JSON ([`Report::to_json`]) and an SVG picture ([`plot`]).
//! The invariant `estimate-covers-real-tokens` is `oracle::real_tokens`.
//!
//! Estimates and real counts cover the same parts — each message's content
//! plus the JSON of its `toolCalls` — so they compare like for like.
//!
//! The module exists with the `calibrate` cargo feature (on by default);
//! the `safe-classwise` estimator it calibrated lives in `estimate` and
//! needs no feature.

pub mod corpus;
pub mod images;
pub mod plot;
pub mod report;
pub mod samples;

use std::path::PathBuf;
use std::time::Instant;

pub use crate::estimate::{history_real_tokens, message_real_tokens, Encoding, Tiktoken};
pub use crate::oracle::real_tokens::{
    estimate_covers_real_tokens, estimator_covers_real_tokens, Shortfall,
    ESTIMATE_COVERS_REAL_TOKENS,
};
pub use corpus::{
    find_default_corpus, load_corpus, resolve_corpus, Corpus, CorpusRead, History, Resolved,
    DEFAULT_CORPUS,
};
pub use images::{image_samples, ImageFigures, IMAGES};
pub use plot::{draw, svg, write_svg, Group, Panel, Picture};
pub use report::{BytesPerTokenBound, EstimatorStats, ImageRow, Report, Row, REAL_HISTORIES};
pub use samples::ContentClass;

use crate::body;
use crate::config::Config;
use crate::estimate::{Adr0098, ContentOnly, Estimator, SafeClasswise};
use crate::model::Message;

/// The seed of the generated samples: ADR 0098's number.
pub const DEFAULT_SEED: u64 = 0x0098;
/// Generated samples per content class.
pub const DEFAULT_SAMPLES: usize = 250;
/// The largest integer `bytesPerToken` tried for [`BytesPerTokenBound`].
const MAX_INTEGER_BYTES_PER_TOKEN: u64 = 16;

/// What to calibrate on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The real-history folder; `None` looks in the default places
    /// ([`find_default_corpus`]) and skips the real histories when there
    /// are none ([`resolve_corpus`]).
    pub corpus: Option<PathBuf>,
    pub seed: u64,
    pub samples_per_class: usize,
    /// The `bytesPerToken` the `content-only` and `adr-0098` estimates use.
    pub bytes_per_token: u64,
    /// The cap on one corpus file, in bytes (`--max-input-bytes`).
    pub max_input_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            corpus: None,
            seed: DEFAULT_SEED,
            samples_per_class: DEFAULT_SAMPLES,
            bytes_per_token: Config::default().bytes_per_token,
            max_input_bytes: crate::input::DEFAULT_MAX_INPUT_BYTES,
        }
    }
}

/// `count` in each encoding, in [`Encoding::ALL`] order, the encodings on
/// threads of their own: calibrate and compare are mostly BPE.
pub(crate) fn per_encoding<T: Send>(count: impl Fn(Encoding) -> T + Sync) -> [T; 2] {
    let count = &count;
    std::thread::scope(|scope| {
        Encoding::ALL
            .map(|encoding| scope.spawn(move || count(encoding)))
            .map(|h| h.join().expect("a tokenising thread panicked"))
    })
}

/// Read the corpus, generate the samples, count, and report.
pub fn calibrate(options: &Options) -> Result<Report, CalibrateError> {
    let start = Instant::now();
    let resolved = resolve_corpus(options.corpus.as_deref(), options.max_input_bytes)?;
    let mut report = calibrate_on(&resolved.histories, options);
    report.corpus = resolved.read;
    report.elapsed = start.elapsed();
    Ok(report)
}

/// The calibration itself, on histories already read (`options.corpus` is
/// not used; no histories, no `real-histories` row). Deterministic but for
/// `elapsed`.
pub fn calibrate_on(histories: &[History], options: &Options) -> Report {
    let start = Instant::now();
    let generated: Vec<(String, Vec<Vec<Message>>)> = ContentClass::ALL
        .into_iter()
        .map(|class| {
            let msgs = samples::samples(class, options.seed, options.samples_per_class);
            (
                samples::set_name(class).to_owned(),
                msgs.into_iter().map(|m| vec![m]).collect(),
            )
        })
        .collect();
    let real: Vec<Vec<Message>> = histories.iter().map(|h| h.messages.clone()).collect();
    let sets: Vec<(String, Vec<Vec<Message>>)> = generated
        .into_iter()
        .chain((!real.is_empty()).then(|| (REAL_HISTORIES.to_owned(), real)))
        .collect();

    let config = Config {
        bytes_per_token: options.bytes_per_token.max(1),
        ..Config::default()
    };
    let measured: Vec<Measured> = sets
        .iter()
        .map(|(_, s)| Measured::new(s, &config))
        .collect();
    let real_counts: [Vec<Vec<u64>>; 2] = per_encoding(|encoding| {
        sets.iter()
            .map(|(_, s)| s.iter().map(|h| history_real_tokens(h, encoding)).collect())
            .collect()
    });

    let mut rows = Vec::new();
    for (e, encoding) in Encoding::ALL.into_iter().enumerate() {
        for (s, (name, _)) in sets.iter().enumerate() {
            rows.push(measured[s].row(encoding, name, &real_counts[e][s]));
        }
    }
    let images = image_rows(&image_samples(options.samples_per_class), &config);
    Report {
        corpus: CorpusRead::default(),
        histories: histories.len(),
        seed: options.seed,
        samples_per_class: options.samples_per_class,
        bytes_per_token: config.bytes_per_token,
        rows,
        images,
        elapsed: start.elapsed(),
    }
}

/// The estimators a report compares.
fn estimators() -> [Box<dyn Estimator>; 3] {
    [
        Box::new(ContentOnly),
        Box::new(Adr0098),
        Box::new(SafeClasswise::default()),
    ]
}

/// The `images` set's rows: each image alone in a history, every estimator on it.
fn image_rows(samples: &[Message], config: &Config) -> Vec<ImageRow> {
    samples
        .iter()
        .flat_map(|m| {
            let history = std::slice::from_ref(m);
            let estimates: Vec<(&'static str, u64)> = estimators()
                .iter()
                .map(|e| (e.name(), e.tokens(&mut history.iter(), config)))
                .collect();
            images::figures(history)
                .into_iter()
                .map(move |figures| ImageRow {
                    figures,
                    estimates: estimates.clone(),
                })
        })
        .collect()
}

/// What does not depend on the encoding: bytes and estimates per sample.
struct Measured {
    bytes: Vec<u64>,
    /// Per estimator, per sample.
    estimates: Vec<(&'static str, Vec<u64>)>,
    /// Per integer bytesPerToken `k` (index `k - 1`), adr-0098's estimate per sample.
    adr_by_bpt: Vec<Vec<u64>>,
}

impl Measured {
    fn new(set: &[Vec<Message>], config: &Config) -> Measured {
        let bytes = set
            .iter()
            .map(|h| {
                h.iter()
                    .map(|m| m.content.text().len() as u64 + calls_bytes(m))
                    .sum()
            })
            .collect();
        let estimates = estimators()
            .iter()
            .map(|e| {
                let per = set
                    .iter()
                    .map(|h| e.tokens(&mut h.iter(), config))
                    .collect();
                (e.name(), per)
            })
            .collect();
        let adr_by_bpt = (1..=MAX_INTEGER_BYTES_PER_TOKEN)
            .map(|k| {
                let c = Config {
                    bytes_per_token: k,
                    ..config.clone()
                };
                set.iter()
                    .map(|h| Adr0098.tokens(&mut h.iter(), &c))
                    .collect()
            })
            .collect();
        Measured {
            bytes,
            estimates,
            adr_by_bpt,
        }
    }

    fn row(&self, encoding: Encoding, set: &str, real: &[u64]) -> Row {
        // Samples with no real token say nothing about a ratio.
        let keep: Vec<usize> = (0..real.len()).filter(|&i| real[i] > 0).collect();
        let n = keep.len();
        let estimators = self
            .estimates
            .iter()
            .map(|(name, est)| {
                let pairs: Vec<(u64, u64)> = keep.iter().map(|&i| (est[i], real[i])).collect();
                EstimatorStats::from_pairs(name, &pairs)
            })
            .collect();
        let mut bytes_per_real: Vec<f64> = keep
            .iter()
            .map(|&i| self.bytes[i] as f64 / real[i] as f64)
            .collect();
        bytes_per_real.sort_by(f64::total_cmp);
        // 99%: at most floor(1% of n) samples may fall below.
        let allowed = n / 100;
        let covering = |k: usize| {
            keep.iter()
                .filter(|&&i| self.adr_by_bpt[k][i] >= real[i])
                .count()
        };
        let largest_integer = |needed: usize| {
            (0..self.adr_by_bpt.len())
                .take_while(|&k| covering(k) >= needed)
                .last()
                .map_or(0, |k| k as u64 + 1)
        };
        Row {
            encoding,
            set: set.to_owned(),
            samples: n,
            bytes: keep.iter().map(|&i| self.bytes[i]).sum(),
            real_tokens: keep.iter().map(|&i| real[i]).sum(),
            estimators,
            bytes_per_token: BytesPerTokenBound {
                p99: bytes_per_real.get(allowed).copied().unwrap_or(f64::NAN),
                p100: bytes_per_real.first().copied().unwrap_or(f64::NAN),
                integer_p99: largest_integer(n - allowed),
                integer_p100: largest_integer(n),
            },
        }
    }
}

fn calls_bytes(m: &Message) -> u64 {
    match m.tool_calls.as_deref() {
        Some(calls) if !calls.is_empty() => body::tool_calls_size(calls),
        _ => 0,
    }
}

/// What can stop a calibration run.
#[derive(Debug)]
#[non_exhaustive]
pub enum CalibrateError {
    /// No corpus folder was given and none was found where it is looked for.
    CorpusNotFound { tried: Vec<PathBuf> },
    /// The corpus folder holds no `*.json` file.
    EmptyCorpus(PathBuf),
    /// A file could not be written.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A corpus file or folder could not be read, or is not a well-formed
    /// history.
    BadHistory(crate::InputError),
}

impl std::fmt::Display for CalibrateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CalibrateError::CorpusNotFound { tried } => {
                let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "no real-history corpus found (looked in {}); pass --corpus DIR",
                    tried.join(", ")
                )
            }
            CalibrateError::EmptyCorpus(p) => {
                write!(f, "{}: no *.json history in this folder", p.display())
            }
            CalibrateError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            CalibrateError::BadHistory(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CalibrateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CalibrateError::Io { source, .. } => Some(source),
            CalibrateError::BadHistory(e) => Some(e),
            _ => None,
        }
    }
}
