//! Deterministic samples per content class: the text an agent's history is
//! made of, written by the generator's piece writers
//! (`generate::text::pieces`) driven by a seeded PRNG, so that a
//! calibration run is the same on every machine and every run.
//!
//! Each sample is one message, sized between [`MIN_BYTES`] and
//! [`MAX_BYTES`] (log-uniform): a `tool` result or a `user` turn holding the
//! text, except the `json` class, whose samples are assistant messages with
//! `toolCalls` and empty content — the shape that ADR 0098's `content-only`
//! estimator counted as nothing, reported as the set `json-arguments`.
//! Samples aim at token density, not at history shapes; the classes are
//! the generator's ([`ContentClass`]), one vocabulary for both.

use crate::model::Message;

pub use crate::generate::text::pieces::Rng;
use crate::generate::text::pieces::{fill, piece, separator, tool_calls};
pub use crate::generate::text::ContentClass;

/// Shortest sample, in bytes (before the last word is finished).
pub const MIN_BYTES: usize = 48;
/// Longest sample, in bytes (before the last word is finished).
pub const MAX_BYTES: usize = 4096;

/// The name of `class`'s sample set in calibrate's reports (and
/// docs/calibration.md): the class, and for JSON the shape it is sent in.
pub fn set_name(class: ContentClass) -> &'static str {
    match class {
        ContentClass::Prose => "english-prose",
        ContentClass::Code => "code",
        ContentClass::Json => "json-arguments",
        ContentClass::Cjk => "cjk",
        ContentClass::Multilingual => "multilingual",
        ContentClass::Emoji => "emoji",
        ContentClass::Escapes => "escape-heavy",
        ContentClass::Images => "images",
    }
}

/// The class of a sample set's name ([`set_name`]).
pub fn parse_set(name: &str) -> Option<ContentClass> {
    ContentClass::ALL.into_iter().find(|&c| set_name(c) == name)
}

/// `count` samples of `class`, the same for the same `seed`.
pub fn samples(class: ContentClass, seed: u64, count: usize) -> Vec<Message> {
    // One stream per class, so that adding a class changes no other.
    let mut rng = Rng::new(seed ^ (class as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F));
    (0..count)
        .map(|i| {
            let target = target_len(&mut rng);
            sample(class, i, target, &mut rng)
        })
        .collect()
}

/// Log-uniform between MIN_BYTES and MAX_BYTES: many short texts, some long.
fn target_len(rng: &mut Rng) -> usize {
    let (lo, hi) = ((MIN_BYTES as f64).ln(), (MAX_BYTES as f64).ln());
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (lo + u * (hi - lo)).exp() as usize
}

fn sample(class: ContentClass, i: usize, target: usize, rng: &mut Rng) -> Message {
    let text = |rng: &mut Rng| fill(target, rng, |r| piece(class, i, r), separator(class));
    match class {
        ContentClass::Json => Message::assistant_calls("", tool_calls(target, rng)),
        ContentClass::Code | ContentClass::Escapes => Message::tool(format!("call_{i}"), text(rng)),
        _ => Message::user(text(rng)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_deterministic_and_sized() {
        for class in ContentClass::ALL {
            let a = samples(class, 7, 20);
            let b = samples(class, 7, 20);
            assert_eq!(a, b, "{class:?}");
            assert_ne!(a, samples(class, 8, 20), "{class:?}");
            for m in &a {
                let size =
                    m.content.text().len() + crate::body::tool_calls_size(m.calls()) as usize;
                assert!(size >= MIN_BYTES, "{class:?}: {size}");
            }
        }
    }

    #[test]
    fn json_arguments_live_in_tool_calls() {
        for m in samples(ContentClass::Json, 1, 10) {
            assert!(m.content.is_empty());
            assert!(m.opens_iteration());
        }
    }

    #[test]
    fn classes_hold_what_they_say() {
        let text = |c| {
            samples(c, 3, 30)
                .iter()
                .map(|m| m.content.text().into_owned())
                .collect::<String>()
        };
        let of_width = |c, bytes| text(c).chars().filter(|ch| ch.len_utf8() == bytes).count();
        assert!(of_width(ContentClass::Cjk, 3) > 1000);
        assert!(of_width(ContentClass::Emoji, 4) > 200);
        assert!(text(ContentClass::Escapes).contains('\u{1b}'));
        assert!(text(ContentClass::Prose).is_ascii());
    }
}
