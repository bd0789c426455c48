#!/usr/bin/env bash
# Installs opencode (npm opencode-ai) as released, outside the clone:
#
#   agents/opencode/install.sh [VERSION]   # prints the install's folder; npm's output goes to stderr
#
# the pinned release from package-lock.json, or VERSION beside it (e.g. an
# affected and a fixing release side by side), into
# ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/opencode-VERSION,
# then `opencode --version` (agents/lib/install-npm.sh says how).
#
# `npm install` over the committed lock, not `npm ci`: npm 11's lock lists
# only this platform's binary package of opencode-ai's optionalDependencies,
# which `npm ci` rejects as out of sync; the versions and integrity hashes
# still come from the lock.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/install-npm.sh" --npm-install --bin opencode "$here" opencode-ai "$@"
