#!/usr/bin/env bash
# Installs pi, the coding agent, as released, outside the clone:
#
#   agents/pi/install.sh [VERSION]    # prints the install's folder; npm's output goes to stderr
#
# the pinned version (this folder's package.json and package-lock.json), or
# VERSION from versions/VERSION/ (a release a known bug concerns), with `npm
# ci`, into ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/pi-VERSION
# (agents/lib/install-npm.sh says how). The package was
# @mariozechner/pi-coding-agent up to 0.73.1 and is
# @earendil-works/pi-coding-agent since 0.74.0: each version's package.json
# names its own.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/install-npm.sh" "$here" @mariozechner/pi-coding-agent "$@"
