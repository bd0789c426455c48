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
stamp="$here/node_modules/.ctxgate-package-lock.json"

if ! cmp -s "$here/package-lock.json" "$stamp" 2>/dev/null; then
    {
        echo "ctxgate vercel-ai adapter: npm ci in $here"
        (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
        cp "$here/package-lock.json" "$stamp"
    } >&2
fi
if [ "${1:-}" = "--install" ]; then
    exit 0
fi
exec node "$here/adapter.mjs" "$@"
