//! An external subject: a program that speaks the protocol (SPEC §6) on
//! its stdin and stdout, run without a shell. One process lives across
//! cases; one that dies, hangs past the per-request timeout, prints a
//! malformed or oversized line, or answers with the wrong id is killed
//! (with its whole process group), reported as a fault, and restarted on
//! the next request. stderr is drained continuously into a bounded tail,
//! so a subject that floods it neither blocks nor eats memory.
//!
//! `child` starts the process, kills it and tells how it ended; `stderr`
//! drains its stderr, and gives a fault all the subject wrote there before
//! it; `lines` writes a batch's request lines and reads the answers.

mod child;
mod lines;
mod stderr;

pub(crate) use lines::{Answer, Exchange, Prepared, ReadBy, Sent};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::pipes::{Line, Piece, Waiter};
use super::protocol::{write_request_head, ProtocolLine};
use super::written::Written;
use super::{Fault, FaultKind, Reply, Request, Subject, SubjectInfo};
use child::{closed, Running};
use lines::Rest;

/// What a stray `print` on stdout needs to hear: said with every fault of
/// a line that is not the protocol's.
pub const STDOUT_ONLY_PROTOCOL: &str =
    "a subject must write only protocol lines to stdout; log to stderr";

/// Said of a subject that exited with status 0 before it wrote a line.
const NEVER_SERVED: &str = " before it wrote a line: does the program run the protocol loop (`serve(...)`, not only define the compactor) when started as --subject?";
/// Limits for an external subject.
#[derive(Debug, Clone, Copy)]
pub struct ProcessOptions {
    /// How long one request may take.
    pub timeout: Duration,
    /// The longest answer line accepted, in bytes.
    pub max_line_bytes: usize,
    /// How much of stderr is kept (the last bytes).
    pub stderr_tail_bytes: usize,
    /// Print every line sent and received on stdout (`replay --trace`),
    /// `→ ` before a request and `← ` before an answer.
    pub trace: bool,
    /// How long a subject has to exit by itself once its stdin is closed
    /// at the end of a run, before it is sent SIGTERM (and SIGKILL 1 s
    /// after that): `--exit-grace`, default 2 s.
    pub exit_grace: Duration,
}

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            timeout: Duration::from_secs(10),
            max_line_bytes: 64 << 20,
            stderr_tail_bytes: 8 << 10,
            trace: false,
            exit_grace: DEFAULT_EXIT_GRACE,
        }
    }
}

/// How long a subject has to exit once its stdin closes at the end of a
/// run, by default (`ProcessOptions::exit_grace`).
pub const DEFAULT_EXIT_GRACE: Duration = Duration::from_secs(2);

/// The most of one protocol line `--trace` prints: a line with images is
/// megabytes of base64, so its middle is left out past this.
const TRACE_LINE_BYTES: usize = 4096;

/// Print one protocol line for `--trace`, made safe for a terminal
/// (`text::one_line`) and capped at [`TRACE_LINE_BYTES`] (its head and
/// tail kept, the bytes left out counted).
fn trace_line(arrow: &str, line: &[u8]) {
    use crate::model::text::{cut_middle, one_line};
    let text = String::from_utf8_lossy(line);
    let shown = cut_middle(text.trim_end_matches('\n'), TRACE_LINE_BYTES);
    // A reader that went away is the caller's to see (its next line).
    use std::io::Write as _;
    let line = format!("{arrow} {}\n", one_line(&shown));
    let line = crate::model::text::for_log(&line);
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
}

/// What a fault says of a line the subject began and never ended with a
/// `\n` (nothing when there is none): how many bytes, and how they begin,
/// made safe and short — an answer printed without its line break (a
/// `print(…, end="")`, a `write` with no `\n`) waits for ever otherwise.
fn unended(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(1024)]);
    let begins = crate::model::text::collapse(&text, crate::model::text::EXCERPT_CHARS);
    format!(
        "; it wrote {} byte(s) of a line it never ended with \\n (each answer must end with a line break): {begins:?}",
        bytes.len()
    )
}

/// How often a wait for an answer looks whether the subject has exited.
const EXIT_POLL: Duration = Duration::from_millis(50);
/// A subject behind a process boundary.
pub struct ProcessSubject {
    argv: Vec<String>,
    options: ProcessOptions,
    info: SubjectInfo,
    running: Option<Running>,
    next_id: u64,
    /// How many times the process was (re)started.
    pub starts: u32,
    traffic: super::Traffic,
    /// The last config written (`pipelined`).
    written: Written,
}

