//! Summarisers: what replaces the old, unpinned iterations. Pluggable
//! behind [`Summariser`]; the default is deterministic and cheap.

use std::collections::BTreeMap;

use crate::model::{Message, Role};

/// Marks the content of the default summariser's messages.
pub const SUMMARY_PREFIX: &str = "[ctxgate summary]";

/// Turns the replaced messages into the text of one summary message.
///
/// Contract: deterministic (the same messages give the same text). The
/// reference truncates whatever it returns to `max_bytes` on a UTF-8
/// boundary, so a summariser may ignore the bound, but should not.
pub trait Summariser: Send + Sync {
    fn summarise(&self, replaced: &[&Message], max_bytes: usize) -> String;

    /// True for a summary this summariser wrote. The reference does not
    /// count such a message as part of the head, so that the summary of an
    /// earlier compaction, carried into the next turn of a ToolLoop, is
    /// folded into the next summary instead of piling up before it.
    fn is_summary(&self, m: &Message) -> bool {
        let _ = m;
        false
    }
}

/// The default summariser: counts and names what was replaced, and quotes
/// the last user request, within the bound. A single `system` message that
/// already fits is returned as it is, which makes compaction idempotent
/// when a previous summary is among the replaced messages.
#[derive(Debug, Clone, Copy, Default)]
pub struct DigestSummariser;

impl Summariser for DigestSummariser {
    fn summarise(&self, replaced: &[&Message], max_bytes: usize) -> String {
        if let [only] = replaced {
            if only.role == Role::System && only.content.text().len() <= max_bytes {
                return only.content.text().to_owned();
            }
        }
        let mut roles: BTreeMap<Role, usize> = BTreeMap::new();
        let mut tools: BTreeMap<&str, usize> = BTreeMap::new();
        for m in replaced {
            *roles.entry(m.role).or_default() += 1;
            for c in m.calls() {
                *tools.entry(c.name.as_str()).or_default() += 1;
            }
        }
        let mut text = format!("{SUMMARY_PREFIX} {} earlier messages (", replaced.len());
        let role_list: Vec<String> = roles.iter().map(|(r, n)| format!("{n} {r}")).collect();
        text.push_str(&role_list.join(", "));
        text.push(')');
        if !tools.is_empty() {
            let calls: usize = tools.values().sum();
            let names: Vec<String> = tools
                .iter()
                .map(|(name, n)| format!("{name}×{n}"))
                .collect();
            text.push_str(&format!("; {calls} tool calls: {}", names.join(", ")));
        }
        text.push('.');
        if let Some(user) = replaced
            .iter()
            .rev()
            .find(|m| m.role == Role::User && !m.content.is_empty())
        {
            text.push_str(" Last user message: ");
            text.push_str(user.content.text());
        }
        truncate_utf8(&text, max_bytes).to_owned()
    }

    fn is_summary(&self, m: &Message) -> bool {
        m.role == Role::System && m.content.text().starts_with(SUMMARY_PREFIX)
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_utf8("a世b", 2), "a");
        assert_eq!(truncate_utf8("a世b", 4), "a世");
        assert_eq!(truncate_utf8("🦀", 3), "");
        assert_eq!(truncate_utf8("abc", 10), "abc");
    }

    #[test]
    fn digest_is_bounded_and_deterministic() {
        let msgs = [
            Message::user("Review PR 412 ".repeat(100)),
            Message::assistant("ok"),
        ];
        let refs: Vec<&Message> = msgs.iter().collect();
        let a = DigestSummariser.summarise(&refs, 100);
        assert!(a.len() <= 100);
        assert!(a.starts_with(SUMMARY_PREFIX));
        assert_eq!(a, DigestSummariser.summarise(&refs, 100));
    }
}
