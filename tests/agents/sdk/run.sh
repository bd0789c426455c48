#!/usr/bin/env bash
# The official clients read every answer of `ctxgate agent` (issue 45, SPEC
# §9): small tool-loop agents on the openai and anthropic SDKs for Python and
# JS and on the Vercel AI SDK (python/, js/) run under `ctxgate agent`, one
# process per case, in each dialect they speak, streamed and not.
#
#   tests/agents/sdk/run.sh                 install (when needed), run all, print a table
#   tests/agents/sdk/run.sh --install       only install
#   tests/agents/sdk/run.sh vercel py-      only the rows whose label holds one of these words
#
# The SDKs are pinned (python/requirements.txt, js/package-lock.json) and
# installed outside the clone, under $CTXGATE_VENV_ROOT (default
# ~/.cache/ctxgate-adapters, as .ci/run): a venv and a node_modules per hash
# of the pin file, made once (js/node_modules is a link to it). Each row must
# show, in `ctxgate agent`'s JSON report:
#   - no invariant failed (or flaky), and `finishes` passed on every case —
#     the agent printed the final answer and exited 0, so its SDK read every
#     answer (an SDK error is the agent's exit 1, its message in the log);
#   - no request unreadable, and no compaction seen: these agents never
#     compact, so a message ctxgate did not read in their requests shows;
#   - at least one model turn answered.
# The agents' settings (a window of 1M tokens, the default ceiling) leave
# nothing to compact; the threshold only sizes the results ctxgate writes
# (the script grows them to 0.2–3× its trigger, 50k tokens). The generator
# is bounded (8 iterations, 4 parallel calls, no images: the agents' one
# tool reads text). Settings: CTXGATE (the binary, default
# target/release/ctxgate, built when missing), CTXGATE_SDK_CASES [4],
# CTXGATE_SDK_SEED [45; each row adds its number, so rows see different
# scripts], CTXGATE_SDK_KEEP=DIR (keep every row's report and case folders).
# Exit 0 when every row held, 1 when one did not (its failures and the
# agent's stderr printed), 2 on bad usage.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cache="${CTXGATE_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxgate-adapters}"
cases="${CTXGATE_SDK_CASES:-4}"
seed="${CTXGATE_SDK_SEED:-45}"
started=$SECONDS

say() { printf '%s\n' "$*" >&2; }

# --- install -----------------------------------------------------------------
hash12() { sha256sum "$1" | cut -c1-12; }

venv="$cache/agent-sdk-python-$(hash12 "$here/python/requirements.txt")"
if ! cmp -s "$here/python/requirements.txt" "$venv/.ctxgate-requirements" 2>/dev/null; then
    say "sdk agents: installing python/requirements.txt into $venv"
    rm -rf "$venv"
    mkdir -p "$cache"
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/python/requirements.txt" >&2
    cp "$here/python/requirements.txt" "$venv/.ctxgate-requirements"
fi

jsdir="$cache/agent-sdk-js-$(hash12 "$here/js/package-lock.json")"
if ! cmp -s "$here/js/package-lock.json" "$jsdir/node_modules/.ctxgate-package-lock.json" 2>/dev/null; then
    say "sdk agents: npm ci in $jsdir"
    rm -rf "$jsdir"
    mkdir -p "$jsdir"
    cp "$here/js/package.json" "$here/js/package-lock.json" "$jsdir/"
    (cd "$jsdir" && npm ci --no-audit --no-fund --loglevel=error) >&2
    cp "$here/js/package-lock.json" "$jsdir/node_modules/.ctxgate-package-lock.json"
fi
if [ "$(readlink "$here/js/node_modules" 2>/dev/null)" != "$jsdir/node_modules" ]; then
    rm -rf "$here/js/node_modules"
    ln -s "$jsdir/node_modules" "$here/js/node_modules"
fi
say "sdk agents: installed ($((SECONDS - started)) s)"
if [ "${1:-}" = "--install" ]; then
    exit 0
fi

# --- the binary ----------------------------------------------------------------
ctxgate="${CTXGATE:-$root/target/release/ctxgate}"
if [ -z "${CTXGATE:-}" ] && [ ! -x "$ctxgate" ]; then
    say "sdk agents: building $ctxgate"
    (cd "$root" && cargo build --release --quiet) >&2
fi
[ -x "$ctxgate" ] || { say "sdk agents: no ctxgate binary at $ctxgate (set CTXGATE)"; exit 2; }

# --- the rows --------------------------------------------------------------------
py="$venv/bin/python"
P="$here/python"
J="$here/js"
# label | dialect | the agent's command, its words split on spaces with
# PY, P/ and J/ filled in after the split (so that a checkout path with a
# space or a quote stays one word); ctxgate gets them after `--`
rows=(
    "py-openai-chat|openai-chat|PY P/openai_agent.py --api chat"
    "py-openai-chat-stream|openai-chat|PY P/openai_agent.py --api chat --stream"
    "py-openai-responses|openai-responses|PY P/openai_agent.py --api responses"
    "py-openai-responses-stream|openai-responses|PY P/openai_agent.py --api responses --stream"
    "py-openai-responses-chain|openai-responses|PY P/openai_agent.py --api responses --chain"
    "py-openai-responses-chain-stream|openai-responses|PY P/openai_agent.py --api responses --chain --stream"
    "py-anthropic|anthropic|PY P/anthropic_agent.py"
    "py-anthropic-stream|anthropic|PY P/anthropic_agent.py --stream"
    "js-openai-chat|openai-chat|node J/openai_agent.mjs --api chat"
    "js-openai-chat-stream|openai-chat|node J/openai_agent.mjs --api chat --stream"
    "js-openai-responses|openai-responses|node J/openai_agent.mjs --api responses"
    "js-openai-responses-stream|openai-responses|node J/openai_agent.mjs --api responses --stream"
    "js-anthropic|anthropic|node J/anthropic_agent.mjs"
    "js-anthropic-stream|anthropic|node J/anthropic_agent.mjs --stream"
    "vercel-openai-chat|openai-chat|node J/vercel_agent.mjs --provider openai-chat"
    "vercel-openai-chat-stream|openai-chat|node J/vercel_agent.mjs --provider openai-chat --stream"
    "vercel-openai-responses|openai-responses|node J/vercel_agent.mjs --provider openai-responses"
    "vercel-openai-responses-stream|openai-responses|node J/vercel_agent.mjs --provider openai-responses --stream"
    "vercel-anthropic|anthropic|node J/vercel_agent.mjs --provider anthropic"
    "vercel-anthropic-stream|anthropic|node J/vercel_agent.mjs --provider anthropic --stream"
)

