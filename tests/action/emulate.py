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

Usage: emulate.py ACTION.yml REPO_ROOT   (exit 0: safe; 1: a finding, named)
"""
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


def main() -> int:
    action_path, root = sys.argv[1], os.path.abspath(sys.argv[2])
    with open(action_path, encoding="utf-8") as f:
        action = yaml.safe_load(f)
    findings = []
    steps = action["runs"]["steps"]
    for s in steps:
        if "run" in s and "${{" in s["run"]:
            findings.append(
                f"step {s.get('name')!r}: an expression inside run: "
                f"({', '.join(EXPR.findall(s['run']))}) is pasted into the script; pass it through env:"
            )

    work = tempfile.mkdtemp(prefix="ctxgate-action-")
    try:
        canary = os.path.join(work, "canary", "ran")
        os.makedirs(os.path.dirname(canary))
        bin_dir = os.path.join(work, "bin")
        os.makedirs(bin_dir)
        argv_log = os.path.join(work, "ctxgate-argv")
        # Stubs: cargo "installs" nothing; ctxgate records its argv, one
        # NUL-terminated argument each, and exits 1 (a failed gate, so the
        # "Fail on regressions" step runs too).
        with open(os.path.join(bin_dir, "cargo"), "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        with open(os.path.join(bin_dir, "ctxgate"), "w") as f:
            f.write(f"#!/bin/sh\nprintf '%s\\0' \"$@\" > '{argv_log}'\nexit 1\n")
        for name in ("cargo", "ctxgate"):
            os.chmod(os.path.join(bin_dir, name), 0o755)

        inputs = {name: hostile(canary, f"inputs.{name}") for name in action.get("inputs", {})}
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

        github_output = os.path.join(work, "github-output")
        env_base = {
            "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": work,
            "GITHUB_ACTION_PATH": root,
            "RUNNER_TEMP": runner_temp,
            "GITHUB_OUTPUT": github_output,
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

        # Each input the gate script passes reached ctxgate as one argument.
        if os.path.exists(argv_log):
            with open(argv_log, encoding="utf-8") as f:
                argv = f.read().split("\0")[:-1]
            flags = {"subject": "--subject", "baseline": "--baseline", "config": "--config",
                     "corpus": "--corpus", "suite": "--with-suite", "time": "--time",
                     "jobs": "--jobs", "fail-on": "--fail-on", "seed": "--seed"}
            for name, flag in flags.items():
                if name not in inputs:
                    continue
                at = [j for j, a in enumerate(argv) if a == flag]
                if not at or at[0] + 1 >= len(argv) or argv[at[0] + 1] != inputs[name]:
                    findings.append(f"input {name!r} did not reach ctxgate as one literal {flag} argument")
        else:
            findings.append("the gate step never ran ctxgate")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    for f in findings:
        print(f"action.yml: {f}")
    if findings:
        return 1
    print(f"action.yml: {ran} shell steps run with hostile inputs ({', '.join(sorted(inputs))}): nothing ran as code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
