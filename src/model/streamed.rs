//! A history document read as it is parsed: each message becomes a
//! [`Message`] as soon as its JSON is read, and its JSON tree is dropped,
//! so that a history is never in memory as a whole JSON tree (about a
//! hundred bytes a node: 26 times the text of a million small messages).
//!
//! The contract: on success the document is exactly the one
//! [`Document::from_value`] reads from the whole tree; on anything else —
//! an error of any kind, or a format that is settled only after messages
//! were read in another — it gives up ([`Streamed::Again`]), and the caller
//! reads the whole tree, for the precise error or the right format. So
//! errors and documents never differ between the two paths.
//!
//! The format is settled as the messages come: `--format`, a `format`
//! field or a top-level `system` before `messages` settles it at once;
//! else each message narrows it ([`Detector`]). A message read before it
//! is settled is read as engine only when it reads the same in every
//! format still possible ([`reads_alike`]: plain text); from the first one
//! that does not, messages wait as values until the format is known.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::document::Shape;
use super::unique_keys::UniqueKeys;
use super::{anthropic, check_well_formed, engine, openai, Detector, Document, Message};
use super::{WireFormat, WireFormats};
use crate::error::InputError;

/// What reading as the document is parsed came to.
#[derive(Debug)]
pub enum Streamed {
    /// The document, read and well formed.
    Read(Document),
    /// Read, but not a well-formed history (the whole-tree reading would
    /// say the same).
    IllFormed(InputError),
    /// Read the whole tree instead: the text or a message does not read
    /// (the whole tree says precisely why), or the format was settled
    /// after messages were read in another.
    Again,
}

/// Read one history document from `de` (and nothing after it), `format`
/// overriding detection.
pub fn read<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
    format: Option<WireFormat>,
) -> Streamed {
    let parsed = DocSeed { format }
        .deserialize(&mut *de)
        .and_then(|p| de.end().map(|()| p));
    let Ok(Parsed { fields, reader }) = parsed else {
        return Streamed::Again;
    };
    let Some(reader) = reader else {
        // An object without `messages`: the whole-tree reading says so.
        return Streamed::Again;
    };
    // The format and `system` as `Document::from_value` settles them.
    let hinted = fields.as_ref().and_then(|obj| {
        obj.get("format")
            .and_then(Value::as_str)
            .and_then(WireFormat::parse)
    });
    let (shape, system) = match fields {
        None => (Shape::Array, None),
        Some(mut obj) => {
            let is_anthropic = match format.or(hinted) {
                Some(f) => f == WireFormat::Anthropic,
                None => obj.contains_key("system"),
            };
            let system = if is_anthropic {
                obj.shift_remove("system")
            } else {
                None
            };
            (Shape::Object(obj), system)
        }
    };
    let format = format.or(hinted).unwrap_or(match system {
        Some(_) => WireFormat::Anthropic,
        None => reader.detector.detection().format(),
    });
    let messages = match reader.finish(format, system.as_ref()) {
        Ok(Some(messages)) => messages,
        Ok(None) => return Streamed::Again,
        Err(_) => return Streamed::Again,
    };
    if let Err(e) = check_well_formed(&messages) {
        return Streamed::IllFormed(e);
    }
    Streamed::Read(Document {
        shape,
        format,
        messages,
    })
}

/// Whether message `v` reads to the same message, hints included, in
/// every format of `formats`: a `user` or `assistant` message (or a
/// `system` one, where anthropic is ruled out) whose `content` is a
/// string, null or absent, with `pinned`, if there, a boolean, and none of
/// the fields a format names for calls. Its other fields are `extra` in
/// every format.
pub fn reads_alike(v: &Value, formats: WireFormats) -> bool {
    let Some(obj) = v.as_object() else {
        return false;
    };
    let role = match obj.get("role").and_then(Value::as_str) {
        Some("user" | "assistant") => true,
        Some("system") => !formats.contains(WireFormat::Anthropic),
        _ => false,
    };
    role && matches!(
        obj.get("content"),
        None | Some(Value::Null | Value::String(_))
    ) && matches!(obj.get("pinned"), None | Some(Value::Bool(_)))
        && !["toolCalls", "toolCallId", "tool_calls", "tool_call_id"]
            .iter()
            .any(|k| obj.contains_key(*k))
}

