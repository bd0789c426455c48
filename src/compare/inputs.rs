//! The inputs every estimator is given, the same for all: calibrate's
//! generated samples, one set per content class; the real histories of the
//! corpus; and generated ToolLoop histories (`generate`). For each history,
//! the real token count of each message in both encodings, and the longer
//! history that `estimate-monotone` compares it with.
//!
//! A calibrate sample that is a lone `tool` result (the `code` and
//! `escape-heavy` classes) is sent as a `user` message with the same
//! content: a history of one tool result answers no call, so a subject may
//! rightly refuse it (SPEC §6 `invalid_input`), and the text — all that
//! estimate and real count measure of it — is the same.

use crate::body;
use crate::calibrate::samples::{self, ContentClass};
use crate::calibrate::{
    image_samples, message_real_tokens, per_encoding, History, IMAGES, REAL_HISTORIES,
};
use crate::generate::{case_from_seed, GenConfig};
use crate::harness::appended_message;
use crate::model::{Message, Role};

/// The name of the generated ToolLoop set.
pub const TOOLLOOP: &str = "toolloop";

/// Where a set comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    /// calibrate's samples of one content class, one message a history.
    Class,
    /// calibrate's `images` set: one image alone in each history.
    Images,
    /// The real histories of the corpus.
    Real,
    /// Histories from `generate`, shaped like a ToolLoop's.
    ToolLoop,
}

impl SetKind {
    pub fn name(self) -> &'static str {
        match self {
            SetKind::Class => "generated-class",
            SetKind::Images => "generated-images",
            SetKind::Real => "real",
            SetKind::ToolLoop => "generated-toolloop",
        }
    }
}

/// One set of histories, with what the statistics need of each.
#[derive(Debug, Clone)]
pub struct Set {
    pub name: String,
    pub kind: SetKind,
    pub histories: Vec<Vec<Message>>,
    /// What a report calls each history: a corpus file, `sample 12`, `case 3`.
    pub labels: Vec<String>,
    /// Each history with [`appended_message`] after it (`estimate-monotone`).
    pub longer: Vec<Vec<Message>>,
    /// Per encoding ([`Encoding::ALL`](crate::calibrate::Encoding::ALL)
    /// order), per history, per message: real tokens of content plus
    /// toolCalls JSON.
    pub real: [Vec<Vec<u64>>; 2],
    /// Bytes of the engine JSON of every history and longer history: what
    /// a pass over the set sends as messages.
    pub bytes: u64,
}

impl Set {
    /// Real tokens of history `i` in `encoding`.
    pub fn real_tokens(&self, encoding: usize, i: usize) -> u64 {
        self.real[encoding][i].iter().sum()
    }

    /// Requests one pass sends: an estimate of each history and of its longer one.
    pub fn requests(&self) -> usize {
        2 * self.histories.len()
    }

    pub fn messages(&self) -> usize {
        self.histories.iter().map(Vec::len).sum()
    }
}

/// What the sets are made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputOptions {
    pub seed: u64,
    pub samples_per_class: usize,
    pub toolloop_seed: u64,
    pub toolloop_histories: usize,
}

impl InputOptions {
    /// The real histories alone: no samples, no ToolLoop histories.
    #[cfg(test)]
    pub(crate) fn real_only() -> InputOptions {
        InputOptions {
            seed: 1,
            samples_per_class: 0,
            toolloop_seed: 1,
            toolloop_histories: 0,
        }
    }
}

/// For the tests: the real set of one history, `calls.json`, whose
/// assistant reads a file.
#[cfg(test)]
pub(crate) fn one_call_set() -> Set {
    let corpus = [History {
        name: "calls.json".into(),
        messages: vec![
            Message::user("read the file please"),
            crate::estimate::read_file_call("c1", "src/main.rs"),
            Message::tool("c1", "fn main() {}"),
        ],
    }];
    build(&corpus, &InputOptions::real_only()).remove(0)
}

