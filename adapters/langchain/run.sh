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
venv="$here/.venv"
stamp="$venv/.ctxgate-requirements"
python="${PYTHON:-python3}"

if ! cmp -s "$here/requirements.txt" "$stamp" 2>/dev/null; then
    {
        echo "ctxgate langchain adapter: installing $(grep -v '^#' "$here/requirements.txt" | tr '\n' ' ')into $venv"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
        cp "$here/requirements.txt" "$stamp"
    } >&2
fi
if [ "${1:-}" = "--install" ]; then
    exit 0
fi
exec "$venv/bin/python" "$here/adapter.py" "$@"
