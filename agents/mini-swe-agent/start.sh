#!/usr/bin/env bash
# One case of `ctxgate agent`: mini-swe-agent as released (`mini`, with its
# shipped mini.yaml config), non-interactively on the task, its model an
# OpenAI-compatible one at ctxgate's loopback endpoint through litellm
# (`openai/` models read OPENAI_BASE_URL and OPENAI_API_KEY, which ctxgate
# sets). Only what a user gives on the command line or in the environment:
# the model, no cost limit (litellm knows no price for this model), `-y` (run
# every command: nobody is at the terminal) and --exit-immediately (no
# "really finish?" prompt). mini's global config (.env) goes into the case
# folder's home/, never the user's. Exits with mini's status.
# The release: $CTXGATE_AGENT_VERSION, else the pin (installed if it is not).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib/recipe.sh
source "$here/../lib/recipe.sh"
ctxgate_case_needs "$here" OPENAI_BASE_URL CTXGATE_AGENT_PROMPT
release="$(ctxgate_case_release "$here")"
mini="$release/bin/mini"

ctxgate_case_home
# No setup wizard; cost tracking may not fail on a model litellm has no
# price for; litellm's bundled model map, not a download (loopback only).
export MSWEA_CONFIGURED=true MSWEA_COST_TRACKING=ignore_errors MSWEA_SILENT_STARTUP=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True
exec "$mini" --yolo --exit-immediately --model openai/ctxgate-model --cost-limit 0 \
    --task "$CTXGATE_AGENT_PROMPT" --output "$HOME/trajectory.json" < /dev/null
