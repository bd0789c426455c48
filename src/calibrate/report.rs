//! The calibration report: one row per encoding and sample set, with each
//! estimator's ratio estimate ÷ real over the set's samples. `Display` is
//! the table `ctxgate calibrate` prints; [`Report::to_json`] is `--json`;
//! the raw ratios feed the plot.

use std::fmt;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::Encoding;
use crate::estimate::SAFE_COSTS;

/// The name of the real-history row.
pub const REAL_HISTORIES: &str = "real-histories";

/// A calibration run's results.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The corpus read: without one, there is no `real-histories` row.
    pub corpus: super::CorpusRead,
    /// How many real histories were read.
    pub histories: usize,
    pub seed: u64,
    pub samples_per_class: usize,
    /// The `bytesPerToken` the `content-only` and `adr-0098` estimates used.
    pub bytes_per_token: u64,
    /// Per encoding, the content classes in order, then `real-histories`.
    pub rows: Vec<Row>,
    /// The `images` set, one row per image ([`super::images`]).
    pub images: Vec<ImageRow>,
    /// Wall time of the run (reading, generating, tokenising).
    pub elapsed: Duration,
}

/// One encoding on one sample set.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub encoding: Encoding,
    /// A content class name, or [`REAL_HISTORIES`].
    pub set: String,
    /// Samples (or histories) with at least one real token.
    pub samples: usize,
    /// Bytes counted: content plus `toolCalls` JSON, over the set.
    pub bytes: u64,
    /// Real tokens over the set.
    pub real_tokens: u64,
    pub estimators: Vec<EstimatorStats>,
    /// The `bytesPerToken` that makes the `adr-0098` estimate an upper bound.
    pub bytes_per_token: BytesPerTokenBound,
}

/// The `bytesPerToken` that makes `adr-0098`'s `Σ ceil(bytes / bpt)` at
/// least the real count for 99% and for 100% of a set's samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BytesPerTokenBound {
    /// Largest real-valued `bytes / bpt ≥ real` for 99% of the samples
    /// (without the rounding up, so a slight underestimate of the limit).
    pub p99: f64,
    /// The same for every sample: the lowest bytes per real token.
    pub p100: f64,
    /// Largest integer `bytesPerToken` (the config's type) that covers 99%,
    /// rounding up each part as the estimator does.
    pub integer_p99: u64,
    /// Largest integer `bytesPerToken` that covers every sample.
    pub integer_p100: u64,
}

/// One image of the `images` set: what SPEC §3 and the body say of it,
/// and each estimator's tokens for the history that holds only it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageRow {
    pub figures: super::images::ImageFigures,
    /// `(estimator, tokens)`, in column order.
    pub estimates: Vec<(&'static str, u64)>,
}

impl ImageRow {
    /// What the row's first column says: media type and pixels.
    pub fn label(&self) -> String {
        let kind = self.figures.media_type.trim_start_matches("image/");
        match self.figures.pixels {
            Some((w, h)) => format!("{kind} {w}×{h}"),
            None => format!("{kind} (size unknown)"),
        }
    }
}

/// One estimator on one row.
#[derive(Debug, Clone, PartialEq)]
pub struct EstimatorStats {
    pub estimator: &'static str,
    /// Mean of estimate ÷ real over the samples.
    pub mean_ratio: f64,
    /// The lowest estimate ÷ real: the worst underestimate.
    pub worst_ratio: f64,
    /// The highest estimate ÷ real.
    pub max_ratio: f64,
    /// Share of samples whose estimate is below the real count.
    pub below_share: f64,
    /// Every sample's estimate ÷ real, sorted ascending.
    pub ratios: Vec<f64>,
}

impl EstimatorStats {
    /// From per-sample `(estimate, real)` pairs with `real > 0`.
    pub fn from_pairs(estimator: &'static str, pairs: &[(u64, u64)]) -> EstimatorStats {
        let mut ratios: Vec<f64> = pairs.iter().map(|&(e, r)| e as f64 / r as f64).collect();
        ratios.sort_by(f64::total_cmp);
        let n = ratios.len().max(1) as f64;
        EstimatorStats {
            estimator,
            mean_ratio: ratios.iter().sum::<f64>() / n,
            worst_ratio: ratios.first().copied().unwrap_or(f64::NAN),
            max_ratio: ratios.last().copied().unwrap_or(f64::NAN),
            below_share: pairs.iter().filter(|&&(e, r)| e < r).count() as f64 / n,
            ratios,
        }
    }

