"""A pytest example: adapters/python-minimal's compactor checked by the
ctxgate plugin, as a compactor's own test suite would check it.

    pytest python/examples/test_python_minimal.py

CTXGATE_EXAMPLE_DEFECT=1 plants a defect (a compaction drops the first tool
result it keeps: the call it answered is orphaned, ADR 0098's bug) and the
test fails with the shrunk history and the replay line; run it again and
the saved failure is replayed before any new case. CTXGATE_CASES sets the
number of cases (default 1000).
"""

import os
import sys
from pathlib import Path

import ctxgate as ctxgate_package

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "adapters" / "python-minimal"))
import compactor  # noqa: E402  (adapters/python-minimal/compactor.py)

DEFECT = os.environ.get("CTXGATE_EXAMPLE_DEFECT") == "1"


def compact(config, messages):
    try:
        out = compactor.compact(config, messages)
    except compactor.CannotFit as e:  # python-minimal's own exceptions, as the protocol's
        raise ctxgate_package.CannotFit(str(e)) from e
    except compactor.InvalidInput as e:
        raise ctxgate_package.InvalidInput(str(e)) from e
    if DEFECT and out is not messages:
        tools = [i for i, m in enumerate(out) if m["role"] == "tool"]
        if tools:
            del out[tools[0]]
    return out


def estimate(config, messages):
    return compactor.estimate(config, messages)


def test_python_minimal_holds_every_invariant(ctxgate):
    claimed = os.environ.get("CTXGATE_EXAMPLE_INVARIANTS")  # (python/ci.sh narrows the claims)
    ctxgate.check(compact, estimate, cases=int(os.environ.get("CTXGATE_CASES", "1000")),
                  name="python-minimal", version=compactor.VERSION,
                  invariants=claimed.split(",") if claimed else None)
