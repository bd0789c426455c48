//! The project's scripts (issue 44): run from a checkout whose path holds a
//! space, an apostrophe, a double quote and `$(…)`, with a subject name and
//! an env value that do too — nothing may run as code (no file PWNED
//! appears) and the script must still work; `findings/run.sh` with no
//! library installed says "not run", never "reproduces"; the adapters'
//! pinned installs, started four at once, take turns.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::process::{run_within, Out, TempDir};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A folder name that runs `touch PWNED` wherever a shell reads it as code
/// (unquoted, in double quotes, in single quotes, or in backticks).
const HOSTILE: &str = "dir with space's \"$(touch PWNED)\" `touch PWNED` $(touch PWNED)";

/// A copy of these files of the repository under `at` (folders made).
fn copy_into(at: &Path, files: &[&str]) {
    for f in files {
        let to = at.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root().join(f), &to).unwrap_or_else(|e| panic!("copy {f}: {e}"));
    }
}

fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every file named PWNED under `dir` (none: nothing ran as code).
fn pwned(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if e.file_name() == "PWNED" {
                found.push(p);
            }
        }
    }
    found
}

/// A zoo subject that checks it got its env value exactly, answers
/// `--install` and `--roundtrip` as the zoo adapters do, and serves the
/// protocol with python-minimal (which holds every invariant).
const STUB_ADAPTER: &str = r#"#!/usr/bin/env bash
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ "${CTXGATE_STUB-}" != "$(cat "$here/expected")" ]; then
    echo "stub: CTXGATE_STUB arrived changed: ${CTXGATE_STUB-<unset>}" >&2
    exit 3
fi
case "${1:-}" in
    --install) exit 0 ;;
    --roundtrip) n=$(wc -l); echo "stub: ${n// /} histories, lossless"; exit 0 ;;
esac
exec python3 "$here/../python-minimal/compactor.py"
"#;

#[test]
fn zoo_ci_runs_from_a_checkout_whose_path_and_names_hold_quotes_and_command_substitutions() {
    let tmp = TempDir::new("zoo-hostile");
    let checkout = tmp.path().join(HOSTILE);
    copy_into(
        &checkout,
        &[
            "adapters/zoo_ci.py",
            "adapters/text-only-gen-config.json",
            "adapters/python-minimal/compactor.py",
            "adapters/python-minimal/wire.py",
        ],
    );
    // The default --ctxgate: the checkout's target/release/ctxgate.
    std::fs::create_dir_all(checkout.join("target/release")).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_ctxgate"),
        checkout.join("target/release/ctxgate"),
    )
    .unwrap();
    let adapter = "stub's $(touch PWNED) `touch PWNED`";
    let value = "it's \"$(touch PWNED)\" `touch PWNED`; touch PWNED";
    write_exec(
        &checkout.join("adapters").join(adapter).join("run.sh"),
        STUB_ADAPTER,
    );
    std::fs::write(
        checkout.join("adapters").join(adapter).join("expected"),
        value,
    )
    .unwrap();
    let book = serde_json::json!({
        "roundtripCases": 5,
        "subjects": {"stub": {
            "library": "stub", "version": "0",
            "run": format!("adapters/{adapter}/run.sh"),
            "env": {"CTXGATE_STUB": value},
            "cases": 20, "seed": 1, "failing": [], "faults": []
        }}
    });
    std::fs::write(
        checkout.join("adapters/zoo-verdicts.json"),
        serde_json::to_string_pretty(&book).unwrap(),
    )
    .unwrap();

    let out = run_within(
        Command::new("python3")
            .arg(checkout.join("adapters/zoo_ci.py"))
            .current_dir(&checkout),
        Duration::from_secs(300),
    );
    assert!(
        pwned(tmp.path()).is_empty(),
        "ran as code: {:?}\n{}",
        pwned(tmp.path()),
        out.all()
    );
    assert_eq!(out.code, 0, "{}", out.all());
    out.stdout_has("zoo: stub (stub 0): 5 histories, lossless; 20 cases, seed 1: fails nothing");
    out.stdout_has("zoo: every recorded verdict reproduced");
    assert!(
        checkout.join("target/zoo/stub.json").is_file(),
        "{}",
        out.all()
    );
}

