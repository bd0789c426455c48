//! One case end to end: a folder of its own (the workspace, the agent's
//! working directory, with the files the script's calls read; the task in
//! a file beside it), an endpoint on a loopback port, the agent started in
//! a process group of its own with the environment SPEC §9 gives it, a
//! deadline — then the trace. The folder, the endpoint and every process
//! the agent started are gone when [`run`] returns.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::driver::Driver;
use super::endpoint::Endpoint;
use super::play::{Play, Stage};
use super::script::Script;
use super::trace::{Exit, Trace};
use crate::subject::reaper::{self, MARKER_VAR};

/// How one case is run.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The agent's command, split into words; `{prompt}` and
    /// `{prompt_file}` in a word are replaced.
    pub argv: Vec<String>,
    /// How long a case may take.
    pub deadline: Duration,
    /// Where case folders are made.
    pub root: PathBuf,
    /// Keep each case's folder (for a look at what the agent did).
    pub keep_folders: bool,
    /// Extra environment variables (`--env K=V`).
    pub env: Vec<(String, String)>,
    /// The driven form: the cases are played by the program that started
    /// ctxgate (`agent --driven`), not by starting `argv`.
    pub driver: Option<Arc<Driver>>,
}

/// The dummy key every provider variable gets.
pub const DUMMY_KEY: &str = "sk-ctxgate-dummy-key";

/// The last bytes of the agent's stdout and stderr a trace keeps.
const TAIL_BYTES: usize = 4096;

/// The most of each of the agent's streams its case folder's file keeps:
/// an agent that floods its output does not fill the disk (4 GB in six
/// seconds is what a Python loop writes).
pub const KEPT_OUTPUT_BYTES: u64 = 16 << 20;

/// The most model requests an agent may send in a case before ctxgate
/// stops it: twice the 4 a turn `finishes` allows, plus 8 — a looping
/// agent's verdict is reached by then, and the rest is the deadline's
/// waste. Only model requests count, as `finishes` counts them.
pub fn model_request_cap(script: &Script) -> usize {
    script.request_budget() * 2 + 8
}

/// The most requests of any kind (`GET /v1/models`, token counts, 404s,
/// model requests) an agent may send in a case: a safety net against a
/// flood, far past what an agent that polls or probes sends — 1,000, or
/// ten times the model requests' cap when that is more.
pub fn request_cap(script: &Script) -> usize {
    (model_request_cap(script) * 10).max(1000)
}

/// The most request-body bytes an agent may send in a case: what the
/// model requests' cap would carry were every one at the ceiling, and at
/// least 256 MiB. Past it an agent is sending bodies over the ceiling
/// again and again, and ctxgate, which keeps what it judges (a body of
/// many small messages takes some fifteen times its size, read), stops it
/// before they fill its memory.
pub fn byte_cap(script: &Script, ceiling: u64) -> u64 {
    (model_request_cap(script) as u64)
        .saturating_mul(ceiling)
        .max(256 << 20)
}

