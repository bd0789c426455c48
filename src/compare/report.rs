//! A comparison's results: per set, per estimator, the figures of
//! [`SetStats`] and the speed of each lane. `Display` is the human table,
//! [`Comparison::to_markdown`] the PR comment, [`Comparison::to_json`]
//! `--json` and [`Comparison::picture`] the `--plot` (calibrate's box plot).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::inputs::{InputOptions, SetKind};
use super::stats::SetStats;
use super::{secs, EstimatorSpec};
use crate::calibrate::{self, CalibrateError, Encoding, Group, Panel, Picture};

/// One estimator, as given and as it names itself.
#[derive(Debug, Clone, PartialEq)]
pub struct EstimatorInfo {
    pub label: &'static str,
    pub spec: EstimatorSpec,
    /// The hello's `name` (a built-in's own name).
    pub name: String,
    /// The hello's `version` (ctxgate's, for a built-in).
    pub version: String,
}

impl EstimatorInfo {
    /// `name version`.
    pub fn title(&self) -> String {
        if self.version.is_empty() {
            self.name.clone()
        } else {
            format!("{} {}", self.name, self.version)
        }
    }

    /// `name version` and how it was given.
    pub fn describe(&self) -> String {
        match &self.spec {
            EstimatorSpec::Builtin(_) => format!("built-in {}", self.name),
            EstimatorSpec::Subject(_) => format!("{}, `{}`", self.title(), self.spec.shown()),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self.spec {
            EstimatorSpec::Builtin(_) => "builtin",
            EstimatorSpec::Subject(_) => "subject",
        }
    }
}

/// An estimator's time over a set: each batch's fastest round, summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Speed {
    /// Through the protocol: a subject as it runs; a built-in through
    /// `ctxgate serve --estimator NAME` (`None` without a serve command).
    pub protocol: Option<Duration>,
    /// In process: built-ins only.
    pub in_process: Option<Duration>,
}

/// One set, every estimator.
#[derive(Debug, Clone, PartialEq)]
pub struct SetResult {
    pub name: String,
    pub kind: SetKind,
    pub histories: usize,
    pub messages: usize,
    /// Estimate requests per pass (each history, and it with a message appended).
    pub requests: usize,
    /// Bytes of the histories' engine JSON over a pass.
    pub bytes: u64,
    /// Per encoding ([`Encoding::ALL`] order): real tokens over the set.
    pub real_tokens: Vec<u64>,
    /// `ctxgate serve`'s time on the same requests: the protocol's own cost.
    pub serve: Option<Duration>,
    /// Per estimator, in label order.
    pub estimators: Vec<(SetStats, Speed)>,
    /// For the `images` set: SPEC §3 and the body on each of its images
    /// (one a history); empty for the other sets.
    pub images: Vec<crate::calibrate::ImageFigures>,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub estimators: Vec<EstimatorInfo>,
    /// The corpus read: without one, there is no real-histories set.
    pub corpus: crate::calibrate::CorpusRead,
    /// Why there is no images set, when a subject takes text only.
    pub images_skipped: Option<String>,
    pub inputs: InputOptions,
    pub bytes_per_token: u64,
    pub rounds: usize,
    /// The serve command measured as the protocol's cost, if any.
    pub serve: Option<String>,
    pub sets: Vec<SetResult>,
    pub elapsed: Duration,
}

/// A duration's throughput: `(estimates/s, MB/s)`.
pub fn rates(d: Duration, requests: usize, bytes: u64) -> (f64, f64) {
    let s = secs(d).max(1e-9);
    (requests as f64 / s, bytes as f64 / 1e6 / s)
}

impl Comparison {
    pub fn set(&self, name: &str) -> Option<&SetResult> {
        self.sets.iter().find(|s| s.name == name)
    }

    /// Estimator `k`'s figures on set `name`.
    pub fn stats(&self, name: &str, k: usize) -> Option<&SetStats> {
        self.set(name).map(|s| &s.estimators[k].0)
    }

    /// How many real histories the corpus held.
    pub fn real_histories(&self) -> usize {
        self.sets
            .iter()
            .find(|s| s.kind == SetKind::Real)
            .map_or(0, |s| s.histories)
    }

    /// Requests and bytes of one pass over every set.
    pub fn totals(&self) -> (usize, u64) {
        (
            self.sets.iter().map(|s| s.requests).sum(),
            self.sets.iter().map(|s| s.bytes).sum(),
        )
    }

