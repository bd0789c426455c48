//! The GitHub Action's shell steps, run as GitHub runs them, with hostile
//! inputs (issue 25, item 2): `tests/action/emulate.py` substitutes every
//! `${{ expression }}` as GitHub does, runs each `run:` with `bash -eo
//! pipefail` and stub `cargo`/`ctxgate` binaries, and fails when an input
//! ran as code, reached ctxgate as anything but one literal argument, or
//! printed a workflow command of its own. The emulator is shown to catch
//! the injection it exists for: a copy of action.yml with one expression
//! inside a `run:` fails it.
//!
//! Issue 29: how the action gets its binary (`scripts/ctxgate-fetch.sh`: a
//! release's, only when its sha256 matches SHA256SUMS; a cache key that is a
//! hash of the action's code), and `scripts/check-release-files.py`: the
//! release workflow and action.yml parse and every input is documented.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::process::{run_within, Out, TempDir};

fn emulate(action: &Path) -> (i32, String) {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .arg(Path::new(root).join("tests/action/emulate.py"))
        .arg(action)
        .arg(root)
        .output()
        .expect("python3 runs (with PyYAML: pip install pyyaml)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains("No module named 'yaml'"),
        "the action's emulator needs PyYAML: pip install pyyaml\n{text}"
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn every_input_reaches_the_actions_scripts_as_data_never_as_code() {
    let action = Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml");
    let (code, text) = emulate(&action);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("nothing ran as code"), "{text}");
    assert!(
        text.contains("artifact-name") && text.contains("subject"),
        "{text}"
    );
}

#[test]
fn the_emulator_catches_an_expression_pasted_into_a_script() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let yml = std::fs::read_to_string(root.join("action.yml")).unwrap();
    let anchor = "      run: |\n";
    let at = yml.rfind(anchor).expect("a multi-line run: step") + anchor.len();
    let vulnerable = format!(
        "{}        echo \"the ${{{{ inputs.artifact-name }}}} artifact\"\n{}",
        &yml[..at],
        &yml[at..]
    );
    let dir = TempDir::new("action-test");
    let path = dir.file("action.yml", vulnerable);
    let (code, text) = emulate(Path::new(&path));
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("is pasted into the script"), "{text}");
    assert!(
        text.contains("an input ran as shell code: created inputs.artifact-name"),
        "{text}"
    );
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `scripts/ctxgate-fetch.sh CMD` with these settings (and a clean
/// GITHUB_OUTPUT): its result and what it wrote to GITHUB_OUTPUT.
fn fetch(cmd: &str, action_path: &Path, env: &[(&str, &str)], dir: &TempDir) -> (Out, String) {
    let output = dir.path().join(format!("github-output-{cmd}"));
    let _ = std::fs::remove_file(&output);
    let mut c = Command::new("bash");
    c.arg(action_path.join("scripts/ctxgate-fetch.sh"))
        .arg(cmd)
        .env("GITHUB_ACTION_PATH", action_path)
        .env("GITHUB_OUTPUT", &output)
        .env("RUNNER_OS", "Linux")
        .env("RUNNER_ARCH", "X64")
        .env_remove("CTXGATE_ACTION_REF")
        .env_remove("CTXGATE_RELEASES_URL");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = run_within(&mut c, Duration::from_secs(60));
    let written = std::fs::read_to_string(&output).unwrap_or_default();
    (out, written)
}

fn sh(dir: &Path, script: &str) {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "{script}");
}

