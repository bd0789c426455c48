#!/usr/bin/env bash
# The body of every recipe's run.sh: `ctxgate agent` on the recipe.
#
#   agents/lib/run.sh RECIPE [THE RECIPE'S CTXGATE OPTIONS...] -- [ARGS...]
#
# ARGS are the user's, given to agents/NAME/run.sh:
#
#   --install [VERSION]        only install (the pinned release, or VERSION)
#   [ctxgate agent options]    install when needed, then run the cases, e.g.
#                              --cases 10 --seed 1 --json FILE (--json FILE:
#                              the JSON report also in FILE, ctxgate's
#                              --also-report json=FILE; the human one on stdout)
#
# It installs with RECIPE/install.sh ($CTXGATE_AGENT_VERSION=V: that release,
# beside the pin, and the cases run it), then execs
#
#   $CTXGATE agent --config RECIPE/agent.json [RECIPE'S OPTIONS] [ARGS] -- AGENT
#
# CTXGATE names the binary (default: the clone's target/release/ctxgate).
# AGENT is RECIPE/start.sh (a CLI: it finds the release itself); or an SDK
# user's script: RECIPE/agent.py with the venv's python, or RECIPE/agent.mjs
# with node, which imports the SDK from a node_modules beside it (a link to
# the install; git ignores it).
set -euo pipefail
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$lib/../.." && pwd)"
recipe=${1:?usage: agents/lib/run.sh RECIPE [OPTIONS...] -- [ARGS...]}
shift
options=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    options+=("$1")
    shift
done
if [ $# -gt 0 ]; then shift; fi
name="$(basename "$recipe")"

if [ "${1:-}" = --install ]; then
    "$recipe/install.sh" "${@:2}" > /dev/null
    exit 0
fi
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --json) [ $# -ge 2 ] || { echo "agents/$name/run.sh: --json needs a FILE" >&2; exit 2; }
                args+=(--also-report "json=$2"); shift 2 ;;
        --json=*) args+=(--also-report "json=${1#--json=}"); shift ;;
        *) args+=("$1"); shift ;;
    esac
done
installed="$("$recipe/install.sh" ${CTXGATE_AGENT_VERSION:+"$CTXGATE_AGENT_VERSION"})"
if [ -f "$recipe/start.sh" ]; then
    agent=("$recipe/start.sh")
elif [ -f "$recipe/agent.py" ]; then
    agent=("$installed/bin/python" "$recipe/agent.py")
elif [ -f "$recipe/agent.mjs" ]; then
    if [ "$(readlink "$recipe/node_modules" 2>/dev/null)" != "$installed/node_modules" ]; then
        rm -rf "$recipe/node_modules"
        ln -s "$installed/node_modules" "$recipe/node_modules"
    fi
    agent=(node "$recipe/agent.mjs")
else
    echo "agents/$name: no start.sh, agent.py or agent.mjs: nothing to run" >&2
    exit 2
fi
exec "${CTXGATE:-$repo/target/release/ctxgate}" agent --config "$recipe/agent.json" \
    ${options[@]+"${options[@]}"} ${args[@]+"${args[@]}"} -- "${agent[@]}"
