"""`python -m ctxgate ARGS`: the ctxgate binary, as `ctxgate ARGS` (for a
venv whose scripts folder is not on PATH)."""

import subprocess
import sys

from . import binary

if __name__ == "__main__":
    sys.exit(subprocess.call([binary(), *sys.argv[1:]]))
