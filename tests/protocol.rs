//! The subject protocol end to end: `ctxgate check --subject '<ctxgate> serve'`
//! runs clean; every defect of the mutation suite, served over the
//! protocol, is caught by `check`; the reference is never flagged at any
//! seed tried; and every fault class is survived — killed, classified,
//! saved, and no child process left behind.

mod common;

use std::path::Path;
use std::process::Command;

use common::process::{Out, TestDir};

use ctxgate::subject::defects::Defect;
use serde_json::Value;

fn ctxgate() -> &'static str {
    env!("CARGO_BIN_EXE_ctxgate")
}

/// A command, killed (and the test failed) after five minutes.
fn run(cmd: &mut Command) -> Out {
    common::process::run_within(cmd, std::time::Duration::from_secs(300))
}

/// A fresh folder of the test's, removed when the test ends.
fn temp_dir(name: &str) -> TestDir {
    TestDir::new("protocol", name)
}

/// Run `ctxgate check` with a JSON report; returns the output and the report.
fn check(subject: &str, extra: &[&str], dir: &Path) -> (Out, Value) {
    let report = dir.join("report.json");
    let out = run(Command::new(ctxgate())
        .args(["check", "--subject", subject, "--report", "json", "--out"])
        .arg(&report)
        .arg("--save")
        .arg(dir.join("fixtures"))
        .args(extra));
    let text = std::fs::read_to_string(&report).unwrap_or_else(|_| {
        panic!(
            "no report; stderr:\n{}\nstdout:\n{}",
            out.stderr, out.stdout
        )
    });
    let report = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "the report is not JSON ({e}); exit {:?}; stderr:\n{}\nstdout:\n{}",
            out.code, out.stderr, out.stdout
        )
    });
    (out, report)
}

fn serve_cmd(extra: &str) -> String {
    format!("{} serve {extra}", shell_words::quote(ctxgate()))
}

#[test]
fn check_runs_the_reference_clean_over_the_protocol() {
    let dir = temp_dir("serve");
    let (out, report) = check(&serve_cmd(""), &["--cases", "150", "--seed", "7"], &dir);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(report["ok"], true);
    assert_eq!(report["cases"], 150);
    assert_eq!(report["subject"]["name"], "ctxgate-reference");
    // Every invariant was checked and passed somewhere.
    for (name, tally) in report["invariants"].as_object().unwrap() {
        assert!(
            tally["pass"].as_u64().unwrap() > 0,
            "{name} never passed: {tally}"
        );
    }
}

#[test]
fn the_reference_is_never_flagged_at_any_seed_tried() {
    let dir = temp_dir("seeds");
    for seed in ["1", "2", "3", "12345", "987654321"] {
        let (out, report) = check(&serve_cmd(""), &["--cases", "60", "--seed", seed], &dir);
        assert_eq!(out.code, 0, "seed {seed}: {report}");
    }
}

