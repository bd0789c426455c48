# shellcheck shell=bash
# Sourced by an adapter's run.sh: a Python virtualenv per pinned version of
# the package under test, so that one adapter runs the version a bug was
# reported on and the version that fixed it side by side.
#
#   source "$here/../lib/pinned-venv.sh"
#   ctxgate_pinned_venv "$here" litellm "${1:-$default}"   # sets $venv
#
# The venv is $here/.venv-VERSION (git ignores .venv*), or
# $CTXGATE_VENV_ROOT/<adapter>-VERSION when that is set (CI keeps them there
# between runs). Its requirements are
# `PACKAGE==VERSION`, plus the lines of $here/pins/VERSION.txt when that file
# exists (a dependency a release needs pinned to install today). pip's output
# goes to stderr: stdout belongs to the protocol.
#
# Several runs may want the same venv at once (CI's background installs
# beside a check, a parallel `check --jobs N` whose subjects all start
# cold): the install takes a lock on the venv (ctxgate_locked), the others
# wait for it and then find it made — two pips never write one venv
# ("Text file busy").
ctxgate_pinned_venv() {
    local here=$1 package=$2 version=$3
    local python="${PYTHON:-python3}"
    if [ -n "${CTXGATE_VENV_ROOT:-}" ]; then
        mkdir -p "$CTXGATE_VENV_ROOT"
        venv="$CTXGATE_VENV_ROOT/$(basename "$here")-$version"
    else
        venv="$here/.venv-$version"
    fi
    local want stamp="$venv/.ctxgate-requirements"
    want="$(printf '%s==%s\n' "$package" "$version"; if [ -f "$here/pins/$version.txt" ]; then grep -v '^#' "$here/pins/$version.txt"; fi)"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        mkdir -p "$venv"
        ctxgate_locked "$venv/.ctxgate-install.lock" ctxgate_install_venv "$python" "$venv" "$want"
    fi
}

# Under the venv's lock: install unless another run did while this one
# waited. The stamp is written last, and whole (renamed into place): a run
# that reads it without the lock sees the install done or not at all.
ctxgate_install_venv() {
    local python=$1 venv=$2 want=$3 stamp="$2/.ctxgate-requirements"
    if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    {
        echo "ctxgate adapter: installing $(echo "$want" | tr '\n' ' ')into $venv"
        rm -f "$stamp"
        "$python" -m venv "$venv"
        printf '%s\n' "$want" > "$venv/.ctxgate-want.txt"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$venv/.ctxgate-want.txt"
        printf '%s\n' "$want" > "$stamp.tmp"
        mv -f "$stamp.tmp" "$stamp"
    } >&2
}

# ctxgate_locked LOCKFILE COMMAND [ARG...]: run COMMAND (a function too)
# holding an exclusive lock on LOCKFILE (flock(1)); another run that asks
# for the same lock waits until this one is done. Where there is no flock
# (macOS without util-linux), the command runs unlocked, and says so.
ctxgate_locked() {
    local lock=$1
    shift
    if command -v flock > /dev/null 2>&1; then
        (
            flock 9 || { echo "ctxgate adapter: could not lock $lock" >&2; exit 1; }
            "$@"
        ) 9>> "$lock"
    else
        echo "ctxgate adapter: no flock(1) here: an install running at the same time into the same place is not waited for" >&2
        "$@"
    fi
}

# The rest of an adapter's run.sh, after its header comment:
#
#   ctxgate_run_pinned "$here" PACKAGE DEFAULT_VERSION "$@"
#
# `run.sh [VERSION]` serves the protocol with $here/adapter.py in the venv of
# that version (the default pin without one); `run.sh --install [VERSION]`
# only installs (CI does it before `check`, so that a subject's first hello
# does not wait on pip); `run.sh --roundtrip [VERSION] < cases.jsonl` runs
# the adapter's lossless mapping test on `ctxgate gen` cases, where it has one.
ctxgate_run_pinned() {
    local here=$1 package=$2 default=$3 mode=serve
    shift 3
    case "${1:-}" in --install) mode=install; shift ;; --roundtrip) mode=roundtrip; shift ;; esac
    ctxgate_pinned_venv "$here" "$package" "${1:-$default}"
    case "$mode" in
        install) exit 0 ;;
        roundtrip) exec "$venv/bin/python" "$here/adapter.py" --roundtrip ;;
    esac
    exec "$venv/bin/python" "$here/adapter.py"
}
