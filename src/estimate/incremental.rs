//! An incremental estimator and body-size tracker for the ToolLoop.
//!
//! An agent loop asks "compact now?" every turn. From scratch that is an
//! estimate and an exact body size of the whole history: O(history) per
//! turn, O(turns²) per session. [`Incremental`] keeps each message's
//! estimate and exact size and their running sums, so appending an
//! iteration costs O(its bytes) and the question costs O(1); after a
//! compaction, [`Incremental::truncate`] and [`Incremental::remove_front`]
//! reuse the sizes of the messages that stay instead of re-serialising them.
//!
//! The per-message body size is independent of the neighbours in the
//! engine and openai formats. In the anthropic format it is not (runs of
//! tool results merge into one user message, a leading system message moves
//! to the top level), so there the tracker keeps the messages and measures
//! the body from scratch: exact, but O(history).

use std::collections::VecDeque;

use super::Estimator;
use crate::body;
use crate::config::Config;
use crate::model::{Message, WireFormat};

/// One message's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageCost {
    /// Estimated tokens.
    pub tokens: u64,
    /// Exact serialised size in the configured format (0 for anthropic,
    /// where a message's size depends on its neighbours).
    pub bytes: u64,
}

/// Running estimate and exact body size of a growing history.
#[derive(Clone)]
pub struct Incremental<'e> {
    estimator: &'e dyn Estimator,
    config: Config,
    costs: VecDeque<MessageCost>,
    tokens: u64,
    bytes: u64,
    /// The messages themselves, for the anthropic format only.
    kept: Option<VecDeque<Message>>,
}

impl<'e> Incremental<'e> {
    /// An empty history under `config`, estimated with `estimator`.
    pub fn new(estimator: &'e dyn Estimator, config: &Config) -> Self {
        Incremental {
            estimator,
            config: config.clone(),
            costs: VecDeque::new(),
            tokens: 0,
            bytes: 0,
            kept: (config.wire_format == WireFormat::Anthropic).then(VecDeque::new),
        }
    }

    /// A tracker over an existing history.
    pub fn from_messages(estimator: &'e dyn Estimator, config: &Config, msgs: &[Message]) -> Self {
        let mut t = Incremental::new(estimator, config);
        t.extend(msgs);
        t
    }

    /// Append one message: O(its bytes).
    pub fn push(&mut self, m: &Message) {
        let tokens = self.estimator.message_tokens(m, &self.config);
        let bytes = match &mut self.kept {
            Some(kept) => {
                kept.push_back(m.clone());
                0
            }
            None => body::message_size_in(self.config.wire_format, m),
        };
        self.tokens += tokens;
        self.bytes += bytes;
        self.costs.push_back(MessageCost { tokens, bytes });
    }

    /// Append messages (an iteration, a turn): O(their bytes).
    pub fn extend<'m>(&mut self, msgs: impl IntoIterator<Item = &'m Message>) {
        for m in msgs {
            self.push(m);
        }
    }

    /// Room for `additional` more messages without reallocating.
    pub fn reserve(&mut self, additional: usize) {
        self.costs.reserve(additional);
        if let Some(kept) = &mut self.kept {
            kept.reserve(additional);
        }
    }

    /// Keep the first `len` messages.
    pub fn truncate(&mut self, len: usize) {
        while self.costs.len() > len {
            let c = self.costs.pop_back().expect("len checked");
            self.tokens -= c.tokens;
            self.bytes -= c.bytes;
        }
        if let Some(kept) = &mut self.kept {
            kept.truncate(len);
        }
    }

    /// Drop the first `n` messages (at most all of them).
    pub fn remove_front(&mut self, n: usize) {
        for _ in 0..n.min(self.costs.len()) {
            let c = self.costs.pop_front().expect("len checked");
            self.tokens -= c.tokens;
            self.bytes -= c.bytes;
            if let Some(kept) = &mut self.kept {
                kept.pop_front();
            }
        }
    }

    /// Forget everything.
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// How many messages are tracked.
    pub fn len(&self) -> usize {
        self.costs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.costs.is_empty()
    }

    /// The figures of message `i`.
    pub fn cost(&self, i: usize) -> Option<MessageCost> {
        self.costs.get(i).copied()
    }

    /// The estimate of the whole history, in tokens: O(1).
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// The exact body size of the whole history (SPEC §2): O(1) in the
    /// engine and openai formats, O(history) in the anthropic format.
    pub fn body_bytes(&self) -> u64 {
        match &self.kept {
            Some(kept) => body::body_bytes(&self.config, kept.iter()),
            None => body::body_bytes_from_sizes(&self.config, self.bytes, self.costs.len())
                .expect("engine or openai format"),
        }
    }

    /// Whether the history needs compacting: the estimate over the trigger
    /// or the body over the ceiling (SPEC §4 step 1).
    pub fn needs_compaction(&self) -> bool {
        crate::contract::due(&self.config, self.tokens(), self.body_bytes())
    }

    /// The config the figures are for.
    pub fn config(&self) -> &Config {
        &self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::Adr0098;

    /// After every append, truncate and removal, the running figures equal
    /// the from-scratch ones, in every wire format the generator draws.
    #[test]
    fn running_figures_equal_from_scratch() {
        for (i, case) in crate::generate::seeded(11, 150) {
            let (config, msgs) = (&case.config, &case.messages);
            let mut t = Incremental::new(&Adr0098, config);
            for (n, m) in msgs.iter().enumerate() {
                t.push(m);
                let prefix = &msgs[..=n];
                assert_eq!(t.tokens(), Adr0098.tokens(&mut prefix.iter(), config));
                assert_eq!(t.body_bytes(), body::body_bytes(config, prefix), "case {i}");
            }
            let half = msgs.len() / 2;
            t.truncate(half);
            assert_eq!(t.body_bytes(), body::body_bytes(config, &msgs[..half]));
            t.extend(&msgs[half..]);
            t.remove_front(half / 2);
            let rest = &msgs[half / 2..];
            assert_eq!(t.len(), rest.len());
            assert_eq!(t.tokens(), Adr0098.tokens(&mut rest.iter(), config));
            assert_eq!(t.body_bytes(), body::body_bytes(config, rest), "case {i}");
            let scratch = Adr0098.tokens(&mut rest.iter(), config) > config.trigger()
                || body::body_bytes(config, rest) > config.transport_max_body_bytes;
            assert_eq!(t.needs_compaction(), scratch);
            t.clear();
            assert_eq!(t.body_bytes(), body::body_bytes(config, &[]));
        }
    }
}
