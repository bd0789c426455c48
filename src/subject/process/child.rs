//! The subject's process: started with its own process group (and, on
//! Linux, a death signal), its stderr drained into a bounded tail, killed
//! with every descendant, and its end told apart (a crash, a closed
//! stdout).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::{ProcessSubject, NEVER_SERVED};
use crate::subject::pipes::Pipes;
use crate::subject::protocol::{hello_request, parse_hello};
use crate::subject::reaper::{self, MARKER_VAR};
use crate::subject::{Fault, FaultKind, SubjectInfo};

/// The least time a subject has for its first hello (see `spawn`).
const FIRST_HELLO: Duration = Duration::from_secs(10);

/// How long killing and reaping a subject may take.
const REAP_DEADLINE: Duration = Duration::from_secs(5);

/// How long a subject that outlived its exit grace has, once its process
/// group is sent SIGTERM, before it is killed (SIGKILL).
pub(super) const TERM_GRACE: Duration = Duration::from_secs(1);

/// A started process, its pipes and its stderr's tail.
pub(super) struct Running {
    pub(super) child: Child,
    /// `CTXGATE_SUBJECT=…`: what every descendant of this start inherits.
    marker: String,
    /// The id of the first request this process was sent.
    pub(super) first_id: u64,
    /// Its stdin and stdout, driven without blocking (`pipes`).
    pub(super) pipes: Pipes,
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

impl ProcessSubject {
    pub(super) fn spawn(&mut self) -> Result<SubjectInfo, Fault> {
        self.kill();
        static STARTS: AtomicU64 = AtomicU64::new(0);
        let value = reaper::marker_value("", STARTS.fetch_add(1, Ordering::Relaxed));
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

    /// End the process as a run ends (SPEC §6: a subject exits when its
    /// stdin closes): close its stdin and give it `exit_grace` to exit by
    /// itself — its exit hooks run, and a `time`, a profiler or a coverage
    /// tool around it writes what it measured; if it is still there, send
    /// its process group SIGTERM and give it [`TERM_GRACE`] more; then
    /// [`kill`](Self::kill) whatever of it is left, descendants included.
    /// A subject that ignores both is gone `exit_grace` + 1 s later. (A
    /// fault's subject is killed at once: it is hung or out of step.)
    pub(super) fn end(&mut self) {
        let grace = self.options.exit_grace;
        if let Some(r) = self.running.as_mut() {
            r.pipes.close();
            if !reaper::exits_within(&mut r.child, grace) {
                reaper::terminate(&mut r.child, TERM_GRACE);
            }
        }
        self.kill();
    }

    /// Kill the process group and every other descendant, and reap the
    /// child, each within a deadline.
    pub(super) fn kill(&mut self) {
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

    pub(super) fn with_stderr(&self, mut f: Fault) -> Fault {
        if f.kind == FaultKind::Crash {
            self.await_stderr_end(Instant::now() + STDERR_GRACE);
        }
        f.stderr = self.stderr_tail();
        f
    }
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
pub(super) fn closed(r: &mut Running, timeout: Duration, silent: bool) -> Fault {
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
