#!/usr/bin/env bash
# The Codex CLI under `ctxgate agent` (agents/codex/README.md):
#
#   agents/codex/run.sh --install [VERSION]       only install (the pinned release, or VERSION)
#   agents/codex/run.sh [ctxgate agent options]   e.g. --cases 10 --seed 1 --json report.json
#
# CTXGATE names the binary (default: the clone's target/release/ctxgate);
# CTXGATE_AGENT_VERSION=V runs another release (agents/lib/run.sh says how).
# The summary matcher is the heading of Codex's own compaction prompt (README).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/run.sh" "$here" --dialect openai-responses -- "$@"
