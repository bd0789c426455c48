#!/usr/bin/env bash
# Run Strands Agents' conversation managers as a ctxgate subject:
#
#   ctxgate check --subject 'adapters/strands/run.sh'
#
# The optional argument is the strands-agents version; each gets a venv of its own
# (adapters/lib/pinned-venv.sh: $CTXGATE_VENV_ROOT/strands-agents-VERSION, or
# adapters/strands/.venv-VERSION). `run.sh --install [VERSION]` only
# installs; `run.sh --roundtrip [VERSION] < cases.jsonl` runs the lossless
# mapping test on `ctxgate gen` cases.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../lib/pinned-venv.sh"
ctxgate_run_pinned "$here" strands-agents 1.62.0 "$@"
