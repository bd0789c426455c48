#!/usr/bin/env bash
# Installs Qwen Code as released, outside the clone:
#
#   agents/qwen-code/install.sh [VERSION]   # prints the install's folder; npm's output goes to stderr
#
# the pinned version (this folder's package.json and package-lock.json), or
# VERSION from versions/VERSION/ (a release a known bug concerns), into
# ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/qwen-code-VERSION
# (agents/lib/install-npm.sh says how).
#
# `npm install` with the lockfile in place, not `npm ci`: Qwen Code bundles
# its code (no dependencies) and lists platform packages as optional ones
# (@qwen-code/audio-capture, @teddyzhu/clipboard-*), some of which the
# registry does not hold for older releases (0.21.10, 0.23.0); `npm ci` then
# refuses the lockfile as out of sync, where `npm install` skips a missing
# optional package. The lockfile still pins every version and its integrity.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/install-npm.sh" --npm-install "$here" @qwen-code/qwen-code "$@"
