"""The zoo adapters' protocol loop: the `ctxgate` Python package's own
(`ctxgate.serve`, python/src/ctxgate/protocol.py), imported from this
checkout, so that an adapter's pinned venv needs no ctxgate wheel. It
answers an exception inside the library under test as a fault."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "src"))

from ctxgate.protocol import DEFAULTS, CannotFit, InvalidInput, serve, trigger  # noqa: E402

__all__ = ["DEFAULTS", "CannotFit", "InvalidInput", "serve", "trigger"]
