#!/usr/bin/env python3
"""Run action.yml's shell steps as GitHub Actions would, with hostile inputs.

GitHub substitutes every `${{ expression }}` into a step's text *before*
the shell reads it: an expression inside `run:` becomes part of the script,
so an input such as a branch name (`ctxgate-$(touch${IFS}x)`) runs as code.
The only safe way is `env:` (the value becomes an environment variable's
value, never code) and quoted expansions in the script.

This emulator:
  1. loads the action (PyYAML);
  2. refuses any `${{` inside a `run:` (the static rule);
  3. for every composite step with `run:`, substitutes each expression in
     its `env:` values — and in its `run:` text, as GitHub would, so that a
     violation of rule 2 is also shown to execute — with a hostile value
     (command substitutions, backticks, quotes, `;`, newlines, a workflow
     command), and runs the script with `bash --noprofile --norc -eo
     pipefail FILE` as GitHub's `shell: bash` does, with a stub `cargo` and
     a stub `ctxgate` on the PATH;
  4. checks that no canary file was created (no input ran as code), that
     each input reached the stub ctxgate as one literal argument, and that
     no line the steps printed starts a workflow command other than the
     action's own `::error`.

It runs three scenarios: every input hostile (the gate script refuses the
hostile `wire-formats` before ctxgate starts, and nothing may run or print
on the way); every input hostile but `wire-formats` left empty (each other
input must reach ctxgate as one literal argument); and `wire-formats:
openai, anthropic` with `suite: known-bugs` (the generator gets a share of
each format named, and the bundled suite's path).

Usage: emulate.py ACTION.yml REPO_ROOT   (exit 0: safe; 1: a finding, named)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def hostile(canary: str, tag: str) -> str:
    """A value that runs `touch CANARY` if it is ever read as shell code."""
    t = f"{canary}.{tag}"
    return (
        f"ctxgate-$(touch${{IFS}}{t}.a)`touch {t}.b`"
        f"';touch {t}.c;'\";touch {t}.d;\"\n::warning::injected {tag}\n"
        f"$(touch {t}.e) %0A::warning::encoded"
    )


# The input each flag of `ctxgate check` comes from, passed through as is.
FLAGS = {"subject": "--subject", "baseline": "--baseline", "config": "--config",
         "corpus": "--corpus", "suite": "--with-suite", "time": "--time",
         "jobs": "--jobs", "fail-on": "--fail-on", "seed": "--seed",
         "cases": "--cases", "invariants": "--invariants", "gen-config": "--gen-config",
         "timeout": "--timeout"}


def emulate(action, root, work, set_inputs):
    """Run every `run:` step of the action; inputs hostile unless set_inputs
    gives a value. Returns (findings, argv ctxgate got or None, steps run)."""
    findings = []
    steps = action["runs"]["steps"]
    canary = os.path.join(work, "canary", "ran")
    os.makedirs(os.path.dirname(canary))
    bin_dir = os.path.join(work, "bin")
    os.makedirs(bin_dir)
    argv_log = os.path.join(work, "ctxgate-argv")
    # Stubs: cargo "installs" nothing; curl downloads nothing; ctxgate
    # records its argv, one NUL-terminated argument each, and exits 1 (a
    # failed gate, so the "Fail on regressions" step runs too).
    stubs = {"cargo": "exit 0\n", "curl": "exit 22\n",
             "ctxgate": f"printf '%s\\0' \"$@\" > '{argv_log}'\nexit 1\n"}
    for name, body in stubs.items():
        with open(os.path.join(bin_dir, name), "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(os.path.join(bin_dir, name), 0o755)

    inputs = {name: hostile(canary, f"inputs.{name}") for name in action.get("inputs", {})}
    inputs.update(set_inputs)
    runner_temp = os.path.join(work, "runner-temp")
    os.makedirs(runner_temp)
    values = {f"inputs.{k}": v for k, v in inputs.items()}
    values["runner.temp"] = runner_temp
    values["runner.os"] = "Linux"
    values["runner.arch"] = "X64"

    def value_of(expr: str) -> str:
        if expr in values:
            return values[expr]
        # Step outputs, github.* and anything else: hostile as well.
        return hostile(canary, re.sub(r"[^A-Za-z0-9_.-]", "_", expr)[:40])

    def substitute(text: str) -> str:
        return EXPR.sub(lambda m: value_of(m.group(1)), text)

    env_base = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": work,
        "GITHUB_ACTION_PATH": root,
        "RUNNER_TEMP": runner_temp,
        "RUNNER_OS": "Linux",
        "RUNNER_ARCH": "X64",
        "GITHUB_OUTPUT": os.path.join(work, "github-output"),
        "GITHUB_PATH": os.path.join(work, "github-path"),
        "GITHUB_STEP_SUMMARY": os.path.join(work, "summary.md"),
    }
    printed = []
    ran = 0
    for i, s in enumerate(steps):
        if "run" not in s:
            continue
        if s.get("shell") != "bash":
            findings.append(f"step {s.get('name')!r}: shell is {s.get('shell')!r}, not bash")
            continue
        env = dict(env_base)
        for k, v in (s.get("env") or {}).items():
            env[k] = substitute(str(v))
        script = os.path.join(work, f"step-{i}.sh")
        with open(script, "w", encoding="utf-8") as f:
            f.write(substitute(s["run"]))
        r = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", script],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=60,
        )
        ran += 1
        printed.append((s.get("name"), r.stdout + r.stderr))

    if ran == 0:
        findings.append("no step with run: was found: nothing was emulated")
    ran_as_code = sorted(os.listdir(os.path.dirname(canary)))
    if ran_as_code:
        findings.append(
            "an input ran as shell code: created "
            + ", ".join(n.replace("ran.", "", 1) for n in ran_as_code)
        )
    for name, text in printed:
        for line in text.splitlines():
            if line.startswith("::") and not line.startswith("::error title=ctxgate::"):
                findings.append(f"step {name!r} printed a workflow command: {line[:120]!r}")
    argv = None
    if os.path.exists(argv_log):
        with open(argv_log, encoding="utf-8") as f:
            argv = f.read().split("\0")[:-1]
    return findings, argv, inputs, ran


def argument_after(argv, flag):
    at = [j for j, a in enumerate(argv) if a == flag]
    return argv[at[0] + 1] if at and at[0] + 1 < len(argv) else None


def main() -> int:
    action_path, root = sys.argv[1], os.path.abspath(sys.argv[2])
    with open(action_path, encoding="utf-8") as f:
        action = yaml.safe_load(f)
    findings = []
    for s in action["runs"]["steps"]:
        if "run" in s and "${{" in s["run"]:
            findings.append(
                f"step {s.get('name')!r}: an expression inside run: "
                f"({', '.join(EXPR.findall(s['run']))}) is pasted into the script; pass it through env:"
            )

    names = sorted(action.get("inputs", {}))
    ran = 0
    scenarios = [
        ("every input hostile", {}),
        ("every input hostile, wire-formats empty", {"wire-formats": ""}),
        ("wire-formats openai, anthropic; suite known-bugs",
         {"wire-formats": "openai, anthropic", "gen-config": "", "config": "", "suite": "known-bugs"}),
    ]
    for label, set_inputs in scenarios:
        if any(k not in action.get("inputs", {}) for k in set_inputs):
            findings.append(f"{label}: the action has no input {sorted(set(set_inputs) - set(names))}")
            continue
        work = tempfile.mkdtemp(prefix="ctxgate-action-")
        try:
            found, argv, inputs, n = emulate(action, root, work, set_inputs)
            ran += n
            findings += [f"{label}: {f}" for f in found]
            if label == "every input hostile":
                if argv is not None:
                    findings.append(f"{label}: ctxgate ran although wire-formats named no wire format")
                continue
            if argv is None:
                findings.append(f"{label}: the gate step never ran ctxgate")
                continue
            for name, flag in FLAGS.items():
                if name not in inputs or name in set_inputs:
                    continue
                if argument_after(argv, flag) != inputs[name]:
                    findings.append(f"{label}: input {name!r} did not reach ctxgate as one literal {flag} argument")
            if set_inputs.get("suite") == "known-bugs":
                want = os.path.join(root, "suites", "known-bugs")
                if argument_after(argv, "--with-suite") != want:
                    findings.append(f"{label}: suite known-bugs did not become --with-suite {want}")
            if set_inputs.get("wire-formats"):
                gen = argument_after(argv, "--gen-config") or ""
                text = open(gen).read() if os.path.isfile(gen) else None
                if text is None or json.loads(text) != {"openaiPercent": 50, "anthropicPercent": 50}:
                    findings.append(f"{label}: the generator was not given half openai, half anthropic: {text!r}")
        finally:
            shutil.rmtree(work, ignore_errors=True)

    for f in findings:
        print(f"action.yml: {f}")
    if findings:
        return 1
    print(f"action.yml: {ran} shell steps run with hostile inputs ({', '.join(names)}): nothing ran as code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
