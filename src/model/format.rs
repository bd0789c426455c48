//! The three wire formats and their detection.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A wire format (SPEC §1.1, §1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireFormat {
    /// The ADR's engine: camelCase, `toolCalls`, `toolCallId`. Canonical.
    #[default]
    Engine,
    /// OpenAI Chat Completions: `tool_calls` with JSON-text arguments.
    Openai,
    /// Anthropic Messages: top-level `system`, `tool_use` / `tool_result` blocks.
    Anthropic,
}

impl WireFormat {
    pub const ALL: [WireFormat; 3] = [
        WireFormat::Engine,
        WireFormat::Openai,
        WireFormat::Anthropic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WireFormat::Engine => "engine",
            WireFormat::Openai => "openai",
            WireFormat::Anthropic => "anthropic",
        }
    }

    pub fn parse(s: &str) -> Option<WireFormat> {
        WireFormat::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// Guess the format of a history from its messages (and a top-level
    /// `system`, which only `anthropic` has): [`Detection::format`] of
    /// [`WireFormat::detection`].
    pub fn detect(messages: &[Value], has_top_level_system: bool) -> WireFormat {
        WireFormat::detection(messages, has_top_level_system).format()
    }

    /// What a history's fields say about its format: the formats it can
    /// be in, narrowed message by message until one is left (the messages
    /// after that one are not looked at).
    pub fn detection(messages: &[Value], has_top_level_system: bool) -> Detection {
        let mut d = Detector::new(has_top_level_system);
        for m in messages {
            if d.see(m).is_some() {
                break;
            }
        }
        d.detection()
    }
}

/// The outcome of detecting a history's format: the formats its fields
/// allow. One format is a detection; several are an honest "ambiguous":
/// the history says nothing that tells them apart (plain `user` and
/// `assistant` text reads the same in all three), and it is read in the
/// first of them, in the order engine, openai, anthropic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detection {
    pub candidates: WireFormats,
}

impl Detection {
    /// The format the history is read in.
    pub fn format(self) -> WireFormat {
        self.candidates.iter().next().unwrap_or_default()
    }

    /// Whether more than one format fits.
    pub fn is_ambiguous(self) -> bool {
        self.candidates.iter().nth(1).is_some()
    }
}

/// Detection as the messages come, one at a time (what reading a history
/// as it streams in needs): each message narrows the formats the history
/// can be in, by the fields and blocks only one format or two have.
#[derive(Debug, Clone)]
pub struct Detector {
    candidates: WireFormats,
}

impl Detector {
    /// A top-level `system` is anthropic's alone: that decides at once.
    pub fn new(has_top_level_system: bool) -> Self {
        let candidates = if has_top_level_system {
            WireFormats::of(&[WireFormat::Anthropic])
        } else {
            WireFormats::ALL
        };
        Detector { candidates }
    }

    /// The format, once one is left.
    pub fn decided(&self) -> Option<WireFormat> {
        let d = self.detection();
        (!d.is_ambiguous()).then(|| d.format())
    }

    /// Narrow by message `m`; the format once it is decided. A message
    /// that fits none of the formats still left (a `system` message in
    /// a history that has shown anthropic blocks) narrows nothing: it is
    /// bad input in every format, and reading it says so.
    pub fn see(&mut self, m: &Value) -> Option<WireFormat> {
        if let Some(f) = self.decided() {
            return Some(f);
        }
        let left = self.candidates.intersect(evidence(m));
        if !left.is_empty() {
            self.candidates = left;
        }
        self.decided()
    }

    pub fn detection(&self) -> Detection {
        Detection {
            candidates: self.candidates,
        }
    }

    /// The formats still possible.
    pub fn candidates(&self) -> WireFormats {
        self.candidates
    }
}

/// The formats message `m` can be written in, by what only some formats
/// have: `toolCalls`/`toolCallId` (engine), `tool_calls`/`tool_call_id`
/// (openai), a `system` or `tool` role (not anthropic, whose messages are
/// `user` and `assistant`); in array content, an image part with
/// `mediaType`/`data`/`url` (engine) or a `source` (anthropic), an
/// `image_url` part (openai), `tool_use`, `tool_result` and thinking
/// blocks (anthropic). Text parts and parts of other types are in every
/// format. A message whose fields contradict each other tells nothing.
pub fn evidence(m: &Value) -> WireFormats {
    use WireFormat::{Anthropic, Engine, Openai};
    let Some(obj) = m.as_object() else {
        return WireFormats::ALL;
    };
    let mut fits = WireFormats::ALL;
    let mut only = |formats: &[WireFormat]| fits = fits.intersect(WireFormats::of(formats));
    if matches!(
        obj.get("role").and_then(Value::as_str),
        Some("system" | "tool")
    ) {
        only(&[Engine, Openai]);
    }
    if obj.contains_key("toolCalls") || obj.contains_key("toolCallId") {
        only(&[Engine]);
    }
    if obj.contains_key("tool_calls") || obj.contains_key("tool_call_id") {
        only(&[Openai]);
    }
    if let Some(Value::Array(parts)) = obj.get("content") {
        for part in parts.iter().filter_map(Value::as_object) {
            match part.get("type").and_then(Value::as_str) {
                Some("image") if part.contains_key("source") => only(&[Anthropic]),
                Some("image")
                    if ["mediaType", "data", "url"]
                        .iter()
                        .any(|k| part.contains_key(*k)) =>
                {
                    only(&[Engine])
                }
                Some("image_url") => only(&[Openai]),
                Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking") => {
                    only(&[Anthropic])
                }
                _ => {}
            }
        }
    }
    if fits.is_empty() {
        WireFormats::ALL
    } else {
        fits
    }
}

