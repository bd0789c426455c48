//! Subject protocol v1 (SPEC §6): the JSON Lines codec shared by the
//! external-process subject (the harness's side) and `ctxgate serve` (the
//! subject's side).
//!
//! ```text
//! → {"op":"hello","protocol":1}
//! ← {"op":"hello","protocol":1,"name":…,"version":…,"ops":["compact","estimate"],
//!    "format":"engine","invariants":[…]}
//! → {"op":"compact","id":7,"config":{…},"messages":[…]}
//! ← {"id":7,"messages":[…]}   or   {"id":7,"error":{"kind":"cannot_fit","message":…}}
//! → {"op":"estimate","id":8,"config":{…},"messages":[…]}
//! ← {"id":8,"tokens":31337,"perMessage":[12,0,8190]}
//! ```
//!
//! Messages travel in the subject's declared format; for `anthropic`,
//! requests and answers also carry the top-level `system`.

use serde_json::{json, Map, Value};

use super::{CompactAnswer, EstimateAnswer, EstimateReply, Fault, FaultKind, SubjectInfo};
use crate::config::Config;
use crate::error::json_type;
use crate::invariant::InvariantSet;
use crate::model::engine_de::Lookup;
use crate::model::field::{expect, into_array};
use crate::model::text::{cut_middle, excerpt};
use crate::model::{
    read_messages, read_messages_owned, write_messages, Message, WireFormat, WireFormats,
};

pub use crate::model::text::{lines, one_line};

pub const PROTOCOL_VERSION: u64 = 1;

/// The most of a hello's `name` or `version` ctxgate keeps, in bytes:
/// they head every report and every line of progress, so a longer one is
/// cut in its middle ([`cut_middle`]), the bytes left out counted.
pub const NAME_BYTES: usize = 256;

/// The most of an error answer's `message` (or of a `kind` that is no
/// answer) ctxgate keeps, in bytes: free text for people, shown in every
/// report form and kept in the fixture, cut in its middle past this.
pub const MESSAGE_BYTES: usize = 4096;

/// Subject text kept for people: cut to `max` bytes ([`cut_middle`]), its
/// control characters escaped ([`one_line`]).
fn shown(text: &str, max: usize) -> String {
    one_line(&cut_middle(text, max))
}

/// The hello request.
pub fn hello_request() -> Value {
    json!({"op": "hello", "protocol": PROTOCOL_VERSION})
}

/// The subject's hello, from its info.
pub fn hello_answer(info: &SubjectInfo) -> Value {
    let mut ops = vec!["compact"];
    if info.estimates {
        ops.push("estimate");
    }
    let mut v = json!({
        "op": "hello",
        "protocol": PROTOCOL_VERSION,
        "name": info.name,
        "version": info.version,
        "ops": ops,
        "format": info.format.as_str(),
    });
    if let Some(set) = info.invariants {
        v["invariants"] = json!(set.names());
    }
    if info.exact_numbers {
        v["numbers"] = json!("exact");
    }
    if !info.content_parts || info.content_parts_declared {
        v["contentParts"] = json!(info.content_parts);
    }
    if info.compact_at != 1.0 {
        v["compactAt"] = json!(info.compact_at);
    }
    if !info.wire_formats.is_all() {
        v["wireFormats"] = json!(info.wire_formats.names());
    }
    v
}

/// The fields of a hello (SPEC §6, and the extensions docs/protocol.md
/// §2 lists).
const HELLO_FIELDS: [&str; 11] = [
    "op",
    "protocol",
    "name",
    "version",
    "ops",
    "format",
    "invariants",
    "contentParts",
    "compactAt",
    "wireFormats",
    "numbers",
];

