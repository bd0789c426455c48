"""The pytest plugin's entry point (pyproject.toml's `pytest11`): it loads
`ctxgate.pytest_plugin`, first making sure that `ctxgate` is this wheel's
package. A `ctxgate.py` in the working directory — first on sys.path
under `python -m pytest` — would be imported instead, and pytest would say
only "'ctxgate' is not a package"; this says which file it is."""

import importlib.util
import os

_OURS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ctxgate")


def _shadow():
    """The origin of the `ctxgate` Python would import, when it is not ours."""
    try:
        spec = importlib.util.find_spec("ctxgate")
    except (ImportError, ValueError) as e:
        return f"(a ctxgate that cannot be imported: {e})"
    origin = getattr(spec, "origin", None)
    if spec is None or origin in (None, "namespace"):
        return None  # none, or a folder without __init__.py: the import below says what it finds
    if os.path.realpath(os.path.dirname(origin)) == os.path.realpath(_OURS):
        return None
    return origin


_shadowed_by = _shadow()
if _shadowed_by:
    raise ImportError(
        f"{_shadowed_by} shadows the ctxgate package ({_OURS}): Python imports it first (the working "
        f"directory is first on sys.path under `python -m pytest`); rename it, or run the `pytest` command")

from ctxgate.pytest_plugin import ctxgate, pytest_addoption  # noqa: E402,F401  (the plugin's hooks and fixture)
