//! `ctxgate serve`: the subject's side of the protocol, for any in-process
//! subject (the reference by default). Bad request lines get an
//! `invalid_input` answer, never a crash.

use std::io::{BufRead, BufReader, Read, Write};

use serde_json::Value;

use super::protocol::{
    error_answer, estimate_answer, hello_answer, line_breaks, push_line_safe,
    read_line_keeping_json, take_messages_owned, utf8, write_compact_answer, write_messages_json,
};
use super::Subject;
use crate::config::Config;
use crate::model::engine_ser::written_alike;
use crate::model::{Message, WireFormat};
use crate::subject::CompactAnswer;

/// Answer requests from `input` on `output` until `input` closes. A
/// request line longer than `max_line_bytes` is not kept in memory: it is
/// answered `invalid_input` (with `"id": null`) and skipped to its end.
pub fn serve(
    subject: &mut dyn Subject,
    input: impl Read,
    mut output: impl Write,
    max_line_bytes: usize,
) -> std::io::Result<()> {
    // A large buffer reads a case's requests in a few calls.
    let mut input = BufReader::with_capacity(INPUT_BUFFER, input);
    let mut line = Vec::new();
    // The answers not yet written: those to the requests read together
    // leave together, in one write (no buffer between: `output` is not
    // buffered by the caller).
    let mut answer = Vec::new();
    let send = |answer: &mut Vec<u8>, output: &mut dyn Write| {
        output.write_all(answer)?;
        answer.clear();
        output.flush()
    };
    let mut known = Known::default();
    loop {
        // A line the buffer holds whole is answered where it is.
        let buf = input.fill_buf()?;
        if let Some(end) = memchr::memchr(b'\n', buf).filter(|&end| end <= max_line_bytes) {
            let line = &buf[..end];
            if !line.iter().all(u8::is_ascii_whitespace) {
                answer_line(subject, line, &mut answer, &mut known);
            }
            input.consume(end + 1);
            if answer.len() >= OUTPUT_BATCH || memchr::memchr(b'\n', input.buffer()).is_none() {
                send(&mut answer, &mut output)?;
            }
            continue;
        }
        let (ended, too_long) = read_line(&mut input, &mut line, max_line_bytes)?;
        if too_long {
            let msg = format!("a request line over {max_line_bytes} bytes, the cap: skipped");
            serde_json::to_writer(
                &mut answer,
                &error_answer(&Value::Null, "invalid_input", &msg),
            )?;
            answer.push(b'\n');
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            answer_line(subject, &line, &mut answer, &mut known);
        }
        // Answers go out when no whole request waits to be read: the
        // answers to requests sent together leave together, with one
        // write and one wake-up of the harness.
        if ended || answer.len() >= OUTPUT_BATCH || memchr::memchr(b'\n', input.buffer()).is_none()
        {
            send(&mut answer, &mut output)?;
        }
        if ended {
            return Ok(());
        }
    }
}

/// How many answer bytes wait at most for the requests read with them.
const OUTPUT_BATCH: usize = 1 << 20;

/// How much of stdin is read at once.
const INPUT_BUFFER: usize = 1 << 20;

/// Read one `\n`-terminated line into `line` (cleared first), keeping at
/// most `cap` bytes: `(input ended, line was over the cap)`.
fn read_line(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<(bool, bool)> {
    line.clear();
    let mut over = false;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok((true, over));
        }
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(p) => (&buf[..p], Some(p + 1)),
            None => (buf, None),
        };
        if !over && line.len() + chunk.len() > cap {
            over = true;
            line.clear();
        }
        if !over {
            line.extend_from_slice(chunk);
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            return Ok((false, over));
        }
    }
}

/// A history seen lately, as JSON and as messages.
struct History {
    json: Vec<u8>,
    messages: Vec<Message>,
}

/// How many histories serve remembers: enough for the requests of a few
/// cases in flight at once (`check --lanes`), each history a few messages
/// more than one of them.
const KNOWN: usize = 8;