/// Build every set: the classes in calibrate's order, the images, the real histories,
/// then the ToolLoop histories (a set left empty by its option, or an
/// empty corpus, is left out).
pub fn build(corpus: &[History], options: &InputOptions) -> Vec<Set> {
    // (name, kind, histories, labels) of each set, before counting.
    type Raw = (String, SetKind, Vec<Vec<Message>>, Vec<String>);
    let mut raw: Vec<Raw> = Vec::new();
    if options.samples_per_class > 0 {
        for class in ContentClass::ALL {
            let msgs = samples::samples(class, options.seed, options.samples_per_class);
            let labels = (0..msgs.len()).map(|i| format!("sample {i}")).collect();
            let histories = msgs.into_iter().map(|m| vec![as_history_message(m)]);
            raw.push((
                samples::set_name(class).to_owned(),
                SetKind::Class,
                histories.collect(),
                labels,
            ));
        }
        let images = image_samples(options.samples_per_class);
        let labels = images
            .iter()
            .map(|m| {
                let img = m.content.images().next().expect("one image a sample");
                let (w, h) = img.pixels().unwrap_or_default();
                format!("{} {w}×{h}", img.media_type())
            })
            .collect();
        raw.push((
            IMAGES.to_owned(),
            SetKind::Images,
            images.into_iter().map(|m| vec![m]).collect(),
            labels,
        ));
    }
    if !corpus.is_empty() {
        raw.push((
            REAL_HISTORIES.to_owned(),
            SetKind::Real,
            corpus.iter().map(|h| h.messages.clone()).collect(),
            corpus.iter().map(|h| h.name.clone()).collect(),
        ));
    }
    if options.toolloop_histories > 0 {
        let (histories, labels) = toolloop(options.toolloop_seed, options.toolloop_histories);
        raw.push((TOOLLOOP.to_owned(), SetKind::ToolLoop, histories, labels));
    }
    let [mut cl100k, mut o200k]: [Vec<Vec<Vec<u64>>>; 2] = per_encoding(|encoding| {
        raw.iter()
            .map(|(_, _, histories, _)| {
                histories
                    .iter()
                    .map(|h| h.iter().map(|m| message_real_tokens(m, encoding)).collect())
                    .collect()
            })
            .collect()
    });
    raw.into_iter()
        .enumerate()
        .map(|(s, (name, kind, histories, labels))| {
            let longer: Vec<Vec<Message>> = histories
                .iter()
                .map(|h| {
                    let mut l = h.clone();
                    l.push(appended_message(h));
                    l
                })
                .collect();
            let bytes = histories.iter().chain(&longer).map(|h| json_bytes(h)).sum();
            Set {
                name,
                kind,
                histories,
                labels,
                longer,
                real: [
                    std::mem::take(&mut cl100k[s]),
                    std::mem::take(&mut o200k[s]),
                ],
                bytes,
            }
        })
        .collect()
}

/// A lone tool result becomes a user message with the same content.
fn as_history_message(m: Message) -> Message {
    if m.role == Role::Tool {
        Message::user(m.content.text().into_owned())
    } else {
        m
    }
}

/// `count` well-formed generated histories of the seed, with portable
/// numbers only (as `check` sends a subject that does not claim exact ones).
fn toolloop(seed: u64, count: usize) -> (Vec<Vec<Message>>, Vec<String>) {
    let g = GenConfig {
        exotic_numbers_percent: 0,
        ..GenConfig::default()
    };
    (0..count as u64)
        .map(|i| {
            let case = case_from_seed(seed, i, &g);
            debug_assert!(case.is_well_formed(), "case {i} of seed {seed}");
            (case.messages, format!("seed {seed} case {i}"))
        })
        .unzip()
}

/// Bytes of a history's engine JSON: `[` messages joined by `,` `]`.
pub fn json_bytes(msgs: &[Message]) -> u64 {
    2 + msgs.iter().map(body::message_size).sum::<u64>() + msgs.len().saturating_sub(1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::check_well_formed;

    #[test]
    fn every_history_is_well_formed_and_counted() {
        let options = InputOptions {
            seed: 1,
            samples_per_class: 3,
            toolloop_seed: 2,
            toolloop_histories: 4,
        };
        let corpus = [History {
            name: "a.json".into(),
            messages: vec![Message::user("hello world")],
        }];
        let sets = build(&corpus, &options);
        assert_eq!(sets.len(), ContentClass::ALL.len() + 3);
        let images = sets.iter().find(|s| s.kind == SetKind::Images).unwrap();
        assert_eq!(images.histories.len(), 3);
        assert_eq!(images.labels[0], "image/gif 64×64");
        // Real tokens of an image are SPEC §3's, by pixels: 64 × 64 is
        // ⌈4096 / 750⌉ = 6 (anthropic), 85 + 170 (openai, one tile).
        assert_eq!(images.real_tokens(0, 0), 255);
        for set in &sets {
            for (i, h) in set.histories.iter().enumerate() {
                assert!(check_well_formed(h).is_ok(), "{} {i}", set.name);
                assert!(
                    check_well_formed(&set.longer[i]).is_ok(),
                    "{} {i}",
                    set.name
                );
                assert_eq!(set.longer[i].len(), h.len() + 1);
                assert_eq!(set.real[0][i].len(), h.len());
            }
        }
        let real = sets.iter().find(|s| s.kind == SetKind::Real).unwrap();
        assert_eq!(real.labels, ["a.json"]);
        assert_eq!(real.real_tokens(0, 0), 2);
        assert_eq!(
            json_bytes(&real.histories[0]),
            serde_json::to_vec(&crate::model::engine::write_messages(&real.histories[0]))
                .unwrap()
                .len() as u64
        );
    }
}
