"""ctxgate.agent (issue 45 §7): an agent that runs in the test's own process,
checked over `ctxgate agent --driven`. The tiny agent of
python/examples/test_agent_inproc.py holds at several seeds; with a bug
planted (the system prompt dropped at compaction; a 413 answered by sending
the same body again) the helper names the invariant it fails, with a fixture
that replays; what the agent's own code raises fails its case, not the
helper; and nothing the helper starts outlives it — an exception, a signal,
SIGKILL to the test process."""

import asyncio
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import ctxgate
import ctxgate.agent
from ctxgate.agent import AgentCheckFailed, AgentRunError

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "python" / "src"
INSTALLED = not Path(ctxgate.__file__).resolve().is_relative_to(SRC)
LINUX = Path("/proc/self/stat").exists()

# The example's agent, loaded by path (one copy of it: the example is what
# users read), under a name pytest does not collect twice.
_spec = importlib.util.spec_from_file_location("agent_example", ROOT / "python" / "examples" / "test_agent_inproc.py")
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)

OWN = example.DEPLOYMENTS["own-limits"]
EXPRESS = example.DEPLOYMENTS["behind-express-100kb"]


@pytest.fixture(scope="module")
def exe():
    try:
        return ctxgate.binary()
    except FileNotFoundError as e:
        pytest.skip(str(e))


def check(deployment, bug=None, *, tmp_path, **kw):
    limits, settings, invariants = deployment
    kw.setdefault("cases", 8)
    return ctxgate.agent.check(lambda case: example.run_case(case, limits, bug), config=settings,
                               invariants=invariants, save=tmp_path / "failures", **kw)


# --- a correct agent, and planted bugs ------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_correct_in_process_agent_holds_every_invariant(exe, tmp_path, seed):
    for deployment in (OWN, EXPRESS):
        report = check(deployment, tmp_path=tmp_path, seed=seed)
        assert report.ok, report.failure_message()
        assert report.seed == seed and report.failures == [] and report.fixtures == []
        assert report.json["agent"] == "(driven)" and report.json["dialects"] == ["openai-chat"]
        verdicts = report.verdicts
        assert all(v["fail"] == 0 for v in verdicts.values()), verdicts
        assert verdicts["pinned-kept"]["pass"] > 0, verdicts
        assert all(v["pass"] + v["notApplicable"] == 8 for v in verdicts.values()), verdicts
    # Behind the gateway the agent met 413s and recovered from them.
    coverage = report.json["coverage"]
    assert coverage["refusedTooLarge"] > 0 and coverage["recoveries"] > 0, coverage


def test_a_dropped_system_prompt_fails_pinned_kept_with_a_fixture_that_replays(exe, tmp_path):
    report = check(OWN, "drops-system-prompt", tmp_path=tmp_path, seed=1)
    assert report.exit_code == 1 and report.failed_invariants == ["pinned-kept"], report.failure_message()
    [fixture] = report.fixtures
    assert os.path.isabs(fixture) and Path(fixture).parent == tmp_path / "failures"
    saved = json.loads(Path(fixture).read_text())
    assert saved["op"] == "agent" and saved["invariants"] == ["pinned-kept"]
    assert saved["request"]["headers"]["authorization"] == "[redacted]"
    assert any(c["invariant"] == "pinned-kept" for c in report.failing_cases)
    with pytest.raises(AgentCheckFailed) as raised:
        report.assert_ok()
    message = str(raised.value)
    assert "FAILED pinned-kept (case " in message and "not in it verbatim" in message, message
    assert f"fixture: {fixture}" in message and "ctxgate.agent.replay(run_case, " in message, message
    # The fixture still fails against the buggy agent and holds against the fixed one.
    limits = OWN[0]
    again = ctxgate.agent.replay(lambda case: example.run_case(case, limits, "drops-system-prompt"), fixture,
                                 expect_failures=True)
    assert again.ok and "FAILED " in again.text and "pinned-kept" in again.text, again.text
    fixed = ctxgate.agent.replay(lambda case: example.run_case(case, limits), fixture)
    assert fixed.ok and "1 held, 0 failed" in fixed.text, fixed.text
    with pytest.raises(AgentCheckFailed):
        ctxgate.agent.replay(lambda case: example.run_case(case, limits, "drops-system-prompt"),
                             fixture).assert_ok()


