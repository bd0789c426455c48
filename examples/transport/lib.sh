# What the transport examples' serve.sh scripts share: waiting for a
# server to say where it listens, and stopping the PIDs they started (and
# nothing else). Sourced, not run.

# Wait up to 10 s for FILE to be non-empty; fail at once if the process in
# PIDFILE has exited.
wait_for_file() {
    local file=$1 pidfile=$2
    for _ in $(seq 1 100); do
        [ -s "$file" ] && return 0
        kill -0 "$(cat "$pidfile")" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# Stop the process in FILE (if any), wait up to 5 s for it, remove FILE.
stop_pid_file() {
    local file=$1
    [ -s "$file" ] || return 0
    local pid
    pid=$(cat "$file")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    rm -f "$file"
}
