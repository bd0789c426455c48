#!/usr/bin/env bash
# One case of `ctxgate agent`: Qwen Code, as released, non-interactive (-p)
# on the task, its model the endpoint ctxgate started, configured only as a
# user would (~/.qwen/settings.json, whose keys are in the settings schema the
# package ships):
#
#   security.auth.selectedType   "openai": an OpenAI-compatible endpoint, whose
#                                base URL and key come from OPENAI_BASE_URL and
#                                OPENAI_API_KEY (ctxgate's endpoint, its dummy key)
#   model.name                   ctxgate-model
#   model.generationConfig.contextWindowSize   agent.json's contextWindow
#   context.autoCompactThreshold               agent.json's threshold
#   privacy.usageStatisticsEnabled false, telemetry.enabled false,
#   general.disableAutoUpdate true             nothing leaves the loopback
#
# HOME is the case folder's home/ (beside the workspace), so a run never
# reads or writes the user's ~/.qwen. --yolo: tools run without asking, as
# nobody is at the terminal. Every tool stays as Qwen Code ships it.
#
#   agents/qwen-code/start.sh [VERSION [SETTINGS]]
#
# VERSION: the release (default: $CTXGATE_AGENT_VERSION, else the pin),
# installed by agents/qwen-code/install.sh VERSION if it is not.
# SETTINGS: the window and threshold to give it (default: agent.json here): a
# `--config` file, or an agent fixture, whose "config" is then read — so a
# known bug's fixture replays with the settings it was found with.
#
# Exits with Qwen Code's exit status.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib/recipe.sh
source "$here/../lib/recipe.sh"
ctxgate_case_needs "$here" OPENAI_BASE_URL CTXGATE_AGENT_PROMPT
release="$(ctxgate_case_release "$here" "${1:-}")"
qwen="$release/node_modules/.bin/qwen"

ctxgate_case_home
mkdir -p "$HOME/.qwen"
node - "$here/../lib/settings.cjs" "${2:-$here/agent.json}" "$HOME/.qwen/settings.json" <<'JS'
const fs = require("fs");
const [lib, config, out] = process.argv.slice(2);
const agent = require(lib)(config, "agents/qwen-code/start.sh");
const settings = {
  security: { auth: { selectedType: "openai" } },
  model: {
    name: "ctxgate-model",
    generationConfig: { contextWindowSize: agent.contextWindow },
  },
  context: { autoCompactThreshold: agent.threshold },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  general: { disableAutoUpdate: true, disableUpdateNag: true },
};
fs.writeFileSync(out, JSON.stringify(settings, null, 2) + "\n");
JS
exec "$qwen" --yolo -p "$CTXGATE_AGENT_PROMPT"
