#!/usr/bin/env python3
"""Copy the package's modules to the adapters that use them without it.

The `ctxgate` package (python/src/ctxgate) is the source of truth; two of
its modules is standard-library only and is copied, byte for byte, to
the adapter that is one folder of plain Python to copy out (python-minimal):

    python/src/ctxgate/wire.py     -> adapters/python-minimal/wire.py
    docs/contract.md               -> python/src/ctxgate/CONTRACT.md, js/CONTRACT.md

(The zoo's adapters, in venvs of their own, import the package's
protocol.py from the checkout: adapters/lib/ctxgate_subject.py.)

    python3 python/sync.py          # write the copies
    python3 python/sync.py --check  # exit 1 if a copy differs (python/ci.sh)
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPIES = [
    ("python/src/ctxgate/wire.py", "adapters/python-minimal/wire.py"),
    # The contract ships in both packages, as `ctxgate contract` prints it.
    ("docs/contract.md", "python/src/ctxgate/CONTRACT.md"),
    ("docs/contract.md", "js/CONTRACT.md"),
]


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        print(f"usage: {argv[0]} [--check]", file=sys.stderr)
        return 2
    stale = []
    for source, copy in COPIES:
        text = (ROOT / source).read_bytes()
        if (ROOT / copy).exists() and (ROOT / copy).read_bytes() == text:
            continue
        if check:
            stale.append((source, copy))
        else:
            (ROOT / copy).write_bytes(text)
            print(f"wrote {copy} from {source}")
    for source, copy in stale:
        print(f"sync: {copy} differs from {source}: edit {source} and run python3 python/sync.py",
              file=sys.stderr)
    if not stale and check:
        print(f"sync: the {len(COPIES)} copies equal their sources")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
