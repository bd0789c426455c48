//! Running the ctxgate binary from a test: its exit code, stdout, stderr
//! and wall time, killed (and the test failed) when it outlives a bound —
//! a hang is a failure to see, not a wait.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Out {
    /// The exit code; -1 when a signal ended the process.
    pub code: i32,
    /// stdout as text (invalid UTF-8 replaced); its bytes as written.
    pub stdout: String,
    pub stdout_bytes: Vec<u8>,
    pub stderr: String,
    pub seconds: f64,
    /// The process's peak resident set, in KiB (`getrusage`'s `ru_maxrss`
    /// of the process itself, from `wait4`).
    pub max_rss_kib: u64,
    /// The save folder [`save_aside`] gave the run, if it gave one: it
    /// lives as long as the run's output (a test may read a fixture named
    /// there), then goes.
    saved_aside: Option<TestDir>,
}

impl Out {
    /// stdout and stderr, for assertion messages.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// The run, which must have succeeded (the test fails, showing stderr).
    #[track_caller]
    pub fn ok(self) -> Out {
        assert_eq!(self.code, 0, "expected success; stderr: {}", self.stderr);
        self
    }

    /// Fails the test, showing stdout, unless stdout contains `s`.
    #[track_caller]
    pub fn stdout_has(&self, s: &str) {
        has("stdout", &self.stdout, s);
    }

    /// Fails the test, showing stderr, unless stderr contains `s`.
    #[track_caller]
    pub fn stderr_has(&self, s: &str) {
        has("stderr", &self.stderr, s);
    }

    /// stdout as one JSON document (the test fails, showing both streams,
    /// when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}); stderr: {}\nstdout: {}",
                self.stderr, self.stdout
            )
        })
    }
}

#[track_caller]
fn has(stream: &str, text: &str, s: &str) {
    assert!(text.contains(s), "{stream} lacks {s:?}:\n{text}");
}

/// `ctxgate ARGS`, killed after `limit` (the test fails: it hung).
pub fn ctxgate_within(args: &[&str], limit: Duration) -> Out {
    run_within(
        Command::new(env!("CARGO_BIN_EXE_ctxgate")).args(args),
        limit,
    )
}

/// `ctxgate ARGS`, killed after two minutes.
pub fn ctxgate(args: &[&str]) -> Out {
    ctxgate_within(args, Duration::from_secs(120))
}

/// What a command reads on stdin.
pub enum Stdin {
    Null,
    File(std::path::PathBuf),
    Bytes(Vec<u8>),
}

/// Where a test's `check` or `agent` run saves its failures' fixtures when
/// the test gave no `--save`: under the system's temp dir, a folder of each
/// run whose name starts with this path's (`ctxgate-test-PID-unsaved-N`),
/// removed with the run's [`Out`]. Never the default `./ctxgate-failures`,
/// which, run from the checkout, is the user's folder.
pub fn unsaved_fixtures_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ctxgate-test-{}-unsaved", std::process::id()))
}

/// Gives a run of the ctxgate binary that would save fixtures in the
/// checkout a `--save` under the temp dir instead: `check` or `agent` (not
/// an `agent` subcommand such as `agent replay`, which saves nothing),
/// with no `--save` of its own, run from the checkout (a test that sets
/// another working folder chose where its fixtures go). A full `cargo
/// test` left a dozen fixtures in `./ctxgate-failures` before this. The
/// folder's guard, to be kept until the run has exited.
fn save_aside(cmd: &mut Command) -> Option<TestDir> {
    let program = std::path::Path::new(cmd.get_program());
    if program.file_name() != Some(std::ffi::OsStr::new("ctxgate")) {
        return None;
    }
    let args: Vec<&std::ffi::OsStr> = cmd.get_args().collect();
    let saves = match args.first().and_then(|a| a.to_str()) {
        Some("check") => true,
        Some("agent") => args
            .get(1)
            .is_none_or(|a| a.to_str().is_some_and(|a| a.starts_with('-'))),
        _ => false,
    };
    let has_save = |a: &&std::ffi::OsStr| {
        a.to_str()
            .is_some_and(|a| a == "--save" || a.starts_with("--save="))
    };
    let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let in_checkout = cmd
        .get_current_dir()
        .is_none_or(|d| d.canonicalize().ok() == checkout.canonicalize().ok());
    if !saves || !in_checkout || args.iter().any(has_save) {
        return None;
    }
    // A folder of its own for each run, made before it starts: runs of one
    // test process run at once, and a run that made an empty save folder
    // may remove it while another is about to write there.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = TestDir::new("test", &format!("unsaved-{n}"));
    match args.iter().position(|a| *a == "--") {
        None => {
            cmd.arg("--save").arg(&dir);
        }
        // A trailing program (`agent … -- PROGRAM ARGS`): the flag goes
        // before it, in a command built again (envs and folder kept).
        Some(end) => {
            let mut again = Command::new(cmd.get_program());
            again.args(&args[..end]).arg("--save").arg(&dir);
            again.args(&args[end..]);
            for (k, v) in cmd.get_envs() {
                match v {
                    Some(v) => again.env(k, v),
                    None => again.env_remove(k),
                };
            }
            if let Some(d) = cmd.get_current_dir() {
                again.current_dir(d);
            }
            *cmd = again;
        }
    }
    Some(dir)
}