#[test]
fn every_defect_is_caught_through_the_protocol() {
    let dir = temp_dir("defects");
    let mut missed = Vec::new();
    for defect in Defect::ALL {
        // Only the defect's own invariants, so that shrinking stays cheap.
        let names: Vec<&str> = defect.caught_by().iter().map(|i| i.name()).collect();
        let (out, report) = check(
            &serve_cmd(&format!("--defect {}", defect.name())),
            &[
                "--cases",
                "150",
                "--seed",
                "98",
                "--shrink-runs",
                "300",
                "--invariants",
                &names.join(","),
            ],
            &dir,
        );
        let failed: Vec<&str> = common::texts(&report["failures"], "invariant");
        let caught = defect
            .caught_by()
            .iter()
            .any(|i| failed.contains(&i.name()));
        if out.code != 1 || !caught {
            missed.push(format!(
                "{}: exit {:?}, failed {failed:?}",
                defect.name(),
                out.code
            ));
        }
        // Each failure was saved as a fixture that replays (and fails) against the defect.
        for f in report["failures"].as_array().unwrap() {
            let saved = f["saved"].as_str().expect("saved");
            assert!(Path::new(saved).exists(), "{saved}");
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}

/// The fault tests: a misbehaving Python subject (tests/subjects/faulty.py).
fn faulty(kind: &str, dir: &Path) -> (Out, Value, Vec<u32>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/subjects/faulty.py");
    let pids = dir.join("pids");
    let cmd = format!(
        "python3 {} {kind} {}",
        shell_words::quote(&script.display().to_string()),
        shell_words::quote(&pids.display().to_string())
    );
    let (out, report) = check(
        &cmd,
        &[
            "--cases",
            "6",
            // Seed 7's six cases include compaction not due, so the one
            // invariant the subject claims is exercised when it survives.
            "--seed",
            "7",
            "--timeout",
            "1",
            "--max-line-bytes",
            "1000000",
        ],
        dir,
    );
    let pids = std::fs::read_to_string(&pids)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.parse().ok())
        .collect();
    (out, report, pids)
}

fn alive(pid: u32) -> bool {
    // A zombie is reaped by its parent (ctxgate, now gone): only a running process counts.
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(2).map(str::to_owned));
    state.is_some_and(|s| s != "Z")
}

#[test]
fn every_fault_class_is_survived_classified_and_saved() {
    let cases = [
        ("crash", "crash"),
        ("hang", "timeout"),
        ("garbage", "malformed-line"),
        ("bad-utf8", "malformed-line"),
        ("oversized", "oversized-line"),
        ("wrong-id", "wrong-id"),
        ("badkind", "unknown-error-kind"),
        ("library", "library-error"),
    ];
    for (kind, fault) in cases {
        let dir = temp_dir(kind);
        let (out, report, pids) = faulty(kind, &dir);
        assert_eq!(out.code, 1, "{kind}: {report}");
        let faults = report["faults"].as_array().unwrap();
        assert!(
            faults.iter().any(|f| f["kind"] == fault),
            "{kind}: expected a {fault} fault, got {faults:?}"
        );
        // The run went on past the fault: all cases ran.
        assert_eq!(report["cases"], 6, "{kind}");
        let f = faults.iter().find(|f| f["kind"] == fault).unwrap();
        let saved = Path::new(f["saved"].as_str().unwrap());
        assert!(saved.exists(), "{kind}: the case is saved");
        // Named for the fault, not after an invariant (none failed).
        let name = saved.file_name().unwrap().to_str().unwrap();
        let hash = name
            .strip_prefix(&format!("fault-{fault}-"))
            .and_then(|rest| rest.strip_suffix(".json"));
        assert!(
            hash.is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit())),
            "{kind}: {name}"
        );
        if kind == "crash" {
            assert!(
                f["stderr"].as_str().unwrap().contains("crashing now"),
                "stderr is captured"
            );
        }
        if kind == "bad-utf8" {
            // Said as bytes, not as a line that holds U+FFFD.
            let detail = f["detail"].as_str().unwrap();
            assert!(
                detail.contains("not valid UTF-8 at byte") && detail.contains(r#"caf\xe9"#),
                "{f}"
            );
            assert!(!detail.contains('\u{fffd}'), "{f}");
        }
        if kind == "library" {
            // It says which exception to raise instead, and what was raised.
            let detail = f["detail"].as_str().unwrap();
            assert!(detail.contains("raise ctxgate.CannotFit"), "{f}");
            assert!(
                detail.ends_with("ValueError: too long (at lib.py:3)"),
                "{f}"
            );
        }
        if kind == "garbage" {
            // A stray print says what to do about it (issue 28 item 5).
            assert!(
                f["detail"]
                    .as_str()
                    .unwrap()
                    .ends_with("a subject must write only protocol lines to stdout; log to stderr"),
                "{f}"
            );
        }
        // Restarted after each kill, and nothing is left running.
        if kind != "badkind" && kind != "library" {
            assert!(
                pids.len() > 1,
                "{kind}: the subject was restarted ({pids:?})"
            );
        }
        for pid in pids {
            assert!(
                !alive(pid),
                "{kind}: subject process {pid} is still running"
            );
        }
    }
}

