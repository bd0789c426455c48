//! No command writes an output over one of its own inputs, or two outputs
//! over each other (the blind audit's F2): each is bad usage (exit 2),
//! found before the run, naming both flags, and the input is left as it
//! was — by name, through a symlink or a hard link. A device stays an
//! output (`--out /dev/stdout`), into a pipe too.

mod common;

use std::fs;
use std::os::unix::fs::symlink;

use common::process::{ctxgate, Out, TempDir};

/// The two shard reports of one seed, `d1.json` and `d2.json` in `tmp`.
fn shards(tmp: &TempDir) -> [String; 2] {
    ["1", "2"].map(|k| {
        let out = tmp.join(&format!("d{k}.json"));
        let shard = format!("{k}/2");
        let run = ctxgate(&[
            "check",
            "--defect",
            "cut-by-message-count",
            "--cases",
            "10",
            "--seed",
            "7",
            "--shard",
            &shard,
            "--report",
            "json",
            "--out",
            &out,
            "--save",
            &tmp.join("save"),
        ]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        out
    })
}

#[track_caller]
fn refused(run: &Out, says: &[&str]) {
    assert_eq!(run.code, 2, "expected exit 2; stderr: {}", run.stderr);
    for s in says {
        run.stderr_has(s);
    }
}

#[test]
fn report_merge_never_writes_over_a_shard_it_reads() {
    let tmp = TempDir::new("own-merge");
    let [d1, d2] = shards(&tmp);
    let before = fs::read(&d1).unwrap();
    symlink(&d1, tmp.join("sym.json")).unwrap();
    fs::hard_link(&d1, tmp.join("hard.json")).unwrap();
    for out in [d1.clone(), tmp.join("sym.json"), tmp.join("hard.json")] {
        let run = ctxgate(&[
            "report", "merge", &d1, &d2, "--report", "json", "--out", &out,
        ]);
        refused(&run, &["--out", "the shard report", &d1, "same file"]);
        assert_eq!(fs::read(&d1).unwrap(), before, "--out {out} changed {d1}");
    }
    let also = format!("junit={d2}");
    let run = ctxgate(&["report", "merge", &d1, &d2, "--also-report", &also]);
    refused(&run, &["--also-report junit=", "the shard report"]);
    assert!(fs::read_to_string(&d2).unwrap().contains("ctxgateVersion"));
    // The outputs apart from the inputs: the merge runs (and finds the defect).
    let merged = tmp.join("merged.json");
    let run = ctxgate(&[
        "report", "merge", &d1, &d2, "--report", "json", "--out", &merged,
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
}

#[test]
fn two_outputs_on_one_file_are_refused() {
    let tmp = TempDir::new("own-two");
    let [d1, d2] = shards(&tmp);
    let x = tmp.join("x.out");
    let also = format!("junit={x}");
    let run = ctxgate(&[
        "report",
        "merge",
        &d1,
        &d2,
        "--out",
        &x,
        "--also-report",
        &also,
    ]);
    refused(
        &run,
        &[
            "--out",
            "--also-report junit=",
            "one would overwrite the other",
        ],
    );
    assert!(!tmp.path().join("x.out").exists(), "nothing is written");
    // One through a symlink to the other, not there yet either.
    symlink(&x, tmp.join("link.out")).unwrap();
    let also = format!("markdown={}", tmp.join("link.out"));
    let run = ctxgate(&[
        "report",
        "merge",
        &d1,
        &d2,
        "--out",
        &x,
        "--also-report",
        &also,
    ]);
    refused(&run, &["one would overwrite the other"]);
}

#[test]
fn check_never_writes_over_its_config_or_gen_config() {
    let tmp = TempDir::new("own-check");
    let cfg = tmp.file("cfg.json", r#"{"contextWindow": 4000}"#);
    let run = ctxgate(&[
        "check", "--cases", "3", "--seed", "1", "--config", &cfg, "--report", "json", "--out", &cfg,
    ]);
    refused(&run, &["--out", "--config", &cfg]);
    assert_eq!(
        fs::read_to_string(&cfg).unwrap(),
        r#"{"contextWindow": 4000}"#
    );
    let gc = tmp.file("gc.json", "{}");
    let also = format!("markdown={gc}");
    let run = ctxgate(&[
        "check",
        "--cases",
        "3",
        "--seed",
        "1",
        "--gen-config",
        &gc,
        "--also-report",
        &also,
    ]);
    refused(&run, &["--also-report markdown=", "--gen-config"]);
    assert_eq!(fs::read_to_string(&gc).unwrap(), "{}");
    // A suite's fixture, through a symlink out of the folder.
    let suite = tmp.path().join("suite");
    fs::create_dir_all(&suite).unwrap();
    let fixture = tmp.file("suite/a.json", "{}");
    symlink(&fixture, tmp.join("fx.json")).unwrap();
    let run = ctxgate(&[
        "check",
        "--cases",
        "3",
        "--with-suite",
        suite.to_str().unwrap(),
        "--out",
        &tmp.join("fx.json"),
    ]);
    refused(&run, &["--out", "--with-suite"]);
    assert_eq!(fs::read_to_string(&fixture).unwrap(), "{}");
}

#[cfg(feature = "calibrate")]
#[test]
fn calibrate_draws_no_plot_into_its_corpus() {
    let tmp = TempDir::new("own-calibrate");
    let history = r#"[{"role": "user", "content": "hello"}]"#;
    let kept = tmp.file("corp/deep/001.json", history);
    let corpus = tmp.join("corp");
    for plot in ["corp/deep/001.json", "corp/new.json"] {
        let plot = tmp.join(plot);
        let run = ctxgate(&[
            "calibrate",
            "--samples",
            "2",
            "--corpus",
            &corpus,
            "--plot",
            &plot,
        ]);
        refused(&run, &["--plot", "--corpus"]);
        assert_eq!(fs::read_to_string(&kept).unwrap(), history);
        assert!(!tmp.path().join("corp/new.json").exists());
    }
    // An SVG beside the histories is not read: drawn.
    let plot = tmp.join("corp/plot.svg");
    let run = ctxgate(&[
        "calibrate",
        "--samples",
        "2",
        "--corpus",
        &corpus,
        "--plot",
        &plot,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(fs::read_to_string(&plot).unwrap().starts_with("<svg"));
}

#[cfg(feature = "agent")]
#[test]
fn agent_writes_no_report_over_its_settings() {
    let tmp = TempDir::new("own-agent");
    let cfg = tmp.file("agent.json", "{}");
    let run = ctxgate(&["agent", "--run", "true", "--config", &cfg, "--out", &cfg]);
    refused(&run, &["--out", "--config"]);
    assert_eq!(fs::read_to_string(&cfg).unwrap(), "{}");
}

/// `--out /dev/stdout` into a pipe (a test's stdout is one): the report
/// is written, not "Invalid argument" from emptying a pipe; and two
/// outputs on stdout are not "the same file".
#[test]
fn dev_stdout_stays_an_output_into_a_pipe() {
    let tmp = TempDir::new("own-stdout");
    let [d1, d2] = shards(&tmp);
    let run = ctxgate(&[
        "report",
        "merge",
        &d1,
        &d2,
        "--report",
        "json",
        "--out",
        "/dev/stdout",
        "--also-report",
        "markdown=/dev/stdout",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains("Invalid argument"), "{}", run.stderr);
    run.stdout_has("\"ctxgateVersion\"");
    run.stdout_has("### ctxgate");
}
