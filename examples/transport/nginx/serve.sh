#!/usr/bin/env bash
# Start or stop nginx (Debian's package) with its default request-body
# limit, proxying to a tiny Python upstream.
#
#   examples/transport/nginx/serve.sh start DIR   # prints the URL
#   examples/transport/nginx/serve.sh stop DIR
#
# `start` installs nginx from Debian's packages when it is missing
# (apt-get; the package's own service is not started), starts the upstream
# and nginx on 127.0.0.1 on free ports, prints nginx's URL on stdout once
# it answers, and keeps the PIDs and logs in DIR. Where nginx cannot be
# installed it says so on stderr and exits 3: callers skip. `stop` stops
# the PIDs it started (and nothing else).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
. "$here/../lib.sh"
cmd=${1:-}; dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
    echo "usage: $0 start DIR | stop DIR" >&2
    exit 2
fi
SKIP=3

find_nginx() {
    command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true
}

install_nginx() {
    if ! command -v apt-get >/dev/null; then
        echo "nginx example: skipped: nginx is not installed and there is no apt-get to install it" >&2
        return 1
    fi
    echo "nginx example: installing nginx from Debian's packages" >&2
    # policy-rc.d keeps the package from starting its own service; only
    # one the script wrote itself is removed again.
    local policy=/usr/sbin/policy-rc.d wrote=
    if [ ! -e "$policy" ] && [ -w /usr/sbin ]; then
        printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && wrote=1
    fi
    local ok=1
    { apt-get install -y --no-install-recommends nginx \
        || { apt-get update && apt-get install -y --no-install-recommends nginx; }; } \
        > "$dir/apt.log" 2>&1 || ok=
    [ -n "$wrote" ] && rm -f "$policy"
    if [ -z "$ok" ]; then
        echo "nginx example: skipped: nginx could not be installed from Debian's packages here (see $dir/apt.log)" >&2
        return 1
    fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

case "$cmd" in
start)
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    nginx_bin=$(find_nginx)
    if [ -z "$nginx_bin" ]; then
        install_nginx || exit $SKIP
        nginx_bin=$(find_nginx)
        [ -n "$nginx_bin" ] || { echo "nginx example: skipped: nginx was installed but is not on PATH" >&2; exit $SKIP; }
    fi
    rm -f "$dir/upstream.port"
    python3 "$here/upstream.py" "$dir/upstream.port" > "$dir/upstream.log" 2>&1 &
    echo $! > "$dir/upstream.pid"
    wait_for_file "$dir/upstream.port" "$dir/upstream.pid" \
        || { cat "$dir/upstream.log" >&2; echo "nginx example: the upstream did not start" >&2; exit 1; }
    upstream_port=$(cat "$dir/upstream.port")
    mkdir -p "$dir/client_body" "$dir/proxy" "$dir/fastcgi" "$dir/uwsgi" "$dir/scgi"
    # A port picked free may be taken before nginx binds it: a few tries.
    for _ in 1 2 3 4 5; do
        port=$(free_port)
        # Only numbers go into the config (its paths are relative to -p).
        [[ $port =~ ^[0-9]+$ && $upstream_port =~ ^[0-9]+$ ]] \
            || { echo "nginx example: not a port: $port, $upstream_port" >&2; exit 1; }
        sed -e "s|@PORT@|$port|g" -e "s|@UPSTREAM_PORT@|$upstream_port|g" \
            "$here/nginx.conf.in" > "$dir/nginx.conf"
        : > "$dir/error.log"
        "$nginx_bin" -p "$dir/" -e "$dir/error.log" -c "$dir/nginx.conf" > "$dir/nginx.log" 2>&1 &
        echo $! > "$dir/nginx.pid.started"
        url="http://127.0.0.1:$port/internal/sessions/ctxgate/llm-turn"
        for _ in $(seq 1 50); do
            if python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()' "$port" 2>/dev/null; then
                echo "$url" > "$dir/url"
                echo "$url"
                exit 0
            fi
            kill -0 "$(cat "$dir/nginx.pid.started")" 2>/dev/null || break
            sleep 0.1
        done
        stop_pid_file "$dir/nginx.pid.started"
    done
    cat "$dir/error.log" "$dir/nginx.log" >&2 || true
    stop_pid_file "$dir/upstream.pid"
    echo "nginx example: nginx did not start" >&2
    exit 1
    ;;
stop)
    stop_pid_file "$dir/nginx.pid.started"
    stop_pid_file "$dir/upstream.pid"
    ;;
*)
    echo "usage: $0 start DIR | stop DIR" >&2
    exit 2
    ;;
esac