/// A run that checked nothing never says OK (SPEC §8): each of these
/// subjects would pass a gate that counts only failures.
#[test]
fn a_run_that_checked_nothing_fails_and_says_what_was_not_checked() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/subjects/vacuous.py");
    let cases = [
        ("claims-nothing", "claims none"),
        (
            "refuses",
            "answered invalid_input to compact a well-formed history",
        ),
        (
            "refuses-estimate",
            "answered invalid_input to estimate a well-formed history",
        ),
        (
            "gives-up",
            "was never exercised in 30 case(s): the subject answered cannot_fit (30)",
        ),
    ];
    for (kind, says) in cases {
        let dir = temp_dir(kind);
        let cmd = format!(
            "python3 {} {kind}",
            shell_words::quote(&script.display().to_string())
        );
        let (out, report) = check(&cmd, &["--cases", "30", "--seed", "3"], &dir);
        let stdout = out.stdout;
        assert_eq!(out.code, 1, "{kind}:\n{stdout}");
        assert_eq!(report["ok"], false, "{kind}");
        assert!(
            stdout.contains(says),
            "{kind}: expected {says:?} in\n{stdout}"
        );
        assert!(!stdout.contains("\nOK"), "{kind}: said OK:\n{stdout}");
        // An estimate refused is a finding, not a fault of the protocol.
        assert_eq!(
            report["faults"].as_array().unwrap().len(),
            0,
            "{kind}: {report}"
        );
    }
}

#[test]
fn a_subject_flooding_stderr_neither_blocks_nor_fails() {
    let dir = temp_dir("flood");
    let (out, report, _) = faulty("flood", &dir);
    assert_eq!(out.code, 0, "{report}");
    assert_eq!(report["cases"], 6);
}

#[test]
fn replay_runs_saved_fixtures_and_rejects_broken_ones() {
    let dir = temp_dir("replay");
    let (_, report) = check(
        &serve_cmd("--defect drops-system-prompt"),
        &["--cases", "100", "--seed", "98"],
        &dir,
    );
    let saved = report["failures"][0]["saved"]
        .as_str()
        .expect("a saved failure")
        .to_owned();
    // Against the defect it fails again; against the reference it passes.
    let again = run(Command::new(ctxgate()).args([
        "replay",
        &saved,
        "--subject",
        &serve_cmd("--defect drops-system-prompt"),
    ]));
    assert_eq!(again.code, 1);
    let fixed = run(Command::new(ctxgate()).args(["replay", &saved]));
    assert_eq!(fixed.code, 0, "{}", fixed.stdout);
    // A fixture that no longer parses is an error naming the file, not a skip.
    let broken = dir.join("broken.json");
    std::fs::write(
        &broken,
        r#"{"ctxgate": 1, "messages": [{"role": "robot"}]}"#,
    )
    .unwrap();
    let out = run(Command::new(ctxgate()).arg("replay").arg(&broken));
    assert_eq!(out.code, 2);
    let err = out.stderr;
    assert!(
        err.contains("broken.json") && err.contains("message 0"),
        "{err}"
    );
}

