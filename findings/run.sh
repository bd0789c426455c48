#!/usr/bin/env bash
# Run every standalone reproduction of findings/ against the release it was
# found on, with nothing of ctxgate. Each folder's reproductions use the
# install of the zoo adapter findings/pins.json names for it
# (adapters/ADAPTER/run.sh --install RELEASE, under $CTXGATE_VENV_ROOT when
# set; adapters/zoo_ci.py makes them all), and each checks before
# reproducing that its pinned packages, at exactly their versions, are what
# imports (findings/pinned.py, findings/pinned.mjs). Each is counted as one
# of three:
#
#   reproduces          exit 10: the behaviour is there, on the pinned release
#   does NOT reproduce  exit 11: the pinned release ran and behaved otherwise —
#                       the library changed: look at docs/findings.md again
#   not run             no install, another version, an import that fails
#                       (exit 2), or no verdict at all (a traceback, a hang:
#                       any other exit) — nothing was learnt about the library
#
#   findings/run.sh     # all; exit 0 every one reproduces, 1 one does not,
#                       # 2 one or more was not run
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

# The venv adapters/lib/pinned-venv.sh makes for ADAPTER at RELEASE.
venv() {
  if [ -n "${CTXGATE_VENV_ROOT:-}" ]; then
    printf '%s\n' "$CTXGATE_VENV_ROOT/$1-$2"
  else
    printf '%s\n' "adapters/$1/.venv-$2"
  fi
}
# The node_modules adapters/langchain-js/run.sh installs for ADAPTER.
node_modules() {
  if [ -n "${CTXGATE_VENV_ROOT:-}" ]; then
    printf '%s\n' "$CTXGATE_VENV_ROOT/$1-$(sha256sum "adapters/$1/package-lock.json" | cut -c1-12)/node_modules"
  else
    printf '%s\n' "adapters/$1/node_modules"
  fi
}

# One line a folder of findings/pins.json: FOLDER<TAB>ADAPTER<TAB>RELEASE.
pins=$(python3 -c '
import json, sys
for folder, p in json.load(open(sys.argv[1], encoding="utf-8"))["dirs"].items():
    print(folder, p["adapter"], p.get("release", ""), sep="\t")
' findings/pins.json) || { echo "findings: findings/pins.json cannot be read (above)"; exit 2; }

ran=0 reproduced=0 changed=0 not_run=0
limit=${FINDINGS_TIMEOUT:-600}
# run FILE CMD...: run one reproduction, and count what it says.
run() {
  local f=$1 out rc
  shift
  ran=$((ran + 1))
  out=$(timeout "$limit" "$@" < /dev/null 2>&1)
  rc=$?
  case "$rc" in
    10) reproduced=$((reproduced + 1)); echo "reproduces          $f" ;;
    11) changed=$((changed + 1)); printf '%s\n' "$out" | sed 's/^/    /'
        echo "DOES NOT REPRODUCE  $f (on its pinned release: the library changed; look at docs/findings.md again)" ;;
    2) not_run=$((not_run + 1)); printf '%s\n' "$out" | tail -5 | sed 's/^/    /'
       echo "not run             $f (its pinned release is not what imports: above)" ;;
    124) not_run=$((not_run + 1)); printf '%s\n' "$out" | tail -20 | sed 's/^/    /'
         echo "not run             $f (no verdict: still running after $limit s)" ;;
    *) not_run=$((not_run + 1)); printf '%s\n' "$out" | tail -20 | sed 's/^/    /'
       echo "not run             $f (no verdict: exit $rc, above)" ;;
  esac
}
skip() {
  ran=$((ran + 1)) not_run=$((not_run + 1))
  echo "not run             $1 ($2)"
}

for folder in findings/*/; do
  folder=${folder%/}
  name=${folder#findings/}
  shopt -s nullglob
  files=("$folder"/*.py "$folder"/*.mjs)
  shopt -u nullglob
  [ "${#files[@]}" -eq 0 ] && continue
  line=$(printf '%s\n' "$pins" | awk -F'\t' -v n="$name" '$1 == n')
  if [ -z "$line" ]; then
    for f in "${files[@]}"; do skip "$f" "findings/pins.json pins nothing for $name/"; done
    continue
  fi
  IFS=$'\t' read -r _ adapter release <<< "$line"
  for f in "${files[@]}"; do
    case "$f" in
      *.py)
        python=$(venv "$adapter" "$release")/bin/python
        if [ -x "$python" ]; then
          run "$f" "$python" "$f"
        else
          skip "$f" "no install at $(venv "$adapter" "$release"): adapters/$adapter/run.sh --install $release"
        fi
        ;;
      *.mjs)
        # The script resolves its packages from its folder: a link there to
        # the adapter's install (a stale link to another is removed; the
        # script then says what is missing).
        nm=$(node_modules "$adapter")
        link=$folder/node_modules
        if [ -d "$nm" ]; then
          case "$nm" in /*) ;; *) nm=../../$nm ;; esac
          { [ -L "$link" ] || [ ! -e "$link" ]; } && ln -sfn "$nm" "$link"
        elif [ -L "$link" ]; then
          rm -f "$link"
        fi
        run "$f" node "$f"
        ;;
    esac
  done
done

echo "findings: $reproduced of $ran reproductions reproduce on their pinned release, $changed do not, $not_run not run"
if [ "$not_run" -gt 0 ]; then
  echo "findings: $not_run not run: nothing was learnt of those libraries (install them: python3 adapters/zoo_ci.py --install-only)"
  exit 2
fi
[ "$changed" -eq 0 ] || exit 1
