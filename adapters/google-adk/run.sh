#!/usr/bin/env bash
# Run Google ADK's event compaction as a ctxgate subject:
#
#   ctxgate check --subject 'adapters/google-adk/run.sh'
#
# The optional argument is the google-adk version; each gets a venv of its own
# (adapters/lib/pinned-venv.sh: $CTXGATE_VENV_ROOT/google-adk-VERSION, or
# adapters/google-adk/.venv-VERSION). `run.sh --install [VERSION]` only
# installs; `run.sh --roundtrip [VERSION] < cases.jsonl` runs the lossless
# mapping test on `ctxgate gen` cases.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../lib/pinned-venv.sh"
ctxgate_run_pinned "$here" google-adk 2.13.0 "$@"
