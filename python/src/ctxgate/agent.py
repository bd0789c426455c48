"""In-process agents: ctxgate plays the model for an agent that runs inside
this process — an SDK agent in a pytest test — with no process per case.

    import ctxgate.agent

    def run_case(case):
        agent = MyAgent(base_url=case.base_url, api_key=case.api_key)
        return agent.run(case.prompt)          # the final answer

    def test_my_agent_compacts_safely():
        report = ctxgate.agent.check(run_case, config={"contextWindow": 32000,
                                     "transportMaxBodyBytes": 100_000}, cases=10)
        report.assert_ok()

`check` starts `ctxgate agent --driven` (SPEC §9), which generates the
cases, starts a loopback model endpoint for each and judges every request
the agent sends. For each case `run_case(case)` is called with the case's
base URLs, dummy key, task and workspace; it runs the agent to its end and
returns its final output. An exception it raises is the agent's exit 1
(its type and message are what ctxgate shows); `SystemExit(n)` is exit n.
`run_case` may be an `async def`: every case is then awaited on one event
loop, and cancelled at the case's deadline. A plain function cannot be
stopped from outside: past the deadline the case is failed (`finishes`)
but still waited for, so give the agent's HTTP client a timeout. Cases may
come again (a failure is re-run to confirm it, then shrunk by re-running
smaller scripts): run whatever comes, one at a time.

The agent's tools read the files ctxgate asks for by their absolute paths
(inside `case.workspace`); nothing needs to change the working directory.

Nothing outlives the call: ctxgate is stopped when `check` returns or
raises (an exception of the helper's, KeyboardInterrupt), it is told to
die with this process (CTXGATE_DIE_WITH_PARENT), and a SIGTERM or SIGHUP
during the check stops it and removes the scratch folder (the case
folders are in it) before the signal does what it would have done. An
exception `run_case` raises is not the helper's: it fails that case.

Standard library only.
"""

import asyncio
import inspect
import json
import os
import shlex
import signal
import subprocess
import tempfile
import threading
import traceback
from dataclasses import dataclass, field

from . import binary
from ._signals import StopOnSignals, when_stopped

__all__ = ["AgentCase", "AgentCheckFailed", "AgentReport", "AgentRunError", "ReplayResult", "check",
           "check_async", "replay", "replay_async"]

# The most of a case's output or error sent back to ctxgate (it keeps the
# last few KB of each in its report).
MAX_TEXT = 64 * 1024
# How much of ctxgate's stderr is kept for a message.
STDERR_TAIL = 16 * 1024
# The default folder for shrunk failures: agent fixtures, beside the
# compactor fixtures the pytest plugin keeps under .ctxgate/failures.
DEFAULT_SAVE = os.path.join(".ctxgate", "agent-failures")


class AgentRunError(RuntimeError):
    """ctxgate could not run the check, or ended without a report (bad
    usage, a config it refused, a signal): the message holds what it said
    on stderr and the command."""


class AgentCheckFailed(AssertionError):
    """Raised by `AgentReport.assert_ok()` / `ReplayResult.assert_ok()`: the
    message holds each failure, its fixture and how to replay it."""


@dataclass(frozen=True)
class AgentCase:
    """One case ctxgate plays: point the agent at `base_url` (OpenAI's
    clients) or `anthropic_base_url` (Anthropic's), key `api_key`, task
    `prompt`."""

    index: int
    url: str
    base_url: str
    openai_base_url: str
    anthropic_base_url: str
    api_key: str
    prompt: str
    prompt_file: str
    workspace: str
    deadline_seconds: float
    raw: dict = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_message(cls, case):
        def text(key):
            value = case.get(key)
            if not isinstance(value, str):
                raise AgentRunError(f"ctxgate sent a case whose {key!r} is not a string: {_short(case)}")
            return value

        index = case.get("index")
        if not isinstance(index, int):
            raise AgentRunError(f"ctxgate sent a case without an index: {_short(case)}")
        deadline = case.get("deadlineSeconds")
        return cls(index=index, url=text("url"), base_url=text("openaiBaseUrl"),
                   openai_base_url=text("openaiBaseUrl"), anthropic_base_url=text("anthropicBaseUrl"),
                   api_key=text("apiKey"), prompt=text("prompt"), prompt_file=text("promptFile"),
                   workspace=text("workspace"),
                   deadline_seconds=float(deadline) if isinstance(deadline, (int, float)) else 120.0,
                   raw=case)

    @property
    def env(self):
        """The variables SPEC §9 gives an agent process (a dict), for an
        agent that reads only its environment, or a tool that starts one
        (prefer passing the URL and key explicitly: os.environ is shared by
        every thread of the process)."""
        return {"OPENAI_BASE_URL": self.openai_base_url, "OPENAI_API_BASE": self.openai_base_url,
                "ANTHROPIC_BASE_URL": self.anthropic_base_url, "CTXGATE_AGENT_URL": self.url,
                "OPENAI_API_KEY": self.api_key, "ANTHROPIC_API_KEY": self.api_key,
                "CTXGATE_AGENT_PROMPT": self.prompt, "CTXGATE_AGENT_PROMPT_FILE": self.prompt_file,
                "CTXGATE_AGENT_CASE": str(self.index)}


