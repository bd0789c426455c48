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
# VERSION: the release (default: $CTXGATE_AGENT_VERSION, else the pin),
# installed by agents/kilocode/install.sh VERSION if it is not.
# SETTINGS: the window and threshold to give it (default: agent.json here): a
# `--config` file, or an agent fixture, whose "config" is then read — so a
# known bug's fixture replays with the settings it was found with. Settings
# Kilo cannot be given are refused (exit 2): its compaction trigger is
# context − min(limit.output, 32000) || 32000 (ProviderTransform's
# maxOutputTokens, OUTPUT_TOKEN_MAX 32000, in 7.7.7's bundle), so a
# threshold of 1 (output 0) or an output over 32,000 tokens would not
# compact where the settings say.
#
# Exits with kilo's exit status.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib/recipe.sh
source "$here/../lib/recipe.sh"
ctxgate_case_needs "$here" OPENAI_BASE_URL CTXGATE_AGENT_PROMPT
release="$(ctxgate_case_release "$here" "${1:-}")"
kilo="$release/node_modules/.bin/kilo"

ctxgate_case_home
export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share" \
    XDG_CACHE_HOME="$HOME/.cache" XDG_STATE_HOME="$HOME/.local/state"
mkdir -p "$XDG_CONFIG_HOME/kilo"
node - "$here/../lib/settings.cjs" "${2:-$here/agent.json}" "$XDG_CONFIG_HOME/kilo/kilo.json" <<'JS'
const fs = require("fs");
const [lib, config, out] = process.argv.slice(2);
const agent = require(lib)(config, "agents/kilocode/start.sh");
const context = agent.contextWindow;
const output = Math.round(context * (1 - agent.threshold));
// Kilo's maxOutputTokens: Math.min(limit.output, 32000) || 32000.
if (output < 1 || output > 32000) {
  process.stderr.write(`agents/kilocode/start.sh: ${config}: contextWindow ${context} and ` +
    `threshold ${agent.threshold} make limit.output ${output}; Kilo compacts at ` +
    "limit.context - min(limit.output, 32000), so it must be 1..32000\n");
  process.exit(2);
}
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
