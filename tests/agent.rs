//! `ctxgate agent` (SPEC §9) end to end, on agents written for these tests
//! (tests/agents/): a correct ToolLoop agent holds every invariant in every
//! dialect, streamed and not, at several seeds; each 2026 bug planted in it
//! is caught, confirmed, shrunk, saved, and its fixture fails against the
//! buggy agent and holds against the correct one; a flaky failure is
//! reported flaky; the environment, the processes and hostile requests are
//! handled as the contract says. Each test runs in a network namespace of
//! its own: whatever an agent does, nothing leaves the machine.

mod common;

use common::process::{ctxgate_within, TempDir};
use std::time::Duration;

/// The agent's settings: a 32k window, Express's ceiling, results cut at
/// 16 KiB — compaction is due in most cases.
const SMALL: &str = r#"{"contextWindow": 32000, "threshold": 0.7, "transportMaxBodyBytes": 102400, "toolOutputMaxBytes": 16384}"#;
/// The correct agent's flags for SMALL.
const SMALL_AGENT: &str = "--window 32000 --ceiling 102400 --tool-output-max-bytes 16384";

fn agent_cmd(flags: &str) -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    format!("python3 {dir}/tests/agents/toolloop.py {flags}")
}

/// The JS twin of the test agent (tests/agents/toolloop.mjs, Node, fetch).
fn node_agent_cmd(flags: &str) -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    format!("node {dir}/tests/agents/toolloop.mjs {flags}")
}

struct Run {
    code: i32,
    report: serde_json::Value,
    stderr: String,
}

/// `ctxgate agent` with `args`, the JSON report read.
fn agent(dir: &TempDir, config: &str, cmd: &str, args: &str) -> Run {
    let config = dir.file("config.json", config);
    let save = dir.join("failures");
    let mut all: Vec<&str> = vec![
        "agent", "--config", &config, "--save", &save, "--report", "json",
    ];
    all.extend(common::words(args));
    all.extend(["--run", cmd]);
    let out = ctxgate_within(&all, Duration::from_secs(600));
    let report = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); exit {}; stderr:\n{}",
            out.code, out.stderr
        )
    });
    Run {
        code: out.code,
        report,
        stderr: out.stderr,
    }
}

fn tally(r: &serde_json::Value, inv: &str, what: &str) -> u64 {
    r["tally"][inv][what]
        .as_u64()
        .unwrap_or_else(|| panic!("no tally for {inv}: {r}"))
}

#[test]
fn a_correct_agent_holds_every_invariant_in_every_dialect() {
    if !common::netns::isolated("a_correct_agent_holds_every_invariant_in_every_dialect") {
        return;
    }
    let dir = TempDir::new("agent-correct");
    let (mut compactions, mut summaries, mut parallel) = (0, 0, 0);
    for (seed, dialect, stream) in [
        (1, "openai-chat", ""),
        (2, "openai-chat", "--stream"),
        (3, "openai-responses", ""),
        (4, "openai-responses", "--stream"),
        (5, "anthropic", ""),
        (6, "anthropic", "--stream"),
    ] {
        let cmd = agent_cmd(&format!("{SMALL_AGENT} --dialect {dialect} {stream}"));
        let run = agent(&dir, SMALL, &cmd, &format!("--cases 6 --seed {seed}"));
        let r = &run.report;
        assert_eq!(
            run.code, 0,
            "{dialect} {stream} seed {seed}: {r:#}\n{}",
            run.stderr
        );
        assert_eq!(tally(r, "finishes", "pass"), 6, "{r:#}");
        assert_eq!(r["dialects"], serde_json::json!([dialect]));
        assert_eq!(r["coverage"]["unreadableRequests"], 0);
        compactions += r["coverage"]["compactions"].as_u64().unwrap();
        summaries += r["coverage"]["summaryRequests"].as_u64().unwrap();
        parallel += r["coverage"]["parallelAnswers"].as_u64().unwrap();
    }
    // The shapes the judgements are about were reached, not only passed.
    assert!(compactions > 5, "compactions seen: {compactions}");
    assert!(summaries > 5, "summary requests: {summaries}");
    assert!(parallel > 5, "parallel answers: {parallel}");
}

/// A planted bug, the invariant that must catch it, and the settings and
/// flags under which the correct agent holds the same cases.
struct Planted {
    bug: &'static str,
    caught_by: &'static str,
    config: &'static str,
    flags: &'static str,
}

/// Express's 100 KB in front of an agent configured for a 128k window and
/// no transport ceiling of its own (ADR 0098's production case).
const EXPRESS: &str = r#"{"contextWindow": 128000, "threshold": 0.7, "transportMaxBodyBytes": 102400, "toolOutputMaxBytes": 16384}"#;
const EXPRESS_AGENT: &str = "--window 128000 --ceiling 10000000 --tool-output-max-bytes 16384";

const PLANTED: [Planted; 9] = [
    Planted {
        bug: "no-check-before-results",
        caught_by: "request-under-ceiling",
        config: SMALL,
        flags: SMALL_AGENT,
    },
    Planted {
        bug: "resend-on-413",
        caught_by: "recovers-after-refusal",
        config: EXPRESS,
        flags: EXPRESS_AGENT,
    },
    Planted {
        bug: "summary-over-ceiling",
        caught_by: "request-under-ceiling",
        config: SMALL,
        flags: SMALL_AGENT,
    },
    Planted {
        bug: "drops-system-prompt",
        caught_by: "pinned-kept",
        config: SMALL,
        flags: SMALL_AGENT,
    },
    Planted {
        bug: "cuts-last-results",
        caught_by: "results-delivered",
        config: SMALL,
        flags: SMALL_AGENT,
    },
    Planted {
        bug: "compacts-early",
        caught_by: "no-premature-compaction",
        config: SMALL,
        flags: SMALL_AGENT,
    },
    // Mastra's TokenLimiter (mastra-ai/mastra#24110): the turn just
    // answered left out of every request after it, the same messages sent
    // again — judged, not answered as a retry.
    Planted {
        bug: "drops-current-turn",
        caught_by: "results-delivered",
        config: SMALL,
        flags: SMALL_AGENT,
    },
    // Characters counted as bytes: over the ceiling on a case grown in one
    // multibyte class.
    Planted {
        bug: "chars-not-bytes",
        caught_by: "request-under-ceiling",
        config: SMALL,
        flags: SMALL_AGENT,
    },
    // One byte over: only the ceiling probe lands a request there.
    Planted {
        bug: "off-by-one-ceiling",
        caught_by: "request-under-ceiling",
        config: EXPRESS,
        flags: EXACT_AGENT,
    },
];

