#!/usr/bin/env bash
# Start or stop ADR 0098's api end: an Express app with `express.json()`.
#
#   examples/transport/express/serve.sh start DIR [LIMIT]   # prints the URL
#   examples/transport/express/serve.sh stop DIR
#
# `start` installs the pinned packages (package-lock.json, `npm ci`) on
# first use, starts the server on 127.0.0.1 on a port the kernel picks,
# prints its URL on stdout once it listens, and keeps its PID, URL and log
# in DIR. LIMIT is express.json()'s `limit` (the ADR's fix: 10mb); without
# it the app is exactly `app.use(express.json())`, the implicit 100 KB.
# `stop` stops that PID (and nothing else).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
. "$here/../lib.sh"
cmd=${1:-}; dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
    echo "usage: $0 start DIR [LIMIT] | stop DIR" >&2
    exit 2
fi

case "$cmd" in
start)
    limit=${3:-}
    stamp="$here/node_modules/.ctxgate-package-lock.json"
    if ! cmp -s "$here/package-lock.json" "$stamp" 2>/dev/null; then
        echo "express example: npm ci in $here" >&2
        (cd "$here" && npm ci --no-audit --no-fund --loglevel=error) >&2
        cp "$here/package-lock.json" "$stamp"
    fi
    mkdir -p "$dir"
    rm -f "$dir/url"
    # NODE_ENV=production, as deployed: error pages without stack traces.
    URL_FILE="$dir/url" JSON_LIMIT="$limit" NODE_ENV=production \
        node "$here/server.js" > "$dir/log" 2>&1 &
    echo $! > "$dir/pid"
    if wait_for_file "$dir/url" "$dir/pid"; then
        cat "$dir/url"
        exit 0
    fi
    if kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
        echo "express example: no URL after 10 s (log: $dir/log)" >&2
    else
        cat "$dir/log" >&2
        echo "express example: the server exited before it listened" >&2
    fi
    exit 1
    ;;
stop)
    stop_pid_file "$dir/pid"
    ;;
*)
    echo "usage: $0 start DIR [LIMIT] | stop DIR" >&2
    exit 2
    ;;
esac