/// The top level: the messages as they were read, and for an object its
/// other fields in order.
struct Parsed {
    fields: Option<Map<String, Value>>,
    reader: Option<Reader>,
}

/// Messages read as they come, in the format once it is known.
struct Reader {
    /// The format messages are read in, once it is known.
    read_as: Option<WireFormat>,
    detector: Detector,
    /// The formats in which every message read before `read_as` was known
    /// (as engine) reads the same.
    alike_in: WireFormats,
    out: Vec<Message>,
    /// From the first message that does not read alike until the format is
    /// known: the messages, as values, and the index of the first.
    pending: Vec<Value>,
    pending_from: usize,
    next: usize,
}

impl Reader {
    fn new(read_as: Option<WireFormat>, has_system: bool) -> Reader {
        Reader {
            read_as,
            detector: Detector::new(has_system),
            alike_in: WireFormats::ALL,
            out: Vec::new(),
            pending: Vec::new(),
            pending_from: 0,
            next: 0,
        }
    }

    fn push(&mut self, v: Value) -> Result<(), InputError> {
        let i = self.next;
        self.next += 1;
        if let Some(f) = self.read_as {
            return self.read(f, v, i);
        }
        if let Some(f) = self.detector.see(&v) {
            self.read_as = Some(f);
            self.read_pending(f)?;
            return self.read(f, v, i);
        }
        let now = self.detector.candidates();
        if self.pending.is_empty() && reads_alike(&v, now) {
            self.alike_in = self.alike_in.intersect(now);
            return self.read(WireFormat::Engine, v, i);
        }
        if self.pending.is_empty() {
            self.pending_from = i;
        }
        self.pending.push(v);
        Ok(())
    }

    fn read_pending(&mut self, f: WireFormat) -> Result<(), InputError> {
        let from = self.pending_from;
        for (k, v) in std::mem::take(&mut self.pending).into_iter().enumerate() {
            self.read(f, v, from + k)?;
        }
        Ok(())
    }

    fn read(&mut self, f: WireFormat, v: Value, i: usize) -> Result<(), InputError> {
        match f {
            WireFormat::Engine => self.out.push(engine::message_from_owned(v, i)?),
            WireFormat::Openai => self.out.push(openai::message_from_value(&v)?),
            WireFormat::Anthropic => anthropic::read_message_into(&v, i, &mut self.out)?,
        }
        Ok(())
    }

    /// The messages in `format` (with anthropic's `system`), or `None`
    /// when some were read in a format other than `format`.
    fn finish(
        mut self,
        format: WireFormat,
        system: Option<&Value>,
    ) -> Result<Option<Vec<Message>>, InputError> {
        match self.read_as {
            Some(f) if f != format => return Ok(None),
            None if !self.alike_in.contains(format) => return Ok(None),
            _ => {}
        }
        self.read_pending(format)?;
        match format {
            WireFormat::Anthropic => anthropic::with_system(system, self.out).map(Some),
            _ => Ok(Some(self.out)),
        }
    }
}

/// A reading error, carried out of serde: the caller gives up.
fn give_up<E: de::Error>(e: InputError) -> E {
    E::custom(e)
}

struct DocSeed {
    format: Option<WireFormat>,
}