/// Run `script` once with the agent and return its trace.
pub fn run(
    runtime: &tokio::runtime::Handle,
    stage: &Arc<Stage>,
    script: &Arc<Script>,
    launch: &Launch,
    case: u64,
) -> Trace {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let name = format!("case-{case}-{}", RUNS.fetch_add(1, Ordering::Relaxed));
    let folder = CaseFolder::make(&launch.root, &name, script, launch.keep_folders);
    let folder = match folder {
        Ok(f) => f,
        Err(e) => {
            return failed_start(format!(
                "cannot make the case folder {}: {e}",
                launch.root.join(&name).display()
            ))
        }
    };
    let play = Arc::new(Mutex::new(Play::new(
        stage.clone(),
        script.clone(),
        folder.workspace.clone(),
    )));
    let receive_cap = (stage
        .settings
        .config
        .transport_max_body_bytes
        .saturating_mul(4))
    .clamp(64 << 20, 1 << 30);
    let endpoint = match Endpoint::start(runtime, play.clone(), receive_cap) {
        Ok(e) => e,
        Err(e) => return failed_start(format!("cannot listen on 127.0.0.1: {e}")),
    };
    let exit = match &launch.driver {
        Some(driver) => driver.play(
            serde_json::json!({
                "index": case,
                "url": endpoint.url(),
                "openaiBaseUrl": format!("{}/v1", endpoint.url()),
                "anthropicBaseUrl": endpoint.url(),
                "apiKey": DUMMY_KEY,
                "prompt": script.task,
                "promptFile": folder.prompt_file,
                "workspace": folder.workspace,
                "deadlineSeconds": launch.deadline.as_secs_f64(),
            }),
            launch.deadline,
        ),
        None => {
            let bytes_cap = byte_cap(script, stage.settings.config.transport_max_body_bytes);
            run_agent(&folder, &endpoint, script, launch, case, &play, bytes_cap)
        }
    };
    drop(endpoint);
    let play = Arc::try_unwrap(play)
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .unwrap_or_else(|shared| {
            let mut guard = shared.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(
                &mut *guard,
                Play::new(stage.clone(), script.clone(), PathBuf::new()),
            )
        });
    let mut trace = play.into_trace();
    trace.exit = exit;
    trace
}

fn failed_start(why: String) -> Trace {
    Trace {
        requests: Vec::new(),
        exit: Exit {
            spawn_error: Some(why),
            ..Exit::default()
        },
    }
}

/// A case's folder: removed when dropped, unless kept.
struct CaseFolder {
    dir: PathBuf,
    workspace: PathBuf,
    prompt_file: PathBuf,
    keep: bool,
}

/// The length in bytes every case's workspace path is padded to (when the
/// run's folder leaves room): the path is in every tool call the agent is
/// handed, so a request's size — and a verdict a few bytes from the
/// ceiling, and a fixture's replay — would otherwise depend on where the
/// run happens to be (`--work-dir`, `$TMPDIR`, the process id's digits,
/// how many runs a shrink took).
pub const WORKSPACE_PATH_BYTES: usize = 128;

/// The name of a case's folder: `name` (and `-k` when another run sharing
/// the folder took it), then `_`s until the workspace path under it is
/// [`WORKSPACE_PATH_BYTES`] long — or nothing when `root` is too long for
/// that, which `ctxgate agent` says before the first case.
pub fn padded_name(root: &Path, name: &str) -> String {
    let used = root.as_os_str().len() + 1 + name.len() + "/workspace".len();
    format!(
        "{name}{}",
        "_".repeat(WORKSPACE_PATH_BYTES.saturating_sub(used))
    )
}

/// Whether a run's case folders under `root` get workspace paths of the
/// fixed length (a case name of up to 24 bytes and its `-k` fit).
pub fn pads_paths_under(root: &Path) -> bool {
    root.as_os_str().len() + 1 + 24 + "/workspace".len() <= WORKSPACE_PATH_BYTES
}

impl CaseFolder {
    fn make(root: &Path, name: &str, script: &Script, keep: bool) -> std::io::Result<CaseFolder> {
        crate::subject::reaper::making_scratch(|| CaseFolder::make_now(root, name, script, keep))
    }

    fn make_now(
        root: &Path,
        name: &str,
        script: &Script,
        keep: bool,
    ) -> std::io::Result<CaseFolder> {
        std::fs::create_dir_all(root)?;
        // Everything under `root` is made through descriptors opened
        // without following a symlink, and every file is created new: a
        // symlink planted in the case's folder (by an agent of another case
        // sharing `root`) is refused, never written through.
        let root_fd = safe_fs::open_dir(root)?;
        // Made anew, never reused: two runs given one `--work-dir` each
        // get folders of their own.
        let mut k = 0u32;
        let (dir, padded) = loop {
            let named = if k == 0 {
                name.to_owned()
            } else {
                format!("{name}-{k}")
            };
            let padded = padded_name(root, &named);
            match safe_fs::make_dir_at(&root_fd, &padded) {
                Ok(()) => break (root.join(&padded), padded),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && k < 10_000 => k += 1,
                Err(e) => return Err(e),
            }
        };
        let workspace = dir.join("workspace");
        let folder = CaseFolder {
            dir: dir.clone(),
            workspace: workspace.clone(),
            prompt_file: dir.join("task.txt"),
            keep,
        };
        let dir_fd = safe_fs::open_dir_at(&root_fd, &padded)?;
        safe_fs::make_dir_at(&dir_fd, "workspace")?;
        let workspace_fd = safe_fs::open_dir_at(&dir_fd, "workspace")?;
        safe_fs::create_new_at(&dir_fd, "task.txt", script.task.as_bytes())?;
        write_workspace(&workspace_fd, script)?;
        Ok(folder)
    }
}

