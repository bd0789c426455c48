#!/usr/bin/env bash
# Installs the Codex CLI (npm @openai/codex) as released, outside the clone:
#
#   agents/codex/install.sh [VERSION]   # prints the install's folder; npm's output goes to stderr
#
# the pinned release from package-lock.json (`npm ci`), or VERSION beside it
# (e.g. an affected and a fixing release side by side), into
# ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/codex-VERSION, then
# `codex --version` (agents/lib/install-npm.sh says how).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/install-npm.sh" --bin codex "$here" @openai/codex "$@"
