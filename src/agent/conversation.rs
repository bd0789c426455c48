//! The conversation so far, rebuilt from a case's loop requests: what the
//! agent has been told and has told the model, in order — its first
//! request's messages (system prompt, task), each model turn ctxgate
//! answered, the results the agent then sent, any message of its own it
//! appended. Each request is matched against it: which of its messages are
//! known (and in which order), which known ones it leaves out or shortens,
//! which are new.
//!
//! A message is known by an *anchor*: an assistant turn by its call ids, a
//! tool result by the id it answers, any other message by its role and
//! text. A message that holds a summary ctxgate wrote, or that is new and
//! not at the request's end, is the agent's own rewriting (a summary, a
//! wrapper) and no part of the conversation.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use super::play::SUMMARY_MARK;
use crate::body::openai_message_size;
use crate::model::{Content, ImageSource, Message, Part, Role};

/// One message of the conversation.
#[derive(Debug, Clone)]
pub struct Entry {
    pub message: Message,
    /// A hash of its text and images (what "shortened" compares).
    pub content: u64,
    /// Its size as Chat Completions writes it, in bytes.
    pub bytes: u64,
    /// Words the agent wrote itself and may write again: a text-only user
    /// message after the first (the task) — "Continue if you have next
    /// steps…", "What did we do so far?", a format reminder.
    pub own: bool,
    /// Pushed by ctxgate as the turn it answered, which knows the calls'
    /// ids, not the names and arguments the agent's tools gave them: its
    /// size is the agent's copy's once a request carries one.
    pub answered: bool,
}

/// How one request stands against the conversation before it.
#[derive(Debug, Clone, Default)]
pub struct Matched {
    /// Conversation indices of the request's known messages, in the
    /// request's order.
    pub known: Vec<usize>,
    /// Pairs (earlier in the request, later in the request) of conversation
    /// indices that are out of order.
    pub out_of_order: Vec<(usize, usize)>,
    /// Conversation indices the request leaves out.
    pub left_out: Vec<usize>,
    /// Conversation indices the request carries shortened or changed.
    pub changed: Vec<usize>,
    /// Messages of the request that are summaries or the agent's own.
    pub rewritten: usize,
}

impl Matched {
    /// The request leaves something of the conversation out (or cut).
    pub fn compacted(&self) -> bool {
        !self.left_out.is_empty() || !self.changed.is_empty()
    }
}

/// The conversation as rebuilt so far.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    pub entries: Vec<Entry>,
    anchors: HashMap<String, Vec<usize>>,
}

impl Conversation {
    /// Match `msgs` against the conversation, then take in what is new at
    /// their end.
    pub fn take(&mut self, msgs: &[Message]) -> Matched {
        let mut m = Matched::default();
        let mut last: Option<usize> = None;
        let mut seen = vec![false; self.entries.len()];
        let mut tail_from = 0;
        for (i, msg) in msgs.iter().enumerate() {
            if is_summary(msg) {
                m.rewritten += 1;
                continue;
            }
            match self.find(msg, last, &seen) {
                Some(at) => {
                    if let Some(prev) = last {
                        if at <= prev {
                            m.out_of_order.push((prev, at));
                        }
                    }
                    if self.entries[at].answered {
                        // The turn as the agent sends it: its calls' names
                        // and arguments weigh in the conversation (a long
                        // path a call, kilobytes a turn), which ctxgate's
                        // own copy of the turn left out.
                        self.entries[at].answered = false;
                        self.entries[at].bytes = openai_message_size(msg);
                    }
                    if !seen[at] {
                        seen[at] = true;
                        if content_hash(msg) != self.entries[at].content
                            && !extends(msg, &self.entries[at].message)
                        {
                            m.changed.push(at);
                        }
                    }
                    m.known.push(at);
                    last = Some(last.map_or(at, |l| l.max(at)));
                    tail_from = i + 1;
                }
                None => m.rewritten += 1,
            }
        }
        m.left_out = (0..seen.len()).filter(|&i| !seen[i]).collect();
        // What is new at the end is the conversation's next part (none of
        // it matched an entry: `tail_from` is past the last that did).
        for msg in &msgs[tail_from..] {
            if !is_summary(msg) {
                let own = msg.role == Role::User
                    && msg.content.images().next().is_none()
                    && self.entries.iter().any(|e| e.message.role == Role::User);
                self.push(msg.clone());
                if let Some(e) = self.entries.last_mut() {
                    e.own = own;
                }
                m.rewritten = m.rewritten.saturating_sub(1);
            }
        }
        m
    }

