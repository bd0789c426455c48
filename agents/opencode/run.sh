#!/usr/bin/env bash
# `ctxgate agent` on opencode (see README.md):
#   run.sh --install [VERSION]     only install (the pinned release, or VERSION)
#   run.sh [ctxgate agent options]  install when needed, then run the cases,
#                                   e.g. run.sh --cases 10 --seed 1 --json FILE
#                                   (--json FILE: the JSON report also in FILE)
# CTXGATE_AGENT_VERSION=V runs another installed release. CTXGATE is the
# binary (default: the clone's target/release/ctxgate).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
if [ "${1:-}" = "--install" ]; then
    exec "$here/install.sh" ${2:+"$2"}
fi
"$here/install.sh" ${CTXGATE_AGENT_VERSION:+"$CTXGATE_AGENT_VERSION"}
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
    ${args[@]+"${args[@]}"} -- "$here/start.sh"
