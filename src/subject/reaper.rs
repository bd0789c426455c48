//! No descendant of a subject outlives it: the subject's process group is
//! killed, and so is every process that carries its marker — an
//! environment variable every descendant inherits unless it clears it — or
//! that was orphaned into ctxgate when ctxgate is the *child subreaper*
//! (Linux `PR_SET_CHILD_SUBREAPER`: an orphan is re-parented to ctxgate
//! instead of init, so a grandchild that double-forked into its own session
//! is still found, and its zombie reaped).
//!
//! Becoming the subreaper is for a process that owns all its children — the
//! `ctxgate` binary ([`become_subreaper`]). A library user's process (a test
//! binary running many threads, each spawning programs of its own) is not
//! one, so there only the process group and the marker are used.
//!
//! Every wait has a deadline: a process that will not die is reported, not
//! waited for.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The environment variable that marks a subject's descendants.
pub const MARKER_VAR: &str = "CTXGATE_SUBJECT";

static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Make this process the child subreaper of its descendants (Linux). Call
/// once, early, from a binary that owns all its children. Returns whether
/// it took effect.
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl(2) with integer arguments; no memory is passed.
        let ok = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0;
        SUBREAPER.store(ok, Ordering::SeqCst);
        ok
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// The subject processes alive now (several under `--jobs`): never killed
/// as strays while another subject's descendants are being cleaned up.
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Folders this ctxgate made for its own scratch (agent mode's run
/// folder): removed on a signal too, after the processes that write into
/// them are stopped.
static SCRATCH: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

/// Remove `dir` if ctxgate dies of a signal before it removes it itself.
pub fn remove_on_signal(dir: &std::path::Path) {
    SCRATCH
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(dir.to_owned());
}

/// Make scratch (a folder under one [`remove_on_signal`] named) with no
/// signal's clean-up running: one that comes meanwhile waits for `make`,
/// and once it has begun, `make` waits for ever (ctxgate is exiting), so
/// no folder is made again after the clean-up removed it.
pub fn making_scratch<T>(make: impl FnOnce() -> T) -> T {
    let _held = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
    make()
}

/// `dir` was removed (or is to be kept): nothing to do on a signal.
pub fn forget_on_signal(dir: &std::path::Path) {
    SCRATCH
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|d| d != dir);
}

/// Start a subject process and count it live, as one step: a cleanup on
/// another thread (`--jobs`) never sees it started and not yet live, which
/// it would kill as a stray.
///
/// Every subject is started by one thread that lives as long as ctxgate:
/// the parent-death signal a subject asks for (`PR_SET_PDEATHSIG`) fires
/// when the *thread* that started it ends, and a worker thread may end
/// while the process it started serves other workers (`subject::Lane`).
pub fn spawn_live(cmd: std::process::Command) -> std::io::Result<std::process::Child> {
    type Job = (
        std::process::Command,
        std::sync::mpsc::Sender<std::io::Result<std::process::Child>>,
    );
    static SPAWNER: Mutex<Option<std::sync::mpsc::Sender<Job>>> = Mutex::new(None);
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let mut spawner = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
        if spawner.is_none() {
            let (jobs, queue) = std::sync::mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("ctxgate-spawner".into())
                .spawn(move || {
                    for (mut cmd, reply) in queue {
                        // ctxgate is exiting: nothing starts again, and
                        // whoever asked waits for the exit.
                        wait_if_interrupted();
                        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
                        let child = cmd.spawn();
                        if let Ok(c) = &child {
                            live.push(c.id() as i32);
                        }
                        drop(live);
                        let _ = reply.send(child);
                    }
                })?;
            *spawner = Some(jobs);
        }
        let jobs = spawner.as_ref().expect("set above");
        jobs.send((cmd, tx))
            .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    }
    rx.recv()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

/// A subject process is being killed.
pub fn unregister(pid: i32) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|&p| p != pid);
}

