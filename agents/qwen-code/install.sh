#!/usr/bin/env bash
# Installs Qwen Code as released: the pinned version (this folder's
# package.json and package-lock.json), or VERSION from versions/VERSION/ (a
# release a known bug concerns), with `npm ci`, outside the clone:
#
#   agents/qwen-code/install.sh [VERSION]   # prints nothing on stdout; npm's output goes to stderr
#
# into ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/qwen-code-VERSION.
# Idempotent: a stamp (the lockfile it was made from) says the install is
# done; one install at a time per folder (ctxgate_locked).
#
# `npm install --no-save` with the lockfile in place, not `npm ci`: Qwen
# Code bundles its code (no dependencies) and lists platform packages as
# optional ones (@qwen-code/audio-capture, @teddyzhu/clipboard-*), some of
# which the registry does not hold for older releases (0.21.10, 0.23.0);
# `npm ci` then refuses the lockfile as out of sync, where `npm install`
# skips a missing optional package. The lockfile still pins every version
# and its integrity.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=adapters/lib/pinned-venv.sh
source "$here/../../adapters/lib/pinned-venv.sh"
default=0.24.4
version="${1:-$default}"
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "agents/qwen-code/install.sh: '$version' is not a release number (like $default)" >&2
    exit 2
fi
if [ "$version" = "$default" ]; then pins="$here"; else pins="$here/versions/$version"; fi
if [ ! -f "$pins/package-lock.json" ]; then
    echo "agents/qwen-code/install.sh: no pinned lockfile for Qwen Code $version (expected $pins/package-lock.json)" >&2
    exit 2
fi
root="${CTXGATE_VENV_ROOT:-$HOME/.cache/ctxgate-adapters}"
dir="$root/agents/qwen-code-$version"

install_qwen() {
    local stamp="$dir/.ctxgate-package-lock.json"
    if cmp -s "$pins/package-lock.json" "$stamp"; then
        return 0
    fi
    {
        echo "agents/qwen-code: npm install (Qwen Code $version) in $dir"
        rm -f "$stamp"
        rm -rf "$dir/node_modules"
        cp "$pins/package.json" "$pins/package-lock.json" "$dir/"
        (cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error)
        cp "$pins/package-lock.json" "$stamp.tmp"
        mv -f "$stamp.tmp" "$stamp"
    } >&2
}

if ! cmp -s "$pins/package-lock.json" "$dir/.ctxgate-package-lock.json" 2>/dev/null; then
    mkdir -p "$dir"
    ctxgate_locked "$dir/.ctxgate-install.lock" install_qwen
fi
