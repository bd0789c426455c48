#!/usr/bin/env bash
# Run the OpenAI Agents SDK's session limit as a ctxgate subject:
#
#   ctxgate check --subject 'adapters/openai-agents/run.sh'
#
# The optional argument is the openai-agents version; each gets a venv of its own
# (adapters/lib/pinned-venv.sh: $CTXGATE_VENV_ROOT/openai-agents-VERSION, or
# adapters/openai-agents/.venv-VERSION). `run.sh --install [VERSION]` only
# installs; `run.sh --roundtrip [VERSION] < cases.jsonl` runs the lossless
# mapping test on `ctxgate gen` cases.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../lib/pinned-venv.sh"
ctxgate_run_pinned "$here" openai-agents 0.24.0 "$@"
