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
    /// `system`, which only `anthropic` has). Plain text messages read the
    /// same in every format; they are taken as `engine`.
    pub fn detect(messages: &[Value], has_top_level_system: bool) -> WireFormat {
        if has_top_level_system {
            return WireFormat::Anthropic;
        }
        for m in messages {
            let Some(obj) = m.as_object() else { continue };
            if obj.contains_key("toolCalls") || obj.contains_key("toolCallId") {
                return WireFormat::Engine;
            }
            if obj.contains_key("tool_calls") || obj.contains_key("tool_call_id") {
                return WireFormat::Openai;
            }
            if let Some(Value::Array(blocks)) = obj.get("content") {
                let anthropic_block = blocks.iter().any(|b| {
                    matches!(
                        b.get("type").and_then(Value::as_str),
                        Some("tool_use" | "tool_result" | "text" | "image" | "thinking")
                    )
                });
                if anthropic_block {
                    return WireFormat::Anthropic;
                }
            }
        }
        WireFormat::Engine
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