/// Which of the hello's fields that decide what a subject is sent and how
/// it is judged differ between `first` and `again` (its name and version
/// may differ: a build stamp, a pid).
fn judged_fields_changed(first: &SubjectInfo, again: &SubjectInfo) -> Option<String> {
    type Shown = fn(&SubjectInfo) -> String;
    let fields: [(&str, Shown); 7] = [
        ("format", |i| i.format.to_string()),
        ("invariants", |i| {
            format!("{:?}", i.invariants.map(|s| s.names()))
        }),
        ("estimate", |i| i.estimates.to_string()),
        ("numbers", |i| i.exact_numbers.to_string()),
        ("contentParts", |i| i.content_parts.to_string()),
        ("compactAt", |i| i.compact_at.to_string()),
        ("wireFormats", |i| format!("{:?}", i.wire_formats)),
    ];
    let changed: Vec<String> = fields
        .iter()
        .filter_map(|(name, shown)| {
            let (a, b) = (shown(first), shown(again));
            (a != b).then(|| format!("{name} {a} → {b}"))
        })
        .collect();
    (!changed.is_empty()).then(|| crate::model::one_line(&changed.join(", ")))
}

impl ProcessSubject {
    /// Start `argv` and exchange hellos.
    pub fn start(argv: Vec<String>, options: ProcessOptions) -> Result<Self, Fault> {
        if argv.is_empty() {
            return Err(Fault::new(FaultKind::Spawn, "no subject command given"));
        }
        let mut s = ProcessSubject {
            argv,
            options,
            info: SubjectInfo::new("", ""),
            running: None,
            next_id: 1,
            starts: 0,
            traffic: super::Traffic::default(),
            written: Written::default(),
        };
        s.info = s.spawn()?;
        Ok(s)
    }

    /// Split a command string into words as a POSIX shell would (quotes
    /// respected), without running a shell.
    pub fn split_command(cmd: &str) -> Result<Vec<String>, String> {
        shell_words::split(cmd)
            .map_err(|e| format!("cannot split the subject command {cmd:?}: {e}"))
    }

    /// Send one request line and read one answer line. Any fault kills the
    /// process (it is restarted on the next request), but a `protocol` or
    /// `unknown-error-kind` or `library-error` fault, which leaves it in
    /// step.
    fn exchange(&mut self, req: &Value, id: Option<u64>) -> Result<Value, Fault> {
        let mut line = serde_json::to_vec(req).expect("a request serialises");
        line.push(b'\n');
        let result = self.check_nothing_waiting().and_then(|()| {
            self.send_line(&[Piece::Bytes(&line)]);
            self.receive(id, None)
        });
        result
            .map(|line| Value::Object(line.fields))
            .map_err(|f| self.fail(f, false))
    }

    /// Attach stderr and, unless the process is still in step (a
    /// `protocol`, `unknown-error-kind` or `library-error` fault with
    /// nothing else in flight), kill it.
    fn fail(&mut self, f: Fault, in_flight: bool) -> Fault {
        let in_step = matches!(
            f.kind,
            FaultKind::UnknownErrorKind | FaultKind::LibraryError | FaultKind::Protocol
        );
        self.with_stderr(f, in_flight || !in_step)
    }

    /// A line waiting before a request is sent was never asked for.
    fn check_nothing_waiting(&mut self) -> Result<(), Fault> {
        let timeout = self.options.timeout;
        let r = self.running.as_mut().expect("running");
        match r.pipes.next_line(Duration::ZERO) {
            Line::Text(bytes) => {
                let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
                Err(Fault::new(
                    FaultKind::UnsolicitedLine,
                    format!("the subject printed a line before it was asked for one: {shown:?}; {STDOUT_ONLY_PROTOCOL}"),
                ))
            }
            Line::Oversized(n) => Err(Fault::new(
                FaultKind::OversizedLine,
                format!("a line passed {n} bytes, the cap (--max-line-bytes)"),
            )),
            Line::Closed => Err(closed(r, timeout, self.traffic.bytes_received == 0)),
            Line::Pending => Ok(()),
        }
    }

