#!/usr/bin/env bash
# Run langmem's summarize_messages as a ctxgate subject:
#
#   ctxgate check --subject 'adapters/langmem/run.sh'
#
# The optional argument is the langmem version; each gets a venv of its own
# (adapters/lib/pinned-venv.sh: $CTXGATE_VENV_ROOT/langmem-VERSION, or
# adapters/langmem/.venv-VERSION). `run.sh --install [VERSION]` only
# installs; `run.sh --roundtrip [VERSION] < cases.jsonl` runs the lossless
# mapping test on `ctxgate gen` cases.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../lib/pinned-venv.sh"
ctxgate_run_pinned "$here" langmem 0.0.30 "$@"
