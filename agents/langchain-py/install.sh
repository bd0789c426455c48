#!/usr/bin/env bash
# Installs the pinned langchain release (create_agent and its middleware, on
# langgraph; requirements.txt: it and everything it resolved to, `==` pinned)
# into a venv outside the clone:
#
#   agents/langchain-py/install.sh [VERSION]   # prints the venv's path; pip's output goes to stderr
#
# ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/langchain-py-VERSION;
# VERSION installs another langchain release beside it (its dependencies
# resolve as pip resolves them; agents/lib/install-pip.sh says how).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/install-pip.sh" "$here" langchain "$@"
