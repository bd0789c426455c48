//! `ctxgate serve`: the subject's side of the protocol, for any in-process
//! subject (the reference by default). Bad request lines get an
//! `invalid_input` answer, never a crash.

use std::io::{BufRead, Write};

use serde_json::Value;

use super::protocol::{compact_answer, error_answer, estimate_answer, hello_answer, take_messages};
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
    loop {
        let (ended, too_long) = read_line(&mut input, &mut line, max_line_bytes)?;
        let answer = if too_long {
            Some(error_answer(
                &Value::Null,
                "invalid_input",
                &format!("a request line over {max_line_bytes} bytes, the cap: skipped"),
            ))
        } else if line.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            Some(answer_line(subject, &line))
        };
        if let Some(answer) = answer {
            serde_json::to_writer(&mut output, &answer)?;
            output.write_all(b"\n")?;
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
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
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

fn answer_line(subject: &mut dyn Subject, line: &[u8]) -> Value {
    let request: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return error_answer(
                &Value::Null,
                "invalid_input",
                &format!("not a JSON request: {e}"),
            )
        }
    };
    let Some(obj) = request.as_object() else {
        return error_answer(
            &Value::Null,
            "invalid_input",
            "a request must be a JSON object",
        );
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    let op = obj.get("op").and_then(Value::as_str).unwrap_or("");
    if op == "hello" {
        return hello_answer(subject.info());
    }
    let config = match obj.get("config") {
        None => Config::default(),
        Some(c) => match Config::from_value(c.clone()) {
            Ok(c) => c,
            Err(e) => return error_answer(&id, "invalid_input", &e.to_string()),
        },
    };
    let format = subject.info().format;
    let msgs = match take_messages(obj, format) {
        Ok(m) => m,
        Err(p) => return error_answer(&id, "invalid_input", &p),
    };
    match op {
        "compact" => match subject.compact(&config, &msgs) {
            Ok(answer) => compact_answer(&id, &answer, format),
            Err(fault) => error_answer(&id, "internal", &fault.to_string()),
        },
        "estimate" if subject.info().estimates => match subject.estimate(&config, &msgs) {
            Ok(e) => estimate_answer(&id, &e),
            Err(fault) => error_answer(&id, "internal", &fault.to_string()),
        },
        other => error_answer(&id, "invalid_input", &format!("unknown op {other:?}")),
    }
}
