//! The canonical message: SPEC §1.1's engine wire format, as Rust values.
//!
//! Every history ctxgate reads, in any wire format, becomes a `Vec<Message>`;
//! every history it writes comes from one. Fields the contract does not name
//! are kept verbatim in `extra` (they travel through compaction and count in
//! the body size). `content` keeps the difference between `null`, absent and
//! text so that a history read and written again is the same JSON value.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::parts::{Image, Part};
use super::value::{same_members, same_value};

/// Who speaks. SPEC §1.1: `system` | `user` | `assistant` | `tool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::System, Role::User, Role::Assistant, Role::Tool];

    pub const fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// `Ok` when a message of this role may carry `field`, which only
    /// `owner`'s messages carry; else the reader's error.
    pub(crate) fn may_carry(self, field: &str, owner: Role) -> Result<(), String> {
        if self == owner {
            return Ok(());
        }
        let (a_role, only) = (self.with_article(), owner.as_str());
        Err(format!("`{field}` on {a_role} message ({only} only)"))
    }

    /// The role with its article, for messages: "an assistant", "a tool".
    pub fn with_article(self) -> &'static str {
        match self {
            Role::System => "a system",
            Role::User => "a user",
            Role::Assistant => "an assistant",
            Role::Tool => "a tool",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `content`: text, `null`, absent, or an array of parts (SPEC §1.4).
/// `null` and absent both mean empty (SPEC §1.1) but are kept apart so
/// that writing gives back what was read.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Content {
    #[default]
    Absent,
    Null,
    Text(String),
    /// Text, images and other parts (`model::parts`).
    Parts(Vec<Part>),
}

impl Content {
    /// The text: the string, empty for `null` and absent, and for parts
    /// their text parts joined with nothing between them (SPEC §1.4:
    /// images are never text).
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Content::Text(s) => Cow::Borrowed(s),
            Content::Absent | Content::Null => Cow::Borrowed(""),
            Content::Parts(parts) => {
                let mut texts = parts.iter().filter_map(|p| match p {
                    Part::Text(t) => Some(t.text.as_str()),
                    _ => None,
                });
                match (texts.next(), texts.next()) {
                    (None, _) => Cow::Borrowed(""),
                    (Some(one), None) => Cow::Borrowed(one),
                    (Some(a), Some(b)) => {
                        let mut s = String::from(a);
                        s.push_str(b);
                        texts.for_each(|t| s.push_str(t));
                        Cow::Owned(s)
                    }
                }
            }
        }
    }

    /// The byte length of [`Content::text`], without joining.
    pub fn text_len(&self) -> usize {
        match self {
            Content::Text(s) => s.len(),
            Content::Absent | Content::Null => 0,
            Content::Parts(parts) => parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => t.text.len(),
                    _ => 0,
                })
                .sum(),
        }
    }

    /// No text and no part other than empty text.
    pub fn is_empty(&self) -> bool {
        match self {
            Content::Parts(parts) => parts
                .iter()
                .all(|p| matches!(p, Part::Text(t) if t.text.is_empty())),
            _ => self.text_len() == 0,
        }
    }

    /// The parts (none unless the content is an array).
    pub fn parts(&self) -> &[Part] {
        match self {
            Content::Parts(p) => p,
            _ => &[],
        }
    }

    /// The image parts, in order.
    pub fn images(&self) -> impl Iterator<Item = &Image> {
        self.parts().iter().filter_map(Part::as_image)
    }

    /// Whether any part is an image.
    pub fn has_images(&self) -> bool {
        self.images().next().is_some()
    }

    /// The JSON value written for `content` (engine parts): `None` when it
    /// is absent.
    pub fn to_value(&self) -> Option<Value> {
        match self {
            Content::Absent => None,
            Content::Null => Some(Value::Null),
            Content::Text(s) => Some(Value::String(s.clone())),
            Content::Parts(p) => Some(Value::Array(
                p.iter().map(super::parts::part_to_value).collect(),
            )),
        }
    }
}