/// On SIGTERM, SIGINT or SIGHUP, stop every process ctxgate started —
/// each subject's and agent's process group, every process carrying one of
/// this ctxgate's markers (a detached grandchild too), and, as subreaper,
/// every orphan re-parented to it — then die of the signal, as the default
/// handler would. A subject dies with ctxgate anyway (its parent-death
/// signal); its own children would not. Call once, early, from a binary
/// that owns all its children.
///
/// With `CTXGATE_DIE_WITH_PARENT=1` in its environment (the Python and npm
/// launchers set it), ctxgate also takes SIGTERM when its parent dies,
/// even by SIGKILL, and so cleans up the same way.
pub fn stop_everything_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) else {
        return;
    };
    let started = std::thread::Builder::new()
        .name("ctxgate-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                // From here on no process starts, and nothing the kills
                // below cause — a case "killed by signal 9" — is printed
                // as if it were the subject's or the agent's doing.
                INTERRUPTED.store(true, Ordering::SeqCst);
                hold_stdout_and_stderr();
                // Held until the exit: no scratch is made after this.
                let scratch = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
                kill_everything_of_ours();
                for dir in scratch.iter() {
                    let _ = std::fs::remove_dir_all(dir);
                }
                say_interrupted(sig);
                let _ = signal_hook::low_level::emulate_default_handler(sig);
                std::process::exit(128 + sig);
            }
        });
    if started.is_err() {
        return;
    }
    #[cfg(target_os = "linux")]
    if std::env::var_os("CTXGATE_DIE_WITH_PARENT").is_some_and(|v| v == "1") {
        // SAFETY: prctl(2) and getppid(2) with integer arguments.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
            // The parent may have died before the prctl: then it is init
            // (or a subreaper) now, and the signal will never come.
            if libc::getppid() == 1 {
                libc::raise(libc::SIGTERM);
            }
        }
    }
}

/// Set once a signal has begun ctxgate's exit.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether a signal (SIGTERM, SIGINT, SIGHUP) is stopping ctxgate: what
/// fails from now on failed because ctxgate is killing its processes.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// If a signal is stopping ctxgate, wait here for the exit: a report or a
/// fixture written now would record what the signal's kills did as the
/// subject's failure.
pub fn wait_if_interrupted() {
    while interrupted() {
        std::thread::park();
    }
}

/// Take stdout's and stderr's locks for good, on a thread that keeps them
/// until the exit, so that no other thread prints again; give up after a
/// moment if a writer is stuck in a blocked pipe.
fn hold_stdout_and_stderr() {
    let (tx, rx) = std::sync::mpsc::channel();
    let held = std::thread::Builder::new()
        .name("ctxgate-quiet".into())
        .spawn(move || {
            let out = std::io::stdout().lock();
            let err = std::io::stderr().lock();
            let _ = tx.send(());
            let _kept = (out, err);
            loop {
                std::thread::park();
            }
        });
    if held.is_ok() {
        let _ = rx.recv_timeout(Duration::from_millis(200));
    }
}

/// The one line a signal's exit prints: that the run was stopped, by
/// which signal, and that it gives no verdict. Written straight to fd 2
/// (stderr's lock is held by [`hold_stdout_and_stderr`]).
fn say_interrupted(sig: i32) {
    let name = match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    };
    let line = format!(
        "\nctxgate: stopped by {name}: every process it started was killed; \
         the run is incomplete and gives no verdict\n"
    );
    // SAFETY: write(2) of a buffer that lives across the call.
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
    }
}

/// Kill every process this ctxgate started (see
/// [`stop_everything_on_signals`]).
pub fn kill_everything_of_ours() {
    let me = std::process::id() as i32;
    let groups: Vec<i32> = match LIVE.try_lock() {
        Ok(live) => live.clone(),
        Err(_) => Vec::new(),
    };
    for &pid in &groups {
        // SAFETY: kill(2) on a process group ctxgate created.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    // A subject's children in process groups of their own, their marker
    // cleared, are re-parented to ctxgate (the subreaper) only once the
    // subject is dead — and their own children once they are. So sweep
    // until three passes in a row find nothing of ours alive (a process
    // still dying is found again), for at most two seconds: three fixed
    // passes let such children outlive ctxgate in 3 of 10 runs.
    let until = Instant::now() + Duration::from_secs(2);
    let mut quiet = 0;
    while quiet < 3 && Instant::now() < until {
        let mut found = false;
        for p in all_procs() {
            let ours = p.pid != me
                && !p.zombie
                && ((p.ppid == me && is_subreaper())
                    || groups.contains(&p.pgrp)
                    || carries_our_marker(p.pid, me));
            if ours {
                found = true;
                // SAFETY: kill(2) on a process ctxgate started.
                unsafe {
                    libc::kill(p.pid, libc::SIGKILL);
                }
            }
        }
        quiet = if found { 0 } else { quiet + 1 };
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The marker value of a process ctxgate starts: unique to this ctxgate
/// (its pid) and to the start (`n`); `kind` tells subjects from agents.
pub fn marker_value(kind: &str, n: u64) -> String {
    format!("{kind}{}-{n}", std::process::id())
}

/// Whether `pid` carries a marker of the ctxgate whose pid is `me`.
fn carries_our_marker(pid: i32, me: i32) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let prefix = format!("{MARKER_VAR}=");
    env.split(|&b| b == 0).any(|var| {
        var.strip_prefix(prefix.as_bytes()).is_some_and(|value| {
            let value = String::from_utf8_lossy(value);
            let value = value.strip_prefix("agent-").unwrap_or(&value);
            value
                .split_once('-')
                .is_some_and(|(pid, _)| pid == me.to_string())
        })
    })
}

/// Whether this process is the subreaper of its descendants.
pub fn is_subreaper() -> bool {
    SUBREAPER.load(Ordering::SeqCst)
}

/// One process as /proc shows it.
#[derive(Debug, Clone, Copy)]
struct Proc {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    zombie: bool,
}

fn read_stat(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: split after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut f = rest.split_whitespace();
    let state = f.next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        pgrp,
        zombie: state == "Z" || state == "X",
    })
}

