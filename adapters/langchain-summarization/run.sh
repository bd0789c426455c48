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
source "$here/../lib/pinned-venv.sh"
ctxgate_run_pinned "$here" langchain 1.5.2 "$@"
