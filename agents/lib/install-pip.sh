#!/usr/bin/env bash
# Installs a pip recipe's agent as released, into a venv outside the clone:
# what each pip recipe's install.sh runs, with its own package.
#
#   agents/lib/install-pip.sh [--with NAME]... RECIPE PACKAGE[EXTRAS] [VERSION]
#
# RECIPE is the recipe's folder (agents/NAME), PACKAGE the package its
# requirements.txt pins (`PACKAGE==VERSION`). VERSION (default: that pin) goes
# into a venv, ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/NAME-VERSION,
# whose path is printed on stdout; pip's output goes to stderr.
#
#   the pin          every line of requirements.txt (the package and all it
#                    resolved to, `==` pinned)
#   another VERSION  PACKAGE[EXTRAS]==VERSION, plus requirements.txt's line of
#                    each --with NAME (a companion kept at its pin); the rest
#                    resolves as pip resolves it
#
# Idempotent: a stamp (the requirements installed) says the install is done;
# one install at a time per release (ctxgate_locked). PYTHON names the
# interpreter the venv is made from (default: python3).
set -euo pipefail
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=recipe.sh
source "$lib/recipe.sh"
with=()
ctxgate_install_option() {
    case "$1" in
        --with) with+=("${2:-}"); ctxgate_install_took=2 ;;
    esac
}
ctxgate_install_args "agents/lib/install-pip.sh [--with NAME]... RECIPE PACKAGE[EXTRAS] [VERSION]" "$@"
set -- "${ctxgate_install_rest[@]}"
recipe=$1 spec=$2
package="${spec%%\[*}"
name="$(basename "$recipe")"
pinned="$(ctxgate_recipe_pin "$recipe" "$package")"
version="${3:-$pinned}"
ctxgate_recipe_check_version "$name" "$version"
if [ "$version" = "$pinned" ]; then
    want="$(cat "$recipe/requirements.txt")"
else
    want="$(printf '%s==%s\n' "$spec" "$version"
        for companion in ${with[@]+"${with[@]}"}; do
            line="$(ctxgate_recipe_requirement "$recipe" "$companion")"
            [ -n "$line" ] || { echo "agents/$name/install.sh: $recipe/requirements.txt pins no $companion" >&2; exit 2; }
            printf '%s\n' "$line"
        done)"
fi
root="$(ctxgate_recipe_root)"
venv="$root/$name-$version"

install_pip() {
    local stamp="$venv/.ctxgate-requirements"
    if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    {
        echo "agents/$name: installing $spec==$version into $venv"
        rm -rf "$venv"
        "${PYTHON:-python3}" -m venv "$venv"
        printf '%s\n' "$want" > "$venv/.ctxgate-want.txt"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$venv/.ctxgate-want.txt"
        printf '%s\n' "$want" > "$stamp.tmp"
        mv -f "$stamp.tmp" "$stamp"
    } >&2
}

if [ "$(cat "$venv/.ctxgate-requirements" 2>/dev/null)" != "$want" ]; then
    mkdir -p "$root"
    ctxgate_locked "$root/.$name-$version.lock" install_pip
fi
echo "$venv"
