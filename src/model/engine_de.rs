//! Engine messages read straight from JSON text, without building a
//! `Value` tree for the messages themselves (only `arguments` and extra
//! fields are values): the protocol's hot path, where every request and
//! every answer carries a whole history.
//!
//! The contract: on well-formed input the messages are exactly those
//! [`super::engine::message_from_value`] reads; on anything unusual — a
//! wrong type, a missing field, a field on the wrong role — the fast path
//! gives up (`Err`), and the caller reads the text again the slow way, for
//! the precise error. So errors never differ between the two paths.

use std::fmt;
use std::sync::Arc;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{Content, Message, Role, ToolCall};

/// A JSON array of engine messages.
pub struct MessagesSeed;

impl<'de> DeserializeSeed<'de> for MessagesSeed {
    type Value = Vec<Message>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Message>, D::Error> {
        d.deserialize_seq(MessagesVisitor)
    }
}

struct MessagesVisitor;

impl<'de> Visitor<'de> for MessagesVisitor {
    type Value = Vec<Message>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of messages")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Message>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(8));
        while let Some(m) = seq.next_element_seed(MessageSeed)? {
            out.push(m);
        }
        Ok(out)
    }
}

/// [`MessagesSeed`], taking each message whose JSON text `known` knows
/// (the text of a message it wrote, `subject::written`) from it rather
/// than reading it: a compacted answer hands back most of the messages it
/// was sent, spelled as they were sent.
pub struct KnownMessagesSeed<'k>(pub Lookup<'k>);

/// The message whose JSON text this is, when it is known.
pub type Lookup<'k> = &'k dyn Fn(&str) -> Option<Message>;

impl<'de> DeserializeSeed<'de> for KnownMessagesSeed<'_> {
    type Value = Vec<Message>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Message>, D::Error> {
        struct V<'k>(Lookup<'k>);
        impl<'de> Visitor<'de> for V<'_> {
            type Value = Vec<Message>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of messages")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Message>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(8));
                while let Some(raw) = seq.next_element::<&'de serde_json::value::RawValue>()? {
                    let m = match (self.0)(raw.get()) {
                        Some(m) => m,
                        None => {
                            let mut de = serde_json::Deserializer::from_str(raw.get());
                            MessageSeed.deserialize(&mut de).map_err(A::Error::custom)?
                        }
                    };
                    out.push(m);
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V(self.0))
    }
}

/// Whether `m`, written by `engine_ser::write_message`, reads back as
/// itself on the fast path: no spelling kept apart (`wire`), no extra
/// field under a name the format gives a field, each field on a role that
/// carries it, every call complete.
pub fn reads_back(m: &Message) -> bool {
    use super::engine::{CALL_FIELDS, MESSAGE_FIELDS};
    let own = |extra: &Map<String, Value>, named: &[&str]| {
        extra.keys().all(|k| !named.contains(&k.as_str()))
    };
    m.wire.is_none()
        && own(&m.extra, &MESSAGE_FIELDS)
        && (m.tool_calls.is_none() || m.role == Role::Assistant)
        && (m.tool_call_id.is_some() == (m.role == Role::Tool))
        && m.calls()
            .iter()
            .all(|c| c.wire.is_none() && !c.id.is_empty() && own(&c.extra, &CALL_FIELDS))
}

struct MessageSeed;

impl<'de> DeserializeSeed<'de> for MessageSeed {
    type Value = Message;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Message, D::Error> {
        d.deserialize_map(MessageVisitor)
    }
}

struct MessageVisitor;

/// A string or null, for `content`.
struct ContentSeed;

