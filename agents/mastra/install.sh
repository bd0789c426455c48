#!/usr/bin/env bash
# Installs the pinned Mastra release (package.json, package-lock.json:
# `@mastra/core`, `zod`) with `npm ci` outside the clone:
#   ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/mastra-VERSION
# `install.sh [VERSION]` installs another `@mastra/core` release beside it (`npm
# install @mastra/core@VERSION` there, the rest as locked). Idempotent (a stamp holds
# what was installed), one install at a time (a lock), quiet on stdout;
# prints the folder last (its node_modules is what agent.mjs imports).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="$(basename "$here")"
default="$(node -e 'process.stdout.write(require(process.argv[1]).dependencies["@mastra/core"])' "$here/package.json")"
version="${1:-$default}"
root="${CTXGATE_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxgate-adapters}/agents"
dir="$root/$name-$version"
# shellcheck source-path=SCRIPTDIR source=../../adapters/lib/pinned-venv.sh
source "$here/../../adapters/lib/pinned-venv.sh"
want="$(cat "$here/package-lock.json"; echo "@mastra/core@$version")"
install() {
    if [ "$(cat "$dir/.ctxgate-installed" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    echo "$name: installing @mastra/core@$version into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$here/package.json" "$here/package-lock.json" "$dir/"
    (
        cd "$dir"
        npm ci --no-audit --no-fund --loglevel=error
        if [ "$version" != "$default" ]; then
            npm install --no-audit --no-fund --loglevel=error --save-exact "@mastra/core@$version"
        fi
    ) >&2
    printf '%s\n' "$want" > "$dir/.ctxgate-installed.tmp"
    mv -f "$dir/.ctxgate-installed.tmp" "$dir/.ctxgate-installed"
}
if [ "$(cat "$dir/.ctxgate-installed" 2>/dev/null)" != "$want" ]; then
    mkdir -p "$root"
    ctxgate_locked "$root/.$name-$version.lock" install
fi
echo "$dir"
