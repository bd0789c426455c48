#!/usr/bin/env bash
# One case of `ctxgate agent`: the Kilo Code CLI (`kilo`, npm @kilocode/cli,
# an opencode fork) as released, run non-interactively (`kilo run --auto`)
# on the task, its model ctxgate's loopback endpoint as a custom
# OpenAI-compatible provider. Only what a user writes in
# ~/.config/kilo/kilo.json (opencode's config schema, which Kilo keeps):
#
#   provider.ctxgate             "@ai-sdk/openai-compatible", baseURL and key
#                                from OPENAI_BASE_URL / OPENAI_API_KEY (ctxgate's
#                                endpoint, its dummy key)
#   models.ctxgate-model.limit   context: the settings' contextWindow; output:
#                                contextWindow × (1 − threshold) — Kilo, like
#                                opencode, compacts when a step's reported usage
#                                reaches context − output, so that is how a user
#                                sets the threshold
#   model, small_model           ctxgate/ctxgate-model (side requests come here too)
#   permission "allow", autoupdate false, share "disabled"
#
# with KILO_DISABLE_MODELS_FETCH, …_AUTOUPDATE, …_LSP_DOWNLOAD, …_SHARE,
# …_SESSION_INGEST and KILO_TELEMETRY_LEVEL=off: offline, as a loopback-only
# run is. HOME (and XDG_*) is the case folder's home/, beside the workspace,
# so a run never reads or writes the user's ~/.config/kilo.
#
#   agents/kilocode/start.sh [VERSION [SETTINGS]]
#
# VERSION: installed by agents/kilocode/install.sh VERSION (default: the pin).
# SETTINGS: the window and threshold to give it (default: agent.json here): a
# `--config` file, or an agent fixture, whose "config" is then read — so a
# known bug's fixture replays with the settings it was found with.
#
# Exits with kilo's exit status.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
default="$(node -e 'process.stdout.write(require(process.argv[1]).dependencies["@kilocode/cli"])' "$here/package.json")"
version="${1:-$default}"
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "agents/kilocode/start.sh: '$version' is not a release number" >&2
    exit 2
fi
root="${CTXGATE_VENV_ROOT:-$HOME/.cache/ctxgate-adapters}"
kilo="$root/agents/kilocode-$version/node_modules/.bin/kilo"
if [ ! -x "$kilo" ]; then
    echo "agents/kilocode/start.sh: Kilo Code $version is not installed at $kilo (run agents/kilocode/install.sh $version)" >&2
    exit 2
fi
: "${OPENAI_BASE_URL:?agents/kilocode/start.sh: OPENAI_BASE_URL is not set (ctxgate agent sets it)}"
: "${CTXGATE_AGENT_PROMPT:?agents/kilocode/start.sh: CTXGATE_AGENT_PROMPT is not set (ctxgate agent sets it)}"

HOME="$(dirname "$PWD")/home"
export HOME XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share" \
    XDG_CACHE_HOME="$HOME/.cache" XDG_STATE_HOME="$HOME/.local/state"
mkdir -p "$XDG_CONFIG_HOME/kilo"
node - "${2:-$here/agent.json}" "$XDG_CONFIG_HOME/kilo/kilo.json" <<'JS'
const fs = require("fs");
const [config, out] = process.argv.slice(2);
function fail(why) {
  process.stderr.write(`agents/kilocode/start.sh: ${config}: ${why}\n`);
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
if (typeof agent.threshold !== "number" || !(agent.threshold > 0 && agent.threshold < 1))
  fail("threshold must be a number in (0, 1)");
const context = agent.contextWindow;
const output = Math.round(context * (1 - agent.threshold));
const settings = {
  $schema: "https://app.kilo.ai/config.json",
  provider: {
    ctxgate: {
      npm: "@ai-sdk/openai-compatible",
      name: "ctxgate",
      options: { baseURL: "{env:OPENAI_BASE_URL}", apiKey: "{env:OPENAI_API_KEY}" },
      models: {
        "ctxgate-model": { name: "ctxgate model", tool_call: true, limit: { context, output } },
      },
    },
  },
  model: "ctxgate/ctxgate-model",
  small_model: "ctxgate/ctxgate-model",
  permission: "allow",
  autoupdate: false,
  share: "disabled",
};
fs.writeFileSync(out, JSON.stringify(settings, null, 2) + "\n");
JS
export KILO_DISABLE_MODELS_FETCH=1 KILO_DISABLE_AUTOUPDATE=1 KILO_DISABLE_LSP_DOWNLOAD=1 \
    KILO_DISABLE_SHARE=1 KILO_DISABLE_SESSION_INGEST=1 KILO_TELEMETRY_LEVEL=off
exec "$kilo" run --auto --model ctxgate/ctxgate-model "$CTXGATE_AGENT_PROMPT"
