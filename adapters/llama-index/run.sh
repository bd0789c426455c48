#!/usr/bin/env bash
# Run LlamaIndex's ChatMemoryBuffer as a ctxgate subject:
#
#   ctxgate check --subject adapters/llama-index/run.sh      # the current release, 0.14.25
#   ctxgate replay suites/known-bugs --subject 'adapters/llama-index/run.sh 0.11.13'
#
# The optional argument is the llama-index-core version; each gets a venv of
# its own (adapters/lib/pinned-venv.sh). `run.sh --install [VERSION]` only installs.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../lib/pinned-venv.sh"
ctxgate_run_pinned "$here" llama-index-core 0.14.25 "$@"
