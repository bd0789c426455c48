//! Hostile subjects, untrusted fixture folders and bad flags (issue 12):
//! ctxgate never hangs, panics, outlives its run, leaves a process behind,
//! or writes outside its save folder. Each test bounds the wall time of
//! the command it runs (a hang fails the test instead of hanging it),
//! checks the exit code, and scans /proc for any process carrying the
//! test's marker.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::process::{run_fed, Out, Stdin, TestDir};

/// The binary under test: this build's, or `CTXGATE_UNDER_TEST` (to show
/// that a test fails against an older build).
fn bin() -> String {
    std::env::var("CTXGATE_UNDER_TEST").unwrap_or_else(|_| env!("CARGO_BIN_EXE_ctxgate").into())
}

/// Run ctxgate with `args` (stdin: the file at `stdin`, or nothing),
/// killing it (and failing) past `limit` seconds.
fn ctxgate(args: &[&str], stdin: Option<&str>, limit: f64) -> Out {
    let stdin = stdin.map_or(Stdin::Null, |path| Stdin::File(path.into()));
    let limit = Duration::from_secs_f64(limit);
    run_fed(Command::new(bin()).args(args), stdin, limit)
}

/// A fresh folder of the test's, removed when the test ends.
fn temp(name: &str) -> TestDir {
    TestDir::new("hostile", name)
}

fn marker(name: &str) -> String {
    format!("ctxgate-hostile-marker-{}-{name}", std::process::id())
}

