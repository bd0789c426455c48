//! An external subject: a program that speaks the protocol (SPEC §6) on
//! its stdin and stdout, run without a shell. One process lives across
//! cases; one that dies, hangs past the per-request timeout, prints a
//! malformed or oversized line, or answers with the wrong id is killed
//! (with its whole process group), reported as a fault, and restarted on
//! the next request. stderr is drained continuously into a bounded tail,
//! so a subject that floods it neither blocks nor eats memory.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::pipes::{Line, Pipes, Waiter};
use super::protocol::{
    hello_request, parse_compact_line, parse_estimate_answer, parse_hello, read_line_expecting,
    read_line_knowing, write_request_head, write_request_rest, ProtocolLine,
};
use super::reaper::{self, MARKER_VAR};
use super::written::{MessageJson, Written};
use super::{CompactAnswer, EstimateReply, Fault, FaultKind, Reply, Request, Subject, SubjectInfo};
use crate::config::Config;
use crate::model::engine_ser::written_alike;
use crate::model::Message;
use crate::model::WireFormat;

/// What a stray `print` on stdout needs to hear: said with every fault of
/// a line that is not the protocol's.
pub const STDOUT_ONLY_PROTOCOL: &str =
    "a subject must write only protocol lines to stdout; log to stderr";

/// Said of a subject that exited with status 0 before it wrote a line.
const NEVER_SERVED: &str = " before it wrote a line: does the program run the protocol loop (`serve(...)`, not only define the compactor) when started as --subject?";

/// The least time a subject has for its first hello (see `spawn`).
const FIRST_HELLO: Duration = Duration::from_secs(10);

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
}

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            timeout: Duration::from_secs(10),
            max_line_bytes: 64 << 20,
            stderr_tail_bytes: 8 << 10,
            trace: false,
        }
    }
}

/// The most of one protocol line `--trace` prints: a line with images is
/// megabytes of base64, so its middle is left out past this.
const TRACE_LINE_BYTES: usize = 4096;

/// Print one protocol line for `--trace`, made safe for a terminal
/// (`text::one_line`) and capped at [`TRACE_LINE_BYTES`] (its head and
/// tail kept, the bytes left out counted).
fn trace_line(arrow: &str, line: &[u8]) {
    use crate::model::text::{one_line, truncate_utf8};
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches('\n');
    let shown = if text.len() <= TRACE_LINE_BYTES {
        text.to_owned()
    } else {
        let head = truncate_utf8(text, TRACE_LINE_BYTES * 3 / 4);
        let mut tail_at = text.len() - TRACE_LINE_BYTES / 4;
        while !text.is_char_boundary(tail_at) {
            tail_at += 1;
        }
        let left_out = tail_at - head.len();
        format!(
            "{head} [… {left_out} bytes left out …] {}",
            &text[tail_at..]
        )
    };
    // A reader that went away is the caller's to see (its next line).
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout().lock(), "{arrow} {}", one_line(&shown));
}

/// How often a wait for an answer looks whether the subject has exited.
const EXIT_POLL: Duration = Duration::from_millis(50);

/// How long killing and reaping a subject may take.
const REAP_DEADLINE: Duration = Duration::from_secs(5);

struct Running {
    child: Child,
    /// `CTXGATE_SUBJECT=…`: what every descendant of this start inherits.
    marker: String,
    /// The id of the first request this process was sent.
    first_id: u64,
    /// Its stdin and stdout, driven without blocking (`pipes`).
    pipes: Pipes,
    stderr: Arc<Mutex<Tail>>,
}

/// The last bytes of a stream, how many there were in all, and whether
/// it has ended.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    total: u64,
    ended: bool,
}

