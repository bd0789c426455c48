#!/usr/bin/env bash
# Run the Vercel AI SDK's pruneMessages as a ctxgate subject:
#
#   ctxgate check --subject 'adapters/vercel-ai/run.sh'
#
# On first use (or when package-lock.json changed) it runs `npm ci` into
# adapters/vercel-ai/node_modules, then execs the adapter with Node (20 or
# later). `run.sh --install` only installs: do it once before `check` (CI
# does) so that the subject's first hello does not wait on npm. Everything
# npm prints goes to stderr: stdout belongs to the protocol.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../lib/pinned-venv.sh" # ctxgate_locked: one install at a time
stamp="$here/node_modules/.ctxgate-package-lock.json"

install() {
    # Another run may have installed while this one waited for the lock.
    cmp -s "$here/package-lock.json" "$stamp" 2>/dev/null && return 0
    {
        echo "ctxgate vercel-ai adapter: npm ci in $here"
        (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
        cp "$here/package-lock.json" "$stamp.tmp"
        mv -f "$stamp.tmp" "$stamp"
    } >&2
}
if ! cmp -s "$here/package-lock.json" "$stamp" 2>/dev/null; then
    # The lock beside node_modules: `npm ci` removes node_modules first.
    ctxgate_locked "$here/.ctxgate-install.lock" install
fi
if [ "${1:-}" = "--install" ]; then
    exit 0
fi
exec node "$here/adapter.mjs" "$@"