/// Read a subject's hello.
pub fn parse_hello(v: &Value) -> Result<SubjectInfo, Fault> {
    let bad = |p: String| Fault::new(FaultKind::Protocol, format!("hello: {p}"));
    let obj = v
        .as_object()
        .ok_or_else(|| bad(format!("expected an object, found {}", json_type(v))))?;
    if obj.get("op").and_then(Value::as_str) != Some("hello") {
        let answered = excerpt(v);
        return Err(bad(format!(
            "the first answer must have \"op\":\"hello\"; it was {answered}"
        )));
    }
    match obj.get("protocol") {
        Some(v) if v.as_u64() == Some(PROTOCOL_VERSION) => {}
        Some(v) => {
            return Err(bad(format!(
                "protocol {} is not supported (this harness speaks 1)",
                excerpt(v)
            )))
        }
        None => return Err(bad("no `protocol` (this harness speaks 1)".into())),
    }
    // A field of the wrong type is refused, never read as its default: a
    // hello that says something ctxgate cannot read is not taken at less.
    let text = |k: &str| match obj.get(k) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(shown(s, NAME_BYTES)),
        Some(other) => Err(bad(format!(
            "`{k}` must be a string, found {}",
            excerpt(other)
        ))),
    };
    let mut info = SubjectInfo::new(text("name")?, text("version")?);
    if info.name.is_empty() {
        info.name = "unnamed subject".into();
    }
    let names = |k: &str, list: &Vec<Value>| -> Result<Vec<String>, Fault> {
        list.iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(bad(format!(
                    "`{k}` must be an array of names, found {}",
                    excerpt(other)
                ))),
            })
            .collect()
    };
    let ops: Vec<String> = match obj.get("ops") {
        None => vec!["compact".into()],
        Some(Value::Array(a)) => names("ops", a)?,
        Some(other) => {
            return Err(bad(format!(
                "`ops` must be an array, found {}",
                json_type(other)
            )))
        }
    };
    if !ops.iter().any(|o| o == "compact") {
        let found = obj.get("ops").map_or(String::new(), excerpt);
        return Err(bad(format!(
            "`ops` must include \"compact\", found {found}"
        )));
    }
    info.estimates = ops.iter().any(|o| o == "estimate");
    // Read loosely, as a later protocol may add to them, but told: a
    // misspelt field or op is otherwise a subject run at less than it
    // meant, with nothing said.
    const OPS: [&str; 2] = ["compact", "estimate"];
    for op in ops.iter().filter(|o| !OPS.contains(&o.as_str())) {
        let hint = crate::model::text::closest(op, &OPS)
            .map(|m| format!(" (did you mean \"{m}\"?)"))
            .unwrap_or_default();
        info.hello_notes.push(format!(
            "`ops` names {}{hint}, an op ctxgate does not send; it is ignored",
            excerpt(&Value::String(op.clone()))
        ));
    }
    for key in obj.keys().filter(|k| !HELLO_FIELDS.contains(&k.as_str())) {
        let hint = crate::model::text::closest(key, &HELLO_FIELDS)
            .map(|m| format!(" (did you mean `{m}`?)"))
            .unwrap_or_default();
        info.hello_notes.push(format!(
            "unknown field {}{hint}; it is ignored",
            excerpt(&Value::String(key.clone()))
        ));
    }
    if let Some(f) = obj.get("format") {
        let name = f.as_str().unwrap_or("");
        info.format =
            WireFormat::parse(name).ok_or_else(|| bad(format!("unknown format {}", excerpt(f))))?;
    }
    if let Some(list) = obj.get("invariants") {
        let list = list
            .as_array()
            .ok_or_else(|| bad("`invariants` must be an array of names".into()))?;
        // Each name alone: one holding a comma is not a list of two.
        let mut set = InvariantSet::empty();
        for name in names("invariants", list)? {
            if name.contains(',') {
                return Err(bad(format!(
                    "`invariants` must list one name an entry, found {}",
                    excerpt(&Value::String(name))
                )));
            }
            let one = InvariantSet::parse_list(&cut_middle(&name, NAME_BYTES));
            for inv in one.map_err(|e| bad(shown(&e, MESSAGE_BYTES)))?.iter() {
                set.insert(inv);
            }
        }
        info.invariants = Some(set);
    }
    info.content_parts_declared = obj.contains_key("contentParts");
    info.content_parts = match obj.get("contentParts") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(bad(format!(
                "`contentParts` must be a boolean, found {}",
                json_type(other)
            )))
        }
    };
    if let Some(at) = obj.get("compactAt") {
        info.compact_at = at
            .as_f64()
            .filter(|f| *f > 0.0 && *f <= 1.0)
            .ok_or_else(|| {
                bad(format!(
                    "`compactAt` must be a number in (0, 1], a fraction of the trigger, found {}",
                    excerpt(at)
                ))
            })?;
    }
    if let Some(list) = obj.get("wireFormats") {
        info.wire_formats = parse_wire_formats(list).map_err(bad)?;
    }
    info.exact_numbers = match obj.get("numbers") {
        None => false,
        Some(Value::String(s)) if s == "portable" => false,
        Some(Value::String(s)) if s == "exact" => true,
        Some(other) => {
            return Err(bad(format!(
                "`numbers` must be \"exact\" or \"portable\", found {}",
                excerpt(other)
            )))
        }
    };
    Ok(info)
}

/// A hello's `wireFormats`: a non-empty array of format names.
fn parse_wire_formats(list: &Value) -> Result<WireFormats, String> {
    let expected =
        "`wireFormats` must be a non-empty array of \"engine\", \"openai\", \"anthropic\"";
    let Value::Array(names) = list else {
        return Err(format!("{expected}, found {}", json_type(list)));
    };
    let mut set = WireFormats::empty();
    for name in names {
        match name.as_str().and_then(WireFormat::parse) {
            Some(f) => set.insert(f),
            None => return Err(format!("{expected}, found {}", excerpt(name))),
        }
    }
    if set.is_empty() {
        return Err(format!("{expected}, found []"));
    }
    Ok(set)
}

/// Write a `compact` or `estimate` request line (with its `\n`) to `out`,
/// directly: `config_json` is the config already serialised (one per
/// case), and engine messages are written without a `Value` tree — or, in
/// the engine format, `messages_json` is their JSON already written (the
/// requests of one case share their history's). The same bytes as
/// serialising [`request`].
pub fn write_request(
    out: &mut Vec<u8>,
    op: &str,
    id: u64,
    config_json: &[u8],
    msgs: &[Message],
    format: WireFormat,
) {
    write_request_head(out, op, id);
    write_request_rest(out, config_json, msgs, format, None);
}

/// A request line's opening, `{"op":…,"id":N`: what is written last, once
/// the id is known (`ProcessSubject::submit`).
pub fn write_request_head(out: &mut Vec<u8>, op: &str, id: u64) {
    out.extend_from_slice(b"{\"op\":");
    serde_json::to_writer(&mut *out, op).expect("writes to a Vec");
    out.extend_from_slice(b",\"id\":");
    out.extend_from_slice(id.to_string().as_bytes());
}

/// The rest of a request line after [`write_request_head`], its `\n`
/// included.
pub fn write_request_rest(
    out: &mut Vec<u8>,
    config_json: &[u8],
    msgs: &[Message],
    format: WireFormat,
    messages_json: Option<&[u8]>,
) {
    out.extend_from_slice(b",\"config\":");
    out.extend_from_slice(config_json);
    match (format, messages_json) {
        (WireFormat::Engine, Some(json)) => {
            out.extend_from_slice(b",\"messages\":");
            out.extend_from_slice(json);
        }
        (WireFormat::Engine, None) => {
            out.extend_from_slice(b",\"messages\":");
            write_messages_json(out, msgs);
        }
        _ => {
            let (system, arr) = write_messages(format, msgs);
            if let Some(system) = system {
                out.extend_from_slice(b",\"system\":");
                serde_json::to_writer(&mut *out, &system).expect("writes to a Vec");
            }
            out.extend_from_slice(b",\"messages\":");
            serde_json::to_writer(&mut *out, &arr).expect("writes to a Vec");
        }
    }
    out.extend_from_slice(b"}\n");
}