    /// Estimator `k`'s time over every set through the protocol, if measured.
    pub fn protocol_time(&self, k: usize) -> Option<Duration> {
        self.sets.iter().map(|s| s.estimators[k].1.protocol).sum()
    }

    /// Estimator `k`'s time over every set in process, if it is a built-in.
    pub fn in_process_time(&self, k: usize) -> Option<Duration> {
        self.sets.iter().map(|s| s.estimators[k].1.in_process).sum()
    }

    /// `ctxgate serve`'s time over every set, if measured.
    pub fn serve_time(&self) -> Option<Duration> {
        self.sets.iter().map(|s| s.serve).sum()
    }

    /// The estimator's own cost: its protocol time less serve's, on the
    /// same requests (0 when serve was the slower).
    pub fn own_time(&self, k: usize) -> Option<Duration> {
        Some(self.protocol_time(k)?.saturating_sub(self.serve_time()?))
    }

    /// `--json`: one object, camelCase, stable names.
    pub fn to_json(&self) -> Value {
        let estimators: Vec<Value> = self
            .estimators
            .iter()
            .enumerate()
            .map(|(k, e)| {
                let mut o = Map::new();
                o.insert("label".into(), json!(e.label));
                o.insert("kind".into(), json!(e.kind()));
                match &e.spec {
                    EstimatorSpec::Builtin(n) => o.insert("builtin".into(), json!(n)),
                    EstimatorSpec::Subject(argv) => o.insert("command".into(), json!(argv)),
                };
                o.insert("name".into(), json!(e.name));
                o.insert("version".into(), json!(e.version));
                o.insert(
                    "speed".into(),
                    speed_json(
                        Speed {
                            protocol: self.protocol_time(k),
                            in_process: self.in_process_time(k),
                        },
                        self.own_time(k),
                        self.totals(),
                    ),
                );
                Value::Object(o)
            })
            .collect();
        let sets: Vec<Value> = self.sets.iter().map(set_json).collect();
        let (requests, bytes) = self.totals();
        json!({
            "corpus": self.corpus.dir,
            "corpusSkipped": self.corpus.skipped,
            "imagesSkipped": self.images_skipped,
            "inputs": {
                "seed": self.inputs.seed,
                "samplesPerClass": self.inputs.samples_per_class,
                "toolloopSeed": self.inputs.toolloop_seed,
                "toolloopHistories": self.inputs.toolloop_histories,
            },
            "bytesPerToken": self.bytes_per_token,
            "rounds": self.rounds,
            "serve": {
                "command": self.serve,
                "seconds": self.serve_time().map(|d| round4(secs(d))),
            },
            "requests": requests,
            "bytes": bytes,
            "estimators": estimators,
            "sets": sets,
            "elapsedSeconds": round4(secs(self.elapsed)),
        })
    }

