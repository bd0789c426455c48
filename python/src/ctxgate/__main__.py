"""`python -m ctxgate ARGS`: the ctxgate binary, as `ctxgate ARGS` (for a
venv whose scripts folder is not on PATH).

On POSIX this process becomes the binary (exec): a signal sent to it —
SIGTERM from a CI runner, `timeout`, a supervisor — reaches ctxgate
itself, which stops its subjects and dies of it; nothing is left behind
as there is no Python parent to outlive. Elsewhere the binary runs as a
child: the signals this process gets are passed on to it, and it is told
to die with its parent (CTXGATE_DIE_WITH_PARENT, where the system can).
A CTXGATE_BIN or binary that cannot run is one line on stderr, exit 2.
"""

import json
import os
import signal
import subprocess
import sys

from . import BinaryNotFound, binary

PROG = "python -m ctxgate"


def main(argv):
    try:
        exe = binary()
    except BinaryNotFound as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    shown = json.dumps(exe, ensure_ascii=False)
    named = " (CTXGATE_BIN)" if os.environ.get("CTXGATE_BIN") else ""
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execv(exe, [exe, *argv])
        except OSError as e:
            print(f"{PROG}: cannot run {shown}{named}: {e.strerror or e}", file=sys.stderr)
            return 2
    return run_as_child(exe, argv, shown, named)


def run_as_child(exe, argv, shown, named):
    """The binary as a child of this process, which passes its signals on
    and exits as the child exited."""
    try:
        child = subprocess.Popen([exe, *argv], env={**os.environ, "CTXGATE_DIE_WITH_PARENT": "1"})
    except OSError as e:
        print(f"{PROG}: cannot run {shown}{named}: {e.strerror or e}", file=sys.stderr)
        return 2

    def forward(signum, _frame):
        try:
            child.send_signal(signum)
        except OSError:
            pass

    for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGBREAK"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), forward)
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