/// The histories serve read or wrote lately, the newest first. The
/// requests of one case (compact, compact again, estimate) carry the same
/// history, the longer one of estimate-monotone one message more; a
/// ToolLoop's next turn is the last answer and the turn's new messages;
/// idempotence sends an answer back. Each is read as a known history and
/// what follows it.
#[derive(Default)]
struct Known {
    recent: std::collections::VecDeque<History>,
    /// The configs read lately, and their JSON text, the newest first.
    configs: std::collections::VecDeque<(String, std::rc::Rc<Config>)>,
}

impl Known {
    /// The config whose JSON text is `raw`, read once for the requests
    /// that share it (those of a case, and of the cases in flight).
    fn config(&mut self, raw: &str) -> Result<std::rc::Rc<Config>, String> {
        if let Some(k) = self.configs.iter().position(|(text, _)| text == raw) {
            let known = self.configs.remove(k).expect("found");
            let config = std::rc::Rc::clone(&known.1);
            self.configs.push_front(known);
            return Ok(config);
        }
        let value: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
        let config = std::rc::Rc::new(Config::from_value_ref(&value).map_err(|e| e.to_string())?);
        self.configs
            .push_front((raw.to_owned(), std::rc::Rc::clone(&config)));
        self.configs.truncate(KNOWN);
        Ok(config)
    }

    fn remember(&mut self, h: History) {
        self.recent.push_front(h);
        self.recent.truncate(KNOWN);
    }

    /// The request read as a known history (which moves to the front) and
    /// messages more, if it is one. The line is searched once for its
    /// `"messages":`, whatever the number of histories known: at each place
    /// the key is spelled, in order, the head before it is read; the first
    /// place whose head reads as the request's is the top-level key (past
    /// it the key is spelled inside the history), and there each history is
    /// tried.
    fn extension(&mut self, line: &[u8]) -> Option<Head> {
        for at in memchr::memmem::find_iter(line, MESSAGES_KEY) {
            let Some(head) = self.head(&line[..at + MESSAGES_KEY.len()]) else {
                continue;
            };
            let (k, e) = self
                .recent
                .iter()
                .enumerate()
                .find_map(|(k, h)| extended(line, at, &h.json).map(|e| (k, e)))?;
            let mut base = self.recent.remove(k).expect("found");
            if !e.more.is_empty() {
                base.messages.extend(e.more);
                // `[A]` becomes `[A,X…]`: the JSON after `[A` is added.
                let open = base.json.len() - 1;
                base.json.truncate(open);
                base.json
                    .extend_from_slice(&line[e.json.start + open..e.json.end]);
            }
            self.recent.push_front(base);
            return Some(head);
        }
        None
    }

    /// A request whose `messages` come last (`…"messages":[…]}`), read in
    /// one pass: its other fields read alone (the reading of the head
    /// proves the key top level, as in `extension`), the messages straight
    /// into messages, their JSON kept as it came. `None`: anything else,
    /// read the general way.
    fn fresh(&self, line: &[u8]) -> Option<(Head, Extension)> {
        let end = line.len().checked_sub(1)?;
        if line[end] != b'}' {
            return None;
        }
        // The first place whose head reads is the top-level key: past it
        // the key is spelled inside the messages, and messages that do not
        // read here are read the general way.
        let (at, head) = memchr::memmem::find_iter(line, MESSAGES_KEY)
            .find_map(|at| Some((at, self.head(&line[..at + MESSAGES_KEY.len()])?)))?;
        let json = at + MESSAGES_KEY.len()..end;
        let more = read_messages(utf8(&line[json.clone()])?)?;
        Some((head, Extension { more, json }))
    }

