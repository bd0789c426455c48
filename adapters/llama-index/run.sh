#!/usr/bin/env bash
# Run LlamaIndex's ChatMemoryBuffer as a ctxgate subject:
#
#   ctxgate replay suites/known-bugs --subject 'adapters/llama-index/run.sh 0.11.13'
#
# The optional argument is the llama-index-core version; each gets a venv of
# its own (adapters/lib/pinned-venv.sh). `run.sh --install [VERSION]` only installs.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
default=0.11.14
install=no
if [ "${1:-}" = "--install" ]; then install=yes; shift; fi
source "$here/../lib/pinned-venv.sh"
ctxgate_pinned_venv "$here" llama-index-core "${1:-$default}"
if [ "$install" = yes ]; then exit 0; fi
exec "$venv/bin/python" "$here/adapter.py"
