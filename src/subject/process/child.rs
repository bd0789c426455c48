//! The subject's process: started with its own process group (and, on
//! Linux, a death signal), its stderr drained into a bounded tail
//! (`stderr`), killed with every descendant, and its end told apart (a
//! crash, a closed stdout).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::stderr::Stderr;
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
    stderr: Arc<Stderr>,
}

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
        let pipes = Pipes::new(stdin, stdout, self.options.max_line_bytes)
            .and_then(|p| Ok((p, Stderr::start(stderr, self.options.stderr_tail_bytes)?)))
            .map_err(|e| {
                Fault::new(
                    FaultKind::Spawn,
                    format!("cannot set up the subject's pipes: {e}"),
                )
            });
        let (pipes, stderr) = match pipes {
            Ok(p) => p,
            Err(f) => {
                let _ = child.kill();
                let _ = child.wait();
                reaper::unregister(child.id() as i32);
                return Err(f);
            }
        };
        self.running = Some(Running {
            pipes,
            marker: format!("{MARKER_VAR}={value}"),
            first_id: self.next_id,
            child,
            stderr,
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
        parse_hello(&hello).map_err(|f| self.with_stderr(f, true))
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

    /// Attach the tail of the subject's stderr to `f`, with everything
    /// the subject wrote there before the fault was seen (`Stderr::tail`).
    /// With `kill`, the process is killed first, descendants included:
    /// what any of them wrote until then, such as a traceback printed
    /// after the malformed line that is the fault, is then in the pipe,
    /// and in the fault too — taken without waiting for the pipe to end,
    /// which a descendant that escaped the kill may hold open for ever.
    pub(super) fn with_stderr(&mut self, mut f: Fault, kill: bool) -> Fault {
        let Some(stderr) = self.running.as_ref().map(|r| Arc::clone(&r.stderr)) else {
            return f;
        };
        if kill {
            self.kill();
        }
        f.stderr = stderr.tail();
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