def test_a_driven_runs_report_file_replays_with_driven_not_a_command(exe, tmp_path):
    # The report a driven run writes (`--out`) names the fixture's replay as
    # the driving program runs it: `--driven`, never `--run '(driven)'`.
    out = tmp_path / "report.txt"
    report = check(OWN, "drops-system-prompt", tmp_path=tmp_path, seed=1, extra_args=["--out", str(out)])
    assert report.exit_code == 1, report.failure_message()
    text = out.read_text()
    [fixture] = report.fixtures
    replays = [line for line in text.splitlines() if "ctxgate agent replay" in line]
    assert replays and all(line.rstrip().endswith("--driven") for line in replays), text
    assert fixture in replays[0] and "(driven)" not in replays[0], text


def test_resending_after_a_413_fails_recovers_after_refusal(exe, tmp_path):
    report = check(EXPRESS, "resend-on-413", tmp_path=tmp_path, seed=1)
    assert report.exit_code == 1 and "recovers-after-refusal" in report.failed_invariants, report.failure_message()
    failure = next(f for f in report.failures if f["invariant"] == "recovers-after-refusal")
    assert "refused (413)" in failure["detail"], failure
    assert failure["fixture"] in report.fixtures and Path(failure["fixture"]).is_file()
    assert report.errors, "the agent gave up with an exception: kept beside the report"
    assert "GaveUp: the request does not fit" in report.failure_message()


def test_an_async_agent_runs_on_one_loop_and_check_async_in_a_running_one(exe, tmp_path):
    limits, settings, _ = OWN
    loops = set()

    async def run_case(case):
        loops.add(id(asyncio.get_running_loop()))
        return await asyncio.to_thread(example.run_case, case, limits)

    report = ctxgate.agent.check(run_case, config=settings, cases=4, seed=5, save=tmp_path)
    assert report.ok and len(loops) == 1, report.failure_message()
    with pytest.raises(RuntimeError, match="check_async"):
        asyncio.run(_call_check_in_a_loop(run_case, settings, tmp_path))
    report = asyncio.run(ctxgate.agent.check_async(run_case, config=settings, cases=4, seed=5, save=tmp_path))
    assert report.ok, report.failure_message()
    # A plain function, from an async test: it runs in a worker thread.
    report = asyncio.run(ctxgate.agent.check_async(lambda case: example.run_case(case, limits), config=settings,
                                                   cases=3, seed=6, save=tmp_path))
    assert report.ok, report.failure_message()


async def _call_check_in_a_loop(run_case, settings, tmp_path):
    return ctxgate.agent.check(run_case, config=settings, cases=1, save=tmp_path)


# --- the agent's own failures are its cases' --------------------------------------


class Hostile(Exception):
    def __str__(self):
        raise ValueError("no text for you")


@pytest.mark.parametrize("raised, shown", [
    (RuntimeError("the SDK's connection pool is closed"), "RuntimeError: the SDK's connection pool is closed"),
    (Hostile(), "Hostile: <Hostile whose str() failed>"),
    (SystemExit(3), "exit 3"),
], ids=["exception", "str-raises", "system-exit"])
def test_what_the_agents_code_raises_fails_its_case_not_the_helper(exe, tmp_path, raised, shown):
    limits, settings, _ = OWN
    seen = []

    def run_case(case):
        seen.append(case.index)
        if case.index == 1:
            raise raised
        return example.run_case(case, limits)

    report = ctxgate.agent.check(run_case, config=settings, cases=3, seed=7, save=tmp_path,
                                 extra_args=["--shrink-runs", "2"])
    assert report.exit_code == 1 and report.failed_invariants == ["finishes"], report.failure_message()
    assert {0, 1, 2} <= set(seen), seen  # the cases after it ran
    [failure] = report.failures
    assert failure["case"] == 1 and shown in failure["received"], failure
    if isinstance(raised, SystemExit):
        assert report.errors == []
    else:
        assert report.errors and report.errors[0][1] is raised
        assert "run_case raised in" in report.failure_message()


