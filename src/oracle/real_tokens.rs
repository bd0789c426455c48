//! The invariant `estimate-covers-real-tokens`: an estimate of a history is
//! at least its real token count under each real encoding — the property
//! ADR 0098's trigger silently relies on, and that `bytesPerToken = 4`
//! breaks for CJK, emoji and identifier-heavy text.
//!
//! A pure function of values, like the oracles in `oracle/`: the caller
//! runs the estimator (or the subject's `estimate` op) and hands over the
//! figures. Real tokens count the parts ADR 0098 counts (content plus the
//! JSON of `toolCalls`), not per-message framing.

use std::fmt;

use crate::config::Config;
use crate::estimate::{message_real_tokens, Encoding, Estimator};
use crate::model::Message;

/// The invariant's stable name.
pub const ESTIMATE_COVERS_REAL_TOKENS: &str = "estimate-covers-real-tokens";

/// One place where an estimate is below the real count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortfall {
    pub encoding: Encoding,
    /// `None` for the history's total; `Some(i)` for message `i`.
    pub message: Option<usize>,
    pub estimate: u64,
    pub real: u64,
}

impl Shortfall {
    /// Named figures, in the shape of `oracle::Violation::numbers`.
    pub fn numbers(&self) -> Vec<(&'static str, u64)> {
        vec![("estimate", self.estimate), ("realTokens", self.real)]
    }
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.message {
            None => "the history's estimate".to_owned(),
            Some(i) => format!("message {i}'s estimate"),
        };
        write!(
            f,
            "{what} is {} tokens, {} below the {} real {} under {}",
            self.estimate,
            self.real - self.estimate,
            self.real,
            if self.real == 1 { "token" } else { "tokens" },
            self.encoding
        )
    }
}

/// Check an estimate of `msgs` against the real tokenizers: the total
/// `tokens` always, and each of `per_message` when given (a figure list of
/// the wrong length is skipped; checking shapes is another oracle's job).
/// Empty when the estimate covers every encoding.
///
/// Per-message figures are a stricter test than totals: `safe-classwise`
/// claims totals only (see `estimate::safe`), so pass `None` for it.
pub fn estimate_covers_real_tokens(
    msgs: &[Message],
    tokens: u64,
    per_message: Option<&[u64]>,
    encodings: &[Encoding],
) -> Vec<Shortfall> {
    let mut out = Vec::new();
    for &encoding in encodings {
        let real: Vec<u64> = msgs
            .iter()
            .map(|m| message_real_tokens(m, encoding))
            .collect();
        let below = super::budget::below_floors(tokens, per_message, &real);
        out.extend(below.map(|(message, estimate, real)| Shortfall {
            encoding,
            message,
            estimate,
            real,
        }));
    }
    out
}

/// [`estimate_covers_real_tokens`] for a built-in estimator's total, under
/// both encodings.
pub fn estimator_covers_real_tokens(
    estimator: &dyn Estimator,
    msgs: &[Message],
    config: &Config,
) -> Vec<Shortfall> {
    let tokens = estimator.tokens(&mut msgs.iter(), config);
    estimate_covers_real_tokens(msgs, tokens, None, &Encoding::ALL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{Adr0098, SafeClasswise};

    #[test]
    fn cjk_breaks_four_bytes_a_token_and_not_the_safe_estimator() {
        let msgs = vec![Message::user(
            "请求体超过了允许的大小限制。上下文窗口压缩摘要服务器客户端代理工具调用结果。",
        )];
        let config = Config::default();
        let short = estimator_covers_real_tokens(&Adr0098, &msgs, &config);
        // cl100k_base spends about a token a character on CJK: 4 bytes a token is short.
        assert_eq!(short[0].encoding, Encoding::Cl100kBase, "{short:?}");
        assert!(short[0].to_string().contains("below"), "{}", short[0]);
        assert!(estimator_covers_real_tokens(&SafeClasswise::default(), &msgs, &config).is_empty());
    }

    #[test]
    fn per_message_figures_are_checked_when_given() {
        let msgs = vec![Message::user("hello world"), Message::user("🦀🦀🦀")];
        let real: Vec<u64> = msgs
            .iter()
            .map(|m| message_real_tokens(m, Encoding::Cl100kBase))
            .collect();
        let total = real.iter().sum::<u64>();
        let per = [real[0] + 5, real[1] - 1];
        let short =
            estimate_covers_real_tokens(&msgs, total + 4, Some(&per), &[Encoding::Cl100kBase]);
        assert_eq!(short.len(), 1);
        assert_eq!(short[0].message, Some(1));
        assert!(estimate_covers_real_tokens(
            &msgs,
            total + 4,
            Some(&per[..1]),
            &[Encoding::Cl100kBase]
        )
        .is_empty());
    }
}
