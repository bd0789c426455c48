//! `--fail-if-worse`: is a later estimator worse than the first (the
//! version shipped today)? It is when, against the first, it is below the
//! real token count more often on any set (in either encoding), below the
//! ADR floor at all (any history of any set, in total or at one message),
//! or slower by more than `max_slowdown` — wall time through the protocol
//! over every set, or in process when both are built-ins measured without
//! a serve command.

use std::fmt;

use super::report::Comparison;
use super::secs;
use crate::calibrate::Encoding;

/// One reason the gate fails, with its figures.
#[derive(Debug, Clone, PartialEq)]
pub enum GateFailure {
    BelowRealMoreOften {
        candidate: String,
        baseline: String,
        set: String,
        encoding: Encoding,
        histories: usize,
        candidate_share: f64,
        baseline_share: f64,
    },
    BelowFloor {
        candidate: String,
        set: String,
        histories: usize,
        of: usize,
        messages: usize,
        /// The first such history and the oracle's sentence.
        first: String,
    },
    Slower {
        candidate: String,
        baseline: String,
        /// `"through the protocol"` or `"in process"`.
        how: &'static str,
        candidate_seconds: f64,
        baseline_seconds: f64,
        max_slowdown: f64,
    },
}

impl fmt::Display for GateFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GateFailure::BelowRealMoreOften {
                candidate,
                baseline,
                set,
                encoding,
                histories,
                candidate_share,
                baseline_share,
            } => write!(
                f,
                "{candidate} is below real {encoding} tokens more often than {baseline} on {set}: {:.1}% of {histories} histories, against {:.1}%",
                candidate_share * 100.0,
                baseline_share * 100.0
            ),
            GateFailure::BelowFloor {
                candidate,
                set,
                histories,
                of,
                messages,
                first,
            } => write!(
                f,
                "{candidate} is below the ADR floor (tokens of the serialised toolCalls) on {set}: {histories} of {of} histories ({messages} messages); first: {first}"
            ),
            GateFailure::Slower {
                candidate,
                baseline,
                how,
                candidate_seconds,
                baseline_seconds,
                max_slowdown,
            } => write!(
                f,
                "{candidate} is {:.2}× slower than {baseline} {how} ({candidate_seconds:.3} s against {baseline_seconds:.3} s over every set), over --max-slowdown {max_slowdown}",
                candidate_seconds / baseline_seconds.max(1e-9)
            ),
        }
    }
}

/// Every later estimator against the first; empty when none is worse.
pub fn gate(c: &Comparison, max_slowdown: f64) -> Vec<GateFailure> {
    let mut out = Vec::new();
    let Some(first) = c.estimators.first() else {
        return out;
    };
    let baseline = format!("{} ({})", first.label, first.title());
    for (k, e) in c.estimators.iter().enumerate().skip(1) {
        let candidate = format!("{} ({})", e.label, e.title());
        for s in &c.sets {
            let (base, cand) = (&s.estimators[0].0, &s.estimators[k].0);
            for (i, encoding) in Encoding::ALL.into_iter().enumerate() {
                let (b, x) = (&base.ratios[i], &cand.ratios[i]);
                if x.below_share > b.below_share {
                    out.push(GateFailure::BelowRealMoreOften {
                        candidate: candidate.clone(),
                        baseline: baseline.clone(),
                        set: s.name.clone(),
                        encoding,
                        histories: x.ratios.len(),
                        candidate_share: x.below_share,
                        baseline_share: b.below_share,
                    });
                }
            }
            if cand.below_floor > 0 {
                let first = cand
                    .first_below_floor
                    .as_ref()
                    .map(|x| format!("{}: {}", x.history, x.detail))
                    .unwrap_or_default();
                out.push(GateFailure::BelowFloor {
                    candidate: candidate.clone(),
                    set: s.name.clone(),
                    histories: cand.below_floor,
                    of: s.histories,
                    messages: cand.below_floor_messages,
                    first,
                });
            }
        }
        let times = match (c.protocol_time(0), c.protocol_time(k)) {
            (Some(b), Some(x)) => Some(("through the protocol", b, x)),
            _ => match (c.in_process_time(0), c.in_process_time(k)) {
                (Some(b), Some(x)) => Some(("in process", b, x)),
                _ => None,
            },
        };
        if let Some((how, b, x)) = times {
            if secs(x) > max_slowdown * secs(b) {
                out.push(GateFailure::Slower {
                    candidate: candidate.clone(),
                    baseline: baseline.clone(),
                    how,
                    candidate_seconds: secs(x),
                    baseline_seconds: secs(b),
                    max_slowdown,
                });
            }
        }
    }
    out
}

/// Why `--fail-if-worse` fails, when a later estimator is worse: every
/// finding against the first estimator of `c`.
pub fn problem(failures: &[GateFailure], c: &Comparison) -> Option<String> {
    let first = &c.estimators.first()?.label;
    let lines: Vec<String> = failures.iter().map(|f| format!("  - {f}")).collect();
    (!failures.is_empty()).then(|| {
        format!(
            "--fail-if-worse: {} finding(s) against {first}:\n{}",
            failures.len(),
            lines.join("\n")
        )
    })
}

/// The gate's verdict for `--json`: `enforced` is `--fail-if-worse`.
pub fn to_json(failures: &[GateFailure], max_slowdown: f64, enforced: bool) -> serde_json::Value {
    serde_json::json!({
        "failIfWorse": enforced,
        "maxSlowdown": max_slowdown,
        "worse": !failures.is_empty(),
        "findings": failures.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
    })
}