    /// Append a message (a model turn ctxgate answered).
    pub fn push(&mut self, message: Message) {
        let at = self.entries.len();
        for a in anchors(&message) {
            self.anchors.entry(a).or_default().push(at);
        }
        self.entries.push(Entry {
            content: content_hash(&message),
            bytes: openai_message_size(&message),
            message,
            own: false,
            answered: false,
        });
    }

    /// Append the turn ctxgate answered (its calls without the agent's
    /// names and arguments): sized as the agent sends it, once it does.
    pub fn push_answered(&mut self, message: Message) {
        self.push(message);
        if let Some(e) = self.entries.last_mut() {
            e.answered = true;
        }
    }

    /// The conversation entry `msg` is, preferring the first after `after`;
    /// else an earlier one this request has not matched yet (a message
    /// moved back: out of order) — never one it matched already, nor
    /// words of the agent's own (`Entry::own`): an agent may write the
    /// same words again ("Continue", a format reminder; opencode after
    /// each compaction, its earlier "Continue" summarised away), and the
    /// second time is a new message.
    fn find(&self, msg: &Message, after: Option<usize>, seen: &[bool]) -> Option<usize> {
        let mut candidates: Vec<usize> = anchors(msg)
            .iter()
            .filter_map(|a| self.anchors.get(a))
            .flatten()
            .copied()
            .collect();
        if candidates.is_empty() && matches!(msg.role, Role::User | Role::System) {
            // A message the agent grew (a reminder appended to the task) is
            // still that message.
            candidates = (0..self.entries.len())
                .filter(|&i| extends(msg, &self.entries[i].message))
                .collect();
        }
        candidates.sort_unstable();
        candidates.dedup();
        let after = after.map_or(0, |a| a + 1);
        candidates
            .iter()
            .find(|&&c| c >= after)
            .or_else(|| {
                candidates.iter().find(|&&c| {
                    !seen.get(c).copied().unwrap_or(false)
                        && !self.entries.get(c).is_some_and(|e| e.own)
                })
            })
            .copied()
    }
}

/// Whether a message holds a summary ctxgate wrote.
pub fn is_summary(msg: &Message) -> bool {
    msg.content.text().contains(SUMMARY_MARK)
}

/// `msg` is `known`'s role and holds its (non-empty) text whole.
fn extends(msg: &Message, known: &Message) -> bool {
    if msg.role != known.role || known.role == Role::Tool || !known.calls().is_empty() {
        return false;
    }
    let known_text = known.content.text();
    !known_text.trim().is_empty() && msg.content.text().contains(known_text.as_ref())
}

fn anchors(m: &Message) -> Vec<String> {
    if !m.calls().is_empty() {
        return m.calls().iter().map(|c| format!("call:{}", c.id)).collect();
    }
    if let Some(id) = &m.tool_call_id {
        return vec![format!("result:{id}")];
    }
    vec![format!("text:{}:{:x}", m.role, content_hash(m))]
}

