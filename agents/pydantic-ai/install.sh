#!/usr/bin/env bash
# Installs the pinned pydantic-ai release (pydantic-ai-slim with its openai
# extra, and pydantic-ai-harness, its official capability library that holds
# the compaction strategies; requirements.txt: them and everything they
# resolved to, `==` pinned) into a venv outside the clone:
#
#   agents/pydantic-ai/install.sh [VERSION]   # prints the venv's path; pip's output goes to stderr
#
# ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/pydantic-ai-VERSION;
# VERSION installs another pydantic-ai-slim[openai] beside it, the harness at
# its pin (the rest resolves as pip resolves it; agents/lib/install-pip.sh
# says how).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/install-pip.sh" --with pydantic-ai-harness "$here" 'pydantic-ai-slim[openai]' "$@"