/// The correct agent that guards Express's ceiling to the byte, with no
/// margin, its trigger set by the window alone.
const EXACT_AGENT: &str =
    "--window 128000 --ceiling 102400 --tool-output-max-bytes 16384 --exact-ceiling";

#[test]
fn the_ceiling_probe_lands_one_byte_over_and_an_exact_agent_holds() {
    if !common::netns::isolated("the_ceiling_probe_lands_one_byte_over_and_an_exact_agent_holds") {
        return;
    }
    let dir = TempDir::new("agent-ceiling-probe");
    let args = "--cases 6 --seed 3 --shrink-runs 0 --confirm-runs 1";
    let exact = agent(&dir, EXPRESS, &agent_cmd(EXACT_AGENT), args);
    let r = &exact.report;
    assert_eq!(exact.code, 0, "{r:#}\n{}", exact.stderr);
    let probes = &r["ceilingProbes"];
    assert!(probes["cases"].as_u64() >= Some(1), "{probes}");
    assert_eq!(probes["compacted"], probes["cases"], "{probes}");
    assert_eq!(probes["failed"], 0, "{probes}");
    assert!(
        exact.stderr.contains("the agent compacted first"),
        "{}",
        exact.stderr
    );
    // Without probes, the agent one byte off holds these cases; with
    // them, one request is exactly a byte over.
    let buggy = agent_cmd(&format!("{EXACT_AGENT} --bug off-by-one-ceiling"));
    let unprobed = agent(&dir, EXPRESS, &buggy, &format!("{args} --ceiling-probes 0"));
    assert_eq!(unprobed.code, 0, "{:#}", unprobed.report);
    let probed = agent(&dir, EXPRESS, &buggy, args);
    assert_eq!(probed.code, 1, "{:#}", probed.report);
    let detail = probed.report["failures"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("body 102,401 bytes > transportMaxBodyBytes 102,400"),
        "{detail}"
    );
    assert_eq!(probed.report["ceilingProbes"]["failed"], 1);
    // A read tool that numbers every line (opencode's): the lines cost
    // more than their letters, and the probe still lands on the byte.
    let numbered = agent_cmd(&format!(
        "{EXACT_AGENT} --result-format opencode-read --bug off-by-one-ceiling"
    ));
    let probed = agent(
        &dir,
        EXPRESS,
        &numbered,
        "--cases 8 --seed 2 --shrink-runs 0 --confirm-runs 1",
    );
    assert_eq!(probed.code, 1, "{:#}", probed.report);
    let detail = probed.report["failures"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("body 102,401 bytes"), "{detail}");
}