/// Write the file each call of `script` reads into the workspace open as
/// `workspace`, each created new as one plain name in it (never through
/// a symlink, never into another folder); a file two calls name is written
/// once. The script's names were checked when it was read
/// (`Script::check_files`); a name that is not a plain file name is
/// refused here too.
fn write_workspace(workspace: &std::os::fd::OwnedFd, script: &Script) -> std::io::Result<()> {
    // The script's folders, one inside the next, each made new and opened
    // without following a symlink: the files go in the innermost.
    let mut inner: Option<std::os::fd::OwnedFd> = None;
    for folder in &script.folders {
        if let Some(problem) = super::script::file_name_problem(folder) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a script's folder: {problem}"),
            ));
        }
        let parent = inner.as_ref().unwrap_or(workspace);
        safe_fs::make_dir_at(parent, folder)?;
        inner = Some(safe_fs::open_dir_at(parent, folder)?);
    }
    let workspace = inner.as_ref().unwrap_or(workspace);
    let mut written = std::collections::HashSet::new();
    for (_, call) in script.calls() {
        if let Some(problem) = super::script::file_name_problem(&call.file) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a call's file: {problem}"),
            ));
        }
        if written.insert(call.file.as_str()) {
            safe_fs::create_new_at(workspace, &call.file, &call.file_bytes())?;
        }
    }
    Ok(())
}

/// Folders and files made through directory descriptors (`openat(2)`,
/// `mkdirat(2)`), never following a symlink below the folder first opened.
mod safe_fs {
    use std::ffi::CString;
    use std::fs::File;
    use std::io::{self, Write};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    fn c_name(name: &str) -> io::Result<CString> {
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a plain file name"),
            ));
        }
        Ok(CString::new(name)?)
    }

    fn fd_or_error(fd: libc::c_int) -> io::Result<OwnedFd> {
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by a successful open and is owned
        // by nothing else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Open the folder `path` (the run's folder, as the user named it).
    pub fn open_dir(path: &Path) -> io::Result<OwnedFd> {
        let c = CString::new(path.as_os_str().as_bytes())?;
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        fd_or_error(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })
    }

    /// Open the folder `name` in `dir`, refusing a symlink.
    pub fn open_dir_at(dir: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
        let c = c_name(name)?;
        // SAFETY: `dir` is an open descriptor and `c` a NUL-terminated name.
        fd_or_error(unsafe {
            libc::openat(
                dir.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })
    }

    /// Make the folder `name` in `dir` (an existing name, a symlink
    /// included, is `AlreadyExists`).
    pub fn make_dir_at(dir: &OwnedFd, name: &str) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: as in `open_dir_at`.
        if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o755) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Create the file `name` in `dir` and write `bytes` to it: created
    /// new (`O_EXCL`), so an existing name — a symlink planted there
    /// included — is refused, never opened or followed.
    pub fn create_new_at(dir: &OwnedFd, name: &str, bytes: &[u8]) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: as in `open_dir_at`.
        let fd = fd_or_error(unsafe {
            libc::openat(
                dir.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o644 as libc::c_uint,
            )
        })
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create {name:?}: {e}")))?;
        File::from(fd).write_all(bytes)
    }
}

