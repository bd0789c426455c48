#!/usr/bin/env bash
# opencode under `ctxgate agent` (agents/opencode/README.md):
#
#   agents/opencode/run.sh --install [VERSION]       only install (the pinned release, or VERSION)
#   agents/opencode/run.sh [ctxgate agent options]   e.g. --cases 10 --seed 1 --json report.json
#
# CTXGATE names the binary (default: the clone's target/release/ctxgate);
# CTXGATE_AGENT_VERSION=V runs another release (agents/lib/run.sh says how).
# The tool that reads a file is `bash` (`cat {path}`): README says why not `read`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/run.sh" "$here" --dialect openai-chat --tool 'bash:command=cat {path}' -- "$@"
