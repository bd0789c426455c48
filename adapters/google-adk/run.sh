#!/usr/bin/env bash
# Run Google ADK's event compaction as a ctxgate subject:
#
#   ctxgate check --subject 'adapters/google-adk/run.sh'
#
# The optional argument is the google-adk version; each gets a venv of its own
# (adapters/lib/pinned-venv.sh: $CTXGATE_VENV_ROOT/google-adk-VERSION, or
# adapters/google-adk/.venv-VERSION). `run.sh --install [VERSION]` only
# installs; `run.sh --roundtrip [VERSION] < cases.jsonl` runs the lossless
# mapping test on `ctxgate gen` cases.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
default=2.13.0
mode=serve
case "${1:-}" in --install) mode=install; shift ;; --roundtrip) mode=roundtrip; shift ;; esac
source "$here/../lib/pinned-venv.sh"
ctxgate_pinned_venv "$here" google-adk "${1:-$default}"
case "$mode" in
    install) exit 0 ;;
    roundtrip) exec "$venv/bin/python" "$here/adapter.py" --roundtrip ;;
esac
exec "$venv/bin/python" "$here/adapter.py"