#[test]
fn the_release_binary_is_installed_only_when_its_sha256_matches_the_releases() {
    let dir = TempDir::new("action-download");
    let release = dir.path().join("releases/v9.8.7");
    let name = "ctxgate-v9.8.7-x86_64-unknown-linux-gnu";
    std::fs::create_dir_all(release.join(name)).unwrap();
    std::fs::write(
        release.join(name).join("ctxgate"),
        "#!/bin/sh\necho 'ctxgate 9.8.7 (the release)'\n",
    )
    .unwrap();
    sh(
        &release,
        &format!("chmod +x {name}/ctxgate && tar -czf {name}.tar.gz {name} && rm -r {name} && sha256sum {name}.tar.gz > SHA256SUMS"),
    );
    let url = format!("file://{}", dir.join("releases"));
    let asset = format!("{name}.tar.gz");
    // The script's temp folder goes wherever TMPDIR says: it must be empty
    // again after every download, verified, refused or unreachable.
    let tmpdir = dir.join("tmp");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let run = |tag: &str, into: &str| {
        let root_dir = dir.join(into);
        let env = [
            ("CTXGATE_RELEASES_URL", url.as_str()),
            ("CTXGATE_TAG", tag),
            ("CTXGATE_ASSET", asset.as_str()),
            ("CTXGATE_ROOT", root_dir.as_str()),
            ("TMPDIR", tmpdir.as_str()),
        ];
        let (out, written) = fetch("download", root(), &env, &dir);
        let installed = Path::new(&root_dir).join("bin/ctxgate").exists();
        let left: Vec<_> = std::fs::read_dir(&tmpdir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(
            left.is_empty(),
            "the download left {left:?} behind\n{}",
            out.all()
        );
        (out, written, installed)
    };

    let (out, written, installed) = run("v9.8.7", "good");
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        written.contains("got=true") && installed,
        "{written}\n{}",
        out.all()
    );
    assert!(
        out.stdout.contains("ctxgate 9.8.7 (the release)"),
        "{}",
        out.all()
    );

    // A release that cannot be reached: build from source instead.
    let (out, written, installed) = run("v9.8.8", "missing");
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(written.contains("got=false") && !installed, "{written}");
    assert!(out.stdout.contains("building from source"), "{}", out.all());

    // A checksum that does not match: fail, install nothing.
    let sums = release.join("SHA256SUMS");
    std::fs::write(&sums, format!("{}  {asset}\n", "0".repeat(64))).unwrap();
    let (out, written, installed) = run("v9.8.7", "tampered");
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(!installed && !written.contains("got=true"), "{written}");
    assert!(
        out.stdout.contains("::error title=ctxgate::") && out.stdout.contains("not running it"),
        "{}",
        out.all()
    );

    // An asset SHA256SUMS does not list: fail too.
    std::fs::write(&sums, format!("{}  other.tar.gz\n", "0".repeat(64))).unwrap();
    let (out, _, installed) = run("v9.8.7", "unlisted");
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        !installed && out.stdout.contains("is not listed"),
        "{}",
        out.all()
    );

    // A tag or an asset name that `plan` could not have written is not
    // used in a URL: build from source.
    let (out, written, _) = run("v9.8.7/../../x", "odd");
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(written.contains("got=false"), "{written}");
}

#[test]
fn the_cache_key_hashes_the_actions_code_and_a_version_tag_picks_its_release() {
    let dir = TempDir::new("action-plan");
    let action = dir.path().join("action");
    std::fs::create_dir_all(action.join("scripts")).unwrap();
    std::fs::create_dir_all(action.join("src")).unwrap();
    std::fs::copy(
        root().join("scripts/ctxgate-fetch.sh"),
        action.join("scripts/ctxgate-fetch.sh"),
    )
    .unwrap();
    std::fs::write(action.join("action.yml"), "name: x\n").unwrap();
    std::fs::write(
        action.join("Cargo.toml"),
        "[package]\nname = \"ctxgate\"\nversion = \"9.8.7\"\n",
    )
    .unwrap();
    std::fs::write(action.join("src/lib.rs"), "// one\n").unwrap();
    let plan = |env: &[(&str, &str)]| {
        let (out, written) = fetch("plan", &action, env, &dir);
        assert_eq!(out.code, 0, "{}", out.all());
        let field = |k: &str| {
            written
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{k}=")))
                .unwrap_or_else(|| panic!("no {k}= in {written}"))
                .to_string()
        };
        (field("key"), field("tag"), field("asset"))
    };

    let (key, tag, asset) = plan(&[("CTXGATE_ACTION_REF", "v9")]);
    assert_eq!(tag, "v9.8.7", "a moving major tag: the version in the code");
    assert_eq!(asset, "ctxgate-v9.8.7-x86_64-unknown-linux-gnu.tar.gz");
    assert!(
        key.starts_with("ctxgate-Linux-X64-") && key.len() > 60,
        "{key}"
    );
    assert_eq!(plan(&[("CTXGATE_ACTION_REF", "v9.8")]).1, "v9.8.7");
    assert_eq!(plan(&[("CTXGATE_ACTION_REF", "v9.8.6")]).1, "v9.8.6");

    // A branch, another line's tag, an empty ref (actions/runner#2473) or a
    // runner with no release binary: build from source. The key is the
    // code's, whatever the ref is called.
    let (main_key, main_tag, _) = plan(&[("CTXGATE_ACTION_REF", "main")]);
    assert_eq!((main_key.as_str(), main_tag.as_str()), (key.as_str(), ""));
    assert_eq!(plan(&[("CTXGATE_ACTION_REF", "v8")]).1, "");
    assert_eq!(plan(&[]).1, "");
    assert_eq!(
        plan(&[("CTXGATE_ACTION_REF", "v9"), ("RUNNER_OS", "FreeBSD")]).1,
        ""
    );

    // Changed code is a new key.
    std::fs::write(action.join("src/lib.rs"), "// two\n").unwrap();
    assert_ne!(plan(&[("CTXGATE_ACTION_REF", "v9")]).0, key);
}