impl Drop for CaseFolder {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Variables of the user's environment that carry a provider's
/// credentials or route its traffic: never handed to the agent.
pub fn is_withheld(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    const SUFFIXES: [&str; 8] = [
        "_API_KEY",
        "_AUTH_TOKEN",
        "_ACCESS_TOKEN",
        "_SECRET_ACCESS_KEY",
        "_SESSION_TOKEN",
        "_ACCESS_KEY_ID",
        "_API_TOKEN",
        "_SECRET_KEY",
    ];
    const NAMES: [&str; 16] = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "HF_TOKEN",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "OPENAI_ORG_ID",
        "OPENAI_ORGANIZATION",
        "OPENAI_PROJECT",
        "OPENAI_API_BASE",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "AZURE_OPENAI_ENDPOINT",
        "CLAUDE_CODE_USE_BEDROCK",
        "CLAUDE_CODE_USE_VERTEX",
    ];
    SUFFIXES.iter().any(|s| upper.ends_with(s))
        || NAMES.contains(&upper.as_str())
        || upper.starts_with("AWS_")
        || upper.starts_with("CTXGATE_AGENT_")
}

/// The agent's environment (SPEC §9).
fn environment(
    folder: &CaseFolder,
    url: &str,
    script: &Script,
    launch: &Launch,
    case: u64,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> =
        std::env::vars().filter(|(k, _)| !is_withheld(k)).collect();
    let prompt_file = folder.prompt_file.to_string_lossy().into_owned();
    let set = [
        ("OPENAI_BASE_URL", format!("{url}/v1")),
        ("OPENAI_API_BASE", format!("{url}/v1")),
        ("ANTHROPIC_BASE_URL", url.to_owned()),
        ("CTXGATE_AGENT_URL", url.to_owned()),
        ("OPENAI_API_KEY", DUMMY_KEY.to_owned()),
        ("ANTHROPIC_API_KEY", DUMMY_KEY.to_owned()),
        ("CTXGATE_AGENT_PROMPT", script.task.clone()),
        ("CTXGATE_AGENT_PROMPT_FILE", prompt_file),
        ("CTXGATE_AGENT_CASE", case.to_string()),
        ("NO_PROXY", "127.0.0.1,localhost".to_owned()),
        ("no_proxy", "127.0.0.1,localhost".to_owned()),
    ];
    for (k, v) in set {
        env.insert(k.to_owned(), v);
    }
    for (k, v) in &launch.env {
        env.insert(k.clone(), v.clone());
    }
    env
}

/// The command's words made to work from the workspace: a word that
/// names an existing file or folder relative to where ctxgate runs (the
/// agent's script, its config) becomes its absolute path — the agent runs
/// in its fresh workspace, where no such relative path exists.
pub fn absolute_words(argv: &[String]) -> Vec<String> {
    argv.iter()
        .map(|w| {
            let p = Path::new(w);
            let relative = !w.starts_with('-') && !w.contains('{') && p.is_relative();
            // Made absolute, not canonical: a symlink stays one.
            // `.venv/bin/python` resolved to the interpreter it links to
            // runs outside its venv, without the packages the agent needs.
            match std::path::absolute(p) {
                Ok(abs) if relative && p.exists() && (w.contains('/') || p.is_file()) => {
                    abs.to_string_lossy().into_owned()
                }
                _ => w.clone(),
            }
        })
        .collect()
}

/// The command's words with `{prompt}` and `{prompt_file}` filled in.
pub fn fill_words(argv: &[String], prompt: &str, prompt_file: &str) -> Vec<String> {
    argv.iter()
        .map(|w| {
            w.replace("{prompt_file}", prompt_file)
                .replace("{prompt}", prompt)
        })
        .collect()
}

