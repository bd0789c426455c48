//! The figures of one estimator on one set, from its answers and the real
//! counts: estimate ÷ real per history (calibrate's [`EstimatorStats`]),
//! the ADR floor and `estimate-monotone` as `check`'s oracles judge them,
//! and, where the estimator gives `perMessage`, how its figures agree with
//! its total and with the real count of each message.

use super::drive::SetAnswers;
use super::inputs::Set;
use crate::calibrate::{Encoding, EstimatorStats};
use crate::config::Config;
use crate::oracle::{estimate_covers_tool_calls, estimate_monotone};

/// The name a floor violation gives the floor in its numbers.
const FLOOR_NUMBER: &str = "toolCalls tokens";

/// A history that shows a finding: which one, and the figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    pub history: String,
    /// The oracle's sentence.
    pub detail: String,
}

/// One estimator on one set.
#[derive(Debug, Clone, PartialEq)]
pub struct SetStats {
    /// The estimate over every history of the set, in tokens.
    pub tokens: u64,
    /// Each history's estimate, in the set's order.
    pub estimates: Vec<u64>,
    /// Per encoding ([`Encoding::ALL`] order): estimate ÷ real over the
    /// histories with at least one real token.
    pub ratios: Vec<EstimatorStats>,
    /// Histories whose estimate is below the floor, in total or (with
    /// `perMessage`) at some message: `estimate-covers-tool-calls`.
    pub below_floor: usize,
    /// Messages whose `perMessage` figure is below their floor.
    pub below_floor_messages: usize,
    pub first_below_floor: Option<Example>,
    /// Histories whose estimate fell when a message was appended.
    pub monotone_violations: usize,
    pub first_monotone: Option<Example>,
    /// `None` when no answer of the set carried `perMessage`.
    pub per_message: Option<PerMessage>,
}

/// How an estimator's `perMessage` figures hold up.
#[derive(Debug, Clone, PartialEq)]
pub struct PerMessage {
    /// Answers (of the set's histories) that carried `perMessage`.
    pub given: usize,
    /// Of those, answers whose figures do not sum to the total or are not
    /// one per message.
    pub disagreeing: usize,
    /// Messages judged: with a real token, in answers that agree.
    pub messages: usize,
    /// Per encoding: share of those messages estimated below their real count.
    pub below_real_share: Vec<f64>,
}

impl SetStats {
    /// `label` names the estimator inside the ratio figures.
    pub fn of(label: &'static str, set: &Set, answers: &SetAnswers, config: &Config) -> SetStats {
        let ratios = (0..Encoding::ALL.len())
            .map(|e| {
                let pairs: Vec<(u64, u64)> = answers
                    .iter()
                    .enumerate()
                    .map(|(i, (a, _))| (a.tokens, set.real_tokens(e, i)))
                    .filter(|&(_, real)| real > 0)
                    .collect();
                EstimatorStats::from_pairs(label, &pairs)
            })
            .collect();
        let mut stats = SetStats {
            tokens: answers.iter().map(|(a, _)| a.tokens).sum(),
            estimates: answers.iter().map(|(a, _)| a.tokens).collect(),
            ratios,
            below_floor: 0,
            below_floor_messages: 0,
            first_below_floor: None,
            monotone_violations: 0,
            first_monotone: None,
            per_message: None,
        };
        let mut per = PerMessage {
            given: 0,
            disagreeing: 0,
            messages: 0,
            below_real_share: vec![0.0; Encoding::ALL.len()],
        };
        for (i, (a, longer)) in answers.iter().enumerate() {
            let h = &set.histories[i];
            let example = |detail: &str| Example {
                history: set.labels[i].clone(),
                detail: detail.to_owned(),
            };
            let floor: Vec<_> = estimate_covers_tool_calls(config, h, a)
                .into_iter()
                .filter(|v| v.numbers.iter().any(|(name, _)| name == FLOOR_NUMBER))
                .collect();
            if !floor.is_empty() {
                stats.below_floor += 1;
                stats.below_floor_messages +=
                    floor.iter().filter(|v| !v.messages.is_empty()).count();
                if stats.first_below_floor.is_none() {
                    stats.first_below_floor = Some(example(&floor[0].detail));
                }
            }
            if let Some(v) = estimate_monotone(a, longer).first() {
                stats.monotone_violations += 1;
                if stats.first_monotone.is_none() {
                    stats.first_monotone = Some(example(&v.detail));
                }
            }
            let Some(figures) = &a.per_message else {
                continue;
            };
            per.given += 1;
            if figures.len() != h.len() || figures.iter().sum::<u64>() != a.tokens {
                per.disagreeing += 1;
                continue;
            }
            for (j, &t) in figures.iter().enumerate() {
                if set.real[0][i][j] > 0 || set.real[1][i][j] > 0 {
                    per.messages += 1;
                }
                for (e, share) in per.below_real_share.iter_mut().enumerate() {
                    // Counted here, divided below.
                    if t < set.real[e][i][j] {
                        *share += 1.0;
                    }
                }
            }
        }
        if per.given > 0 {
            let n = per.messages.max(1) as f64;
            for share in &mut per.below_real_share {
                *share /= n;
            }
            stats.per_message = Some(per);
        }
        stats
    }

