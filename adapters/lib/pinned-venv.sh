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
        {
            echo "ctxgate adapter: installing $(echo "$want" | tr '\n' ' ')into $venv"
            "$python" -m venv "$venv"
            echo "$want" > "$venv/.ctxgate-want.txt"
            "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$venv/.ctxgate-want.txt"
            echo "$want" > "$stamp"
        } >&2
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