fn check_release_files(at: &Path) -> Out {
    let script = root().join("scripts/check-release-files.py");
    let out = run_within(
        Command::new("python3").arg(script).arg(at),
        Duration::from_secs(60),
    );
    assert!(
        !out.all().contains("No module named 'yaml'"),
        "scripts/check-release-files.py needs PyYAML: pip install pyyaml"
    );
    out
}

#[test]
fn the_release_workflow_and_the_action_parse_and_every_input_is_documented() {
    let out = check_release_files(root());
    assert_eq!(out.code, 0, "{}", out.all());
    for input in common::words("cases invariants gen-config timeout wire-formats") {
        assert!(out.stdout.contains(input), "{}", out.all());
    }
}

#[test]
fn the_release_check_catches_an_undocumented_input_a_publish_and_a_placeholder() {
    let dir = TempDir::new("release-files");
    let files = [
        "action.yml",
        "docs/ci.md",
        "Cargo.toml",
        "README.md",
        ".github/workflows/release.yml",
        "scripts/ctxgate-fetch.sh",
    ];
    for f in files {
        let to = dir.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root().join(f), &to).unwrap();
    }
    let edit = |f: &str, from: &str, to: &str| {
        let path = dir.path().join(f);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{f} has no {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    };
    edit(
        "action.yml",
        "\ninputs:\n",
        "\ninputs:\n  shiny:\n    description: 'New.'\n    default: ''\n",
    );
    edit(
        ".github/workflows/release.yml",
        "          sha256sum -- * > SHA256SUMS\n",
        "          sha256sum -- * > SHA256SUMS\n          cargo publish\n",
    );
    edit(
        "README.md",
        "cargo test\n",
        "cargo test\n# uses: OWNER/ctxgate@v1\n",
    );
    let out = check_release_files(dir.path());
    assert_eq!(out.code, 1, "{}", out.all());
    for finding in [
        "input 'shiny' of action.yml has no row in the inputs table",
        "input 'shiny' reaches no step's env:",
        "publishes to a registry: cargo publish",
        "a placeholder OWNER/ is left",
    ] {
        assert!(out.stdout.contains(finding), "{finding}\n{}", out.all());
    }
}