impl From<Vec<Part>> for Content {
    fn from(parts: Vec<Part>) -> Self {
        Content::Parts(parts)
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_owned())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

/// One call an assistant message makes: `{id, name, arguments}` plus any
/// other fields, kept verbatim.
#[derive(Debug, Clone, Default)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Any JSON value. In the `openai` format the arguments are JSON text;
    /// they are parsed into a value (text that is not JSON stays a string).
    /// Shared: a history is copied on every turn of a ToolLoop and by every
    /// candidate a compactor tries, and argument values are the bulk of
    /// what would be deep-copied. Equal pointers compare equal at once.
    pub arguments: Arc<Value>,
    /// Fields other than `id`, `name`, `arguments`, in their order.
    pub extra: Map<String, Value>,
    /// What a non-engine wire format needs to write this call back exactly
    /// as it was read. Not part of the engine form, not counted in its size.
    pub wire: Option<Box<Value>>,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: Arc::new(arguments),
            ..ToolCall::default()
        }
    }
}

/// One message of a history, in the canonical (engine) model.
#[derive(Debug, Clone)]
pub struct Message {
    pub role: Role,
    pub content: Content,
    /// `toolCalls`; assistant messages only. `Some(vec![])` is kept apart
    /// from `None` because both occur on the wire.
    pub tool_calls: Option<Vec<ToolCall>>,
    /// `toolCallId`; tool messages only, required there.
    pub tool_call_id: Option<String>,
    /// `pinned`: a pinned message is never summarised.
    pub pinned: Option<bool>,
    /// Every other field, verbatim and in order.
    pub extra: Map<String, Value>,
    /// What a non-engine wire format needs to write this message back
    /// exactly as it was read (see `model::openai`, `model::anthropic`).
    /// Not part of the engine form, not counted in its size.
    pub wire: Option<Box<Value>>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<Content>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: None,
            tool_call_id: None,
            pinned: None,
            extra: Map::new(),
            wire: None,
        }
    }

    pub fn system(content: impl Into<Content>) -> Self {
        Message::new(Role::System, content)
    }

    pub fn user(content: impl Into<Content>) -> Self {
        Message::new(Role::User, content)
    }

    pub fn assistant(content: impl Into<Content>) -> Self {
        Message::new(Role::Assistant, content)
    }

    /// An assistant message that makes `calls`.
    pub fn assistant_calls(content: impl Into<Content>, calls: Vec<ToolCall>) -> Self {
        let mut m = Message::new(Role::Assistant, content);
        m.tool_calls = Some(calls);
        m
    }

    /// A tool message answering the call `id`.
    pub fn tool(id: impl Into<String>, content: impl Into<Content>) -> Self {
        let mut m = Message::new(Role::Tool, content);
        m.tool_call_id = Some(id.into());
        m
    }

    pub fn pinned(mut self) -> Self {
        self.pinned = Some(true);
        self
    }

    /// The calls this message makes (empty for every message but an
    /// assistant message with `toolCalls`).
    pub fn calls(&self) -> &[ToolCall] {
        self.tool_calls.as_deref().unwrap_or(&[])
    }

    pub fn is_pinned(&self) -> bool {
        self.pinned == Some(true)
    }

    /// Whether the content holds an image.
    pub fn has_images(&self) -> bool {
        self.content.has_images()
    }

    /// True for an assistant message with a non-empty `toolCalls`: the
    /// start of a ToolLoop iteration (SPEC §1.2).
    pub fn opens_iteration(&self) -> bool {
        self.role == Role::Assistant && !self.calls().is_empty()
    }
}

/// Equality is SPEC §5's: equality of the engine form *by JSON value*
/// (`model::value::same_value`): numbers by mathematical value, object
/// members regardless of order, strings exactly. Wire-format hints are
/// ignored, since two messages that differ only in how another format
/// spelled them are the same message. A subject whose JSON library writes
/// `653.50` back as `653.5` returns the same message.
impl PartialEq for Message {
    fn eq(&self, other: &Message) -> bool {
        self.role == other.role
            && self.content == other.content
            && self.tool_call_id == other.tool_call_id
            && self.pinned == other.pinned
            && self.tool_calls == other.tool_calls
            && same_members(&self.extra, &other.extra)
    }
}

impl PartialEq for ToolCall {
    fn eq(&self, other: &ToolCall) -> bool {
        self.id == other.id
            && self.name == other.name
            && (Arc::ptr_eq(&self.arguments, &other.arguments)
                || same_value(&self.arguments, &other.arguments))
            && same_members(&self.extra, &other.extra)
    }
}