def test_a_case_and_its_environment(exe, tmp_path):
    """What run_case is handed: SPEC §9's base URLs, dummy key, task and workspace."""
    limits, settings, _ = OWN
    cases = []

    def run_case(case):
        cases.append(case)
        assert Path(case.workspace).is_dir() and Path(case.prompt_file).read_bytes().decode() == case.prompt
        return example.run_case(case, limits)

    assert ctxgate.agent.check(run_case, config=settings, cases=2, seed=8, save=tmp_path).ok
    case = cases[0]
    assert case.url.startswith("http://127.0.0.1:") and case.base_url == case.url + "/v1"
    assert case.anthropic_base_url == case.url and case.api_key.startswith("sk-ctxgate")
    assert case.env == {"OPENAI_BASE_URL": case.base_url, "OPENAI_API_BASE": case.base_url,
                        "ANTHROPIC_BASE_URL": case.url, "CTXGATE_AGENT_URL": case.url,
                        "OPENAI_API_KEY": case.api_key, "ANTHROPIC_API_KEY": case.api_key,
                        "CTXGATE_AGENT_PROMPT": case.prompt, "CTXGATE_AGENT_PROMPT_FILE": case.prompt_file,
                        "CTXGATE_AGENT_CASE": str(case.index)}
    assert case.deadline_seconds == 120.0
    # The case folders were in the helper's scratch folder: gone.
    assert not any(Path(c.workspace).exists() for c in cases)


def test_an_async_agent_past_its_deadline_is_cancelled(exe, tmp_path):
    _, settings, _ = OWN

    async def run_case(case):
        await asyncio.sleep(60)

    started = time.monotonic()
    report = ctxgate.agent.check(run_case, config=settings, cases=1, seed=9, save=tmp_path, timeout=1,
                                 extra_args=["--shrink-runs", "1"])
    assert time.monotonic() - started < 30
    assert "finishes" in report.failed_invariants, report.failure_message()
    assert any("deadline" in str(e) for _, e in report.errors), report.errors


# --- bad usage -----------------------------------------------------------------------


def test_bad_usage_is_an_agent_run_error_saying_why(exe, tmp_path):
    with pytest.raises(AgentRunError, match=r"contextWindow") as raised:
        ctxgate.agent.check(lambda case: "", config={"contextWindow": "big"}, cases=1, save=tmp_path)
    assert "command: " in str(raised.value)
    with pytest.raises(AgentRunError, match=r"--cases must be at least 1"):
        ctxgate.agent.check(lambda case: "", cases=0, save=tmp_path)
    with pytest.raises(AgentRunError, match=r"no-such-invariant"):
        ctxgate.agent.check(lambda case: "", invariants=["no-such-invariant"], cases=1, save=tmp_path)
    with pytest.raises(TypeError, match="JSON data"):
        ctxgate.agent.check(lambda case: "", config={"window": object()}, save=tmp_path)
    with pytest.raises(TypeError, match="run_case must be a function"):
        ctxgate.agent.check("my_agent.run", save=tmp_path)
    with pytest.raises(AgentRunError, match="none: no such file"):
        ctxgate.agent.replay(lambda case: "", tmp_path / "none")


def test_a_ctxgate_bin_that_points_nowhere_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXGATE_BIN", str(tmp_path / "no-ctxgate"))
    with pytest.raises(ctxgate.BinaryNotFound, match="CTXGATE_BIN"):
        ctxgate.agent.check(lambda case: "", save=tmp_path)
    assert ctxgate.check_agent is ctxgate.agent.check


# --- nothing outlives the helper --------------------------------------------------------


def ctxgate_children():
    """The pids of this process's ctxgate children (/proc)."""
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == me and b"--driven" in cmdline:
            out.append(int(entry))
    return out


