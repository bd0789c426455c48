#!/usr/bin/env bash
# mini-swe-agent under `ctxgate agent` (agents/mini-swe-agent/README.md):
#
#   agents/mini-swe-agent/run.sh --install [VERSION]       only install (the pinned release, or VERSION)
#   agents/mini-swe-agent/run.sh [ctxgate agent options]   e.g. --cases 10 --seed 1 --json report.json
#
# CTXGATE names the binary (default: the clone's target/release/ctxgate);
# CTXGATE_AGENT_VERSION=V runs another release (agents/lib/run.sh says how).
# mini-swe-agent's one tool is `bash`: a file is read with `cat {path}`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/run.sh" "$here" --dialect openai-chat --tool 'bash:command=cat {path}' -- "$@"
