#!/usr/bin/env bash
# Installs the pinned openai-agents release (requirements.txt: the SDK and
# everything it resolved to, `==` pinned) into a venv outside the clone:
#   ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/openai-agents-py-VERSION
# `install.sh [VERSION]` installs another release beside it (only the SDK's
# own pin changes; its dependencies resolve as pip resolves them). Idempotent
# (a stamp holds what was installed), one install at a time (a lock), quiet
# on stdout; prints the venv's path last.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="$(basename "$here")"
package=openai-agents
default="$(sed -n "s/^$package==//p" "$here/requirements.txt")"
version="${1:-$default}"
root="${CTXGATE_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxgate-adapters}/agents"
venv="$root/$name-$version"
# shellcheck source-path=SCRIPTDIR source=../../adapters/lib/pinned-venv.sh
source "$here/../../adapters/lib/pinned-venv.sh"
if [ "$version" = "$default" ]; then
    want="$(cat "$here/requirements.txt")"
else
    want="$package==$version"
fi
install() {
    if [ "$(cat "$venv/.ctxgate-requirements" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    echo "$name: installing $package==$version into $venv" >&2
    rm -rf "$venv"
    "${PYTHON:-python3}" -m venv "$venv"
    printf '%s\n' "$want" > "$venv/.ctxgate-want.txt"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$venv/.ctxgate-want.txt" >&2
    printf '%s\n' "$want" > "$venv/.ctxgate-requirements.tmp"
    mv -f "$venv/.ctxgate-requirements.tmp" "$venv/.ctxgate-requirements"
}
if [ "$(cat "$venv/.ctxgate-requirements" 2>/dev/null)" != "$want" ]; then
    mkdir -p "$root"
    ctxgate_locked "$root/.$name-$version.lock" install
fi
echo "$venv"
