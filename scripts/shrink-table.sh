#!/bin/sh
# The size of shrunk body and session counterexamples under pinned
# production ceilings (issue 28, item 4): for each defect and config, one
# `check` run; prints, per failure of body-under-ceiling or
# session-never-overflows (and progress), the original and shrunk messages and bytes, and
# the shrink time (the run's time less the same run's with --shrink-runs 0).
#
#   scripts/shrink-table.sh [CTXGATE] [CASES] [SEED]
#
# CTXGATE defaults to target/release/ctxgate. One job, so times compare.
set -eu
bin=${1:-target/release/ctxgate}
cases=${2:-300}
seed=${3:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nginx="$(dirname "$0")/../examples/nginx-1mib.config.json"
here=$(dirname "$0")/..
express="$here/examples/express-100kb.config.json"
defects=${DEFECTS:-"window-ignores-ceiling ceiling-without-escaping chars-not-bytes summaries-pile-up summary-reembeds-images images-weightless content-only-estimator"}
printf '| defect | config | invariant | case | original msgs / bytes | shrunk msgs / bytes | shrink s |\n'
printf '|---|---|---|---|---|---|---|\n'
set -f # $defects is a list of names, split on spaces: no name is a glob
for d in $defects; do
  for cfg in "$nginx" "$express"; do
    name=$(basename "$cfg" .config.json)
    run() {
      out=$1
      shift
      rm -rf "$tmp/save"
      start=$(date +%s.%N)
      "$bin" check --defect "$d" --config "$cfg" --seed "$seed" --cases "$cases" \
        --jobs 1 --save "$tmp/save" --report json --out "$out" "$@" >/dev/null 2>&1 || true
      end=$(date +%s.%N)
      echo "$end - $start" | bc
    }
    t_none=$(run "$tmp/none.json" --shrink-runs 0)
    t_all=$(run "$tmp/all.json")
    python3 - "$tmp/all.json" "$d" "$name" "$t_all" "$t_none" "$bin" <<'PY'
import json, subprocess, sys
path, defect, cfg, t_all, t_none, bin = sys.argv[1:]
report = json.load(open(path))
shrink_s = max(0.0, float(t_all) - float(t_none))
for f in report["failures"]:
    if f["invariant"] not in ("body-under-ceiling", "session-never-overflows", "progress"):
        continue
    msgs = len(f["fixture"]["messages"])
    est = subprocess.run([bin, "estimate", "--json", f["saved"]], capture_output=True, text=True)
    body = json.loads(est.stdout)["bodyBytes"] if est.returncode == 0 else "?"
    o = f["original"]
    print(f"| {defect} | {cfg} | {f['invariant']} | {f['case']} | {o['messages']} / {o['bodyBytes']} | {msgs} / {body} | {shrink_s:.1f} |")
PY
  done
done
