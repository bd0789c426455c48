#!/usr/bin/env bash
# python/ci.sh — the Python package (issue 29), from the wheel a user would
# install. Run after `cargo build --release` (.ci/run does): maturin builds
# the wheel from the same target/ and finds the release binary up to date.
#
#   1. python-minimal's copy of the package's wire.py is current (sync.py);
#   2. maturin (from PyPI, in a venv cached outside the clone) builds the
#      wheel: the binary + the pure-Python package;
#   3. a fresh venv installs it (timed); its `ctxgate check` passes the main
#      job (timed: the first run);
#   4. the package's own tests, none skipped (the serve loop's hostile
#      battery, body_bytes' refusals against `ctxgate body`, the plugin's
#      and `python -m ctxgate`'s process lifetimes, replays and errors,
#      ctxgate.agent's correct and planted-bug agents and its lifetimes);
#   5. the pytest example over adapters/python-minimal passes; with a planted
#      defect it fails showing the shrunk fixture and the replay line; run
#      again, the saved failure is replayed before any new case; narrowed
#      to invariants it does not judge, it is skipped and new cases run;
#   6. the in-process agent example (ctxgate.agent.check over the tiny
#      agent of python/examples/test_agent_inproc.py) passes; with a planted
#      dropped system prompt it fails naming pinned-kept and its fixture;
#   7. body_bytes and tool_calls_floor equal the binary's on 5,000 generated
#      cases in each wire format.
#
# Environment: CTXGATE_PY_CACHE (default ~/.cache/ctxgate-python) keeps the
# maturin venv; CTXGATE_PY_CASES (default 300) the cases of the checks.
set -euo pipefail
# pytest colours its output under FORCE_COLOR; the checks below read it.
unset FORCE_COLOR
export NO_COLOR=1
cd "$(dirname "$0")/.."