/// Append the JSON text `json` to `out` with the three characters that
/// some line readers take for line ends written as escapes: U+0085 (NEL),
/// U+2028 and U+2029, as `\u0085`, `\u2028` and `\u2029`. Python's
/// `str.splitlines()` splits at each, so a subject (or a script reading
/// `ctxgate gen`) that splits its input that way would see a line cut in
/// two. In JSON text a non-ASCII character is only ever inside a string,
/// where its escape is the same value: the JSON read back is unchanged.
/// (The other characters `splitlines()` splits at, U+000B, U+000C and
/// U+001C–U+001E, are controls: every JSON writer escapes them already.)
///
/// Only the pipe's bytes change: the body whose size ctxgate judges is
/// measured on the history (`body`), never on the request line.
pub fn push_line_safe(out: &mut Vec<u8>, json: &[u8]) {
    let mut start = 0;
    for (at, len, escape) in line_breaks(json) {
        out.extend_from_slice(&json[start..at]);
        out.extend_from_slice(escape);
        start = at + len;
    }
    out.extend_from_slice(&json[start..]);
}

/// Each U+0085, U+2028 and U+2029 in `json`: where it starts, its length
/// in UTF-8 and its JSON escape.
pub(crate) fn line_breaks(json: &[u8]) -> impl Iterator<Item = (usize, usize, &'static [u8])> + '_ {
    // Lead bytes, never continuation bytes: no match starts inside another.
    memchr::memchr2_iter(0xC2, 0xE2, json).filter_map(|at| {
        let (len, escape): (usize, &'static [u8]) = match &json[at..] {
            [0xC2, 0x85, ..] => (2, b"\\u0085"),
            [0xE2, 0x80, 0xA8, ..] => (3, b"\\u2028"),
            [0xE2, 0x80, 0xA9, ..] => (3, b"\\u2029"),
            _ => return None,
        };
        Some((at, len, escape))
    })
}

/// The engine JSON array of `msgs`, appended to `out`.
pub fn write_messages_json(out: &mut Vec<u8>, msgs: &[Message]) {
    crate::model::engine_ser::write_messages(out, msgs);
}

/// A protocol line as read: its fields, and — when the fast path could read
/// them — its `messages` already as messages (`model::engine_de`), or the
/// word that they are, byte for byte, the JSON the reader was told to
/// expect (an answer that hands the history back unchanged: not parsed).
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolLine {
    pub fields: Map<String, Value>,
    pub messages: Option<Vec<Message>>,
    /// The `messages` were exactly the expected JSON.
    pub echoed: bool,
    /// The `messages`' JSON text, when the fast path read the line.
    pub messages_json: Option<Vec<u8>>,
}

/// Read one protocol line. In the engine format the messages are read
/// straight from the text; anything the fast path does not take is read
/// again the slow way, so errors are the slow path's. `Err`: the line is
/// not a JSON object (the error, for a `malformed-line` fault).
pub fn read_line(bytes: &[u8], format: WireFormat) -> Result<ProtocolLine, String> {
    read_line_expecting(bytes, format, None)
}

/// [`read_line`], where `expected` is JSON text the line's `messages` may
/// repeat byte for byte: then they are not parsed at all, and the line says
/// `echoed` (a subject handing a history back unchanged, spelled as sent).
pub fn read_line_expecting(
    bytes: &[u8],
    format: WireFormat,
    expected: Option<&[u8]>,
) -> Result<ProtocolLine, String> {
    read_line_with(bytes, format, expected, false, None)
}

/// [`read_line_expecting`], taking the messages whose JSON text `known`
/// knows from it, not reading them (`engine_de::KnownMessagesSeed`).
pub(crate) fn read_line_knowing(
    bytes: &[u8],
    format: WireFormat,
    expected: Option<&[u8]>,
    known: Lookup<'_>,
) -> Result<ProtocolLine, String> {
    read_line_with(bytes, format, expected, false, Some(known))
}

/// [`read_line`], keeping the `messages`' JSON text as well
/// (`messages_json`): `ctxgate serve` knows a request that extends a
/// history it has seen by it.
pub fn read_line_keeping_json(bytes: &[u8], format: WireFormat) -> Result<ProtocolLine, String> {
    read_line_with(bytes, format, None, true, None)
}

fn read_line_with(
    bytes: &[u8],
    format: WireFormat,
    expected: Option<&[u8]>,
    keep_json: bool,
    known: Option<Lookup<'_>>,
) -> Result<ProtocolLine, String> {
    if let Some(line) = expected.and_then(|e| read_echo(bytes, e)) {
        return Ok(line);
    }
    if format == WireFormat::Engine {
        if let Some(line) = read_line_fast(bytes, expected, keep_json, known) {
            return Ok(line);
        }
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(fields)) => Ok(ProtocolLine {
            fields,
            messages: None,
            echoed: false,
            messages_json: None,
        }),
        Ok(_) => Err("a line must be a JSON object".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// A line that ends with `"messages":` + `expected` + `}`: the rest of it
/// is read (a few hundred bytes: op, id, config), the messages are not
/// even scanned. Sound because `expected` is valid JSON, and the rest read
/// with `null` in its place must be an object whose top-level `messages`
/// is that `null` — were the key nested, the braces would not balance.
fn read_echo(bytes: &[u8], expected: &[u8]) -> Option<ProtocolLine> {
    const KEY: &[u8] = b"\"messages\":";
    let body = bytes.strip_suffix(b"}")?.strip_suffix(expected)?;
    if !body.ends_with(KEY) {
        return None;
    }
    let mut rest = Vec::with_capacity(body.len() + 5);
    rest.extend_from_slice(body);
    rest.extend_from_slice(b"null}");
    let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(&rest) else {
        return None;
    };
    if fields.shift_remove("messages") != Some(Value::Null) {
        return None;
    }
    Some(ProtocolLine {
        fields,
        messages: None,
        echoed: true,
        messages_json: Some(expected.to_vec()),
    })
}

/// The engine line read in one pass, its messages straight into
/// messages; `None` for anything else (read again the slow way). With
/// `keep_json`, the messages are taken as raw JSON first, then read: the
/// text is kept, and compared with `expected` (the history handed back
/// with keys after its `messages`, which `read_echo` does not see).
fn read_line_fast(
    bytes: &[u8],
    expected: Option<&[u8]>,
    keep_json: bool,
    known: Option<Lookup<'_>>,
) -> Option<ProtocolLine> {
    use serde::de::{DeserializeSeed, MapAccess, Visitor};
    struct V<'x>(Option<&'x [u8]>, bool, Option<Lookup<'x>>);
    impl<'de> Visitor<'de> for V<'_> {
        type Value = ProtocolLine;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a protocol object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ProtocolLine, A::Error> {
            let mut line = ProtocolLine {
                fields: Map::new(),
                messages: None,
                echoed: false,
                messages_json: None,
            };
            let mut seen = false;
            while let Some(key) = map.next_key::<String>()? {
                if key == "messages" {
                    if seen {
                        // Twice: the slow path says which one counts.
                        return Err(serde::de::Error::custom("messages twice"));
                    }
                    seen = true;
                    if !self.1 {
                        let msgs = match self.2 {
                            Some(known) => map.next_value_seed(
                                crate::model::engine_de::KnownMessagesSeed(known),
                            )?,
                            None => map.next_value_seed(crate::model::engine_de::MessagesSeed)?,
                        };
                        line.messages = Some(msgs);
                        continue;
                    }
                    let raw: &serde_json::value::RawValue = map.next_value()?;
                    line.messages_json = Some(raw.get().as_bytes().to_vec());
                    if self.0 == Some(raw.get().as_bytes()) {
                        line.echoed = true;
                    } else {
                        let mut de = serde_json::Deserializer::from_str(raw.get());
                        let msgs = crate::model::engine_de::MessagesSeed
                            .deserialize(&mut de)
                            .map_err(serde::de::Error::custom)?;
                        line.messages = Some(msgs);
                    }
                } else {
                    let v: Value = map.next_value()?;
                    line.fields.insert(key, v);
                }
            }
            Ok(line)
        }
    }
    // One UTF-8 check for the whole line; the parser then trusts its strings.
    let text = utf8(bytes)?;
    let mut de = serde_json::Deserializer::from_str(text);
    let line = serde::Deserializer::deserialize_map(&mut de, V(expected, keep_json, known)).ok()?;
    de.end().ok()?;
    Some(line)
}

/// The text of `bytes`, checked for UTF-8 in one pass: a vectorised
/// check, many times faster than the standard one on text far from ASCII
/// (a history's text often is), and than string by string.
pub(crate) fn utf8(bytes: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(bytes).ok()
}

/// Read an answer to `compact` from a line read with [`read_line`].
/// A line read `echoed` has its messages as the JSON expected (taken out
/// of its fields, not parsed): they are read from that JSON here, so a
/// caller that does not take the history it sent as the answer (an
/// `"error": null` beside it) gets the same answer as reading the whole line.
pub fn parse_compact_line(line: ProtocolLine, format: WireFormat) -> Result<CompactAnswer, Fault> {
    let apart = line.messages.is_some() || line.echoed;
    if let Some(answer) = parse_error_beside(&line.fields, apart)? {
        return Ok(answer);
    }
    let mut fields = line.fields;
    match (line.messages, line.echoed, line.messages_json) {
        (Some(msgs), _, _) => Ok(CompactAnswer::Messages(msgs)),
        (None, true, Some(json)) => {
            let messages = serde_json::from_slice::<Value>(&json).map_err(|e| {
                Fault::new(
                    FaultKind::Protocol,
                    format!("the answer's messages do not parse: {e}"),
                )
            })?;
            fields.insert("messages".into(), messages);
            parse_compact_reply(Value::Object(fields), format)
        }
        (None, _, _) => parse_compact_reply(Value::Object(fields), format),
    }
}

/// Read an answer to `compact`, consuming it: the messages' strings move
/// out of the parsed line instead of being copied.
pub fn parse_compact_reply(v: Value, format: WireFormat) -> Result<CompactAnswer, Fault> {
    let Value::Object(mut obj) = v else {
        return Err(Fault::new(
            FaultKind::MalformedLine,
            "an answer line must be a JSON object",
        ));
    };
    if let Some(answer) = parse_error(&obj)? {
        return Ok(answer);
    }
    take_messages_owned(&mut obj, format)
        .map(CompactAnswer::Messages)
        .map_err(|p| {
            Fault::new(
                FaultKind::Protocol,
                format!("the answer's messages do not parse: {p}"),
            )
        })
}

/// Write an answer to `compact` as one line (with its `\n`), directly.
pub fn write_compact_answer(
    out: &mut Vec<u8>,
    id: &Value,
    answer: &CompactAnswer,
    format: WireFormat,
) {
    match answer {
        CompactAnswer::Messages(msgs) if format == WireFormat::Engine => {
            out.extend_from_slice(b"{\"id\":");
            serde_json::to_writer(&mut *out, id).expect("writes to a Vec");
            out.extend_from_slice(b",\"messages\":");
            write_messages_json(out, msgs);
            out.push(b'}');
        }
        other => serde_json::to_writer(&mut *out, &compact_answer(id, other, format))
            .expect("writes to a Vec"),
    }
    out.push(b'\n');
}

/// A `compact` or `estimate` request in `format`.
pub fn request(op: &str, id: u64, config: &Config, msgs: &[Message], format: WireFormat) -> Value {
    let mut obj = Map::new();
    obj.insert("op".into(), op.into());
    obj.insert("id".into(), id.into());
    obj.insert("config".into(), config.to_value());
    put_messages(&mut obj, format, msgs);
    Value::Object(obj)
}

fn put_messages(obj: &mut Map<String, Value>, format: WireFormat, msgs: &[Message]) {
    let (system, arr) = write_messages(format, msgs);
    if let Some(system) = system {
        obj.insert("system".into(), system);
    }
    obj.insert("messages".into(), Value::Array(arr));
}

/// [`take_messages`], moving the messages out of `obj` instead of copying them.
pub fn take_messages_owned(
    obj: &mut Map<String, Value>,
    format: WireFormat,
) -> Result<Vec<Message>, String> {
    let raw = expect(
        obj.shift_remove("messages"),
        into_array,
        "`messages` must be an array",
        NoMessages(obj),
    )?;
    read_messages_owned(format, system_of(obj, format), raw).map_err(|e| e.to_string())
}

/// Read the messages (and `system`, for anthropic) of a request or answer.
pub fn take_messages(obj: &Map<String, Value>, format: WireFormat) -> Result<Vec<Message>, String> {
    let raw = expect(
        obj.get("messages"),
        Value::as_array,
        "`messages` must be an array",
        NoMessages(obj),
    )?;
    read_messages(format, system_of(obj, format), raw).map_err(|e| e.to_string())
}

/// No `messages`, and the fields there were instead (`result`, …):
/// written only when it is shown.
struct NoMessages<'a>(&'a Map<String, Value>);

impl std::fmt::Display for NoMessages<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fields: Vec<String> = self.0.keys().map(|k| one_line(&format!("{k:?}"))).collect();
        write!(f, "no `messages` (its fields: {})", fields.join(", "))
    }
}