fn run_agent(
    folder: &CaseFolder,
    endpoint: &Endpoint,
    script: &Script,
    launch: &Launch,
    case: u64,
    play: &Arc<Mutex<Play>>,
    bytes_cap: u64,
) -> Exit {
    let started = Instant::now();
    let env = environment(folder, &endpoint.url(), script, launch, case);
    let argv = fill_words(
        &launch.argv,
        &script.task,
        &folder.prompt_file.to_string_lossy(),
    );
    let open = |name: &str| {
        // Created new: never a file (or a symlink) already there.
        File::options()
            .create_new(true)
            .read(true)
            .write(true)
            .open(folder.dir.join(name))
    };
    let (out, err) = match (open("stdout.txt"), open("stderr.txt")) {
        (Ok(o), Ok(e)) => (o, e),
        (Err(e), _) | (_, Err(e)) => {
            return Exit {
                spawn_error: Some(format!("cannot open the agent's output files: {e}")),
                ..Exit::default()
            }
        }
    };
    static STARTS: AtomicU64 = AtomicU64::new(0);
    let marker = reaper::marker_value("agent-", STARTS.fetch_add(1, Ordering::Relaxed));
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env_clear()
        .envs(&env)
        .env(MARKER_VAR, &marker)
        .current_dir(&folder.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: the closure runs in the child between fork and exec and only
    // calls prctl(2), which is async-signal-safe: the agent gets SIGKILL if
    // ctxgate dies first.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            Ok(())
        });
    }
    let mut child = match reaper::spawn_live(cmd) {
        Ok(c) => c,
        Err(e) => {
            return Exit {
                spawn_error: Some(format!(
                    "cannot start {}: {e}{}",
                    argv[0],
                    match e.kind() {
                        std::io::ErrorKind::NotFound if !argv[0].contains('/') => {
                            " (is it installed, and on PATH?)"
                        }
                        _ => "",
                    }
                )),
                ..Exit::default()
            }
        }
    };
    let pid = child.id() as i32;
    let stdout = child.stdout.take().map(|p| Capture::start(p, out));
    let stderr = child.stderr.take().map(|p| Capture::start(p, err));
    let model_cap = model_request_cap(script);
    let all_cap = request_cap(script);
    let mut exit = Exit::default();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                use std::os::unix::process::ExitStatusExt;
                exit.code = status.code();
                exit.signal = status.signal();
                break;
            }
            Ok(None) => {}
            Err(_) => break,
        }
        let (models, all, bytes) = play.lock().map_or((0, 0, 0), |p| {
            (
                p.model_request_count(),
                p.request_count(),
                p.received_bytes(),
            )
        });
        if started.elapsed() >= launch.deadline {
            exit.timed_out = true;
            break;
        }
        if models > model_cap {
            exit.capped = Some(format!(
                "stopped by ctxgate after {models} model request(s): the cap is {model_cap} (twice the {} the script allows, plus 8)",
                script.request_budget()
            ));
            break;
        }
        if all > all_cap {
            exit.capped = Some(format!(
                "stopped by ctxgate after {all} request(s), {models} of them to the model: the cap on all requests is {all_cap}"
            ));
            break;
        }
        if bytes > bytes_cap {
            exit.capped = Some(format!(
                "stopped by ctxgate after {bytes} bytes of request bodies in {all} request(s): the cap is {bytes_cap} (the model-request cap's {model_cap} at the ceiling, at least 256 MiB)"
            ));
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Past its deadline or its request budget, an agent is asked to end
    // (SIGTERM to its group: its exit hooks, a tracer around it, write
    // what they hold) and killed a second later with what is left of it.
    reaper::terminate(&mut child, Duration::from_secs(1));
    reaper::unregister(pid);
    let marker_var = format!("{MARKER_VAR}={marker}");
    reaper::kill_descendants(pid, &marker_var, Duration::from_secs(5));
    let _ = child.wait();
    exit.elapsed = started.elapsed();
    // Every process that held the pipes is gone: they end at once (a
    // second's grace, then what was read so far).
    let until = Instant::now() + Duration::from_secs(1);
    exit.stdout_tail = stdout.map(|c| c.finish(until)).unwrap_or_default();
    exit.stderr_tail = stderr.map(|c| c.finish(until)).unwrap_or_default();
    exit
}