fn carries_marker(pid: i32, marker: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|&b| b == 0).any(|var| var == marker))
        .unwrap_or(false)
}

fn all_procs() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// Kill every process of the subject: its process group `pgid`, every
/// process carrying `marker` (`NAME=value`), and — as subreaper — every
/// child of ours that is not a live subject; reap the ones that are our
/// children. Returns the pids still alive when the deadline passed.
pub fn kill_descendants(pgid: i32, marker: &str, deadline: Duration) -> Vec<i32> {
    let me = std::process::id() as i32;
    let marker = marker.as_bytes();
    let until = Instant::now() + deadline;
    // SAFETY: kill(2) on the group we created for the subject.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    // Until three passes in a row find nothing of the subject's, alive or
    // just dead: a process forking as it dies has a child that is
    // re-parented to us a moment later, which one empty pass can miss
    // (a detached process that keeps forking outlived a run in 7 of 24).
    let mut quiet = 0;
    loop {
        let mut left = Vec::new();
        let mut reaped = false;
        // Held through the scan: no subject starts halfway through it.
        let keep = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        for p in all_procs() {
            if p.pid == me || keep.contains(&p.pid) {
                continue;
            }
            let ours = p.ppid == me && is_subreaper();
            let theirs = p.pgrp == pgid || (!p.zombie && carries_marker(p.pid, marker));
            if !(ours || theirs) {
                continue;
            }
            if p.zombie {
                if p.ppid == me {
                    reap(p.pid);
                    reaped = true;
                }
                continue;
            }
            // SAFETY: kill(2) on a process of the subject's.
            unsafe {
                libc::kill(p.pid, libc::SIGKILL);
            }
            if p.ppid == me {
                reap(p.pid);
            }
            left.push(p.pid);
        }
        drop(keep);
        quiet = match left.is_empty() && !reaped {
            true => quiet + 1,
            false => 0,
        };
        if quiet >= 3 || Instant::now() >= until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether `child` exits within `wait` (polled every 5 ms; reaped when it
/// does).
pub fn exits_within(child: &mut std::process::Child, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    loop {
        match child.try_wait() {
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => return false,
            Ok(Some(_)) | Err(_) => return true,
        }
    }
}

/// Ask `child`, the leader of a process group ctxgate created for it
/// (`process_group(0)`), to end: SIGTERM to its group, then up to `grace`
/// for it to exit. Whether it did; what is left of it is then for
/// [`kill_descendants`]. A child that has exited already is not signalled
/// (its group may be gone, its pid reused).
pub fn terminate(child: &mut std::process::Child, grace: Duration) -> bool {
    if exits_within(child, Duration::ZERO) {
        return true;
    }
    // SAFETY: kill(2) on the group ctxgate created for the child, whose
    // leader is alive and not reaped: the group is still the child's.
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGTERM);
    }
    exits_within(child, grace)
}

/// Reap our child `pid` if it has exited (never blocks).
fn reap(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid(2) on one pid, with a valid status pointer, WNOHANG.
    unsafe {
        libc::waitpid(pid, &mut status, libc::WNOHANG);
    }
}
