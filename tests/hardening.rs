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

/// `compare-estimators`, the ADR's estimator against content-only, on a
/// few generated samples and the histories in `corpus`.
fn compare_estimators_on(corpus: &str) -> Vec<&str> {
    let mut args = common::words("compare-estimators --builtin adr-0098 --builtin content-only");
    args.extend(["--corpus", corpus]);
    args.extend(FEW_ESTIMATES);
    args
}

/// Few generated samples and one round: `compare-estimators` in seconds.
const FEW_ESTIMATES: [&str; 6] = ["--samples", "5", "--toolloop", "2", "--rounds", "1"];

#[test]
fn every_folder_reader_skips_loops_fifos_and_devices_by_name() {
    let limit = Duration::from_secs(60);
    // `ctxgate ARGS` succeeds, naming each hostile entry it passed over.
    let reads_past_them = |args: &[&str]| {
        let out = ctxgate_within(args, limit);
        assert_eq!(out.code, 0, "{}", out.all());
        names_every_hostile_entry(&out);
        out
    };
    // check --corpus: it hung on the loop (or the FIFO) before.
    let (folder, _o) = hostile_folder("corpus", "h.json", HISTORY);
    let corpus = folder.join("");
    let out = reads_past_them(&["check", "--corpus", &corpus, "--cases", "20", "--seed", "1"]);
    out.stderr_has("2 real histories");

    // compare-estimators --corpus: it read /dev/zero to 2 GiB.
    reads_past_them(&compare_estimators_on(&corpus));

    // replay and --with-suite: a symlinked fixture replayed without a word.
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("suites/known-bugs/litellm-4931-trim-drops-the-tool-call.json"),
    )
    .unwrap();
    let (suite, _o2) = hostile_folder("suite", "f.json", &fixture);
    let out = reads_past_them(&["replay", &suite.join("")]);
    assert!(out.stdout.matches("ok ").count() == 2, "{}", out.stdout);
    let args = [
        "check",
        "--with-suite",
        &suite.join(""),
        "--cases",
        "20",
        "--seed",
        "1",
    ];
    reads_past_them(&args);

    // A FIFO or device named on the command line is an error, never read.
    for path in [suite.join("fifo.json"), "/dev/zero".to_owned()] {
        let out = ctxgate_within(&["replay", &path], limit);
        assert_eq!(out.code, 2, "{path}: {}", out.all());
        out.stderr_has("not a regular file");
        let out = ctxgate_within(&["estimate", &path], limit);
        assert_eq!(out.code, 2, "{path}: {}", out.all());
        out.stderr_has("not a regular file");
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
    let corpus = dir.join("");
    let cap = ["--max-input-bytes", "1000000"];
    let out = ctxgate(&[&cap[..], &compare_estimators_on(&corpus)].concat());
    assert_eq!(out.code, 2, "{}", out.all());
    out.stderr_has("big.json");
    out.stderr_has("1000000-byte cap");
}

/// `estimate --lines` holds each case line to `--max-input-bytes`, as a
/// `serve` request line is (the blind audit's F7): a line over the cap is
/// refused, naming its line, after reading no more than the cap of it — a
/// line of 2 GB (of NULs, a sparse file: nothing written) took 2.1 GB of
/// memory before — and lines under the cap stream through, whatever the
/// whole input's size.
#[test]
fn estimate_lines_holds_each_line_to_the_input_cap() {
    let dir = TempDir::new("lines-cap");
    let case = format!(
        r#"{{"messages":[{{"role":"user","content":"{}"}}]}}"#,
        "x".repeat(100)
    );
    let small = format!("{case}\n");
    // Twelve small lines, over the cap together: each is one input.
    let ok = dir.file("ok.jsonl", small.repeat(12));
    let cap = ["--max-input-bytes", "1000"];
    let out = ctxgate(&[&cap[..], &["estimate", "--lines", &ok]].concat()).ok();
    assert_eq!(out.stdout.lines().count(), 12, "{}", out.all());
    // A line of exactly the cap is under it, its newline not counted.
    let exact = case.len().to_string();
    let cap = ["--max-input-bytes", exact.as_str()];
    let out = ctxgate(&[&cap[..], &["estimate", "--lines", &ok]].concat()).ok();
    assert_eq!(out.stdout.lines().count(), 12);
    let big = dir.file("big.jsonl", &small);
    let file = std::fs::OpenOptions::new().write(true).open(&big).unwrap();
    file.set_len(small.len() as u64 + (2 << 30)).unwrap();
    let cap = ["--max-input-bytes", "1000000"];
    let out = ctxgate(&[&cap[..], &["estimate", "--lines", &big]].concat());
    assert_eq!(out.code, 2, "{}", out.all());
    out.stderr_has(
        "big.jsonl, line 2: the case is over the 1000000-byte cap on one input (--max-input-bytes)",
    );
    assert_eq!(
        out.stdout.lines().count(),
        1,
        "the line before it is estimated"
    );
    assert!(
        out.max_rss_kib < 256 << 10 && out.seconds < 10.0,
        "peak {} KiB, {} s: the long line was read whole",
        out.max_rss_kib,
        out.seconds
    );
}

