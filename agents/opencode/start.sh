#!/usr/bin/env bash
# One case of `ctxgate agent`: opencode as released, run non-interactively
# (`opencode run`) on the task, pointed at ctxgate's loopback endpoint as a
# custom OpenAI-compatible provider. Only what a user writes in opencode.json:
# the provider (base URL, key from the environment), the model and its limits
# (context 32000, output 8000: opencode compacts when the last answer's usage
# reaches context - output = 24000 tokens, 0.75 of the window), and every
# permission allowed since nobody is at the terminal. Config and opencode's
# data go into the case folder's home/, never the user's. Exits with
# opencode's status.
# The release: $CTXGATE_AGENT_VERSION, else the pin (installed if it is not).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib/recipe.sh
source "$here/../lib/recipe.sh"
ctxgate_case_needs "$here" OPENAI_BASE_URL CTXGATE_AGENT_PROMPT
release="$(ctxgate_case_release "$here")"
bin="$release/node_modules/.bin/opencode"

ctxgate_case_home
export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share" \
    XDG_CACHE_HOME="$HOME/.cache" XDG_STATE_HOME="$HOME/.local/state"
mkdir -p "$XDG_CONFIG_HOME/opencode"
cp "$here/opencode.json" "$XDG_CONFIG_HOME/opencode/opencode.json"
# Offline, as a loopback-only run is: no models.dev catalogue fetch, no
# self-update, no LSP downloads.
export OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 \
    OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_SHARE=1
exec "$bin" run --auto --model ctxgate/ctxgate-model "$CTXGATE_AGENT_PROMPT"