/// The top-level `system` of a request or answer, which only the
/// anthropic format has.
fn system_of(obj: &Map<String, Value>, format: WireFormat) -> Option<&Value> {
    obj.get("system")
        .filter(|_| format == WireFormat::Anthropic)
}

/// An answer to `compact`.
pub fn compact_answer(id: &Value, answer: &CompactAnswer, format: WireFormat) -> Value {
    let mut obj = Map::new();
    obj.insert("id".into(), id.clone());
    match answer {
        CompactAnswer::Messages(msgs) => put_messages(&mut obj, format, msgs),
        CompactAnswer::CannotFit { message } => {
            obj.insert(
                "error".into(),
                json!({"kind": "cannot_fit", "message": message}),
            );
        }
        CompactAnswer::InvalidInput { message } => {
            obj.insert(
                "error".into(),
                json!({"kind": "invalid_input", "message": message}),
            );
        }
    }
    Value::Object(obj)
}

/// An answer to `estimate`.
pub fn estimate_answer(id: &Value, reply: &EstimateReply) -> Value {
    match reply {
        EstimateReply::Tokens(e) => {
            let mut v = json!({"id": id, "tokens": e.tokens});
            if let Some(per) = &e.per_message {
                v["perMessage"] = json!(per);
            }
            v
        }
        EstimateReply::InvalidInput { message } => error_answer(id, "invalid_input", message),
    }
}

