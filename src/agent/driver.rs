//! The driven form of agent mode (`ctxgate agent --driven`): no process is
//! started a case; the program that started ctxgate runs the agent in its
//! own process — an SDK agent inside a pytest or vitest test — and is told
//! each case over ctxgate's stdout, one JSON line, and answers on its
//! stdin when the agent is done:
//!
//! ```text
//! ← {"case": {"index": 3, "url": "http://127.0.0.1:41234", "openaiBaseUrl": "http://127.0.0.1:41234/v1",
//!             "anthropicBaseUrl": "http://127.0.0.1:41234", "apiKey": "sk-ctxgate-dummy-key",
//!             "prompt": "Task: …", "promptFile": "/tmp/…/task.txt", "workspace": "/tmp/…/workspace",
//!             "deadlineSeconds": 120}}
//! → {"done": {"exitCode": 0, "output": "the agent's final answer"}}
//! → {"done": {"exitCode": 1, "error": "APIConnectionError: …"}}
//! ...
//! ← {"report": { …the JSON report… }}
//! ```
//!
//! Shrinking and confirming re-run cases, so a case index may come again:
//! the driver runs whatever it is sent, in order, one at a time. The
//! Python and JavaScript helpers (`ctxgate.agent`, `ctxgate/agent`) speak it.

use std::io::{BufRead, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::trace::Exit;

/// The driver's two streams: lines read off stdin by a thread of their
/// own (so a deadline can pass while it waits), and stdout.
pub struct Driver {
    lines: Mutex<Receiver<std::io::Result<String>>>,
    out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Driver")
    }
}

/// The most a `done` line may hold, in bytes.
const MAX_LINE: usize = 16 << 20;

impl Driver {
    /// A driver over this process's stdin and stdout.
    pub fn stdio() -> Driver {
        Driver::new(
            std::io::BufReader::new(std::io::stdin()),
            Box::new(std::io::stdout()),
        )
    }

    /// A driver over any reader and writer (tests).
    pub fn new(input: impl BufRead + Send + 'static, out: Box<dyn Write + Send>) -> Driver {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("ctxgate-driver".into())
            .spawn(move || {
                let mut input = input;
                loop {
                    let mut line = Vec::new();
                    let source: &mut _ = &mut input;
                    let read = std::io::Read::take(source, MAX_LINE as u64 + 1)
                        .read_until(b'\n', &mut line);
                    let end = matches!(read, Ok(0));
                    let item = read.map(|_| String::from_utf8_lossy(&line).into_owned());
                    if tx.send(item).is_err() || end {
                        return;
                    }
                }
            })
            .expect("a thread can be started");
        Driver {
            lines: Mutex::new(rx),
            out: Mutex::new(out),
        }
    }

    /// Write one line.
    pub fn send(&self, v: &Value) -> std::io::Result<()> {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        writeln!(out, "{v}")?;
        out.flush()
    }

    /// Tell the driver the case, then wait for its `done`: the agent's
    /// end, as a process's would be. Past `deadline` the case is marked
    /// timed out, but the driver is still waited for (its agent cannot be
    /// killed from here, and the next case must not overlap it).
    pub fn play(&self, case: Value, deadline: Duration) -> Exit {
        let started = Instant::now();
        let mut exit = Exit::default();
        if let Err(e) = self.send(&json!({"case": case})) {
            exit.spawn_error = Some(format!("cannot write to the driver: {e}"));
            return exit;
        }
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let wait = deadline
                .saturating_sub(started.elapsed())
                .max(Duration::from_millis(1));
            let line = match lines.recv_timeout(wait) {
                Ok(Ok(line)) => line,
                Ok(Err(e)) => {
                    exit.spawn_error = Some(format!("cannot read the driver's answer: {e}"));
                    break;
                }
                Err(RecvTimeoutError::Timeout) => {
                    exit.timed_out = true;
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    exit.spawn_error =
                        Some("the driver closed its end before the case was done".into());
                    break;
                }
            };
            if line.is_empty() {
                exit.spawn_error =
                    Some("the driver closed its end before the case was done".into());
                break;
            }
            if line.trim().is_empty() {
                continue;
            }
            match read_done(&line) {
                Ok((code, output, error)) => {
                    exit.code = Some(code);
                    exit.stdout_tail = output;
                    exit.stderr_tail = error;
                }
                Err(why) => exit.spawn_error = Some(why),
            }
            break;
        }
        exit.elapsed = started.elapsed();
        exit
    }
}

/// `{"done": {"exitCode": N, "output"?: S, "error"?: S}}`.
fn read_done(line: &str) -> Result<(i32, String, String), String> {
    let bad = |why: &str| {
        format!(
            "the driver answered {:?}: {why}; expected {{\"done\": {{\"exitCode\": 0, \"output\": \"…\"}}}}",
            crate::model::text::collapse(line, 120)
        )
    };
    let v: Value = serde_json::from_str(line.trim()).map_err(|e| bad(&e.to_string()))?;
    let done = v
        .get("done")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no `done` object"))?;
    let code = done
        .get("exitCode")
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok())
        .ok_or_else(|| {
            bad(&format!(
                "`exitCode` must be a whole number from {} to {}",
                i32::MIN,
                i32::MAX
            ))
        })?;
    let text = |k: &str| done.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    Ok((code, text("output"), text("error")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_is_sent_and_its_done_read() {
        let input = std::io::Cursor::new(
            b"\n{\"done\": {\"exitCode\": 0, \"output\": \"ok\"}}\n{\"done\": 3}\n".to_vec(),
        );
        let d = Driver::new(input, Box::new(Vec::new()));
        let exit = d.play(json!({"index": 0}), Duration::from_secs(5));
        assert_eq!((exit.code, exit.stdout_tail.as_str()), (Some(0), "ok"));
        let exit = d.play(json!({"index": 1}), Duration::from_secs(5));
        assert!(exit.spawn_error.unwrap().contains("no `done` object"));
        let exit = d.play(json!({"index": 2}), Duration::from_secs(5));
        assert!(exit.spawn_error.unwrap().contains("closed its end"));
    }
}