/// Processes whose command line carries `marker`, waiting up to a second
/// for the dying to go.
fn survivors(marker: &str) -> Vec<u32> {
    let scan = || -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map(|s| {
                        s.rsplit(')')
                            .next()
                            .unwrap_or("")
                            .trim_start()
                            .starts_with('Z')
                    })
                    .unwrap_or(true);
                !zombie && cmd.windows(marker.len()).any(|w| w == marker.as_bytes())
            })
            .collect()
    };
    for _ in 0..50 {
        if scan().is_empty() {
            return vec![];
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    scan()
}

fn hostile(kind: &str, marker: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/subjects/hostile.py");
    format!("python3 {} {kind} {marker}", script.display())
}

/// `check` of the hostile subject `kind`, saving in a folder of its own:
/// the run's output, its JSON report, its marker and its folder (removed
/// when dropped).
fn check_hostile(kind: &str, extra: &str, limit: f64) -> (Out, serde_json::Value, String, TestDir) {
    let dir = temp(kind);
    let m = marker(kind);
    let report = dir.join("report.json");
    let save = dir.join("fixtures");
    let subject = hostile(kind, &m);
    let mut args = vec!["check", "--subject", &subject];
    args.extend(common::words("--seed 3 --jobs 1 --report json"));
    args.extend(["--out", report.to_str().unwrap()]);
    args.extend(["--save", save.to_str().unwrap()]);
    args.extend(common::words(extra));
    let ran = ctxgate(&args, None, limit);
    let json = std::fs::read_to_string(&report)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    (ran, json, m, dir)
}

fn fault_kinds(report: &serde_json::Value) -> Vec<String> {
    report["faults"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| f["kind"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Fails the test unless the run's report lists a fault of `kind`.
#[track_caller]
fn assert_fault(report: &serde_json::Value, kind: &str) {
    assert!(fault_kinds(report).iter().any(|k| k == kind), "{report}");
}

/// `check_hostile`, which must fail (exit 1) with a fault of `fault`
/// listed and leave no process of the run behind; its output and report.
#[track_caller]
fn faulted(kind: &str, extra: &str, limit: f64, fault: &str) -> (Out, serde_json::Value) {
    let (ran, report, m, _dir) = check_hostile(kind, extra, limit);
    assert_eq!(ran.code, 1, "{}\n{}", ran.stdout, ran.stderr);
    assert_fault(&report, fault);
    assert_none_left(&m);
    (ran, report)
}

/// Fails the test if a process of the run marked `marker` is still running.
#[track_caller]
fn assert_none_left(marker: &str) {
    let left = survivors(marker);
    assert!(left.is_empty(), "left running: {left:?}");
}

/// Class 1: a subject that closes its stdout and lives on is a fault
/// ("closed-stdout") within the timeout, killed, and the run goes on.
#[test]
fn a_closed_stdout_is_a_fault_not_a_hang() {
    let (_, report) = faulted(
        "closed-stdout",
        "--cases 3 --timeout 1",
        // 11 to 19 subject starts, each a second's grace and a Python
        // start: 12-23 s measured, on a loaded box too; a hang never ends.
        60.0,
        "closed-stdout",
    );
    assert_eq!(report["cases"], 3, "the run went on");
}

/// Class 2: grandchildren double-forked into their own session, one with
/// its environment emptied, die with the subject, on every restart.
#[test]
fn no_descendant_outlives_the_run() {
    faulted("daemon", "--cases 4 --timeout 5", 60.0, "crash");
}

/// Class 6: a line nobody asked for is a fault of its own, and no
/// invariant is charged for it.
#[test]
fn an_unsolicited_line_is_a_fault_and_charges_no_invariant() {
    let (_, report) = faulted(
        "unsolicited",
        "--cases 5 --timeout 5",
        60.0,
        "unsolicited-line",
    );
    assert_eq!(
        report["failures"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
}

/// Class 6: control characters from a subject never reach the terminal.
#[test]
fn subject_text_cannot_drive_the_terminal() {
    let (ran, _, _, _dir) = check_hostile("escapes", "--cases 3", 60.0);
    for text in [&ran.stdout, &ran.stderr] {
        assert!(
            !text.contains('\u{1b}'),
            "an escape reached the output:\n{text}"
        );
        assert!(!text.contains("\nFAKE: OK"), "a forged line:\n{text}");
    }
    ran.stdout_has("evil\\u{1b}");
}

/// Class 8: an answer that hands the history back byte for byte *and*
/// says `error` is no answer: a `protocol` fault, never a pass (the
/// history handed back is read apart from the line's other fields).
#[test]
fn an_error_beside_a_result_is_a_fault_not_a_pass() {
    let (_, report) = faulted("error-beside", "--cases 3 --timeout 5", 60.0, "protocol");
    let detail = report["faults"][0]["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("an `error` or a result, not both"),
        "{report}"
    );
    assert_eq!(
        report["failures"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
}

/// Class 7: an answer written without its line break is a timeout that
/// says so — how many bytes were written and how they begin — not a
/// bare "no answer".
#[test]
fn a_line_never_ended_is_named_in_the_timeout() {
    let (_, report) = faulted(
        "unended",
        "--cases 1 --timeout 1 --shrink-runs 3",
        60.0,
        "timeout",
    );
    let detail = report["faults"][0]["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("of a line it never ended with \\n") && detail.contains("{\\\"id\\\": "),
        "{report}"
    );
}

/// Class 8: an estimate whose `perMessage` has a figure too many is a
/// `protocol` fault: its figures fit no message, and the per-message
/// floors of the estimate invariants (judged whether or not
/// `estimate-covers-tool-calls` is claimed) would pass unseen.
#[test]
fn a_per_message_list_of_the_wrong_length_is_a_fault() {
    let (_, report) = faulted(
        "per-message-off",
        "--cases 3 --timeout 5 --shrink-runs 20",
        60.0,
        "protocol",
    );
    let detail = report["faults"][0]["detail"].as_str().unwrap_or("");
    assert!(detail.contains("`perMessage` has "), "{report}");
}

/// Class 6: a megabyte of name, version and error message is shown cut,
/// its bytes left out counted, on the terminal and in every report form
/// and fixture: what ctxgate writes does not grow with what a subject
/// says.
#[test]
fn subject_text_is_bounded_in_every_sink() {
    let dir = temp("long-words-reports");
    let junit = dir.join("junit.xml");
    let markdown = dir.join("summary.md");
    let extra = format!(
        "--cases 3 --timeout 10 --also-report junit={} --also-report markdown={}",
        junit.display(),
        markdown.display()
    );
    let (ran, report, m, run_dir) = check_hostile("long-words", &extra, 60.0);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert_none_left(&m);
    let name = report["subject"]["name"].as_str().unwrap_or("");
    assert!(
        name.contains(" bytes left out …] ") && name.ends_with("WTAIL"),
        "{name}"
    );
    let saved: Vec<PathBuf> = std::fs::read_dir(run_dir.join("fixtures"))
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    assert!(!saved.is_empty(), "{report}");
    let report_text = report.to_string();
    let files = [junit, markdown].into_iter().chain(saved).map(|p| {
        (
            p.display().to_string(),
            std::fs::read_to_string(&p).unwrap_or_default(),
        )
    });
    let sinks = [
        ("stdout".to_owned(), ran.stdout.clone()),
        ("stderr".to_owned(), ran.stderr.clone()),
        ("json".to_owned(), report_text),
    ];
    for (sink, text) in sinks.into_iter().chain(files) {
        assert!(!text.is_empty(), "{sink} is empty");
        assert!(text.len() < 200_000, "{sink}: {} bytes", text.len());
    }
}

/// Class 7: --time bounds the whole run, shrinking included, with a
/// subject that hangs on every request: at most --time plus one --timeout
/// (and a little to start and stop).
#[test]
fn time_bounds_the_whole_run() {
    let (ran, _) = faulted("hang", "--cases 1000 --time 3 --timeout 1", 30.0, "timeout");
    assert!(ran.seconds < 3.0 + 1.0 + 2.0, "took {:.1} s", ran.seconds);
}

/// Class 3: numbers in flags are checked before anything runs: exit 2,
/// never a panic; an --out or --save that cannot take the results is
/// known before the first case.
#[test]
fn bad_flags_are_usage_errors_before_any_work() {
    let dir = temp("flags");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let m = marker("flags");
    let hang = hostile("hang", &m);
    let under_file = format!("{}/x", file.display());
    let missing = format!("{}/missing/report.json", dir.display());
    let cases: [&[&str]; 7] = [
        &["check", "--time", "1e20"],
        &["check", "--subject", &hang, "--timeout", "1e300"],
        &["check", "--time", "0"],
        &["check", "--subject", &hang, "--max-line-bytes", "0"],
        &["check", "--subject", &hang, "--out", &missing],
        &["check", "--subject", &hang, "--save", &under_file],
        &["compact", "--max-input-bytes", "0", "x.json"],
    ];
    for args in cases {
        let ran = ctxgate(args, None, 10.0);
        assert_eq!(ran.code, 2, "{args:?}: {}", ran.stderr);
        assert!(
            ran.stderr.starts_with("error: "),
            "{args:?}: {}",
            ran.stderr
        );
        assert!(ran.seconds < 2.0, "{args:?}: {:.1} s", ran.seconds);
    }
    assert_none_left(&m);
}

/// Class 4: every input has a cap, applied while reading, and a device is
/// never read at all: /dev/zero is exit 2 naming the file ("not a regular
/// file", issue 25), within a couple of seconds; serve caps its own
/// request lines and goes on.
#[test]
fn unbounded_input_is_refused_while_reading() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/adr-0098-413.json");
    let example = example.to_str().unwrap();
    let cases: [&[&str]; 5] = [
        &["compact", "/dev/zero"],
        &["estimate", "/dev/zero"],
        &["replay", "/dev/zero"],
        &["compact", "--config", "/dev/zero", example],
        &["estimate", "--envelope", "/dev/zero", example],
    ];
    for args in cases {
        let ran = ctxgate(args, None, 20.0);
        assert_eq!(ran.code, 2, "{args:?}: {}", ran.stderr);
        assert!(ran.stderr.contains("/dev/zero"), "{args:?}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("not a regular file"),
            "{args:?}: {}",
            ran.stderr
        );
        assert!(ran.seconds < 5.0, "{args:?}: {:.1} s", ran.seconds);
    }
    // serve: a 3 MB line of zeros under a 1 MB cap, then a real request.
    let dir = temp("serve");
    let feed = dir.join("feed");
    let mut bytes = vec![0u8; 3_000_000];
    bytes.extend_from_slice(b"\n{\"op\":\"hello\",\"protocol\":1}\n");
    std::fs::write(&feed, bytes).unwrap();
    let ran = ctxgate(
        &["serve", "--max-input-bytes", "1000000"],
        feed.to_str(),
        20.0,
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let answers: Vec<&str> = ran.stdout.lines().collect();
    assert_eq!(answers.len(), 2, "{}", ran.stdout);
    assert!(answers[0].contains("invalid_input") && answers[0].contains("cap"));
    assert!(answers[1].contains("\"op\":\"hello\""));
}

/// Class 1: a fixture folder holding symlinks to itself and a FIFO named
/// x.json: each fixture is replayed once, and the FIFO is never opened.
#[test]
fn replay_survives_loops_and_fifos() {
    let dir = temp("loops");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/regressions/tool-call-arguments-weigh.json");
    std::fs::copy(&fixture, dir.join("one.json")).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink(&dir, dir.join("sub/self")).unwrap();
    std::os::unix::fs::symlink("..", dir.join("sub/up")).unwrap();
    let fifo = dir.join("x.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let ran = ctxgate(&["replay", dir.to_str().unwrap()], None, 20.0);
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    ran.stdout_has("replay: 1 held, 0 failed, 0 skipped");
}

/// The arguments of a `check` that fails and saves one fixture in `save`.
fn saving_check(save: &Path) -> Vec<String> {
    let mut args: Vec<String> = common::words(
        "check --defect premature-compaction --cases 5 --seed 98 --invariants no-premature-compaction --save",
    )
    .into_iter()
    .map(String::from)
    .collect();
    args.push(save.display().to_string());
    args
}

fn run_saving_check(save: &Path) -> Out {
    let args = saving_check(save);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let ran = ctxgate(&args, None, 60.0);
    assert_eq!(ran.code, 1, "{}\n{}", ran.stdout, ran.stderr);
    ran
}

fn names_in(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    names
}

/// Class 5: a symlink planted under a fixture's name in the save folder
/// is neither followed nor replaced: the file it points to is untouched,
/// and the fixture is saved beside it under a fresh name.
#[test]
fn saving_never_follows_a_planted_symlink() {
    let dir = temp("plant");
    let save = dir.join("save");
    let outside = dir.join("outside.txt");
    std::fs::write(&outside, "precious").unwrap();
    run_saving_check(&save);
    let names = names_in(&save);
    assert_eq!(names.len(), 1, "{names:?}");
    // Plant the symlink where the same run will save again.
    let fixture = std::fs::read_to_string(&names[0]).unwrap();
    std::fs::remove_file(&names[0]).unwrap();
    std::os::unix::fs::symlink(&outside, &names[0]).unwrap();
    let ran = run_saving_check(&save);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
    let meta = std::fs::symlink_metadata(&names[0]).unwrap();
    assert!(meta.file_type().is_symlink(), "the symlink was replaced");
    let fresh = PathBuf::from(names[0].display().to_string().replace(".json", "-2.json"));
    assert_eq!(
        names_in(&save),
        [fresh.clone(), names[0].clone()],
        "the fixture beside the symlink, no temporary file left behind"
    );
    assert_eq!(std::fs::read_to_string(&fresh).unwrap(), fixture);
    ran.stdout_has(&format!("replay: ctxgate replay {}", fresh.display()));
}

/// The blind audit's F3: `--save` never overwrites a fixture. Saved again
/// unchanged, a fixture is left as it is (no second copy); edited (a `see`
/// note a user added), the edit survives, the new fixture goes to
/// `<name>-2.json`, and the run says so and replays that one; a third run
/// finds its fixture in `-2` and adds nothing.
#[test]
fn saving_again_never_overwrites_an_edited_fixture() {
    let dir = temp("resave");
    let save = dir.join("save");
    run_saving_check(&save);
    let names = names_in(&save);
    assert_eq!(names.len(), 1, "{names:?}");
    let saved = &names[0];
    let first = std::fs::read_to_string(saved).unwrap();
    let again = run_saving_check(&save);
    assert_eq!(names_in(&save), names, "saved again unchanged: one file");
    assert_eq!(std::fs::read_to_string(saved).unwrap(), first);
    assert!(!again.stderr.contains("other content"), "{}", again.stderr);
    // Edit it, as a user curating a known bug does.
    let mut edited: serde_json::Value = serde_json::from_str(&first).unwrap();
    edited["see"] = "MY CURATED NOTE".into();
    let edited = serde_json::to_string_pretty(&edited).unwrap();
    std::fs::write(saved, &edited).unwrap();
    let ran = run_saving_check(&save);
    assert_eq!(
        std::fs::read_to_string(saved).unwrap(),
        edited,
        "the edit was lost"
    );
    let fresh = PathBuf::from(saved.display().to_string().replace(".json", "-2.json"));
    assert_eq!(names_in(&save), [fresh.clone(), saved.clone()]);
    assert_eq!(std::fs::read_to_string(&fresh).unwrap(), first);
    ran.stdout_has(&format!("replay: ctxgate replay {}", fresh.display()));
    let note = format!(
        "ctxgate: note: {} is there with other content (edited?): left as it is; this fixture saved as {}",
        saved.display(),
        fresh.display()
    );
    assert!(ran.stderr.contains(&note), "{}", ran.stderr);
    // Once more: the fixture is found in `-2`, nothing new is written.
    let third = run_saving_check(&save);
    assert_eq!(names_in(&save), [fresh.clone(), saved.clone()]);
    assert_eq!(std::fs::read_to_string(saved).unwrap(), edited);
    third.stdout_has(&format!("replay: ctxgate replay {}", fresh.display()));
}

/// Class 5: a save folder that stops taking fixtures mid-run loses none
/// silently: each failure says NOT SAVED and why, in every report, and the
/// verdict is still the failure it was.
#[test]
fn a_fixture_that_cannot_be_saved_is_a_loud_error() {
    use ctxgate::check::{run, CheckOptions, Saved};
    use ctxgate::subject::defects::Defect;
    let dir = temp("unsaveable");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let mut subject = Defect::PrematureCompaction.subject();
    let opts = CheckOptions {
        cases: 5,
        seed: 98,
        invariants: ctxgate::oracle::InvariantSet::from_iter([
            ctxgate::oracle::Invariant::NoPrematureCompaction,
        ]),
        save: Some(file.join("fixtures")),
        ..CheckOptions::default()
    };
    let report = run(&mut subject, &opts, &mut |_| {});
    assert!(!report.ok());
    assert!(!report.failures.is_empty());
    for f in &report.failures {
        assert!(
            matches!(&f.saved, Saved::Failed(why) if why.contains("cannot save")),
            "{:?}",
            f.saved
        );
    }
    let human = ctxgate::report::human(&report, &Default::default());
    assert!(human.contains("NOT SAVED: cannot save fixture"), "{human}");
    let json = ctxgate::report::to_json(&report, &Default::default());
    assert!(json["failures"][0]["saveError"]
        .as_str()
        .unwrap()
        .contains("cannot save"));
}

/// Class 11: under `--jobs`, a worker cleaning up its killed subject never
/// takes a sibling's fresh process for a stray. faulty.py `wrong-id` never
/// dies on its own — ctxgate kills it after each wrong id and starts it
/// again — so any `crash` fault here is a sibling killed by mistake.
#[test]
fn restarts_under_jobs_never_kill_a_sibling() {
    let dir = temp("siblings");
    let report = dir.join("report.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/subjects/faulty.py");
    let subject = format!("python3 {} wrong-id", script.display());
    for _ in 0..3 {
        let ran = ctxgate(
            &[
                "check",
                "--subject",
                &subject,
                "--cases",
                "40",
                "--seed",
                "3",
                "--jobs",
                "4",
                "--timeout",
                "5",
                "--report",
                "json",
                "--out",
                report.to_str().unwrap(),
                "--save",
                dir.join("fixtures").to_str().unwrap(),
            ],
            None,
            120.0,
        );
        assert_eq!(ran.code, 1, "{}", ran.stdout);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(fault_kinds(&json), ["wrong-id"], "{}", ran.stdout);
    }
}
