//! The subject's end (issue 46, item 9): at the end of a run its stdin is
//! closed and it has `--exit-grace` to exit by itself — its exit hooks run
//! — then its process group is sent SIGTERM, and SIGKILL a second later.
//! Each mode of tests/subjects/ending.py writes down what it saw.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::process::{run_within, TempDir};

fn check(mode: &str, dir: &TempDir, extra: &[&str]) -> common::process::Out {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/subjects/ending.py");
    let subject = format!(
        "python3 {} {mode} {}",
        shell_words::quote(script),
        shell_words::quote(dir.dir())
    );
    run_within(
        Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args([
                "check",
                "--subject",
                &subject,
                "--cases",
                "20",
                "--seed",
                "3",
                "--jobs",
                "2",
            ])
            .args(extra),
        Duration::from_secs(120),
    )
}

fn pids(dir: &TempDir) -> Vec<i32> {
    std::fs::read_to_string(dir.path().join("pids"))
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

/// Alive: there, and not a zombie waiting for its parent.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s[s.rfind(')')? + 2..].chars().next()? != 'Z'))
        .unwrap_or(false)
}

/// A subject that exits when its stdin closes runs its exit hooks to the
/// end (0.3 s each): every process of the run wrote its file. Killed at
/// once, as it was, none would have.
#[test]
fn a_subject_that_exits_at_the_end_of_its_input_runs_its_exit_hooks() {
    let dir = TempDir::new("end-atexit");
    let out = check("atexit", &dir, &[]);
    assert_eq!(out.code, 0, "{}", out.all());
    let pids = pids(&dir);
    assert_eq!(pids.len(), 2, "one process a job: {pids:?}");
    for pid in pids {
        let hook = dir.path().join(format!("atexit-{pid}"));
        assert!(hook.exists(), "process {pid} never ran its exit hook");
        assert!(!alive(pid));
    }
}

/// One that ignores the end of its input is sent SIGTERM once its grace
/// is over, and its handler runs.
#[test]
fn a_subject_that_outlives_its_grace_is_sent_sigterm() {
    let dir = TempDir::new("end-term");
    let out = check("term", &dir, &["--exit-grace", "0.3"]);
    assert_eq!(out.code, 0, "{}", out.all());
    for pid in pids(&dir) {
        assert!(
            dir.path().join(format!("term-{pid}")).exists(),
            "process {pid} was never sent SIGTERM"
        );
        assert!(!alive(pid));
    }
}

/// One that ignores its stdin closing and SIGTERM, with a child that
/// ignores SIGTERM too, is still killed, child and all.
#[test]
fn a_subject_that_ignores_the_end_and_sigterm_is_killed_with_its_children() {
    let dir = TempDir::new("end-stubborn");
    let out = check("stubborn", &dir, &["--exit-grace", "0.2"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let pids = pids(&dir);
    assert_eq!(pids.len(), 4, "two subjects and their children: {pids:?}");
    let left: Vec<i32> = pids.into_iter().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "still running after the run: {left:?}");
}

/// `--exit-grace` takes 0 to 60 seconds; anything else is bad usage.
/// A signal to ctxgate kills a subject's children that left its process
/// group and cleared its marker too: they are ctxgate's (the subreaper's)
/// only once the subject is dead, so ctxgate sweeps until nothing of its
/// own is left — three fixed sweeps let some outlive it (3 runs of 10).
#[test]
fn a_signal_to_ctxgate_kills_children_in_groups_of_their_own() {
    for round in 0..3 {
        let dir = TempDir::new(&format!("end-groups-{round}"));
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/subjects/ending.py");
        let subject = format!(
            "python3 {} groups {}",
            shell_words::quote(script),
            shell_words::quote(dir.dir())
        );
        let mut ctxgate = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args([
                "check",
                "--subject",
                &subject,
                "--cases",
                "500",
                "--jobs",
                "2",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Both jobs' subjects and their 20 children are up.
        let until = std::time::Instant::now() + Duration::from_secs(30);
        let read = || std::fs::read_to_string(dir.path().join("pids")).unwrap_or_default();
        while read().lines().count() < 22 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        let pids: Vec<i32> = read().lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(pids.len(), 22, "round {round}: {pids:?}");
        Command::new("kill")
            .args(["-TERM", &ctxgate.id().to_string()])
            .status()
            .unwrap();
        let _ = ctxgate.wait();
        // What ctxgate did not kill before it exited lives on, re-parented.
        std::thread::sleep(Duration::from_millis(300));
        let left: Vec<i32> = pids.into_iter().filter(|&p| alive(p)).collect();
        for &p in &left {
            // SAFETY: kill(2) of a test's own stray, so as not to leak it.
            unsafe {
                libc::kill(p, libc::SIGKILL);
            }
        }
        assert!(left.is_empty(), "round {round}: left running: {left:?}");
    }
}

#[test]
fn exit_grace_out_of_range_is_bad_usage() {
    let dir = TempDir::new("end-usage");
    for bad in ["-1", "61", "NaN"] {
        let out = check("atexit", &dir, &[&format!("--exit-grace={bad}")]);
        assert_eq!(out.code, 2, "{bad}: {}", out.all());
        out.stderr_has("--exit-grace must be a number of seconds from 0 to 60");
    }
    assert!(
        !Path::new(&dir.path().join("pids")).exists(),
        "no subject started"
    );
}
