//! Token estimators (SPEC §3), behind one trait so that tests and
//! benchmarks compare versions.
//!
//! `tokens(text) = ceil(bytes(text) / bytesPerToken)`, 0 for empty text.
//! `bytesPerToken` comes from the config: it lives in one place
//! ([`Config::bytes_per_token`]), as ADR 0098 asked of the engine.
//!
//! Beyond SPEC §3's two: `safe-classwise` ([`SafeClasswise`]), priced per
//! byte class to be an upper bound of real tokens, and, with the
//! `calibrate` feature, the real tokenizers `tiktoken-cl100k` and
//! `tiktoken-o200k` ([`Tiktoken`]). `docs/calibration.md` has the numbers.

use crate::body;
use crate::config::Config;
use crate::model::{Content, Message};

pub mod images;
mod incremental;
mod safe;
pub mod table;
#[cfg(feature = "calibrate")]
pub mod tokenizer;
pub use incremental::{Incremental, MessageCost};
pub use safe::{tool_calls_json, ByClass, ClassCosts, SafeClasswise, TextProfile, SAFE_COSTS};
#[cfg(feature = "calibrate")]
pub use tokenizer::{history_real_tokens, message_real_tokens, Encoding, Tiktoken};

/// `ceil(bytes / bytes_per_token)`; 0 for 0 bytes.
pub fn tokens_for_bytes(bytes: u64, bytes_per_token: u64) -> u64 {
    bytes.div_ceil(bytes_per_token.max(1))
}

/// Tokens of a text: `ceil(bytes(text) / bytesPerToken)`.
pub fn tokens(text: &str, bytes_per_token: u64) -> u64 {
    tokens_for_bytes(text.len() as u64, bytes_per_token)
}

/// Tokens of a content (SPEC §3): tokens of its text (text parts joined),
/// plus [`images::image_tokens`] of each image in the config's wire
/// format — by its pixels, never by its base64.
pub fn content_tokens(c: &Content, config: &Config) -> u64 {
    tokens_for_bytes(c.text_len() as u64, config.bytes_per_token)
        + images::content_image_tokens(c, config.wire_format)
}

/// Tokens of the engine JSON of a message's `toolCalls` (0 without calls).
pub fn tool_call_tokens(m: &Message, bytes_per_token: u64) -> u64 {
    match m.tool_calls.as_deref() {
        Some(calls) if !calls.is_empty() => {
            tokens_for_bytes(body::tool_calls_size(calls), bytes_per_token)
        }
        _ => 0,
    }
}

/// A token estimator: a figure per message, summed over the history.
pub trait Estimator: Send + Sync {
    /// The stable name used on the command line and in reports.
    fn name(&self) -> &'static str;

    /// Estimated tokens of one message.
    fn message_tokens(&self, m: &Message, config: &Config) -> u64;

    /// Estimated tokens of a history: the sum over its messages.
    fn tokens(&self, msgs: &mut dyn Iterator<Item = &Message>, config: &Config) -> u64 {
        msgs.map(|m| self.message_tokens(m, config)).sum()
    }

    /// Per-message figures and their total.
    fn per_message(&self, msgs: &[Message], config: &Config) -> (Vec<u64>, u64) {
        let per: Vec<u64> = msgs
            .iter()
            .map(|m| self.message_tokens(m, config))
            .collect();
        let total = per.iter().sum();
        (per, total)
    }
}

/// The estimator before ADR 0098: Σ tokens(content). Tool-call arguments
/// weigh nothing, which is how the 413 in the ADR shipped. Kept as the
/// baseline for benchmarks and mutation tests. Images count by their
/// pixels (SPEC §3), as in every estimator here.
#[derive(Debug, Clone, Copy, Default)]
pub struct ContentOnly;

impl Estimator for ContentOnly {
    fn name(&self) -> &'static str {
        "content-only"
    }
    fn message_tokens(&self, m: &Message, config: &Config) -> u64 {
        content_tokens(&m.content, config)
    }
}

/// ADR 0098's estimator: tokens(content) plus tokens(JSON of `toolCalls`)
/// for assistant messages with calls. The reference's estimator. An
/// image's tokens are SPEC §3's, by its pixels.
#[derive(Debug, Clone, Copy, Default)]
pub struct Adr0098;

impl Estimator for Adr0098 {
    fn name(&self) -> &'static str {
        "adr-0098"
    }
    fn message_tokens(&self, m: &Message, config: &Config) -> u64 {
        content_tokens(&m.content, config) + tool_call_tokens(m, config.bytes_per_token)
    }
}

/// The names of the built-in estimators, for `--estimator`. The real
/// tokenizers (`tiktoken-*`) are there with the `calibrate` feature.
#[cfg(not(feature = "calibrate"))]
pub const NAMES: [&str; 3] = ["adr-0098", "content-only", "safe-classwise"];
/// The names of the built-in estimators, for `--estimator`. The real
/// tokenizers (`tiktoken-*`) are there with the `calibrate` feature.
#[cfg(feature = "calibrate")]
pub const NAMES: [&str; 5] = [
    "adr-0098",
    "content-only",
    "safe-classwise",
    "tiktoken-cl100k",
    "tiktoken-o200k",
];

/// A built-in estimator by name.
pub fn by_name(name: &str) -> Option<Box<dyn Estimator>> {
    match name {
        "adr-0098" => Some(Box::new(Adr0098)),
        "content-only" => Some(Box::new(ContentOnly)),
        "safe-classwise" => Some(Box::new(SafeClasswise::default())),
        #[cfg(feature = "calibrate")]
        "tiktoken-cl100k" => Some(Box::new(Tiktoken(Encoding::Cl100kBase))),
        #[cfg(feature = "calibrate")]
        "tiktoken-o200k" => Some(Box::new(Tiktoken(Encoding::O200kBase))),
        _ => None,
    }
}

/// For the crate's tests: an assistant message with one call, `id`,
/// reading the file at `path`.
#[cfg(test)]
pub(crate) fn read_file_call(id: &str, path: &str) -> Message {
    let call = crate::model::ToolCall::new(id, "read_file", serde_json::json!({ "path": path }));
    Message::assistant_calls("", vec![call])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_calls_weigh_under_adr_0098_and_not_before() {
        let config = Config::default();
        let m = read_file_call("call_1", "apps/api/src/main.ts");
        let json_len = serde_json::to_vec(&json!([{"id":"call_1","name":"read_file","arguments":{"path":"apps/api/src/main.ts"}}]))
            .unwrap()
            .len() as u64;
        assert_eq!(Adr0098.message_tokens(&m, &config), json_len.div_ceil(4));
        assert_eq!(ContentOnly.message_tokens(&m, &config), 0);
    }

    #[test]
    fn tokens_round_up() {
        assert_eq!(tokens("", 4), 0);
        assert_eq!(tokens("a", 4), 1);
        assert_eq!(tokens("abcd", 4), 1);
        assert_eq!(tokens("abcde", 4), 2);
        assert_eq!(tokens("世", 1), 3);
    }
}
