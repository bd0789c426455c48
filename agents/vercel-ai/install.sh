#!/usr/bin/env bash
# Installs the pinned Vercel AI SDK (package.json, package-lock.json: `ai`,
# `@ai-sdk/openai`, `zod`) with `npm ci` outside the clone:
#
#   agents/vercel-ai/install.sh [VERSION]   # prints the install's folder (its node_modules is what agent.mjs imports)
#
# into ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/vercel-ai-VERSION;
# VERSION installs another `ai` release beside it, the rest as locked
# (agents/lib/install-npm.sh says how).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/install-npm.sh" "$here" ai "$@"
