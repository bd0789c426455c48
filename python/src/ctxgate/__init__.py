"""ctxgate for Python: check an LLM context compactor against ADR 0098's
contract (SPEC.md) from Python.

- `serve(compact, estimate, name=..., version=...)`: run a compactor as a
  ctxgate subject (the SPEC §6 protocol over stdin/stdout);
  `python -m ctxgate.subject module:function` does it for a function.
- `body_bytes(messages, config)`, `tool_calls_floor(message, bytes_per_token)`:
  the exact request body size in each wire format, and ADR 0098's estimate
  floor, as the binary measures them.
- The pytest plugin: a `ctxgate` fixture whose `check(compact, estimate)`
  runs the binary against the test's own functions.
- `round_trip(parse, serialise)`: `ctxgate gen`'s cases through an
  adapter's own message conversion and back, asserted equal by value
  (SPEC §5), the first difference named by its path.
- `binary()`: the path of the `ctxgate` binary the wheel installed.
- `ctxgate.agent.check(run_case, ...)` (also `check_agent`): ctxgate plays
  the model for an agent that runs in this process (an SDK agent in a
  pytest test) and judges every request it sends (SPEC §9).
"""

import json
import os
import shutil
import sys
import sysconfig

from .protocol import DEFAULTS, CannotFit, InvalidInput, serve, trigger
from .round_trip import RoundTripMismatch, round_trip
from .wire import NotJSON, body_bytes, tool_calls_floor

__all__ = ["DEFAULTS", "AgentCase", "AgentCheckFailed", "AgentReport", "AgentRunError", "BinaryNotFound",
           "CannotFit", "InvalidInput", "NotJSON", "RoundTripMismatch", "agent", "binary", "body_bytes",
           "check_agent", "round_trip", "serve", "tool_calls_floor", "trigger"]


class BinaryNotFound(FileNotFoundError):
    """No `ctxgate` binary to run; the message says where it was looked for
    (and names CTXGATE_BIN when that is what points nowhere)."""


def binary():
    """The `ctxgate` executable: $CTXGATE_BIN if set (it must be an
    executable file), else the one this package's wheel put beside the
    interpreter's scripts, else one on PATH. BinaryNotFound otherwise."""
    given = os.environ.get("CTXGATE_BIN")
    if given:
        shown = json.dumps(given, ensure_ascii=False)  # quoted, control characters escaped
        if not os.path.exists(given):
            raise BinaryNotFound(f"CTXGATE_BIN={shown}: no such file (CTXGATE_BIN names the ctxgate "
                                 "binary to run; unset it to run the one this package installed)")
        if not os.path.isfile(given) or not os.access(given, os.X_OK):
            raise BinaryNotFound(f"CTXGATE_BIN={shown}: not an executable file (CTXGATE_BIN names the "
                                 "ctxgate binary to run; unset it to run the one this package installed)")
        return given
    exe = "ctxgate" + (".exe" if sys.platform == "win32" else "")
    for scripts in (sysconfig.get_path("scripts"), sysconfig.get_path("scripts", f"{os.name}_user"),
                    os.path.dirname(sys.executable)):
        path = os.path.join(scripts, exe)
        if os.path.isfile(path):
            return path
    found = shutil.which("ctxgate")
    if found:
        return found
    raise BinaryNotFound(
        "the ctxgate binary is not installed beside this Python (looked in "
        f"{sysconfig.get_path('scripts')} and on PATH): `pip install ctxgate` installs it, "
        "or set CTXGATE_BIN to its path")


# (after binary(), which the agent module uses)
from . import agent  # noqa: E402
from .agent import AgentCase, AgentCheckFailed, AgentReport, AgentRunError  # noqa: E402

check_agent = agent.check