/// Three shards of one run, as JSON reports: (path, value).
fn shards(dir: &TempDir) -> Vec<(String, serde_json::Value)> {
    (1..=3)
        .map(|k| {
            let path = dir.join(&format!("shard-{k}.json"));
            let out = ctxgate(&[
                "check",
                "--cases",
                "30",
                "--seed",
                "5",
                "--shard",
                &format!("{k}/3"),
                "--report",
                "json",
                "--out",
                &path,
            ]);
            assert_eq!(out.code, 0, "{}", out.all());
            let v = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            (path, v)
        })
        .collect()
}

fn write(path: &str, v: &serde_json::Value) {
    std::fs::write(path, serde_json::to_string(v).unwrap()).unwrap();
}

#[test]
fn report_merge_checks_every_shard_against_itself_and_the_others() {
    let dir = TempDir::new("merge");
    let good = shards(&dir);
    let paths: Vec<&str> = good.iter().map(|(p, _)| p.as_str()).collect();
    let mut args = vec!["report", "merge"];
    args.extend(&paths);
    let out = ctxgate(&args);
    assert_eq!(out.code, 0, "the control merge: {}", out.all());

    let bad = dir.join("bad.json");
    let merge_with_bad = |v: &serde_json::Value| {
        write(&bad, v);
        let out = ctxgate(&["report", "merge", &bad, paths[1], paths[2]]);
        assert_eq!(out.code, 2, "{}", out.all());
        assert!(
            out.stderr.contains("bad.json"),
            "the shard is named: {}",
            out.stderr
        );
        out.stderr
    };
    let tampered = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good[0].1.clone();
        f(&mut v);
        v
    };
    // Failures counted with none on record.
    let err = merge_with_bad(&tampered(&|v| {
        v["invariants"]["tool-pairing"]["fail"] = 14.into()
    }));
    assert!(
        err.contains("tool-pairing") && err.contains("fail"),
        "{err}"
    );
    // pass > cases; and pass + fail + n/a != cases.
    let err = merge_with_bad(&tampered(&|v| {
        v["invariants"]["progress"]["pass"] = 1000.into()
    }));
    assert!(
        err.contains("invariants.progress") && err.contains("is not `cases`"),
        "{err}"
    );
    let err = merge_with_bad(&tampered(&|v| {
        v["cases"] = (v["cases"].as_u64().unwrap() + 1).into()
    }));
    assert!(err.contains("is not `cases`"), "{err}");
    // A shard that checked one invariant where the others checked all.
    let err = merge_with_bad(&tampered(&|v| {
        let keep = v["invariants"]["tool-pairing"].clone();
        v["invariants"] = serde_json::json!({ "tool-pairing": keep });
    }));
    assert!(err.contains("the same invariants"), "{err}");
    // Counts that add up within a shard but pass 2^64 together.
    let huge = tampered(&|v| {
        let max = u64::MAX;
        v["cases"] = max.into();
        for (_, t) in v["invariants"].as_object_mut().unwrap() {
            *t = serde_json::json!({"pass": max, "fail": 0, "notApplicable": 0, "notApplicableBecause": {}});
        }
    });
    let err = merge_with_bad(&huge);
    assert!(err.contains("passes 2^64"), "{err}");

    // Shards of a hundred million: refused at once, nothing allocated for them.
    let mut a = good[0].1.clone();
    let mut b = good[1].1.clone();
    a["shard"] = "1/100000000".into();
    b["shard"] = "2/100000000".into();
    let (pa, pb) = (dir.join("a.json"), dir.join("b.json"));
    write(&pa, &a);
    write(&pb, &b);
    let out = ctxgate_within(&["report", "merge", &pa, &pb], Duration::from_secs(20));
    assert_eq!(out.code, 2, "{}", out.all());
    out.stderr_has("at most");

    // One shard of three, alone, is not the run.
    let out = ctxgate(&["report", "merge", paths[0]]);
    assert_eq!(out.code, 2, "{}", out.all());
    out.stderr_has("2/3, 3/3 missing");
}

