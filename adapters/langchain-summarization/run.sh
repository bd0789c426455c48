#!/usr/bin/env bash
# Run LangChain's SummarizationMiddleware (the `langchain` package, v1 agents)
# as a ctxgate subject:
#
#   ctxgate replay suites/known-bugs --subject 'adapters/langchain-summarization/run.sh 1.1.0'
#
# The optional argument is the `langchain` version; each gets a venv of its
# own (adapters/lib/pinned-venv.sh). `run.sh --install [VERSION]` only installs.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
default=1.5.2
install=no
if [ "${1:-}" = "--install" ]; then install=yes; shift; fi
source "$here/../lib/pinned-venv.sh"
ctxgate_pinned_venv "$here" langchain "${1:-$default}"
if [ "$install" = yes ]; then exit 0; fi
exec "$venv/bin/python" "$here/adapter.py"