/// An error answer.
pub fn error_answer(id: &Value, kind: &str, message: &str) -> Value {
    json!({"id": id, "error": {"kind": kind, "message": message}})
}

/// Read the `error` of an answer, if it has one: `Ok(Some(answer))` for the
/// two kinds that are answers, a fault for any other kind. An `error` is an
/// object whose `kind` is a string and whose `message`, if any, is one
/// too; an answer that has one carries no result (`messages`, `tokens`,
/// `perMessage`) beside it. Anything else is a `protocol` fault that says
/// what was found: never an answer taken at a guess.
pub fn parse_error(obj: &Map<String, Value>) -> Result<Option<CompactAnswer>, Fault> {
    parse_error_beside(obj, false)
}

/// [`parse_error`] for an answer whose `messages` were read apart from
/// `obj` (`has_messages`: the line had them).
fn parse_error_beside(
    obj: &Map<String, Value>,
    has_messages: bool,
) -> Result<Option<CompactAnswer>, Fault> {
    // `null` is no value: a subject whose writer spells every field of
    // its answer type (`"error": null` beside the messages, `"messages":
    // null` beside the error: Go, TypeScript classes, Python dataclasses)
    // is read as one that leaves them out.
    let present = |k: &str| obj.get(k).is_some_and(|v| !v.is_null());
    let Some(err) = obj.get("error").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let bad = |p: String| Fault::new(FaultKind::Protocol, format!("error answer: {p}"));
    let Value::Object(fields) = err else {
        return Err(bad(format!(
            "`error` must be an object {{\"kind\":…,\"message\":…}}, found {}",
            excerpt(err)
        )));
    };
    let kind = match fields.get("kind") {
        Some(Value::String(k)) => k.as_str(),
        other => {
            let found = other.map_or("nothing".to_owned(), excerpt);
            return Err(bad(format!("`error.kind` must be a string, found {found}")));
        }
    };
    let message = match fields.get("message") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(m)) => shown(m, MESSAGE_BYTES),
        Some(other) => {
            return Err(bad(format!(
                "`error.message` must be a string, found {}",
                excerpt(other)
            )))
        }
    };
    let result = ["messages", "tokens", "perMessage"]
        .into_iter()
        .find(|k| present(k) || (has_messages && *k == "messages"));
    if let Some(result) = result {
        return Err(bad(format!(
            "an answer is an `error` or a result, not both: it has `error` (kind {}) and `{result}`",
            shown(&format!("{kind:?}"), NAME_BYTES)
        )));
    }
    match kind {
        "cannot_fit" => Ok(Some(CompactAnswer::CannotFit { message })),
        "invalid_input" => Ok(Some(CompactAnswer::InvalidInput { message })),
        // What the Python and npm packages' serve answers when the
        // compactor raised anything but their CannotFit or InvalidInput:
        // say which to raise (a library's own "too big" exception is not).
        "library_error" => Err(Fault::new(
            FaultKind::LibraryError,
            format!(
                "error of kind \"library_error\": the compactor raised (only cannot_fit and invalid_input are answers: raise ctxgate.CannotFit or ctxgate.InvalidInput in Python, throw CannotFit or InvalidInput from 'ctxgate' in JavaScript): {message}"
            ),
        )),
        other => Err(Fault::new(
            FaultKind::UnknownErrorKind,
            format!(
                "error of kind {} (only cannot_fit and invalid_input are answers): {message}",
                shown(&format!("{other:?}"), NAME_BYTES)
            ),
        )),
    }
}

