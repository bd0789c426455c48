//! The real tokenizers: OpenAI's `cl100k_base` and `o200k_base` BPE
//! encodings, through tiktoken-rs (its ranks ship inside the crate; nothing
//! is downloaded). Real tokens are counted on the same parts ADR 0098's
//! estimator counts — a message's `content`, plus the engine JSON of its
//! `toolCalls` — so that estimate and real count compare like for like.
//! Per-message framing tokens (role markers, separators) are not counted,
//! by either side.

use std::fmt;
use std::str::FromStr;

use tiktoken_rs::CoreBPE;

use crate::config::Config;
use crate::estimate::{tool_calls_json, Estimator};
use crate::model::Message;

/// A real BPE encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Encoding {
    /// GPT-4, GPT-3.5-turbo.
    Cl100kBase,
    /// GPT-4o, GPT-4.1, o-series.
    O200kBase,
}

impl Encoding {
    pub const ALL: [Encoding; 2] = [Encoding::Cl100kBase, Encoding::O200kBase];

    /// tiktoken's name for the encoding.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Cl100kBase => "cl100k_base",
            Encoding::O200kBase => "o200k_base",
        }
    }

    pub fn parse(name: &str) -> Option<Encoding> {
        Encoding::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The shared, lazily built tokenizer (building one takes a fraction of
    /// a second; it is done once per process).
    fn bpe(self) -> &'static CoreBPE {
        match self {
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        }
    }

    /// Real tokens of a text, special-token strings counted as plain text
    /// (they are plain text in a history).
    ///
    /// A run of whitespace longer than [`SPACE_RUN_MAX`] bytes is counted
    /// in pieces of that length: tiktoken's pattern (`\s+(?!\S)`)
    /// backtracks a step a character, and past about a million it fails
    /// — a panic inside tiktoken-rs, where a count is wanted. Counted
    /// apart, the pieces may come to a token more than the whole at each
    /// cut; every other text is counted whole, exactly.
    pub fn count(self, text: &str) -> u64 {
        space_runs_cut(text)
            .filter(|piece| !piece.is_empty())
            .map(|piece| self.bpe().encode_ordinary(piece).len() as u64)
            .sum()
    }
}

/// The longest run of whitespace counted whole (bytes).
pub const SPACE_RUN_MAX: usize = 1 << 18;

/// `text` cut inside each run of whitespace longer than [`SPACE_RUN_MAX`]
/// bytes, every [`SPACE_RUN_MAX`] bytes of it (at a character boundary);
/// elsewhere whole.
fn space_runs_cut(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() <= SPACE_RUN_MAX {
            return Some(std::mem::take(&mut rest));
        }
        // The first point where a run of whitespace reaches the limit.
        let mut run_start = None;
        let mut cut = rest.len();
        for (i, c) in rest.char_indices() {
            match (c.is_whitespace(), run_start) {
                (true, None) => run_start = Some(i),
                (true, Some(s)) if i - s >= SPACE_RUN_MAX => {
                    cut = i;
                    break;
                }
                (true, Some(_)) => {}
                (false, _) => run_start = None,
            }
        }
        let (piece, after) = rest.split_at(cut);
        rest = after;
        Some(piece)
    })
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Encoding {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Encoding::parse(s)
            .ok_or_else(|| format!("unknown encoding {s:?} (cl100k_base or o200k_base)"))
    }
}

/// Real tokens of one message: tokens of its text plus, for an
/// assistant message with calls, tokens of the JSON of its `toolCalls`,
/// plus its images by their pixels, never their base64 (SPEC §3), at the
/// larger of the two providers' published rules: an image's real cost
/// depends on who serves the request, and a bound must hold for both.
pub fn message_real_tokens(m: &Message, encoding: Encoding) -> u64 {
    encoding.count(&m.content.text())
        + tool_calls_json(m).map_or(0, |j| encoding.count(&j))
        + crate::estimate::images::content_image_tokens_any_provider(&m.content)
}

/// Real tokens of a history: the sum over its messages.
pub fn history_real_tokens(msgs: &[Message], encoding: Encoding) -> u64 {
    msgs.iter().map(|m| message_real_tokens(m, encoding)).sum()
}

/// An estimator that is not one: the real tokenizer, counting the same
/// parts as `adr-0098` (`tiktoken-cl100k`, `tiktoken-o200k`). Exact, and
/// slower by orders of magnitude than the byte heuristics; `bytesPerToken`
/// is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiktoken(pub Encoding);

impl Tiktoken {
    /// The estimator's name for an encoding.
    pub fn name_for(encoding: Encoding) -> &'static str {
        match encoding {
            Encoding::Cl100kBase => "tiktoken-cl100k",
            Encoding::O200kBase => "tiktoken-o200k",
        }
    }
}

impl Estimator for Tiktoken {
    fn name(&self) -> &'static str {
        Tiktoken::name_for(self.0)
    }
    fn message_tokens(&self, m: &Message, _config: &Config) -> u64 {
        message_real_tokens(m, self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::read_file_call;

    #[test]
    fn known_counts() {
        // "hello world" is two tokens in both encodings.
        for e in Encoding::ALL {
            assert_eq!(e.count("hello world"), 2, "{e}");
            assert_eq!(e.count(""), 0);
            // Special-token text is plain text here, not a panic.
            assert!(e.count("<|endoftext|>") > 1);
        }
    }

    /// A run of whitespace tiktoken's pattern cannot take whole (about a
    /// million characters; o200k_base panicked) is counted in pieces, and
    /// the count stays within a token a cut of the whole's; text around
    /// it, and any text without such a run, is counted exactly.
    #[test]
    fn a_run_of_whitespace_of_any_length_is_counted_without_a_panic() {
        for space in [" ", "\t ", "\u{3000}", "\u{a0}"] {
            let n = 1_100_000 / space.len();
            let text = format!("before {} after", space.repeat(n));
            let cuts = text.len() / SPACE_RUN_MAX;
            for e in Encoding::ALL {
                let pieces: Vec<&str> = space_runs_cut(&text).collect();
                assert_eq!(pieces.concat(), text);
                assert!(pieces.len() > 1 && pieces.iter().all(|p| p.len() <= 2 * SPACE_RUN_MAX));
                let counted = e.count(&text);
                let spaces_alone = e.count(&space.repeat(SPACE_RUN_MAX / space.len()));
                assert!(
                    counted > 0 && counted <= (cuts as u64 + 2) * spaces_alone + 4,
                    "{e}"
                );
            }
        }
        // Under the limit, whole: the same count as tiktoken's own.
        let text = format!("a{}b", " ".repeat(SPACE_RUN_MAX - 2));
        assert_eq!(space_runs_cut(&text).count(), 1);
        for e in Encoding::ALL {
            assert_eq!(e.count(&text), e.bpe().encode_ordinary(&text).len() as u64);
        }
    }

    #[test]
    fn calls_count_as_their_engine_json() {
        let m = read_file_call("call_1", "a.rs");
        let text = tool_calls_json(&m).unwrap();
        assert_eq!(
            text,
            r#"[{"id":"call_1","name":"read_file","arguments":{"path":"a.rs"}}]"#
        );
        for e in Encoding::ALL {
            assert_eq!(message_real_tokens(&m, e), e.count(&text));
        }
    }
}
