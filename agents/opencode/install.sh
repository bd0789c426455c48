#!/usr/bin/env bash
# Installs opencode (npm opencode-ai), pinned, outside the clone:
#   ${CTXGATE_VENV_ROOT:-~/.cache/ctxgate-adapters}/agents/opencode-VERSION
# `install.sh` installs the pinned release from package-lock.json (npm ci);
# `install.sh VERSION` installs another release beside it (npm install of
# that exact version), e.g. an affected and a fixing release side by side.
# Idempotent (a stamp file), one install at a time (a lock), quiet on stdout.
# Prints nothing; the install's folder is "$root/$name-$version".
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../adapters/lib/pinned-venv.sh"
package=opencode-ai
pinned="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dependencies"][sys.argv[2]])' "$here/package.json" "$package")"
version="${1:-$pinned}"
case "$version" in *[!0-9A-Za-z.+-]*|'') echo "opencode: not a version: $version" >&2; exit 2 ;; esac
root="${CTXGATE_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxgate-adapters}/agents"
dir="$root/opencode-$version"
want="$package@$version $(sha256sum "$here/package-lock.json" | cut -c1-16)"

install_it() {
    if [ "$(cat "$dir/.ctxgate-installed" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    {
        echo "opencode: installing $package@$version into $dir"
        rm -rf "$dir/node_modules" "$dir/.ctxgate-installed"
        if [ "$version" = "$pinned" ]; then
            cp "$here/package.json" "$here/package-lock.json" "$dir/"
            # `npm install` over the committed lock, not `npm ci`: npm 11's lock
            # lists only this platform's binary package of opencode-ai's
            # optionalDependencies, which `npm ci` rejects as out of sync; the
            # versions and integrity hashes still come from the lock.
            (cd "$dir" && npm install --no-audit --no-fund --loglevel=error)
        else
            printf '{"name":"ctxgate-agent-opencode","private":true}\n' > "$dir/package.json"
            rm -f "$dir/package-lock.json"
            (cd "$dir" && npm install --save-exact --no-audit --no-fund --loglevel=error "$package@$version")
        fi
        "$dir/node_modules/.bin/opencode" --version
        printf '%s\n' "$want" > "$dir/.ctxgate-installed.tmp"
        mv -f "$dir/.ctxgate-installed.tmp" "$dir/.ctxgate-installed"
    } >&2
}

if [ "$(cat "$dir/.ctxgate-installed" 2>/dev/null)" != "$want" ]; then
    mkdir -p "$dir"
    ctxgate_locked "$dir/.ctxgate-install.lock" install_it
fi
