#!/usr/bin/env bash
# The Kilo Code CLI under `ctxgate agent` (agents/kilocode/README.md):
#
#   agents/kilocode/run.sh --install [VERSION]       only install (the pinned release, or VERSION)
#   agents/kilocode/run.sh [ctxgate agent options]   e.g. --cases 3 --seed 1 --json report.json
#
# CTXGATE names the binary (default: the clone's target/release/ctxgate);
# CTXGATE_AGENT_VERSION=V runs another release (agents/lib/run.sh says how).
# Kilo reads files with its `bash` tool here (`cat {path}`), as opencode's
# recipe does: its `read` tool numbers and wraps every line
# (agents/opencode/README.md). 7.0.33's `bash` requires a `description`
# argument ctxgate does not send, so runs of 7.0.33 call `ctxgate agent`
# with the default tool choice (Kilo's `read`) instead (README.md).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/run.sh" "$here" --dialect openai-chat --tool 'bash:command=cat {path}' -- "$@"