/// One of the agent's output streams, read from its pipe as it comes: the
/// first [`KEPT_OUTPUT_BYTES`] into the case folder's file (then a line
/// saying how much more there was), the last [`TAIL_BYTES`] for the trace.
/// The pipe is always drained, so the agent never blocks on it.
struct Capture {
    tail: Arc<Mutex<Vec<u8>>>,
    done: std::sync::mpsc::Receiver<()>,
}

impl Capture {
    fn start(mut pipe: impl Read + Send + 'static, mut file: File) -> Capture {
        let tail = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = std::sync::mpsc::channel();
        let kept = tail.clone();
        let _ = std::thread::Builder::new()
            .name("ctxgate-agent-output".into())
            .spawn(move || {
                let mut buf = vec![0u8; 64 << 10];
                let (mut written, mut dropped) = (0u64, 0u64);
                loop {
                    let n = match pipe.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break,
                    };
                    let chunk = &buf[..n];
                    let room = KEPT_OUTPUT_BYTES.saturating_sub(written).min(n as u64) as usize;
                    if room > 0 && file.write_all(&chunk[..room]).is_ok() {
                        written += room as u64;
                    }
                    dropped += (n - room) as u64;
                    let mut t = kept.lock().unwrap_or_else(|e| e.into_inner());
                    t.extend_from_slice(chunk);
                    if t.len() > 2 * TAIL_BYTES {
                        let cut = t.len() - TAIL_BYTES;
                        t.drain(..cut);
                    }
                }
                if dropped > 0 {
                    let _ = writeln!(
                        file,
                        "\n[ctxgate: {dropped} more bytes not kept, past the first {KEPT_OUTPUT_BYTES}]"
                    );
                }
                let _ = tx.send(());
            });
        Capture { tail, done }
    }

    /// The stream's last bytes, once it ended or `until` passed.
    fn finish(self, until: Instant) -> String {
        let _ = self
            .done
            .recv_timeout(until.saturating_duration_since(Instant::now()));
        let t = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        let from = t.len().saturating_sub(TAIL_BYTES);
        String::from_utf8_lossy(&t[from..]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_proxies_are_withheld() {
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "https_proxy",
            "GEMINI_API_KEY",
            "openrouter_api_key",
            "CTXGATE_AGENT_PROMPT",
        ] {
            assert!(is_withheld(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "KEYBOARD"] {
            assert!(!is_withheld(name), "{name}");
        }
    }

    fn script(files: &[&str]) -> Script {
        let calls: Vec<serde_json::Value> = files
            .iter()
            .enumerate()
            .map(|(i, f)| serde_json::json!({"id": format!("c{i}"), "file": f, "content": "FROM THE SCRIPT"}))
            .collect();
        serde_json::from_value(serde_json::json!({"task": "Task: t", "final": "done",
            "summaries": [50], "turns": [{"calls": calls}]}))
        .unwrap()
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ctxgate-case-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A relative program is made absolute without following its
    /// symlink: a venv's `bin/python` is a link to the interpreter, which
    /// run by its own path is outside the venv (the agent's imports fail).
    #[test]
    fn a_relative_program_is_made_absolute_and_a_symlink_kept() {
        let rel = format!("target/ctxgate-abs-words-{}", std::process::id());
        let _ = std::fs::remove_dir_all(&rel);
        std::fs::create_dir_all(format!("{rel}/venv/bin")).unwrap();
        std::fs::write(format!("{rel}/real-python"), "").unwrap();
        std::os::unix::fs::symlink(
            std::path::absolute(format!("{rel}/real-python")).unwrap(),
            format!("{rel}/venv/bin/python"),
        )
        .unwrap();
        let words = absolute_words(&[
            format!("{rel}/venv/bin/python"),
            "-c".into(),
            "{prompt}".into(),
            "no/such/file".into(),
        ]);
        let want = std::path::absolute(format!("{rel}/venv/bin/python")).unwrap();
        assert_eq!(words[0], want.to_string_lossy());
        assert!(words[0].ends_with("/venv/bin/python"), "{}", words[0]);
        assert_eq!(&words[1..], ["-c", "{prompt}", "no/such/file"]);
        let _ = std::fs::remove_dir_all(&rel);
    }

    /// A deep script's files are written under its folders, one inside
    /// the next, each a plain name: the path the calls name is there.
    #[test]
    fn a_deep_scripts_files_are_written_under_its_folders() {
        let dir = scratch("deep");
        let workspace = dir.join("workspace");
        std::fs::create_dir(&workspace).unwrap();
        let fd = safe_fs::open_dir(&workspace).unwrap();
        let folders = (1..200)
            .map(crate::agent::script::deep_folders)
            .find(|f| !f.is_empty())
            .unwrap();
        let deep = script(&["t000-0.txt"]).with_folders(folders.clone());
        deep.check_files().unwrap();
        write_workspace(&fd, &deep).unwrap();
        let path = workspace.join(deep.relative("t000-0.txt"));
        assert!(path.as_os_str().len() > 1_000, "{}", path.display());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "FROM THE SCRIPT");
        for bad in ["..", "a/b", ""] {
            let mut f = folders.clone();
            f[0] = bad.to_owned();
            let bad_script = script(&["t000-1.txt"]).with_folders(f);
            assert!(bad_script.check_files().is_err(), "{bad:?}");
            assert!(write_workspace(&fd, &bad_script).is_err(), "{bad:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A symlink planted in a workspace (an agent of another case sharing
    /// the run's folder can reach it) is refused, never written through:
    /// the file it points at is untouched.
    #[test]
    fn a_symlink_planted_in_the_workspace_is_never_written_through() {
        let dir = scratch("planted");
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, "PRECIOUS").unwrap();
        let workspace = dir.join("workspace");
        std::fs::create_dir(&workspace).unwrap();
        std::os::unix::fs::symlink(&victim, workspace.join("t000-0.txt")).unwrap();
        let fd = safe_fs::open_dir(&workspace).unwrap();
        let e = write_workspace(&fd, &script(&["t000-0.txt"])).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
        // A dangling symlink too: O_EXCL does not create its target.
        let absent = dir.join("absent.txt");
        std::os::unix::fs::symlink(&absent, workspace.join("t000-1.txt")).unwrap();
        assert!(write_workspace(&fd, &script(&["t000-1.txt"])).is_err());
        assert!(!absent.exists(), "written through a dangling symlink");
        // A folder replaced by a symlink is not entered.
        let elsewhere = dir.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join("linked")).unwrap();
        let dir_fd = safe_fs::open_dir(&dir).unwrap();
        assert!(safe_fs::open_dir_at(&dir_fd, "linked").is_err());
        assert!(safe_fs::create_new_at(&dir_fd, "linked", b"x").is_err());
        // Names that are not plain are refused however the script was made.
        for bad in ["../victim.txt", "/tmp/x", "", "..", "."] {
            assert!(write_workspace(&fd, &script(&[bad])).is_err(), "{bad:?}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "PRECIOUS");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        // A case folder is made whole, its files written once.
        let root = dir.join("root");
        let folder =
            CaseFolder::make_now(&root, "case-0-0", &script(&["a.txt", "a.txt"]), false).unwrap();
        assert_eq!(
            std::fs::read_to_string(folder.workspace.join("a.txt")).unwrap(),
            "FROM THE SCRIPT"
        );
        assert_eq!(
            std::fs::read_to_string(&folder.prompt_file).unwrap(),
            "Task: t"
        );
        drop(folder);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn prompt_placeholders_fill_one_word_each() {
        let argv: Vec<String> = ["agent", "-p", "{prompt}", "--file={prompt_file}"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            fill_words(&argv, "Task: a b {prompt_file}", "/t/task.txt"),
            [
                "agent",
                "-p",
                "Task: a b {prompt_file}",
                "--file=/t/task.txt"
            ]
        );
    }
}
