#!/usr/bin/env bash
# One case of `ctxgate agent`: the Codex CLI as released, non-interactively
# (`codex exec`) on the task, pointed at ctxgate's loopback endpoint as a
# custom model provider speaking the Responses API. Only what a user writes
# in ~/.codex/config.toml (config.toml beside this script: the provider, the
# model, its window and auto-compaction limit, no approvals) plus the
# provider's base URL, which is the case's, given with `-c`. CODEX_HOME is
# the case folder's home/.codex, never the user's. Exits with codex's status.
# The release: $CTXGATE_AGENT_VERSION, else the pin (installed if it is not).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib/recipe.sh
source "$here/../lib/recipe.sh"
ctxgate_case_needs "$here" OPENAI_BASE_URL CTXGATE_AGENT_PROMPT
release="$(ctxgate_case_release "$here")"
bin="$release/node_modules/.bin/codex"

ctxgate_case_home
export CODEX_HOME="$HOME/.codex"
mkdir -p "$CODEX_HOME"
cp "$here/config.toml" "$CODEX_HOME/config.toml"
# The URL as a TOML string (JSON's quoting is TOML's for such a string).
url="$(python3 -c 'import json,os; print(json.dumps(os.environ["OPENAI_BASE_URL"]))')"
exec "$bin" exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox \
    -c "model_providers.ctxgate.base_url=$url" "$CTXGATE_AGENT_PROMPT" < /dev/null
