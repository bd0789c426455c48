//! `ctxgate serve`: the subject's side of the protocol, for any in-process
//! subject (the reference by default). Bad request lines get an
//! `invalid_input` answer, never a crash.

use std::io::{BufRead, Write};

use serde_json::Value;

use super::protocol::{compact_answer, error_answer, estimate_answer, hello_answer, take_messages};
use super::Subject;
use crate::config::Config;

/// Answer requests from `input` on `output` until `input` closes.
pub fn serve(
    subject: &mut dyn Subject,
    input: impl BufRead,
    mut output: impl Write,
) -> std::io::Result<()> {
    for line in input.split(b'\n') {
        let line = line?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let answer = answer_line(subject, &line);
        serde_json::to_writer(&mut output, &answer)?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
    Ok(())
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