/// The files of the checkout under `dir` (tracked, or new and not ignored;
/// relative to the repository).
fn tracked(dir: &str) -> Vec<String> {
    let out = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
            dir,
        ])
        .current_dir(root())
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git ls-files {dir}");
    let files: Vec<String> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| String::from_utf8(f.to_vec()).unwrap())
        .collect();
    assert!(!files.is_empty(), "git tracks nothing under {dir}");
    files
}

fn findings_run(checkout: &Path, venv_root: Option<&Path>) -> Out {
    let mut c = Command::new("bash");
    c.arg(checkout.join("findings/run.sh"))
        .current_dir(checkout)
        .env_remove("CTXGATE_VENV_ROOT");
    if let Some(r) = venv_root {
        c.env("CTXGATE_VENV_ROOT", r);
    }
    run_within(&mut c, Duration::from_secs(300))
}

#[test]
fn findings_with_no_library_installed_are_not_run_never_reproduced() {
    let tmp = TempDir::new("findings-empty");
    let checkout = tmp.path().join(HOSTILE);
    let files = tracked("findings");
    let refs: Vec<&str> = files.iter().map(String::as_str).collect();
    copy_into(&checkout, &refs);
    copy_into(&checkout, &["adapters/langchain-js/package-lock.json"]);
    let reproductions = refs
        .iter()
        .filter(|f| f.matches('/').count() == 2 && (f.ends_with(".py") || f.ends_with(".mjs")))
        .count();
    assert!(reproductions >= 14, "{refs:?}");
    let venvs = tmp.path().join("venvs with space's $(touch PWNED)");
    std::fs::create_dir_all(&venvs).unwrap();

    let out = findings_run(&checkout, Some(&venvs));
    assert!(
        pwned(tmp.path()).is_empty(),
        "ran as code: {:?}\n{}",
        pwned(tmp.path()),
        out.all()
    );
    assert_eq!(out.code, 2, "nothing ran: exit 2\n{}", out.all());
    assert!(!out.stdout.contains("reproduces "), "{}", out.stdout);
    assert!(!out.stdout.contains("DOES NOT REPRODUCE"), "{}", out.stdout);
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.starts_with("not run "))
            .count(),
        reproductions,
        "{}",
        out.stdout
    );
    out.stdout_has(&format!(
        "findings: 0 of {reproductions} reproductions reproduce on their pinned release, 0 do not, {reproductions} not run"
    ));
    // The JavaScript ones, run with no install, say what is missing.
    out.stdout_has("not run: @langchain/core is not installed");
}

/// A library of the test's own, `fakelib` VERSION, installed into a fresh
/// venv (no pip: its files written where pip would put them).
fn fake_venv(venv: &Path, version: &str) {
    let made = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(venv)
        .status()
        .unwrap();
    assert!(made.success(), "python3 -m venv");
    let lib = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let site = lib.join("site-packages");
    std::fs::create_dir_all(site.join("fakelib")).unwrap();
    std::fs::write(site.join("fakelib/__init__.py"), "X = 1\n").unwrap();
    let info = site.join(format!("fakelib-{version}.dist-info"));
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(
        info.join("METADATA"),
        format!("Metadata-Version: 2.1\nName: fakelib\nVersion: {version}\n"),
    )
    .unwrap();
    std::fs::write(info.join("RECORD"), "").unwrap();
}

const PY_HEAD: &str = "import os\nimport sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), \"..\"))\nfrom pinned import library, verdict  # noqa: E402\n\n";

