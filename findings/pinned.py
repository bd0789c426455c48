"""What every Python reproduction of findings/ shares: proof that it ran the
release it was found on, and a verdict that no crash can fake.

    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from pinned import library, verdict  # noqa: E402  (findings/pinned.py)

    library()  # exit 2, "not run", unless the pinned releases are what imports
    ...        # the library's own imports, then the reproduction
    verdict(the_behaviour_is_there)

`library()` reads the pins of the script's folder in findings/pins.json and,
for each package, checks the installed version is exactly the pinned one,
imports it, checks the module came from that installed distribution (not a
file that shadows it), and prints the version and where it came from.

Exit codes, which findings/run.sh counts apart:
  10  reproduces: the behaviour is there, on the pinned release;
  11  does not reproduce: the pinned release ran and behaved otherwise;
   2  not run: a pinned package is missing, at another version, or does not
      import (or the script reached its verdict without checking);
  anything else — 1 is a traceback — is no verdict.
Neither verdict is 0 or 1: those are what a script that stopped early or
raised exits with, so that neither can pass for a reproduction.
"""

import importlib
import json
import os
import sys

REPRODUCES = 10
DOES_NOT_REPRODUCE = 11
NOT_RUN = 2

HERE = os.path.dirname(os.path.abspath(__file__))
PINS = os.path.join(HERE, "pins.json")
_checked = []


def _not_run(why):
    sys.stdout.flush()
    print(f"not run: {why}", file=sys.stderr, flush=True)
    raise SystemExit(NOT_RUN)


def _inside(path, folder):
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


def library(script=None):
    """Exit 2 ("not run") unless every package pinned for this script's
    folder is installed at exactly its version and imports from there."""
    from importlib import metadata

    script = os.path.abspath(script or sys.modules["__main__"].__file__)
    folder = os.path.basename(os.path.dirname(script))
    with open(PINS, encoding="utf-8") as f:
        pins = json.load(f)["dirs"].get(folder)
    if pins is None:
        _not_run(f"{PINS} pins nothing for the folder {folder}/")
    install = f"adapters/{pins['adapter']}/run.sh --install {pins.get('release', '')}".rstrip()
    for p in pins["packages"]:
        name, want, module = p["name"], p["version"], p["import"]
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            _not_run(f"{name} is not installed for {sys.executable} (the finding is pinned to {name} {want}: {install})")
        if dist.version != want:
            _not_run(f"{name} {dist.version} is installed for {sys.executable}; the finding is pinned to {want} ({install})")
        try:
            mod = importlib.import_module(module)
        except Exception as e:  # any failure to import is "not run", with its cause
            _not_run(f"{name} {want} is installed, but `import {module}` fails: {type(e).__name__}: {e}")
        where = getattr(mod, "__file__", None)
        home = dist.locate_file("")
        if where is None or not _inside(where, home):
            _not_run(f"`import {module}` loaded {where or 'a namespace'}, not {name} {want} installed in {home}")
        print(f"library: {name} {want}, as pinned ({os.path.dirname(where)})", flush=True)
    _checked.append(folder)


def verdict(reproduced):
    """Exit 10 (reproduces) or 11 (does not reproduce); 2 when library()
    was not called first."""
    if not _checked:
        _not_run("the reproduction reached its verdict without checking its library (call library() first)")
    print("verdict: reproduces" if reproduced else
          "verdict: does NOT reproduce on the pinned release (look at docs/findings.md again)", flush=True)
    raise SystemExit(REPRODUCES if reproduced else DOES_NOT_REPRODUCE)
