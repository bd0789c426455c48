//! Issue 25's robustness classes, end to end through the binary: one folder
//! walker for every folder ctxgate reads (item 5), `report merge` checking
//! what it is given (item 6), checks made before the first case and bounds
//! that hold (item 7), and the docs' word kept (item 8). Each test fails on
//! the code before that issue.

mod common;

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use common::process::{ctxgate, ctxgate_within, TempDir};

const HISTORY: &str = r#"[{"role":"system","content":"You are the gate."},
 {"role":"user","content":"Review PR 412"},
 {"role":"assistant","content":"","toolCalls":[{"id":"c1","name":"read_file","arguments":{"path":"a.ts"}}]},
 {"role":"tool","toolCallId":"c1","content":"export const limit = '100kb';"},
 {"role":"assistant","content":"The body limit is Express's default."}]"#;

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// A folder with one good history and every hostile entry: a symlink
/// loop, a FIFO and a device named like histories, a dangling link, and a
/// symlink to a good file elsewhere.
fn hostile_folder(name: &str, good_name: &str, good: &str) -> (TempDir, TempDir) {
    let dir = TempDir::new(name);
    let other = TempDir::new(&format!("{name}-other"));
    std::fs::write(dir.path().join(good_name), good).unwrap();
    std::fs::write(other.path().join(good_name), good).unwrap();
    symlink(".", dir.path().join("l1")).unwrap();
    mkfifo(&dir.path().join("fifo.json"));
    symlink("/dev/zero", dir.path().join("zero.json")).unwrap();
    symlink("missing.json", dir.path().join("dangling.json")).unwrap();
    symlink(other.path().join(good_name), dir.path().join("linked.json")).unwrap();
    (dir, other)
}

fn names_every_hostile_entry(out: &common::process::Out) {
    let err = &out.stderr;
    for (entry, why) in [
        ("l1", "a symlink loop"),
        ("fifo.json", "a FIFO, not a regular file"),
        ("zero.json", "a character device, not a regular file"),
        ("dangling.json", "a symlink to nothing"),
        ("linked.json", "followed the symlink"),
    ] {
        assert!(
            err.lines().any(|l| l.contains(entry) && l.contains(why)),
            "{entry}: expected a line with {why:?}:\n{}",
            out.all()
        );
    }
}

#[test]
fn every_folder_reader_skips_loops_fifos_and_devices_by_name() {
    let limit = Duration::from_secs(60);
    // check --corpus: it hung on the loop (or the FIFO) before.
    let (corpus, _o) = hostile_folder("corpus", "h.json", HISTORY);
    let out = ctxgate_within(
        &[
            "check",
            "--corpus",
            &corpus.join(""),
            "--cases",
            "20",
            "--seed",
            "1",
        ],
        limit,
    );
    assert_eq!(out.code, 0, "{}", out.all());
    names_every_hostile_entry(&out);
    assert!(out.stderr.contains("2 real histories"), "{}", out.stderr);

    // compare-estimators --corpus: it read /dev/zero to 2 GiB.
    let out = ctxgate_within(
        &[
            "compare-estimators",
            "--builtin",
            "adr-0098",
            "--builtin",
            "content-only",
            "--corpus",
            &corpus.join(""),
            "--samples",
            "5",
            "--toolloop",
            "2",
            "--rounds",
            "1",
        ],
        limit,
    );
    assert_eq!(out.code, 0, "{}", out.all());
    names_every_hostile_entry(&out);

    // replay and --with-suite: a symlinked fixture replayed without a word.
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("suites/known-bugs/litellm-4931-trim-drops-the-tool-call.json"),
    )
    .unwrap();
    let (suite, _o2) = hostile_folder("suite", "f.json", &fixture);
    let out = ctxgate_within(&["replay", &suite.join("")], limit);
    assert_eq!(out.code, 0, "{}", out.all());
    names_every_hostile_entry(&out);
    assert!(out.stdout.matches("ok ").count() == 2, "{}", out.stdout);
    let out = ctxgate_within(
        &[
            "check",
            "--with-suite",
            &suite.join(""),
            "--cases",
            "20",
            "--seed",
            "1",
        ],
        limit,
    );
    assert_eq!(out.code, 0, "{}", out.all());
    names_every_hostile_entry(&out);

    // A FIFO or device named on the command line is an error, never read.
    for path in [suite.join("fifo.json"), "/dev/zero".to_owned()] {
        let out = ctxgate_within(&["replay", &path], limit);
        assert_eq!(out.code, 2, "{path}: {}", out.all());
        assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
        let out = ctxgate_within(&["estimate", &path], limit);
        assert_eq!(out.code, 2, "{path}: {}", out.all());
        assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
    }
}

#[test]
fn compare_estimators_reads_its_corpus_under_the_input_cap() {
    let dir = TempDir::new("cap");
    let big = format!(
        r#"[{{"role":"user","content":"{}"}}]"#,
        "x".repeat(3_000_000)
    );
    std::fs::write(dir.path().join("big.json"), big).unwrap();
    let out = ctxgate(&[
        "--max-input-bytes",
        "1000000",
        "compare-estimators",
        "--builtin",
        "adr-0098",
        "--builtin",
        "content-only",
        "--corpus",
        &dir.join(""),
        "--samples",
        "5",
        "--toolloop",
        "2",
        "--rounds",
        "1",
    ]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stderr.contains("big.json"), "{}", out.stderr);
    assert!(out.stderr.contains("1000000-byte cap"), "{}", out.stderr);
}
