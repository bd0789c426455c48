# shellcheck shell=bash
# Sourced by the recipes' scripts (agents/lib/install-*.sh, agents/lib/run.sh,
# a CLI recipe's start.sh): where installs go, a recipe's pin, an install
# script's command line, and what one case of `ctxgate agent` needs.
#
#   source "$here/../lib/recipe.sh"
#
# Nothing here puts text into a shell string: paths and versions are
# arguments, the JSON and requirements files are read by python3.

# shellcheck source=../../adapters/lib/pinned-venv.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../adapters/lib" && pwd)/pinned-venv.sh"

# Where the recipes install their releases (outside the clone; CI keeps
# CTXGATE_VENV_ROOT between runs).
ctxgate_recipe_root() {
    printf '%s\n' "${CTXGATE_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxgate-adapters}/agents"
}

# ctxgate_recipe_pin RECIPE PACKAGE: the version of PACKAGE that RECIPE's
# package.json (npm) or requirements.txt (pip, `PACKAGE==VERSION`) pins.
ctxgate_recipe_pin() {
    python3 - "$1" "$2" <<'PY'
import json, os, sys
recipe, package = sys.argv[1:]
name = os.path.basename(recipe)
npm = os.path.join(recipe, "package.json")
try:
    if os.path.exists(npm):
        with open(npm, encoding="utf-8") as f:
            version = (json.load(f).get("dependencies") or {}).get(package)
        where = npm
    else:
        where = os.path.join(recipe, "requirements.txt")
        with open(where, encoding="utf-8") as f:
            pins = [l.strip().split("==", 1) for l in f if "==" in l]
        version = next((v for p, v in pins if p == package), None)
except (OSError, ValueError, AttributeError) as e:
    print(f"agents/{name}: cannot read the pin of {package}: {e}", file=sys.stderr)
    sys.exit(2)
if not isinstance(version, str) or not version:
    print(f"agents/{name}: {where} pins no {package}", file=sys.stderr)
    sys.exit(2)
print(version)
PY
}

# ctxgate_recipe_requirement RECIPE PACKAGE: RECIPE/requirements.txt's line
# `PACKAGE==VERSION` (nothing when it has none).
ctxgate_recipe_requirement() {
    python3 - "$1/requirements.txt" "$2" <<'PY'
import sys
path, package = sys.argv[1:]
with open(path, encoding="utf-8") as f:
    for line in f:
        if line.strip().split("==", 1)[0] == package:
            print(line.strip())
            break
PY
}

# ctxgate_recipe_check_version NAME VERSION: exit 2 unless VERSION is a
# release number (1.2.3, or 1.2.3-beta.1): it names a folder.
ctxgate_recipe_check_version() {
    if ! [[ "$2" =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]]; then
        echo "agents/$1: '$2' is not a release number (like 1.2.3)" >&2
        exit 2
    fi
}

# --- an install script's command line (install-npm.sh, install-pip.sh) ------

# ctxgate_install_args USAGE "$@": reads `[OPTION]... [--] RECIPE PACKAGE
# [VERSION]`. For each word before RECIPE it calls the script's own
# ctxgate_install_option "$@", which handles $1 (and its value, $2) and sets
# ctxgate_install_took to the number of words it took (0: not an option,
# RECIPE starts there); `--` ends the options. Exit 2 with "usage: USAGE"
# on a word that looks like an option and is none, an option whose value
# is missing, or unless 2 or 3 words are left, which go into
# ctxgate_install_rest.
ctxgate_install_args() {
    local usage=$1
    shift
    while [ $# -gt 0 ]; do
        if [ "$1" = -- ]; then
            shift
            break
        fi
        ctxgate_install_took=0
        ctxgate_install_option "$@"
        if [ "$ctxgate_install_took" -eq 0 ]; then
            # Not an option this script knows: RECIPE, unless it looks
            # like an option (a recipe is a folder: agents/NAME).
            case "$1" in
                -*)
                    echo "unknown option: $(printf '%q' "$1")" >&2
                    echo "usage: $usage" >&2
                    exit 2
                    ;;
            esac
            break
        fi
        if [ "$ctxgate_install_took" -gt $# ] || { [ "$ctxgate_install_took" -ge 2 ] && [ -z "$2" ]; }; then
            echo "$(printf '%q' "$1") needs a value" >&2
            echo "usage: $usage" >&2
            exit 2
        fi
        shift "$ctxgate_install_took"
    done
    if [ $# -lt 2 ] || [ $# -gt 3 ]; then
        echo "usage: $usage" >&2
        exit 2
    fi
    # shellcheck disable=SC2034 # read by the script that sourced this
    ctxgate_install_rest=("$@")
}

# --- one case (a CLI recipe's start.sh) -------------------------------------

# ctxgate_case_release RECIPE [VERSION]: prints the folder of the release
# this case runs: VERSION, else $CTXGATE_AGENT_VERSION, else the pin
# (installed first if it is not: RECIPE/install.sh). Call it before
# ctxgate_case_home (the installs are under the user's cache).
ctxgate_case_release() {
    local version="${2:-${CTXGATE_AGENT_VERSION:-}}"
    "$1/install.sh" ${version:+"$version"}
}

# ctxgate_case_needs RECIPE VAR...: exit 2 unless ctxgate agent set each VAR.
ctxgate_case_needs() {
    local who var
    who="agents/$(basename "$1")/start.sh"
    shift
    for var in "$@"; do
        if [ -z "${!var:-}" ]; then
            echo "$who: $var is not set (ctxgate agent sets it)" >&2
            exit 2
        fi
    done
}

# ctxgate_case_home: HOME becomes the case folder's home/ (beside the
# workspace), so the agent's own config and data never touch the user's.
ctxgate_case_home() {
    HOME="$(dirname "$PWD")/home"
    export HOME
    mkdir -p "$HOME"
}