#[test]
fn findings_run_counts_reproduces_does_not_reproduce_and_not_run_apart() {
    let tmp = TempDir::new("findings-verdicts");
    let checkout = tmp.path().join(HOSTILE);
    copy_into(
        &checkout,
        &[
            "findings/run.sh",
            "findings/pinned.py",
            "findings/pinned.mjs",
        ],
    );
    let pins = serde_json::json!({"dirs": {
        "fake": {"adapter": "fake", "release": "1.0",
                 "packages": [{"name": "fakelib", "version": "1.0", "import": "fakelib"}]},
        "stale": {"adapter": "fake", "release": "1.0",
                  "packages": [{"name": "fakelib", "version": "0.9", "import": "fakelib"}]},
        "fakejs": {"adapter": "fakejs",
                   "packages": [{"name": "fake-js-lib", "version": "2.0.0", "import": "fake-js-lib"}]}
    }});
    std::fs::write(checkout.join("findings/pins.json"), pins.to_string()).unwrap();
    fake_venv(&checkout.join("adapters/fake/.venv-1.0"), "1.0");
    let nm = checkout.join("adapters/fakejs/node_modules/fake-js-lib");
    std::fs::create_dir_all(&nm).unwrap();
    std::fs::write(
        nm.join("package.json"),
        r#"{"name": "fake-js-lib", "version": "2.0.0", "type": "module", "main": "index.js"}"#,
    )
    .unwrap();
    std::fs::write(nm.join("index.js"), "export const x = 1;\n").unwrap();
    let write = |name: &str, body: &str| {
        let head = if name.ends_with(".py") { PY_HEAD } else { "" };
        std::fs::write(
            checkout.join("findings").join(name),
            format!("{head}{body}"),
        )
        .unwrap();
    };
    std::fs::create_dir_all(checkout.join("findings/fake")).unwrap();
    std::fs::create_dir_all(checkout.join("findings/stale")).unwrap();
    std::fs::create_dir_all(checkout.join("findings/fakejs")).unwrap();
    std::fs::create_dir_all(checkout.join("findings/unpinned")).unwrap();
    write("fake/a_reproduces.py", "library()\nverdict(True)\n");
    write("fake/b_changed.py", "library()\nverdict(False)\n");
    write(
        "fake/c_crashes.py",
        "library()\nraise RuntimeError('boom')\n",
    );
    write("fake/d_unchecked.py", "verdict(True)\n");
    // An exit 1 is what the old reproductions said for "reproduces": now
    // it is a crash's, no verdict.
    write("fake/e_exit_1.py", "library()\nraise SystemExit(1)\n");
    write("stale/wrong_version.py", "library()\nverdict(True)\n");
    write("unpinned/nothing.py", "library()\nverdict(True)\n");
    write(
        "fakejs/reproduces.mjs",
        "import { library, verdict } from '../pinned.mjs';\nconst [{ x }] = await library(import.meta.url, (m) => import(m));\nverdict(x === 1);\n",
    );

    let out = findings_run(&checkout, None);
    assert!(pwned(tmp.path()).is_empty(), "{}", out.all());
    assert_eq!(out.code, 2, "{}", out.all());
    for line in [
        "reproduces          findings/fake/a_reproduces.py",
        "DOES NOT REPRODUCE  findings/fake/b_changed.py",
        "not run             findings/fake/c_crashes.py (no verdict: exit 1",
        "not run             findings/fake/d_unchecked.py (its pinned release is not what imports",
        "not run             findings/fake/e_exit_1.py (no verdict: exit 1",
        "not run             findings/stale/wrong_version.py",
        "not run: fakelib 1.0 is installed for",
        "the finding is pinned to 0.9",
        "not run             findings/unpinned/nothing.py (findings/pins.json pins nothing for unpinned/)",
        "reproduces          findings/fakejs/reproduces.mjs",
        "findings: 2 of 8 reproductions reproduce on their pinned release, 1 do not, 5 not run",
    ] {
        out.stdout_has(line);
    }

    // Without the ones not run: exit 1, a library changed.
    for f in [
        "fake/c_crashes.py",
        "fake/d_unchecked.py",
        "fake/e_exit_1.py",
        "stale/wrong_version.py",
        "unpinned/nothing.py",
    ] {
        std::fs::remove_file(checkout.join("findings").join(f)).unwrap();
    }
    let out = findings_run(&checkout, None);
    assert_eq!(out.code, 1, "{}", out.all());
    out.stdout_has(
        "findings: 2 of 3 reproductions reproduce on their pinned release, 1 do not, 0 not run",
    );
    std::fs::remove_file(checkout.join("findings/fake/b_changed.py")).unwrap();
    let out = findings_run(&checkout, None);
    assert_eq!(out.code, 0, "{}", out.all());
}