    /// `--plot`: estimate ÷ real per set and encoding, a box per estimator.
    pub fn picture(&self) -> Picture<'_> {
        let panels = Encoding::ALL
            .into_iter()
            .map(|encoding| Panel {
                title: encoding.name().to_owned(),
                groups: self
                    .sets
                    .iter()
                    .map(|s| Group {
                        label: format!("{} ({})", s.name, s.histories),
                        boxes: s
                            .estimators
                            .iter()
                            .map(|(st, _)| st.ratio(encoding))
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        Picture {
            title: "Estimate ÷ real tokens, per history (log scale)".to_owned(),
            note: format!(
                "(bytesPerToken {}; right: share below real; {} samples per class, {} real histories, {} generated ToolLoop histories)",
                self.bytes_per_token,
                self.inputs.samples_per_class,
                self.real_histories(),
                self.inputs.toolloop_histories
            ),
            names: self
                .estimators
                .iter()
                .map(|e| format!("{} {}", e.label, e.title()))
                .collect(),
            panels,
        }
    }

    /// The SVG text of [`Comparison::picture`].
    pub fn svg(&self) -> String {
        calibrate::draw(&self.picture())
    }

    /// Write the picture to `path`.
    pub fn write_svg(&self, path: &Path) -> Result<(), CalibrateError> {
        std::fs::write(path, self.svg()).map_err(|source| CalibrateError::Io {
            path: path.to_owned(),
            source,
        })
    }
}

fn set_json(s: &SetResult) -> Value {
    let estimators: Vec<Value> = s
        .estimators
        .iter()
        .enumerate()
        .map(|(k, (st, speed))| {
            let mut ratios = Map::new();
            for (e, encoding) in Encoding::ALL.into_iter().enumerate() {
                let r = &st.ratios[e];
                ratios.insert(
                    encoding.name().into(),
                    json!({
                        "histories": r.ratios.len(),
                        "meanRatio": round4(r.mean_ratio),
                        "worstRatio": round4(r.worst_ratio),
                        "maxRatio": round4(r.max_ratio),
                        "medianRatio": round4(r.quantile(0.5)),
                        "belowRealShare": round4(r.below_share),
                    }),
                );
            }
            let example = |e: &Option<super::Example>| {
                e.as_ref()
                    .map(|e| json!({"history": e.history, "detail": e.detail}))
            };
            let per_message = st.per_message.as_ref().map(|p| {
                let shares: Map<String, Value> = Encoding::ALL
                    .into_iter()
                    .zip(&p.below_real_share)
                    .map(|(e, &x)| (e.name().to_owned(), round4(x)))
                    .collect();
                json!({
                    "given": p.given,
                    "disagreeing": p.disagreeing,
                    "messages": p.messages,
                    "belowRealShare": shares,
                })
            });
            let own = match (speed.protocol, s.serve) {
                (Some(p), Some(serve)) => Some(p.saturating_sub(serve)),
                _ => None,
            };
            json!({
                "label": super::LABELS[k],
                "tokens": st.tokens,
                "ratio": ratios,
                "belowFloor": {
                    "histories": st.below_floor,
                    "messages": st.below_floor_messages,
                    "share": round4(st.below_floor as f64 / s.histories.max(1) as f64),
                    "first": example(&st.first_below_floor),
                },
                "monotoneViolations": {
                    "histories": st.monotone_violations,
                    "first": example(&st.first_monotone),
                },
                "perMessage": per_message,
                "speed": speed_json(*speed, own, (s.requests, s.bytes)),
            })
        })
        .collect();
    let real: Map<String, Value> = Encoding::ALL
        .into_iter()
        .zip(&s.real_tokens)
        .map(|(e, &t)| (e.name().to_owned(), json!(t)))
        .collect();
    json!({
        "set": s.name,
        "kind": s.kind.name(),
        "histories": s.histories,
        "messages": s.messages,
        "requests": s.requests,
        "bytes": s.bytes,
        "realTokens": real,
        "serve": s.serve.map(|d| timing_json(d, (s.requests, s.bytes))),
        "estimators": estimators,
        "images": (!s.images.is_empty()).then(|| images_json(s)),
    })
}

/// The `images` set's figures: SPEC §3 and the body per image, and each
/// estimator's tokens per image (its estimate of the set over its images).
fn images_json(s: &SetResult) -> Value {
    let n = s.images.len() as u64;
    let sum = |g: fn(&crate::calibrate::ImageFigures) -> u64| s.images.iter().map(g).sum::<u64>();
    let each: Vec<Value> = s
        .images
        .iter()
        .map(|f| {
            json!({
                "mediaType": f.media_type,
                "width": f.pixels.map(|p| p.0),
                "height": f.pixels.map(|p| p.1),
                "payloadBytes": f.payload_bytes,
                "bodyBytes": f.body_bytes,
                "specTokens": {"anthropic": f.anthropic_tokens, "openai": f.openai_tokens},
            })
        })
        .collect();
    let per_image: Map<String, Value> = s
        .estimators
        .iter()
        .enumerate()
        .map(|(k, (st, _))| {
            (
                super::LABELS[k].to_owned(),
                round4(st.tokens as f64 / n as f64),
            )
        })
        .collect();
    json!({
        "count": n,
        "payloadBytes": sum(|f| f.payload_bytes),
        "bodyBytes": sum(|f| f.body_bytes),
        "specTokens": {
            "anthropic": sum(|f| f.anthropic_tokens),
            "openai": sum(|f| f.openai_tokens),
        },
        "tokensPerImage": per_image,
        "each": each,
    })
}

fn timing_json(d: Duration, (requests, bytes): (usize, u64)) -> Value {
    let (per_s, mb_s) = rates(d, requests, bytes);
    json!({
        "seconds": round4(secs(d)),
        "estimatesPerSecond": round4(per_s),
        "mbPerSecond": round4(mb_s),
    })
}

fn speed_json(speed: Speed, own: Option<Duration>, totals: (usize, u64)) -> Value {
    json!({
        "protocol": speed.protocol.map(|d| timing_json(d, totals)),
        "inProcess": speed.in_process.map(|d| timing_json(d, totals)),
        "ownSeconds": own.map(|d| round4(secs(d))),
    })
}

pub(crate) fn round4(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 10_000.0).round() / 10_000.0)
    } else {
        Value::Null
    }
}
