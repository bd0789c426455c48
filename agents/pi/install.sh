#!/usr/bin/env bash
# Installs pi, the coding agent, as released: the pinned version (this
# folder's package.json and package-lock.json), or VERSION from
# versions/VERSION/ (a release a known bug concerns), with `npm ci`, outside
# the clone:
#
#   agents/pi/install.sh [VERSION]      # prints nothing on stdout; npm's output goes to stderr
#
# into ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/pi-VERSION.
# Idempotent: a stamp (the lockfile it was made from) says the install is
# done; one install at a time per folder (ctxgate_locked). The package was
# @mariozechner/pi-coding-agent up to 0.73.1 and is
# @earendil-works/pi-coding-agent since 0.74.0: each version's package.json
# names its own.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=adapters/lib/pinned-venv.sh
source "$here/../../adapters/lib/pinned-venv.sh"
default=0.73.1
version="${1:-$default}"
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "agents/pi/install.sh: '$version' is not a release number (like $default)" >&2
    exit 2
fi
if [ "$version" = "$default" ]; then pins="$here"; else pins="$here/versions/$version"; fi
if [ ! -f "$pins/package-lock.json" ]; then
    echo "agents/pi/install.sh: no pinned lockfile for pi $version (expected $pins/package-lock.json)" >&2
    exit 2
fi
root="${CTXGATE_VENV_ROOT:-$HOME/.cache/ctxgate-adapters}"
dir="$root/agents/pi-$version"

install_pi() {
    local stamp="$dir/.ctxgate-package-lock.json"
    if cmp -s "$pins/package-lock.json" "$stamp"; then
        return 0
    fi
    {
        echo "agents/pi: npm ci (pi $version) in $dir"
        rm -f "$stamp"
        rm -rf "$dir/node_modules"
        cp "$pins/package.json" "$pins/package-lock.json" "$dir/"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
        cp "$pins/package-lock.json" "$stamp.tmp"
        mv -f "$stamp.tmp" "$stamp"
    } >&2
}

if ! cmp -s "$pins/package-lock.json" "$dir/.ctxgate-package-lock.json" 2>/dev/null; then
    mkdir -p "$dir"
    ctxgate_locked "$dir/.ctxgate-install.lock" install_pi
fi