#[test]
fn what_would_fail_at_the_end_is_refused_before_the_first_case() {
    // --save where no file can be made: /proc refuses it whatever access(2)
    // tells root. It ran every case first, then failed to save each.
    let out = ctxgate(&[
        "check",
        "--save",
        "/proc/ctxgate-x",
        "--cases",
        "50",
        "--seed",
        "1",
    ]);
    assert_eq!(out.code, 2, "{}", out.all());
    out.stderr_has("cannot save fixtures there (--save)");
    assert!(
        !out.stdout.contains("cases in"),
        "cases ran first: {}",
        out.stdout
    );
    // A folder that the check made to try is gone again after a clean run.
    let dir = TempDir::new("save");
    let deep = dir.join("a/b/c");
    let out = ctxgate(&["check", "--save", &deep, "--cases", "20", "--seed", "1"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(!dir.path().join("a").exists(), "the probe left its folders");
    // A gen-config is an object: an array was read field by field.
    let gen = dir.join("gen.json");
    std::fs::write(&gen, "[1,2]").unwrap();
    let out = ctxgate(&["check", "--gen-config", &gen, "--cases", "5"]);
    assert_eq!(out.code, 2, "{}", out.all());
    out.stderr_has("expected a JSON object");
}

#[test]
fn the_generators_memory_does_not_grow_with_the_ceiling() {
    let dir = TempDir::new("ceiling");
    let config = dir.join("config.json");
    std::fs::write(&config, r#"{"transportMaxBodyBytes": 1000000000}"#).unwrap();
    let out = ctxgate(&[
        "check", "--config", &config, "--cases", "40", "--time", "5", "--seed", "1",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    // Before: 1.95 GiB and 7–17 s for 5 cases.
    assert!(
        out.max_rss_kib < 512 * 1024,
        "peak RSS {} KiB",
        out.max_rss_kib
    );
    assert!(out.seconds < 15.0, "{} s under --time 5", out.seconds);
    assert!(
        out.stderr.contains("maxAimedBodyBytes"),
        "the bound is said: {}",
        out.stderr
    );
}

#[test]
fn subjects_start_at_once_and_no_more_of_them_than_cases() {
    let dir = TempDir::new("jobs");
    let starts = dir.join("starts");
    let exe = env!("CARGO_BIN_EXE_ctxgate");
    // A subject that takes a second to say hello, and notes each start.
    let subject = format!("sh -c 'echo $$ >> {starts}; sleep 1; exec {exe} serve'");
    let out = ctxgate(&[
        "check",
        "--subject",
        &subject,
        "--jobs",
        "16",
        "--cases",
        "3",
        "--time",
        "3",
        "--seed",
        "1",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    let started = std::fs::read_to_string(&starts).unwrap().lines().count();
    assert_eq!(started, 3, "subjects started for 3 cases");
    // One second of start, not one a job (it took 16.9 s).
    assert!(out.seconds < 8.0, "{} s", out.seconds);
}

#[test]
fn a_subject_that_closes_its_stdout_before_hello_is_reported_then() {
    let out = ctxgate(&[
        "check",
        "--subject",
        "sh -c 'exec >&-; sleep 30'",
        "--cases",
        "3",
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    out.stderr_has("closed its stdout");
    // Reported within the exit grace (1 s), not the 10 s start allowance.
    assert!(out.seconds < 6.0, "{} s", out.seconds);
}

/// A Python subject, written into `dir`: `body` handles each request `r`
/// after the hello (which claims `ops`).
fn python_subject(dir: &TempDir, name: &str, ops: &str, body: &str) -> String {
    let path = dir.join(name);
    let script = format!(
        "import json, sys, time\n\
         for line in sys.stdin:\n    r = json.loads(line)\n    if r['op'] == 'hello':\n        \
         print(json.dumps({{'op': 'hello', 'protocol': 1, 'name': '{name}', 'version': '1', 'ops': {ops}}}), flush=True)\n        \
         continue\n{body}\n"
    );
    std::fs::write(&path, script).unwrap();
    format!("python3 {path}")
}

#[test]
fn the_docs_word_is_kept_a_baseline_fault_is_not_a_fix_and_per_message_has_one_figure_a_message() {
    let dir = TempDir::new("docs");
    // A baseline that answers its hello and then nothing.
    let hang = python_subject(&dir, "hang.py", "['compact']", "    time.sleep(3600)");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/known-bugs");
    let fixtures = TempDir::new("docs-suite");
    for name in [
        "litellm-4931-trim-drops-the-tool-call.json",
        "langchain-33856-summarization-drops-the-system-prompt.json",
    ] {
        std::fs::copy(suite.join(name), fixtures.path().join(name)).unwrap();
    }
    let out = ctxgate(&[
        "check",
        "--baseline",
        &hang,
        "--with-suite",
        &fixtures.join(""),
        "--cases",
        "5",
        "--seed",
        "1",
        "--timeout",
        "1",
        "--report",
        "json",
    ]);
    let v: serde_json::Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.all()));
    let suite = &v["suite"];
    assert_eq!(suite["fixed"], serde_json::json!([]), "{suite}");
    assert_eq!(
        suite["notCompared"].as_array().map(Vec::len),
        Some(2),
        "both fixtures not compared: {suite}"
    );

    // An estimator whose perMessage has one figure too many: check fails
    // it, and compare-estimators now stops on it too (it took it, exit 0).
    let long = python_subject(
        &dir,
        "long.py",
        "['compact', 'estimate']",
        "    per = [len(json.dumps(m)) // 4 for m in r['messages']] + [0]\n    \
         if r['op'] == 'estimate':\n        print(json.dumps({'id': r['id'], 'tokens': sum(per), 'perMessage': per}), flush=True)\n    \
         else:\n        print(json.dumps({'id': r['id'], 'messages': r['messages']}), flush=True)",
    );
    let subject = [
        "compare-estimators",
        "--subject",
        &long,
        "--builtin",
        "adr-0098",
    ];
    let out = ctxgate(&[&subject[..], &FEW_ESTIMATES].concat());
    assert_eq!(out.code, 1, "{}", out.all());
    out.stderr_has("`perMessage` has");
    let out = ctxgate(&["check", "--subject", &long, "--cases", "20", "--seed", "1"]);
    assert_eq!(out.code, 1, "{}", out.all());
    // A protocol fault, as compare-estimators says it (it was a finding
    // of estimate-covers-tool-calls alone, unseen when that was not claimed).
    assert!(out.all().contains("`perMessage` has"), "{}", out.all());
}

/// A failing `check` that a test runs without `--save` saves its fixture
/// under the temp dir (`common::process`'s helpers give it one), never in
/// the checkout's `./ctxgate-failures`: that is the user's folder, and a
/// full `cargo test` used to leave a dozen fixtures in it.
#[test]
fn a_test_run_without_save_keeps_its_fixtures_out_of_the_checkout() {
    let out = ctxgate(&[
        "check",
        "--defect",
        "drops-system-prompt",
        "--cases",
        "20",
        "--seed",
        "7",
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    let saved = out
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: ctxgate replay "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no fixture named:\n{}", out.stdout));
    let aside = common::process::unsaved_fixtures_dir();
    assert!(
        saved.starts_with(aside.to_str().unwrap()) && Path::new(saved).is_file(),
        "saved at {saved}"
    );
    // The run's folder goes with its output.
    let folder = Path::new(saved).parent().unwrap().to_owned();
    drop(out);
    assert!(
        common::process::keep_test_dirs() || !folder.exists(),
        "{} is left behind",
        folder.display()
    );
}
