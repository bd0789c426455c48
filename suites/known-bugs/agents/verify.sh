#!/usr/bin/env bash
# Each known agent bug against the releases it concerns: the agent fixture
# must fail against the release the bug was reported on (`agent replay
# --expect-failures`) and hold against the release that fixed it. The agents
# are the recipes in agents/ (each installs a release beside the others, by
# version, outside the clone); the table below is the one in README.md.
#
#   suites/known-bugs/agents/verify.sh [CTXGATE]      # default: target/release/ctxgate
#   suites/known-bugs/agents/verify.sh --install-only # install every release, verify nothing
#
# Each replay starts the recipe's start.sh with the release and the fixture
# itself, whose "config" gives the agent the window and threshold the bug was
# found with. Exit 0 when every row is as the table says, 1 when one is not
# (its replay's output printed), 2 on bad usage.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
install_only=false
if [ "${1:-}" = --install-only ]; then install_only=true; shift; fi
ctxgate="${1:-$root/target/release/ctxgate}"
if ! $install_only && [ ! -x "$ctxgate" ]; then
    echo "verify.sh: no ctxgate binary at $ctxgate (build it, or name it)" >&2
    exit 2
fi

# fixture | recipe (agents/NAME) | release it must fail on | release it must hold on
# ("-": none). A bug still in the recipe's pinned release has a row for it.
table=(
    "pi-3609-tool-results-sent-before-the-compaction-check|pi|0.69.0|0.84.4"
    "pi-3609-tool-results-sent-before-the-compaction-check|pi|0.73.1|-"
    "qwen-code-10380-bare-413-never-classified|qwen-code|0.21.10|0.23.0"
    "qwen-code-10380-bare-413-never-classified|qwen-code|-|0.24.4"
    "kilocode-10012-compaction-request-refused-by-the-payload-limit|kilocode|7.0.33|7.7.2"
)

# Install every release first: a replay's deadline must not wait on npm.
for row in "${table[@]}"; do
    IFS='|' read -r _ recipe affected fixed <<<"$row"
    for version in "$affected" "$fixed"; do
        [ "$version" = "-" ] && continue
        "$root/agents/$recipe/install.sh" "$version" >&2
    done
done
if $install_only; then exit 0; fi

failed=0
log="$(mktemp "${TMPDIR:-/tmp}/ctxgate-known-agent-bug.XXXXXX")"
trap 'rm -f -- "$log"' EXIT
printf '%-62s %-10s %-8s %-8s %s\n' fixture agent release expected result
check() { # name recipe version expect(FAIL|held)
    local name=$1 recipe=$2 version=$3 expect=$4 file="$here/$1.json" result
    local args=(agent replay "$file")
    [ "$expect" = FAIL ] && args+=(--expect-failures)
    args+=(-- "$root/agents/$recipe/start.sh" "$version" "$file")
    if "$ctxgate" "${args[@]}" > "$log" 2>&1; then
        result=ok
    else
        result=MISMATCH
        failed=$((failed + 1))
    fi
    printf '%-62s %-10s %-8s %-8s %s\n' "$name" "$recipe" "$version" "$expect" "$result"
    if [ "$result" != ok ]; then
        sed 's/^/    /' "$log"
    fi
}
for row in "${table[@]}"; do
    IFS='|' read -r name recipe affected fixed <<<"$row"
    [ "$affected" = "-" ] || check "$name" "$recipe" "$affected" FAIL
    [ "$fixed" = "-" ] || check "$name" "$recipe" "$fixed" held
done
bugs="$(printf '%s\n' "${table[@]}" | cut -d'|' -f1 | sort -u | wc -l)"
echo "known agent bugs: $bugs bug(s), ${#table[@]} row(s), $failed mismatch(es)"
[ "$failed" -eq 0 ]