/// How long a fault of a subject that exited waits for the rest of its
/// stderr (its last words, a traceback, are why it exited; a descendant
/// that keeps stderr open only costs this).
const STDERR_GRACE: Duration = Duration::from_millis(500);

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

    fn spawn(&mut self) -> Result<SubjectInfo, Fault> {
        self.kill();
        static STARTS: AtomicU64 = AtomicU64::new(0);
        let value = format!(
            "{}-{}",
            std::process::id(),
            STARTS.fetch_add(1, Ordering::Relaxed)
        );
        let mut cmd = Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..])
            .env(MARKER_VAR, &value)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        #[cfg(target_os = "linux")]
        // SAFETY: the closure runs in the child between fork and exec and
        // only calls prctl(2), which is async-signal-safe: the subject gets
        // SIGKILL if ctxgate dies first, so it never outlives ctxgate.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                Ok(())
            });
        }
        let mut child = reaper::spawn_live(cmd).map_err(|e| {
            Fault::new(
                FaultKind::Spawn,
                format!("cannot start {:?}: {e}", self.argv[0]),
            )
        })?;
        self.starts += 1;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let stdin = child.stdin.take().expect("piped");
        let pipes = Pipes::new(stdin, stdout, self.options.max_line_bytes).map_err(|e| {
            Fault::new(
                FaultKind::Spawn,
                format!("cannot set up the subject's pipes: {e}"),
            )
        });
        let tail = Arc::new(Mutex::new(Tail::default()));
        let keep = self.options.stderr_tail_bytes;
        let sink = Arc::clone(&tail);
        thread::spawn(move || drain(stderr, keep, sink));
        self.running = Some(Running {
            pipes: match pipes {
                Ok(p) => p,
                Err(f) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    reaper::unregister(child.id() as i32);
                    return Err(f);
                }
            },
            marker: format!("{MARKER_VAR}={value}"),
            first_id: self.next_id,
            child,
            stderr: tail,
        });
        // The first start is the subject's startup (an interpreter, its
        // imports, `npx`): its hello gets at least FIRST_HELLO. A restart's
        // hello gets the per-request timeout, as every answer does.
        let timeout = self.options.timeout;
        if self.starts == 1 {
            self.options.timeout = timeout.max(FIRST_HELLO);
        }
        let hello = self.exchange(&hello_request(), None);
        self.options.timeout = timeout;
        let hello = hello?;
        let info = parse_hello(&hello).map_err(|f| self.with_stderr(f));
        if info.is_err() {
            self.kill();
        }
        info
    }

    /// Kill the process group and every other descendant, and reap the
    /// child, each within a deadline.
    fn kill(&mut self) {
        if let Some(mut r) = self.running.take() {
            r.pipes.close();
            let pid = r.child.id() as i32;
            reaper::unregister(pid);
            let _ = r.child.kill();
            let until = Instant::now() + REAP_DEADLINE;
            while matches!(r.child.try_wait(), Ok(None)) && Instant::now() < until {
                thread::sleep(Duration::from_millis(2));
            }
            let stray = reaper::kill_descendants(pid, &r.marker, REAP_DEADLINE);
            if !stray.is_empty() {
                eprintln!(
                    "ctxgate: {} process(es) of the subject would not die within {} s: {stray:?}",
                    stray.len(),
                    REAP_DEADLINE.as_secs()
                );
            }
        }
    }

    /// Wait until stderr has ended, or has been quiet a while, or `until`:
    /// the thread that drains it may not have read a subject's last words
    /// when its exit is seen. (A descendant that keeps stderr open costs
    /// the quiet spell, 20 ms, not the whole grace.)
    fn await_stderr_end(&self, until: Instant) {
        let Some(r) = &self.running else { return };
        let read = || {
            let t = r.stderr.lock().unwrap_or_else(|e| e.into_inner());
            (t.ended, t.total)
        };
        let (mut ended, mut total) = read();
        let mut quiet = 0;
        while !ended && quiet < 10 && Instant::now() < until {
            thread::sleep(Duration::from_millis(2));
            let (now_ended, now_total) = read();
            quiet = if now_total == total { quiet + 1 } else { 0 };
            (ended, total) = (now_ended, now_total);
        }
    }

    fn stderr_tail(&self) -> String {
        match &self.running {
            Some(r) => {
                let t = r.stderr.lock().unwrap_or_else(|e| e.into_inner());
                let mut s = crate::model::text::lines(&String::from_utf8_lossy(&t.bytes));
                if t.total > t.bytes.len() as u64 {
                    s = format!(
                        "[… {} earlier bytes of stderr not kept]\n{s}",
                        t.total - t.bytes.len() as u64
                    );
                }
                s
            }
            None => String::new(),
        }
    }

    fn with_stderr(&self, mut f: Fault) -> Fault {
        if f.kind == FaultKind::Crash {
            self.await_stderr_end(Instant::now() + STDERR_GRACE);
        }
        f.stderr = self.stderr_tail();
        f
    }

    /// Send one request line and read one answer line. Any fault kills the
    /// process (it is restarted on the next request), but a `protocol` or
    /// `unknown-error-kind` fault, which leaves it in step.
    fn exchange(&mut self, req: &Value, id: Option<u64>) -> Result<Value, Fault> {
        let mut line = serde_json::to_vec(req).expect("a request serialises");
        line.push(b'\n');
        let result = self.check_nothing_waiting().and_then(|()| {
            self.send_line(&[&line]);
            self.receive(id, None)
        });
        result
            .map(|line| Value::Object(line.fields))
            .map_err(|f| self.fail(f, false))
    }

    /// Attach stderr and, unless the process is still in step (a
    /// `protocol` or `unknown-error-kind` fault with nothing else in
    /// flight), kill it.
    fn fail(&mut self, f: Fault, in_flight: bool) -> Fault {
        let f = self.with_stderr(f);
        if in_flight || (f.kind != FaultKind::UnknownErrorKind && f.kind != FaultKind::Protocol) {
            self.kill();
        }
        f
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
    fn send_line(&mut self, parts: &[&[u8]]) {
        self.queue_line(parts);
        if let Some(r) = self.running.as_mut() {
            r.pipes.flush();
        }
    }

    /// [`send_line`](Self::send_line) but for the write, which the batch's
    /// last line does.
    fn queue_line(&mut self, parts: &[&[u8]]) {
        if self.options.trace {
            trace_line("→", &parts.concat());
        }
        let len: usize = parts.iter().map(|p| p.len()).sum();
        self.traffic.requests += 1;
        self.traffic.bytes_sent += len as u64;
        if let Some(r) = self.running.as_mut() {
            r.pipes.queue(parts);
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
            Line::Closed => Err(closed(r, timeout, self.traffic.bytes_received == 0)),
            Line::Pending => {
                if let Ok(Some(status)) = r.child.try_wait() {
                    let detail = match status.success() && self.traffic.bytes_received == 0 {
                        true => format!("the subject exited ({status}){NEVER_SERVED}"),
                        false => format!("the subject exited ({status}) without answering"),
                    };
                    return Err(Fault::new(FaultKind::Crash, detail));
                }
                if Instant::now() >= until {
                    return Err(Fault::new(
                        FaultKind::Timeout,
                        format!("no answer within {:.1} s", timeout.as_secs_f64()),
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
                        &head,
                        b",\"config\":",
                        config,
                        b",\"messages\":",
                        messages,
                        b"}\n",
                    ]),
                    Rest::Line(rest) => self.queue_line(&[&head, rest]),
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

/// A batch's request lines, written before the subject is held (`Lane`):
/// each but its opening `{"op":…,"id":N`, which `submit` writes once the
/// id is known.
pub(crate) struct Prepared {
    format: WireFormat,
    lines: Vec<Rest>,
    jsons: Vec<Option<Arc<Vec<u8>>>>,
}

/// A request line but its head (`{"op":…,"id":…`).
enum Rest {
    /// `,"config":` config `,"messages":` messages `}` — written as these
    /// parts, not copied into one line first.
    Engine {
        config: Arc<Vec<u8>>,
        messages: Arc<Vec<u8>>,
    },
    /// The whole rest, in another format.
    Line(Vec<u8>),
}

impl Prepared {
    /// `written` keeps what was written lately: the batches of a case
    /// share a config and most of their messages.
    pub(crate) fn new(
        format: WireFormat,
        requests: &[Request<'_>],
        written: &mut Written,
    ) -> Prepared {
        if format == WireFormat::Engine {
            let jsons = shared_messages_json(requests, &mut written.messages);
            let lines = requests
                .iter()
                .zip(&jsons)
                .map(|(r, json)| Rest::Engine {
                    config: written.config(r.config()),
                    messages: Arc::clone(json.as_ref().expect("engine JSON is written")),
                })
                .collect();
            return Prepared {
                format,
                lines,
                jsons,
            };
        }
        let lines = requests
            .iter()
            .map(|r| {
                let (Request::Compact(config, msgs) | Request::Estimate(config, msgs)) = *r;
                let cfg = written.config(config);
                let mut rest = Vec::with_capacity(cfg.len() + 256);
                write_request_rest(&mut rest, &cfg, msgs, format, None);
                Rest::Line(rest)
            })
            .collect();
        Prepared {
            format,
            lines,
            jsons: vec![None; requests.len()],
        }
    }
}

/// An answer line as it came, not yet read.
pub(crate) struct Answer {
    line: Vec<u8>,
    /// The first id the process that wrote it was sent.
    first_id: u64,
}

impl Answer {
    /// Read it as the answer to request `id` (the hello has none); for a
    /// compact answer, `expected` is the history's JSON, which an answer
    /// that hands it back unchanged repeats (not parsed again).
    fn read(
        self,
        format: WireFormat,
        id: Option<u64>,
        expected: Option<&[u8]>,
        known: Option<&MessageJson>,
    ) -> Result<ProtocolLine, Fault> {
        let answer = self.line;
        let line = match known {
            Some(k) => read_line_knowing(&answer, format, expected, &|json| k.read(json)),
            None => read_line_expecting(&answer, format, expected),
        };
        let line = line.map_err(|e| {
            let shown = String::from_utf8_lossy(&answer[..answer.len().min(200)]).into_owned();
            Fault::new(
                FaultKind::MalformedLine,
                format!("not a JSON object line ({e}): {shown:?}; {STDOUT_ONLY_PROTOCOL}"),
            )
        })?;
        let Some(id) = id else { return Ok(line) };
        match line.fields.get("id").and_then(Value::as_u64) {
            Some(got) if got == id => Ok(line),
            // An answer to a request already answered: a line nobody asked
            // for, which arrived after the next request was sent.
            Some(got) if got < id && got >= self.first_id => Err(Fault::new(
                FaultKind::UnsolicitedLine,
                format!("answered request {got} a second time, when request {id} was asked"),
            )),
            _ => Err(Fault::new(
                FaultKind::WrongId,
                format!(
                    "answered id {} to request {id}",
                    crate::model::one_line(
                        &line.fields.get("id").unwrap_or(&Value::Null).to_string()
                    )
                ),
            )),
        }
    }

    /// Read it as the reply to `req`, the `n`-th request of `sent`; the
    /// messages `written` wrote are not read again.
    pub(crate) fn reply(
        self,
        format: WireFormat,
        req: &Request<'_>,
        sent: &Sent,
        n: usize,
        written: &Written,
    ) -> Result<Reply, Fault> {
        let expected = match req {
            Request::Compact(..) => sent.jsons[n].as_deref().map(Vec::as_slice),
            Request::Estimate(..) => None,
        };
        let known = matches!(req, Request::Compact(..)).then_some(&written.messages);
        let line = self.read(format, Some(sent.ids[n]), expected, known)?;
        match req {
            Request::Compact(_, msgs) if line.echoed => {
                Ok(Reply::Compact(CompactAnswer::Messages(msgs.to_vec())))
            }
            Request::Compact(..) => parse_compact_line(line, format).map(Reply::Compact),
            Request::Estimate(..) => parse_estimate_answer(&line.fields).map(Reply::Estimate),
        }
    }
}

/// Requests sent, awaiting their answers: their ids, the history JSON each
/// was written with, and which start of the process they went to.
pub(crate) struct Sent {
    ids: Vec<u64>,
    jsons: Vec<Option<Arc<Vec<u8>>>>,
    start: u32,
}

impl Subject for ProcessSubject {
    fn info(&self) -> &SubjectInfo {
        &self.info
    }

    fn compact(&mut self, config: &Config, msgs: &[Message]) -> Result<CompactAnswer, Fault> {
        super::compact_by_batch(self, config, msgs)
    }

    fn estimate(&mut self, config: &Config, msgs: &[Message]) -> Result<EstimateReply, Fault> {
        super::estimate_by_batch(self, config, msgs)
    }

    fn batch(&mut self, requests: &[Request<'_>]) -> Result<Vec<Reply>, Fault> {
        self.pipelined(requests)
    }

    fn traffic(&self) -> Option<super::Traffic> {
        Some(self.traffic)
    }

    fn sees_spellings(&self) -> bool {
        self.info.format != WireFormat::Engine
    }
}

pub static SUBMITS: AtomicU64 = AtomicU64::new(0);
impl Drop for ProcessSubject {
    fn drop(&mut self) {
        if std::env::var_os("CTXGATE_COUNT").is_some() {
            eprintln!("batches: {}", SUBMITS.load(Ordering::Relaxed));
        }
        self.kill();
    }
}

/// The engine JSON of each request's history, written once for requests
/// that share a history, and extended (not rewritten) for one that is an
/// earlier one's plus a few messages (the longer history of
/// `estimate-monotone`). A message written in an earlier batch is copied
/// from `cache`.
fn shared_messages_json<'a>(
    requests: &[Request<'a>],
    cache: &mut MessageJson,
) -> Vec<Option<Arc<Vec<u8>>>> {
    cache.make_room();
    // Each history's JSON, and where each of its messages ends in it.
    let mut out: Vec<(Arc<Vec<u8>>, Vec<usize>)> = Vec::with_capacity(requests.len());
    for (k, r) in requests.iter().enumerate() {
        let msgs = r.messages();
        let mut found = None;
        for (j, earlier) in requests[..k].iter().enumerate() {
            let e = earlier.messages();
            let (json, ends) = &out[j];
            if std::ptr::eq(e, msgs) {
                found = Some((Arc::clone(json), ends.clone()));
                break;
            }
            if !msgs.is_empty() && msgs.len() < e.len() && std::ptr::eq(msgs.as_ptr(), e.as_ptr()) {
                // The first messages of the same history (a ToolLoop's
                // first turn): a slice of its JSON.
                let end = ends[msgs.len() - 1];
                let mut shorter = Vec::with_capacity(end + 1);
                shorter.extend_from_slice(&json[..end]);
                shorter.push(b']');
                found = Some((Arc::new(shorter), ends[..msgs.len()].to_vec()));
                break;
            }
            if !e.is_empty()
                && e.len() < msgs.len()
                && msgs.iter().zip(e).all(|(a, b)| written_alike(a, b))
            {
                let mut longer = json[..json.len() - 1].to_vec();
                let mut ends = ends.clone();
                cache.write_all(&mut longer, &msgs[e.len()..], false, &mut ends);
                longer.push(b']');
                found = Some((Arc::new(longer), ends));
                break;
            }
        }
        out.push(found.unwrap_or_else(|| {
            let mut json = vec![b'['];
            let mut ends = Vec::with_capacity(msgs.len());
            cache.write_all(&mut json, msgs, true, &mut ends);
            json.push(b']');
            (Arc::new(json), ends)
        }));
    }
    out.into_iter().map(|(json, _)| Some(json)).collect()
}

/// How long a subject whose stdout closed has to exit, for its fault to
/// be called a crash (with its exit status) rather than a closed stdout: a
/// process that is ending ends within it (an interpreter's teardown
/// included), and one that lives on is reported then, not a whole request
/// timeout later.
const EXIT_GRACE: Duration = Duration::from_millis(1000);

/// The subject's stdout closed: a crash if the process exits within
/// [`EXIT_GRACE`] (or the timeout, if shorter), else a process that lives
/// on without a way to answer.
/// `silent`: the subject never wrote a line, so an exit with status 0 is
/// most likely a program that does not run the protocol loop at all.
fn closed(r: &mut Running, timeout: Duration, silent: bool) -> Fault {
    let timeout = timeout.min(EXIT_GRACE);
    let until = Instant::now() + timeout;
    loop {
        match r.child.try_wait() {
            Ok(Some(status)) => {
                let mut detail = format!("the subject exited ({status})");
                if status.success() && silent {
                    detail.push_str(NEVER_SERVED);
                }
                return Fault::new(FaultKind::Crash, detail);
            }
            Ok(None) if Instant::now() < until => thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                return Fault::new(
                    FaultKind::ClosedStdout,
                    format!(
                        "the subject closed its stdout but was still running {:.1} s later",
                        timeout.as_secs_f64()
                    ),
                )
            }
            Err(e) => return Fault::new(FaultKind::Crash, format!("the subject is gone: {e}")),
        }
    }
}

/// Keep the last `keep` bytes of stderr, reading until it closes.
fn drain(mut stderr: impl Read, keep: usize, tail: Arc<Mutex<Tail>>) {
    let mut buf = [0u8; 8192];
    loop {
        let n = match stderr.read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            read => read.unwrap_or(0),
        };
        let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
        if n == 0 {
            t.ended = true;
            return;
        }
        t.total += n as u64;
        t.bytes.extend_from_slice(&buf[..n]);
        if t.bytes.len() > keep {
            let cut = t.bytes.len() - keep;
            t.bytes.drain(..cut);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subject::protocol::write_messages_json;

    /// A batch's histories that share messages (the same, one message
    /// more, the first messages of the same history) are written from one
    /// another, byte for byte as each written alone.
    #[test]
    fn shared_histories_are_written_as_each_alone() {
        let gen = crate::generate::GenConfig::default();
        for index in 0..200 {
            let case = crate::generate::case_from_seed(3, index, &gen);
            let input = &case.messages;
            let mut longer = input.clone();
            longer.push(Message::tool("x", "approved"));
            let cut = input.len() / 2;
            let prefix = &input[..cut];
            let requests = [
                Request::Compact(&case.config, input),
                Request::Estimate(&case.config, input),
                Request::Estimate(&case.config, &longer),
                Request::Compact(&case.config, prefix),
            ];
            let jsons = shared_messages_json(&requests, &mut MessageJson::default());
            for (r, json) in requests.iter().zip(&jsons) {
                let mut alone = Vec::new();
                write_messages_json(&mut alone, r.messages());
                assert!(**json.as_ref().unwrap() == alone, "case {index}");
            }
        }
    }

    /// Batch after batch through one cache, as a lane sends a run's
    /// ToolLoops (each turn a copy of an earlier history, messages dropped,
    /// one rewritten, the case's next ones appended; many cases, past the
    /// cache's bound): every history byte for byte as written alone.
    #[test]
    fn histories_written_from_earlier_batches_are_written_as_alone() {
        let gen = crate::generate::GenConfig::default();
        let mut cache = MessageJson::default();
        for index in 0..600 {
            let case = crate::generate::case_from_seed(9, index, &gen);
            let input = &case.messages;
            let mut history: Vec<Message> = input[..input.len().min(3)].to_vec();
            for (turn, m) in input.iter().enumerate().skip(3) {
                history.push(m.clone());
                if turn % 4 == 0 && history.len() > 4 {
                    history.remove(1);
                    history[1] = Message::assistant(format!("summary of turn {turn}"));
                }
                let sent = history.clone();
                let requests = [Request::Compact(&case.config, &sent)];
                let jsons = shared_messages_json(&requests, &mut cache);
                let mut alone = Vec::new();
                write_messages_json(&mut alone, &sent);
                assert!(
                    **jsons[0].as_ref().unwrap() == alone,
                    "case {index}, turn {turn}"
                );
            }
        }
    }
}