/// Read an answer to `compact`.
pub fn parse_compact_answer(
    obj: &Map<String, Value>,
    format: WireFormat,
) -> Result<CompactAnswer, Fault> {
    if let Some(answer) = parse_error(obj)? {
        return Ok(answer);
    }
    take_messages(obj, format)
        .map(CompactAnswer::Messages)
        .map_err(|p| {
            Fault::new(
                FaultKind::Protocol,
                format!("the answer's messages do not parse: {p}"),
            )
        })
}

/// Read an answer to `estimate`: figures, or `invalid_input` (an answer,
/// judged by the estimate invariants); `cannot_fit` means nothing for an
/// estimate and is a `protocol` fault, like any malformed answer.
pub fn parse_estimate_answer(obj: &Map<String, Value>) -> Result<EstimateReply, Fault> {
    match parse_error(obj)? {
        Some(CompactAnswer::InvalidInput { message }) => {
            return Ok(EstimateReply::InvalidInput { message })
        }
        Some(answer) => {
            return Err(Fault::new(
                FaultKind::Protocol,
                format!("estimate answered with an error: {}", answer.describe()),
            ))
        }
        None => {}
    }
    // What the subject wrote is shown beside what it should have been.
    let bad = |p: &str, found: Option<&Value>| {
        let found = found.map_or("nothing".to_owned(), excerpt);
        Fault::new(
            FaultKind::Protocol,
            format!("estimate answer: {p}, found {found}"),
        )
    };
    // A count that is not an integer, and what to do about it.
    let not_count = |p: &str, found: Option<&Value>| {
        let mut fault = bad(p, found);
        fault.detail.push_str(found.map_or("", integer_hint));
        fault
    };
    let tokens = obj.get("tokens");
    // All digits and still no u64: an integer, but past what a count is.
    let too_large = |v: Option<&Value>| matches!(v, Some(Value::Number(n)) if n.to_string().bytes().all(|b| b.is_ascii_digit()));
    let tokens = (tokens.and_then(Value::as_u64)).ok_or_else(|| match too_large(tokens) {
        true => bad(
            &format!("`tokens` is too large (at most {})", u64::MAX),
            tokens,
        ),
        false => not_count("`tokens` must be a non-negative integer", tokens),
    })?;
    let per_message = match obj.get("perMessage") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|t| {
                    (t.as_u64()).ok_or_else(|| {
                        not_count("`perMessage` must hold non-negative integers", Some(t))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => return Err(bad("`perMessage` must be an array", Some(other))),
    };
    Ok(EstimateReply::Tokens(EstimateAnswer {
        tokens,
        per_message,
    }))
}

/// What to do with a token count that is a number but not a
/// non-negative integer (docs/protocol.md §4): a fraction is refused, not
/// rounded by ctxgate — which way to round is the estimator's to own, and
/// only up keeps it over the floors it is held to.
fn integer_hint(v: &Value) -> &'static str {
    let Value::Number(n) = v else { return "" };
    // As written (numbers keep their spelling): a bare integer that is not
    // a u64 is negative or too large, which no rounding mends.
    let spelled_as_integer = !n.to_string().contains(['.', 'e', 'E']);
    match n.as_f64() {
        _ if spelled_as_integer => "",
        Some(f) if f >= 0.0 && f.fract() != 0.0 => {
            ": a fractional count is refused; round it up (ceil) — rounded down, an estimate can fall under the floors the estimate invariants hold it to"
        }
        Some(f) if f >= 0.0 => {
            ": write it as an integer, without a fraction or an exponent (12, not 12.0)"
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A count of more digits than a u64 holds is named too large, not
    /// "not a non-negative integer", which it is.
    #[test]
    fn a_count_past_u64_is_too_large() {
        let big = format!("1{}", "0".repeat(400));
        let answer: Value =
            serde_json::from_str(&format!(r#"{{"id": 1, "tokens": {big}}}"#)).unwrap();
        let fault = parse_estimate_answer(answer.as_object().unwrap()).unwrap_err();
        assert!(
            fault.detail.contains("`tokens` is too large"),
            "{}",
            fault.detail
        );
    }

    /// NEL, U+2028 and U+2029 leave as escapes, wherever they are in a
    /// string (at its ends, side by side, beside other non-ASCII text), and
    /// the JSON reads back as the same value; a line `splitlines()` would
    /// cut is one line.
    #[test]
    fn line_separators_are_escaped_and_the_value_kept() {
        let texts = [
            "\u{2028}",
            "a\u{2028}b\u{2029}c\u{85}d",
            "\u{85}\u{85}\u{2029}\u{2028}",
            "— … é \u{2027}\u{202a}\u{2030} ¥\u{84}\u{86} 日本",
            "plain\n\r\u{b}\u{c}\u{1c}\u{1d}\u{1e}",
        ];
        for text in texts {
            let v = json!({"k\u{2028}": text, "n": [1.5, text]});
            let raw = serde_json::to_vec(&v).unwrap();
            let mut safe = Vec::new();
            push_line_safe(&mut safe, &raw);
            let shown = String::from_utf8(safe.clone()).unwrap();
            // Every character Python's `str.splitlines()` splits at.
            let breaks = |c: char| {
                matches!(
                    c,
                    '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{1c}'
                        ..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
                )
            };
            assert!(!shown.contains(breaks), "{shown}");
            assert_eq!(
                serde_json::from_slice::<Value>(&safe).unwrap(),
                v,
                "{shown}"
            );
            // Nothing else changes: the other characters stay raw.
            let unescaped = shown
                .replace("\\u0085", "\u{85}")
                .replace("\\u2028", "\u{2028}")
                .replace("\\u2029", "\u{2029}");
            assert_eq!(unescaped.as_bytes(), &raw[..]);
        }
    }

    /// Two error kinds are answers; the packages' `library_error` is a
    /// fault that says which exception to raise instead; any other kind is
    /// a fault that names it.
    #[test]
    fn error_kinds_are_answers_or_faults_that_say_why() {
        let error = |kind: &str| {
            let v = serde_json::json!({"id": 1, "error": {"kind": kind, "message": "too big"}});
            parse_error(v.as_object().unwrap())
        };
        assert!(matches!(
            error("cannot_fit"),
            Ok(Some(CompactAnswer::CannotFit { .. }))
        ));
        assert!(matches!(
            error("invalid_input"),
            Ok(Some(CompactAnswer::InvalidInput { .. }))
        ));
        let raised = error("library_error").unwrap_err();
        assert_eq!(raised.kind, FaultKind::LibraryError);
        assert_eq!(raised.kind.name(), "library-error");
        assert!(
            raised.detail.contains("raise ctxgate.CannotFit"),
            "{}",
            raised.detail
        );
        assert!(raised.detail.ends_with(": too big"), "{}", raised.detail);
        let other = error("internal").unwrap_err();
        assert_eq!(other.kind, FaultKind::UnknownErrorKind);
        assert!(
            other.detail.starts_with("error of kind \"internal\" (only"),
            "{}",
            other.detail
        );
    }

    /// `wireFormats` round-trips through the hello, and a bad one fails it.
    #[test]
    fn hello_wire_formats() {
        let mut info = SubjectInfo::new("s", "1");
        info.wire_formats = WireFormats::of(&[WireFormat::Openai]);
        let hello = hello_answer(&info);
        assert_eq!(hello["wireFormats"], json!(["openai"]));
        assert_eq!(parse_hello(&hello).unwrap().wire_formats, info.wire_formats);
        let all = hello_answer(&SubjectInfo::new("s", "1"));
        assert!(all.get("wireFormats").is_none());
        assert!(parse_hello(&all).unwrap().wire_formats.is_all());
        for bad in [json!([]), json!("openai"), json!(["openai", "gemini"])] {
            let mut h = hello.clone();
            h["wireFormats"] = bad;
            let e = parse_hello(&h).unwrap_err();
            assert!(e.detail.contains("`wireFormats` must be"), "{}", e.detail);
        }
    }

    /// A misspelt field or an unknown op is read past, and noted with what
    /// it likely meant; the hello ctxgate writes itself has no note.
    #[test]
    fn a_hello_with_a_misspelt_field_or_op_is_noted() {
        let mut full = SubjectInfo::new("s", "1");
        full.wire_formats = WireFormats::of(&[WireFormat::Openai]);
        full.compact_at = 0.9;
        full.invariants = Some(InvariantSet::all());
        assert_eq!(
            parse_hello(&hello_answer(&full)).unwrap().hello_notes,
            Vec::<String>::new()
        );
        let hello = json!({"op": "hello", "protocol": 1, "name": "t", "ops": ["compact", "estimates"],
                           "fromat": "openai", "x-extra": 1});
        let info = parse_hello(&hello).unwrap();
        assert!(!info.estimates);
        assert_eq!(
            info.hello_notes,
            [
                "`ops` names \"estimates\" (did you mean \"estimate\"?), an op ctxgate does not send; it is ignored",
                "unknown field \"fromat\" (did you mean `format`?); it is ignored",
                "unknown field \"x-extra\"; it is ignored",
            ]
        );
    }

    #[test]
    fn a_hello_of_another_protocol_says_which_in_words() {
        let f = parse_hello(&json!({"op": "hello", "protocol": 2})).unwrap_err();
        assert_eq!(f.kind, FaultKind::Protocol);
        assert_eq!(
            f.detail,
            "hello: protocol 2 is not supported (this harness speaks 1)"
        );
        let f = parse_hello(&json!({"op": "hello"})).unwrap_err();
        assert!(f.detail.contains("no `protocol`"), "{}", f.detail);
    }

    #[test]
    fn a_declared_margin_is_read_and_a_bad_one_fails_the_hello() {
        let hello = |at: Value| json!({"op": "hello", "protocol": 1, "compactAt": at});
        let info = parse_hello(&hello(json!(0.9))).unwrap();
        assert_eq!(info.compact_at, 0.9);
        assert_eq!(hello_answer(&info)["compactAt"], json!(0.9));
        let plain = parse_hello(&json!({"op": "hello", "protocol": 1})).unwrap();
        assert_eq!(plain.compact_at, 1.0);
        assert!(hello_answer(&plain).get("compactAt").is_none());
        for bad in [json!(0), json!(1.5), json!("0.9"), json!(-0.1)] {
            let f = parse_hello(&hello(bad.clone())).unwrap_err();
            assert!(
                f.detail
                    .starts_with("hello: `compactAt` must be a number in (0, 1]"),
                "{bad}: {}",
                f.detail
            );
        }
    }

    /// An `error` of the wrong shape, or one beside a result, is a
    /// `protocol` fault that shows what was found: never read as an error
    /// of kind "" with no message, nor as whichever of the two came first.
    #[test]
    fn an_error_of_the_wrong_shape_or_beside_a_result_is_a_protocol_fault() {
        let parse = |v: Value| parse_error(v.as_object().unwrap());
        let cases = [
            (
                json!({"id": 1, "error": "boom"}),
                "`error` must be an object",
            ),
            (
                json!({"id": 1, "error": {"message": "m"}}),
                "`error.kind` must be a string, found nothing",
            ),
            (
                json!({"id": 1, "error": {"kind": 7}}),
                "`error.kind` must be a string, found 7",
            ),
            (
                json!({"id": 1, "error": {"kind": "cannot_fit", "message": 5}}),
                "`error.message` must be a string, found 5",
            ),
            (
                json!({"id": 1, "error": {"kind": "cannot_fit"}, "messages": []}),
                "not both: it has `error` (kind \"cannot_fit\") and `messages`",
            ),
            (
                json!({"id": 1, "error": {"kind": "invalid_input"}, "tokens": 3}),
                "and `tokens`",
            ),
        ];
        for (answer, says) in cases {
            let f = parse(answer.clone()).unwrap_err();
            assert_eq!(f.kind, FaultKind::Protocol, "{answer}");
            assert!(f.detail.starts_with("error answer: "), "{}", f.detail);
            assert!(f.detail.contains(says), "{answer}: {}", f.detail);
        }
        // `null` is no value: an error beside results that are null, or
        // a result beside an `error` that is null, is read as one alone.
        let nulls = parse(json!({"id": 1, "error": {"kind": "cannot_fit"},
            "messages": null, "tokens": null, "perMessage": null}));
        assert!(
            matches!(nulls, Ok(Some(CompactAnswer::CannotFit { .. }))),
            "{nulls:?}"
        );
        assert!(matches!(parse(json!({"id": 1, "error": null})), Ok(None)));
        let no_error = read_line(
            br#"{"id":1,"messages":[],"error":null}"#,
            WireFormat::Engine,
        )
        .unwrap();
        assert_eq!(
            parse_compact_line(no_error, WireFormat::Engine).unwrap(),
            CompactAnswer::Messages(Vec::new())
        );
        // A message left out, or null, is an empty one.
        let plain = parse(json!({"id": 1, "error": {"kind": "cannot_fit", "message": null}}));
        assert!(
            matches!(plain, Ok(Some(CompactAnswer::CannotFit { message })) if message.is_empty())
        );
        // Messages read apart from the fields (the fast path) count too.
        let line = read_line(
            br#"{"id":1,"messages":[],"error":{"kind":"cannot_fit"}}"#,
            WireFormat::Engine,
        )
        .unwrap();
        assert!(line.messages.is_some());
        let f = parse_compact_line(line, WireFormat::Engine).unwrap_err();
        assert!(f.detail.contains("not both"), "{}", f.detail);
    }

    /// A hello field of the wrong type fails the hello instead of being
    /// read as its default; one invariant name holding a comma is not a
    /// list of two.
    #[test]
    fn a_hello_field_of_the_wrong_type_fails_the_hello() {
        let hello = |k: &str, v: Value| {
            let mut h = json!({"op": "hello", "protocol": 1});
            h[k] = v;
            parse_hello(&h)
        };
        let cases = [
            ("name", json!(5), "`name` must be a string, found 5"),
            (
                "version",
                json!(["1"]),
                "`version` must be a string, found [\"1\"]",
            ),
            (
                "ops",
                json!(["compact", 5]),
                "`ops` must be an array of names, found 5",
            ),
            (
                "invariants",
                json!(["tool-pairing", null]),
                "`invariants` must be an array of names, found null",
            ),
            (
                "invariants",
                json!(["tool-pairing,progress"]),
                "one name an entry",
            ),
        ];
        for (k, v, says) in cases {
            let f = hello(k, v.clone()).unwrap_err();
            assert_eq!(f.kind, FaultKind::Protocol, "{k}: {v}");
            assert!(f.detail.contains(says), "{k}: {v}: {}", f.detail);
        }
        assert_eq!(hello("name", Value::Null).unwrap().name, "unnamed subject");
    }

    /// What a subject says is kept for people bounded, however long it was
    /// sent: a hello's name and version, an error's message and kind, and
    /// every value a fault of its hello or answer shows.
    #[test]
    fn subject_text_is_bounded_wherever_it_is_kept() {
        let long = format!("\u{202e}{}", "x".repeat(3 << 20));
        let info =
            parse_hello(&json!({"op": "hello", "protocol": 1, "name": long, "version": long}))
                .unwrap();
        for text in [&info.name, &info.version] {
            assert!(text.len() < 2 * NAME_BYTES, "{} bytes", text.len());
            assert!(
                text.starts_with("\\u{202e}x") && text.contains(" bytes left out …] x"),
                "{text}"
            );
        }
        let error = |kind: &str| json!({"id": 1, "error": {"kind": kind, "message": long}});
        let Ok(Some(CompactAnswer::CannotFit { message })) =
            parse_error(error("cannot_fit").as_object().unwrap())
        else {
            panic!("not an answer")
        };
        assert!(message.len() < 2 * MESSAGE_BYTES, "{} bytes", message.len());
        let f = parse_error(error(&long).as_object().unwrap()).unwrap_err();
        assert_eq!(f.kind, FaultKind::UnknownErrorKind);
        assert!(
            f.detail.len() < 2 * (NAME_BYTES + MESSAGE_BYTES),
            "{} bytes",
            f.detail.len()
        );
        for (k, v) in [
            ("format", json!(long)),
            ("invariants", json!([long])),
            ("numbers", json!(long)),
            ("compactAt", json!(long)),
            ("wireFormats", json!([long])),
            ("protocol", json!(long)),
        ] {
            let mut h = json!({"op": "hello", "protocol": 1});
            h[k] = v;
            let f = parse_hello(&h).unwrap_err();
            assert!(
                f.detail.len() < 2 * MESSAGE_BYTES,
                "{k}: {} bytes",
                f.detail.len()
            );
            assert!(!f.detail.contains('\u{202e}'), "{k}: {}", f.detail);
        }
    }

    #[test]
    fn subject_text_loses_its_control_characters() {
        assert_eq!(one_line("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\\u{a}c");
        assert_eq!(lines("x\ny\t\u{7}"), "x\ny\t\\u{7}");
        assert_eq!(one_line("plain é 🦀"), "plain é 🦀");
        assert_eq!(one_line("\u{202e}gnp.exe"), "\\u{202e}gnp.exe");
    }
}