/// The gate's verdict under the table.
pub fn to_text(failures: &[GateFailure], max_slowdown: f64, enforced: bool) -> String {
    let flag = if enforced {
        "--fail-if-worse"
    } else {
        "against the first (not enforced without --fail-if-worse)"
    };
    if failures.is_empty() {
        return format!(
            "gate {flag}: no later estimator is worse than the first (below real more often, below the floor, or over {max_slowdown}× slower)\n"
        );
    }
    let mut s = format!("gate {flag}: {} finding(s)\n", failures.len());
    for f in failures {
        s.push_str(&format!("  - {f}\n"));
    }
    s
}

/// The gate's verdict in markdown.
pub fn to_markdown(failures: &[GateFailure], max_slowdown: f64, enforced: bool) -> String {
    let mut s = String::from("\n**gate**");
    if !enforced {
        s.push_str(" (not enforced without `--fail-if-worse`)");
    }
    if failures.is_empty() {
        s.push_str(&format!(
            ": no later estimator is worse than the first (below real more often, below the floor, or over {max_slowdown}× slower)\n"
        ));
        return s;
    }
    s.push_str(&format!(": {} finding(s)\n\n", failures.len()));
    for f in failures {
        s.push_str(&format!("- {f}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::compare::inputs::{one_call_set, InputOptions};
    use crate::compare::report::{EstimatorInfo, SetResult, Speed};
    use crate::compare::{EstimatorSpec, SetStats, LABELS};
    use crate::config::Config;
    use crate::subject::EstimateAnswer;

    /// One real history with a call; estimator k answers `answers[k]`
    /// (total, per message) and took `protocol[k]` through the protocol.
    fn comparison(
        answers: &[Vec<u64>],
        protocol: &[Option<u64>],
        in_process: &[Option<u64>],
    ) -> Comparison {
        let set = one_call_set();
        let config = Config::default();
        let estimators = answers
            .iter()
            .enumerate()
            .map(|(k, per)| {
                let a = EstimateAnswer {
                    tokens: per.iter().sum(),
                    per_message: Some(per.clone()),
                };
                let mut longer = a.clone();
                longer.tokens += 10;
                longer.per_message = None;
                let stats = SetStats::of(LABELS[k], &set, &vec![(a, longer)], &config);
                let speed = Speed {
                    protocol: protocol[k].map(Duration::from_millis),
                    in_process: in_process[k].map(Duration::from_millis),
                };
                (stats, speed)
            })
            .collect();
        Comparison {
            estimators: (0..answers.len())
                .map(|k| EstimatorInfo {
                    label: LABELS[k],
                    spec: EstimatorSpec::Builtin("adr-0098".into()),
                    name: format!("e{k}"),
                    version: "1".into(),
                })
                .collect(),
            corpus: crate::calibrate::CorpusRead {
                dir: Some("corpus".into()),
                ..Default::default()
            },
            images_skipped: None,
            inputs: InputOptions::real_only(),
            bytes_per_token: 4,
            rounds: 1,
            serve: None,
            sets: vec![SetResult {
                name: set.name.clone(),
                kind: set.kind,
                histories: 1,
                messages: 3,
                requests: 2,
                bytes: set.bytes,
                real_tokens: vec![0, 0],
                serve: None,
                estimators,
                images: Vec::new(),
            }],
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn a_later_estimator_below_real_or_the_floor_is_worse() {
        // Real counts: the call's JSON is ~20 tokens; 100 a message is generous.
        let c = comparison(
            &[vec![100, 100, 100], vec![5, 0, 3]],
            &[Some(10), Some(10)],
            &[None, None],
        );
        let found = gate(&c, 2.0);
        assert!(found.iter().any(|f| matches!(f, GateFailure::BelowFloor { set, histories: 1, .. } if set == "real-histories")), "{found:?}");
        let below = found
            .iter()
            .filter(|f| matches!(f, GateFailure::BelowRealMoreOften { .. }))
            .count();
        assert_eq!(below, 2, "one per encoding: {found:?}");
        assert!(
            found[0].to_string().contains("real-histories"),
            "{}",
            found[0]
        );
        // The other way round, the generous one is no worse.
        let c = comparison(
            &[vec![5, 0, 3], vec![100, 100, 100]],
            &[Some(10), Some(10)],
            &[None, None],
        );
        assert_eq!(gate(&c, 2.0), []);
    }

    #[test]
    fn slower_beyond_the_ratio_is_worse_through_the_protocol_first() {
        let same = vec![100, 100, 100];
        let c = comparison(
            &[same.clone(), same.clone()],
            &[Some(10), Some(25)],
            &[Some(1), Some(1)],
        );
        let found = gate(&c, 2.0);
        assert!(
            matches!(
                found.as_slice(),
                [GateFailure::Slower {
                    how: "through the protocol",
                    ..
                }]
            ),
            "{found:?}"
        );
        assert!(
            found[0].to_string().contains("2.50× slower"),
            "{}",
            found[0]
        );
        assert_eq!(gate(&c, 3.0), []);
        // Without protocol times, in-process ones are compared.
        let c = comparison(
            &[same.clone(), same.clone()],
            &[None, None],
            &[Some(1), Some(5)],
        );
        assert!(matches!(
            gate(&c, 2.0).as_slice(),
            [GateFailure::Slower {
                how: "in process",
                ..
            }]
        ));
        // With neither for both, speed is not judged.
        let c = comparison(&[same.clone(), same], &[Some(1), None], &[None, Some(50)]);
        assert_eq!(gate(&c, 2.0), []);
    }
}