/// An agent that sizes its body in characters, guarding the ceiling to
/// the character: letters grown to one byte over are as many characters
/// as bytes, and it compacts; ideographs are a third as many, and it sends
/// a request one byte over.
#[test]
fn a_probe_grown_in_ideographs_catches_a_size_counted_in_characters() {
    if !common::netns::isolated("a_probe_grown_in_ideographs_catches_a_size_counted_in_characters")
    {
        return;
    }
    let dir = TempDir::new("agent-wide-probe");
    let args = |classes: &str| {
        let gen = dir.file(
            &format!("gen-{}.json", classes.len()),
            format!(r#"{{"contentClasses": [{classes}]}}"#),
        );
        format!("--cases 6 --seed 1 --shrink-runs 0 --confirm-runs 1 --gen-config {gen}")
    };
    let chars = agent_cmd(&format!("{EXACT_AGENT} --bug chars-not-bytes"));
    // English alone: the probes grow letters, and the agent holds them.
    let prose = agent(&dir, EXPRESS, &chars, &args(r#""prose""#));
    let probes = &prose.report["ceilingProbes"];
    assert_eq!(prose.code, 0, "{:#}", prose.report);
    assert!(probes["cases"].as_u64() >= Some(1), "{probes}");
    assert_eq!(probes["wide"], 0, "{probes}");
    assert_eq!(probes["compacted"], probes["cases"], "{probes}");
    // With CJK among the classes, they grow ideographs, and a request is
    // sent one byte over.
    let cjk = args(r#""prose", "cjk""#);
    let wide = agent(&dir, EXPRESS, &chars, &cjk);
    let probes = &wide.report["ceilingProbes"];
    assert_eq!(wide.code, 1, "{:#}", wide.report);
    assert!(probes["wide"].as_u64() >= Some(1), "{probes}");
    assert!(probes["failed"].as_u64() >= Some(1), "{probes}");
    assert!(
        wide.stderr.contains("bytes of CJK; FAILED"),
        "{}",
        wide.stderr
    );
    let cases = wide.report["failingCases"].as_array().unwrap();
    assert!(
        cases.iter().any(|c| c["detail"]
            .as_str()
            .is_some_and(|d| d.contains("body 102,401 bytes"))),
        "{cases:?}"
    );
    // The agent that counts bytes compacts first at every such probe.
    let exact = agent(&dir, EXPRESS, &agent_cmd(EXACT_AGENT), &cjk);
    let probes = &exact.report["ceilingProbes"];
    assert_eq!(exact.code, 0, "{:#}", exact.report);
    assert!(probes["wide"].as_u64() >= Some(1), "{probes}");
    assert_eq!(probes["compacted"], probes["cases"], "{probes}");
}

#[test]
fn each_planted_bug_is_caught_shrunk_and_replayable() {
    if !common::netns::isolated("each_planted_bug_is_caught_shrunk_and_replayable") {
        return;
    }
    std::thread::scope(|s| {
        for p in &PLANTED {
            s.spawn(move || planted_bug_is_caught(p));
        }
    });
}

#[test]
fn the_js_test_agent_holds_in_every_dialect_and_its_planted_bugs_are_caught() {
    if !common::netns::isolated(
        "the_js_test_agent_holds_in_every_dialect_and_its_planted_bugs_are_caught",
    ) {
        return;
    }
    let dir = TempDir::new("agent-node-correct");
    for (seed, dialect, stream) in [
        (7, "openai-chat", "--stream"),
        (8, "openai-responses", ""),
        (9, "anthropic", "--stream"),
    ] {
        let cmd = node_agent_cmd(&format!("{SMALL_AGENT} --dialect {dialect} {stream}"));
        let run = agent(&dir, SMALL, &cmd, &format!("--cases 5 --seed {seed}"));
        assert_eq!(
            run.code, 0,
            "node {dialect}: {:#}\n{}",
            run.report, run.stderr
        );
        assert_eq!(run.report["dialects"], serde_json::json!([dialect]));
    }
    std::thread::scope(|s| {
        for p in PLANTED.iter().filter(|p| {
            matches!(
                p.bug,
                "resend-on-413" | "drops-system-prompt" | "cuts-last-results"
            )
        }) {
            s.spawn(move || planted_bug_is_caught_in(p, node_agent_cmd));
        }
    });
}

fn planted_bug_is_caught(p: &Planted) {
    planted_bug_is_caught_in(p, agent_cmd)
}

fn planted_bug_is_caught_in(p: &Planted, agent_cmd: fn(&str) -> String) {
    let lang = if agent_cmd("").starts_with("node") {
        "node"
    } else {
        "python"
    };
    let dir = TempDir::new(&format!("agent-bug-{lang}-{}", p.bug));
    let buggy = agent_cmd(&format!("{} --bug {}", p.flags, p.bug));
    let run = agent(
        &dir,
        p.config,
        &buggy,
        "--cases 16 --seed 3 --shrink-runs 12",
    );
    let r = &run.report;
    assert_eq!(run.code, 1, "{}: {r:#}\n{}", p.bug, run.stderr);
    let failure = r["failures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["invariant"] == p.caught_by)
        .unwrap_or_else(|| panic!("{}: {} did not fail: {r:#}", p.bug, p.caught_by));
    // Shrunk: never larger than the case it came from.
    let (from, to) = (&failure["shrunk"]["from"], &failure["shrunk"]["to"]);
    assert!(
        to["turns"].as_u64() <= from["turns"].as_u64(),
        "{failure:#}"
    );
    assert!(
        to["resultBytes"].as_u64() <= from["resultBytes"].as_u64(),
        "{failure:#}"
    );
    let fixture = failure["fixture"].as_str().expect("the fixture was saved");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    assert_eq!(saved["op"], "agent");
    assert_eq!(saved["invariants"], serde_json::json!([p.caught_by]));
    // The fixture still fails against the buggy agent, and holds against
    // the correct one.
    let replay = |cmd: &str, expect: &[&str]| {
        let mut args = vec!["agent", "replay", fixture];
        args.extend(expect);
        args.extend(["--run", cmd]);
        ctxgate_within(&args, Duration::from_secs(300))
    };
    let again = replay(&buggy, &["--expect-failures"]);
    assert_eq!(
        again.code,
        0,
        "{}: the fixture no longer fails:\n{}",
        p.bug,
        again.all()
    );
    // The correct agent, told the ceiling it is behind: a fixture of
    // `recovers-after-refusal` then holds though no request is refused.
    let fixed_flags = if p.config == EXPRESS {
        EXPRESS_AGENT.replace("--ceiling 10000000", "--ceiling 102400")
    } else {
        p.flags.to_owned()
    };
    let fixed = replay(&agent_cmd(&fixed_flags), &[]);
    assert_eq!(
        fixed.code,
        0,
        "{}: the correct agent fails the fixture:\n{}",
        p.bug,
        fixed.all()
    );
    fixed.stdout_has("1 held, 0 failed");
    if p.caught_by == "recovers-after-refusal" {
        fixed.stdout_has("recovers-after-refusal not exercised");
    }
}

/// mini-swe-agent's settings: its observation shows 5,000 characters of a
/// long output's head and of its tail.
const PIECES: &str = r#"{"contextWindow": 32000, "threshold": 0.7, "transportMaxBodyBytes": 102400, "toolOutputMaxBytes": 5000}"#;

#[test]
fn results_shown_as_real_agents_tools_show_them_are_delivered() {
    if !common::netns::isolated("results_shown_as_real_agents_tools_show_them_are_delivered") {
        return;
    }
    let dir = TempDir::new("agent-result-formats");
    // opencode's read (numbered lines between tags, long lines cut with a
    // marker) and mini-swe-agent's observation (a JSON document, head and
    // tail of a long output): each is the file, as the model reads it.
    for (seed, config, flags) in [
        (
            3,
            SMALL,
            "--tool-output-max-bytes 16384 --result-format opencode-read --line-max 200",
        ),
        (
            4,
            SMALL,
            "--tool-output-max-bytes 16384 --result-format opencode-read --line-max 200 --dialect anthropic --stream",
        ),
        (
            3,
            PIECES,
            "--tool-output-max-bytes 5000 --result-format json-observation",
        ),
        (
            4,
            PIECES,
            "--tool-output-max-bytes 5000 --result-format json-observation --dialect openai-responses",
        ),
    ] {
        let cmd = agent_cmd(&format!("--window 32000 --ceiling 102400 {flags}"));
        let run = agent(&dir, config, &cmd, &format!("--cases 6 --seed {seed}"));
        let r = &run.report;
        assert_eq!(run.code, 0, "{flags}: {r:#}\n{}", run.stderr);
        assert!(tally(r, "results-delivered", "pass") >= 4, "{flags}: {r:#}");
    }
    // Read so, a cut result is still a cut result.
    let cmd = agent_cmd(
        "--window 32000 --ceiling 102400 --tool-output-max-bytes 5000 --result-format json-observation --bug cuts-last-results",
    );
    let run = agent(
        &dir,
        PIECES,
        &cmd,
        "--cases 4 --seed 3 --shrink-runs 0 --confirm-runs 1",
    );
    assert_eq!(run.code, 1, "{:#}\n{}", run.report, run.stderr);
    assert!(
        tally(&run.report, "results-delivered", "fail") > 0,
        "{:#}",
        run.report
    );
}

/// Images: a megabyte's ceiling and a 128k window, every case with images.
const IMAGES: &str = r#"{"contextWindow": 128000, "threshold": 0.7, "transportMaxBodyBytes": 1048576, "toolOutputMaxBytes": 16384}"#;
const IMAGES_AGENT: &str = "--window 128000 --ceiling 1048576 --tool-output-max-bytes 16384";
const IMAGES_GEN: &str =
    r#"{"imagesPercent": 100, "allowIllFormed": false, "exoticNumbersPercent": 0}"#;

#[test]
fn image_results_are_png_files_the_agents_tool_reads_and_each_way_to_send_one_holds() {
    if !common::netns::isolated(
        "image_results_are_png_files_the_agents_tool_reads_and_each_way_to_send_one_holds",
    ) {
        return;
    }
    let dir = TempDir::new("agent-images");
    let gen = dir.file("gen.json", IMAGES_GEN);
    // The Python agent's tool returns a PNG as an image, in the dialect's
    // own way (a tool_result's image block, a function_call_output's
    // input_image, a user message after Chat Completions' tool messages);
    // the JS agent's reads it as UTF-8 text. Both are legitimate.
    let mut images = 0;
    for (seed, dialect, cmd) in [
        (4, "openai-chat", agent_cmd as fn(&str) -> String),
        (5, "openai-responses", agent_cmd),
        (6, "anthropic", agent_cmd),
        (4, "openai-chat", node_agent_cmd),
    ] {
        let cmd = cmd(&format!("{IMAGES_AGENT} --dialect {dialect}"));
        let args = format!("--cases 4 --seed {seed} --gen-config {gen}");
        let run = agent(&dir, IMAGES, &cmd, &args);
        let c = &run.report["coverage"];
        assert_eq!(run.code, 0, "{cmd}: {:#}\n{}", run.report, run.stderr);
        let read = c["imageResults"].as_u64().unwrap();
        assert!(read > 0, "{cmd}: no case read an image: {c}");
        images += read;
        let how = if cmd.starts_with("node") {
            "imagesAsText"
        } else {
            "imagesAsSent"
        };
        assert_eq!(c[how], read, "{cmd}: {c}");
    }
    assert!(images >= 8, "image results read: {images}");
    // An agent that leaves images out of its body's size sends bodies over
    // the ceiling (openai/codex#41338): caught, shrunk, and its fixture
    // fails against it and holds against the correct agent.
    let buggy = agent_cmd(&format!(
        "{IMAGES_AGENT} --dialect anthropic --bug images-weightless"
    ));
    let run = agent(
        &dir,
        IMAGES,
        &buggy,
        &format!("--cases 6 --seed 4 --gen-config {gen}"),
    );
    assert_eq!(run.code, 1, "{:#}\n{}", run.report, run.stderr);
    assert!(
        tally(&run.report, "request-under-ceiling", "fail") > 0,
        "{:#}",
        run.report
    );
    let failure = run.report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["invariant"] == "request-under-ceiling")
        .expect("request-under-ceiling saved");
    let fixture = failure["fixture"].as_str().unwrap();
    let config = dir.file("images.json", IMAGES);
    let replay = |cmd: &str, expect: &[&str]| {
        let mut all = vec!["agent", "replay", fixture, "--config", &config];
        all.extend(expect);
        all.extend(["--run", cmd]);
        ctxgate_within(&all, Duration::from_secs(300))
    };
    let out = replay(&buggy, &["--expect-failures"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let out = replay(
        &agent_cmd(&format!("{IMAGES_AGENT} --dialect anthropic")),
        &[],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

#[test]
fn a_failure_that_does_not_repeat_is_flaky_not_shrunk() {
    if !common::netns::isolated("a_failure_that_does_not_repeat_is_flaky_not_shrunk") {
        return;
    }
    let dir = TempDir::new("agent-flaky");
    // Dropped on every other run of the agent (counted in a file, not
    // drawn at random: the test's outcome is the same on every run), a
    // failure repeats on one of its three re-runs: flaky, and then nothing
    // is shrunk for it.
    let counter = dir.join("runs.txt");
    let cmd = agent_cmd(&format!(
        "{SMALL_AGENT} --bug flaky-drop --run-counter {counter}"
    ));
    let run = agent(
        &dir,
        SMALL,
        &cmd,
        "--cases 20 --seed 5 --confirm-runs 3 --shrink-runs 4",
    );
    let r = &run.report;
    assert_eq!(run.code, 1, "{r:#}");
    let flaky = r["flaky"].as_array().unwrap();
    let shrunk = r["failures"].as_array().unwrap();
    assert_eq!(
        flaky.len() + shrunk.len(),
        1,
        "pinned-kept is claimed once: {r:#}"
    );
    let f = flaky
        .first()
        .expect("a failure seen on one re-run in three is flaky");
    assert_eq!(f["invariant"], "pinned-kept");
    assert_eq!(f["failedAgain"].as_u64(), Some(1), "{f}");
    assert!(tally(r, "pinned-kept", "fail") > 0, "{r:#}");
}

#[test]
fn the_agent_gets_the_contracts_environment_and_nothing_of_the_users() {
    if !common::netns::isolated("the_agent_gets_the_contracts_environment_and_nothing_of_the_users")
    {
        return;
    }
    let dir = TempDir::new("agent-env");
    let config = dir.file("config.json", SMALL);
    let token = format!("ctxgate-test-sleeper-{}", std::process::id());
    let cmd = agent_cmd(&format!(
        "{SMALL_AGENT} --check-env --spawn-sleeper {token}"
    ));
    let out = common::process::run_within(
        std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args(["agent", "--config", &config, "--cases", "3", "--seed", "1"])
            .args(["--save", &dir.join("failures"), "--run", &cmd])
            .env("AWS_SECRET_ACCESS_KEY", "leak")
            .env("MY_SERVICE_API_KEY", "leak")
            .env("HTTPS_PROXY", "http://192.0.2.1:9")
            .env("OPENAI_API_KEY", "sk-the-users-real-key"),
        Duration::from_secs(300),
    );
    assert_eq!(out.code, 0, "{}", out.all());
    // Every detached process an agent left is gone with its case.
    let alive: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&token))
        .collect();
    assert!(alive.is_empty(), "left running: {alive:?}");
}

#[test]
fn an_agent_with_no_tool_that_reads_a_file_is_bad_usage_until_one_is_named() {
    if !common::netns::isolated(
        "an_agent_with_no_tool_that_reads_a_file_is_bad_usage_until_one_is_named",
    ) {
        return;
    }
    let dir = TempDir::new("agent-unbound");
    let cmd = agent_cmd(&format!("{SMALL_AGENT} --tool-name fetch_document"));
    let run = agent(&dir, SMALL, &cmd, "--cases 3 --seed 1");
    assert_eq!(run.code, 2, "{:#}", run.report);
    let why = run.report["unplayable"].as_str().unwrap();
    assert!(
        why.contains("fetch_document") && why.contains("--tool"),
        "{why}"
    );
    let named = agent(
        &dir,
        SMALL,
        &cmd,
        "--cases 3 --seed 1 --tool fetch_document:path",
    );
    assert_eq!(named.code, 0, "{:#}\n{}", named.report, named.stderr);
}

/// Only model requests count toward the cap that stops a looping agent,
/// as `finishes` counts them: an agent that lists the models 70 times
/// first is played to the end (it was stopped, and told it "exited …
/// none to the model's endpoints"). A flood of other requests meets a cap
/// of its own, and the verdict says ctxgate stopped the agent, at which
/// cap.
#[test]
fn only_model_requests_count_toward_the_loop_cap_and_a_flood_is_told_its_cap() {
    if !common::netns::isolated(
        "only_model_requests_count_toward_the_loop_cap_and_a_flood_is_told_its_cap",
    ) {
        return;
    }
    let dir = TempDir::new("agent-poll");
    let polls = agent(
        &dir,
        SMALL,
        &agent_cmd(&format!("{SMALL_AGENT} --poll 70")),
        "--cases 3 --seed 1",
    );
    let r = &polls.report;
    assert_eq!(polls.code, 0, "{r:#}\n{}", polls.stderr);
    assert_eq!(tally(r, "finishes", "pass"), 3, "{r:#}");
    let flood = agent(
        &dir,
        SMALL,
        &agent_cmd(&format!("{SMALL_AGENT} --poll 1100")),
        "--cases 1 --seed 1 --confirm-runs 1 --shrink-runs 1",
    );
    let r = &flood.report;
    assert_eq!(flood.code, 1, "{r:#}\n{}", flood.stderr);
    let failure = &r["failures"][0];
    assert_eq!(failure["invariant"], "finishes", "{r:#}");
    let detail = failure["detail"].as_str().unwrap();
    assert!(
        detail.contains("the agent was stopped by ctxgate after")
            && detail.contains("the cap on all requests is 1000")
            && !detail.contains("exited"),
        "{detail}"
    );
    let received = failure["received"].as_str().unwrap();
    assert!(
        received.starts_with("stopped by ctxgate after"),
        "{received}"
    );
    // Bodies by the hundred megabytes, to a path nothing judges: stopped
    // at the cap on request bytes (256 MiB here).
    let heavy = agent(
        &dir,
        SMALL,
        &agent_cmd(&format!("{SMALL_AGENT} --post-mib 320")),
        "--cases 1 --seed 1 --confirm-runs 0 --shrink-runs 0",
    );
    let r = &heavy.report;
    assert_eq!(heavy.code, 1, "{r:#}\n{}", heavy.stderr);
    let detail = r["failures"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("bytes of request bodies in 9 request(s): the cap is 268435456"),
        "{detail}"
    );
}

/// A later case's request that advertises no tool reading a file makes
/// that case unjudged and stops the run — named with its case and request
/// — but a failure confirmed, shrunk and saved before it is the run's
/// verdict: exit 1, not bad usage (2, which says nothing was saved).
#[test]
fn an_unplayable_case_after_a_confirmed_failure_leaves_the_failure_the_verdict() {
    if !common::netns::isolated(
        "an_unplayable_case_after_a_confirmed_failure_leaves_the_failure_the_verdict",
    ) {
        return;
    }
    let dir = TempDir::new("agent-switch");
    let cmd = agent_cmd(&format!(
        "{SMALL_AGENT} --bug drops-system-prompt --tool-name-later fetch_document"
    ));
    let run = agent(&dir, SMALL, &cmd, "--cases 3 --seed 1 --shrink-runs 4");
    let r = &run.report;
    assert_eq!(run.code, 1, "{r:#}\n{}", run.stderr);
    let failure = &r["failures"][0];
    assert_eq!(failure["invariant"], "pinned-kept", "{r:#}");
    assert!(failure["fixture"].is_string(), "{r:#}");
    let why = r["unplayable"].as_str().unwrap();
    assert!(
        why.starts_with("case 1: request #0: ") && why.contains("fetch_document"),
        "{why}"
    );
    assert_eq!(r["exitCode"], 1, "{r:#}");
}

#[test]
fn hostile_requests_are_answered_and_the_case_goes_on() {
    if !common::netns::isolated("hostile_requests_are_answered_and_the_case_goes_on") {
        return;
    }
    let dir = TempDir::new("agent-hostile");
    let cmd = format!(
        "python3 {}/tests/agents/hostile.py {SMALL_AGENT}",
        env!("CARGO_MANIFEST_DIR")
    );
    let run = agent(&dir, SMALL, &cmd, "--cases 2 --seed 1");
    let r = &run.report;
    assert_eq!(tally(r, "finishes", "pass"), 2, "{r:#}\n{}", run.stderr);
    assert!(
        r["coverage"]["unreadableRequests"].as_u64().unwrap() >= 8,
        "{r:#}"
    );
    assert_eq!(run.code, 0, "{r:#}");
}

#[test]
fn the_invariants_are_listed_and_bad_flags_are_bad_usage() {
    let out = common::process::ctxgate(&["agent", "--list-invariants"]).ok();
    for name in [
        "request-under-ceiling",
        "request-within-window",
        "recovers-after-refusal",
        "tool-pairing",
        "results-delivered",
        "pinned-kept",
        "order-preserved",
        "no-premature-compaction",
        "finishes",
    ] {
        out.stdout_has(name);
    }
    for (args, says) in [
        (vec!["agent", "--cases", "1"], "name the agent"),
        (
            vec!["agent", "--run", "x", "--gateway", "caddy"],
            "--gateway",
        ),
        (
            vec!["agent", "--run", "x", "--dialect", "gemini"],
            "--dialect",
        ),
        (
            vec!["agent", "--run", "x", "--tool", "read_file"],
            "NAME:ARG",
        ),
        (
            vec!["agent", "--run", "x", "--invariants", "progress"],
            "unknown agent invariant",
        ),
        (
            vec!["agent", "--run", "x", "--summary-match", "("],
            "--summary-match",
        ),
        (
            vec!["agent", "--run", "x", "--env", "NOVALUE"],
            "NAME=VALUE",
        ),
        (vec!["agent", "--run", "'unclosed"], "quote"),
    ] {
        let out = common::process::ctxgate(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.all());
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

/// Processes whose command line holds `token`.
fn alive_with(token: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(token))
        .collect()
}

/// A detached process that forks a successor and exits, over and over,
/// its environment (and ctxgate's marker) cleared: each successor is
/// ctxgate's to find only once re-parented to it. At a run's end none is
/// left (one pass of the sweep that found nothing let one outlive the run
/// in 7 of 24).
#[test]
fn a_detached_process_that_keeps_forking_does_not_outlive_the_run() {
    if !common::netns::isolated("a_detached_process_that_keeps_forking_does_not_outlive_the_run") {
        return;
    }
    let dir = TempDir::new("agent-hopper");
    for run in 0..4 {
        let token = format!("ctxgate-test-hopper-{}-{run}", std::process::id());
        let cmd = agent_cmd(&format!("{SMALL_AGENT} --spawn-hopper {token}"));
        let out = agent(&dir, SMALL, &cmd, "--cases 2 --seed 1 --ceiling-probes 0");
        assert_eq!(out.code, 0, "{:#}\n{}", out.report, out.stderr);
        // Not waited for: what is left at the exit outlives the run.
        let mut seen = vec![];
        for _ in 0..20 {
            seen.extend(alive_with(&token));
            std::thread::sleep(Duration::from_millis(20));
        }
        if !seen.is_empty() {
            for _ in 0..50 {
                // Stop it, for the next tests' sake, then fail.
                let _ = std::process::Command::new("pkill")
                    .args(["-9", "-f", &token])
                    .status();
            }
        }
        assert!(seen.is_empty(), "run {run}: {seen:?}");
    }
}

/// Wait up to ten seconds for no process to hold `token`.
fn none_left(token: &str) -> Vec<String> {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let alive = alive_with(token);
        if alive.is_empty() || std::time::Instant::now() > until {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_signal_to_ctxgate_or_its_parents_death_stops_every_process_it_started() {
    if !common::netns::isolated(
        "a_signal_to_ctxgate_or_its_parents_death_stops_every_process_it_started",
    ) {
        return;
    }
    let dir = TempDir::new("agent-signals");
    let config = dir.file("config.json", SMALL);
    for (signal, through_parent) in [
        ("TERM", false),
        ("INT", false),
        ("HUP", false),
        ("KILL", true),
    ] {
        let token = format!("ctxgate-test-orphan-{}-{signal}", std::process::id());
        // The agent leaves a detached process, then hangs in its case.
        let cmd = agent_cmd(&format!("{SMALL_AGENT} --spawn-sleeper {token} --hang 300"));
        let ctxgate = env!("CARGO_BIN_EXE_ctxgate");
        let argv = [
            "agent", "--config", &config, "--cases", "1", "--seed", "1", "--run", &cmd,
        ];
        // The run's folder is made in the system's temporary folder: here,
        // one of the test's own, to see it removed.
        let tmp = dir.join(&format!("tmp-{signal}"));
        std::fs::create_dir_all(&tmp).unwrap();
        let mut child = if through_parent {
            // A launcher (as python -m ctxgate is) dies by SIGKILL; ctxgate,
            // told to die with its parent, stops everything it started.
            std::process::Command::new("python3")
                .args(["-c", "import os,sys,time; os.spawnve(os.P_NOWAIT, sys.argv[1], sys.argv[1:], dict(os.environ, CTXGATE_DIE_WITH_PARENT='1')); time.sleep(300)"])
                .arg(ctxgate)
                .args(argv)
                .env("TMPDIR", &tmp)
                .spawn()
                .unwrap()
        } else {
            std::process::Command::new(ctxgate)
                .args(argv)
                .env("TMPDIR", &tmp)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let sleeper = |p: &String| p.contains("time.sleep(300)") && !p.contains("spawnve");
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while !alive_with(&token).iter().any(sleeper) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        let before = alive_with(&token);
        assert!(
            before.iter().any(sleeper),
            "the agent did not start its sleeper: {before:?}"
        );
        assert!(
            before.iter().any(|p| p.contains("toolloop.py")),
            "{before:?}"
        );
        std::process::Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        if through_parent {
            // The launcher's death is ctxgate's cue; nothing reaps the
            // launcher but this test.
            let _ = child.wait();
        } else {
            let out = child.wait_with_output().unwrap();
            use std::os::unix::process::ExitStatusExt;
            assert!(
                out.status.signal().is_some() || out.status.code().is_some_and(|c| c > 128),
                "{:?}",
                out.status
            );
            // The agent ctxgate killed is not reported as failing: the run
            // says it was stopped, and by what.
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert!(
                !stdout.contains("FAILED") && !stdout.contains("killed by signal"),
                "SIG{signal}: {stdout}"
            );
            assert!(
                stderr.contains(&format!("stopped by SIG{signal}"))
                    && stderr.contains("gives no verdict"),
                "SIG{signal}: {stderr}"
            );
        }
        let left = none_left(&token);
        assert!(left.is_empty(), "SIG{signal}: left running: {left:?}");
        let folders: Vec<_> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(folders.is_empty(), "SIG{signal}: left behind: {folders:?}");
    }
}

#[test]
fn a_folder_of_both_kinds_of_fixture_plays_each_with_its_own_command() {
    if !common::netns::isolated("a_folder_of_both_kinds_of_fixture_plays_each_with_its_own_command")
    {
        return;
    }
    let dir = TempDir::new("agent-mixed");
    let compactor = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/regressions"
    ))
    .unwrap()
    .flatten()
    .map(|e| e.path())
    .find(|p| p.extension().is_some_and(|x| x == "json"))
    .unwrap();
    std::fs::copy(&compactor, dir.path().join("compactor.json")).unwrap();
    let script = serde_json::json!({"task": "Task: read two files", "final": "done",
        "summaries": [50], "turns": [{"calls": [
            {"id": "call_0_0", "file": "t000-0.txt", "content": "first file\n"},
            {"id": "call_0_1", "file": "t000-1.txt", "content": "second 文件\n"}]}]});
    let fixture = serde_json::json!({"ctxgate": 1, "name": "handmade", "see": "a test",
        "op": "agent", "config": serde_json::from_str::<serde_json::Value>(SMALL).unwrap(),
        "script": script, "invariants": ["results-delivered", "finishes"]});
    dir.file("agent.json", fixture.to_string());
    let replay = common::process::ctxgate(&["replay", dir.dir()]);
    assert_eq!(replay.code, 0, "{}", replay.all());
    replay.stderr_has("an agent fixture: play it with `ctxgate agent replay`");
    let cmd = agent_cmd(SMALL_AGENT);
    let agent = common::process::ctxgate(&["agent", "replay", dir.dir(), "--run", &cmd]);
    assert_eq!(agent.code, 0, "{}", agent.all());
    agent.stdout_has("1 held, 0 failed");
    agent.stderr_has("a compactor fixture: play it with `ctxgate replay`");
}

#[test]
fn what_an_agent_sends_reaches_no_output_raw() {
    if !common::netns::isolated("what_an_agent_sends_reaches_no_output_raw") {
        return;
    }
    let dir = TempDir::new("agent-hostile-text");
    // A tool name with terminal escapes and a newline then a workflow
    // command: the unplayable run names it, escaped, in every form.
    let name = "x\u{1b}[2J\u{7}\n::error title=ok::forged\n##[warning]forged";
    let cmd = shell_words::join([
        "python3".to_string(),
        format!("{}/tests/agents/toolloop.py", env!("CARGO_MANIFEST_DIR")),
        "--tool-name".into(),
        name.into(),
    ]);
    let config = dir.file("config.json", SMALL);
    for form in ["human", "markdown", "junit", "json"] {
        let out = common::process::ctxgate(&[
            "agent", "--config", &config, "--cases", "1", "--seed", "1", "--report", form, "--run",
            &cmd,
        ]);
        assert_eq!(out.code, 2, "{}", out.all());
        for (sink, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            for line in text.split('\n') {
                assert!(
                    !line.trim_start().starts_with("::"),
                    "{form} {sink}: {line:?}"
                );
                assert!(!line.contains("##["), "{form} {sink}: {line:?}");
                assert!(
                    !line.chars().any(|c| c.is_control() && c != '\t'),
                    "{form} {sink}: {line:?}"
                );
            }
        }
        assert!(
            out.stdout.contains("u{1b}") || out.stdout.contains("u001b"),
            "{form}: {}",
            out.stdout
        );
    }
}

/// The Markdown report's replay command is a fenced block, as pasted:
/// escapes and entities are not read inside inline code.
#[test]
fn the_markdown_replay_command_pastes_as_it_is() {
    if !common::netns::isolated("the_markdown_replay_command_pastes_as_it_is") {
        return;
    }
    let dir = TempDir::new("agent-markdown-replay");
    let config = dir.file("config.json", SMALL);
    let inner = agent_cmd(&format!("{SMALL_AGENT} --bug drops-system-prompt"));
    let cmd = format!("sh -c 'cd / && exec {inner}'");
    let out = common::process::ctxgate(&[
        "agent",
        "--config",
        &config,
        "--cases",
        "3",
        "--seed",
        "1",
        "--shrink-runs",
        "0",
        "--save",
        &dir.join("failures"),
        "--report",
        "markdown",
        "--run",
        &cmd,
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    let fenced = out
        .stdout
        .split("```sh\n")
        .nth(1)
        .expect("a fenced replay command");
    let line = fenced.split("\n```").next().unwrap();
    assert!(line.starts_with("ctxgate agent replay "), "{line}");
    assert!(line.contains("cd / && exec python3"), "{line}");
    assert!(!line.contains("&amp;") && !line.contains(r"\\"), "{line}");
}

/// A command that does not start plays nothing: bad usage naming it (exit
/// 2), as `check` says of a subject — not a `finishes` failure confirmed,
/// shrunk and saved as a fixture, and not a fixture "still failing" for
/// `replay --expect-failures`.
#[test]
fn an_agent_that_does_not_start_is_bad_usage_not_a_failure() {
    if !common::netns::isolated("an_agent_that_does_not_start_is_bad_usage_not_a_failure") {
        return;
    }
    let dir = TempDir::new("agent-no-start");
    let config = dir.file("config.json", SMALL);
    let save = dir.join("failures");
    let missing = dir.join("no-such-agent");
    // Not executable: it exists, and exec refuses it.
    let not_executable = dir.file("agent.sh", "#!/bin/sh\nexit 0\n");
    for (cmd, why) in [
        (missing.as_str(), "no-such-agent: No such file"),
        (
            "ctxgate-no-such-agent -p {prompt}",
            "(is it installed, and on PATH?)",
        ),
        (
            "./no/such/agent.sh {prompt}",
            "./no/such/agent.sh: No such file",
        ),
        (not_executable.as_str(), "Permission denied"),
    ] {
        let out = common::process::ctxgate(&[
            "agent", "--config", &config, "--cases", "2", "--save", &save, "--run", cmd,
        ]);
        assert_eq!(out.code, 2, "{cmd}: {}", out.all());
        out.stderr_has("case 0: cannot start ");
        out.stderr_has(why);
        assert!(
            !std::path::Path::new(&save).exists(),
            "{cmd}: a fixture was saved"
        );
    }
    let script = serde_json::json!({"task": "Task: read a file", "final": "done",
        "summaries": [50], "turns": [{"calls": [
            {"id": "call_0_0", "file": "t000-0.txt", "content": "a file\n"}]}]});
    let fixture = serde_json::json!({"ctxgate": 1, "name": "handmade", "see": "a test",
        "op": "agent", "config": serde_json::from_str::<serde_json::Value>(SMALL).unwrap(),
        "script": script, "invariants": ["finishes"]});
    let path = dir.file("finishes.json", fixture.to_string());
    let replay = common::process::ctxgate(&[
        "agent",
        "replay",
        &path,
        "--expect-failures",
        "--run",
        &missing,
    ]);
    assert_eq!(replay.code, 2, "{}", replay.all());
    replay.stdout_has("not played");
}

/// An agent that floods its output: the case folder keeps the first 16
/// MiB of each stream and says how much more there was — the disk is
/// not filled (a Python loop writes 4 GB in six seconds).
#[test]
fn an_agent_that_floods_its_output_does_not_fill_the_disk() {
    if !common::netns::isolated("an_agent_that_floods_its_output_does_not_fill_the_disk") {
        return;
    }
    let dir = TempDir::new("agent-flood");
    let config = dir.file("config.json", SMALL);
    let work = dir.join("work");
    let flood = "import sys\nb = b'x' * (1 << 20)\nfor _ in range(48): sys.stdout.buffer.write(b)\nsys.stdout.buffer.write(b'THE-END')\nsys.exit(3)";
    let cmd = shell_words::join(["python3", "-c", flood]);
    let out = common::process::ctxgate(&[
        "agent",
        "--config",
        &config,
        "--cases",
        "1",
        "--keep-folders",
        "--work-dir",
        &work,
        "--report",
        "json",
        "--run",
        &cmd,
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stdout.contains("THE-END") || out.stderr.contains("exit 3"),
        "{}",
        out.all()
    );
    let mut sizes = Vec::new();
    for case in std::fs::read_dir(&work).unwrap().flatten() {
        let stdout = case.path().join("stdout.txt");
        let text = std::fs::read(&stdout).unwrap();
        sizes.push(text.len());
        assert!(
            text.len() < (17 << 20),
            "{}: {} bytes",
            stdout.display(),
            text.len()
        );
        let end = String::from_utf8_lossy(&text[text.len() - 200..]).into_owned();
        assert!(end.contains("more bytes not kept"), "{end}");
    }
    assert!(!sizes.is_empty());
}

/// A relative `--work-dir` shared by two runs at once: each run's case
/// folders are its own, the task file's path still names the task from
/// the agent's workspace, and every workspace path has the one length the
/// tool calls' sizes are measured with wherever the run is.
#[test]
fn runs_sharing_a_relative_work_dir_each_get_their_own_fixed_length_folders() {
    if !common::netns::isolated(
        "runs_sharing_a_relative_work_dir_each_get_their_own_fixed_length_folders",
    ) {
        return;
    }
    let dir = TempDir::new("agent-workdir");
    let config = dir.file("config.json", SMALL);
    let cmd = agent_cmd(SMALL_AGENT);
    let runs: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let (cwd, config, cmd) = (dir.path().to_owned(), config.clone(), cmd.clone());
            std::thread::spawn(move || {
                let save = format!("failures-{name}");
                let args = [
                    "agent",
                    "--config",
                    &config,
                    "--save",
                    &save,
                    "--cases",
                    "3",
                    "--seed",
                    "2",
                    "--work-dir",
                    "shared",
                    "--keep-folders",
                    "--report",
                    "json",
                    "--run",
                    &cmd,
                ];
                let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgate"));
                run.current_dir(&cwd).args(args);
                common::process::run_within(&mut run, Duration::from_secs(300))
            })
        })
        .collect();
    for run in runs {
        let out = run.join().unwrap();
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    }
    let folders: Vec<_> = std::fs::read_dir(dir.path().join("shared"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(folders.len(), 6, "{folders:?}");
    for folder in &folders {
        let workspace = folder.join("workspace");
        assert!(
            workspace.is_dir() && folder.join("task.txt").is_file(),
            "{folder:?}"
        );
        assert_eq!(
            workspace.as_os_str().len(),
            ctxgate::agent::case::WORKSPACE_PATH_BYTES,
            "{workspace:?}"
        );
    }
}

/// A fixture is text from outside, and each call's `file` is written into
/// the case's workspace: a name that is absolute, climbs out with `..`,
/// names another folder, is empty or holds a NUL is refused when the
/// fixture is read — exit 2, the error naming the fixture file, the field
/// and the problem — and nothing is written (the victim file beside it is
/// untouched, no file appears where the name pointed). No agent runs:
/// `--run true` would be all that ran had the fixture been played.
#[test]
fn a_fixture_whose_file_reaches_outside_the_workspace_is_refused_and_nothing_written() {
    let dir = TempDir::new("agent-fixture-paths");
    let victim = dir.file("victim.txt", "PRECIOUS USER DATA\n");
    let planted = dir.join("planted.txt");
    // `..` enough times to reach `/` from any case folder, then down to
    // the planted file.
    let climb = format!("{}{}", "../".repeat(40), planted.trim_start_matches('/'));
    for (name, file, problem) in [
        ("absolute", victim.as_str(), "is an absolute path"),
        ("absolute-new", planted.as_str(), "is an absolute path"),
        ("dotdot", climb.as_str(), "climbs out of the workspace"),
        ("parent", "..", "climbs out of the workspace"),
        ("empty", "", "the name is empty"),
        ("nul", "a\0b.txt", "holds a NUL"),
        (
            "subfolder",
            "sub/dir/x.txt",
            "names a file in another folder",
        ),
    ] {
        let script = serde_json::json!({"task": "Task: read a file", "final": "done",
            "summaries": [50], "turns": [
                {"calls": [{"id": "call_0_0", "file": "t000-0.txt", "content": "fine\n"}]},
                {"calls": [{"id": "call_1_0", "file": "t001-0.txt", "content": "fine\n"},
                           {"id": "call_1_1", "file": file, "content": "OVERWRITTEN BY FIXTURE\n"}]}]});
        let fixture = serde_json::json!({"ctxgate": 1, "name": name, "op": "agent",
            "script": script});
        let path = dir.file(&format!("{name}.json"), fixture.to_string());
        let out = common::process::ctxgate(&[
            "agent",
            "replay",
            &path,
            "--work-dir",
            &dir.join("work"),
            "--run",
            "true",
        ]);
        assert_eq!(out.code, 2, "{name}: {}", out.all());
        out.stderr_has(&format!("{path}: `script.turns[1].calls[1].file`: "));
        out.stderr_has(problem);
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "PRECIOUS USER DATA\n",
            "{name}: the victim was written"
        );
        assert!(
            !std::path::Path::new(&planted).exists(),
            "{name}: a file was written outside the workspace"
        );
    }
}

/// An agent that never sends ctxgate a request (pointed elsewhere, or
/// hung before its first call) is confirmed, saved unshrunk and the run
/// stops: each case left would wait out its whole deadline, as would each
/// of 40 shrinking runs — hours for a misconfigured agent.
#[test]
fn an_agent_that_sends_nothing_is_not_shrunk_and_stops_the_run() {
    if !common::netns::isolated("an_agent_that_sends_nothing_is_not_shrunk_and_stops_the_run") {
        return;
    }
    let dir = TempDir::new("agent-silent");
    let config = dir.file("config.json", SMALL);
    let save = dir.join("saved");
    let report = dir.join("report.json");
    let out = common::process::ctxgate_within(
        &[
            "agent",
            "--config",
            &config,
            "--cases",
            "5",
            "--seed",
            "1",
            "--timeout",
            "1",
            "--confirm-runs",
            "1",
            "--save",
            &save,
            "--report",
            "json",
            "--out",
            &report,
            "--run",
            "sleep 30",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(out.code, 1, "{}", out.all());
    let all = out.all();
    assert!(
        all.contains("not shrunk: the agent sent ctxgate no request"),
        "{all}"
    );
    assert!(all.contains("kept as it was: "), "{all}");
    assert!(all.contains("the run stops: case 0"), "{all}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["cases"], 1, "{v}");
    assert!(
        v["stoppedEarly"]
            .as_str()
            .unwrap()
            .contains("OPENAI_BASE_URL"),
        "{v}"
    );
    assert_eq!(v["failures"][0]["invariant"], "finishes", "{v}");
    assert_eq!(v["failures"][0]["shrunk"]["runs"], 0, "{v}");
    let saved: Vec<_> = std::fs::read_dir(&save)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let fixture = std::fs::read_to_string(&saved[0]).unwrap();
    assert!(
        fixture.contains("not shrunk: the agent sent no request"),
        "{fixture}"
    );
}