step() { printf '\n== python: %s == (at %d s)\n' "$*" "$SECONDS"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

MATURIN_VERSION=1.16.0
cache="${CTXGATE_PY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxgate-python}"
cases="${CTXGATE_PY_CASES:-300}"
work=target/python
rm -rf "$work"
mkdir -p "$work"

step "python-minimal's wire.py equals the package's"
python3 python/sync.py --check

step "maturin $MATURIN_VERSION (cached in $cache/maturin-venv)"
maturin="$cache/maturin-venv/bin/maturin"
if [ "$("$maturin" --version 2>/dev/null)" != "maturin $MATURIN_VERSION" ]; then
  rm -rf "$cache/maturin-venv"
  python3 -m venv "$cache/maturin-venv"
  "$cache/maturin-venv/bin/pip" install --quiet --disable-pip-version-check "maturin==$MATURIN_VERSION"
fi
"$maturin" --version

step "build the wheel (reusing target/release)"
t=$(now)
# (from python/: maturin reads pyproject.toml there, and its manifest-path
# is the crate at the root, whose target/ the release build filled)
(cd python && "$maturin" build --release --out "../$work/wheels") 2>&1 | grep -vE '^\s*Downloaded ' || true
wheel=$(ls "$work"/wheels/ctxgate-*.whl)
echo "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1)) in $(since "$t")"

step "install it into a fresh venv"
venv="$work/venv"
python3 -m venv "$venv"
t=$(now)
"$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel"
echo "install time (pip install the wheel into a fresh venv): $(since "$t")"
t=$(now)
"$venv/bin/pip" install --quiet --disable-pip-version-check pytest
echo "pytest for the examples (PyPI, pip's cache): $(since "$t")"
[ "$("$venv/bin/python" -c 'import ctxgate, os; print(os.path.dirname(ctxgate.binary()))')" = "$PWD/$venv/bin" ] \
  || { echo "ctxgate.binary() is not the venv's ctxgate"; exit 1; }
"$venv/bin/ctxgate" --version

step "the venv's ctxgate check: the main job"
t=$(now)
"$venv/bin/ctxgate" check --cases "$cases" --seed 98 --save "$work/failures-main" > "$work/main-job.txt"
tail -1 "$work/main-job.txt"
echo "first run (ctxgate check --cases $cases from the fresh venv): $(since "$t")"

step "the package's tests (the serve loop's hostile battery, body_bytes against the binary, lifetimes)"
# None may be skipped here: the wheel is installed and its binary found.
set +e
"$venv/bin/python" -m pytest -q -rs -p no:cacheprovider python/tests > "$work/tests.txt" 2>&1
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  cat "$work/tests.txt"
  exit 1
fi
tail -1 "$work/tests.txt"
if grep -qE '^SKIPPED|[0-9]+ skipped' "$work/tests.txt"; then
  grep -E '^SKIPPED' "$work/tests.txt"
  echo "a package test was skipped: each must run against the wheel"
  exit 1
fi

# The example runs as in a project of its own: rootdir $project, where the
# plugin keeps .ctxgate/failures/.
project="$work/example-project"
mkdir -p "$project"
example() {
  CTXGATE_CASES="$cases" "$venv/bin/python" -m pytest -p no:cacheprovider --rootdir "$project" \
    python/examples/test_python_minimal.py "$@"
}

step "pytest example over adapters/python-minimal's compact: passes"
CTXGATE_SEED=29 example -q | tail -1

step "the same example with a planted defect: fails with the fixture and the replay line"
set +e
CTXGATE_EXAMPLE_DEFECT=1 CTXGATE_SEED=29 example -q > "$work/defect.txt" 2>&1
rc=$?
set -e
if [ "$rc" -ne 1 ] || ! grep -q '^FAILED tool-pairing' "$work/defect.txt" \
   || ! grep -q '^  replay: ctxgate replay .*\.ctxgate/failures/' "$work/defect.txt" \
   || ! grep -q '^    \[0\] {"role"' "$work/defect.txt"; then
  cat "$work/defect.txt"
  echo "expected the planted defect to fail (exit 1) with a tool-pairing fixture and its replay line, got $rc"
  exit 1
fi
sed -n '/^FAILED tool-pairing/,/^$/p' "$work/defect.txt" | cut -c1-200
saved=$(find "$project/.ctxgate/failures" -name '*.json' | wc -l)
echo "saved failures: $saved in $project/.ctxgate/failures"

step "run again: the saved failures are replayed first"
set +e
CTXGATE_EXAMPLE_DEFECT=1 example -q > "$work/defect-again.txt" 2>&1
rc=$?
set -e
if [ "$rc" -ne 1 ] || ! grep -q 'saved failure(s) still fail, replayed before any new case' "$work/defect-again.txt" \
   || ! grep -q "^replay: 0 held, $saved failed" "$work/defect-again.txt" \
   || grep -q '^FAILED tool-pairing (case' "$work/defect-again.txt"; then
  cat "$work/defect-again.txt"
  echo "expected the re-run to fail on the $saved saved failure(s), replayed before any new case, got $rc"
  exit 1
fi
grep -E '^(ctxgate: saved|replay: [0-9])' "$work/defect-again.txt"
step "saved failures of invariants the test no longer claims are skipped, and the new cases run"
set +e
CTXGATE_EXAMPLE_DEFECT=1 CTXGATE_EXAMPLE_INVARIANTS=deterministic,estimate-covers-tool-calls example -q -s > "$work/narrowed.txt" 2>&1
rc=$?
set -e
if [ "$rc" -ne 0 ] || ! grep -q "^replay: 0 held, 0 failed, $saved skipped" "$work/narrowed.txt" \
   || ! grep -q 'nothing of the saved failures is judged now' "$work/narrowed.txt"; then
  cat "$work/narrowed.txt"
  echo "expected the narrowed test to skip the $saved saved failure(s) and pass on new cases, got $rc"
  exit 1
fi
grep -E '^(replay: [0-9]|ctxgate: nothing|OK)' "$work/narrowed.txt"
# Fixed again, the correct compactor holds every saved failure, then new cases.
step "the fixed compactor: the saved failures hold, then new cases pass"
CTXGATE_SEED=30 example -q -s | grep -E '^(ctxgate: replaying|replay: [0-9]|OK|[0-9]+ passed)'

# The agent example runs from a project folder of its own too: its shrunk
# failures go to .ctxgate/agent-failures/ under the working directory.
repo=$PWD
agent_project="$repo/$work/agent-project"
mkdir -p "$agent_project"
agent_example() {
  (cd "$agent_project" && "$repo/$venv/bin/python" -m pytest -p no:cacheprovider --rootdir . \
    "$repo/python/examples/test_agent_inproc.py" "$@")
}

step "in-process agent example (ctxgate.agent.check over a tiny urllib agent): passes"
t=$(now)
CTXGATE_SEED=45 agent_example -q | tail -1
echo "agent example: $(since "$t")"

step "the same agent with a planted bug (the system prompt dropped at compaction): fails on pinned-kept"
set +e
CTXGATE_EXAMPLE_BUG=drops-system-prompt CTXGATE_SEED=45 agent_example -q > "$work/agent-defect.txt" 2>&1
rc=$?
set -e
fixture=$(grep -oE '/\S*/\.ctxgate/agent-failures/pinned-kept-[0-9a-f]+\.json' "$work/agent-defect.txt" | head -1)
if [ "$rc" -ne 1 ] || ! grep -qE 'FAILED pinned-kept \(case [0-9]+\)' "$work/agent-defect.txt" \
   || [ -z "$fixture" ] || [ ! -f "$fixture" ] || ! grep -q 'ctxgate.agent.replay(run_case, ' "$work/agent-defect.txt"; then
  cat "$work/agent-defect.txt"
  echo "expected the planted agent bug to fail (exit 1) on pinned-kept with a saved fixture and its replay line, got $rc"
  exit 1
fi
grep -E 'FAILED pinned-kept|fixture:|replay:' "$work/agent-defect.txt" | sed 's/^E *//' | head -3

step "body_bytes and tool_calls_floor equal the binary's on 5,000 cases in each wire format"
"$venv/bin/python" python/body_bytes_vs_binary.py --cases 5000 --seed 29

echo
echo "python: all passed in $SECONDS s"
