#!/usr/bin/env bash
# Installs an npm recipe's agent as released, outside the clone: what each
# npm recipe's install.sh runs, with its own package.
#
#   agents/lib/install-npm.sh [--npm-install] [--bin BIN] RECIPE PACKAGE [VERSION]
#
# RECIPE is the recipe's folder (agents/NAME), PACKAGE the npm package its
# package.json pins. VERSION (default: that pin) goes into
# ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/NAME-VERSION, whose
# path is printed on stdout; npm's output goes to stderr.
#
#   the pin          RECIPE/package.json and package-lock.json, `npm ci`
#   another VERSION  RECIPE/versions/VERSION/'s package.json and lockfile when
#                    the recipe pins that release there (a release a known
#                    bug concerns); else the pinned lockfile with
#                    PACKAGE@VERSION installed over it (the rest as locked)
#
# --npm-install  `npm install --no-save` over the lockfile instead of `npm ci`, for a
#                package whose lockfile `npm ci` rejects (the recipe's
#                install.sh says why); the lockfile still pins every version
#                and its integrity.
# --bin BIN      after installing, `node_modules/.bin/BIN --version` (stderr):
#                the install starts.
#
# Idempotent: a stamp (PACKAGE@VERSION and the lockfile's hash) says the
# install is done; one install at a time per release (ctxgate_locked).
set -euo pipefail
lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=recipe.sh
source "$lib/recipe.sh"
ci=ci
ci_flags=()
bin=
ctxgate_install_option() {
    case "$1" in
        --npm-install) ci=install; ci_flags=(--no-save); ctxgate_install_took=1 ;;
        --bin) bin=${2:-}; ctxgate_install_took=2 ;;
    esac
}
ctxgate_install_args "agents/lib/install-npm.sh [--npm-install] [--bin BIN] RECIPE PACKAGE [VERSION]" "$@"
set -- "${ctxgate_install_rest[@]}"
recipe=$1 package=$2
name="$(basename "$recipe")"
pinned="$(ctxgate_recipe_pin "$recipe" "$package")"
version="${3:-$pinned}"
ctxgate_recipe_check_version "$name" "$version"
pins="$recipe"
over=
if [ "$version" != "$pinned" ]; then
    if [ -d "$recipe/versions/$version" ]; then
        pins="$recipe/versions/$version"
    else
        over="$package@$version"
    fi
fi
for f in package.json package-lock.json; do
    if [ ! -f "$pins/$f" ]; then
        echo "agents/$name/install.sh: no $f for $name $version (expected $pins/$f)" >&2
        exit 2
    fi
done
root="$(ctxgate_recipe_root)"
dir="$root/$name-$version"
want="$package@$version $(sha256sum "$pins/package-lock.json" | cut -c1-16)"

install_npm() {
    local stamp="$dir/.ctxgate-installed"
    if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    {
        echo "agents/$name: npm $ci ($name $version) in $dir"
        rm -rf "$stamp" "$dir/node_modules" "$dir/package.json" "$dir/package-lock.json"
        cp "$pins/package.json" "$pins/package-lock.json" "$dir/"
        (
            cd "$dir"
            npm "$ci" ${ci_flags[@]+"${ci_flags[@]}"} --no-audit --no-fund --loglevel=error
            if [ -n "$over" ]; then
                npm install --save-exact --no-audit --no-fund --loglevel=error "$over"
            fi
        )
        if [ -n "$bin" ]; then
            "$dir/node_modules/.bin/$bin" --version
        fi
        printf '%s\n' "$want" > "$stamp.tmp"
        mv -f "$stamp.tmp" "$stamp"
    } >&2
}

if [ "$(cat "$dir/.ctxgate-installed" 2>/dev/null)" != "$want" ]; then
    mkdir -p "$dir"
    ctxgate_locked "$root/.$name-$version.lock" install_npm
fi
echo "$dir"
