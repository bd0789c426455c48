#!/usr/bin/env bash
# Run LangChain.js's trimMessages (@langchain/core, pinned in package.json and
# package-lock.json) as a ctxgate subject:
#
#   ctxgate check --subject 'adapters/langchain-js/run.sh'
#
# `run.sh --install` only installs (`npm ci`); `run.sh --roundtrip <
# cases.jsonl` runs the lossless-mapping test on `ctxgate gen` cases. With
# $CTXGATE_VENV_ROOT set (CI), node_modules lives there, one folder per lock
# file, and adapters/langchain-js/node_modules is a link to it, so that a
# fresh clone reuses the install. Everything npm prints goes to stderr:
# stdout belongs to the protocol.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -n "${CTXGATE_VENV_ROOT:-}" ]; then
    dir="$CTXGATE_VENV_ROOT/langchain-js-$(sha256sum "$here/package-lock.json" | cut -c1-12)"
else
    dir="$here"
fi
stamp="$dir/node_modules/.ctxgate-package-lock.json"
source "$here/../lib/pinned-venv.sh" # ctxgate_locked: one install at a time
install() {
    # Another run may have installed while this one waited for the lock.
    cmp -s "$here/package-lock.json" "$stamp" 2>/dev/null && return 0
    {
        echo "ctxgate langchain-js adapter: npm ci in $dir"
        [ "$dir" = "$here" ] || cp "$here/package.json" "$here/package-lock.json" "$dir/"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
        cp "$here/package-lock.json" "$stamp.tmp"
        mv -f "$stamp.tmp" "$stamp"
    } >&2
}
# The link in the checkout to an install under $CTXGATE_VENV_ROOT (under a
# lock too: two runs making it at once would put one link inside the other).
link() {
    if [ "$(readlink "$here/node_modules" 2>/dev/null)" != "$dir/node_modules" ]; then
        rm -rf "$here/node_modules"
        ln -s "$dir/node_modules" "$here/node_modules"
    fi
}
if ! cmp -s "$here/package-lock.json" "$stamp" 2>/dev/null; then
    # The lock beside node_modules: `npm ci` removes node_modules first.
    mkdir -p "$dir"
    ctxgate_locked "$dir/.ctxgate-install.lock" install
fi
if [ "$dir" != "$here" ] && [ "$(readlink "$here/node_modules" 2>/dev/null)" != "$dir/node_modules" ]; then
    ctxgate_locked "$here/.ctxgate-install.lock" link
fi
case "${1:-}" in
    --install) exit 0 ;;
    --roundtrip) exec node "$here/adapter.mjs" --roundtrip ;;
esac
exec node "$here/adapter.mjs"