    /// The `q`-quantile of the ratios (nearest rank), `q` in `[0, 1]`.
    pub fn quantile(&self, q: f64) -> f64 {
        quantile(&self.ratios, q)
    }
}

/// Nearest-rank quantile of sorted values.
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = (q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i]
}

impl Row {
    pub fn estimator(&self, name: &str) -> Option<&EstimatorStats> {
        self.estimators.iter().find(|e| e.estimator == name)
    }

    /// Bytes per real token over the whole set.
    pub fn bytes_per_real_token(&self) -> f64 {
        self.bytes as f64 / self.real_tokens.max(1) as f64
    }
}

impl Report {
    pub fn row(&self, encoding: Encoding, set: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.encoding == encoding && r.set == set)
    }

    /// The estimator names, in column order.
    pub fn estimator_names(&self) -> Vec<&'static str> {
        self.rows
            .first()
            .map(|r| r.estimators.iter().map(|e| e.estimator).collect())
            .unwrap_or_default()
    }

    /// `--json`: every figure of the table, plus ratio quantiles.
    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let estimators: Vec<Value> = r
                    .estimators
                    .iter()
                    .map(|e| {
                        json!({
                            "estimator": e.estimator,
                            "meanRatio": round4(e.mean_ratio),
                            "worstRatio": round4(e.worst_ratio),
                            "maxRatio": round4(e.max_ratio),
                            "belowShare": round4(e.below_share),
                            "quantiles": {
                                "p1": round4(e.quantile(0.01)),
                                "p5": round4(e.quantile(0.05)),
                                "p25": round4(e.quantile(0.25)),
                                "p50": round4(e.quantile(0.5)),
                                "p75": round4(e.quantile(0.75)),
                                "p95": round4(e.quantile(0.95)),
                                "p99": round4(e.quantile(0.99)),
                            },
                        })
                    })
                    .collect();
                json!({
                    "encoding": r.encoding.name(),
                    "set": r.set,
                    "samples": r.samples,
                    "bytes": r.bytes,
                    "realTokens": r.real_tokens,
                    "bytesPerRealToken": round4(r.bytes_per_real_token()),
                    "bytesPerTokenCovering": {
                        "p99": round4(r.bytes_per_token.p99),
                        "p100": round4(r.bytes_per_token.p100),
                        "integerP99": r.bytes_per_token.integer_p99,
                        "integerP100": r.bytes_per_token.integer_p100,
                    },
                    "estimators": estimators,
                })
            })
            .collect();
        let c = SAFE_COSTS;
        json!({
            "corpus": self.corpus.dir,
            "corpusSkipped": self.corpus.skipped,
            "histories": self.histories,
            "seed": self.seed,
            "samplesPerClass": self.samples_per_class,
            "bytesPerToken": self.bytes_per_token,
            "elapsedSeconds": round4(self.elapsed.as_secs_f64()),
            "safeClasswiseMilliTokens": {
                "letter": c.letter, "digit": c.digit, "whitespace": c.whitespace,
                "punct": c.punct, "twoByte": c.two_byte, "threeByte": c.three_byte,
                "fourByte": c.four_byte,
                "control": c.control,
            },
            "rows": rows,
            "images": self.images.iter().map(|r| {
                let f = &r.figures;
                let estimates: Map<String, Value> =
                    r.estimates.iter().map(|(n, t)| ((*n).to_owned(), json!(t))).collect();
                json!({
                    "mediaType": f.media_type,
                    "width": f.pixels.map(|p| p.0),
                    "height": f.pixels.map(|p| p.1),
                    "payloadBytes": f.payload_bytes,
                    "bodyBytes": f.body_bytes,
                    "specTokens": {"anthropic": f.anthropic_tokens, "openai": f.openai_tokens},
                    "estimates": estimates,
                })
            }).collect::<Vec<Value>>(),
        })
    }
}

