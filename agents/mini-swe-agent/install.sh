#!/usr/bin/env bash
# Installs mini-swe-agent (PyPI), pinned, into a venv outside the clone:
#   ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/mini-swe-agent-VERSION
# `install.sh` installs requirements.txt's pin; `install.sh VERSION` installs
# another release beside it. Idempotent (a stamp file), one install at a time
# (a lock), quiet on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../adapters/lib/pinned-venv.sh"
pinned="$(sed -n 's/^mini-swe-agent==//p' "$here/requirements.txt")"
version="${1:-$pinned}"
case "$version" in *[!0-9A-Za-z.+-]*|'') echo "mini-swe-agent: not a version: $version" >&2; exit 2 ;; esac
root="${CTXGATE_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxgate-adapters}/agents"
venv="$root/mini-swe-agent-$version"
if [ "$version" = "$pinned" ]; then
    want="$(cat "$here/requirements.txt")"
else
    want="mini-swe-agent==$version"
fi
if [ "$(cat "$venv/.ctxgate-requirements" 2>/dev/null)" != "$want" ]; then
    mkdir -p "$venv"
    ctxgate_locked "$venv/.ctxgate-install.lock" ctxgate_install_venv "${PYTHON:-python3}" "$venv" "$want"
fi