    /// Queue a request line for the subject's stdin (`Pipes::send`). A
    /// closed stdin shows up later as a closed stdout or a timeout.
    fn send_line(&mut self, parts: &[Piece<'_>]) {
        self.queue_line(parts);
        if let Some(r) = self.running.as_mut() {
            r.pipes.flush();
        }
    }

    /// [`send_line`](Self::send_line) but for the write, which the batch's
    /// last line does.
    fn queue_line(&mut self, parts: &[Piece<'_>]) {
        if self.options.trace {
            let line: Vec<u8> = (parts.iter())
                .flat_map(|p| match p {
                    Piece::Bytes(b) => b.iter(),
                    Piece::Shared(b) => b.iter(),
                })
                .copied()
                .collect();
            trace_line("→", &line);
        }
        self.traffic.requests += 1;
        if let Some(r) = self.running.as_mut() {
            self.traffic.bytes_sent += r.pipes.queue(parts) as u64;
        }
    }

    /// Wait for the answer to request `id` (the hello has none), within
    /// the timeout, and read it (its messages the fast way, in the engine
    /// format: `protocol::read_line`).
    fn receive(&mut self, id: Option<u64>, expected: Option<&[u8]>) -> Result<ProtocolLine, Fault> {
        let until = Instant::now() + self.options.timeout;
        let format = self.info.format;
        loop {
            if let Some(answer) = self.next_answer(until, true)? {
                return answer.read(format, id, expected, None);
            }
        }
    }

    /// One look for the next answer line, due by `until`: `None` while it
    /// has not come and there is time left. With `block`, waits for it a
    /// while (at most `EXIT_POLL`: a subject that exited while a
    /// descendant keeps its stdout open never shows an end of file, but
    /// its exit shows here); without, only takes what has arrived.
    pub(crate) fn next_answer(
        &mut self,
        until: Instant,
        block: bool,
    ) -> Result<Option<Answer>, Fault> {
        let timeout = self.options.timeout;
        let r = self.running.as_mut().expect("running");
        let wait = match block {
            true => until
                .saturating_duration_since(Instant::now())
                .min(EXIT_POLL),
            false => Duration::ZERO,
        };
        match r.pipes.next_line(wait) {
            Line::Text(line) => {
                if self.options.trace {
                    trace_line("←", &line);
                }
                self.traffic.bytes_received += line.len() as u64 + 1;
                Ok(Some(Answer {
                    line,
                    first_id: r.first_id,
                }))
            }
            Line::Oversized(n) => Err(Fault::new(
                FaultKind::OversizedLine,
                format!("an answer line passed {n} bytes, the cap (--max-line-bytes)"),
            )),
            Line::Closed => {
                let silent = self.traffic.bytes_received == 0 && r.pipes.unended().is_empty();
                let mut fault = closed(r, timeout, silent);
                fault.detail.push_str(&unended(r.pipes.unended()));
                Err(fault)
            }
            Line::Pending => {
                let silent = self.traffic.bytes_received == 0 && r.pipes.unended().is_empty();
                if let Ok(Some(status)) = r.child.try_wait() {
                    let detail = match status.success() && silent {
                        true => format!("the subject exited ({status}){NEVER_SERVED}"),
                        false => format!("the subject exited ({status}) without answering"),
                    };
                    let detail = detail + &unended(r.pipes.unended());
                    return Err(Fault::new(FaultKind::Crash, detail));
                }
                if Instant::now() >= until {
                    return Err(Fault::new(
                        FaultKind::Timeout,
                        format!(
                            "no answer within {:.1} s{}",
                            timeout.as_secs_f64(),
                            unended(r.pipes.unended())
                        ),
                    ));
                }
                Ok(None)
            }
        }
    }

    /// When an answer asked for now is due.
    pub(crate) fn due(&self) -> Instant {
        Instant::now() + self.options.timeout
    }

    fn ensure_running(&mut self) -> Result<(), Fault> {
        if self.running.is_none() {
            let info = self.spawn()?;
            // The run was set up, and is judged, by the first hello: a
            // restart that says another format or claims other invariants
            // would be sent and judged by rules it did not start with.
            if let Some(changed) = judged_fields_changed(&self.info, &info) {
                self.kill();
                return Err(Fault::new(
                    FaultKind::Protocol,
                    format!(
                        "hello: started again, the subject said another hello ({changed}); a subject must say the same hello every time it starts, the run being judged by its first"
                    ),
                ));
            }
            self.info = info;
        }
        Ok(())
    }

    /// Send `requests` one after the other, then read their answers in
    /// order: the subject is never left idle waiting for the harness.
    fn pipelined(&mut self, requests: &[Request<'_>]) -> Result<Vec<Reply>, Fault> {
        let prepared = Prepared::new(self.info.format, requests, &mut self.written);
        let sent = self.submit(requests, prepared, true)?;
        let format = self.info.format;
        let mut replies = Vec::with_capacity(requests.len());
        for (n, req) in requests.iter().enumerate() {
            let in_flight = n + 1 < requests.len();
            let until = self.due();
            let reply = loop {
                match self.next_answer(until, true) {
                    Ok(None) => continue,
                    Ok(Some(answer)) => break answer.reply(format, req, &sent, n, &self.written),
                    Err(f) => break Err(f),
                }
            };
            match reply {
                Ok(r) => replies.push(r),
                Err(f) => return Err(self.fail(f, in_flight)),
            }
        }
        Ok(replies)
    }

    /// Send `requests`, written beforehand as `prepared` (starting the
    /// process if it is not running); what reading their answers needs.
    /// With `idle`, nothing else is in flight, so a line already waiting
    /// was never asked for.
    pub(crate) fn submit(
        &mut self,
        requests: &[Request<'_>],
        mut prepared: Prepared,
        idle: bool,
    ) -> Result<Sent, Fault> {
        SUBMITS.fetch_add(1, Ordering::Relaxed);
        self.ensure_running()?;
        if idle {
            self.check_nothing_waiting()
                .map_err(|f| self.fail(f, false))?;
        }
        if prepared.format != self.info.format {
            // A restart that said another format in its hello.
            prepared = Prepared::new(self.info.format, requests, &mut self.written);
        }
        let mut head = Vec::with_capacity(32);
        let ids: Vec<u64> = requests
            .iter()
            .zip(&prepared.lines)
            .map(|(r, rest)| {
                let id = self.next_id;
                self.next_id += 1;
                let op = match r {
                    Request::Compact(..) => "compact",
                    Request::Estimate(..) => "estimate",
                };
                head.clear();
                write_request_head(&mut head, op, id);
                match rest {
                    Rest::Engine { config, messages } => self.queue_line(&[
                        Piece::Bytes(&head),
                        Piece::Bytes(b",\"config\":"),
                        Piece::Shared(config),
                        Piece::Bytes(b",\"messages\":"),
                        Piece::Shared(messages),
                        Piece::Bytes(b"}\n"),
                    ]),
                    Rest::Line(rest) => self.queue_line(&[Piece::Bytes(&head), Piece::Bytes(rest)]),
                }
                id
            })
            .collect();
        if let Some(r) = self.running.as_mut() {
            r.pipes.flush();
        }
        Ok(Sent {
            ids,
            jsons: prepared.jsons,
            start: self.starts,
        })
    }

    /// Attach stderr to the fault that met an answer and, unless the
    /// process is still in step, kill it (see `fail`).
    pub(crate) fn failed(&mut self, f: Fault, in_flight: bool) -> Fault {
        self.fail(f, in_flight)
    }

    /// A handle to wait for the subject's next answer bytes with while
    /// this subject is not held (`Lane`); none while requests wait for
    /// room in the pipe, which only a holder writes.
    pub(crate) fn waiter(&self) -> Option<Arc<Waiter>> {
        let r = self.running.as_ref()?;
        (!r.pipes.has_pending()).then(|| r.pipes.waiter())
    }

    /// Whether a process is running (a fault kills it; the next batch
    /// starts another).
    pub(crate) fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Whether the process that `sent` went to is still the one running.
    pub(crate) fn still_running(&self, sent: &Sent) -> bool {
        self.running.is_some() && self.starts == sent.start
    }
}
impl Subject for ProcessSubject {
    super::protocol_subject!(pipelined);

    fn traffic(&self) -> Option<super::Traffic> {
        Some(self.traffic)
    }
}

pub static SUBMITS: AtomicU64 = AtomicU64::new(0);
impl Drop for ProcessSubject {
    fn drop(&mut self) {
        if std::env::var_os("CTXGATE_COUNT").is_some() {
            eprintln!("batches: {}", SUBMITS.load(Ordering::Relaxed));
        }
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A restart may say another name or version (a build stamp, a pid),
    /// never another format or claim: the run was set up by the first.
    #[test]
    fn a_restart_may_change_its_name_not_what_it_is_judged_by() {
        let first = SubjectInfo::new("s", "1");
        assert_eq!(
            judged_fields_changed(&first, &SubjectInfo::new("s2", "2")),
            None
        );
        let mut again = first.clone();
        again.format = crate::model::WireFormat::Openai;
        again.estimates = false;
        let changed = judged_fields_changed(&first, &again).unwrap();
        assert!(changed.contains("format engine → openai"), "{changed}");
        assert!(changed.contains("estimate true → false"), "{changed}");
    }
}