impl<'de> DeserializeSeed<'de> for DocSeed {
    type Value = Parsed;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Parsed, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DocSeed {
    type Value = Parsed;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON array of messages or an object with a `messages` field")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Parsed, A::Error> {
        let mut reader = Reader::new(self.format, false);
        MessagesVisitor(&mut reader).visit_seq(seq)?;
        Ok(Parsed {
            fields: None,
            reader: Some(reader),
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parsed, A::Error> {
        let mut fields = Map::new();
        let mut reader = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "messages" {
                if reader.is_some() {
                    return Err(de::Error::custom("`messages` twice"));
                }
                let hinted = fields
                    .get("format")
                    .and_then(Value::as_str)
                    .and_then(WireFormat::parse);
                let read_as = self.format.or(hinted);
                let has_system = read_as.is_none() && fields.contains_key("system");
                let mut r = Reader::new(read_as, has_system);
                map.next_value_seed(MessagesSeed(&mut r))?;
                reader = Some(r);
                continue;
            }
            if fields.contains_key(&key) {
                return Err(de::Error::custom("a repeated key"));
            }
            let v = map.next_value_seed(UniqueKeys)?;
            fields.insert(key, v);
        }
        Ok(Parsed {
            fields: Some(fields),
            reader,
        })
    }
}

struct MessagesSeed<'r>(&'r mut Reader);

impl<'de> DeserializeSeed<'de> for MessagesSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(MessagesVisitor(self.0))
    }
}

struct MessagesVisitor<'r>(&'r mut Reader);