#[test]
fn junit_report_has_one_test_case_per_invariant() {
    let dir = temp_dir("junit");
    let junit = dir.join("junit.xml");
    let out = run(Command::new(ctxgate())
        .args([
            "check",
            "--defect",
            "unbounded-summary",
            "--cases",
            "100",
            "--seed",
            "3",
            "--report",
            "junit",
            "--out",
        ])
        .arg(&junit)
        .arg("--save")
        .arg(dir.join("fx")));
    assert_eq!(out.code, 1);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 15, "{xml}");
    assert!(xml.contains(r#"<testcase name="single-bounded-summary" classname="#));
    assert!(xml.contains("<failure message="));
    // The human summary still went to stdout, with the replay command.
    assert!(out.stdout.contains("replay: ctxgate replay"));
}

/// docs/protocol.md §10's trimmer, as printed there, passes `check`: the
/// guide's example is a correct subject written with stock `json`.
#[test]
fn the_protocol_guide_trimmer_passes_check() {
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/protocol.md"))
            .expect("docs/protocol.md");
    let code = guide
        .split("```python\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("a python block in docs/protocol.md");
    let dir = temp_dir("trimmer");
    let script = dir.join("trimmer.py");
    std::fs::write(&script, code).unwrap();
    let cmd = format!(
        "python3 {}",
        shell_words::quote(&script.display().to_string())
    );
    let (out, report) = check(&cmd, &["--cases", "200", "--seed", "3"], &dir);
    assert_eq!(out.code, 0, "{report}");
    assert_eq!(report["ok"], true);
}

/// A report without what depends on the machine and the run's directory:
/// timings, traffic, and where fixtures went (their names stay; the
/// replay command names the directory).
fn verdict_table(mut report: Value) -> Value {
    let obj = report.as_object_mut().unwrap();
    for k in ["seconds", "casesPerSecond", "protocol", "shard"] {
        obj.remove(k);
    }
    for f in obj["failures"].as_array_mut().unwrap() {
        let saved = f["saved"].as_str().unwrap_or_default();
        let name = Path::new(saved)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        f["saved"] = name.into();
        f.as_object_mut().unwrap().remove("replay");
    }
    report
}

#[test]
fn lanes_and_jobs_change_nothing_but_the_time() {
    // Workers sharing one subject process (--lanes) and several processes
    // (--jobs) give the same verdicts, failures and fixture names as one
    // worker on one process, for a defect and for the reference.
    for defect in [
        Some(Defect::ALL[0]),
        Some(Defect::ALL[Defect::ALL.len() - 1]),
        None,
    ] {
        let serve = match defect {
            Some(d) => serve_cmd(&format!("--defect {}", d.name())),
            None => serve_cmd(""),
        };
        let run = |spread: &[&str], name: &str| {
            let dir = temp_dir(name);
            let mut args = vec!["--cases", "120", "--seed", "5", "--shrink-runs", "200"];
            args.extend_from_slice(spread);
            let (out, report) = check(&serve, &args, &dir);
            (out.code, verdict_table(report))
        };
        let (code1, one) = run(&["--jobs", "1", "--lanes", "1"], "lanes-1");
        let (code2, many) = run(&["--jobs", "2", "--lanes", "3"], "lanes-3");
        assert_eq!(code1, code2, "{defect:?}");
        assert_eq!(one, many, "{defect:?}");
        if defect.is_some() {
            assert_eq!(code1, 1, "the defect is caught: {one}");
        }
    }
}

/// A subject's first hello may take longer than `--timeout` (an interpreter
/// starting on a busy machine): up to 10 s.
#[test]
fn a_slow_first_hello_is_startup_not_a_fault() {
    let dir = temp_dir("slow-hello");
    let subject = format!(
        "sh -c {}",
        shell_words::quote(&format!("sleep 2 && exec {}", serve_cmd("")))
    );
    let (out, report) = check(
        &subject,
        &["--cases", "40", "--seed", "2", "--timeout", "1"],
        &dir,
    );
    assert_eq!(out.code, 0, "{report}");
    assert_eq!(report["faults"].as_array().unwrap().len(), 0, "{report}");
}

/// An `openai` history keeps each call's `arguments` text as written
/// (spaces and all), which the engine format cannot carry: a subject sent
/// it measures the compact form. With the ceiling between the two bodies,
/// the reference held in process but failed `body-under-ceiling` through
/// `ctxgate serve` — a correct compactor failed by the bytes it was never
/// sent. Judged on the history as sent, it holds both ways.
#[test]
fn a_subject_is_judged_on_the_history_it_was_sent() {
    let messages = serde_json::json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "f", "arguments":
                "{      \"path\"  :   \"a.txt\"  ,   \"n\"  :  [1,   2,   3]                        }"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    ]);
    let read = ctxgate::model::openai::read_messages(messages.as_array().unwrap()).unwrap();
    let mut sent = read.clone();
    ctxgate::model::forget_spellings(&mut sent);
    let config = |ceiling: u64| {
        serde_json::json!({"contextWindow": 200000, "threshold": 0.7, "bytesPerToken": 1,
            "wireFormat": "openai", "transportMaxBodyBytes": ceiling})
    };
    let measure = |msgs: &[ctxgate::model::Message]| {
        let c = ctxgate::Config::from_value_ref(&config(102_400)).unwrap();
        ctxgate::body::body_bytes(&c, msgs)
    };
    let (as_read, as_sent) = (measure(&read), measure(&sent));
    assert!(
        as_sent < as_read,
        "the spelling makes the body longer: {as_sent} vs {as_read}"
    );
    let ceiling = (as_sent + as_read) / 2;
    let dir = temp_dir("spellings");
    let fixture = dir.join("spaced.json");
    let doc = serde_json::json!({"ctxgate": 1, "name": "spaced-arguments",
        "see": "openai arguments text the engine form cannot carry", "op": "compact",
        "format": "openai", "config": config(ceiling), "messages": messages,
        "invariants": ["body-under-ceiling", "estimate-covers-tool-calls", "no-premature-compaction"]});
    std::fs::write(&fixture, serde_json::to_vec(&doc).unwrap()).unwrap();
    for subject in [None, Some(serve_cmd(""))] {
        let mut cmd = Command::new(ctxgate());
        cmd.arg("replay").arg(&fixture);
        if let Some(s) = &subject {
            cmd.args(["--subject", s]);
        }
        let out = run(&mut cmd);
        assert!(out.code == 0, "{subject:?}: {}{}", out.stdout, out.stderr);
    }
}