    /// The fields of a request line's head (see `head_fields`); a head as
    /// the harness writes it, with a config read lately, without a parser.
    fn head(&self, head: &[u8]) -> Option<Head> {
        match self.written_head(head) {
            HeadRead::Head(h) => Some(h),
            HeadRead::NotAHead => None,
            HeadRead::Unknown => head_fields(head),
        }
    }

    /// A head `{"op":"compact"|"estimate","id":` integer `,"config":` config
    /// `,"messages":` whose config is the text of one read lately (which
    /// was one JSON value): its fields are those, as a parser reads them.
    /// When the config is instead the start of one read lately, up to a
    /// `,"messages":` of its own (a key of its envelope), the head is cut
    /// inside that object, and no reading of it gives an object.
    fn written_head(&self, head: &[u8]) -> HeadRead {
        let Some((op, digits, config)) = harness_spelling(head) else {
            return HeadRead::Unknown;
        };
        let Some((text, _)) = self.configs.iter().find(|(t, _)| t.as_bytes() == config) else {
            let cut_inside = |t: &[u8]| {
                t.strip_prefix(config)
                    .is_some_and(|after| after.starts_with(b",\"messages\":"))
            };
            return match self.configs.iter().any(|(t, _)| cut_inside(t.as_bytes())) {
                true => HeadRead::NotAHead,
                false => HeadRead::Unknown,
            };
        };
        let Ok(id) = serde_json::from_slice(digits) else {
            return HeadRead::Unknown;
        };
        let mut fields = serde_json::Map::new();
        fields.insert("op".to_owned(), Value::from(op));
        fields.insert("id".to_owned(), id);
        HeadRead::Head(Head {
            fields,
            config: Some(text.clone()),
        })
    }
}

/// What a head in the harness's spelling reads as (`Known::written_head`).
enum HeadRead {
    Head(Head),
    NotAHead,
    /// Not known without a parser.
    Unknown,
}

/// A head `{"op":"compact"|"estimate","id":` integer `,"config":` config
/// `,"messages":`: its op, its id's digits and its config's text.
fn harness_spelling(head: &[u8]) -> Option<(&'static str, &[u8], &[u8])> {
    let rest = head.strip_suffix(MESSAGES_KEY)?.strip_suffix(b",")?;
    let (op, rest) = [
        ("compact", &b"{\"op\":\"compact\",\"id\":"[..]),
        ("estimate", &b"{\"op\":\"estimate\",\"id\":"[..]),
    ]
    .into_iter()
    .find_map(|(op, start)| rest.strip_prefix(start).map(|r| (op, r)))?;
    let (digits, rest) = rest.split_at(rest.iter().take_while(|b| b.is_ascii_digit()).count());
    let integer = match digits {
        [b'0'] => true,
        [b'1'..=b'9', more @ ..] => more.len() < 19,
        _ => false,
    };
    let config = rest.strip_prefix(b",\"config\":")?;
    integer.then_some((op, digits, config))
}

const MESSAGES_KEY: &[u8] = b"\"messages\":";

/// A request whose `messages`, at `at`, are a known history's JSON, alone
/// or with messages appended: `…"messages":` + `[A` + (`]` or `,X…]`) +
/// `}` where `[A]` is `known`. Its other fields, and the appended messages,
/// read alone; the reading of the head proves the key top level.
fn extended(line: &[u8], at: usize, known: &[u8]) -> Option<Extension> {
    let open = &known[..known.len().checked_sub(1)?]; // `[A` without its `]`
    if open.len() < 2 {
        return None; // `[]`: nothing to extend
    }
    let rest = line[at + MESSAGES_KEY.len()..].strip_prefix(open)?;
    let tail = rest.strip_suffix(b"}")?;
    let more = match tail {
        b"]" => Vec::new(),
        _ => {
            // `X…]` as an array of its own.
            let tail = tail.strip_prefix(b",")?;
            let mut more_json = String::with_capacity(tail.len() + 1);
            more_json.push('[');
            more_json.push_str(utf8(tail)?);
            read_messages(&more_json)?
        }
    };
    Some(Extension {
        more,
        json: at + MESSAGES_KEY.len()..line.len() - 1,
    })
}