impl std::fmt::Display for WireFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for WireFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        WireFormat::parse(s)
            .ok_or_else(|| format!("unknown wire format {s:?} (engine, openai or anthropic)"))
    }
}

/// A set of wire formats: those a subject measures its body in (its
/// hello's `wireFormats`, SPEC §6), and so the only ones it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WireFormats(u8);

impl WireFormats {
    /// All three: the default of a hello that does not say.
    pub const ALL: WireFormats = WireFormats(0b111);

    pub fn empty() -> Self {
        WireFormats(0)
    }

    pub fn of(formats: &[WireFormat]) -> Self {
        let mut set = WireFormats::empty();
        formats.iter().for_each(|f| set.insert(*f));
        set
    }

    fn bit(f: WireFormat) -> u8 {
        1 << (f as u8)
    }

    pub fn insert(&mut self, f: WireFormat) {
        self.0 |= Self::bit(f);
    }

    pub fn contains(self, f: WireFormat) -> bool {
        self.0 & Self::bit(f) != 0
    }

    pub fn is_all(self) -> bool {
        self == WireFormats::ALL
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn intersect(self, other: WireFormats) -> Self {
        WireFormats(self.0 & other.0)
    }

    /// The formats in the set, in the order engine, openai, anthropic.
    pub fn iter(self) -> impl Iterator<Item = WireFormat> {
        WireFormat::ALL
            .into_iter()
            .filter(move |f| self.contains(*f))
    }

    /// The names, as a hello writes them.
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(WireFormat::as_str).collect()
    }

    /// The names [`names`](Self::names) wrote (a report's `wireFormats`);
    /// all three when it names none.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> WireFormats {
        let formats: Vec<_> = names
            .iter()
            .filter_map(|n| n.as_ref().parse().ok())
            .collect();
        match WireFormats::of(&formats) {
            set if set.is_empty() => WireFormats::ALL,
            set => set,
        }
    }
}

impl Default for WireFormats {
    fn default() -> Self {
        WireFormats::ALL
    }
}

impl std::fmt::Display for WireFormats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.names().join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use WireFormat::{Anthropic as A, Engine as E, Openai as O};

    #[test]
    fn a_format_is_told_by_what_only_it_has() {
        let cases: [(Value, &[WireFormat]); 13] = [
            (
                json!({"role": "user", "content": [{"type": "image", "mediaType": "image/png", "data": "x"}]}),
                &[E],
            ),
            (
                json!({"role": "user", "content": [{"type": "text", "text": "t"}, {"type": "image", "url": "u"}]}),
                &[E],
            ),
            (
                json!({"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "u"}}]}),
                &[A],
            ),
            (
                json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}),
                &[O],
            ),
            (
                json!({"role": "tool", "toolCallId": "c", "content": "r"}),
                &[E],
            ),
            (
                json!({"role": "tool", "tool_call_id": "c", "content": "r"}),
                &[O],
            ),
            (json!({"role": "tool", "content": "r"}), &[E, O]),
            (json!({"role": "system", "content": "s"}), &[E, O]),
            (
                json!({"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}}]}),
                &[A],
            ),
            (
                json!({"role": "user", "content": [{"type": "text", "text": "t"}, {"type": "document"}]}),
                &[E, O, A],
            ),
            (
                json!({"role": "user", "content": "t", "name": "x"}),
                &[E, O, A],
            ),
            // Fields that contradict each other tell nothing.
            (
                json!({"role": "assistant", "toolCalls": [], "tool_calls": []}),
                &[E, O, A],
            ),
            (json!("not a message"), &[E, O, A]),
        ];
        for (m, fits) in cases {
            assert_eq!(evidence(&m), WireFormats::of(fits), "{m}");
        }
    }

    #[test]
    fn messages_narrow_until_one_format_is_left() {
        let system = json!({"role": "system", "content": "s"});
        let text = json!({"role": "user", "content": [{"type": "text", "text": "t"}]});
        let image = json!({"role": "user", "content": [{"type": "image", "url": "u"}]});
        let tool_use = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}}]});
        let detect = |msgs: &[&Value], system: bool| {
            let msgs: Vec<Value> = msgs.iter().map(|m| (*m).clone()).collect();
            WireFormat::detection(&msgs, system)
        };
        // A text part is no anthropic block: the image after it decides.
        assert_eq!(detect(&[&system, &text, &image], false).format(), E);
        assert!(!detect(&[&system, &text, &image], false).is_ambiguous());
        assert_eq!(detect(&[&text, &tool_use], false).format(), A);
        // Plain text fits every format: ambiguous, read as engine.
        let d = detect(&[&text], false);
        assert!(d.is_ambiguous());
        assert_eq!(d.format(), E);
        // A system message then anthropic blocks fits no format: the
        // blocks narrow nothing (reading the history says what is wrong).
        assert_eq!(
            detect(&[&system, &tool_use], false).candidates,
            WireFormats::of(&[E, O])
        );
        // A top-level `system` is anthropic's alone, whatever follows.
        assert_eq!(detect(&[&image], true).format(), A);
        assert!(!detect(&[], true).is_ambiguous());
    }
}
