#!/usr/bin/env bash
# The release and the Action's checks for .ci/run (issue 29), after
# `cargo build --release`:
#
#   scripts/release-ci.sh [CTXGATE_BINARY]     [./target/release/ctxgate]
#
# 1. the release workflow and action.yml parse, every input is documented,
#    the toolchain pins and the repository URLs agree
#    (scripts/check-release-files.py; PyYAML);
# 2. `cargo package --list` holds what a crates.io user needs and none of
#    the tests, adapters, fuzz targets or CI files;
# 3. the gate script with the Action's new inputs, for real: the reference
#    (`ctxgate serve`) against itself over the bundled known-bugs suite
#    (`suite: known-bugs`), openai and anthropic bodies only, three
#    invariants, a timeout and a case count — it must pass and check only
#    those invariants; the reference alone with `wire-formats: openai` must
#    never reach an engine or anthropic body (the coverage table says so);
#    and a wire-formats value that names no format is bad usage (exit 2);
# 4. release.yml and the Action agree: the archive and SHA256SUMS its steps
#    write (run here on this binary) are what scripts/ctxgate-fetch.sh, at
#    ref v0 (a moving tag), plans, downloads, verifies and installs.
set -euo pipefail
cd "$(dirname "$0")/.."
ctxgate=${1:-./target/release/ctxgate}
# The binary as one word of a subject's command line, which ctxgate splits
# as POSIX words: single-quoted, so that a path with a space, a quote or
# `$(` is one path and nothing else.
word() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
serve="$(word "$ctxgate") serve"

python3 scripts/check-release-files.py

list=$(cargo package --list --allow-dirty --offline 2> /dev/null)
for need in src/lib.rs src/main.rs Cargo.lock README.md LICENSE-MIT LICENSE-APACHE \
  docs/protocol.md suites/known-bugs/README.md benches/check.rs; do
  grep -qx "$need" <<< "$list" || { echo "cargo package --list lacks $need"; exit 1; }
done
if grep -E '^(tests|adapters|fuzz|examples|findings|scripts|\.github|\.ci)/' <<< "$list"; then
  echo "cargo package --list holds the files above, which a crates.io user does not need"
  exit 1
fi
echo "cargo package --list: $(wc -l <<< "$list") files, what a crates.io user needs"

out=target/release-ci
rm -rf "$out"
CTXGATE="$ctxgate" CTXGATE_SUBJECT="$serve" CTXGATE_BASELINE="$serve" \
  CTXGATE_SUITE=known-bugs CTXGATE_WIRE_FORMATS=openai,anthropic \
  CTXGATE_INVARIANTS=tool-pairing,body-under-ceiling,estimate-covers-tool-calls \
  CTXGATE_TIMEOUT=20 CTXGATE_CASES=300 CTXGATE_TIME=120 CTXGATE_SEED=29 CTXGATE_OUT="$out/pass" \
  scripts/ctxgate-gate.sh > "$out.txt" 2>&1 \
  || { cat "$out.txt"; echo "the gate with the new inputs failed the reference against itself"; exit 1; }
# (the gate prints its command line with printf %q)
grep -qF -- "--with-suite $(printf %q "$PWD/suites/known-bugs")" "$out.txt" \
  && grep -q '^suite: ' "$out.txt" \
  && grep -q '"openaiPercent": 50, "anthropicPercent": 50' "$out/pass/wire-formats.gen-config.json" \
  || { cat "$out.txt"; echo "the gate did not take suite: known-bugs and wire-formats"; exit 1; }
python3 - "$out/pass/ctxgate-report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
text = json.dumps(r)
checked = {"tool-pairing", "body-under-ceiling", "estimate-covers-tool-calls"}
for name in ("verbatim-suffix", "pinned-kept", "no-premature-compaction"):
    assert f'"{name}"' not in text, f"{name} was checked although invariants named three"
for name in checked:
    assert f'"{name}"' in text, f"{name} is not in the report"
print("gate report: only", ", ".join(sorted(checked)), "checked")
PY
grep -E '^suite:|no regression|^OK' "$out.txt" | head -3

CTXGATE="$ctxgate" CTXGATE_SUBJECT="$serve" CTXGATE_WIRE_FORMATS=openai \
  CTXGATE_CASES=200 CTXGATE_SEED=29 CTXGATE_OUT="$out/openai" scripts/ctxgate-gate.sh > "$out-openai.txt" 2>&1 \
  || { cat "$out-openai.txt"; echo "the reference failed with wire-formats: openai"; exit 1; }
grep -q '^  never reached: wire format: engine; wire format: anthropic' "$out-openai.txt" \
  || { cat "$out-openai.txt"; echo "wire-formats: openai still sent engine or anthropic bodies"; exit 1; }
echo "wire-formats openai: engine and anthropic bodies never reached"

set +e
CTXGATE="$ctxgate" CTXGATE_SUBJECT="$serve" CTXGATE_WIRE_FORMATS=' , ' \
  CTXGATE_OUT="$out/bad" scripts/ctxgate-gate.sh > "$out-bad.txt" 2>&1
rc=$?
set -e
if [ "$rc" -ne 2 ] || ! grep -q 'names no wire format' "$out-bad.txt"; then
  cat "$out-bad.txt"; echo "a wire-formats naming nothing was not bad usage (exit $rc)"; exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import sys, yaml
w = yaml.safe_load(open(".github/workflows/release.yml"))
def step(job, name):
    return next(s["run"] for s in w["jobs"][job]["steps"] if s.get("name", "").startswith(name))
open(f"{sys.argv[1]}/archive.sh", "w").write(step("binaries", "Archive"))
open(f"{sys.argv[1]}/sums.sh", "w").write(step("release", "SHA256SUMS"))
PY
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
target=x86_64-unknown-linux-gnu
mkdir -p "$tmp/repo/target/$target/release" "$tmp/releases/v$version"
cp "$ctxgate" "$tmp/repo/target/$target/release/ctxgate"
cp README.md LICENSE-MIT LICENSE-APACHE "$tmp/repo/"
(cd "$tmp/repo" && TARGET=$target TAG="v$version" RUNNER_OS=Linux bash -eo pipefail "$tmp/archive.sh")
(cd "$tmp/repo" && bash -eo pipefail "$tmp/sums.sh" > /dev/null)
mv "$tmp/repo/dist/"* "$tmp/releases/v$version/"
: > "$tmp/plan"
CTXGATE_ACTION_REF=v${version%%.*} RUNNER_OS=Linux RUNNER_ARCH=X64 GITHUB_OUTPUT="$tmp/plan" \
  scripts/ctxgate-fetch.sh plan
tag=$(sed -n 's/^tag=//p' "$tmp/plan")
asset=$(sed -n 's/^asset=//p' "$tmp/plan")
: > "$tmp/download"
CTXGATE_TAG=$tag CTXGATE_ASSET=$asset CTXGATE_ROOT="$tmp/root" CTXGATE_RELEASES_URL="file://$tmp/releases" \
  RUNNER_OS=Linux GITHUB_OUTPUT="$tmp/download" scripts/ctxgate-fetch.sh download
grep -qx 'got=true' "$tmp/download" && cmp -s "$ctxgate" "$tmp/root/bin/ctxgate" \
  || { echo "the Action did not install the binary release.yml archived"; exit 1; }
echo "release.yml's archive of v$version is what the Action at v${version%%.*} installs"
echo "release-ci: ok"