def gone(pid, within=20.0):
    """Whether pid is gone (or a zombie) within that many seconds."""
    end = time.monotonic() + within
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return True
        if state[state.rindex(")") + 2] == "Z":
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)


@pytest.mark.skipif(not LINUX, reason="reads /proc")
@pytest.mark.parametrize("raised", [KeyboardInterrupt, GeneratorExit])
def test_an_interrupt_in_the_agent_stops_ctxgate_and_removes_the_scratch(exe, tmp_path, raised):
    seen = {}

    def run_case(case):
        [seen["pid"]] = ctxgate_children()
        seen["workspace"] = case.workspace
        raise raised()

    with pytest.raises(raised):
        ctxgate.agent.check(run_case, cases=3, save=tmp_path)
    assert gone(seen["pid"]), "ctxgate outlived the helper"
    assert not Path(seen["workspace"]).exists()
    assert ctxgate_children() == []


SLOW_AGENT_TEST = """
import os, sys, time
import ctxgate.agent

def run_case(case):
    print(f"{os.getpid()} {case.workspace}", flush=True)
    time.sleep(600)

ctxgate.agent.check(run_case, cases=2, save=sys.argv[1])
"""


def child_env():
    out = dict(os.environ)
    if not INSTALLED:
        out["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    return out


@pytest.mark.skipif(not LINUX, reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGKILL],
                         ids=lambda s: s.name)
def test_a_signal_to_the_test_process_leaves_no_ctxgate(exe, tmp_path, sig):
    """SIGKILL cannot be caught: ctxgate dies with its parent all the same
    (CTXGATE_DIE_WITH_PARENT); only the scratch folder stays then."""
    script = tmp_path / "slow_agent_test.py"
    script.write_text(SLOW_AGENT_TEST)
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path / "failures")], env=child_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid = workspace = None
    try:
        line = parent.stdout.readline().decode()
        assert line, parent.communicate(timeout=30)
        _, workspace = line.split(" ", 1)
        workspace = workspace.strip()
        kids = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(p) == parent.pid]
        [pid] = [k for k in kids if b"--driven" in Path(f"/proc/{k}/cmdline").read_bytes()]
        parent.send_signal(sig)
        parent.wait(30)
        assert gone(pid), f"ctxgate outlived {sig.name} to the test process"
        assert parent.returncode in (-sig, 128 + sig, 1), (parent.returncode, parent.stderr.read())
        if sig != signal.SIGKILL:
            assert not Path(workspace).exists(), f"the case folder outlived {sig.name}"
    finally:
        if parent.poll() is None:
            parent.kill()
        if pid is not None and not gone(pid, 0):
            os.kill(pid, signal.SIGKILL)
        if workspace and Path(workspace).parents[2].name.startswith("ctxgate-agent-py-"):
            shutil.rmtree(Path(workspace).parents[2], ignore_errors=True)  # (SIGKILL: the scratch stays)


def _ppid(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])


def one_request_with_a_tool_named_add(case):
    """An agent whose only tool is not one ctxgate knows to read a file with."""
    body = {"model": "m", "messages": [{"role": "user", "content": case.prompt}],
            "tools": [{"type": "function", "function": {"name": "add", "parameters": {
                "type": "object", "properties": {"x": {"type": "string"}}}}}]}
    request = urllib.request.Request(case.base_url + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
    return "done"


def test_an_agent_with_no_tool_that_reads_a_file_is_bad_usage_and_tools_maps_one(exe, tmp_path):
    with pytest.raises(AgentRunError, match=r"the script cannot be played: .*advertises the tools add.*tools=") as e:
        ctxgate.agent.check(one_request_with_a_tool_named_add, cases=1, seed=1, save=tmp_path)
    assert "command: " in str(e.value)
    # Mapped with `tools`, the case is played: the agent stops after one answer, and fails `finishes`.
    report = ctxgate.agent.check(one_request_with_a_tool_named_add, cases=1, seed=1, save=tmp_path, tools=["add:x"],
                                 extra_args=["--shrink-runs", "1"])
    assert "finishes" in report.failed_invariants, report.failure_message()
