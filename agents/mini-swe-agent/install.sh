#!/usr/bin/env bash
# Installs mini-swe-agent (PyPI) as released, into a venv outside the clone:
#
#   agents/mini-swe-agent/install.sh [VERSION]   # prints the venv's path; pip's output goes to stderr
#
# requirements.txt's pin, or VERSION beside it, into
# ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/mini-swe-agent-VERSION
# (agents/lib/install-pip.sh says how).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/install-pip.sh" "$here" mini-swe-agent "$@"