/// A subject that dies at startup leaves its reason on stderr (a
/// traceback, a usage error); the fault shows it every time, not only
/// when the thread that reads stderr happened to be quicker than the exit.
#[test]
fn a_subject_that_exits_at_startup_shows_its_last_words() {
    let subject = format!("{} serve --defect no-such-defect", ctxgate());
    for attempt in 0..12 {
        let out =
            run(Command::new(ctxgate()).args(["check", "--cases", "5", "--subject", &subject]));
        let err = out.stderr;
        assert_eq!(out.code, 1, "{err}");
        assert!(
            err.contains("did not start") && err.contains("unknown defect \"no-such-defect\""),
            "attempt {attempt}: {err}"
        );
    }
}

/// A program that defines a compactor but never serves it exits 0 without
/// a word: the fault says what it most likely lacks.
#[test]
fn a_subject_that_never_serves_is_told_what_it_lacks() {
    let dir = temp_dir("never-serves");
    let script = dir.join("compactor.py");
    std::fs::write(
        &script,
        "def compact(config, messages):\n    return messages\n",
    )
    .unwrap();
    let subject = format!("python3 {}", script.display());
    let out = run(Command::new(ctxgate()).args(["check", "--cases", "3", "--subject", &subject]));
    let err = out.stderr;
    assert_eq!(out.code, 1, "{err}");
    assert!(
        err.contains("before it wrote a line: does the program run the protocol loop"),
        "{err}"
    );
}

