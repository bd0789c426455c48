#!/usr/bin/env python3
"""Check the release workflow and the Action against what users are told.

    scripts/check-release-files.py [REPO_ROOT]     (exit 0: ok; 1: findings, named)

Needs PyYAML (`pip install pyyaml`). It checks that:
  - action.yml parses, is composite, and every input has a description, is
    passed to a step through `env:` (never pasted into a `run:`), and has a
    row in docs/ci.md's inputs table (| `name` | ...);
  - .github/workflows/release.yml parses, runs on `v*.*.*` tags, builds the five
    targets scripts/ctxgate-fetch.sh downloads, writes SHA256SUMS, attaches
    to the release, publishes to no registry, and pastes no expression into
    a `run:`;
  - the Rust toolchain is pinned to one version in action.yml (both places)
    and release.yml;
  - every GitHub URL or `uses:` of ctxgate in README.md, docs/, action.yml,
    python/ and js/ names Cargo.toml's `repository`, and no `OWNER/`
    placeholder is left;
  - the files release.yml runs from python/ and js/ exist (a branch without
    those folders is reported as a skip).
"""
import glob
import os
import re
import sys

import yaml

TARGETS = {
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
    "x86_64-pc-windows-msvc",
}
PUBLISH = re.compile(r"\b(cargo publish|npm publish|maturin (publish|upload)|twine upload|pnpm publish|yarn publish)\b")


