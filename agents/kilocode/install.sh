#!/usr/bin/env bash
# Installs the Kilo Code CLI (npm @kilocode/cli) as released: the pinned
# version (this folder's package.json and package-lock.json), or VERSION from
# versions/VERSION/ (a release a known bug concerns), outside the clone:
#
#   agents/kilocode/install.sh [VERSION]   # prints nothing on stdout; npm's output goes to stderr
#
# into ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/kilocode-VERSION.
# Idempotent: a stamp (the lockfile it was made from) says the install is
# done; one install at a time per folder (ctxgate_locked).
#
# `npm install --no-save` with the lockfile in place, not `npm ci`: the
# package is a launcher whose binary comes from one of a dozen platform
# packages listed as optional dependencies (@kilocode/cli-linux-x64, …), of
# which the lockfile holds only those npm resolved here and the registry does
# not hold every one for every release; `npm ci` refuses such a lockfile as
# out of sync, where `npm install` skips an optional package that is not
# there. The lockfile still pins every version and its integrity.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=adapters/lib/pinned-venv.sh
source "$here/../../adapters/lib/pinned-venv.sh"
default="$(node -e 'process.stdout.write(require(process.argv[1]).dependencies["@kilocode/cli"])' "$here/package.json")"
version="${1:-$default}"
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "agents/kilocode/install.sh: '$version' is not a release number (like $default)" >&2
    exit 2
fi
if [ "$version" = "$default" ]; then pins="$here"; else pins="$here/versions/$version"; fi
if [ ! -f "$pins/package-lock.json" ]; then
    echo "agents/kilocode/install.sh: no pinned lockfile for Kilo Code $version (expected $pins/package-lock.json)" >&2
    exit 2
fi
root="${CTXGATE_VENV_ROOT:-$HOME/.cache/ctxgate-adapters}"
dir="$root/agents/kilocode-$version"

install_kilo() {
    local stamp="$dir/.ctxgate-package-lock.json"
    if cmp -s "$pins/package-lock.json" "$stamp"; then
        return 0
    fi
    {
        echo "agents/kilocode: npm install (Kilo Code $version) in $dir"
        rm -f "$stamp"
        rm -rf "$dir/node_modules"
        cp "$pins/package.json" "$pins/package-lock.json" "$dir/"
        (cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error)
        "$dir/node_modules/.bin/kilo" --version
        cp "$pins/package-lock.json" "$stamp.tmp"
        mv -f "$stamp.tmp" "$stamp"
    } >&2
}

if ! cmp -s "$pins/package-lock.json" "$dir/.ctxgate-package-lock.json" 2>/dev/null; then
    mkdir -p "$dir"
    ctxgate_locked "$dir/.ctxgate-install.lock" install_kilo
fi
