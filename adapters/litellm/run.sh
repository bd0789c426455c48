#!/usr/bin/env bash
# Run LiteLLM's trim_messages and token_counter as a ctxgate subject:
#
#   ctxgate check --subject 'adapters/litellm/run.sh'           # the default pin below
#   ctxgate replay suites/known-bugs --subject 'adapters/litellm/run.sh 1.60.0'
#
# The optional argument is the litellm version to run; each gets a venv of
# its own (adapters/lib/pinned-venv.sh), made on first use. `run.sh --install
# [VERSION]` only installs: do it before `check` (CI does), so that the
# subject's first hello does not wait on pip.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
default=1.110.2
install=no
if [ "${1:-}" = "--install" ]; then install=yes; shift; fi
source "$here/../lib/pinned-venv.sh"
# LiteLLM counts with tiktoken's cl100k_base. Releases since 1.x ship that
# file (named by tiktoken's cache key); older ones, 1.14 among them, fetch it
# at import, which cannot be done here: they are pointed at the copy the
# default release ships — the same file.
bpe=9b5ad71b2ce5302211f9c61530b329a4922fc6a4
tokenizers() { find "$1"/lib/python*/site-packages/litellm -name "$bpe" -printf '%h\n' 2>/dev/null | head -1; }
ctxgate_pinned_venv "$here" litellm "$default"
shipped="$(tokenizers "$venv")"
ctxgate_pinned_venv "$here" litellm "${1:-$default}"
export TIKTOKEN_CACHE_DIR="$(tokenizers "$venv")"
TIKTOKEN_CACHE_DIR="${TIKTOKEN_CACHE_DIR:-$shipped}"
if [ "$install" = yes ]; then exit 0; fi
# LiteLLM fetches its model price map over the network at import unless told not to.
export LITELLM_LOCAL_MODEL_COST_MAP=True
exec "$venv/bin/python" "$here/adapter.py"
