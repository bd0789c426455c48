#!/usr/bin/env bash
# Run LlamaIndex's Memory as a ctxgate subject:
#
#   ctxgate check --subject 'adapters/llama-index-memory/run.sh'
#
# The optional argument is the llama-index-core version; each gets a venv of its own
# (adapters/lib/pinned-venv.sh: $CTXGATE_VENV_ROOT/llama-index-memory-VERSION, or
# adapters/llama-index-memory/.venv-VERSION). `run.sh --install [VERSION]` only
# installs; `run.sh --roundtrip [VERSION] < cases.jsonl` runs the lossless
# mapping test on `ctxgate gen` cases.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../lib/pinned-venv.sh"
ctxgate_run_pinned "$here" llama-index-core 0.14.25 "$@"