/// Any command, stdin empty, killed after `limit`.
pub fn run_within(cmd: &mut Command, limit: Duration) -> Out {
    run_fed(cmd, Stdin::Null, limit)
}

/// Any command reading `stdin`, killed after `limit` (the test fails: it
/// hung).
// Reaped by wait4 below (which Child::wait cannot replace: it gives no
// rusage); clippy sees only that Child::wait is not called on every path.
#[allow(clippy::zombie_processes)]
pub fn run_fed(cmd: &mut Command, stdin: Stdin, limit: Duration) -> Out {
    // Dropped after the command has exited (or was killed and reaped).
    let saved_aside = save_aside(cmd);
    let started = Instant::now();
    let (stdio, bytes) = match stdin {
        Stdin::Null => (Stdio::null(), None),
        Stdin::File(path) => (Stdio::from(std::fs::File::open(path).unwrap()), None),
        Stdin::Bytes(bytes) => (Stdio::piped(), Some(bytes)),
    };
    let mut child = cmd
        .stdin(stdio)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    if let Some(bytes) = bytes {
        let mut pipe = child.stdin.take().unwrap();
        // From a thread: a large input must not deadlock against stdout.
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = pipe.write_all(&bytes);
        });
    }
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    // wait4, not Child::wait: it also gives the process's own peak memory.
    let pid = child.id() as libc::pid_t;
    let (status, rss) = loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid value for wait4 to fill in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waiting for our own child, with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage.ru_maxrss as u64);
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} hung: killed after {} s; stderr so far:\n{}",
                limit.as_secs(),
                err.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let stdout_bytes = out.join().unwrap();
    Out {
        code,
        stdout: String::from_utf8_lossy(&stdout_bytes).into_owned(),
        stdout_bytes,
        stderr: err.join().unwrap(),
        seconds: started.elapsed().as_secs_f64(),
        max_rss_kib: rss,
        saved_aside,
    }
}

/// Whether the tests keep their folders under the system's temp dir
/// instead of removing them (`CTXGATE_KEEP_TEST_DIRS=1`), to look at what
/// a run left there; each kept folder is named on stderr.
pub fn keep_test_dirs() -> bool {
    std::env::var_os("CTXGATE_KEEP_TEST_DIRS").is_some_and(|v| v == "1")
}

/// Removes `dir` and all it holds, unless the tests keep their folders.
/// Whatever wrote there must have exited: every folder's guard is made
/// before the process that uses it starts, and a process run by a test is
/// waited for (killed first if it hung) before the test goes on.
pub fn remove_test_dir(dir: &std::path::Path) {
    if keep_test_dirs() {
        if dir.exists() {
            eprintln!("kept {} (CTXGATE_KEEP_TEST_DIRS=1)", dir.display());
        }
        return;
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A fresh folder under the system's temp dir, `ctxgate-test-PID-NAME`,
/// removed when dropped (when the test fails too), unless
/// `CTXGATE_KEEP_TEST_DIRS=1`.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("ctxgate-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// The folder, as a string (for an argument).
    pub fn dir(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp dir")
    }

    /// A path inside, as a string.
    pub fn join(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }

    /// Write a file inside (its folders made), and give its path.
    pub fn file(&self, name: &str, bytes: impl AsRef<[u8]>) -> String {
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    }

    /// The JSON files directly inside (saved fixtures), in name order.
    pub fn fixtures(&self) -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        remove_test_dir(&self.0);
    }
}

/// A fresh folder under the system's temp dir, `ctxgate-GROUP-PID-NAME`
/// (`ctxgate-GROUP-PID` when NAME is empty), seen as the [`Path`] it is —
/// `dir.join("x")` is a `PathBuf` — and removed like a [`TempDir`] when
/// dropped. Bind it (`let dir = TestDir::new(…)`) before running anything
/// that uses it, so that it outlives what the test runs.
///
/// [`Path`]: std::path::Path
pub struct TestDir(std::path::PathBuf);

impl TestDir {
    pub fn new(group: &str, name: &str) -> TestDir {
        let mut folder = format!("ctxgate-{group}-{}", std::process::id());
        if !name.is_empty() {
            folder = format!("{folder}-{name}");
        }
        let dir = std::env::temp_dir().join(folder);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TestDir(dir)
    }
}

impl std::ops::Deref for TestDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for TestDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TestDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        remove_test_dir(&self.0);
    }
}