/// Issue 44: three gate runs into one output folder, as three uses of the
/// action in one job do (`CTXGATE_OUT` is the runner's temp folder). Each
/// run's artifact folder, step summary and outputs hold only what that run
/// wrote; a file of the user's in the folder is never removed.
#[test]
fn gate_runs_sharing_an_output_folder_each_own_their_outputs_only() {
    let dir = TempDir::new("gate-shared-out");
    let out = dir.path().join("out");
    let summary = dir.path().join("summary.md");
    let bin = env!("CARGO_BIN_EXE_ctxgate");
    // The user's own files in the folder the gate shares.
    std::fs::create_dir_all(out.join("fixtures")).unwrap();
    std::fs::write(out.join("notes.txt"), "mine\n").unwrap();
    std::fs::write(out.join("fixtures/mine.json"), "{}\n").unwrap();
    let gate = |n: u32, subject: &str, extra: &[(&str, &str)]| {
        let output = dir.path().join(format!("github-output-{n}"));
        let mut c = Command::new("bash");
        c.arg(root().join("scripts/ctxgate-gate.sh"))
            .env("CTXGATE", bin)
            .env("CTXGATE_SUBJECT", subject)
            .env("CTXGATE_OUT", &out)
            .env("CTXGATE_CASES", "60")
            .env("CTXGATE_TIME", "60")
            .env("CTXGATE_SEED", "44")
            .env("CTXGATE_JOBS", "1")
            .env("CTXGATE_DEFER_EXIT", "1")
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("GITHUB_OUTPUT", &output);
        for k in [
            "CTXGATE_BASELINE",
            "CTXGATE_CONFIG",
            "CTXGATE_SUITE",
            "GITHUB_RUN_ID",
        ] {
            c.env_remove(k);
        }
        for (k, v) in extra {
            c.env(k, v);
        }
        let run = run_within(&mut c, Duration::from_secs(300));
        assert_eq!(run.code, 0, "CTXGATE_DEFER_EXIT=1 exits 0\n{}", run.all());
        let outputs = std::fs::read_to_string(&output).unwrap_or_default();
        (run, outputs)
    };
    let fixtures = || {
        let mut v: Vec<String> = std::fs::read_dir(out.join("fixtures"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let summary_text = || std::fs::read_to_string(&summary).unwrap_or_default();
    let quoted = shell_words::quote(bin).into_owned();

    // Run 1 fails: a defect, its fixtures saved.
    let (run, outputs) = gate(
        1,
        &format!("{quoted} serve --defect drops-system-prompt"),
        &[],
    );
    assert!(outputs.contains("exit-code=1"), "{outputs}\n{}", run.all());
    let after_1 = fixtures();
    assert!(
        after_1.iter().any(|f| f.starts_with("pinned-kept-")),
        "{after_1:?}\n{}",
        run.all()
    );
    let summary_1 = summary_text();
    assert!(summary_1.contains("pinned-kept"), "{summary_1}");

    // Run 2 passes: its artifact folder holds none of run 1's fixtures.
    let (run, outputs) = gate(2, &format!("{quoted} serve"), &[]);
    assert!(outputs.contains("exit-code=0"), "{outputs}\n{}", run.all());
    assert_eq!(fixtures(), ["mine.json"], "{}", run.all());
    for key in ["junit", "markdown", "json"] {
        assert!(outputs.contains(&format!("{key}=")), "{outputs}");
    }
    let summary_2 = summary_text();
    assert!(
        summary_2.len() > summary_1.len(),
        "run 2 added its report to the summary"
    );
    let report_2 = std::fs::read_to_string(out.join("ctxgate-report.md")).unwrap();
    assert!(!report_2.contains("pinned-kept-"), "{report_2}");

    // Run 3 runs nothing (a config that is not there: exit 2): it adds
    // nothing to the summary, names no report, and leaves none of run 2's.
    let missing = dir.path().join("no-such-config.json");
    let (run, outputs) = gate(
        3,
        &format!("{quoted} serve"),
        &[("CTXGATE_CONFIG", missing.to_str().unwrap())],
    );
    assert!(outputs.contains("exit-code=2"), "{outputs}\n{}", run.all());
    for key in ["junit=", "markdown=", "json="] {
        assert!(
            !outputs.contains(key),
            "run 3 wrote no report, yet names one: {outputs}"
        );
    }
    assert_eq!(
        summary_text(),
        summary_2,
        "run 3 appended a report it did not write"
    );
    for f in [
        "ctxgate-junit.xml",
        "ctxgate-report.md",
        "ctxgate-report.json",
    ] {
        assert!(
            !out.join(f).exists(),
            "run 2's {f} is left in run 3's folder"
        );
    }
    assert_eq!(fixtures(), ["mine.json"]);
    // The user's files stay, through all three.
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("fixtures/mine.json")).unwrap(),
        "{}\n"
    );
}
