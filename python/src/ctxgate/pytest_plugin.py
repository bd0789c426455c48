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

Nothing outlives the test: a run is stopped (and its scratch folder
removed) when `check` is left by an exception or a Ctrl-C, when the test
is torn down, and when pytest gets SIGTERM or SIGHUP — then pytest dies of
the signal as it would have. The binary is told to die with pytest
(CTXGATE_DIE_WITH_PARENT: even a SIGKILL of pytest stops it, on Linux),
and it stops its subjects when it dies.
"""

import importlib.machinery
import inspect
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from . import BinaryNotFound, binary
from .protocol import check_signature
from .wire import check_json
from ._signals import StopOnSignals, when_stopped


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
    checker = Checker(folder / re.sub(r"[^A-Za-z0-9_.-]+", "_", test), node)
    yield checker
    checker.stop()


def shown(text):
    """A path or a name from outside, quoted, its control characters escaped."""
    return json.dumps(str(text), ensure_ascii=False)


def visible(text):
    """The binary's output for a failure message: control characters other
    than newline and tab shown as escapes (a terminal never obeys them)."""
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}", text)


def function_ref(fn, role):
    """(`module:function`, the folder to import the module from) for a
    module-level function; a clear error for anything the subject process
    could not import, or would import as something else (a bound method:
    `module:Class.method` is the plain function, without the instance)."""
    name = getattr(fn, "__qualname__", None)
    module = getattr(fn, "__module__", None)
    if not callable(fn) or not isinstance(name, str) or not isinstance(module, str) or "<" in name:
        raise TypeError(f"ctxgate.check: {role} must be a module-level function (the subject process "
                        f"imports it as module:function), not {fn!r}")
    found = sys.modules.get(module)
    for part in name.split("."):
        found = getattr(found, part, None)
    if found is None or not (found is fn or found == fn):
        what = (f"a method bound to a {type(fn.__self__).__name__} object" if inspect.ismethod(fn)
                else f"{fn!r}")
        raise TypeError(f"ctxgate.check: {role} is {what}: the subject process imports {module}:{name} "
                        f"and would get {found!r} instead (without your object); pass a module-level "
                        f"function, or a staticmethod or classmethod")
    check_signature(fn, role, who="ctxgate.check")
    path = Path(inspect.getfile(fn)).resolve()
    if module == "__main__":
        return f"{path}:{name}", None
    depth = len(module.split(".")) - (0 if path.name == "__init__.py" else 1)
    return f"{module}:{name}", str(path.parents[depth])


def shadowing_ctxgate(cwd=None):
    """The module a `python -m ctxgate.subject` started in `cwd` would
    import as `ctxgate` instead of this package — a `ctxgate.py` in the
    working directory or on PYTHONPATH — or None. (A folder without
    __init__.py loses to the package: it is no shadow.)"""
    ours = Path(__file__).resolve().parent
    search = [cwd or os.getcwd()] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    for folder in search:
        try:
            spec = importlib.machinery.PathFinder.find_spec("ctxgate", [str(folder)])
        except (ImportError, OSError, ValueError):
            continue
        if spec is None or spec.origin is None or spec.origin == "namespace":
            continue
        if Path(spec.origin).resolve().parent == ours:
            return None
        return spec.origin
    return None


# The runs in progress and their scratch folders, for a signal to stop.
_RUNS = set()
_SCRATCH = set()
_LOCK = threading.Lock()


def stop_process(proc, grace=5.0):
    """SIGTERM (ctxgate stops its subjects and dies), then SIGKILL after `grace` s."""
    if proc.poll() is None:
        try:
            proc.terminate()
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except OSError:
            pass


def _stop_everything():
    with _LOCK:
        runs, folders = list(_RUNS), list(_SCRATCH)
    for proc in runs:
        stop_process(proc)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


when_stopped(_stop_everything)


# `ctxgate check` flags a replay of the saved failures takes too: the
# test's own limits hold for its saved failures as for its new cases.
REPLAY_FLAGS = ("--timeout", "--max-line-bytes", "--max-input-bytes")


def replay_flags(args, timeout):
    """The REPLAY_FLAGS among `args` (`--flag V` or `--flag=V`), and `timeout`."""
    out, args = [], [str(a) for a in args]
    for i, arg in enumerate(args):
        flag = arg.split("=", 1)[0]
        if flag in REPLAY_FLAGS:
            out += [arg] if "=" in arg else args[i:i + 2]
    if timeout is not None:
        out += ["--timeout", str(timeout)]
    return out


class Checker:
    def __init__(self, failures, test_id="the test"):
        self.failures = failures
        self.test_id = test_id
        self.runs = set()
        self.scratch = set()

    def stop(self):
        """Stop this test's runs still going and remove their scratch folders."""
        for proc in list(self.runs):
            stop_process(proc)
        for folder in list(self.scratch):
            shutil.rmtree(folder, ignore_errors=True)

    def run(self, command):
        """Run the binary to its end, as a child that dies with this process."""
        env = {**os.environ, "CTXGATE_DIE_WITH_PARENT": "1"}
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                encoding="utf-8", errors="replace", env=env)
        with _LOCK:
            _RUNS.add(proc)
        self.runs.add(proc)
        try:
            out, err = proc.communicate()
        finally:
            stop_process(proc)  # left by an exception, a Ctrl-C: the run goes too
            for stream in (proc.stdout, proc.stderr):
                stream.close()
            with _LOCK:
                _RUNS.discard(proc)
            self.runs.discard(proc)
        return subprocess.CompletedProcess(command, proc.returncode, out, err)

    def subject_command(self, compact, estimate=None, *, name=None, version="0", invariants=None,
                        wire_formats=None, content_parts=None):
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
        if content_parts is not None:
            words.append("--content-parts" if content_parts else "--text-only")
        return shlex.join(words)

    def check(self, compact, estimate=None, *, cases=1000, config=None, gen_config=None, seed=None,
              name=None, version="0", invariants=None, wire_formats=None, content_parts=None,
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
        shadow = shadowing_ctxgate()
        if shadow:
            pytest.fail(f"ctxgate.check: {shown(shadow)} shadows the ctxgate package: the subject process "
                        f"(python -m ctxgate.subject, started in {shown(os.getcwd())}) would import it "
                        f"instead of {shown(Path(__file__).resolve().parent)}; rename it, or run pytest "
                        f"from another folder", pytrace=False)
        try:
            exe = binary()
        except BinaryNotFound as e:
            pytest.fail(f"ctxgate.check: {e}", pytrace=False)
        with StopOnSignals():
            return self._check(exe, subject, cases=cases, config=config, gen_config=gen_config, seed=seed,
                               timeout=timeout, args=args)

    def _check(self, exe, subject, *, cases, config, gen_config, seed, timeout, args):
        saved = sorted(self.failures.glob("*.json")) if self.failures.is_dir() else []
        if saved:
            print(f"ctxgate: replaying {len(saved)} saved failure(s) from {self.failures} first")
            replay_command = [exe, "replay", str(self.failures), "--subject", subject,
                              *replay_flags(args, timeout)]
            replay = self.run(replay_command)
            counts = re.search(r"^replay: (\d+) held, (\d+) failed, (\d+) skipped", replay.stdout, re.M)
            # Fixtures of which nothing is judged now (the test claims other
            # invariants than when they were saved) neither fail nor block
            # the new cases: replay exits 1 when it judged nothing at all.
            all_skipped = replay.returncode == 1 and counts is not None and counts.group(2) == "0"
            if replay.returncode != 0 and not all_skipped:
                pytest.fail(
                    f"ctxgate: saved failure(s) still fail, replayed before any new case "
                    f"({self.failures}):\n\n{visible(replay.stdout.rstrip())}\n{visible(replay.stderr.rstrip())}"
                    f"\n\nreplay: {shlex.join(replay_command)}\n"
                    f"(fix the compactor; or delete a fixture there to stop replaying it)",
                    pytrace=False)
            print(counts.group(0) if counts else visible(replay.stdout.rstrip() or "replay: (no summary)"))
            if all_skipped:
                print("ctxgate: nothing of the saved failures is judged now (they check invariants "
                      "this test no longer claims); delete them to stop replaying them")
        for what, value in (("config", config), ("gen_config", gen_config)):
            if value is not None:
                try:
                    check_json(value, what)
                except ValueError as e:
                    pytest.fail(f"ctxgate.check: {e}", pytrace=False)
        command = [exe, "check", "--subject", subject, "--cases", str(cases), "--save", str(self.failures)]
        seed = seed if seed is not None else os.environ.get("CTXGATE_SEED")
        if seed is not None:
            command += ["--seed", str(seed)]
        if timeout is not None:
            command += ["--timeout", str(timeout)]
        with tempfile.TemporaryDirectory(prefix="ctxgate-check-") as tmp:
            with _LOCK:
                _SCRATCH.add(tmp)
            self.scratch.add(tmp)
            try:
                for flag, value in (("--config", config), ("--gen-config", gen_config)):
                    if value is not None:
                        file = Path(tmp) / (flag.strip("-") + ".json")
                        file.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
                        command += [flag, str(file)]
                command += [str(a) for a in args]
                result = self.run(command)
            finally:
                with _LOCK:
                    _SCRATCH.discard(tmp)
                self.scratch.discard(tmp)
        if result.returncode == 1 and failure_blocks(result.stdout):
            seed = re.search(r"with --seed (\d+)", result.stdout)
            again = f"\nthis run again: CTXGATE_SEED={seed.group(1)} pytest {shlex.quote(self.test_id)}" if seed else ""
            pytest.fail(visible(failure_text(result.stdout)) + again, pytrace=False)
        if result.returncode != 0:
            # No report to show (the subject never started, bad usage, a
            # signal): what ctxgate said, and the command to try by hand.
            said = "\n".join(part for part in (result.stderr.strip(), result.stdout.strip()) if part)
            pytest.fail(f"ctxgate check exited {exit_status(result.returncode)} without a failure report:\n"
                        f"{visible(said) or '(it printed nothing)'}\n"
                        f"subject: {subject}\ncommand: {shlex.join(command)}",
                        pytrace=False)
        print(visible(result.stdout.rstrip().splitlines()[-1] if result.stdout.strip() else "(no summary)"))
        return result.stdout


def exit_status(code):
    if code < 0:
        try:
            return f"by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"by signal {-code}"
    return str(code)


def failure_blocks(report):
    """The FAILED and FAULT paragraphs of a human report, each a list of lines."""
    blocks, keep = [], False
    for line in report.splitlines():
        if line.startswith(("FAILED ", "FAULT ")) and not line.startswith("FAILED:"):
            keep = True
            blocks.append([])
        elif not line.strip():
            keep = False
        if keep:
            blocks[-1].append(line)
    return blocks


def failure_text(report):
    """The failure blocks of a human report (each FAILED or FAULT paragraph:
    the invariant, the shrunk case, the replay line) and its last line."""
    blocks = failure_blocks(report)
    last = report.rstrip().splitlines()[-1] if report.strip() else "(no report)"
    return "ctxgate check failed:\n\n" + "\n\n".join("\n".join(b) for b in blocks) + "\n\n" + last
