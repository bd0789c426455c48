#!/usr/bin/env bash
# One case of `ctxgate agent`: the Codex CLI as released, non-interactively
# (`codex exec`) on the task, pointed at ctxgate's loopback endpoint as a
# custom model provider speaking the Responses API. Only what a user writes
# in ~/.codex/config.toml (config.toml beside this script: the provider, the
# model, its window and auto-compaction limit, no approvals) plus the
# provider's base URL, which is the case's, given with `-c`. CODEX_HOME is
# the case folder's home/.codex, never the user's. Exits with codex's status.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${CTXGATE_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxgate-adapters}/agents"
version="${CTXGATE_AGENT_VERSION:-$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dependencies"]["@openai/codex"])' "$here/package.json")}"
bin="$root/codex-$version/node_modules/.bin/codex"
[ -x "$bin" ] || { echo "codex $version is not installed: run $here/install.sh $version" >&2; exit 2; }

export HOME="$(dirname "$PWD")/home"
export CODEX_HOME="$HOME/.codex"
mkdir -p "$CODEX_HOME"
cp "$here/config.toml" "$CODEX_HOME/config.toml"
# The URL as a TOML string (JSON's quoting is TOML's for such a string).
url="$(python3 -c 'import json,os; print(json.dumps(os.environ["OPENAI_BASE_URL"]))')"
exec "$bin" exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox \
    -c "model_providers.ctxgate.base_url=$url" "$CTXGATE_AGENT_PROMPT" < /dev/null
