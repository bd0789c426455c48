//! `ctxgate serve`: the subject's side of the protocol, for any in-process
//! subject (the reference by default). Bad request lines get an
//! `invalid_input` answer, never a crash.

use std::io::{BufRead, Write};

use serde_json::Value;

use super::protocol::{
    error_answer, estimate_answer, hello_answer,
    read_line_expecting as read_protocol_line_expecting, take_messages_owned, write_compact_answer,
    ProtocolLine,
};
use super::Subject;
use crate::config::Config;
use crate::model::{Message, WireFormat};
use crate::subject::CompactAnswer;

/// Answer requests from `input` on `output` until `input` closes. A
/// request line longer than `max_line_bytes` is not kept in memory: it is
/// answered `invalid_input` (with `"id": null`) and skipped to its end.
pub fn serve(
    subject: &mut dyn Subject,
    mut input: impl BufRead,
    mut output: impl Write,
    max_line_bytes: usize,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut answer = Vec::new();
    let mut last = LastHistory::default();
    loop {
        let (ended, too_long) = read_line(&mut input, &mut line, max_line_bytes)?;
        answer.clear();
        if too_long {
            let msg = format!("a request line over {max_line_bytes} bytes, the cap: skipped");
            serde_json::to_writer(
                &mut answer,
                &error_answer(&Value::Null, "invalid_input", &msg),
            )?;
            answer.push(b'\n');
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            answer_line(subject, &line, &mut answer, &mut last);
        }
        if !answer.is_empty() {
            output.write_all(&answer)?;
            output.flush()?;
        }
        if ended {
            return Ok(());
        }
    }
}

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

/// The last request's history, as JSON and as messages: the requests of one
/// case (compact, compact again, estimate) carry the same one, which is
/// then read once.
#[derive(Default)]
struct LastHistory {
    json: Vec<u8>,
    messages: Vec<Message>,
}

/// A request whose `messages` are the last history's JSON with messages
/// appended: `…"messages":` + `[A` + `,X…]` + `}` where `[A]` is `last`.
/// Its other fields, and the appended messages, read alone.
fn extended(line: &[u8], last: &[u8]) -> Option<(serde_json::Map<String, Value>, Vec<Message>)> {
    const KEY: &[u8] = b"\"messages\":";
    let open = &last[..last.len().checked_sub(1)?]; // `[A` without its `]`
    if open.len() < 2 {
        return None; // `[]`: nothing to extend
    }
    let at = memchr::memmem::rfind(line, KEY)?;
    let rest = &line[at + KEY.len()..];
    let tail = rest.strip_prefix(open)?.strip_prefix(b",")?;
    let tail = tail.strip_suffix(b"}")?;
    // `X…]` as an array of its own.
    let mut more_json = Vec::with_capacity(tail.len() + 1);
    more_json.push(b'[');
    more_json.extend_from_slice(tail);
    let text = std::str::from_utf8(&more_json).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let more =
        serde::de::DeserializeSeed::deserialize(crate::model::engine_de::MessagesSeed, &mut de)
            .ok()?;
    de.end().ok()?;
    let mut head = line[..at + KEY.len()].to_vec();
    head.extend_from_slice(b"null}");
    let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(&head) else {
        return None;
    };
    if fields.shift_remove("messages") != Some(Value::Null) {
        return None;
    }
    Some((fields, more))
}

/// Answer one request line into `out` (one line, with its `\n`).
fn answer_line(subject: &mut dyn Subject, line: &[u8], out: &mut Vec<u8>, last: &mut LastHistory) {
    let value = |out: &mut Vec<u8>, v: &Value| {
        serde_json::to_writer(&mut *out, v).expect("writes to a Vec");
        out.push(b'\n');
    };
    let format = subject.info().format;
    let expected = (!last.json.is_empty()).then_some(last.json.as_slice());
    // The longer history of estimate-monotone: the last one and a message
    // more, of which only the new message is read.
    let extension = match expected {
        Some(json) if format == WireFormat::Engine => extended(line, json),
        _ => None,
    };
    let (request, more) = match extension {
        Some((fields, more)) => (
            ProtocolLine {
                fields,
                messages: None,
                echoed: true,
                messages_json: None,
            },
            more,
        ),
        None => match read_protocol_line_expecting(line, format, expected) {
            Ok(r) => (r, Vec::new()),
            Err(e) => {
                let msg = format!("not a JSON request object: {e}");
                return value(out, &error_answer(&Value::Null, "invalid_input", &msg));
            }
        },
    };
    let mut obj = request.fields;
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    let op = obj
        .get("op")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if op == "hello" {
        return value(out, &hello_answer(subject.info()));
    }
    let config = match obj.get("config") {
        None => Config::default(),
        Some(c) => match Config::from_value_ref(c) {
            Ok(c) => c,
            Err(e) => return value(out, &error_answer(&id, "invalid_input", &e.to_string())),
        },
    };
    let msgs = match request.messages {
        _ if request.echoed => {
            let mut m = last.messages.clone();
            m.extend(more);
            m
        }
        Some(m) => {
            if let Some(json) = request.messages_json {
                *last = LastHistory {
                    json,
                    messages: m.clone(),
                };
            }
            m
        }
        None => match take_messages_owned(&mut obj, format) {
            Ok(m) => m,
            Err(p) => return value(out, &error_answer(&id, "invalid_input", &p)),
        },
    };
    match op.as_str() {
        "compact" => match subject.compact(&config, &msgs) {
            // The history handed back as it came: its JSON is already at hand.
            Ok(CompactAnswer::Messages(o))
                if format == WireFormat::Engine && !last.json.is_empty() && o == last.messages =>
            {
                out.extend_from_slice(b"{\"id\":");
                serde_json::to_writer(&mut *out, &id).expect("writes to a Vec");
                out.extend_from_slice(b",\"messages\":");
                out.extend_from_slice(&last.json);
                out.extend_from_slice(b"}\n");
            }
            Ok(answer) => write_compact_answer(out, &id, &answer, format),
            Err(fault) => value(out, &error_answer(&id, "internal", &fault.to_string())),
        },
        "estimate" if subject.info().estimates => match subject.estimate(&config, &msgs) {
            Ok(e) => value(out, &estimate_answer(&id, &e)),
            Err(fault) => value(out, &error_answer(&id, "internal", &fault.to_string())),
        },
        other => value(
            out,
            &error_answer(&id, "invalid_input", &format!("unknown op {other:?}")),
        ),
    }
}
