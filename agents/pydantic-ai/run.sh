#!/usr/bin/env bash
# `run.sh --install [VERSION]` installs the pinned pydantic-ai; `run.sh [ctxgate
# agent options...]` installs when needed, then runs `ctxgate agent` on
# agent.py with this recipe's settings (agent.json). CTXGATE names the
# binary (default: the clone's target/release/ctxgate); CTXGATE_AGENT_VERSION
# runs another installed release. The summary matcher names the harness's
# summariser (its instructions: "You are a context summarization assistant"),
# which ctxgate's default wordings miss (README, "ctxgate's matcher"). `--json FILE` writes ctxgate's JSON report
# there too (ctxgate's `--also-report json=FILE`), the human one on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [ "${1:-}" = "--install" ]; then
    "$here/install.sh" "${@:2}" > /dev/null
    exit 0
fi
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --json) [ $# -ge 2 ] || { echo "run.sh: --json needs a FILE" >&2; exit 2; }
                args+=(--also-report "json=$2"); shift 2 ;;
        --json=*) args+=(--also-report "json=${1#--json=}"); shift ;;
        *) args+=("$1"); shift ;;
    esac
done
venv="$("$here/install.sh" ${CTXGATE_AGENT_VERSION:+"$CTXGATE_AGENT_VERSION"})"
exec "${CTXGATE:-$root/target/release/ctxgate}" agent --config "$here/agent.json" \
    --dialect openai-chat --summary-match "(?i)context summarization assistant" ${args[@]+"${args[@]}"} -- "$venv/bin/python" "$here/agent.py"
