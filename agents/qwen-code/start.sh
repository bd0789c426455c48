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
# VERSION: installed by agents/qwen-code/install.sh VERSION (default: the pin).
# SETTINGS: the window and threshold to give it (default: agent.json here): a
# `--config` file, or an agent fixture, whose "config" is then read — so a
# known bug's fixture replays with the settings it was found with.
#
# Exits with Qwen Code's exit status.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${1:-0.24.4}"
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "agents/qwen-code/start.sh: '$version' is not a release number" >&2
    exit 2
fi
root="${CTXGATE_VENV_ROOT:-$HOME/.cache/ctxgate-adapters}"
qwen="$root/agents/qwen-code-$version/node_modules/.bin/qwen"
if [ ! -x "$qwen" ]; then
    echo "agents/qwen-code/start.sh: Qwen Code $version is not installed at $qwen (run agents/qwen-code/install.sh $version)" >&2
    exit 2
fi
: "${OPENAI_BASE_URL:?agents/qwen-code/start.sh: OPENAI_BASE_URL is not set (ctxgate agent sets it)}"
: "${CTXGATE_AGENT_PROMPT:?agents/qwen-code/start.sh: CTXGATE_AGENT_PROMPT is not set (ctxgate agent sets it)}"

HOME="$(dirname "$PWD")/home"
export HOME
mkdir -p "$HOME/.qwen"
node - "${2:-$here/agent.json}" "$HOME/.qwen/settings.json" <<'JS'
const fs = require("fs");
const [config, out] = process.argv.slice(2);
function fail(why) {
  process.stderr.write(`agents/qwen-code/start.sh: ${config}: ${why}\n`);
  process.exit(2);
}
let agent;
try {
  agent = JSON.parse(fs.readFileSync(config, "utf8"));
} catch (e) {
  fail(`cannot read the settings: ${e.message}`);
}
if (agent && agent.op === "agent" && agent.config) agent = agent.config;
if (!agent || !Number.isInteger(agent.contextWindow) || agent.contextWindow <= 0)
  fail("contextWindow must be a positive whole number of tokens");
if (typeof agent.threshold !== "number" || !(agent.threshold > 0 && agent.threshold <= 1))
  fail("threshold must be a number in (0, 1]");
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