impl<'de> Visitor<'de> for MessagesVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of messages")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(v) = seq.next_element_seed(UniqueKeys)? {
            self.0.push(v).map_err(give_up)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn streamed(text: &str, format: Option<WireFormat>) -> Streamed {
        let mut de = serde_json::Deserializer::from_str(text);
        read(&mut de, format)
    }

    /// A message [`reads_alike`] says reads alike reads to the same
    /// message, hints included, in each format it names: plain text with
    /// fields of every kind, in any order, named like other formats'.
    #[test]
    fn messages_that_read_alike_read_the_same_in_every_format() {
        let mut alike = vec![
            json!({"role": "user", "content": "hi"}),
            json!({"content": null, "role": "assistant", "pinned": true}),
            json!({"role": "assistant"}),
            json!({"pinned": false, "name": "bob", "role": "user", "content": "x",
                   "type": "text", "source": {}, "tool_use_id": "t", "system": "s",
                   "cache_control": {"type": "ephemeral"}, "format": "openai",
                   "function_call": {"name": "f"}, "id": "m1", "refusal": null}),
            json!({"role": "system", "content": "s", "metadata": [1, 2.50]}),
        ];
        for (_, case) in crate::generate::seeded(5, 60) {
            alike.extend(engine::write_messages(&case.messages));
        }
        let mut seen = 0;
        for v in &alike {
            for formats in [
                WireFormats::ALL,
                WireFormats::of(&[WireFormat::Engine, WireFormat::Openai]),
            ] {
                if !reads_alike(v, formats) {
                    continue;
                }
                seen += 1;
                let e = engine::message_from_value(v, 0).unwrap();
                let mut read = vec![openai::message_from_value(v).unwrap()];
                if formats.contains(WireFormat::Anthropic) {
                    let mut out = Vec::new();
                    anthropic::read_message_into(v, 0, &mut out).unwrap();
                    read.extend(out);
                }
                for m in read {
                    assert_eq!(m, e, "{v}");
                    assert_eq!(m.wire, e.wire, "{v}");
                }
            }
        }
        assert!(seen > 100, "{seen}");
        for v in [
            json!({"role": "user", "content": [{"type": "text", "text": "t"}]}),
            json!({"role": "tool", "content": "r", "toolCallId": "c"}),
            json!({"role": "assistant", "tool_calls": []}),
            json!({"role": "user", "pinned": "yes"}),
            json!({"role": "system", "content": "s"}),
        ] {
            assert!(!reads_alike(&v, WireFormats::ALL), "{v}");
        }
    }

    /// Read as it is parsed, a document is the one the whole tree gives —
    /// where the format is settled late too (a `format` or `system` after
    /// `messages`, plain messages before the first that tells) — or the
    /// reading gives up for the whole tree to decide.
    #[test]
    fn read_as_parsed_is_read_whole() {
        let texts = [
            r#"[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b"}]},{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"f","input":{}}]}]"#,
            r#"[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"t"}]},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]"#,
            r#"{"messages":[{"role":"user","content":"a"}],"system":"s","model":"m"}"#,
            r#"{"messages":[{"role":"user","content":"a"}],"system":[],"format":"anthropic"}"#,
            r#"{"messages":[{"role":"user","content":"a"}],"format":"openai","system":"kept"}"#,
            r#"{"system":"s","messages":[{"role":"user","content":"a"}],"format":"engine"}"#,
            r#"{"format":"openai","messages":[{"role":"user","content":[{"type":"image","url":"u"}]}]}"#,
            r#"{"messages":[{"role":"user","content":[{"type":"text","text":"t"}]}]}"#,
            r#"[{"role":"user","content":[{"type":"image","url":"u"}]},{"role":"user","content":"b","x":{"y":[1.50]}}]"#,
            r#"[{"role":"user","content":"a"},{"role":"user","content":"a"}]"#,
            r#"{"messages":[{"role":"user","content":[{"type":"image","url":"u"}]}],"format":"openai"}"#,
            r#"{"messages":[{"role":"system","content":"s"}],"format":"anthropic"}"#,
        ];
        let mut again = 0;
        for text in texts {
            for format in [None, Some(WireFormat::Engine), Some(WireFormat::Anthropic)] {
                let whole = Document::parse_whole(text.as_bytes(), format);
                match (streamed(text, format), whole) {
                    (Streamed::Read(doc), Ok(want)) => {
                        assert_eq!(doc, want, "{text}");
                        let wire = |d: &Document| {
                            d.messages
                                .iter()
                                .map(|m| m.wire.clone())
                                .collect::<Vec<_>>()
                        };
                        assert_eq!(wire(&doc), wire(&want), "{text}");
                        assert_eq!(doc.to_value(), want.to_value(), "{text}");
                    }
                    (Streamed::IllFormed(e), Err(want)) => assert_eq!(e, want, "{text}"),
                    (Streamed::Again, Ok(_)) => again += 1,
                    (Streamed::Again, Err(_)) => {}
                    (got, want) => panic!("{text} ({format:?}): {got:?} against {want:?}"),
                }
            }
        }
        // A `format` after `messages` that differs from the format they
        // were read in is read again.
        assert!(again >= 1, "{again}");
    }

    /// Generated histories in every format and shape read as parsed to
    /// the document the whole tree gives, without reading twice.
    #[test]
    fn generated_histories_read_as_parsed_are_read_whole() {
        for (i, case) in crate::generate::seeded(9, 150) {
            for f in WireFormat::ALL {
                let (system, msgs) = super::super::write_messages(f, &case.messages);
                let doc = match system {
                    Some(s) => json!({"model": "m", "system": s, "messages": msgs}),
                    None => Value::Array(msgs),
                };
                let text = doc.to_string();
                for format in [None, Some(f)] {
                    let whole = Document::parse_whole(text.as_bytes(), format);
                    match (streamed(&text, format), whole) {
                        (Streamed::Read(doc), Ok(want)) => {
                            assert_eq!(doc.to_value(), want.to_value(), "case {i} {f}");
                            assert_eq!(doc, want, "case {i} {f}");
                        }
                        (Streamed::IllFormed(e), Err(want)) => assert_eq!(e, want),
                        (got, want) => panic!("case {i} {f}: {got:?} against {want:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn anything_wrong_gives_up_for_the_whole_tree() {
        for text in [
            "",
            "[",
            "[1]",
            "{}",
            r#"{"messages":{}}"#,
            r#"[{"role":"user","content":"a","content":"b"}]"#,
            r#"{"messages":[],"messages":[]}"#,
            r#"{"a":1,"a":2,"messages":[]}"#,
            r#"[{"role":"bot"}]"#,
            r#"[] x"#,
        ] {
            assert!(matches!(streamed(text, None), Streamed::Again), "{text}");
        }
    }
}
