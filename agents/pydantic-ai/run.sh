#!/usr/bin/env bash
# Pydantic AI (agent.py) under `ctxgate agent` (agents/pydantic-ai/README.md):
#
#   agents/pydantic-ai/run.sh --install [VERSION]       only install (the pinned release, or VERSION)
#   agents/pydantic-ai/run.sh [ctxgate agent options]   e.g. --cases 10 --seed 1 --json report.json
#
# CTXGATE names the binary (default: the clone's target/release/ctxgate);
# CTXGATE_AGENT_VERSION=V runs another release (agents/lib/run.sh says how).
# The summary matcher names the harness's summariser (its instructions: "You
# are a context summarization assistant"), which ctxgate's default wordings
# miss (README, "ctxgate's matcher").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/run.sh" "$here" --dialect openai-chat --summary-match '(?i)context summarization assistant' -- "$@"
