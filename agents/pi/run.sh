#!/usr/bin/env bash
# pi under `ctxgate agent` (agents/pi/README.md):
#
#   agents/pi/run.sh --install                    only install the pinned release
#   agents/pi/run.sh [ctxgate agent options...]   e.g. --cases 10 --seed 1 --json report.json
#
# CTXGATE names the binary (default: target/release/ctxgate of this clone).
# The agent goes after `--` (one word, whatever the checkout's path holds).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
"$here/install.sh"
if [ "${1:-}" = --install ]; then
    exit 0
fi
exec "${CTXGATE:-$repo/target/release/ctxgate}" agent --config "$here/agent.json" \
    --dialect openai-chat "$@" -- "$here/start.sh"
