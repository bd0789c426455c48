#!/usr/bin/env bash
# pi under `ctxgate agent` (agents/pi/README.md):
#
#   agents/pi/run.sh --install [VERSION]       only install (the pinned release, or VERSION)
#   agents/pi/run.sh [ctxgate agent options]   e.g. --cases 10 --seed 1 --json report.json
#
# CTXGATE names the binary (default: the clone's target/release/ctxgate);
# CTXGATE_AGENT_VERSION=V runs another release (agents/lib/run.sh says how).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/run.sh" "$here" --dialect openai-chat -- "$@"