/// `json`, an array of engine messages and nothing more.
fn read_messages(json: &str) -> Option<Vec<Message>> {
    let mut de = serde_json::Deserializer::from_str(json);
    let more =
        serde::de::DeserializeSeed::deserialize(crate::model::engine_de::MessagesSeed, &mut de)
            .ok()?;
    de.end().ok()?;
    Some(more)
}

/// The fields of a request line's `head`, all of it up to and including
/// its `"messages":`, read with `null` for the messages: `None` unless that
/// makes an object whose top-level `messages` is that `null`. The config
/// is kept as its JSON text: the requests of a case share it, and it is
/// read once (`Known::config`).
fn head_fields(head: &[u8]) -> Option<Head> {
    use serde::de::{MapAccess, Visitor};
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = (Head, bool);
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a request object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(Head, bool), A::Error> {
            let mut head = Head::default();
            let mut messages_null = false;
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "config" => {
                        let raw: &serde_json::value::RawValue = map.next_value()?;
                        head.config = Some(raw.get().to_owned());
                    }
                    "messages" => messages_null = map.next_value::<Value>()?.is_null(),
                    _ => {
                        let v: Value = map.next_value()?;
                        head.fields.insert(key, v);
                    }
                }
            }
            Ok((head, messages_null))
        }
    }
    let mut text = Vec::with_capacity(head.len() + 5);
    text.extend_from_slice(head);
    text.extend_from_slice(b"null}");
    let text = utf8(&text)?;
    let mut de = serde_json::Deserializer::from_str(text);
    let (head, messages_null) = serde::Deserializer::deserialize_map(&mut de, V).ok()?;
    de.end().ok()?;
    messages_null.then_some(head)
}

/// A request's fields but `messages`, its `config` as JSON text.
#[derive(Default)]
struct Head {
    fields: serde_json::Map<String, Value>,
    config: Option<String>,
}

/// A request read as a known history and more messages.
struct Extension {
    /// The messages after the known history.
    more: Vec<Message>,
    /// Where the request's `messages` JSON is in its line.
    json: std::ops::Range<usize>,
}