work="$(mktemp -d "${TMPDIR:-/tmp}/ctxgate-sdk-agents.XXXXXX")"
keep="${CTXGATE_SDK_KEEP:-}"
cleanup() {
    if [ -n "$keep" ]; then
        mkdir -p "$keep" && cp -r "$work"/. "$keep"/ && say "sdk agents: kept in $keep"
    fi
    rm -rf "$work"
}
trap cleanup EXIT
printf '%s\n' '{"contextWindow": 1000000, "threshold": 0.05}' > "$work/config.json"
printf '%s\n' '{"maxIterations": 8, "maxParallelCalls": 4, "boundaryPercent": 0, "imagesPercent": 0, "exoticNumbersPercent": 0}' > "$work/gen.json"

failed=0
ran=0
n=0
printf '%-34s %-17s %5s %5s %6s %8s %9s %7s  %s\n' row dialect cases turns reqs parallel maxbody seconds result
for row in "${rows[@]}"; do
    IFS='|' read -r label dialect cmd <<< "$row"
    n=$((n + 1))
    if [ $# -gt 0 ]; then
        match=0
        for w in "$@"; do case "$label" in *"$w"*) match=1 ;; esac; done
        [ $match = 1 ] || continue
    fi
    ran=$((ran + 1))
    read -r -a words <<< "$cmd"
    argv=()
    for w in "${words[@]}"; do
        case "$w" in
            PY) argv+=("$py") ;;
            P/*) argv+=("$P/${w#P/}") ;;
            J/*) argv+=("$J/${w#J/}") ;;
            *) argv+=("$w") ;;
        esac
    done
    dir="$work/$label"
    mkdir -p "$dir/cases"
    t0=$SECONDS
    rc=0
    "$ctxgate" agent --dialect "$dialect" --config "$work/config.json" --gen-config "$work/gen.json" \
        --cases "$cases" --seed "$((seed + n))" --shrink-runs 0 --confirm-runs 0 \
        --save "$dir/failures" --keep-folders --work-dir "$dir/cases" \
        --report json --out "$dir/report.json" -- "${argv[@]}" > "$dir/log.txt" 2>&1 || rc=$?
    # ctxgate exits 1 also when an invariant was never exercised (no 413 to
    # recover from, no compaction): the report says what held.
    verdict="$(python3 - "$dir/report.json" "$rc" "$cases" <<'EOF'
import json, sys
path, rc, cases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
try:
    r = json.load(open(path, encoding="utf-8"))
except (OSError, ValueError) as e:
    print(f"- - - - - FAIL: no report (ctxgate exit {rc}: {e})")
    sys.exit()
c = r["coverage"]
problems = []
if rc not in (0, 1):
    problems.append(f"ctxgate exit {rc}")
for name, t in r["tally"].items():
    if t["fail"]:
        problems.append(f"{name} failed on {t['fail']} case(s)")
if r["flaky"]:
    problems.append(f"{len(r['flaky'])} flaky")
if r["tally"]["finishes"]["pass"] != cases:
    problems.append(f"finishes passed on {r['tally']['finishes']['pass']} of {cases} case(s)")
if c["unreadableRequests"]:
    problems.append(f"{c['unreadableRequests']} unreadable request(s)")
if c["compactions"]:
    problems.append(f"{c['compactions']} compaction(s) seen in agents that never compact")
if not c["turnsAnswered"]:
    problems.append("no model turn answered")
result = "ok" if not problems else "FAIL: " + "; ".join(problems)
print(r["cases"], c["turnsAnswered"], c["requests"], c["parallelAnswers"], c["maxBodyBytes"], result)
EOF
)"
    read -r ncases turns reqs parallel maxbody result <<< "$verdict"
    printf '%-34s %-17s %5s %5s %6s %8s %9s %7s  %s\n' "$label" "$dialect" "$ncases" "$turns" "$reqs" "$parallel" "$maxbody" "$((SECONDS - t0))" "$result"
    if [ "$result" != ok ]; then
        failed=$((failed + 1))
        {
            echo "---- $label: ctxgate's report (${dir#"$work"/}/log.txt)"
            sed -n '1,60p' "$dir/log.txt"
            shown=0
            for err in "$dir"/cases/*/stderr.txt; do
                [ -s "$err" ] && [ "$shown" -lt 2 ] || continue
                shown=$((shown + 1))
                echo "---- $label: the agent's stderr in ${err#"$dir"/}"
                tail -n 25 "$err"
            done
        } >&2
    fi
done
[ "$ran" -gt 0 ] || { say "sdk agents: no row matches: $*"; exit 2; }
echo "$((ran - failed)) passed, $failed failed"
say "sdk agents: $ran row(s) of $cases case(s) in $((SECONDS - started)) s"
[ "$failed" = 0 ]