@dataclass
class AgentReport:
    """What `check` found. `json` is ctxgate's JSON report (SPEC §9's
    report: tally, failures, flaky, coverage), `text` its human report."""

    exit_code: int
    json: dict
    text: str
    command: list
    stderr: str = ""
    errors: list = field(default_factory=list)  # (case index, the exception run_case raised)

    @property
    def ok(self):
        """Every checked invariant held and each was exercised (exit 0)."""
        return self.exit_code == 0

    @property
    def failures(self):
        """The shrunk failures: dicts with `invariant`, `case`, `detail`,
        `expected`, `received`, `shrunk`, `fixture`, `replay`."""
        return list(self.json.get("failures") or [])

    @property
    def flaky(self):
        """Failures that did not repeat on every re-run (not shrunk)."""
        return list(self.json.get("flaky") or [])

    @property
    def failed_invariants(self):
        """The names of the invariants that failed or were flaky, in order, once each."""
        names = [f.get("invariant") for f in self.failures + self.flaky]
        return list(dict.fromkeys(n for n in names if isinstance(n, str)))

    @property
    def verdicts(self):
        """Each judged invariant's tally over the cases: {name: {"pass": n,
        "fail": n, "notApplicable": n}}."""
        return dict(self.json.get("tally") or {})

    @property
    def failing_cases(self):
        """Every case that failed an invariant: dicts with `case`,
        `invariant`, `detail` (before shrinking; one a case and invariant)."""
        return list(self.json.get("failingCases") or [])

    @property
    def seed(self):
        return self.json.get("seed")

    @property
    def fixtures(self):
        """The saved fixture files of the failures (absolute paths)."""
        return [f["fixture"] for f in self.failures if isinstance(f.get("fixture"), str)]

    def assert_ok(self):
        """Raise AgentCheckFailed with the findings unless every invariant held."""
        __tracebackhide__ = True  # (pytest: the test's line, not this one)
        if not self.ok:
            raise AgentCheckFailed(self.failure_message())
        return self

    def failure_message(self):
        lines = [f"ctxgate agent: the in-process agent failed its checks (exit {self.exit_code}, "
                 f"seed {self.seed})"]
        for f in self.failures:
            lines += ["", f"FAILED {f.get('invariant')} (case {f.get('case')}): {_one_line(f.get('detail'))}"]
            for key in ("expected", "received"):
                if f.get(key):
                    lines.append(f"  {key}: {_one_line(f[key], 400)}")
            shrunk = f.get("shrunk") or {}
            if shrunk.get("to"):
                to = shrunk["to"]
                lines.append(f"  shrunk to {to.get('turns')} turn(s), {to.get('calls')} call(s), "
                             f"{to.get('resultBytes')} result bytes in {shrunk.get('runs')} run(s)")
            if isinstance(f.get("fixture"), str):
                lines.append(f"  fixture: {f['fixture']}")
                lines.append(f"  replay:  ctxgate.agent.replay(run_case, {f['fixture']!r})")
        for f in self.flaky:
            lines += ["", f"FLAKY {f.get('invariant')} (case {f.get('case')}): failed again "
                      f"{f.get('failedAgain')} of {f.get('reruns')} re-run(s): {_one_line(f.get('detail'))}"]
        never = self.json.get("neverExercised") or []
        if never and not self.failures and not self.flaky:
            lines += ["", "never exercised: " + ", ".join(map(str, never))]
        if self.json.get("unplayable"):
            lines += ["", f"the script cannot be played: {_one_line(self.json['unplayable'])}"]
        if self.errors:
            index, exc = self.errors[0]
            lines += ["", f"run_case raised in {len(self.errors)} run(s); the first, case {index}:",
                      _tail("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)), 4000)
                      .rstrip()]
        verdict = self.text.rstrip().splitlines()[-1] if self.text.strip() else ""
        if verdict:
            lines += ["", verdict]
        if self.seed is not None:
            lines.append(f"this run again: check(..., seed={self.seed})")
        return "\n".join(lines)


@dataclass
class ReplayResult:
    """What `replay` found: ctxgate's replay text (a line a fixture, then
    the verdict) and its exit code."""

    exit_code: int
    text: str
    command: list
    stderr: str = ""
    errors: list = field(default_factory=list)

    @property
    def ok(self):
        return self.exit_code == 0

    def assert_ok(self):
        __tracebackhide__ = True
        if not self.ok:
            raise AgentCheckFailed(f"ctxgate agent replay: exit {self.exit_code}\n{self.text.rstrip()}")
        return self


def _one_line(value, limit=300):
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _short(value):
    return _one_line(json.dumps(value, ensure_ascii=False), 200)


def _tail(text, limit):
    return text if len(text) <= limit else "…" + text[-limit:]


def _clean(text):
    """Text for a JSON line ctxgate reads: valid UTF-8 (a lone surrogate
    becomes U+FFFD), at most MAX_TEXT characters (the end kept)."""
    text = text if isinstance(text, str) else _text_of(text)
    return _tail(text.encode("utf-8", "replace").decode("utf-8", "replace"), MAX_TEXT)


def _text_of(value):
    """str(value), or what can be said of it when its str() raises."""
    try:
        text = str(value)
        if isinstance(text, str):
            return text
    except BaseException:  # a hostile __str__: the agent's, not the helper's, failure
        pass
    return f"<{type(value).__name__} whose str() failed>"


def _described(exc):
    said = _text_of(exc)
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def _as_done(result=None, exc=None):
    """The `done` line's object for what run_case returned or raised."""
    if exc is None:
        return {"exitCode": 0, "output": _clean("" if result is None else _text_of(result))}
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None or isinstance(code, bool) or isinstance(code, int):
            code = int(code or 0)
            return {"exitCode": code if -2**31 <= code < 2**31 else 1, "error": ""}  # (ctxgate reads an i32)
        return {"exitCode": 1, "error": _clean(_text_of(code))}
    return {"exitCode": 1, "error": _clean(_described(exc))}


# --- stopping on a signal ----------------------------------------------------

_LIVE = set()  # the sessions running now, for a signal to stop
_LIVE_LOCK = threading.Lock()


def _stop_live():
    with _LIVE_LOCK:
        live = list(_LIVE)
    for session in live:
        session.stop()


when_stopped(_stop_live)


# --- one run of `ctxgate agent --driven` ---------------------------------------

class _Session:
    """ctxgate started with --driven: its JSON lines read, `done` lines written."""

    def __init__(self, argv, scratch):
        self.argv = argv
        self.scratch = scratch
        self.stderr_tail = ""
        self.other = []  # lines of stdout that are not the driver's (replay's text)
        self.report = None
        self.errors = []
        env = {**os.environ, "CTXGATE_DIE_WITH_PARENT": "1"}
        try:
            # (started from the calling thread: the parent-death signal fires
            # when the thread that started ctxgate ends)
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=env)
        except OSError as e:
            raise AgentRunError(f"cannot run {argv[0]}: {e}") from e
        with _LIVE_LOCK:
            _LIVE.add(self)
        self.drain = threading.Thread(target=self._drain_stderr, name="ctxgate-agent-stderr", daemon=True)
        self.drain.start()

    def _drain_stderr(self):
        tail = b""
        for chunk in iter(lambda: self.proc.stderr.read1(8192), b""):
            tail = (tail + chunk)[-STDERR_TAIL:]
            self.stderr_tail = tail.decode("utf-8", "replace")

    def next_case(self):
        """The next case, or None when ctxgate has sent its report or ended."""
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return None
            text = line.decode("utf-8", "replace").rstrip("\r\n")
            try:
                message = json.loads(text)
            except ValueError:
                message = None
            if isinstance(message, dict) and isinstance(message.get("case"), dict):
                return AgentCase.from_message(message["case"])
            if isinstance(message, dict) and isinstance(message.get("report"), dict):
                self.report = message["report"]
                return None
            self.other.append(text)

    def done(self, case, result=None, exc=None):
        if exc is not None and not isinstance(exc, SystemExit):
            self.errors.append((case.index, exc))
        line = json.dumps({"done": _as_done(result, exc)}, ensure_ascii=False) + "\n"
        try:
            self.proc.stdin.write(line.encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # ctxgate has ended: the next read says so

    def finish(self, grace=30.0):
        """Wait for ctxgate to exit after its report; its exit code."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.stop()
            return self.proc.returncode

    def stop(self):
        """SIGTERM (ctxgate stops what it started and dies), SIGKILL after
        5 s; then the scratch folder goes, and the case folders in it."""
        proc = self.proc
        if proc.poll() is None:
            try:
                proc.terminate()
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            except OSError:
                pass
        if self.scratch is not None:
            self.scratch.cleanup()

    def close(self):
        self.stop()
        self.drain.join(5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def no_report(self, code):
        self.drain.join(5)  # (what ctxgate said last)
        said = "\n".join(p for p in (self.stderr_tail.strip(), "\n".join(self.other).strip()) if p)
        return AgentRunError(f"ctxgate agent ended (exit {_exit_status(code)}) without a report:\n"
                             f"{said or '(it printed nothing)'}\ncommand: {shlex.join(self.argv)}")


def _exit_status(code):
    if code is not None and code < 0:
        try:
            return f"by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"by signal {-code}"
    return str(code)


def _common_args(scratch, timeout, tools, dialect, gateway, summary_match, extra_args):
    # The case folders (workspace, task) inside the scratch folder, which
    # this process removes however the run ends (ctxgate stopped by a
    # signal cannot remove its own).
    cases = os.path.join(scratch.name, "cases")
    os.makedirs(cases, exist_ok=True)
    args = ["--timeout", str(timeout), "--work-dir", cases]
    for tool in tools:
        args += ["--tool", str(tool)]
    if dialect is not None:
        args += ["--dialect", str(dialect)]
    if gateway is not None:
        args += ["--gateway", str(gateway)]
    if summary_match is not None:
        args += ["--summary-match", str(summary_match)]
    return args + [str(a) for a in extra_args]


def _check_argv(scratch, *, config, cases, seed, invariants, timeout, tools, dialect, gateway,
                summary_match, save, extra_args):
    if isinstance(tools, str):
        tools = [tools]
    argv = [binary(), "agent", "--driven", "--cases", str(int(cases))]
    if invariants is not None:
        names = [invariants] if isinstance(invariants, str) else list(invariants)
        argv += ["--invariants", ",".join(str(n) for n in names)]
    if config is not None:
        if isinstance(config, (str, os.PathLike)):
            argv += ["--config", os.fspath(config)]
        else:
            path = os.path.join(scratch.name, "config.json")
            try:
                text = json.dumps(config, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise TypeError(f"ctxgate.agent.check: `config` must be JSON data (a dict of SPEC §2's "
                                f"fields) or a file path: {e}") from None
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            argv += ["--config", path]
    seed = seed if seed is not None else os.environ.get("CTXGATE_SEED")
    if seed is not None:
        argv += ["--seed", str(seed)]
    # (absolute: the fixtures' paths in the report are then absolute too)
    argv += ["--save", os.path.abspath(os.fspath(save if save is not None else DEFAULT_SAVE))]
    argv += ["--also-report", "human=" + os.path.join(scratch.name, "report.txt")]
    return argv + _common_args(scratch, timeout, tools, dialect, gateway, summary_match, extra_args)


def _report(session, scratch, code):
    if session.report is None:
        raise session.no_report(code)
    if code == 2:  # bad usage that only a case could tell: no advertised tool reads a file
        raise AgentRunError(f"ctxgate agent: the script cannot be played: "
                            f"{_one_line(session.report.get('unplayable') or '?', 600)} "
                            f"(here: `tools=['NAME:ARG']`)\ncommand: {shlex.join(session.argv)}")
    try:
        with open(os.path.join(scratch.name, "report.txt"), encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    return AgentReport(exit_code=code, json=session.report, text=text, command=session.argv,
                       stderr=session.stderr_tail, errors=session.errors)


def _replay_argv(scratch, paths, *, expect_failures, timeout, tools, dialect, gateway, summary_match, extra_args):
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if isinstance(tools, str):
        tools = [tools]
    argv = [binary(), "agent", "replay", *[os.fspath(p) for p in paths], "--driven"]
    if expect_failures:
        argv.append("--expect-failures")
    return argv + _common_args(scratch, timeout, tools, dialect, gateway, summary_match, extra_args)


def _replay_result(session, code):
    if code == 2 or (code != 0 and not session.other):
        raise session.no_report(code)
    return ReplayResult(exit_code=code, text="\n".join(session.other) + "\n", command=session.argv,
                        stderr=session.stderr_tail, errors=session.errors)


def _is_async(fn):
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def _running_loop():
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _Misuse(RuntimeError):
    """check() used where it cannot run the agent (not the agent's failure)."""


def _drive_sync(session, run_case):
    """Play every case ctxgate sends, in order, in this thread; coroutines
    on one event loop of their own."""
    loop = None
    try:
        while True:
            case = session.next_case()
            if case is None:
                return
            try:
                result = run_case(case)
                if inspect.isawaitable(result):
                    if _running_loop() is not None:
                        if inspect.iscoroutine(result):
                            result.close()
                        raise _Misuse("ctxgate.agent.check: run_case is async and an event loop is already "
                                      "running in this thread: `await ctxgate.agent.check_async(run_case, "
                                      "...)` instead")
                    if loop is None:
                        loop = asyncio.new_event_loop()
                    result = loop.run_until_complete(_within(result, case.deadline_seconds))
            except (KeyboardInterrupt, GeneratorExit, _Misuse):
                raise
            except BaseException as e:  # the agent's failure is its exit 1 (SystemExit: its code)
                session.done(case, exc=e)
            else:
                session.done(case, result=result)
    finally:
        if loop is not None:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()


async def _within(awaitable, seconds):
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        raise TimeoutError(f"the case's deadline ({seconds:g} s) passed: the agent was cancelled") from None


async def _drive_async(session, run_case):
    """Play every case ctxgate sends, in order: coroutines on this loop,
    plain functions in a worker thread (one may run an event loop of its own)."""
    loop = asyncio.get_running_loop()
    while True:
        case = await loop.run_in_executor(None, session.next_case)
        if case is None:
            return
        try:
            if _is_async(run_case):
                result = await _within(run_case(case), case.deadline_seconds)
            else:
                result = await loop.run_in_executor(None, run_case, case)
                if inspect.isawaitable(result):
                    result = await _within(result, case.deadline_seconds)
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as e:
            if isinstance(e, asyncio.CancelledError) and not isinstance(e, Exception):
                raise  # this task is cancelled, not the agent
            session.done(case, exc=e)
        else:
            session.done(case, result=result)


def _start(argv_of):
    scratch = tempfile.TemporaryDirectory(prefix="ctxgate-agent-py-")
    try:
        argv = argv_of(scratch)
        return _Session(argv, scratch), scratch
    except BaseException:
        scratch.cleanup()
        raise


def _check_callable(run_case, who):
    if not callable(run_case):
        raise TypeError(f"{who}: run_case must be a function of one argument (the case), not {run_case!r}")


def check(run_case, *, config=None, cases=20, seed=None, invariants=None, timeout=120, tools=(), dialect=None,
          gateway=None, summary_match=None, save=None, extra_args=()):
    """Check an agent that runs in this process: `run_case(case)` runs it
    on one case (an AgentCase: `base_url`, `anthropic_base_url`, `api_key`,
    `prompt`, `workspace`, `index`, …) and returns its final output; it may
    be an `async def`.

    `config`: the agent's settings (a dict of SPEC §2's fields plus
    `toolOutputMaxBytes` and `earlyTolerance`, or a JSON file's path);
    `cases` [20]; `seed` [$CTXGATE_SEED, else random]; `invariants`: the
    agent invariants to judge (names, SPEC §9) [all nine]; `timeout`:
    seconds a case may take [120]; `tools`: `NAME:ARG[=TEMPLATE]` mappings;
    `dialect`, `gateway`, `summary_match`: as `ctxgate agent`'s flags;
    `save`: the folder of shrunk failures [.ctxgate/agent-failures];
    `extra_args`: more `ctxgate agent` arguments.

    Returns an AgentReport (`ok`, `exit_code`, `verdicts`, `failures`,
    `failing_cases`, `fixtures`, `errors`, `text`, `json`; `assert_ok()`).
    Raises AgentRunError when ctxgate ends without a report (bad usage: its
    message says why), BinaryNotFound without a binary."""
    _check_callable(run_case, "ctxgate.agent.check")
    if _is_async(run_case) and _running_loop() is not None:
        raise RuntimeError("ctxgate.agent.check: run_case is async and an event loop is already running "
                           "in this thread: `await ctxgate.agent.check_async(run_case, ...)` instead")
    with StopOnSignals():
        session, scratch = _start(lambda s: _check_argv(
            s, config=config, cases=cases, seed=seed, invariants=invariants, timeout=timeout, tools=tools,
            dialect=dialect, gateway=gateway, summary_match=summary_match, save=save, extra_args=extra_args))
        try:
            _drive_sync(session, run_case)
            code = session.finish()
            return _report(session, scratch, code)
        finally:
            session.close()


async def check_async(run_case, *, config=None, cases=20, seed=None, invariants=None, timeout=120, tools=(),
                      dialect=None, gateway=None, summary_match=None, save=None, extra_args=()):
    """`check` for an async test: `await check_async(run_case, ...)`. An
    `async def run_case` is awaited on the running loop; a plain function
    runs in a worker thread."""
    _check_callable(run_case, "ctxgate.agent.check_async")
    loop = asyncio.get_running_loop()
    with StopOnSignals():
        session, scratch = _start(lambda s: _check_argv(
            s, config=config, cases=cases, seed=seed, invariants=invariants, timeout=timeout, tools=tools,
            dialect=dialect, gateway=gateway, summary_match=summary_match, save=save, extra_args=extra_args))
        try:
            await _drive_async(session, run_case)
            code = await loop.run_in_executor(None, session.finish)
            return _report(session, scratch, code)
        finally:
            session.close()


def replay(run_case, paths, *, expect_failures=False, timeout=120, tools=(), dialect=None, gateway=None,
           summary_match=None, extra_args=()):
    """Play agent fixtures (files, or folders of them) again with the
    in-process agent: `ctxgate agent replay PATH… --driven`. Returns a
    ReplayResult (`ok`, `exit_code`, `text`; `assert_ok()`).
    `expect_failures`: every fixture must still fail (a known bug)."""
    _check_callable(run_case, "ctxgate.agent.replay")
    with StopOnSignals():
        session, _ = _start(lambda s: _replay_argv(
            s, paths, expect_failures=expect_failures, timeout=timeout, tools=tools, dialect=dialect,
            gateway=gateway, summary_match=summary_match, extra_args=extra_args))
        try:
            _drive_sync(session, run_case)
            return _replay_result(session, session.finish())
        finally:
            session.close()


async def replay_async(run_case, paths, *, expect_failures=False, timeout=120, tools=(), dialect=None,
                       gateway=None, summary_match=None, extra_args=()):
    """`replay` for an async test."""
    _check_callable(run_case, "ctxgate.agent.replay_async")
    loop = asyncio.get_running_loop()
    with StopOnSignals():
        session, _ = _start(lambda s: _replay_argv(
            s, paths, expect_failures=expect_failures, timeout=timeout, tools=tools, dialect=dialect,
            gateway=gateway, summary_match=summary_match, extra_args=extra_args))
        try:
            await _drive_async(session, run_case)
            return _replay_result(session, await loop.run_in_executor(None, session.finish))
        finally:
            session.close()
