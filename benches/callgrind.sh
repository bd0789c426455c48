#!/usr/bin/env bash
# Instruction counts of the estimators and the exact body size, under
# valgrind's callgrind: the same number on every run, however noisy the
# machine (time is not measured at all). Each figure is the inclusive
# instruction count of one function over the three 6 MB generated
# histories (ascii, cjk, escapes) together.
#
#   benches/callgrind.sh                 # this tree
#   benches/callgrind.sh > after.txt     # then compare two versions:
#   git stash; benches/callgrind.sh > before.txt; git stash pop
#   diff before.txt after.txt
#
# CALLGRIND_ARGS adds valgrind options: `--cache-sim=yes` (cache misses),
# `--branch-sim=yes` (mispredicted branches); the real histories' exact
# body size and a copy of their raw text are counted too where
# ../shared/data/real-histories is present (issue 48).
#
# Note: the exact body size takes an AVX2 path where the CPU has it;
# valgrind reports the host's CPU features, so compare counts taken on the
# same kind of machine.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
bin=$(cargo bench --bench estimators --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "estimators" and m.get("executable"):
        print(m["executable"])' | tail -1)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
CTXGATE_ICOUNT=1 valgrind --tool=callgrind ${CALLGRIND_ARGS:-} --callgrind-out-file="$out" "$bin" >/dev/null 2>&1
callgrind_annotate --inclusive=yes "$out" 2>/dev/null |
  grep -E 'estimators::icount_[a-z0-9_]+ ' |
  sed -E 's/^ *([0-9,]+) .*estimators::(icount_[a-z0-9_]+) .*/\2 \1/' |
  sort -u | awk '{printf "%-32s %18s instructions\n", $1, $2}'
