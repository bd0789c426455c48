#!/usr/bin/env bash
# Installs the pinned openai-agents release (requirements.txt: the SDK and
# everything it resolved to, `==` pinned) into a venv outside the clone:
#
#   agents/openai-agents-py/install.sh [VERSION]   # prints the venv's path; pip's output goes to stderr
#
# ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/openai-agents-py-VERSION;
# VERSION installs another release beside it (its dependencies resolve as
# pip resolves them; agents/lib/install-pip.sh says how).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/install-pip.sh" "$here" openai-agents "$@"