/// A `python3` for adapters/lib/pinned-venv.sh that makes a venv of itself
/// and whose `pip install` takes a while, fails as pip does when another
/// pip writes the same venv ("Text file busy"), and logs each install.
const FAKE_PYTHON: &str = r#"#!/usr/bin/env bash
set -eu
if [ "$1 $2" = "-m venv" ]; then
    mkdir -p "$3/bin"
    cp "$0" "$3/bin/python"
    exit 0
fi
if [ "$1 $2 $3" = "-m pip install" ]; then
    venv="$(cd "$(dirname "$0")/.." && pwd)"
    if ! mkdir "$venv/pip-running" 2>/dev/null; then
        echo "OSError: [Errno 26] Text file busy: '$venv/bin/python'" >&2
        echo overlap >> "$venv/../installs.log"
        exit 1
    fi
    sleep 1
    rmdir "$venv/pip-running"
    echo install >> "$venv/../installs.log"
    exit 0
fi
echo "fake python: $*" >&2
exit 3
"#;

#[test]
fn four_runs_installing_one_pinned_venv_at_once_take_turns() {
    let tmp = TempDir::new("pinned-venv-lock");
    let checkout = tmp.path().join(HOSTILE);
    copy_into(
        &checkout,
        &["adapters/lib/pinned-venv.sh", "adapters/strands/run.sh"],
    );
    let python = tmp.path().join("fake-python");
    write_exec(&python, FAKE_PYTHON);
    let venvs = tmp.path().join("venvs");
    let runs: Vec<_> = (0..4)
        .map(|_| {
            Command::new("bash")
                .arg(checkout.join("adapters/strands/run.sh"))
                .arg("--install")
                .env("PYTHON", &python)
                .env("CTXGATE_VENV_ROOT", &venvs)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = runs
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let shown = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    for o in &outs {
        assert!(o.status.success(), "{}", shown(o));
    }
    let log = std::fs::read_to_string(venvs.join("installs.log")).unwrap_or_default();
    assert_eq!(log, "install\n", "one install, the others waited for it");
    assert!(pwned(tmp.path()).is_empty());
    // Made, it is not made again.
    let again = run_within(
        Command::new("bash")
            .arg(checkout.join("adapters/strands/run.sh"))
            .arg("--install")
            .env("PYTHON", &python)
            .env("CTXGATE_VENV_ROOT", &venvs),
        Duration::from_secs(60),
    );
    assert_eq!(again.code, 0, "{}", again.all());
    assert_eq!(
        std::fs::read_to_string(venvs.join("installs.log")).unwrap(),
        "install\n"
    );
}

/// The agents' shared install scripts answer a bad command line — an option
/// they do not know, an option without its value, too few words — with
/// exit 2 and their usage, before anything is looked up or installed.
#[test]
fn agent_installs_refuse_a_bad_command_line_with_their_usage() {
    let cases: [(&str, &[&str]); 7] = [
        ("install-npm.sh", &["--bogus", "agents/pi", "pkg"]),
        ("install-npm.sh", &["--bin"]),
        ("install-npm.sh", &["--bin", "", "agents/pi", "pkg"]),
        ("install-npm.sh", &["agents/pi"]),
        ("install-pip.sh", &["--with"]),
        ("install-pip.sh", &["-x", "agents/aider", "aider-chat"]),
        ("install-pip.sh", &["--with", "a", "--", "agents/aider"]),
    ];
    for (script, args) in cases {
        let out = Command::new("bash")
            .arg(root().join("agents/lib").join(script))
            .args(args)
            .env("CTXGATE_VENV_ROOT", "/nonexistent/ctxgate-test")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{script} {args:?}: {err}");
        assert!(
            err.contains(&format!("usage: agents/lib/{script} ")),
            "{script} {args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{script} {args:?}");
    }
}