/// Requests reach a subject with U+0085, U+2028 and U+2029 written as
/// escapes (`protocol::push_line_safe`), which changes the bytes of the
/// pipe and nothing ctxgate judges: bodies are measured on the history,
/// not on the request line. The reference served over the protocol, on
/// cases rich in those characters, gets the verdicts, the counts and the
/// coverage it gets in process, where no pipe is written.
#[test]
fn escaped_line_separators_change_no_verdict() {
    let dir = temp_dir("separators");
    let gen_config = dir.join("escapes.json");
    std::fs::write(
        &gen_config,
        r#"{"contentClasses": ["escapes", "multilingual", "prose"]}"#,
    )
    .unwrap();
    let gen_config = gen_config.display().to_string();
    let args = [
        "--cases",
        "200",
        "--seed",
        "13",
        "--gen-config",
        &gen_config,
    ];
    let (out, served) = check(&serve_cmd(""), &args, &dir);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let report = dir.join("in-process.json");
    let out = run(Command::new(ctxgate())
        .args(["check", "--report", "json", "--out"])
        .arg(&report)
        .args(args));
    assert_eq!(out.code, 0, "{}", out.stdout);
    let in_process: Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    for key in ["invariants", "coverage", "cases", "ok"] {
        assert_eq!(served[key], in_process[key], "{key}");
    }
    // The cases held the characters escaped (else this checks nothing).
    let cases = run(Command::new(ctxgate()).args([
        "gen",
        "--cases",
        "200",
        "--seed",
        "13",
        "--gen-config",
        &gen_config,
    ]));
    assert!(cases.stdout.contains("\\u2028"), "no U+2028 was drawn");
}

/// A compactor written before images (it calls `content.encode()`) whose
/// hello says nothing of `contentParts` crashes on the cases that hold
/// content parts: each such fault, and the run's summary, name the hello
/// field that opts out and where the protocol says it. Said `false`, it is
/// sent no parts and passes; said `true`, it chose, and no hint is given.
#[test]
fn a_fault_on_content_parts_names_the_field_that_opts_out() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/subjects/text_content.py");
    let subject = |says: &str| {
        format!(
            "python3 {} {says}",
            shell_words::quote(&script.display().to_string())
        )
    };
    let dir = temp_dir("text-content");
    let report = dir.join("report.json");
    let args = ["--cases", "150", "--seed", "4", "--shrink-runs", "50"];
    let out = run(Command::new(ctxgate())
        .args(["check", "--subject", &subject(""), "--also-report"])
        .arg(format!("json={}", report.display()))
        .args(args));
    assert_eq!(out.code, 1, "{}", out.stdout);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let faults = json["faults"].as_array().unwrap();
    assert!(!faults.is_empty(), "{json}");
    let faulted: u64 = faults.iter().map(|f| f["count"].as_u64().unwrap()).sum();
    assert_eq!(
        json["faultedCasesWithContentParts"], faulted,
        "every fault was on a case with parts"
    );
    for f in faults {
        let detail = f["detail"].as_str().unwrap();
        assert!(
            detail.contains("\"contentParts\": false")
                && detail.contains("docs/protocol.md, §5 \"Content parts and images\""),
            "{detail}"
        );
        assert!(f["stderr"]
            .as_str()
            .unwrap()
            .contains("'list' object has no attribute 'encode'"));
    }
    out.stdout_has(&format!(
        "content parts: {faulted} of the {faulted} case(s) the subject faulted on held content parts (images), and its hello does not say `contentParts`"
    ));
    // Said false: no parts are sent, and nothing faults.
    let (out, json) = check(&subject("false"), &args, &dir);
    assert_eq!(out.code, 0, "{json}");
    assert!(json["imageCasesNotSent"].as_u64().unwrap() > 0);
    // Said true: its choice; it faults, and no hint is given.
    let (out, json) = check(&subject("true"), &args, &dir);
    assert_eq!(out.code, 1, "{json}");
    assert!(json.get("faultedCasesWithContentParts").is_none(), "{json}");
    for f in json["faults"].as_array().unwrap() {
        assert!(
            !f["detail"].as_str().unwrap().contains("contentParts"),
            "{f}"
        );
    }
    assert!(!out.stdout.contains("content parts:"));
}
