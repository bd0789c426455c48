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

/// The share of the smallest honest count of a text that an own estimate
/// must reach (`estimate-covers-text`): one half. The smallest honest count
/// is the least of ADR 0098's `ceil(bytes / bytesPerToken)` and the real
/// tokens under cl100k_base and o200k_base, so every one of those counters
/// is at least twice the floor; the half leaves room for tokenizers of
/// other families (sentencepiece, Llama's, Gemini's), which stay within
/// 1.5× of these on every class docs/calibration.md measures. A count of
/// *characters* where bytes are due reaches a third of it on CJK and a
/// quarter on emoji (two in four bytes, counting UTF-16 units): a half
/// tells them apart with room on both sides.
pub const TEXT_FLOOR_SHARE: (u64, u64) = (1, 2);

/// What the text of one message (its content's text and the JSON of its
/// toolCalls: what ADR 0098 counts) weighs by the yardsticks
/// `estimate-covers-text` takes the least of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextCounts {
    /// `ceil(bytes / bytesPerToken)` of the text, the toolCalls at their
    /// shortest spelling.
    pub bytes: u64,
    pub cl100k: u64,
    pub o200k: u64,
    /// SPEC §3's tokens of the message's images, which `estimate-covers-images`
    /// judges: a per-message figure holds them beside the text.
    pub images: u64,
}

impl TextCounts {
    /// Cheap: the byte count and the images, with the real counts left at
    /// the byte count (an upper bound of the floor, to skip the tokenizers
    /// when an estimate clears it).
    fn cheap(m: &Message, config: &Config) -> TextCounts {
        let bytes = crate::estimate::tokens(&m.content.text(), config.bytes_per_token)
            + crate::contract::tool_calls_floor(m, config.bytes_per_token);
        TextCounts {
            bytes,
            cl100k: bytes,
            o200k: bytes,
            images: crate::contract::image_floor(m, config.wire_format),
        }
    }

    fn exact(m: &Message, config: &Config) -> TextCounts {
        let count = |e: Encoding| {
            e.count(&m.content.text())
                + crate::estimate::tool_calls_json(m).map_or(0, |j| e.count(&j))
        };
        TextCounts {
            cl100k: count(Encoding::Cl100kBase),
            o200k: count(Encoding::O200kBase),
            ..TextCounts::cheap(m, config)
        }
    }

    /// The least honest count of the text.
    pub fn least(&self) -> u64 {
        self.bytes.min(self.cl100k).min(self.o200k)
    }

    /// What an own estimate of the message must reach: the share of the
    /// least count of its text, plus its images.
    pub fn floor(&self) -> u64 {
        self.least() * TEXT_FLOOR_SHARE.0 / TEXT_FLOOR_SHARE.1 + self.images
    }
}

/// `estimate-covers-text`: an own estimate is never below half the least
/// honest count of the text it counts (`TEXT_FLOOR_SHARE`), plus SPEC §3's
/// image tokens — in total and, where the subject gives per-message
/// figures, per message. It catches a count of what a text is not (its
/// characters, its words) that the toolCalls and image floors cannot see,
/// since a subject that estimates is timed by its own count (SPEC §6): a
/// count of characters under-counts CJK 3× and emoji 4×, and compacts that
/// much too late. The tokenizers run only on the messages (or the history)
/// whose estimate is below the cheap bound.
pub fn estimate_covers_text(
    config: &Config,
    input: &[Message],
    est: &crate::subject::EstimateAnswer,
) -> Vec<super::Violation> {
    use super::{Invariant, Violation};
    let inv = Invariant::EstimateCoversText;
    let mut counts: Vec<TextCounts> = input.iter().map(|m| TextCounts::cheap(m, config)).collect();
    let per = est
        .per_message
        .as_deref()
        .filter(|p| p.len() == input.len());
    let mut exact = vec![false; input.len()];
    let mut make_exact = |counts: &mut Vec<TextCounts>, i: usize| {
        if !exact[i] {
            counts[i] = TextCounts::exact(&input[i], config);
            exact[i] = true;
        }
    };
    if est.tokens < counts.iter().map(TextCounts::floor).sum::<u64>() {
        (0..input.len()).for_each(|i| make_exact(&mut counts, i));
    }
    if let Some(per) = per {
        for (i, &t) in per.iter().enumerate() {
            if t < counts[i].floor() {
                make_exact(&mut counts, i);
            }
        }
    }
    let words = |c: &TextCounts| {
        format!(
            "{} by bytes / bytesPerToken {}, {} under cl100k_base, {} under o200k_base",
            c.bytes, config.bytes_per_token, c.cl100k, c.o200k
        )
    };
    let mut out = Vec::new();
    let floor: u64 = counts.iter().map(TextCounts::floor).sum();
    if est.tokens < floor {
        let least: u64 = counts.iter().map(TextCounts::least).sum();
        let images: u64 = counts.iter().map(|c| c.images).sum();
        let sum = |f: fn(&TextCounts) -> u64| counts.iter().map(f).sum::<u64>();
        let all = TextCounts {
            bytes: sum(|c| c.bytes),
            cl100k: sum(|c| c.cl100k),
            o200k: sum(|c| c.o200k),
            images,
        };
        out.push(
            Violation::new(
                inv,
                format!(
                    "the own estimate is {} tokens, below {floor}: half the least count of the text it counts ({}; the least of each message's, {least}){}. An estimate that counts characters or words where bytes or tokens are due compacts that much too late",
                    est.tokens,
                    words(&all),
                    if images > 0 { format!(", plus {images} tokens of images") } else { String::new() },
                ),
            )
            .number("estimate", est.tokens)
            .number("floor", floor),
        );
    }
    if let Some(per) = per {
        for (i, &t) in per.iter().enumerate() {
            let c = &counts[i];
            if t < c.floor() {
                out.push(
                    Violation::new(
                        inv,
                        format!(
                            "message {i} is estimated at {t} tokens, below {}: half the least count of its text ({}){}",
                            c.floor(),
                            words(c),
                            if c.images > 0 { format!(", plus {} tokens of images", c.images) } else { String::new() },
                        ),
                    )
                    .message(i)
                    .number("estimate", t)
                    .number("floor", c.floor()),
                );
            }
        }
    }
    out
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
