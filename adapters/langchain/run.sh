#!/usr/bin/env bash
# Run LangChain's trim_messages as a ctxgate subject:
#
#   ctxgate check --subject 'adapters/langchain/run.sh'
#
# On first use it creates adapters/langchain/.venv and pip-installs the pinned
# langchain-core (requirements.txt), then execs the adapter. `run.sh --install`
# only installs: do it once before `check` (CI does) so that the subject's
# first hello does not wait on pip. Everything pip prints goes to stderr:
# stdout belongs to the protocol.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../lib/pinned-venv.sh" # ctxgate_locked: one install at a time
venv="$here/.venv"
stamp="$venv/.ctxgate-requirements"
python="${PYTHON:-python3}"

install() {
    # Another run may have installed while this one waited for the lock.
    cmp -s "$here/requirements.txt" "$stamp" 2>/dev/null && return 0
    {
        echo "ctxgate langchain adapter: installing $(grep -v '^#' "$here/requirements.txt" | tr '\n' ' ')into $venv"
        rm -f "$stamp"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
        cp "$here/requirements.txt" "$stamp.tmp"
        mv -f "$stamp.tmp" "$stamp"
    } >&2
}
if ! cmp -s "$here/requirements.txt" "$stamp" 2>/dev/null; then
    mkdir -p "$venv"
    ctxgate_locked "$venv/.ctxgate-install.lock" install
fi
if [ "${1:-}" = "--install" ]; then
    exit 0
fi
exec "$venv/bin/python" "$here/adapter.py" "$@"
