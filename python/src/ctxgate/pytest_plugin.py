"""The pytest plugin: a `ctxgate` fixture that checks the test's own
compactor with the ctxgate binary.

    def test_my_compactor(ctxgate):
        ctxgate.check(my_module.compact, my_module.estimate, cases=1000)

`check` spawns the functions as a subject (`python -m ctxgate.subject
module:function`, so they must be module-level functions), first replays
the failures this test saved before (`ctxgate replay`, like Hypothesis's
example database: a failure found once is tried first on every later run),
then runs `ctxgate check` on new cases, saving each shrunk failure as a
fixture beside the others. A failure fails the test with the report's
failure text: the invariant, the shrunk history and config, and the
`ctxgate replay` line that reproduces it.

Saved failures live in `.ctxgate/failures/<module>.<test>/` under the
rootdir (ini option `ctxgate_failures` moves the folder). Commit them:
they are the project's regression suite.
"""

import inspect
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from . import binary


def pytest_addoption(parser):
    parser.addini("ctxgate_failures", "folder of the failures ctxgate.check saves and replays first "
                  "(relative to the rootdir)", default=".ctxgate/failures")


@pytest.fixture
def ctxgate(request):
    """A checker bound to this test: `ctxgate.check(compact, estimate, ...)`."""
    test = f"{request.node.module.__name__}.{request.node.name}"
    folder = Path(request.config.rootpath) / request.config.getini("ctxgate_failures")
    node = request.node.nodeid
    if node.startswith("::"):  # a test file outside the rootdir
        node = f"{request.node.path}{node}"
    return Checker(folder / re.sub(r"[^A-Za-z0-9_.-]+", "_", test), node)


def function_ref(fn, role):
    """(`module:function`, the folder to import the module from) for a
    module-level function; a clear error for anything the subject process
    could not import."""
    name = getattr(fn, "__qualname__", None)
    module = getattr(fn, "__module__", None)
    if not callable(fn) or not name or not module or "<" in name:
        raise TypeError(f"ctxgate.check: {role} must be a module-level function (the subject process "
                        f"imports it as module:function), not {fn!r}")
    path = Path(inspect.getfile(fn)).resolve()
    if module == "__main__":
        return f"{path}:{name}", None
    depth = len(module.split(".")) - (0 if path.name == "__init__.py" else 1)
    return f"{module}:{name}", str(path.parents[depth])


class Checker:
    def __init__(self, failures, test_id="the test"):
        self.failures = failures
        self.test_id = test_id

    def subject_command(self, compact, estimate=None, *, name=None, version="0", invariants=None,
                        wire_formats=None, content_parts=True):
        """The `--subject` command line that serves these functions."""
        words = [sys.executable, "-m", "ctxgate.subject"]
        paths = []
        for role, fn in (("compact", compact), ("estimate", estimate)):
            if fn is None:
                continue
            ref, path = function_ref(fn, role)
            words += [ref] if role == "compact" else ["--estimate", ref]
            if path and path not in paths:
                paths.append(path)
        for path in paths:
            words += ["--path", path]
        words += ["--name", name or words[3], "--version", str(version)]
        if invariants is not None:
            words += ["--invariants", ",".join(invariants)]
        if wire_formats is not None:
            words += ["--wire-formats", ",".join(wire_formats)]
        if not content_parts:
            words.append("--text-only")
        return shlex.join(words)

    def check(self, compact, estimate=None, *, cases=1000, config=None, gen_config=None, seed=None,
              name=None, version="0", invariants=None, wire_formats=None, content_parts=True,
              timeout=None, args=()):
        """Replay this test's saved failures, then check `cases` new ones.

        `config`: a SPEC §2 object every case uses (your production
        values); `gen_config`: generator settings (`ctxgate gen
        --print-gen-config`); `seed`: default $CTXGATE_SEED, else random
        (printed on failure);
        `invariants`: the SPEC §5 names `compact` claims (default all);
        `args`: more `ctxgate check` flags. Returns the report's text."""
        subject = self.subject_command(compact, estimate, name=name, version=version,
                                       invariants=invariants, wire_formats=wire_formats,
                                       content_parts=content_parts)
        exe = binary()
        saved = sorted(self.failures.glob("*.json")) if self.failures.is_dir() else []
        if saved:
            print(f"ctxgate: replaying {len(saved)} saved failure(s) from {self.failures} first")
            replay = run([exe, "replay", str(self.failures), "--subject", subject])
            counts = re.search(r"^replay: (\d+) held, (\d+) failed, (\d+) skipped", replay.stdout, re.M)
            # Fixtures of which nothing is judged now (the test claims other
            # invariants than when they were saved) neither fail nor block
            # the new cases: replay exits 1 when it judged nothing at all.
            all_skipped = replay.returncode == 1 and counts is not None and counts.group(2) == "0"
            if replay.returncode != 0 and not all_skipped:
                pytest.fail(
                    f"ctxgate: saved failure(s) still fail, replayed before any new case "
                    f"({self.failures}):\n\n{replay.stdout.rstrip()}\n{replay.stderr.rstrip()}\n\n"
                    f"replay: {shlex.join([exe, 'replay', str(self.failures), '--subject', subject])}\n"
                    f"(fix the compactor; or delete a fixture there to stop replaying it)",
                    pytrace=False)
            print(counts.group(0) if counts else replay.stdout.rstrip().splitlines()[-1])
            if all_skipped:
                print("ctxgate: nothing of the saved failures is judged now (they check invariants "
                      "this test no longer claims); delete them to stop replaying them")
        with tempfile.TemporaryDirectory(prefix="ctxgate-check-") as tmp:
            command = [exe, "check", "--subject", subject, "--cases", str(cases),
                       "--save", str(self.failures)]
            seed = seed if seed is not None else os.environ.get("CTXGATE_SEED")
            if seed is not None:
                command += ["--seed", str(seed)]
            if timeout is not None:
                command += ["--timeout", str(timeout)]
            for flag, value in (("--config", config), ("--gen-config", gen_config)):
                if value is not None:
                    file = Path(tmp) / (flag.strip("-") + ".json")
                    file.write_text(json.dumps(value))
                    command += [flag, str(file)]
            result = run(command + list(args))
        if result.returncode == 1:
            seed = re.search(r"with --seed (\d+)", result.stdout)
            again = f"\nthis run again: CTXGATE_SEED={seed.group(1)} pytest {shlex.quote(self.test_id)}" if seed else ""
            pytest.fail(failure_text(result.stdout) + again, pytrace=False)
        if result.returncode != 0:
            pytest.fail(f"ctxgate check exited {result.returncode}:\n{result.stderr.strip()}\n"
                        f"command: {shlex.join(command)}", pytrace=False)
        print(result.stdout.rstrip().splitlines()[-1])
        return result.stdout


def run(command):
    return subprocess.run(command, capture_output=True, text=True, encoding="utf-8", errors="replace")


def failure_text(report):
    """The failure blocks of a human report (each FAILED or FAULT paragraph:
    the invariant, the shrunk case, the replay line) and its last line."""
    blocks, keep = [], False
    for line in report.splitlines():
        if line.startswith(("FAILED ", "FAULT ")) and not line.startswith("FAILED:"):
            keep = True
            blocks.append([])
        elif not line.strip():
            keep = False
        if keep:
            blocks[-1].append(line)
    last = report.rstrip().splitlines()[-1] if report.strip() else "(no report)"
    return "ctxgate check failed:\n\n" + "\n\n".join("\n".join(b) for b in blocks) + "\n\n" + last