fn round4(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 10_000.0).round() / 10_000.0)
    } else {
        Value::Null
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "estimate / real tokens (real: tiktoken on content + toolCalls JSON, the parts adr-0098 counts)"
        )?;
        writeln!(
            f,
            "corpus: {} ({} histories); generated: {} samples per class, seed {}; bytesPerToken {}; {:.1} s",
            self.corpus.dir.as_deref().unwrap_or("none"),
            self.histories,
            self.samples_per_class,
            self.seed,
            self.bytes_per_token,
            self.elapsed.as_secs_f64()
        )?;
        if let Some(skipped) = &self.corpus.skipped {
            writeln!(f, "{skipped}")?;
        }
        let names = self.estimator_names();
        for encoding in Encoding::ALL {
            let rows: Vec<&Row> = self
                .rows
                .iter()
                .filter(|r| r.encoding == encoding)
                .collect();
            if rows.is_empty() {
                continue;
            }
            writeln!(f)?;
            write!(f, "{:<32}", encoding.name())?;
            for n in &names {
                write!(f, "  {n:<19}")?;
            }
            writeln!(f, "  adr-0098 ≥ real with")?;
            write!(f, "{:<16}{:>5} {:>9}", "set", "n", "bytes/tok")?;
            for _ in &names {
                write!(f, "  {:>5} {:>5} {:>6} ", "mean", "worst", "below")?;
            }
            writeln!(f, "  {:>11} {:>11}", "bpt 99%", "bpt 100%")?;
            for r in rows {
                write!(
                    f,
                    "{:<16}{:>5} {:>9.2}",
                    r.set,
                    r.samples,
                    r.bytes_per_real_token()
                )?;
                for e in &r.estimators {
                    write!(
                        f,
                        "  {:>5.2} {:>5.2} {:>5.1}% ",
                        e.mean_ratio,
                        e.worst_ratio,
                        e.below_share * 100.0
                    )?;
                }
                let c = r.bytes_per_token;
                writeln!(
                    f,
                    "  {:>6.2} ({:>2}) {:>6.2} ({:>2})",
                    c.p99, c.integer_p99, c.p100, c.integer_p100
                )?;
            }
        }
        writeln!(f)?;
        writeln!(f, "mean, worst: estimate ÷ real per sample (worst = lowest); below: share of samples under real.")?;
        write!(
            f,
            "bpt 99%/100%: the bytesPerToken under which adr-0098 covers 99%/100% of the set (in brackets: the largest integer that does)."
        )?;
        self.images_table(f)
    }
}

impl Report {
    /// The `images` set: per image, SPEC §3's tokens, its bytes in the
    /// body, and each estimator's tokens (nothing when the set is empty).
    fn images_table(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(first) = self.images.first() else {
            return Ok(());
        };
        writeln!(f)?;
        writeln!(f)?;
        writeln!(
            f,
            "images: tokens per image (SPEC §3, by pixels) and the bytes it adds to the body"
        )?;
        write!(
            f,
            "{:<18}{:>11}{:>11}{:>11}",
            "image", "base64 B", "anthropic", "openai"
        )?;
        for (name, _) in &first.estimates {
            write!(f, "{:>16}", name)?;
        }
        writeln!(f)?;
        for r in &self.images {
            let x = &r.figures;
            write!(
                f,
                "{:<18}{:>11}{:>11}{:>11}",
                r.label(),
                x.payload_bytes,
                x.anthropic_tokens,
                x.openai_tokens
            )?;
            for (_, t) in &r.estimates {
                write!(f, "{t:>16}")?;
            }
            writeln!(f)?;
        }
        let sum = |g: &dyn Fn(&ImageRow) -> u64| self.images.iter().map(g).sum::<u64>();
        write!(
            f,
            "{:<18}{:>11}{:>11}{:>11}",
            "total",
            sum(&|r| r.figures.payload_bytes),
            sum(&|r| r.figures.anthropic_tokens),
            sum(&|r| r.figures.openai_tokens)
        )?;
        for k in 0..first.estimates.len() {
            write!(f, "{:>16}", sum(&|r| r.estimates[k].1))?;
        }
        writeln!(f)?;
        write!(
            f,
            "anthropic/openai: SPEC §3's rule per provider (the estimators count the engine format, i.e. anthropic's); an estimate far above them reads base64 as text, one at 0 weighs images at nothing."
        )
    }
}
