//! Summarisers: what replaces the old, unpinned iterations. Pluggable
//! behind [`Summariser`]; the default is deterministic and cheap.

use std::collections::BTreeMap;

use crate::contract::SUMMARY_PREFIX;
use crate::model::{truncate_utf8, Message, Role};

/// Turns the replaced messages into the text of one summary message.
///
/// Contract: deterministic (the same messages give the same text). The
/// reference truncates whatever it returns to `max_bytes` on a UTF-8
/// boundary, so a summariser may ignore the bound, but should not. A text
/// that starts with [`SUMMARY_PREFIX`] is recognised as a summary on the
/// next turn of a ToolLoop (`contract::is_summary`) and folded into the
/// next one instead of piling up before it; one that does not joins the
/// head when it is carried over.
pub trait Summariser: Send + Sync {
    fn summarise(&self, replaced: &[&Message], max_bytes: usize) -> String;
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
            if only.role == Role::System
                && !only.has_images()
                && only.content.text_len() <= max_bytes
            {
                return only.content.text().into_owned();
            }
        }
        DigestSummariser::digest(replaced, max_bytes)
    }
}

impl DigestSummariser {
    /// The digest itself, always written afresh (no lone-message shortcut):
    /// "[ctxgate summary] N earlier messages (…); K tool calls: …. Last user
    /// message: …", within `max_bytes`.
    pub fn digest(replaced: &[&Message], max_bytes: usize) -> String {
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
            text.push_str(&user.content.text());
        }
        truncate_utf8(&text, max_bytes).to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
