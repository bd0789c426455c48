#!/usr/bin/env bash
# The Kilo Code CLI under `ctxgate agent` (agents/kilocode/README.md):
#
#   agents/kilocode/run.sh --install [VERSION]          only install (the pin, or VERSION)
#   agents/kilocode/run.sh [ctxgate agent options...]   e.g. --cases 3 --seed 1 --json report.json
#
# CTXGATE names the binary (default: target/release/ctxgate of this clone);
# CTXGATE_AGENT_VERSION runs another installed release than the pin.
# `--json FILE` is `--also-report json=FILE` (the zoo driver's form). Kilo
# reads files with its `bash` tool here (`cat {path}`), as opencode's recipe
# does: its `read` tool numbers and wraps every line (agents/opencode/README.md).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
if [ "${1:-}" = "--install" ]; then
    exec "$here/install.sh" ${2:+"$2"}
fi
version="${CTXGATE_AGENT_VERSION:-}"
"$here/install.sh" ${version:+"$version"}
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --json) args+=(--also-report "json=$2"); shift 2 ;;
        --json=*) args+=(--also-report "json=${1#--json=}"); shift ;;
        *) args+=("$1"); shift ;;
    esac
done
exec "${CTXGATE:-$repo/target/release/ctxgate}" agent --config "$here/agent.json" \
    --dialect openai-chat --tool 'bash:command=cat {path}' \
    ${args[@]+"${args[@]}"} -- "$here/start.sh" ${version:+"$version"}
