"""The pytest plugin and `python -m ctxgate` (issue 44 §2, §4, §6): nothing
they start outlives them (SIGTERM, SIGINT, SIGHUP to the Python parent,
with /proc read until no process of the tree is left); saved failures
replay under the test's own timeout; errors name their cause — a subject
that never starts, a bound method or a function of the wrong arity, a
`ctxgate.py` shadowing the package, a CTXGATE_BIN that points nowhere."""

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ctxgate
from ctxgate.pytest_plugin import Checker, function_ref, replay_flags, shadowing_ctxgate

SRC = Path(__file__).resolve().parents[1] / "src"
INSTALLED = not Path(ctxgate.__file__).resolve().is_relative_to(SRC)
LINUX = Path("/proc/self/stat").exists()


def env(**extra):
    """The environment of a child Python: the checkout's package unless
    this one is installed (python/ci.sh: the wheel)."""
    out = {**os.environ, **extra}
    if not INSTALLED:
        out["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    out.pop("PYTEST_ADDOPTS", None)
    return out


def pytest_command(*args):
    """pytest in a child, with the plugin (its entry point when the package
    is installed; -p otherwise), without the working directory on sys.path
    (as the `pytest` script runs)."""
    plugin = [] if any(e.name == "ctxgate" for e in importlib.metadata.entry_points(group="pytest11")) \
        else ["-p", "ctxgate.pytest_plugin"]
    run = "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; import pytest; " \
          "sys.exit(pytest.main(sys.argv[1:]))"
    return [sys.executable, "-c", run, "-p", "no:cacheprovider", *plugin, *args]


@pytest.fixture(scope="module")
def exe():
    try:
        return ctxgate.binary()
    except FileNotFoundError as e:
        pytest.skip(str(e))


# --- process trees ------------------------------------------------------------


def procs():
    """{pid: (ppid, state, cmdline)} of every process, read from /proc."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(entry)] = (int(fields[1]), fields[0], cmdline)
    return out


def tree(root):
    """The pids of root and its descendants, alive (not zombies) now."""
    table = procs()
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in table and table[pid][1] != "Z":
            found.add(pid)
        todo += [p for p, (ppid, _, _) in table.items() if ppid == pid and p not in found]
    return found, table


def wait_for(what, deadline=60.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.05)
    return what()


def alive(pids):
    table = procs()
    return {p: table[p][2] for p in pids if p in table and table[p][1] != "Z"}


def kill_survivors(parent, pids):
    """After a failed test: what it started goes, by pid."""
    if parent.poll() is None:
        parent.kill()
    for pid in alive(pids or set()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


SLOW_SUBJECT = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
import ctxgate

def compact(config, messages):
    open(f"compacting.{os.getpid()}", "w").close()
    time.sleep(600)
    return messages

ctxgate.serve(compact, name="slow", version="1")
"""

SLOW_COMPACTOR = """
import os, time

def compact(config, messages):
    open(f"compacting.{os.getpid()}", "w").close()
    time.sleep(600)
    return messages
"""


def compacting(root, folder):
    """The process tree of root once a subject in it is inside compact
    (it wrote compacting.PID in folder), else None."""
    pids, _ = tree(root)
    return pids if any(int(f.suffix[1:]) in pids for f in folder.glob("compacting.*")) else None


@pytest.mark.skipif(not LINUX, reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_to_python_minus_m_ctxgate_leaves_no_process(tmp_path, exe, sig):
    (tmp_path / "slow_subject.py").write_text(SLOW_SUBJECT)
    parent = subprocess.Popen([sys.executable, "-m", "ctxgate", "check", "--subject",
                               f"{sys.executable} slow_subject.py {SRC}", "--cases", "5", "--timeout", "900"],
                              cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    pids = None
    try:
        pids = wait_for(lambda: compacting(parent.pid, tmp_path))
        assert pids, f"the subject never ran: {parent.poll()} {parent.stderr.read() if parent.poll() else ''}"
        parent.send_signal(sig)
        parent.wait(60)
        assert wait_for(lambda: not alive(pids), 20), f"outlived {sig.name} to the parent: {alive(pids)}"
        assert parent.returncode in (-sig, 128 + sig), (parent.returncode, parent.stderr.read())
    finally:
        kill_survivors(parent, pids)


SLOW_TEST = """
import slow_compactor

def test_slow(ctxgate):
    ctxgate.check(slow_compactor.compact, cases=3, timeout=900, invariants=["tool-pairing"])
"""


@pytest.mark.skipif(not LINUX, reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL],
                         ids=lambda s: s.name)
def test_a_signal_to_pytest_running_the_plugin_leaves_no_process_and_no_scratch(tmp_path, exe, sig):
    """SIGKILL cannot be caught: ctxgate dies with pytest all the same
    (CTXGATE_DIE_WITH_PARENT), only the scratch folder stays."""
    project, scratch = tmp_path / "project", tmp_path / "tmp"
    project.mkdir()
    scratch.mkdir()
    (project / "slow_compactor.py").write_text(SLOW_COMPACTOR)
    (project / "test_slow.py").write_text(SLOW_TEST)
    parent = subprocess.Popen(pytest_command("-q", "test_slow.py"), cwd=project, env=env(TMPDIR=str(scratch)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    pids = None
    try:
        pids = wait_for(lambda: compacting(parent.pid, project))
        assert pids, f"the subject never ran: {parent.poll()} {parent.stdout.read() if parent.poll() else ''}"
        assert list(scratch.glob("ctxgate-check-*")), "no scratch folder while the check runs"
        parent.send_signal(sig)
        out = parent.communicate(timeout=60)[0].decode(errors="replace")
        assert wait_for(lambda: not alive(pids), 20), f"outlived {sig.name} to pytest: {alive(pids)}\n{out}"
        if sig != signal.SIGKILL:
            assert not list(scratch.glob("ctxgate-check-*")), f"the scratch folder outlived {sig.name}"
        if sig == signal.SIGINT:  # KeyboardInterrupt: pytest's own way out
            assert parent.returncode == 2 and "KeyboardInterrupt" in out, (parent.returncode, out)
        else:  # pytest dies of the signal, as it would without the plugin
            assert parent.returncode == -sig, (parent.returncode, out)
    finally:
        kill_survivors(parent, pids)


def test_python_minus_m_ctxgate_names_a_bad_ctxgate_bin(tmp_path):
    not_elf = tmp_path / "not an elf"
    not_elf.write_text("#!/nonexistent/interpreter\n")
    not_elf.chmod(0o755)
    for path, said in [(tmp_path / "absent", "no such file"), (tmp_path, "not an executable file"),
                       (tmp_path / "a\nb\x1b[2J", "no such file"), (not_elf, "cannot run")]:
        done = subprocess.run([sys.executable, "-m", "ctxgate", "--version"], capture_output=True, text=True,
                              env=env(CTXGATE_BIN=str(path)))
        assert done.returncode == 2 and done.stdout == "", (path, done)
        [line] = done.stderr.splitlines()  # one line: no traceback
        assert line.startswith("python -m ctxgate: ") and said in line, line
        assert json.dumps(str(path), ensure_ascii=False) in line and "\x1b" not in line, line


# --- the plugin's errors and replays ------------------------------------------------------


class Holder:
    def compact(self, config, messages):
        return messages

    @staticmethod
    def static(config, messages):
        return messages

    @classmethod
    def klass(cls, config, messages):
        return messages


def one_argument(messages):
    return messages


def three_arguments(config, messages, extra):
    return messages


def test_check_refuses_a_bound_method_and_a_wrong_arity_before_running():
    with pytest.raises(TypeError, match="compact is a method bound to a Holder object: the subject process "
                                        "imports test_plugin:Holder.compact"):
        function_ref(Holder().compact, "compact")
    with pytest.raises(TypeError, match=r"compact must take two arguments, compact\(config, messages\); "
                                        r"one_argument\(messages\) cannot be called so"):
        function_ref(one_argument, "compact")
    with pytest.raises(TypeError, match=r"estimate must take two arguments.*three_arguments"):
        function_ref(three_arguments, "estimate")
    assert function_ref(Holder.static, "compact")[0] == "test_plugin:Holder.static"
    assert function_ref(Holder.klass, "compact")[0] == "test_plugin:Holder.klass"
    # serve refuses them too, before it reads a request (never a fault of the library, never saved)
    with pytest.raises(TypeError, match="serve: compact must take two arguments"):
        ctxgate.serve(one_argument, name="t", version="1", stdin=[], stdout=None)


def test_shadowing_ctxgate_names_the_module_that_would_be_imported(tmp_path):
    assert shadowing_ctxgate(tmp_path) is None
    (tmp_path / "ctxgate").mkdir()  # a folder without __init__.py loses to the package
    assert shadowing_ctxgate(tmp_path) is None
    (tmp_path / "ctxgate.py").write_text("print('mine')\n")
    assert shadowing_ctxgate(tmp_path) == str(tmp_path / "ctxgate.py")


def test_check_says_a_ctxgate_py_in_the_working_directory_shadows_the_package(tmp_path, exe):
    (tmp_path / "ctxgate.py").write_text("raise SystemExit('the user module ctxgate.py')\n")
    (tmp_path / "mine.py").write_text("def compact(config, messages):\n    return messages\n")
    (tmp_path / "test_mine.py").write_text("import mine\n\ndef test_it(ctxgate):\n"
                                           "    ctxgate.check(mine.compact, cases=2)\n")
    done = subprocess.run(pytest_command("-q", "test_mine.py"), cwd=tmp_path, env=env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f'"{tmp_path / "ctxgate.py"}" shadows the ctxgate package' in done.stdout, done.stdout
    assert "rename it" in done.stdout and not (tmp_path / ".ctxgate").exists()


@pytest.mark.skipif(not INSTALLED, reason="the entry point is the installed wheel's (python/ci.sh)")
def test_python_minus_m_pytest_names_a_ctxgate_py_that_shadows_the_package(tmp_path):
    """Under `python -m pytest` the working directory is first on sys.path:
    the plugin's entry point (ctxgate_pytest) says which file shadows it."""
    (tmp_path / "ctxgate.py").write_text("")
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py"],
                          cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and f"{tmp_path / 'ctxgate.py'} shadows the ctxgate package" in said, said
    assert "rename it" in said


def test_a_subject_that_never_starts_says_why(tmp_path, exe):
    (tmp_path / "mine.py").write_text(
        "import os\nif os.environ.get('CTXGATE_SUBJECT'):  # in the subject process only\n"
        "    raise SystemExit('mine: no GPU here')\n\ndef compact(config, messages):\n    return messages\n")
    (tmp_path / "test_mine.py").write_text("import mine\n\ndef test_it(ctxgate):\n"
                                           "    ctxgate.check(mine.compact, cases=2)\n")
    done = subprocess.run(pytest_command("-q", "test_mine.py"), cwd=tmp_path, env=env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "(no report)" not in done.stdout
    assert "without a failure report" in done.stdout and "mine: no GPU here" in done.stdout, done.stdout
    assert "subject: " in done.stdout and "mine:compact" in done.stdout
    assert not list((tmp_path / ".ctxgate").rglob("*.json")), "a fixture saved for a subject that never ran"


def test_replay_flags_carry_the_tests_own_limits():
    assert replay_flags((), None) == []
    assert replay_flags((), 30) == ["--timeout", "30"]
    assert replay_flags(["--timeout", "20", "--jobs", "2", "--max-line-bytes=9"], None) == \
        ["--timeout", "20", "--max-line-bytes=9"]


FIXTURE = {"ctxgate": 1, "name": "slow-one", "see": "test_plugin", "op": "compact",
           "config": {"contextWindow": 128000, "threshold": 0.7, "transportMaxBodyBytes": 8388608,
                      "bytesPerToken": 4, "keepRecent": 2, "summaryMaxBytes": 4096, "wireFormat": "engine",
                      "envelope": {}},
           "messages": [{"role": "user", "content": "slow"}], "invariants": ["tool-pairing"]}


def test_saved_failures_replay_under_the_tests_own_timeout(tmp_path, exe):
    """The saved case takes 3 s: under the test's timeout=1 the replay
    times out (under the binary's default 10 s it held)."""
    (tmp_path / "mine.py").write_text(
        "import time\n\ndef compact(config, messages):\n"
        "    if messages and messages[0].get('content') == 'slow':\n        time.sleep(3)\n    return messages\n")
    (tmp_path / "test_mine.py").write_text("import mine\n\ndef test_it(ctxgate):\n    ctxgate.check(mine.compact, "
                                           "cases=2, timeout=1, invariants=['tool-pairing'])\n")
    saved = tmp_path / ".ctxgate" / "failures" / "test_mine.test_it"
    saved.mkdir(parents=True)
    (saved / "slow-one.json").write_text(json.dumps(FIXTURE))
    done = subprocess.run(pytest_command("-q", "--rootdir", str(tmp_path), "test_mine.py"), cwd=tmp_path,
                          env=env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "saved failure(s) still fail" in done.stdout and "--timeout 1" in done.stdout, done.stdout
    assert "timeout" in done.stdout.split("saved failure(s) still fail")[1].lower()


def test_config_that_is_not_json_is_named_before_running(tmp_path, exe):
    checker = Checker(tmp_path / "failures")
    with pytest.raises(pytest.fail.Exception, match=r"config.threshold: nan is not a JSON number"):
        checker.check(Holder.static, config={"threshold": float("nan")}, cases=1)
    assert not (tmp_path / "failures").exists()
