//! A fault shows what the subject wrote to stderr before it, every time
//! (docs: the last 8 KiB of stderr beside any fault). A subject that
//! printed a traceback and then a malformed line lost it in about one run
//! of three: the fault took the tail before the thread draining stderr had
//! read what was already in the pipe. Each fault path is tried 20 times
//! here, on a `sh` subject (cheap to start), driven in process.

use std::path::Path;
use std::time::{Duration, Instant};

use ctxgate::config::Config;
use ctxgate::model::Message;
use ctxgate::subject::{Fault, FaultKind, ProcessOptions, ProcessSubject, Subject};

const TRACE: &str = "TRACEBACK-LINE-XYZ";

/// The subject's part before each mode's: its hello, then it reads the
/// first request.
const HELLO: &str = r#"read -r hello; printf '%s\n' '{"op":"hello","protocol":1}'; read -r req; "#;

fn options() -> ProcessOptions {
    ProcessOptions {
        timeout: Duration::from_millis(200),
        max_line_bytes: 4096,
        exit_grace: Duration::from_secs(1),
        ..ProcessOptions::default()
    }
}

fn start(script: &str) -> Result<ProcessSubject, Fault> {
    let argv = ["sh", "-c", script].map(String::from).to_vec();
    ProcessSubject::start(argv, options())
}

fn compact(s: &mut ProcessSubject) -> Result<(), Fault> {
    let msgs = [Message::user("hello there")];
    s.compact(&Config::default(), &msgs).map(|_| ())
}

/// The fault of one run of `script` (`HELLO` and a mode): its second
/// request's with `twice`, else its first's.
fn fault_of(script: &str, twice: bool) -> Fault {
    let mut s = start(script).unwrap_or_else(|f| panic!("{script}: no hello: {f}"));
    if twice {
        compact(&mut s).unwrap_or_else(|f| panic!("{script}: the first request: {f}"));
        // The stray line is written by then: it is not taken for an answer.
        std::thread::sleep(Duration::from_millis(100));
    }
    compact(&mut s).expect_err(script)
}

fn assert_kept(what: &str, f: &Fault, kinds: &[FaultKind], run: usize) {
    assert!(kinds.contains(&f.kind), "{what}: {:?}: {f}", f.kind);
    assert!(
        f.stderr.contains(TRACE),
        "{what}, run {run}: the stderr written before the fault is not in it: {:?} ({f})",
        f.stderr
    );
}

/// Every fault path, 20 runs each (in parallel, one thread a path): the
/// line written to stderr before the fault is in every one of them.
#[test]
fn every_fault_holds_the_stderr_written_before_it() {
    let say = format!("printf '{TRACE}\\n' >&2; ");
    let modes: Vec<(&str, String, Vec<FaultKind>)> = vec![
        (
            "a malformed line",
            "printf 'garbage\\n'; cat >/dev/null".into(),
            vec![FaultKind::MalformedLine],
        ),
        (
            "an oversized line",
            "head -c 10000 /dev/zero | tr '\\0' x; echo; cat >/dev/null".into(),
            vec![FaultKind::OversizedLine],
        ),
        (
            "a wrong id",
            r#"printf '%s\n' '{"id":99,"messages":[]}'; cat >/dev/null"#.into(),
            vec![FaultKind::WrongId],
        ),
        (
            "an unknown error kind (the process lives on)",
            r#"printf '%s\n' '{"id":1,"error":{"kind":"weird","message":"m"}}'; cat >/dev/null"#
                .into(),
            vec![FaultKind::UnknownErrorKind],
        ),
        ("a timeout", "sleep 5".into(), vec![FaultKind::Timeout]),
        ("a crash", "exit 3".into(), vec![FaultKind::Crash]),
        (
            "a closed stdout",
            "exec 1>&-; sleep 5".into(),
            vec![FaultKind::ClosedStdout],
        ),
    ];
    let mut runs: Vec<std::thread::JoinHandle<()>> = modes
        .into_iter()
        .map(|(what, action, kinds)| {
            let script = format!("{HELLO}{say}{action}");
            std::thread::spawn(move || {
                for run in 0..20 {
                    assert_kept(what, &fault_of(&script, false), &kinds, run);
                }
            })
        })
        .collect();
    // A line printed unasked, after an answer: taken before the next
    // request is sent (or, if it came late, as that request's answer).
    runs.push(std::thread::spawn(move || {
        let script = format!(
            r#"{HELLO}printf '%s\n' '{{"id":1,"messages":[]}}'; printf '{TRACE}\n' >&2; printf 'stray\n'; cat >/dev/null"#
        );
        let kinds = [FaultKind::UnsolicitedLine, FaultKind::MalformedLine];
        for run in 0..20 {
            assert_kept("an unsolicited line", &fault_of(&script, true), &kinds, run);
        }
    }));
    // A hello that is not one: the start itself fails.
    runs.push(std::thread::spawn(move || {
        let script = format!(
            r#"read -r hello; printf '{TRACE}\n' >&2; printf '%s\n' '{{"op":"hullo","protocol":1}}'; cat >/dev/null"#
        );
        for run in 0..20 {
            let f = start(&script).err().expect("the hello is refused");
            assert_kept("a bad hello", &f, &[FaultKind::Protocol], run);
        }
    }));
    let failed: Vec<_> = runs.into_iter().filter_map(|r| r.join().err()).collect();
    assert!(
        failed.is_empty(),
        "{} fault path(s) lost stderr",
        failed.len()
    );
}

/// A descendant that left the subject's process group and its marker and
/// keeps stderr open (a daemon it started) never ends the pipe: the fault
/// still comes at once, with what was written.
#[test]
fn a_descendant_holding_stderr_open_does_not_hold_up_the_fault() {
    let dir = std::env::temp_dir().join(format!("ctxgate-fault-stderr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (what, action) in [
        ("a malformed line", "printf 'garbage\\n'; cat >/dev/null"),
        ("a crash", "exit 3"),
    ] {
        let pidfile = dir.join(format!("{}.pid", what.replace(' ', "-")));
        let escape = format!(
            "setsid env -u CTXGATE_SUBJECT sh -c 'echo $$ > {}; exec sleep 20' & \
             while [ ! -s {0} ]; do sleep 0.01; done; ",
            shell_words::quote(&pidfile.display().to_string())
        );
        let script = format!("{HELLO}{escape}printf '{TRACE}\\n' >&2; {action}");
        let mut s = start(&script).unwrap();
        let began = Instant::now();
        let f = compact(&mut s).expect_err(what);
        let took = began.elapsed();
        drop(s);
        kill_escaped(&pidfile);
        assert_kept(what, &f, &[FaultKind::MalformedLine, FaultKind::Crash], 0);
        assert!(
            took < Duration::from_secs(1),
            "{what}: the fault took {took:?} (its stderr is held open by a descendant)"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// End the process the test's subject started out of its reach.
fn kill_escaped(pidfile: &Path) {
    let pid: i32 = std::fs::read_to_string(pidfile)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {}", pidfile.display()));
    // SAFETY: kill(2) on the pid of the `sleep` this test's subject started.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}