/// Answer one request line into `out` (one line, with its `\n`).
fn answer_line(subject: &mut dyn Subject, line: &[u8], out: &mut Vec<u8>, known: &mut Known) {
    let value = |out: &mut Vec<u8>, v: &Value| {
        let start = out.len();
        serde_json::to_writer(&mut *out, v).expect("writes to a Vec");
        line_safe_from(out, start);
        out.push(b'\n');
    };
    let format = subject.info().format;
    let answer = |out: &mut Vec<u8>, id: &Value, answer: &CompactAnswer| {
        let start = out.len();
        write_compact_answer(out, id, answer, format);
        line_safe_from(out, start);
    };
    let messages = |out: &mut Vec<u8>, msgs: &[Message]| {
        let start = out.len();
        write_messages_json(out, msgs);
        line_safe_from(out, start);
    };
    let engine = format == WireFormat::Engine;
    // The request's fields, and whether its history is `known.recent[0]`.
    let (mut obj, mut owned, raw_config) = match engine.then(|| known.extension(line)).flatten() {
        Some(head) => (head.fields, None, head.config),
        None => match engine.then(|| known.fresh(line)).flatten() {
            Some((head, e)) => {
                let json = line[e.json].to_vec();
                known.remember(History {
                    json,
                    messages: e.more,
                });
                (head.fields, None, head.config)
            }
            None => match read_line_keeping_json(line, format) {
                Ok(r) => match (r.messages, r.messages_json) {
                    (Some(messages), Some(json)) => {
                        known.remember(History { json, messages });
                        (r.fields, None, None)
                    }
                    (m, _) => (r.fields, Some(m), None),
                },
                Err(e) => {
                    let msg = format!("not a JSON request object: {e}");
                    return value(out, &error_answer(&Value::Null, "invalid_input", &msg));
                }
            },
        },
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    let op = match obj.get("op") {
        Some(Value::String(op)) => op.clone(),
        found => {
            let msg = match found {
                None => "the request has no `op` (\"compact\" or \"estimate\")".to_owned(),
                Some(v) => format!(
                    "`op` must be a string, found {}",
                    crate::error::json_type(v)
                ),
            };
            return value(out, &error_answer(&id, "invalid_input", &msg));
        }
    };
    match op.as_str() {
        "hello" => return value(out, &hello_answer(subject.info())),
        "compact" => {}
        "estimate" if subject.info().estimates => {}
        // Said before anything else is read: an op serve does not answer
        // is what is wrong with the request, whatever its messages.
        other => {
            let msg = format!("unknown op {other:?}");
            return value(out, &error_answer(&id, "invalid_input", &msg));
        }
    }
    let config = match (&raw_config, obj.get("config")) {
        (Some(raw), _) => known.config(raw),
        (None, None) => Ok(std::rc::Rc::new(Config::default())),
        (None, Some(c)) => Config::from_value_ref(c)
            .map(std::rc::Rc::new)
            .map_err(|e| e.to_string()),
    };
    let config = match config {
        Ok(c) => c,
        Err(e) => return value(out, &error_answer(&id, "invalid_input", &e)),
    };
    let local;
    // Whether `msgs` are `known.recent[0]`, whose JSON is at hand.
    let known_json = owned.is_none();
    let msgs: &[Message] = match owned.take() {
        None => &known.recent[0].messages,
        Some(Some(m)) => {
            local = m;
            &local
        }
        Some(None) => match take_messages_owned(&mut obj, format) {
            Ok(m) => {
                local = m;
                &local
            }
            Err(p) => return value(out, &error_answer(&id, "invalid_input", &p)),
        },
    };
    match op.as_str() {
        "compact" => {
            let head = |out: &mut Vec<u8>| {
                out.extend_from_slice(b"{\"id\":");
                serde_json::to_writer(&mut *out, &id).expect("writes to a Vec");
                out.extend_from_slice(b",\"messages\":");
            };
            match subject.compact_unless_unchanged(&config, msgs) {
                // The history handed back as it came.
                Ok(None) if engine => {
                    head(out);
                    match known_json {
                        true => out.extend_from_slice(&known.recent[0].json),
                        false => messages(out, msgs),
                    }
                    out.extend_from_slice(b"}\n");
                }
                Ok(None) => answer(out, &id, &CompactAnswer::Messages(msgs.to_vec())),
                Ok(Some(CompactAnswer::Messages(o))) if engine => {
                    head(out);
                    // A history seen lately, written alike: its JSON is at
                    // hand.
                    let alike = |h: &&History| {
                        h.messages.len() == o.len()
                            && h.messages.iter().zip(&o).all(|(a, b)| written_alike(a, b))
                    };
                    match known.recent.iter().find(alike) {
                        Some(h) => out.extend_from_slice(&h.json),
                        None => {
                            let start = out.len();
                            messages(out, &o);
                            let json = out[start..].to_vec();
                            known.remember(History { json, messages: o });
                        }
                    }
                    out.extend_from_slice(b"}\n");
                }
                Ok(Some(a)) => answer(out, &id, &a),
                Err(fault) => value(out, &error_answer(&id, "internal", &fault.to_string())),
            }
        }
        "estimate" if subject.info().estimates => match subject.estimate(&config, msgs) {
            Ok(e) => value(out, &estimate_answer(&id, &e)),
            Err(fault) => value(out, &error_answer(&id, "internal", &fault.to_string())),
        },
        other => unreachable!("op {other:?} is answered above"),
    }
}

/// Escape the line breaks some readers split at (U+0085, U+2028,
/// U+2029) in what serve wrote from `start` on, as the harness escapes
/// its requests' (`protocol::push_line_safe`). A history serve hands back
/// is either a request's bytes, escaped so by the harness, or written by
/// serve: written alike, an answer's bytes do not depend on which
/// histories serve still remembers — and so not on how the lanes of a
/// run took turns (`bytesReceived` moved by three bytes between runs).
fn line_safe_from(out: &mut Vec<u8>, start: usize) {
    if line_breaks(&out[start..]).next().is_none() {
        return;
    }
    let fresh = out.split_off(start);
    push_line_safe(out, &fresh);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subject::{InProcess, SubjectInfo};

    fn messages(json: &str) -> Vec<Message> {
        let v: Value = serde_json::from_str(json).unwrap();
        crate::model::engine::read_messages(v.as_array().unwrap()).unwrap()
    }

    /// An answer equal as a JSON value to a history serve has seen, but
    /// spelled otherwise, is written as the subject spelled it.
    #[test]
    fn an_answer_is_written_as_the_subject_spells_it() {
        let theirs = messages(r#"[{"role":"user","content":"x","n":1,"o":{"b":2,"a":1}}]"#);
        let answer = theirs.clone();
        let mut subject = InProcess::new(
            SubjectInfo::new("respeller", "1"),
            move |_, _| CompactAnswer::Messages(answer.clone()),
            None,
        );
        let sent = r#"[{"role":"user","content":"x","n":1.0,"o":{"a":1,"b":2}}]"#;
        assert_eq!(messages(sent), theirs, "equal as JSON values");
        let input = format!(
            "{{\"op\":\"compact\",\"id\":1,\"messages\":{sent}}}\n{{\"op\":\"compact\",\"id\":2,\"messages\":{sent}}}\n"
        );
        let mut out = Vec::new();
        serve(&mut subject, input.as_bytes(), &mut out, 1 << 20).unwrap();
        let text = String::from_utf8(out).unwrap();
        let want = r#"{"role":"user","content":"x","n":1,"o":{"b":2,"a":1}}"#;
        for (n, line) in text.lines().enumerate() {
            assert!(line.contains(want), "answer {n}: {line}");
        }
        assert_eq!(text.lines().count(), 2);
    }

    /// A history holding line breaks that some readers split at, handed
    /// back by a subject, is written with them escaped whether serve
    /// remembers it (and echoes the harness's bytes, escaped) or writes it
    /// anew: the answer's bytes are the same either way.
    #[test]
    fn a_history_is_answered_alike_whether_remembered_or_not() {
        let odd = r#"[{"role":"user","content":"a\u2028b\u0085c"},{"role":"assistant","content":"d\u2029"}]"#;
        let fixed = messages(odd);
        let other = r#"[{"role":"user","content":"plain"}]"#;
        let answers = |lines: &[String]| {
            let answer = fixed.clone();
            let mut subject = InProcess::new(
                SubjectInfo::new("fixed", "1"),
                move |_, _| CompactAnswer::Messages(answer.clone()),
                None,
            );
            let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let mut out = Vec::new();
            serve(&mut subject, input.as_bytes(), &mut out, 1 << 20).unwrap();
            out
        };
        let request =
            |id: u32, msgs: &str| format!(r#"{{"op":"compact","id":{id},"messages":{msgs}}}"#);
        let (first, second) = (request(1, odd), request(2, other));
        let together = answers(&[first, second.clone()]);
        let alone = answers(&[second]);
        let last = together.split(|&b| b == b'\n').nth(1).unwrap();
        assert_eq!(
            String::from_utf8_lossy(last),
            String::from_utf8_lossy(alone.strip_suffix(b"\n").unwrap())
        );
        for out in [&together, &alone] {
            assert_eq!(
                line_breaks(out).count(),
                0,
                "{}",
                String::from_utf8_lossy(out)
            );
            let text = String::from_utf8_lossy(out);
            assert!(text.contains(r#"a\u2028b\u0085c"#), "{text}");
        }
    }

    /// A request of an op serve does not answer is told so, whatever else
    /// it lacks (it used to be told it had no `messages`); `estimate` too
    /// when the subject does not estimate.
    #[test]
    fn an_unknown_op_is_named_before_anything_else() {
        let input = b"{\"op\":\"nope\",\"id\":3}\n{\"id\":4,\"messages\":[]}\n{\"op\":\"\\u001b[2J\",\"id\":5,\"messages\":[]}\n";
        let mut out = Vec::new();
        serve(&mut InProcess::reference(), &input[..], &mut out, 1 << 20).unwrap();
        let text = String::from_utf8(out).unwrap();
        let answers: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(answers.len(), 3, "{text}");
        for (a, (id, said)) in answers.iter().zip([
            (3, "unknown op \"nope\""),
            (4, "the request has no `op` (\"compact\" or \"estimate\")"),
            (5, "unknown op \"\\u{1b}[2J\""),
        ]) {
            assert_eq!(a["id"], id, "{a}");
            assert_eq!(a["error"]["kind"], "invalid_input", "{a}");
            assert_eq!(a["error"]["message"], said, "{a}");
        }
        let mut text_only = InProcess::new(
            SubjectInfo {
                estimates: false,
                ..SubjectInfo::new("c", "1")
            },
            |_, m| CompactAnswer::Messages(m.to_vec()),
            None,
        );
        let mut out = Vec::new();
        serve(
            &mut text_only,
            &b"{\"op\":\"estimate\",\"id\":1,\"messages\":[]}\n"[..],
            &mut out,
            1 << 20,
        )
        .unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("unknown op \\\"estimate\\\""));
    }

    /// Each line served after the others is answered as served alone.
    fn answered_as_alone(lines: &[Vec<u8>]) {
        let answers = |lines: &[Vec<u8>]| {
            let input: Vec<u8> = lines
                .iter()
                .flat_map(|l| l.iter().chain(b"\n"))
                .copied()
                .collect();
            let mut out = Vec::new();
            serve(&mut InProcess::reference(), &input[..], &mut out, 1 << 20).unwrap();
            String::from_utf8(out).unwrap()
        };
        let together = answers(lines);
        let together: Vec<&str> = together.lines().collect();
        assert_eq!(
            together.len(),
            lines.len(),
            "one answer a line: {together:?}"
        );
        for (n, line) in lines.iter().enumerate() {
            let alone = answers(std::slice::from_ref(line));
            assert_eq!(
                together[n],
                alone.trim_end(),
                "line {n}: {}",
                String::from_utf8_lossy(line)
            );
        }
    }

    fn line(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    /// A head read without a parser (the harness's spelling, with a config
    /// read lately) reads as a parser reads it; any other head, however
    /// close, is read by the parser.
    #[test]
    fn heads_read_without_a_parser_read_as_with_one() {
        let config: &[u8] =
            br#"{"contextWindow":300,"threshold":0.5,"keepRecent":1,"summaryMaxBytes":40}"#;
        let spaced: &[u8] =
            br#"{"contextWindow":300, "threshold":0.5,"keepRecent":1,"summaryMaxBytes":40}"#;
        let history: &[u8] = br#"[{"role":"user","content":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},{"role":"assistant","content":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"},{"role":"user","content":"ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"}]"#;
        let unreadable: &[u8] =
            br#"[{"role":"user","content":"x","meta":{"messages":[1]}},{"role":"bogus","content":"y"}]"#;
        // Its envelope has a `messages` key: a head cut there is no head.
        let inner_key: &[u8] =
            br#"{"contextWindow":400,"envelope":{"a":1,"messages":{"type":"string"}}}"#;
        let longer = line(&[
            &history[..history.len() - 1],
            br#",{"role":"assistant","content":"dd"}]"#,
        ]);
        let bad_utf8 = line(&[
            &history[..history.len() - 1],
            b",{\"role\":\"assistant\",\"content\":\"\xff\"}]",
        ]);
        let compact = |id: &[u8], config: &[u8], between: &[u8], msgs: &[u8]| {
            line(&[
                br#"{"op":"compact","id":"#,
                id,
                br#","config":"#,
                config,
                between,
                br#","messages":"#,
                msgs,
                b"}",
            ])
        };
        let lines = vec![
            compact(b"1", config, b"", history),
            line(&[
                br#"{"op":"estimate","id":2,"config":"#,
                config,
                br#","messages":"#,
                history,
                b"}",
            ]),
            compact(b"0", config, b"", &longer),
            compact(b"12345678901234567890123", config, b"", history),
            compact(b"01", config, b"", history),
            compact(b"-3", config, b"", history),
            compact(b"3", config, br#","x":1"#, history),
            compact(b"4", config, br#","id":7"#, history),
            compact(b"5", config, b" ", history),
            compact(b"6", spaced, b"", history),
            compact(b"7", config, b"", &bad_utf8),
            compact(b"8", &config[..config.len() - 1], b"", history),
            line(&[
                br#"{"op":"hello","id":9,"config":"#,
                config,
                br#","messages":"#,
                history,
                b"}",
            ]),
            line(&[
                br#"{"op": "compact","id":10,"config":"#,
                config,
                br#","messages":"#,
                history,
                b"}",
            ]),
            compact(b"11", config, b"", history),
            compact(b"12", br#"{"contextWindow":-5}"#, b"", history),
            compact(b"13", br#" {"contextWindow":400}"#, b"", history),
            compact(b"14", br#"{"contextWindow":400} "#, b"", history),
            compact(b"15", br#"{"contextWindow":400}"#, b"", history),
            compact(
                b"16",
                br#"{"contextWindow":400},"keepRecent":2"#,
                b"",
                history,
            ),
            compact(b"17", br#"{"contextWindow":400}"#, b"", history),
            compact(b"18", inner_key, b"", history),
            compact(b"19", inner_key, b"", history),
            line(&[
                br#"{"op":"compact","id":20,"config":"#,
                &inner_key[..inner_key.len() - 1],
                b"}}",
            ]),
            // Messages the one-pass reading refuses, with a `messages` key
            // inside them: read the general way, whatever follows.
            compact(b"21", config, b"", unreadable),
            compact(b"22", inner_key, b"", unreadable),
        ];
        answered_as_alone(&lines);
    }

    /// Requests as the harness sends a run's cases — each case's history
    /// growing, compacted and estimated, under its own config — and now and
    /// then one with a byte changed: each is answered, after the others,
    /// as when served alone, whatever serve remembers of the ones before.
    #[test]
    fn a_run_of_requests_is_answered_as_each_alone() {
        let gen = crate::generate::GenConfig::default();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut random = move |n: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as usize % n
        };
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for index in 0..10 {
            let case = crate::generate::case_from_seed(5, index, &gen);
            let config = serde_json::to_vec(&case.config.to_value()).unwrap();
            let n = case.messages.len();
            for len in (1..=n).step_by(n.div_ceil(6)).chain([n]) {
                let mut msgs = Vec::new();
                write_messages_json(&mut msgs, &case.messages[..len]);
                for op in ["compact", "estimate"] {
                    let id = format!("{{\"op\":\"{op}\",\"id\":{},\"config\":", lines.len());
                    let mut line = line(&[id.as_bytes(), &config, br#","messages":"#, &msgs, b"}"]);
                    if random(4) == 0 {
                        let at = random(line.len());
                        let bytes = b" {}[],:\"\\0a";
                        line[at] = bytes[random(bytes.len())];
                    }
                    lines.push(line);
                }
            }
        }
        assert!(lines.len() > 100, "{} lines", lines.len());
        answered_as_alone(&lines);
    }
}