def load(root, path, findings):
    full = os.path.join(root, path)
    try:
        with open(full, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        findings.append(f"{path}: does not parse: {e}")
        return None


def steps_of(doc):
    if "runs" in doc:
        return doc["runs"].get("steps", [])
    return [s for job in (doc.get("jobs") or {}).values() for s in job.get("steps", [])]


def check_action(root, findings):
    action = load(root, "action.yml", findings)
    if action is None:
        return None
    if action.get("runs", {}).get("using") != "composite":
        findings.append("action.yml: runs.using is not composite")
    with open(os.path.join(root, "docs/ci.md"), encoding="utf-8") as f:
        ci = f.read()
    steps = steps_of(action)
    envs = " ".join(str(v) for s in steps for v in (s.get("env") or {}).values())
    for name, spec in (action.get("inputs") or {}).items():
        if not (spec or {}).get("description"):
            findings.append(f"action.yml: input {name!r} has no description")
        if f"| `{name}` |" not in ci:
            findings.append(f"docs/ci.md: input {name!r} of action.yml has no row in the inputs table (| `{name}` | ...)")
        if name != "artifact-name" and f"inputs.{name} }}}}" not in envs:
            findings.append(f"action.yml: input {name!r} reaches no step's env:")
    for s in steps:
        if "run" in s and "${{" in s["run"]:
            findings.append(f"action.yml: step {s.get('name')!r} pastes an expression into run:")
    return action


def toolchains(action, release, findings):
    pins = {}
    for s in steps_of(action):
        if str(s.get("uses", "")).startswith("dtolnay/rust-toolchain"):
            pins["action.yml (toolchain step)"] = str((s.get("with") or {}).get("toolchain"))
        if "RUSTUP_TOOLCHAIN" in (s.get("env") or {}):
            pins["action.yml (RUSTUP_TOOLCHAIN)"] = str(s["env"]["RUSTUP_TOOLCHAIN"])
    pins["release.yml (RUST_TOOLCHAIN)"] = str((release.get("env") or {}).get("RUST_TOOLCHAIN"))
    if len(pins) != 3 or len(set(pins.values())) != 1 or not re.fullmatch(r"1\.\d+\.\d+", next(iter(pins.values()))):
        findings.append(f"the Rust toolchain is not pinned to one version everywhere: {pins}")


def check_release(root, findings):
    path = ".github/workflows/release.yml"
    release = load(root, path, findings)
    if release is None:
        return None
    # YAML 1.1 reads the key `on` as True.
    on = release.get("on", release.get(True)) or {}
    if ((on.get("push") or {}).get("tags") or []) != ["v*.*.*"]:
        findings.append(f"{path}: does not run on a push of a version tag (v*.*.*) alone")
    if set(on) - {"push"} or set(on.get("push") or {}) - {"tags"}:
        findings.append(f"{path}: runs on more than a tag push: {on}")
    jobs = release.get("jobs") or {}
    built = {e.get("target") for e in jobs.get("binaries", {}).get("strategy", {}).get("matrix", {}).get("include", [])}
    if built != TARGETS:
        findings.append(f"{path}: the binaries job builds {sorted(built)}, not {sorted(TARGETS)}")
    with open(os.path.join(root, "scripts/ctxgate-fetch.sh"), encoding="utf-8") as f:
        fetched = set(re.findall(r"\) echo ([a-z0-9_]+-[a-z0-9_-]+) ;;", f.read()))
    if fetched != TARGETS:
        findings.append(f"scripts/ctxgate-fetch.sh: downloads {sorted(fetched)}, not the released {sorted(TARGETS)}")
    runs = []
    for job_name, job in jobs.items():
        for s in job.get("steps", []):
            if "run" in s:
                runs.append(s["run"])
                if "${{" in s["run"]:
                    findings.append(f"{path}: job {job_name}, step {s.get('name')!r} pastes an expression into run:")
                if PUBLISH.search(s["run"]):
                    findings.append(f"{path}: job {job_name} publishes to a registry: {PUBLISH.search(s['run']).group(0)}")
            if "publish" in str(s.get("uses", "")):
                findings.append(f"{path}: job {job_name} uses a publishing action: {s['uses']}")
    text = "\n".join(runs)
    if "SHA256SUMS" not in text or "gh release create" not in text:
        findings.append(f"{path}: writes no SHA256SUMS or attaches nothing to the release")
    if (release.get("permissions") or {}).get("contents") != "read":
        findings.append(f"{path}: the workflow's default permissions are not contents: read")
    return release


def check_urls(root, findings):
    with open(os.path.join(root, "Cargo.toml"), encoding="utf-8") as f:
        m = re.search(r'^repository = "https://github\.com/([^/"]+/[^/"]+)"$', f.read(), re.M)
    if not m:
        findings.append('Cargo.toml: no repository = "https://github.com/OWNER/NAME"')
        return
    home = m.group(1)
    files = ["README.md", "action.yml"] + sorted(glob.glob("docs/*.md", root_dir=root))
    files += sorted(glob.glob("python/**/*.md", root_dir=root, recursive=True))
    files += sorted(glob.glob("python/pyproject.toml", root_dir=root))
    files += sorted(glob.glob("js/**/package.json", root_dir=root, recursive=True))
    files += sorted(glob.glob("js/**/*.md", root_dir=root, recursive=True))
    for rel in files:
        if "node_modules" in rel:
            continue
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        for n, line in enumerate(text.splitlines(), 1):
            if "OWNER/" in line:
                findings.append(f"{rel}:{n}: a placeholder OWNER/ is left: {line.strip()[:100]}")
            for other in re.findall(r"uses:\s*([\w.-]+/ctxgate)@", line) + re.findall(
                r"github\.com/([\w.-]+/ctxgate)\b", line
            ):
                if other != home:
                    findings.append(f"{rel}:{n}: {other} is not Cargo.toml's repository ({home})")


def check_referenced(root, findings, skips):
    for path in ("python/pyproject.toml", "js/package.json", "js/scripts/platform-package.mjs"):
        top = path.split("/")[0]
        if not os.path.isdir(os.path.join(root, top)):
            skips.append(f"{path} (no {top}/ on this branch)")
        elif not os.path.isfile(os.path.join(root, path)):
            findings.append(f".github/workflows/release.yml: runs {path}, which does not exist")


def main() -> int:
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    findings, skips = [], []
    action = check_action(root, findings)
    release = check_release(root, findings)
    if action is not None and release is not None:
        toolchains(action, release, findings)
    check_urls(root, findings)
    check_referenced(root, findings, skips)
    for f in findings:
        print(f"release files: {f}")
    for s in skips:
        print(f"release files: SKIP {s}")
    if findings:
        return 1
    inputs = ", ".join((action or {}).get("inputs", {}))
    print(f"release files: ok — action.yml and release.yml parse; inputs documented ({inputs})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