/// A hash of a message's text and its images (their base64 or URL): two
/// user messages that carry only images are told apart by them, and an
/// image taken out of a message changes it.
fn content_hash(m: &Message) -> u64 {
    let mut h = DefaultHasher::new();
    // Whitespace at the ends is no content (pi drops a " " text beside a
    // tool call: the turn is not cut for it).
    m.content.text().trim().hash(&mut h);
    if let Content::Parts(parts) = &m.content {
        for image in parts.iter().filter_map(Part::as_image) {
            match &image.source {
                ImageSource::Inline(d) => d.data().hash(&mut h),
                ImageSource::Url(u) => u.hash(&mut h),
            }
        }
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;
    use serde_json::json;

    fn turn(id: &str) -> Message {
        Message::assistant_calls("", vec![ToolCall::new(id, "read", json!({}))])
    }

    #[test]
    fn a_growing_conversation_leaves_nothing_out() {
        let mut c = Conversation::default();
        let first = vec![Message::system("sys"), Message::user("task")];
        let m = c.take(&first);
        assert!(!m.compacted() && m.out_of_order.is_empty());
        c.push(turn("c0"));
        let second = [first.clone(), vec![turn("c0"), Message::tool("c0", "R0")]].concat();
        let m = c.take(&second);
        assert!(!m.compacted(), "{m:?}");
        assert_eq!(c.entries.len(), 4);
    }

    #[test]
    fn a_summary_in_place_of_old_turns_leaves_them_out_in_order() {
        let mut c = Conversation::default();
        c.take(&[Message::system("sys"), Message::user("task")]);
        c.push(turn("c0"));
        c.take(&[
            Message::system("sys"),
            Message::user("task"),
            turn("c0"),
            Message::tool("c0", "R0"),
        ]);
        c.push(turn("c1"));
        let compacted = [
            Message::system("sys"),
            Message::user(format!("{SUMMARY_MARK} 1] earlier work")),
            turn("c1"),
            Message::tool("c1", "R1"),
        ];
        let m = c.take(&compacted);
        assert_eq!(m.left_out, [1, 2, 3]);
        assert!(m.out_of_order.is_empty());
        assert_eq!(m.rewritten, 1);
    }

    #[test]
    fn a_shortened_result_is_changed_and_a_swap_is_out_of_order() {
        let mut c = Conversation::default();
        c.take(&[Message::user("task")]);
        c.push(turn("c0"));
        c.take(&[
            Message::user("task"),
            turn("c0"),
            Message::tool("c0", "long result"),
        ]);
        let m = c.clone().take(&[
            Message::user("task"),
            turn("c0"),
            Message::tool("c0", "long"),
        ]);
        assert_eq!(m.changed, [2]);
        let m = c.take(&[
            turn("c0"),
            Message::user("task"),
            Message::tool("c0", "long result"),
        ]);
        assert_eq!(m.out_of_order, [(1, 0)]);
    }

    #[test]
    fn the_same_words_written_again_are_a_new_message_not_a_move() {
        let nudge = || Message::user("Continue if you have next steps.");
        let mut c = Conversation::default();
        c.take(&[Message::user("task")]);
        c.push(turn("c0"));
        let first = [
            Message::user("task"),
            turn("c0"),
            Message::tool("c0", "R0"),
            nudge(),
        ];
        let m = c.take(&first);
        assert!(m.out_of_order.is_empty() && !m.compacted(), "{m:?}");
        c.push(turn("c1"));
        let second = [
            first.to_vec(),
            vec![turn("c1"), Message::tool("c1", "R1"), nudge()],
        ]
        .concat();
        let m = c.take(&second);
        assert!(m.out_of_order.is_empty() && !m.compacted(), "{m:?}");
        assert_eq!(
            c.entries.len(),
            7,
            "the second nudge is an entry of its own"
        );
        // The next request with both: each matches its own.
        let m = c.take(&second);
        assert!(m.out_of_order.is_empty() && !m.compacted(), "{m:?}");
        assert_eq!(m.known, [0, 1, 2, 3, 4, 5, 6]);
        // opencode after a compaction: the first nudge summarised away, the
        // latest turn kept, and the nudge written again at the end — a new
        // message, not the old one moved back.
        c.push(turn("c2"));
        let after_compaction = [
            Message::user("[ctxgate summary 1] what happened"),
            turn("c2"),
            Message::tool("c2", "R2"),
            nudge(),
        ];
        let m = c.take(&after_compaction);
        assert!(m.out_of_order.is_empty(), "{m:?}");
        assert_eq!(
            c.entries.len(),
            10,
            "the third nudge is an entry of its own"
        );
        // The task moved after the turn is still out of order: it is not
        // the agent's own words.
        let moved = [turn("c2"), Message::tool("c2", "R2"), Message::user("task")];
        let m = c.take(&moved);
        assert!(!m.out_of_order.is_empty(), "{m:?}");
    }

    #[test]
    fn a_turn_sent_back_without_its_whitespace_text_is_not_cut() {
        let mut c = Conversation::default();
        c.take(&[Message::user("task")]);
        let spoken = Message::assistant_calls(" ", vec![ToolCall::new("c0", "read", json!({}))]);
        c.push(spoken);
        let m = c.take(&[Message::user("task"), turn("c0"), Message::tool("c0", "R0")]);
        assert!(!m.compacted(), "{m:?}");
    }

    #[test]
    fn a_task_grown_by_a_reminder_is_still_the_task() {
        let mut c = Conversation::default();
        c.take(&[Message::user("task")]);
        let m = c.take(&[Message::user("task\n<reminder>today</reminder>")]);
        assert!(!m.compacted() && m.known == [0], "{m:?}");
    }
}