impl<'de> DeserializeSeed<'de> for ContentSeed {
    type Value = Content;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Content, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, null or an array of parts")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Content, E> {
                Ok(Content::Text(s.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Content, E> {
                Ok(Content::Text(s))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Content, E> {
                Ok(Content::Null)
            }
            /// Parts: read as values (an image's data is moved, not
            /// copied), then as the slow path reads them; a bad part fails
            /// the fast path, and the slow path says what is wrong.
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut raw = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(v) = seq.next_element::<Value>()? {
                    raw.push(v);
                }
                super::parts::parts_from_values(raw)
                    .map(Content::Parts)
                    .map_err(A::Error::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut role: Option<Role> = None;
        let mut content = None;
        let mut tool_calls = None;
        let mut tool_call_id = None;
        let mut pinned = None;
        let mut extra = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "role" => {
                    let s: String = map.next_value()?;
                    role = Some(Role::parse(&s).ok_or_else(|| A::Error::custom("role"))?);
                }
                "content" => content = Some(map.next_value_seed(ContentSeed)?),
                "toolCalls" => tool_calls = Some(map.next_value_seed(CallsSeed)?),
                "toolCallId" => tool_call_id = Some(map.next_value::<String>()?),
                "pinned" => pinned = Some(map.next_value::<bool>()?),
                _ => {
                    let v: Value = map.next_value()?;
                    extra.insert(key, v);
                }
            }
        }
        let role = role.ok_or_else(|| A::Error::custom("no role"))?;
        // Fields on a role that cannot carry them: the slow path says so.
        if (tool_calls.is_some() && role != Role::Assistant)
            || (tool_call_id.is_some() != (role == Role::Tool))
        {
            return Err(A::Error::custom("a field on the wrong role"));
        }
        Ok(Message {
            role,
            content: content.unwrap_or_default(),
            tool_calls,
            tool_call_id,
            pinned,
            extra,
            wire: None,
        })
    }
}

struct CallsSeed;

impl<'de> DeserializeSeed<'de> for CallsSeed {
    type Value = Vec<ToolCall>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<ToolCall>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<ToolCall>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of calls")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<ToolCall>, A::Error> {
                let mut out = Vec::new();
                while let Some(c) = seq.next_element_seed(CallSeed)? {
                    out.push(c);
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V)
    }
}

struct CallSeed;

impl<'de> DeserializeSeed<'de> for CallSeed {
    type Value = ToolCall;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ToolCall, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ToolCall;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a call object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ToolCall, A::Error> {
                let (mut id, mut name, mut arguments) = (None, None, None);
                let mut extra = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "id" => id = Some(map.next_value::<String>()?),
                        "name" => name = Some(map.next_value::<String>()?),
                        "arguments" => arguments = Some(map.next_value::<Value>()?),
                        _ => {
                            let v: Value = map.next_value()?;
                            extra.insert(key, v);
                        }
                    }
                }
                match (id, name, arguments) {
                    (Some(id), Some(name), Some(arguments)) if !id.is_empty() => Ok(ToolCall {
                        id,
                        name,
                        arguments: Arc::new(arguments),
                        extra,
                        wire: None,
                    }),
                    _ => Err(A::Error::custom("an incomplete call")),
                }
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path reads exactly what the slow path reads, fields, order
    /// of extras and number spellings included, on generated histories.
    #[test]
    fn the_fast_path_reads_what_the_slow_path_reads() {
        for (i, case) in crate::generate::seeded(11, 300) {
            let text =
                serde_json::to_string(&super::super::engine::MessagesJson(&case.messages)).unwrap();
            let mut de = serde_json::Deserializer::from_str(&text);
            let fast = MessagesSeed.deserialize(&mut de).expect("fast path");
            let value: Value = serde_json::from_str(&text).unwrap();
            let slow = super::super::engine::read_messages(value.as_array().unwrap()).unwrap();
            assert_eq!(fast, slow, "case {i}");
            let again = serde_json::to_string(&super::super::engine::MessagesJson(&fast)).unwrap();
            assert_eq!(again, text, "case {i}: written back byte for byte");
        }
    }

    #[test]
    fn anything_unusual_falls_back() {
        for text in [
            r#"[{"role":"bot"}]"#,
            r#"[{"content":"x"}]"#,
            r#"[{"role":"user","content":7}]"#,
            r#"[{"role":"user","toolCallId":"x"}]"#,
            r#"[{"role":"tool"}]"#,
            r#"[{"role":"assistant","toolCalls":[{"id":"","name":"f","arguments":{}}]}]"#,
            r#"[{"role":"assistant","toolCalls":[{"id":"a","name":"f"}]}]"#,
        ] {
            let mut de = serde_json::Deserializer::from_str(text);
            assert!(MessagesSeed.deserialize(&mut de).is_err(), "{text}");
        }
    }
}
