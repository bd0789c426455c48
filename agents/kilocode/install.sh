#!/usr/bin/env bash
# Installs the Kilo Code CLI (npm @kilocode/cli) as released, outside the clone:
#
#   agents/kilocode/install.sh [VERSION]   # prints the install's folder; npm's output goes to stderr
#
# the pinned version (this folder's package.json and package-lock.json), or
# VERSION from versions/VERSION/ (a release a known bug concerns: 7.0.33 and
# 7.7.2, before and after Kilo-Org/kilocode#10012), into
# ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/kilocode-VERSION,
# then `kilo --version` (agents/lib/install-npm.sh says how).
#
# `npm install --no-save` with the lockfile in place, not `npm ci`: the
# package is a launcher whose binary comes from one of a dozen platform
# packages listed as optional dependencies (@kilocode/cli-linux-x64, …), of
# which the lockfile holds only those npm resolved here, and the registry
# does not hold every one for every release; `npm ci` refuses such a
# lockfile as out of sync, where `npm install` skips an optional package
# that is not there. The lockfile still pins every version and its integrity.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../lib/install-npm.sh" --npm-install --bin kilo "$here" @kilocode/cli "$@"
