//! `ctxgate serve`: the subject's side of the protocol, for any in-process
//! subject (the reference by default). Bad request lines get an
//! `invalid_input` answer, never a crash.

use std::io::{BufRead, Write};

use serde_json::Value;

use super::protocol::{
    error_answer, estimate_answer, hello_answer, read_line as read_protocol_line,
    take_messages_owned, write_compact_answer,
};
use super::Subject;
use crate::config::Config;

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
            answer_line(subject, &line, &mut answer);
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

/// Answer one request line into `out` (one line, with its `\n`).
fn answer_line(subject: &mut dyn Subject, line: &[u8], out: &mut Vec<u8>) {
    let value = |out: &mut Vec<u8>, v: &Value| {
        serde_json::to_writer(&mut *out, v).expect("writes to a Vec");
        out.push(b'\n');
    };
    let format = subject.info().format;
    let request = match read_protocol_line(line, format) {
        Ok(r) => r,
        Err(e) => {
            let msg = format!("not a JSON request object: {e}");
            return value(out, &error_answer(&Value::Null, "invalid_input", &msg));
        }
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
        Some(m) => m,
        None => match take_messages_owned(&mut obj, format) {
            Ok(m) => m,
            Err(p) => return value(out, &error_answer(&id, "invalid_input", &p)),
        },
    };
    match op.as_str() {
        "compact" => match subject.compact(&config, &msgs) {
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
