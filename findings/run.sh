#!/usr/bin/env bash
# Run every standalone reproduction of findings/ against the release it was
# found on, with nothing of ctxgate: each must still exit 1 ("the behaviour
# is there"). Each uses the pinned install of the zoo adapter of its library
# (adapters/*/run.sh --install, under $CTXGATE_VENV_ROOT when set), so run
# that first (adapters/zoo_ci.py does). A reproduction that exits 0 means the
# library changed: look at docs/findings.md again.
#
#   findings/run.sh            # all
set -uo pipefail
cd "$(dirname "$0")/.."
venv() { # adapter dir, version: the venv pinned-venv.sh made
    if [ -n "${CTXGATE_VENV_ROOT:-}" ]; then echo "$CTXGATE_VENV_ROOT/$1-$2"; else echo "adapters/$1/.venv-$2"; fi
}
py() { "$(venv "$1" "$2")/bin/python" "$3"; }
declare -A python=(
  [llama-index]="llama-index-memory 0.14.25"
  [langmem]="langmem 0.0.30"
  [strands]="strands 1.62.0"
  [openai-agents]="openai-agents 0.24.0"
  [google-adk]="google-adk 2.13.0"
)
failed=0 n=0
for dir in "${!python[@]}"; do
  read -r adapter version <<<"${python[$dir]}"
  for f in findings/$dir/*.py; do
    n=$((n + 1))
    out=$(py "$adapter" "$version" "$f" 2>&1); rc=$?
    if [ "$rc" -eq 1 ]; then echo "reproduces  $f"; else echo "$out"; echo "CHANGED     $f (exit $rc)"; failed=$((failed + 1)); fi
  done
done
ln -sfn ../../adapters/langchain-js/node_modules findings/langchain-js/node_modules
for f in findings/langchain-js/*.mjs; do
  n=$((n + 1))
  out=$(node "$f" 2>&1); rc=$?
  if [ "$rc" -eq 1 ]; then echo "reproduces  $f"; else echo "$out"; echo "CHANGED     $f (exit $rc)"; failed=$((failed + 1)); fi
done
echo "findings: $((n - failed)) of $n reproductions still reproduce"
[ "$failed" -eq 0 ]