    /// Estimate ÷ real in `encoding`.
    pub fn ratio(&self, encoding: Encoding) -> &EstimatorStats {
        let e = Encoding::ALL
            .iter()
            .position(|&x| x == encoding)
            .expect("an encoding of ALL");
        &self.ratios[e]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::inputs::one_call_set;
    use crate::subject::EstimateAnswer;

    fn answer(per: Vec<u64>) -> EstimateAnswer {
        EstimateAnswer {
            tokens: per.iter().sum(),
            per_message: Some(per),
        }
    }

    #[test]
    fn a_content_only_answer_is_below_the_floor_at_the_call() {
        let set = one_call_set();
        let config = Config::default();
        // content-only: the call's message weighs nothing.
        let content_only = vec![(answer(vec![5, 0, 3]), answer(vec![5, 0, 3, 2]))];
        let s = SetStats::of("A", &set, &content_only, &config);
        assert_eq!(s.below_floor, 1);
        assert_eq!(s.below_floor_messages, 1);
        let first = s.first_below_floor.unwrap();
        assert_eq!(first.history, "calls.json");
        assert!(
            first.detail.contains("the estimate is 8 tokens"),
            "{}",
            first.detail
        );
        assert_eq!(s.monotone_violations, 0);
        let per = s.per_message.unwrap();
        assert_eq!((per.given, per.disagreeing, per.messages), (1, 0, 3));
        assert!(per.below_real_share[0] > 0.3, "{per:?}");

        // Generous figures that fall when a message is appended.
        let falling = vec![(answer(vec![50, 50, 50]), answer(vec![1, 1, 1, 1]))];
        let s = SetStats::of("B", &set, &falling, &config);
        assert_eq!(s.below_floor, 0);
        assert_eq!(s.monotone_violations, 1);
        assert_eq!(s.ratios[0].below_share, 0.0);
        assert!(s.ratio(Encoding::O200kBase).mean_ratio > 1.0);
    }

    #[test]
    fn per_message_figures_that_do_not_add_up_disagree() {
        let set = one_call_set();
        let wrong = EstimateAnswer {
            tokens: 100,
            per_message: Some(vec![1, 2]),
        };
        let s = SetStats::of("A", &set, &vec![(wrong.clone(), wrong)], &Config::default());
        let per = s.per_message.unwrap();
        assert_eq!((per.given, per.disagreeing, per.messages), (1, 1, 0));
        // Without perMessage the floor is judged on the total alone.
        let total = EstimateAnswer {
            tokens: 100,
            per_message: None,
        };
        let s = SetStats::of("A", &set, &vec![(total.clone(), total)], &Config::default());
        assert_eq!(s.below_floor, 0);
        assert!(s.per_message.is_none());
    }
}
