#!/usr/bin/env bash
# Installs the pinned Mastra release (package.json, package-lock.json:
# `@mastra/core`, `zod`) with `npm ci` outside the clone:
#
#   agents/mastra/install.sh [VERSION]   # prints the install's folder (its node_modules is what agent.mjs imports)
#
# into ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/mastra-VERSION;
# VERSION installs another `@mastra/core` release beside it, the rest as
# locked (agents/lib/install-npm.sh says how).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/install-npm.sh" "$here" @mastra/core "$@"
